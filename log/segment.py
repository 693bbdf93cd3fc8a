"""One log segment on disk: `<20-digit base offset>.log` with its `.index` and `.timeindex`, and file slices.

- The `.log` file holds whole RecordBatch v2 batches back to back, offsets increasing.
- OffsetIndex (`.index`, 8-byte entries: relative offset int32, file position int32) is sparse:
  one entry per `index.interval.bytes` of appended data, mapping a batch's last offset to the
  position where that batch starts. A lookup gives a position to scan batch headers from.
- TimeIndex (`.timeindex`, 12-byte entries: timestamp int64, relative offset int32) records the
  largest timestamp so far and the last offset of the batch that carried it, at the same points,
  only when that timestamp grows; a lookup gives an offset to start a timestamp scan from.

Index files are append-only here (Kafka preallocates and trims them; the content is the same).
The in-memory copy of each sparse index answers lookups. A FileSlice is a (file, position,
length) range that a broker can hand to `os.sendfile`; it holds a reference on the segment's file
descriptor so the range stays readable even if the segment is deleted or the log closed meanwhile.

Failed writes (ENOSPC, EROFS, EIO) never leave a partial batch visible: `size` and the in-memory
indexes are the truth, an append that fails is cut back to them, and when even that cut fails
(the disk refuses a truncate too) the next append repairs the tail before writing anything.
A segment being built by the log cleaner carries a file suffix (`.cleaned`) until it is swapped in.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections.abc import Iterator
from typing import NamedTuple

from kafka_wire.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    InvalidRecordBatch,
    read_batch_header,
    verify_crc,
)
from log.open_files import OPEN_FILES, CachedFile, OpenFiles

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
# Kafka's suffixes for files on their way out or in: a deleted segment is renamed `.deleted` before
# it is unlinked; the cleaner writes `.cleaned` files and renames them `.swap` once complete.
DELETED_FILE_SUFFIX = ".deleted"
CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"

NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1
# How much of a segment recovery reads at once (whole batches are verified in memory).
RECOVERY_READ_BYTES = 1 << 20


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _open_log_file(path: str, create: bool, open_files: OpenFiles) -> CachedFile:
    flags = os.O_RDWR | os.O_APPEND
    if not create:
        return open_files.open(path, flags)
    try:
        return open_files.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        # An empty file left by a roll that failed half-way (the disk filled up) may be reused;
        # anything with data in it is a segment and must never be overwritten.
        if os.path.getsize(path) != 0:
            raise
        return open_files.open(path, flags)


def read_batches(fd: int, position: int = 0, end: int | None = None,
                 chunk_bytes: int = RECOVERY_READ_BYTES) -> Iterator[tuple[int, BatchHeader, memoryview]]:
    """(file position, header, batch bytes) of each whole batch in [position, end), read in chunks.

    Only headers are checked here (CRCs are the caller's choice). Stops quietly at a partial batch
    at `end`; raises InvalidRecordBatch for a header that cannot be a v2 batch. Uses pread only,
    so other threads may read the same descriptor (the log cleaner does).
    """
    if end is None:
        end = os.fstat(fd).st_size
    buf = memoryview(b"")
    buf_start = position
    while position < end:
        rel = position - buf_start
        if len(buf) - rel < BATCH_HEADER_SIZE:
            buf, buf_start, rel = memoryview(os.pread(fd, min(chunk_bytes, end - position), position)), position, 0
            if len(buf) < BATCH_HEADER_SIZE:
                return
        header = read_batch_header(buf, rel)
        if position + header.size > end:
            return
        if len(buf) - rel < header.size:
            buf, buf_start, rel = memoryview(os.pread(fd, max(header.size, min(chunk_bytes, end - position)),
                                                      position)), position, 0
            if len(buf) < header.size:
                return
        yield position, header, buf[rel : rel + header.size]
        position += header.size


class SegmentFile:
    """A segment's `.log` file, shared by the segment and the slices read from it.

    Its descriptor lives in the log's bounded cache of open files (log/open_files.py): an idle
    segment's file is closed and reopened on demand. Each `retain()` (a FileSlice, the cleaner's
    view) pins the descriptor until its `release()`, so the range stays readable even if the
    segment is renamed, deleted or closed meanwhile. The segment's own reference goes with
    `close()`; the file is closed for good with its last holder.
    """

    __slots__ = ("path", "_file", "_refs")

    def __init__(self, path: str, file: CachedFile):
        self.path = path
        self._file = file
        self._refs = 1

    @property
    def fd(self) -> int:
        return self._file.fd

    def retain(self) -> "SegmentFile":
        if self._refs <= 0:
            raise ValueError(f"{self.path} is already closed")
        self._file.pin()
        self._refs += 1
        return self

    def release(self) -> None:
        """Give back a reference taken with `retain()`."""
        self._refs -= 1
        self._file.unpin()
        if self._refs == 0:
            self._file.close()

    def close(self) -> None:
        """The segment's own reference: the file closes now, or with the last slice."""
        self._refs -= 1
        self._file.close()


class FileSlice:
    """A range of whole batches in a segment file: send it with os.sendfile(sock, fd, position, len).

    The slice keeps the file open until `close()` (or garbage collection). POSIX keeps an unlinked
    file readable through an open descriptor, so deleting the segment does not break a slice in
    flight; truncating the segment (follower truncation) can make the tail shorter, in which case
    sendfile returns fewer bytes and the client sees a partial batch, which clients skip.
    """

    __slots__ = ("_file", "position", "length", "first_offset", "_closed")

    def __init__(self, file: SegmentFile, position: int, length: int, first_offset: int):
        self._file = file.retain()
        self.position = position
        self.length = length
        self.first_offset = first_offset
        self._closed = False

    @property
    def fd(self) -> int:
        return self._file.fd

    @property
    def path(self) -> str:
        return self._file.path

    def __len__(self) -> int:
        return self.length

    def read_bytes(self) -> bytes:
        chunks = []
        pos, remaining = self.position, self.length
        while remaining > 0:
            chunk = os.pread(self._file.fd, remaining, pos)
            if not chunk:
                break
            chunks.append(chunk)
            pos += len(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._file.release()

    def __enter__(self) -> "FileSlice":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()

    def __repr__(self) -> str:
        return f"FileSlice({self.path!r}, position={self.position}, length={self.length})"


class _SparseIndex:
    """Shared mechanics of the two index files: fixed-size entries appended to a file and a memory copy.

    Lookups use the memory copy, so the file is only open while it is written: a rolled
    segment's indexes hold no file descriptor (a broker has many segments).
    """

    entry: struct.Struct

    def __init__(self, path: str, base_offset: int, max_index_bytes: int, open_files: OpenFiles = OPEN_FILES):
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.entry.size)
        self._open_files = open_files
        # Open for writing (its descriptor may be closed meanwhile by the cache of open files).
        self._file: CachedFile | None = None
        # The file may hold more than the memory copy (a write or truncate failed): cut it before
        # the next write so entries never land behind a stale one.
        self._file_needs_trim = False

    def __len__(self) -> int:
        raise NotImplementedError

    def _writable_fd(self) -> int:
        if self._file is None:
            self._file = self._open_files.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        return self._file.fd

    def _read_raw_entries(self) -> list[tuple] | None:
        """The file's entries ([] when missing), or None when it is not a whole number of entries."""
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        if len(data) % self.entry.size:
            return None
        return list(self.entry.iter_unpack(data))

    def _append_raw(self, *fields) -> None:
        fd = self._writable_fd()
        if self._file_needs_trim:
            os.ftruncate(fd, len(self) * self.entry.size)
            self._file_needs_trim = False
        try:
            _write_all(fd, self.entry.pack(*fields))
        except OSError:
            self._file_needs_trim = True
            raise

    def _truncate_entries(self, count: int) -> None:
        try:
            os.ftruncate(self._writable_fd(), count * self.entry.size)
        except OSError:
            self._file_needs_trim = True
            raise
        self._file_needs_trim = False

    def trim_to(self, count: int) -> None:
        """Forget entries after the first `count` (an append being rolled back); never raises:
        when the file cannot be cut now, it is cut before the next write."""
        self._forget_after(count)
        try:
            self._truncate_entries(count)
        except OSError:
            pass

    def _forget_after(self, count: int) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        if self._file is not None:
            os.fdatasync(self._file.fd)

    def detach_fd(self) -> int:
        """Hand a descriptor of the file written since it was opened (-1 when it was not) to the
        caller, who fsyncs and closes it; a later write opens the file again. (When the cache of
        open files had closed it, a new descriptor fsyncs the same pages.)"""
        file, self._file = self._file, None
        if file is None:
            return -1
        fd = file.detach()
        file.close()
        if fd < 0:
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                return -1
        return fd

    def close(self) -> None:
        """Release the file descriptor (a later write opens the file again)."""
        file, self._file = self._file, None
        if file is not None:
            file.close()

    def delete(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class OffsetIndex(_SparseIndex):
    """Sparse map from a batch's last offset to the file position where that batch starts."""

    entry = struct.Struct(">ii")

    def __init__(self, path: str, base_offset: int, max_index_bytes: int, open_files: OpenFiles = OPEN_FILES):
        super().__init__(path, base_offset, max_index_bytes, open_files)
        self._offsets: list[int] = []
        self._positions: list[int] = []

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def is_full(self) -> bool:
        return len(self._offsets) >= self.max_entries

    @property
    def last_entry(self) -> tuple[int, int]:
        """(offset, position) of the last entry; (base offset, 0) when empty."""
        if not self._offsets:
            return self.base_offset, 0
        return self._offsets[-1], self._positions[-1]

    def load(self, log_size: int) -> bool:
        """Read the file; False (and empty) when it is missing entries' worth of sense."""
        raw = self._read_raw_entries()
        if raw is None:
            return False
        offsets, positions = [], []
        last_offset, last_position = -1, -1
        for relative, position in raw:
            offset = self.base_offset + relative
            if relative < 0 or offset <= last_offset or position <= last_position or position >= log_size:
                return False
            offsets.append(offset)
            positions.append(position)
            last_offset, last_position = offset, position
        self._offsets, self._positions = offsets, positions
        return True

    def append(self, offset: int, position: int) -> None:
        if self._offsets and offset <= self._offsets[-1]:
            return
        self._append_raw(offset - self.base_offset, position)
        self._offsets.append(offset)
        self._positions.append(position)

    def lookup(self, offset: int) -> int:
        """Position of the last indexed batch whose last offset is <= offset (0 when none is)."""
        i = bisect.bisect_right(self._offsets, offset)
        return self._positions[i - 1] if i else 0

    def floor_position(self, position: int) -> int:
        """The largest indexed batch start at or below `position` (0 when none is)."""
        i = bisect.bisect_right(self._positions, position)
        return self._positions[i - 1] if i else 0

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= offset."""
        keep = bisect.bisect_left(self._offsets, offset)
        if keep < len(self._offsets):
            del self._offsets[keep:], self._positions[keep:]
            self._truncate_entries(keep)

    def _forget_after(self, count: int) -> None:
        del self._offsets[count:], self._positions[count:]

    def entries(self) -> list[tuple[int, int]]:
        """(offset, position) of every entry, for tools."""
        return list(zip(self._offsets, self._positions))

    def reset(self) -> None:
        self._offsets, self._positions = [], []
        self._truncate_entries(0)


class TimeIndex(_SparseIndex):
    """Sparse map from the largest timestamp so far to the last offset of the batch that had it."""

    entry = struct.Struct(">qi")

    def __init__(self, path: str, base_offset: int, max_index_bytes: int, open_files: OpenFiles = OPEN_FILES):
        super().__init__(path, base_offset, max_index_bytes, open_files)
        self._timestamps: list[int] = []
        self._offsets: list[int] = []

    def __len__(self) -> int:
        return len(self._timestamps)

    @property
    def is_full(self) -> bool:
        return len(self._timestamps) >= self.max_entries

    @property
    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry; (NO_TIMESTAMP, base offset) when empty."""
        if not self._timestamps:
            return NO_TIMESTAMP, self.base_offset
        return self._timestamps[-1], self._offsets[-1]

    def load(self) -> bool:
        raw = self._read_raw_entries()
        if raw is None:
            return False
        timestamps, offsets = [], []
        for timestamp, relative in raw:
            offset = self.base_offset + relative
            if relative < 0 or (timestamps and (timestamp <= timestamps[-1] or offset < offsets[-1])):
                return False
            timestamps.append(timestamp)
            offsets.append(offset)
        self._timestamps, self._offsets = timestamps, offsets
        return True

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add an entry when `timestamp` is larger than the last one (Kafka's TimeIndex.maybeAppend)."""
        if not skip_full_check and self.is_full:
            return
        last_timestamp, last_offset = self.last_entry
        if timestamp > last_timestamp and offset >= last_offset:
            self._append_raw(timestamp, offset - self.base_offset)
            self._timestamps.append(timestamp)
            self._offsets.append(offset)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the last entry with timestamp <= target; (-1, base offset) when none."""
        i = bisect.bisect_right(self._timestamps, timestamp)
        if not i:
            return NO_TIMESTAMP, self.base_offset
        return self._timestamps[i - 1], self._offsets[i - 1]

    def truncate_to(self, offset: int) -> None:
        """Drop entries pointing at offsets >= offset."""
        keep = bisect.bisect_left(self._offsets, offset)
        if keep < len(self._offsets):
            del self._timestamps[keep:], self._offsets[keep:]
            self._truncate_entries(keep)

    def _forget_after(self, count: int) -> None:
        del self._timestamps[count:], self._offsets[count:]

    def entries(self) -> list[tuple[int, int]]:
        """(timestamp, offset) of every entry, for tools."""
        return list(zip(self._timestamps, self._offsets))

    def reset(self) -> None:
        self._timestamps, self._offsets = [], []
        self._truncate_entries(0)


class AppendUndo(NamedTuple):
    """A segment's state before an append, to take the append back."""

    size: int
    max_timestamp_so_far: int
    offset_of_max_timestamp_so_far: int
    bytes_since_last_index_entry: int
    rolling_based_timestamp: int | None
    offset_index_entries: int
    time_index_entries: int


class LogSegment:
    """A `.log` file plus its two indexes. Offsets in it run from `base_offset` up."""

    def __init__(self, directory: str, base_offset: int, *, index_interval_bytes: int,
                 max_index_bytes: int, now_ms: int, create: bool, roll_jitter_ms: int = 0,
                 file_suffix: str = "", open_files: OpenFiles = OPEN_FILES):
        self.dir = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.created_ms = now_ms
        self.file_suffix = file_suffix
        self.log_path = os.path.join(directory, segment_file_name(base_offset, LOG_SUFFIX) + file_suffix)
        index_path = os.path.join(directory, segment_file_name(base_offset, INDEX_SUFFIX) + file_suffix)
        time_index_path = os.path.join(directory, segment_file_name(base_offset, TIME_INDEX_SUFFIX) + file_suffix)
        self.file = SegmentFile(self.log_path, _open_log_file(self.log_path, create, open_files))
        self._released = False
        # True when the file may hold bytes past `size` (a failed append could not be cut back).
        self._tail_needs_trim = False
        try:
            self.size = os.fstat(self.file.fd).st_size
            index_files_exist = os.path.exists(index_path) and os.path.exists(time_index_path)
            self.offset_index = OffsetIndex(index_path, base_offset, max_index_bytes, open_files)
            self.time_index = TimeIndex(time_index_path, base_offset, max_index_bytes, open_files)
            self.max_timestamp_so_far = NO_TIMESTAMP
            self.offset_of_max_timestamp_so_far = base_offset
            self.bytes_since_last_index_entry = 0
            # The max timestamp of the first batch: segment.ms counts from it (Kafka's rollingBasedTimestamp).
            self.rolling_based_timestamp: int | None = None
            if create:
                self.offset_index.reset()
                self.time_index.reset()
                self.indexes_valid = True
            else:
                # A missing index file means it must be rebuilt (an empty one is fine for a small segment).
                self.indexes_valid = (
                    (index_files_exist or self.size == 0) and self.offset_index.load(self.size) and self.time_index.load()
                )
        except BaseException:
            self.close()
            if create:
                for path in (self.log_path, index_path, time_index_path):
                    try:
                        os.unlink(path)
                    except OSError:
                        pass
            raise

    # -- reading headers --------------------------------------------------------------------------

    def read_header(self, position: int) -> BatchHeader:
        data = os.pread(self.file.fd, BATCH_HEADER_SIZE, position)
        header = read_batch_header(data)
        if position + header.size > self.size:
            raise InvalidRecordBatch(f"batch at {position} in {self.log_path} runs past the end of the file")
        return header

    def iter_headers(self, position: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from `position` (a batch start) up to `end`."""
        end = self.size if end is None else end
        while position < end:
            header = self.read_header(position)
            yield position, header
            position += header.size

    def read_batch(self, position: int, size: int) -> bytes:
        return os.pread(self.file.fd, size, position)

    def translate_offset(self, offset: int, start_position: int = 0) -> tuple[int, BatchHeader] | None:
        """The first batch (position, header) whose last offset is >= offset, or None."""
        position = max(self.offset_index.lookup(offset), start_position)
        for pos, header in self.iter_headers(position):
            if header.last_offset >= offset:
                return pos, header
        return None

    def last_batch(self) -> BatchHeader | None:
        """The header of the last batch (a short walk from the last index entry), None when empty."""
        last = None
        for _, header in self.iter_headers(self.offset_index.last_entry[1]):
            last = header
        return last

    def next_offset(self) -> int:
        last = self.last_batch()
        return self.base_offset if last is None else last.next_offset

    def load_max_timestamp(self, scan: bool = False) -> None:
        """Take the largest timestamp from the time index's last entry (a rolled, recovered or
        cleanly closed segment ends its time index with it); with `scan`, also read the batch
        headers after that entry (after a truncation)."""
        timestamp, offset = self.time_index.last_entry
        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = timestamp, offset
        if not scan:
            return
        for _, header in self.iter_headers(self.offset_index.lookup(offset)):
            if header.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = header.max_timestamp
                self.offset_of_max_timestamp_so_far = header.last_offset

    def _load_rolling_based_timestamp(self) -> None:
        if self.rolling_based_timestamp is None and self.size > 0:
            self.rolling_based_timestamp = self.read_header(0).max_timestamp

    # -- appending --------------------------------------------------------------------------------

    def should_roll(self, append_bytes: int, max_timestamp: int, last_offset: int, now_ms: int,
                    segment_bytes: int, segment_ms: int) -> bool:
        """Kafka's LogSegment.shouldRoll: size, age (by batch timestamps), full index, offset range."""
        if self.size == 0:
            return False
        if self.size > segment_bytes - append_bytes:
            return True
        self._load_rolling_based_timestamp()
        if self.rolling_based_timestamp is not None and self.rolling_based_timestamp >= 0:
            waited = max_timestamp - self.rolling_based_timestamp
        else:
            waited = now_ms - self.created_ms
        if waited > segment_ms - self.roll_jitter_ms:
            return True
        return (
            self.offset_index.is_full
            or self.time_index.is_full
            or last_offset - self.base_offset > INT32_MAX
        )

    def append(self, data, headers: list[tuple[int, BatchHeader]]) -> "AppendUndo":
        """Write `data` (whole batches, offsets assigned) in one write call and index them.

        `headers` holds each batch's (position within data, header). On a failed write the file
        and indexes are cut back to where they were, so no torn batch stays behind, and the error
        is re-raised. Returns what `undo_append` needs to take the append back (a failed fsync).
        """
        self._trim_tail_if_needed()
        undo = AppendUndo(
            self.size, self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far,
            self.bytes_since_last_index_entry, self.rolling_based_timestamp,
            len(self.offset_index), len(self.time_index),
        )
        start = self.size
        try:
            _write_all(self.file.fd, data)
            if self.size == 0 and headers:
                self.rolling_based_timestamp = headers[0][1].max_timestamp
            self.size = start + len(data)
            for relative_position, header in headers:
                self._index_batch(start + relative_position, header)
        except OSError:
            self.undo_append(undo)
            raise
        return undo

    def undo_append(self, undo: "AppendUndo") -> None:
        """Take back an append: the memory state at once, the files as far as the disk lets us
        (what cannot be cut now is cut before the next write). Never raises."""
        self.size = undo.size
        self.max_timestamp_so_far = undo.max_timestamp_so_far
        self.offset_of_max_timestamp_so_far = undo.offset_of_max_timestamp_so_far
        self.bytes_since_last_index_entry = undo.bytes_since_last_index_entry
        self.rolling_based_timestamp = undo.rolling_based_timestamp
        self.offset_index.trim_to(undo.offset_index_entries)
        self.time_index.trim_to(undo.time_index_entries)
        self._tail_needs_trim = True
        try:
            self._trim_tail_if_needed()
        except OSError:
            pass

    def _trim_tail_if_needed(self) -> None:
        if self._tail_needs_trim:
            os.ftruncate(self.file.fd, self.size)
            self._tail_needs_trim = False

    def _index_batch(self, position: int, header: BatchHeader) -> None:
        if header.max_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = header.max_timestamp
            self.offset_of_max_timestamp_so_far = header.last_offset
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(header.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += header.size

    def on_become_inactive(self) -> None:
        """The segment was rolled: record its max timestamp in the time index, as Kafka does."""
        self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, True)

    def release_index_files(self) -> None:
        """fsync the index files and close their descriptors (lookups use the memory copies)."""
        for index in (self.offset_index, self.time_index):
            index.flush()
            index.close()

    def detach_index_fds(self) -> list[int]:
        """The index files' open descriptors, handed to the caller to fsync and close off the
        event loop (a rolled segment's indexes are final; lookups use the memory copies)."""
        return [fd for fd in (self.offset_index.detach_fd(), self.time_index.detach_fd()) if fd >= 0]

    # -- recovery and truncation ------------------------------------------------------------------

    def recover(self, on_batch=None) -> int:
        """Re-read the whole file, verifying each batch's CRC, and rebuild both indexes.

        Stops at the first torn or corrupt batch and truncates the file there. Calls
        `on_batch(header)` for each valid batch. Returns the number of bytes truncated.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp_so_far = self.base_offset
        self.bytes_since_last_index_entry = 0
        self.rolling_based_timestamp = None
        file_size = os.fstat(self.file.fd).st_size
        valid = 0
        last_offset = self.base_offset - 1
        buf = b""
        buf_start = 0  # file position of buf[0]
        while valid < file_size:
            rel = valid - buf_start
            if len(buf) - rel < BATCH_HEADER_SIZE:
                if file_size - valid < BATCH_HEADER_SIZE:
                    break  # a torn header at the tail
                buf, buf_start, rel = os.pread(self.file.fd, RECOVERY_READ_BYTES, valid), valid, 0
                if len(buf) < BATCH_HEADER_SIZE:
                    break
            try:
                header = read_batch_header(buf, rel)
            except InvalidRecordBatch:
                break
            if valid + header.size > file_size:
                break  # a torn write: the batch never fully reached the file
            if len(buf) - rel < header.size:
                buf, buf_start, rel = os.pread(self.file.fd, max(header.size, RECOVERY_READ_BYTES), valid), valid, 0
                if len(buf) < header.size:
                    break
            try:
                verify_crc(buf, rel, header)
            except InvalidRecordBatch:
                break
            if header.base_offset <= last_offset or header.base_offset < self.base_offset \
                    or header.last_offset - self.base_offset > INT32_MAX:
                break
            if valid == 0:
                self.rolling_based_timestamp = header.max_timestamp
            self._index_batch(valid, header)
            if on_batch is not None:
                on_batch(header)
            last_offset = header.last_offset
            valid += header.size
        truncated = file_size - valid
        if truncated:
            os.ftruncate(self.file.fd, valid)
        self.size = valid
        self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, True)
        self.indexes_valid = True
        return truncated

    def truncate_to(self, offset: int, now_ms: int) -> int:
        """Remove every batch whose last offset is >= offset; returns the bytes removed.

        A batch containing `offset` goes entirely (batches are never split).
        """
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position, header = found
        removed = self.size - position
        os.ftruncate(self.file.fd, position)
        self.size = position
        self.offset_index.truncate_to(header.base_offset)
        self.time_index.truncate_to(header.base_offset)
        self.bytes_since_last_index_entry = 0
        if position == 0:
            # An emptied segment starts ageing afresh (Kafka resets its created time too).
            self.rolling_based_timestamp = None
            self.created_ms = now_ms
        self.load_max_timestamp(scan=True)
        return removed

    # -- timestamps -------------------------------------------------------------------------------

    def largest_timestamp(self) -> int:
        """The segment's max timestamp, or the file's mtime when no batch has one (for retention.ms)."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return int(os.stat(self.log_path).st_mtime * 1000)

    def find_batch_by_timestamp(self, timestamp: int, starting_offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch at/after starting_offset whose max timestamp is >= timestamp."""
        _, indexed_offset = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(indexed_offset, starting_offset))
        for pos, header in self.iter_headers(position):
            if header.last_offset >= starting_offset and header.max_timestamp >= timestamp:
                return pos, header
        return None

    # -- reads ------------------------------------------------------------------------------------

    def read(self, start_offset: int, max_bytes: int, max_position: int | None = None,
             min_one_batch: bool = True) -> FileSlice | None:
        """Whole batches from the one containing start_offset, at most max_bytes (but at least one
        batch when min_one_batch), ending at or before max_position. None when there is nothing."""
        limit = self.size if max_position is None else min(max_position, self.size)
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        start, first = found
        if start + first.size > limit:
            return None
        if limit - start <= max_bytes:
            end = limit
        elif first.size > max_bytes:
            if not min_one_batch:
                return None
            end = start + first.size
        else:
            # Walk from the last indexed batch start that fits to find the last whole batch that fits.
            bound = start + max_bytes
            end = max(self.offset_index.floor_position(bound), start)
            for pos, header in self.iter_headers(end, limit):
                if pos + header.size > bound:
                    break
                end = pos + header.size
        return FileSlice(self.file, start, end - start, first.base_offset)

    # -- lifecycle --------------------------------------------------------------------------------

    def flush(self, indexes: bool = False) -> None:
        os.fdatasync(self.file.fd)
        if indexes:
            self.offset_index.flush()
            self.time_index.flush()

    def close(self) -> None:
        for index in (getattr(self, "offset_index", None), getattr(self, "time_index", None)):
            if index is not None:
                index.close()
        if not self._released:
            self._released = True
            self.file.close()

    def delete(self) -> None:
        """Remove the files: renamed `.deleted` first (the log file before its indexes, so a crash
        half-way leaves only files that recovery removes), then unlinked. Slices already read keep
        the data readable until they are closed."""
        self.offset_index.close()
        self.time_index.close()
        for path in self._renamed_for_deletion():
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        if not self._released:
            self._released = True
            self.file.close()

    def _renamed_for_deletion(self) -> list[str]:
        renamed = []
        for path in (self.log_path, self.offset_index.path, self.time_index.path):
            doomed = path + DELETED_FILE_SUFFIX
            try:
                os.rename(path, doomed)
            except FileNotFoundError:
                continue
            renamed.append(doomed)
        return renamed

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size})"


