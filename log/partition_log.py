"""The log of one partition: a directory `<topic>-<partition>` of segments, with Kafka's offsets and recovery.

Offsets, as Kafka names them:
- log start offset: the first offset a consumer may read (raised by retention and DeleteRecords);
- log end offset (LEO): the offset the next appended record gets;
- high watermark: the end of what is replicated to the in-sync replicas. The broker sets it (on a
  single node, to the LEO after each append); consumers read up to it. This class only keeps it
  within [log start offset, LEO];
- recovery point: everything below it was fsynced; after an unclean shutdown only segments from
  the one containing it are re-scanned.

Appends decode no record unless the topic's config asks for record checks or another codec
(log/validator.py, Kafka's LogValidator): each batch's header and CRC are checked, its base offset
and leader epoch written into the header in place (the CRC does not cover them), and all batches go
to the active segment with one write(2) call, so an acknowledged append is in the file (the page
cache) before `append` returns and survives the process being killed. fsync follows
`flush.messages` / `flush.ms` and happens on every segment roll.

Every step that can fail on the disk (the leader epoch checkpoint, a roll, the write, its index
entries, an fsync under flush.messages) happens before the append counts, and a failure takes it
back: the client gets KAFKA_STORAGE_ERROR, the log is as before, and the next append works once
the disk does. Crash recovery (`_load`) re-scans from the recovery point, cuts torn or corrupt
tails, rebuilds indexes, completes an interrupted compaction swap and replays producer state.

Not thread-safe: the broker calls it from its event loop. Everything here is synchronous and
quick except recovery (on open) and fsyncs. The log cleaner reads closed segments from a worker
thread through descriptors it holds, and swaps its result in through `replace_segments` on the
event loop.

Background flushes: given a `flusher` (an Executor with one worker, so jobs run in order), a roll
does what Kafka's "flush-log" task does off the request path: the rolled segment, its indexes,
the producer snapshot and the directory are fsynced by a job holding its own descriptors
(duplicates, so closing or deleting the segment meanwhile is harmless), and the recovery point
moves only when the job has finished (checked whenever it is read). Without a flusher the same
job runs inline. A truncation forgets unfinished jobs (the offsets they cover may be rewritten);
a failed job moves nothing, and the next flush covers the range again. Only flush.messages, a
sync `flush` and `close` fsync on the caller's thread.
"""

from __future__ import annotations

import bisect
import concurrent.futures
import logging
import os
import random
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from kafka_wire.record_codec import decode_records, iter_records_with_offsets
from kafka_wire.records import NO_PRODUCER_ID, BatchHeader, InvalidRecordBatch
from log.checkpoints import fsync_directory, fsync_directory_if_exists, fsync_file_if_exists
from log.config import LogConfig
from log.flusher import sync_paths_on
from log.errors import (
    InvalidProducerEpoch,
    InvalidTxnState,
    KafkaStorageError,
    OffsetOutOfRange,
    RecordBatchTooLarge,
    UnexpectedAppendOffset,
)
from log.leader_epoch import LeaderEpochCache
from log.producer_state import AppendOrigin, ProducerStateManager
from log.transaction_index import AbortedTxn, PartitionTransactionIndex, marker_coordinator_epoch, marker_is_abort
from log.validator import assign_batch_offsets, validate_batches, validate_records
from log.segment import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_FILE_SUFFIX,
    TIME_INDEX_SUFFIX,
    FileSlice,
    LogSegment,
    read_batches,
    segment_file_name,
)

__all__ = [
    "AppendInfo",
    "AppendOrigin",
    "OffsetAndTimestamp",
    "PartitionLog",
    "parse_partition_dir_name",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
]

logger = logging.getLogger(__name__)

# ListOffsets' special timestamps.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5

NO_TIMESTAMP = -1
# Files a crashed rename/delete/compaction can leave behind; none holds data we still need once
# interrupted swaps are completed (a `.log.swap` is a committed cleaned segment).
_STRAY_SUFFIXES = (DELETED_FILE_SUFFIX, CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX, ".tmp")
DELETE_DIR_SUFFIX = "-delete"
# The longest file name Linux file systems take; a topic name may be 249 characters long.
MAX_FILE_NAME_BYTES = 255


def deleted_dir_name(topic: str, partition: int) -> str:
    """`<topic>-<partition>.<unique id>-delete`, the topic cut short so that the name fits in 255
    bytes (Kafka's UnifiedLog.logDeleteDirName: a 249-character topic's partition directory
    plus the suffix would not)."""
    suffix = f"-{partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
    prefix = topic.encode()[: MAX_FILE_NAME_BYTES - len(suffix)].decode(errors="ignore")
    return prefix + suffix


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _unlink_if_exists(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def parse_partition_dir_name(name: str) -> tuple[str, int]:
    """`<topic>-<partition>` -> (topic, partition). Topics may contain '-', so split at the last one."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f"{name!r} is not a <topic>-<partition> directory name")
    return topic, int(partition)


@dataclass(slots=True)
class AppendInfo:
    """What a Produce response needs from an append (Kafka's LogAppendInfo)."""

    base_offset: int
    last_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    max_timestamp: int
    offset_of_max_timestamp: int
    log_start_offset: int
    record_count: int
    valid_bytes: int
    # True when the batch was a retry of one already in the log: nothing was appended and the
    # offsets are the original ones (Kafka answers such a retry with no error).
    duplicate: bool = False


class _BackgroundFlush(NamedTuple):
    """A flush job under way: the recovery point moves to `target` when `future` succeeds."""

    future: concurrent.futures.Future
    target: int


def _fsync_off_the_loop(fds: list[int], paths: list[str], directories: list[str]) -> None:
    """A background flush job: fdatasync and close the descriptors it owns, fsync the files
    written without it, then the directories (new segment and snapshot names; the log dir when
    the partition's own directory is new)."""
    try:
        for fd in fds:
            os.fdatasync(fd)
        for path in paths:
            fsync_file_if_exists(path)
        for directory in directories:
            fsync_directory_if_exists(directory)
    finally:
        for fd in fds:
            os.close(fd)


def _run_on(flusher: concurrent.futures.Executor | None, job, *args) -> concurrent.futures.Future:
    """Submit a job to the flusher, or run it here when there is none (or it was shut down)."""
    if flusher is not None:
        try:
            return flusher.submit(job, *args)
        except RuntimeError:  # shut down (the broker is closing): do it here
            pass
    future = concurrent.futures.Future()
    try:
        future.set_result(job(*args))
    except OSError as e:
        future.set_exception(e)
    return future


class OffsetAndTimestamp(NamedTuple):
    """A ListOffsets answer: the offset found and the timestamp of the record there."""

    offset: int
    timestamp: int


class PartitionLog:
    """One partition's segments, indexes, offsets, leader epochs and producer state."""

    def __init__(
        self,
        directory: str,
        config: LogConfig | Mapping[str, Any] | None = None,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        high_watermark: int = 0,
        clean_shutdown: bool = False,
        clock_ms: Callable[[], int] = _wall_clock_ms,
        flusher: concurrent.futures.Executor | None = None,
    ):
        self.dir = os.path.abspath(directory)
        self.topic, self.partition = parse_partition_dir_name(os.path.basename(self.dir))
        self.config = LogConfig.of(config)
        self._clock_ms = clock_ms
        self._flusher = flusher
        created = not os.path.isdir(self.dir)
        os.makedirs(self.dir, exist_ok=True)
        # A new directory's name, and its first segment's, must be durable before data in them
        # counts as flushed: fsynced now without a flusher; with one, by a job queued before any
        # flush of this log, or by the first sync flush if that comes first (a new topic's
        # partitions then cost the event loop no fsync).
        self._new_directory: concurrent.futures.Future | None = None
        self._named_at_creation: frozenset[int] = frozenset()
        self._rewrites_at_creation = 0
        if created and flusher is None:
            fsync_directory(os.path.dirname(self.dir))
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.leader_epoch_cache = LeaderEpochCache(self.dir, flusher)
        self.producer_state = ProducerStateManager(self.dir)
        self.transaction_index = PartitionTransactionIndex(self.dir)
        self.log_end_offset = 0
        self.log_start_offset = 0
        self._recovery_point = 0
        self._background_flushes: list[_BackgroundFlush] = []
        self._high_watermark = 0
        self._last_flush_ms = clock_ms()
        # Cached (offset, segment base, position) of the last max_offset a read was bounded by.
        self._bound_position: tuple[int, int, int] | None = None
        self._closed = False
        # Counts changes that rewrite data already written (truncation, compaction swaps): a copy
        # of the files taken before one cannot be completed by appending (log/future_log.py).
        self.rewrites = 0
        # Called with this log after its high watermark, log start offset or rewrite count moved,
        # and when it is closed or deleted: how a reader in another process learns of it
        # (broker/workers/read_cursors.py publishes them). None: nobody asked.
        self.moved: Callable[[PartitionLog], None] | None = None
        self._load(recovery_point, log_start_offset, high_watermark, clean_shutdown)
        if created and flusher is not None:
            directories = [self.dir, os.path.dirname(self.dir)]
            # The names of the segments made so far are durable once that job has succeeded.
            self._named_at_creation = frozenset(self._bases)
            self._rewrites_at_creation = self.rewrites  # a truncation may make a file of the same name
            self._new_directory = sync_paths_on(flusher, [], directories,
                                                lambda: _run_on(flusher, _fsync_off_the_loop, [], [], directories))

    # -- offsets ----------------------------------------------------------------------------------

    @property
    def recovery_point(self) -> int:
        """Everything below it is fsynced (background flushes that finished count from here on)."""
        if self._background_flushes:
            self._reap_background_flushes()
        return self._recovery_point

    @recovery_point.setter
    def recovery_point(self, offset: int) -> None:
        self._recovery_point = offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        self._high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)
        if self.moved is not None:
            self.moved(self)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed consumers stop: the first open transaction's offset, or the HW."""
        first_unstable = self.producer_state.first_unstable_offset()
        if first_unstable is None:
            return self._high_watermark
        return max(self.log_start_offset, min(first_unstable, self._high_watermark))

    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch

    def epoch_for_offset(self, offset: int) -> int | None:
        return self.leader_epoch_cache.epoch_for_offset(offset)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch; (-1, -1) when the epoch is unknown."""
        return self.leader_epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    def update_config(self, config: LogConfig | Mapping[str, Any]) -> None:
        """Apply changed topic configs (AlterConfigs); they take effect on the next append or roll."""
        self.config = LogConfig.of(config)

    # -- appending --------------------------------------------------------------------------------

    def append(
        self,
        batches,
        *,
        leader_epoch: int,
        assign_offsets: bool = True,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        transaction_version: int = 0,
        verification_guard: object | None = None,
    ) -> AppendInfo:
        """Validate, number and write whole batches; raise before anything is written if one is bad.

        `batches` is a bytearray or memoryview (patched in place; other buffers are copied).
        With assign_offsets (a leader), batches get offsets from the LEO and `leader_epoch` in
        their header; without (a follower copying its leader, origin REPLICATION), the offsets
        and epochs in the batches are kept and must continue the log.
        The batches are checked (a client's also converted) by log/validator.py first.
        Raises InvalidRecordBatch/CorruptBatch (CORRUPT_MESSAGE), InvalidRecord, RecordTooLarge,
        RecordValidationError, RecordBatchTooLarge, OutOfOrderSequence, InvalidProducerEpoch,
        InvalidTxnState, UnexpectedAppendOffset or KafkaStorageError. `transaction_version` is that
        of the markers among the batches (WriteTxnMarkers v2): a TV2 marker must be above the
        producer's epoch. `verification_guard` is what the transaction verification this append
        waited for returned (ProducerStateManager.start_verification): a transactional batch that
        opens a transaction must still hold the producer's current one, or it is refused with
        INVALID_TXN_STATE (a marker ended the verification meanwhile), as Kafka's UnifiedLog does.
        """
        if not assign_offsets:
            origin = AppendOrigin.REPLICATION
        buf = batches
        if not isinstance(buf, bytearray) and not (isinstance(buf, memoryview) and not buf.readonly):
            buf = bytearray(buf)
        config = self.config
        positions = validate_batches(buf, config, origin)
        log_append_time = NO_TIMESTAMP
        if assign_offsets:
            now_ms = self._clock_ms()
            if origin is AppendOrigin.CLIENT:
                buf, positions = validate_records(buf, positions, config, now_ms, f"{self.topic}-{self.partition}")
            if config.message_timestamp_type == "LogAppendTime" and origin is not AppendOrigin.REPLICATION:
                log_append_time = now_ms
            headers = assign_batch_offsets(buf, positions, self.log_end_offset, leader_epoch, log_append_time)
        else:
            headers = positions
            previous_last = self.log_end_offset - 1
            for _, header in headers:
                if header.base_offset <= previous_last or header.last_offset < header.base_offset:
                    raise UnexpectedAppendOffset(
                        f"{self.topic}-{self.partition}: batch offsets {header.base_offset}..{header.last_offset} "
                        f"do not follow {previous_last} (log end offset {self.log_end_offset})"
                    )
                previous_last = header.last_offset

        total = len(buf)
        if total > config.segment_bytes:
            raise RecordBatchTooLarge(
                f"append of {total} bytes to {self.topic}-{self.partition} exceeds segment.bytes {config.segment_bytes}"
            )

        first_header, last_header = headers[0][1], headers[-1][1]
        max_timestamp, offset_of_max_timestamp = NO_TIMESTAMP, first_header.base_offset
        record_count = 0
        for _, header in headers:
            record_count += header.records_count
            if header.max_timestamp > max_timestamp:
                max_timestamp, offset_of_max_timestamp = header.max_timestamp, header.last_offset

        producer_append = self.producer_state.begin_append(origin, transaction_version)
        for position, header in headers:
            if header.producer_id == NO_PRODUCER_ID:
                continue
            if verification_guard is not None and header.is_transactional and not header.is_control \
                    and not self.producer_state.has_ongoing_transaction(header.producer_id, header.producer_epoch):
                entry = self.producer_state.last_entry(header.producer_id)
                if entry is not None and header.producer_epoch < entry.producer_epoch:
                    raise InvalidProducerEpoch(f"epoch of producer {header.producer_id} is {header.producer_epoch}, "
                                               f"which is smaller than the last seen epoch {entry.producer_epoch}")
                if self.producer_state.verification_guard(header.producer_id) is not verification_guard:
                    raise InvalidTxnState("Record was not part of an ongoing transaction")
            duplicate = producer_append.check_and_record(
                header, marker_coordinator_epoch(buf, position) if header.is_control else None)
            if duplicate is not None:
                return AppendInfo(
                    base_offset=duplicate.first_offset,
                    last_offset=duplicate.last_offset,
                    # Kafka answers a duplicate with the cached batch's timestamp here, whatever
                    # the topic's timestamp type.
                    log_append_time=duplicate.timestamp,
                    max_timestamp=duplicate.timestamp,
                    offset_of_max_timestamp=duplicate.last_offset,
                    log_start_offset=self.log_start_offset,
                    record_count=duplicate.last_offset - duplicate.first_offset + 1,
                    valid_bytes=0,
                    duplicate=True,
                )

        new_log_end_offset = last_header.next_offset
        flush_now = new_log_end_offset - self.recovery_point >= config.flush_messages
        try:
            # The epoch goes to its checkpoint before the data: if that write fails, nothing is
            # appended; if the data write fails after it, an entry starting at the LEO is harmless.
            if assign_offsets:
                if leader_epoch >= 0:
                    self.leader_epoch_cache.assign(leader_epoch, first_header.base_offset)
            else:
                for _, header in headers:
                    if header.partition_leader_epoch >= 0:
                        self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
            segment = self._maybe_roll(total, max_timestamp, last_header.last_offset, first_header.base_offset)
            undo = segment.append(buf, headers)
        except OSError as e:
            raise KafkaStorageError(f"append to {self.topic}-{self.partition} failed: {e}") from e
        if flush_now:
            # flush.messages: the data must be on disk before the append counts; a failed fsync
            # takes the append back (the client gets KAFKA_STORAGE_ERROR and may retry).
            try:
                self._fsync_segments(self.recovery_point, new_log_end_offset)
            except OSError as e:
                segment.undo_append(undo)
                raise KafkaStorageError(f"fsync of {self.topic}-{self.partition} failed: {e}") from e

        self.log_end_offset = new_log_end_offset
        # The transactions open before this append, while the producer state still says so.
        open_before = self._open_transactions() if producer_append.completed_transactions else None
        producer_append.commit()
        if open_before is not None:
            self._index_aborted_transactions(buf, headers, segment.base_offset, open_before, producer_append)
        self.producer_state.map_end_offset = self.log_end_offset
        if flush_now:
            self.recovery_point = new_log_end_offset
            self._last_flush_ms = self._clock_ms()
        return AppendInfo(
            base_offset=first_header.base_offset,
            last_offset=last_header.last_offset,
            log_append_time=log_append_time,
            max_timestamp=max_timestamp,
            offset_of_max_timestamp=offset_of_max_timestamp,
            log_start_offset=self.log_start_offset,
            record_count=record_count,
            valid_bytes=total,
        )

    def _maybe_roll(self, append_bytes: int, max_timestamp: int, last_offset: int, first_offset: int) -> LogSegment:
        segment = self._segments[-1]
        config = self.config
        if segment.should_roll(append_bytes, max_timestamp, last_offset, self._clock_ms(),
                               config.segment_bytes, config.segment_ms):
            # A follower's batches may skip offsets; the new segment starts at the first of them.
            return self.roll(max(first_offset, self.log_end_offset))
        return segment

    def roll(self, base_offset: int | None = None) -> LogSegment:
        """Close the active segment to appends and start a new one at the LEO (or base_offset).

        Every step can fail on a sick disk; each leaves the log usable with the old active
        segment (or the new one once it exists), and the next append tries again.
        """
        active = self._segments[-1]
        base = self.log_end_offset if base_offset is None else max(base_offset, self.log_end_offset)
        if active.size == 0 and active.base_offset == base:
            return active
        snapshot = None
        if active.size != 0:
            active.on_become_inactive()
            self.producer_state.map_end_offset = self.log_end_offset
            # Written now (page cache), fsynced with the segment by the background flush.
            snapshot = self.producer_state.take_snapshot(sync=False)
        segment = self._create_segment(base)
        index_fds = []
        if active.size == 0:
            # An empty active segment at a lower base (offsets were skipped): replace it.
            self._segments.pop()
            self._bases.pop()
            active.delete()
        else:
            # Its indexes are final now; the flush job fsyncs and closes their descriptors.
            index_fds = active.detach_index_fds()
        self._segments.append(segment)
        self._bases.append(base)
        # Kafka schedules the rolled segment's flush ("flush-log") instead of doing it here.
        self._flush_in_background(min(base, self.log_end_offset), index_fds, [snapshot] if snapshot else [])
        return segment

    def _new_segment(self, base_offset: int) -> LogSegment:
        segment = self._create_segment(base_offset)
        self._segments.append(segment)
        self._bases.append(base_offset)
        return segment

    def _create_segment(self, base_offset: int) -> LogSegment:
        config = self.config
        jitter = random.randrange(config.segment_jitter_ms) if config.segment_jitter_ms > 0 else 0
        return LogSegment(
            self.dir,
            base_offset,
            index_interval_bytes=config.index_interval_bytes,
            max_index_bytes=config.segment_index_bytes,
            now_ms=self._clock_ms(),
            create=True,
            roll_jitter_ms=min(jitter, config.segment_ms - 1),
        )

    def _open_segment(self, base_offset: int) -> LogSegment:
        config = self.config
        return LogSegment(
            self.dir,
            base_offset,
            index_interval_bytes=config.index_interval_bytes,
            max_index_bytes=config.segment_index_bytes,
            now_ms=self._clock_ms(),
            create=False,
        )

    # -- flushing ---------------------------------------------------------------------------------

    def flush(self, offset: int | None = None) -> None:
        """fsync everything below `offset` (default: the LEO) and move the recovery point there."""
        target = self.log_end_offset if offset is None else min(offset, self.log_end_offset)
        if target <= self.recovery_point:
            return
        try:
            self._fsync_segments(self.recovery_point, target)
        except OSError as e:
            raise KafkaStorageError(f"fsync of {self.topic}-{self.partition} failed: {e}") from e
        self.recovery_point = target
        self._last_flush_ms = self._clock_ms()
        self.transaction_index.flush()

    def _segments_holding(self, from_offset: int, to_offset: int) -> list[LogSegment]:
        """The segments holding offsets [from_offset, to_offset)."""
        first = max(0, bisect.bisect_right(self._bases, from_offset) - 1)
        found = []
        for segment in self._segments[first:]:
            if segment.base_offset >= to_offset:
                break
            found.append(segment)
        return found

    def _fsync_segments(self, from_offset: int, to_offset: int) -> None:
        """fsync the segments holding offsets [from_offset, to_offset), and the directory when one
        of them is new since the last flush (its name may not be durable yet: rolls leave that
        to the background flush, as Kafka's LocalLog.flush does)."""
        segments = self._segments_holding(from_offset, to_offset)
        for segment in segments:
            segment.flush()
        if self._directory_unsynced():
            fsync_directory(self.dir)
            fsync_directory(os.path.dirname(self.dir))
            self._new_directory = None
        elif any(segment.base_offset >= from_offset for segment in segments):
            fsync_directory(self.dir)

    def _directory_unsynced(self) -> bool:
        """Whether this new partition directory's fsync (queued at creation) has not succeeded yet."""
        job = self._new_directory
        if job is None:
            return False
        if job.done() and job.exception() is None:
            self._new_directory = None
            return False
        return True

    def _flush_in_background(self, target: int, owned_fds: list[int] = (), paths: list[str] = ()
                             ) -> concurrent.futures.Future:
        """Start a job that makes everything below `target` durable (see the module docstring);
        the recovery point moves there when it has finished."""
        fds, paths, directories = self._flush_job(target, owned_fds, paths)
        directories.insert(0, self.dir)
        future = _run_on(self._flusher, _fsync_off_the_loop, fds, paths, directories)
        self.track_flush(future, target)
        return future

    def _flush_job(self, target: int, owned_fds: list[int] = (), paths: list[str] = (), descriptors: bool = True
                   ) -> tuple[list[int], list[str], list[str]]:
        """What a job making [the end of the flushed or pending range, target) durable syncs:
        descriptors of those segments (duplicates the job owns and closes; none when
        `descriptors` is false, for a sync of the whole file system), files written without an
        fsync, and the parent directory when this partition's own directory may not be durable."""
        fds = list(owned_fds)
        try:
            if descriptors:
                for segment in self._segments_holding(self.flushed_or_pending, target):
                    fds.append(os.dup(segment.file.fd))
            paths = [*paths, *self.transaction_index.take_dirty_paths()]
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        directories = [os.path.dirname(self.dir)] if self._directory_unsynced() else []  # the creation's job failed?
        return fds, paths, directories

    def sync_job(self, descriptors: bool) -> tuple[int, list[int], list[str], list[str]]:
        """For a group commit (log/group_commit.py): (the LEO, then what `_flush_job` names up to it)
        for a job the caller runs and hands to `track_flush`. The directory is synced as well when a
        segment in the range is new since the data before it was flushed (its name may not be durable)."""
        start, target = self.flushed_or_pending, self.log_end_offset
        fds, paths, directories = self._flush_job(target, descriptors=descriptors)
        # A new partition's first segment was named durable by its creation's job, once that succeeded.
        named = (self._named_at_creation if self.rewrites == self._rewrites_at_creation
                 and not self._directory_unsynced() else frozenset())
        if descriptors and any(segment.base_offset >= start and segment.base_offset not in named
                               for segment in self._segments_holding(start, target)):
            directories.insert(0, self.dir)
        return target, fds, paths, directories

    @property
    def flushed_or_pending(self) -> int:
        """Everything below it is fsynced or covered by a flush job under way."""
        if not self._background_flushes:
            return self._recovery_point
        return max(self._recovery_point, max(flush.target for flush in self._background_flushes))

    def track_flush(self, future: concurrent.futures.Future, target: int) -> None:
        """A job under way (this log's own, or a group commit's) that makes everything below
        `target` durable: the recovery point moves there when it succeeds."""
        self._background_flushes.append(_BackgroundFlush(future, target))
        self._reap_background_flushes()

    def _reap_background_flushes(self) -> None:
        """Move the recovery point over the finished flush jobs, in the order they were started
        (each covers from where the previous one ended)."""
        flushes = self._background_flushes
        while flushes and flushes[0].future.done():
            done = flushes.pop(0)
            error = done.future.exception()
            if error is not None:
                # The later jobs start where this one ended: none of them may move the recovery
                # point; the next flush covers the whole range again.
                logger.error("background flush of %s-%d failed: %s", self.topic, self.partition, error)
                flushes.clear()
                return
            self._recovery_point = max(self._recovery_point, min(done.target, self.log_end_offset))

    def wait_for_background_flushes(self) -> None:
        """Block until the flush jobs started so far have finished (clean shutdown, tests)."""
        for flush in list(self._background_flushes):
            concurrent.futures.wait([flush.future])
        self._reap_background_flushes()

    def maybe_flush(self, now_ms: int | None = None, background: bool = False) -> bool:
        """fsync when flush.ms has passed since the last flush and there is unflushed data;
        background=True starts a flush job instead (see `pending_flushes`)."""
        now_ms = self._clock_ms() if now_ms is None else now_ms
        if self.log_end_offset > self.recovery_point and now_ms - self._last_flush_ms >= self.config.flush_ms:
            if not background:
                self.flush()
                return True
            if self.flushed_or_pending < self.log_end_offset:
                self._flush_in_background(self.log_end_offset)
            self._last_flush_ms = now_ms
            return True
        return False

    def pending_flushes(self) -> list[concurrent.futures.Future] | tuple[()]:
        """The flush jobs not reaped yet (the broker awaits them before checkpointing); an empty
        tuple, allocating nothing, for the many logs with none."""
        if not self._background_flushes:
            return ()
        return [flush.future for flush in self._background_flushes]

    # -- reading ----------------------------------------------------------------------------------

    def read_slice(
        self, offset: int, max_bytes: int, max_offset: int | None = None, min_one_batch: bool = True
    ) -> FileSlice | None:
        """Whole batches from the one containing `offset`, from one segment, up to max_bytes.

        At least one batch is returned even when it is larger than max_bytes if min_one_batch
        (KIP-74). Batches reaching `max_offset` (the high watermark, or the last stable offset,
        for consumers) are left out. None when there is nothing to return yet.
        Raises OffsetOutOfRange when offset < log start offset or > LEO.
        """
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRange(
                f"offset {offset} is out of range for {self.topic}-{self.partition}: "
                f"log start offset {self.log_start_offset}, log end offset {self.log_end_offset}"
            )
        if max_offset is not None and max_offset >= self.log_end_offset:
            max_offset = None
        if offset >= (self.log_end_offset if max_offset is None else max_offset):
            return None
        i = max(0, bisect.bisect_right(self._bases, offset) - 1)
        while i < len(self._segments):
            segment = self._segments[i]
            max_position = None
            next_base = self._bases[i + 1] if i + 1 < len(self._bases) else None
            if max_offset is not None and (next_base is None or max_offset < next_base):
                max_position = self._position_of(segment, max_offset)
            found = segment.read(offset, max_bytes, max_position, min_one_batch)
            if found is not None or max_position is not None:
                return found
            i += 1  # nothing at or after `offset` in this segment (offsets skipped): try the next
        return None

    # -- transactions -----------------------------------------------------------------------------

    def _open_transactions(self) -> dict[int, int]:
        """{first offset: producer id} of the transactions the producer state has open."""
        return {entry.current_txn_first_offset: pid for pid, entry in self.producer_state.entries.items()
                if entry.current_txn_first_offset is not None}

    def _index_aborted_transactions(self, buf, headers, segment_base: int, open_before: dict[int, int],
                                    producer_append) -> None:
        """Index the aborts among an append's markers, each with the last stable offset as it
        stood at its own marker: what was open before the append, plus what the append opened
        before that marker, less what its earlier markers closed. (The state after the whole
        append can be too high: a follower appends many transactions at once, and an LSO past
        the truth stops the search for aborts before later ones, see TransactionIndex.collect.)"""
        ongoing = dict(open_before)
        started = sorted(producer_append.started_transactions, key=lambda t: t[1])
        next_started = 0
        for producer_id, first_offset, marker_offset in producer_append.completed_transactions:
            while next_started < len(started) and started[next_started][1] < marker_offset:
                ongoing[started[next_started][1]] = started[next_started][0]
                next_started += 1
            ongoing.pop(first_offset, None)
            position = next(pos for pos, header in headers if header.base_offset == marker_offset)
            if marker_is_abort(buf, position):
                others = [first for first, pid in ongoing.items() if pid != producer_id]
                last_stable = min(others) if others else marker_offset + 1
                self.transaction_index.append(
                    segment_base, AbortedTxn(producer_id, first_offset, marker_offset, last_stable))

    def _index_aborted_transaction(self, segment_base: int, producer_id: int, first_offset: int,
                                   marker_offset: int) -> None:
        """Record an aborted transaction whose marker the producer state has just applied (recovery
        replays one batch at a time); its last stable offset is where the partition's LSO stood
        once it completed (Kafka's ProducerStateManager.lastStableOffset(completedTxn))."""
        others = [entry.current_txn_first_offset for pid, entry in self.producer_state.entries.items()
                  if pid != producer_id and entry.current_txn_first_offset is not None]
        last_stable = min(others) if others else marker_offset + 1
        self.transaction_index.append(segment_base, AbortedTxn(producer_id, first_offset, marker_offset, last_stable))

    def collect_aborted_transactions(self, start_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions with records in [start_offset, upper_bound)."""
        return self.transaction_index.collect(self._bases, start_offset, upper_bound)

    def aborted_transactions_for_read(self, fetch_offset: int, records: FileSlice | None) -> list[AbortedTxn]:
        """What a read_committed Fetch answers with `records` read from `fetch_offset`: the aborted
        transactions overlapping the fetched batches, up to the first batch not fetched."""
        if records is None or len(records) == 0:
            return []
        i = max(0, bisect.bisect_right(self._bases, records.first_offset) - 1)
        segment = self._segments[i]
        end = records.position + len(records)
        upper_bound = self._bases[i + 1] if i + 1 < len(self._bases) else self.log_end_offset
        if end < segment.size:
            try:
                upper_bound = segment.read_header(end).base_offset
            except InvalidRecordBatch:
                pass  # a torn tail: the bound stays at the segment's end
        return self.collect_aborted_transactions(fetch_offset, upper_bound)

    def _position_of(self, segment: LogSegment, offset: int) -> int:
        """File position where the batch holding `offset` starts in `segment` (its size if none does)."""
        cached = self._bound_position
        if cached is not None and cached[0] == offset and cached[1] == segment.base_offset:
            return cached[2]
        found = segment.translate_offset(offset)
        position = segment.size if found is None else found[0]
        if found is not None:
            self._bound_position = (offset, segment.base_offset, position)
        return position

    # -- timestamps -------------------------------------------------------------------------------

    def fetch_offset_by_timestamp(self, timestamp: int) -> OffsetAndTimestamp | None:
        """ListOffsets: the first offset whose record timestamp is >= timestamp, with that timestamp.

        Also answers the special timestamps: -2 earliest (log start offset), -1 latest (LEO; the
        broker bounds it by the high watermark), -3 the record with the largest timestamp.
        None when no record qualifies.
        """
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return OffsetAndTimestamp(self.log_start_offset, NO_TIMESTAMP)
        if timestamp == LATEST_TIMESTAMP:
            return OffsetAndTimestamp(self.log_end_offset, NO_TIMESTAMP)
        if timestamp == MAX_TIMESTAMP:
            return self.max_timestamp_offset()
        if timestamp < 0:
            return None
        start_offset = self.log_start_offset
        for segment in self._segments:
            if segment.max_timestamp_so_far < timestamp:
                continue
            found = segment.find_batch_by_timestamp(timestamp, start_offset)
            while found is not None:
                position, header = found
                match = self._first_record_at_or_after(segment, position, header, timestamp, start_offset)
                if match is not None:
                    return match
                found = self._next_batch_by_timestamp(segment, position + header.size, timestamp)
        return None

    def _next_batch_by_timestamp(self, segment: LogSegment, position: int, timestamp: int):
        for pos, header in segment.iter_headers(position):
            if header.max_timestamp >= timestamp:
                return pos, header
        return None

    def _first_record_at_or_after(self, segment, position, header, timestamp, start_offset):
        """Within one batch, the first record with timestamp >= target and offset >= start_offset."""
        if header.timestamp_type == 1:  # LogAppendTime: every record has the batch's timestamp
            return OffsetAndTimestamp(max(header.base_offset, start_offset), header.max_timestamp)
        for offset, record_timestamp in self._record_timestamps(segment, position, header):
            if record_timestamp >= timestamp and offset >= start_offset:
                return OffsetAndTimestamp(offset, record_timestamp)
        return None

    @staticmethod
    def _record_timestamps(segment: LogSegment, position: int, header: BatchHeader):
        data = segment.read_batch(position, header.size)
        batch_header, records = decode_records(data)
        return [(offset, ts) for offset, ts, _ in iter_records_with_offsets(batch_header, records)]

    def max_timestamp_offset(self) -> OffsetAndTimestamp | None:
        """ListOffsets -3: the first record carrying the largest timestamp in the log, or None."""
        best = None
        for segment in self._segments:
            if segment.size and (best is None or segment.max_timestamp_so_far > best.max_timestamp_so_far):
                best = segment
        if best is None or best.max_timestamp_so_far < 0:
            return None
        target = best.max_timestamp_so_far
        for position, header in best.iter_headers(best.offset_index.lookup(best.offset_of_max_timestamp_so_far)):
            if header.max_timestamp == target:
                if header.timestamp_type == 1:
                    return OffsetAndTimestamp(header.base_offset, target)
                for offset, record_timestamp in self._record_timestamps(best, position, header):
                    if record_timestamp == target:
                        return OffsetAndTimestamp(offset, target)
                return OffsetAndTimestamp(header.last_offset, target)
        return None

    # -- deleting and truncating ------------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: raise the log start offset to `offset` and drop segments wholly below it.

        Returns the new log start offset (the low watermark). Raises OffsetOutOfRange when
        `offset` is above the high watermark.
        """
        if offset > self._high_watermark:
            raise OffsetOutOfRange(
                f"cannot raise the log start offset of {self.topic}-{self.partition} to {offset}: "
                f"the high watermark is {self._high_watermark}"
            )
        if offset > self.log_start_offset:
            self._increment_log_start_offset(offset)
            self._delete_segments(self._deletable_segments(lambda seg, nxt: nxt is not None and nxt.base_offset <= offset))
        return self.log_start_offset

    def delete_segments_older_than(self, retention_ms: int, now_ms: int | None = None) -> int:
        """retention.ms: delete segments whose newest record is older than retention_ms. Returns the count.

        As in Kafka, segments reaching past the high watermark stay, and when every segment has
        expired the active one is rolled first so that it can go too.
        """
        if retention_ms < 0:
            return 0
        now_ms = self._clock_ms() if now_ms is None else now_ms
        return self._delete_segments(
            self._deletable_segments(lambda seg, nxt: now_ms - seg.largest_timestamp() > retention_ms)
        )

    def delete_segments_over_size(self, retention_bytes: int) -> int:
        """retention.bytes: delete the oldest segments while the log stays above the limit."""
        if retention_bytes < 0:
            return 0
        excess = self.size_in_bytes - retention_bytes
        if excess <= 0:
            return 0

        def over_size(seg, nxt):
            nonlocal excess
            if excess - seg.size >= 0:
                excess -= seg.size
                return True
            return False

        return self._delete_segments(self._deletable_segments(over_size))

    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """One retention pass as Kafka's log cleanup does it: by time, by size, below the start offset."""
        deleted = 0
        if "delete" in self.config.cleanup_policy:
            deleted += self.delete_segments_older_than(self.config.retention_ms, now_ms)
            deleted += self.delete_segments_over_size(self.config.retention_bytes)
        start = self.log_start_offset
        deleted += self._delete_segments(
            self._deletable_segments(lambda seg, nxt: nxt is not None and nxt.base_offset <= start)
        )
        return deleted

    def _deletable_segments(self, predicate) -> list[LogSegment]:
        """Leading segments matching predicate(segment, next segment), never past the high watermark."""
        deletable = []
        for i, segment in enumerate(self._segments):
            nxt = self._segments[i + 1] if i + 1 < len(self._segments) else None
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if nxt is None and segment.size == 0:
                break
            if self._high_watermark >= upper and predicate(segment, nxt):
                deletable.append(segment)
            else:
                break
        return deletable

    def _delete_segments(self, segments: list[LogSegment]) -> int:
        if not segments:
            return 0
        if len(segments) == len(self._segments):
            self.roll()  # a log always keeps one segment
        count = len(segments)
        del self._segments[:count], self._bases[:count]
        for segment in segments:
            segment.delete()
        self._bound_position = None
        if self._segments[0].base_offset > self.log_start_offset:
            self._increment_log_start_offset(self._segments[0].base_offset)
        self.producer_state.delete_snapshots_before(self._segments[0].base_offset)
        self.transaction_index.retain(self._bases)
        return count

    # -- compaction -------------------------------------------------------------------------------

    def last_records_of_active_producers(self) -> dict[int, tuple[int | None, int]]:
        """producer id -> (offset of its last data batch's last record or None, epoch): the
        batches the cleaner must keep (as empty batches if need be) so that producer state
        survives compaction (Kafka's UnifiedLog.lastRecordsOfActiveProducers)."""
        result = {}
        for producer_id, entry in self.producer_state.entries.items():
            last = entry.last_data_offset
            result[producer_id] = (last if last >= 0 else None, entry.producer_epoch)
        return result

    def replace_segments(self, cleaned: LogSegment, old: list[LogSegment],
                         kept_abort_markers: set[int] | None = None) -> bool:
        """Swap a cleaned segment (files named `.cleaned`, fsynced) in for the segments `old`.

        Kafka's protocol, so that a crash at any point leaves either the old segments or the
        cleaned one: the cleaned files are renamed `.swap` (the log file last: that rename is the
        commit), the old segments other than the first are deleted, and the `.swap` files take
        the first one's names. `_complete_interrupted_swaps` finishes the job after a crash.
        Returns False (and removes the cleaned files) when the log changed meanwhile: `old` is
        no longer a run of its segments (retention, DeleteRecords, truncation) or it was closed.
        `kept_abort_markers`: offsets of the ABORT markers the cleaned segment keeps for their
        transaction (Kafka's rule); the other aborted transactions leave the `.txnindex`.
        """
        base = cleaned.base_offset
        try:
            first = next(i for i, seg in enumerate(self._segments) if seg is old[0]) if old else -1
        except StopIteration:
            first = -1
        if (self._closed or first < 0 or old[0].base_offset != base
                or self._segments[first : first + len(old)] != old
                or first + len(old) >= len(self._segments)):
            cleaned.close()
            cleaned.delete()
            return False
        cleaned.close()
        names = [(cleaned.offset_index.path, INDEX_SUFFIX), (cleaned.time_index.path, TIME_INDEX_SUFFIX),
                 (cleaned.log_path, LOG_SUFFIX)]
        swapped = []
        try:
            for path, suffix in names:
                swap = os.path.join(self.dir, segment_file_name(base, suffix) + SWAP_FILE_SUFFIX)
                os.rename(path, swap)
                swapped.append(swap)
            fsync_directory(self.dir)
        except OSError:
            for path in swapped + [path for path, _ in names]:
                _unlink_if_exists(path)
            raise
        # Committed: from here on a crash is completed by the next load.
        for segment in old[1:]:
            segment.delete()
            # The producer snapshot taken when that segment was rolled in goes with it, as in Kafka.
            self.producer_state.remove_snapshot(segment.base_offset)
        self.transaction_index.merge_into(base, [segment.base_offset for segment in old[1:]])
        if kept_abort_markers is not None:
            self.transaction_index.keep_only(base, kept_abort_markers)
        for swap in swapped:
            os.replace(swap, swap[: -len(SWAP_FILE_SUFFIX)])
        fsync_directory(self.dir)
        old[0].close()  # its file names now belong to the cleaned segment
        replacement = self._open_segment(base)
        if not replacement.indexes_valid:
            replacement.recover()
            replacement.flush(indexes=True)
        replacement.load_max_timestamp()
        replacement.release_index_files()
        self._segments[first : first + len(old)] = [replacement]
        self._bases[first : first + len(old)] = [base]
        self._bound_position = None
        self.rewrites += 1
        if self.moved is not None:
            self.moved(self)
        return True

    def _increment_log_start_offset(self, offset: int) -> None:
        self.log_start_offset = offset
        self._high_watermark = max(self._high_watermark, offset)
        self.recovery_point = max(self.recovery_point, min(offset, self.log_end_offset))
        self.leader_epoch_cache.truncate_from_start(offset)
        if self.moved is not None:
            self.moved(self)

    def truncate_to(self, offset: int) -> bool:
        """Follower truncation: remove everything at and after `offset`; False if nothing was there.

        Batches are never split: one containing `offset` goes entirely, so the LEO may end below it.
        """
        if offset < 0:
            raise ValueError(f"cannot truncate to a negative offset {offset}")
        if offset >= self.log_end_offset:
            return False
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        while len(self._segments) > 1 and self._bases[-1] > offset:
            self._bases.pop()
            self._segments.pop().delete()
        active = self._segments[-1]
        active.truncate_to(offset, self._clock_ms())
        self.log_end_offset = active.next_offset()
        self._after_truncation()
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and restart the log, empty, at `offset`."""
        for segment in self._segments:
            segment.delete()
        self._segments, self._bases = [], []
        self._new_segment(offset)
        fsync_directory(self.dir)
        self.log_end_offset = offset
        self.log_start_offset = offset
        self.leader_epoch_cache.clear()
        self.producer_state.truncate_fully(offset)
        self._after_truncation()

    def _after_truncation(self) -> None:
        self.rewrites += 1
        leo = self.log_end_offset
        # Unfinished flush jobs covered offsets that may be written again: they move nothing now.
        self._background_flushes.clear()
        self._bound_position = None
        self.leader_epoch_cache.truncate_from_end(leo)
        self.log_start_offset = min(self.log_start_offset, leo)
        self.recovery_point = min(self.recovery_point, leo)
        self._high_watermark = min(max(self._high_watermark, self.log_start_offset), leo)
        self._rebuild_producer_state()
        if self.moved is not None:
            self.moved(self)

    def _rebuild_producer_state(self) -> None:
        """Load the newest snapshot at or below the LEO and replay batch headers after it."""
        leo = self.log_end_offset
        self.transaction_index.retain(self._bases, leo)
        self.producer_state.delete_snapshots_after(leo)
        snapshot_offset = self.producer_state.load_latest_snapshot(leo)
        start = self._segments[0].base_offset if snapshot_offset is None else snapshot_offset
        i = max(0, bisect.bisect_right(self._bases, start) - 1)
        for segment in self._segments[i:]:
            found = segment.translate_offset(start)
            if found is None:
                continue
            for position, header in segment.iter_headers(found[0]):
                marker = segment.read_batch(position, header.size) if header.is_control else None
                completed = self.producer_state.replay(
                    header, marker_coordinator_epoch(marker) if marker is not None else None)
                # Aborts since the snapshot are indexed again (skipped when already there).
                for producer_id, first_offset, marker_offset in completed:
                    if marker_is_abort(marker):
                        self._index_aborted_transaction(segment.base_offset, producer_id, first_offset, marker_offset)
        self.producer_state.map_end_offset = leo

    # -- lifecycle --------------------------------------------------------------------------------

    def _load(self, recovery_point: int, log_start_offset: int, high_watermark: int, clean_shutdown: bool) -> None:
        self._complete_interrupted_swaps()
        names = os.listdir(self.dir)
        for name in names:
            if name.endswith(_STRAY_SUFFIXES):
                os.unlink(os.path.join(self.dir, name))
        bases = sorted(
            int(name[: -len(LOG_SUFFIX)])
            for name in names
            if name.endswith(LOG_SUFFIX) and name[: -len(LOG_SUFFIX)].isdigit()
        )
        base_set = set(bases)
        for name in names:
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                stem = name[: -len(suffix)]
                if name.endswith(suffix) and stem.isdigit() and int(stem) not in base_set:
                    os.unlink(os.path.join(self.dir, name))  # an index without its log

        for base in bases:
            self._segments.append(self._open_segment(base))
            self._bases.append(base)
        fresh = not self._segments
        if fresh:
            self._new_segment(max(log_start_offset, 0))
            if self._flusher is None:
                fsync_directory(self.dir)
            # (else the new directory's job, queued by __init__, fsyncs it)

        rebuilt_epochs = not self.leader_epoch_cache.loaded_from_checkpoint

        def on_batch(header: BatchHeader) -> None:
            # Only epochs newer than the cache's latest: older entries in the checkpoint know
            # where those epochs really started (Kafka's LogSegment.recover does the same).
            epoch = header.partition_leader_epoch
            latest = self.leader_epoch_cache.latest_epoch
            if epoch >= 0 and (latest is None or epoch > latest):
                self.leader_epoch_cache.assign(epoch, header.base_offset)

        # Segments with missing or inconsistent indexes are rebuilt wherever they are.
        for segment in self._segments:
            if not segment.indexes_valid:
                truncated = segment.recover(on_batch)
                segment.flush(indexes=True)
                if truncated:
                    logger.warning("%s: truncated %d invalid bytes while rebuilding indexes of %s",
                                   self.dir, truncated, segment.log_path)

        if fresh:
            pass  # a new, empty segment: nothing to recover (and no fsync to wait for)
        elif clean_shutdown:
            # Trust the files, but make sure the last segment ends on a whole batch.
            active = self._segments[-1]
            try:
                active.last_batch()
            except InvalidRecordBatch:
                self._recover_from(len(self._segments) - 1, on_batch)
        else:
            start = max(0, bisect.bisect_right(self._bases, recovery_point) - 1)
            self._recover_from(start, on_batch)

        for segment in self._segments:
            segment.load_max_timestamp()
        for segment in self._segments[:-1]:
            segment.release_index_files()
        self.log_end_offset = self._segments[-1].next_offset()
        self.log_start_offset = min(max(log_start_offset, self._segments[0].base_offset), self.log_end_offset)
        self.recovery_point = self.log_end_offset if clean_shutdown else min(recovery_point, self.log_end_offset)
        self._high_watermark = min(max(high_watermark, self.log_start_offset), self.log_end_offset)

        if rebuilt_epochs and self.log_end_offset > self._segments[0].base_offset:
            # No (readable) leader-epoch-checkpoint: the batches still carry their epochs.
            for segment in self._segments:
                for _, header in segment.iter_headers():
                    on_batch(header)
            self.leader_epoch_cache.flush()
        elif rebuilt_epochs and not fresh:
            self.leader_epoch_cache.flush()  # (a new log's file is written with its first entry)
        self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
        self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
        self._rebuild_producer_state()

    def _complete_interrupted_swaps(self) -> None:
        """Finish what a crash interrupted in `replace_segments` (Kafka's LogLoader does the same).

        A `<base>.log.swap` file is a cleaned segment whose swap was committed: the segments it
        replaces (bases from `base` up to its next offset) are deleted and it takes their place,
        with indexes rebuilt from it. `.cleaned` files never reached the commit and are dropped
        with the other stray files.
        """
        swap_suffix = LOG_SUFFIX + SWAP_FILE_SUFFIX
        swaps = sorted(
            int(name[: -len(swap_suffix)])
            for name in os.listdir(self.dir)
            if name.endswith(swap_suffix) and name[: -len(swap_suffix)].isdigit()
        )
        for base in swaps:
            swap_path = os.path.join(self.dir, segment_file_name(base, swap_suffix))
            end = self._next_offset_of_file(swap_path, base)
            logger.warning("%s: completing the interrupted swap of cleaned segment %s (offsets %d..%d)",
                           self.dir, swap_path, base, end)
            replaced = []
            for name in os.listdir(self.dir):
                stem = name[: -len(LOG_SUFFIX)]
                if name.endswith(LOG_SUFFIX) and stem.isdigit() and base < int(stem) < end:
                    self._unlink_segment_files(int(stem))
                    replaced.append(int(stem))
            # The aborted transactions of the replaced segments: only those whose marker the cleaned
            # segment still holds stay indexed (a superset of what the cleaner kept: safe).
            self.transaction_index.merge_into(base, replaced)
            self.transaction_index.keep_only(base, self._abort_markers_in_file(swap_path))
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                for variant in ("", SWAP_FILE_SUFFIX, CLEANED_FILE_SUFFIX):
                    _unlink_if_exists(os.path.join(self.dir, segment_file_name(base, suffix) + variant))
            os.replace(swap_path, os.path.join(self.dir, segment_file_name(base, LOG_SUFFIX)))
            fsync_directory(self.dir)

    def _unlink_segment_files(self, base: int) -> None:
        # The log file first: without it, leftover indexes are strays that the load removes.
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            _unlink_if_exists(os.path.join(self.dir, segment_file_name(base, suffix)))

    @staticmethod
    def _abort_markers_in_file(path: str) -> set[int]:
        markers = set()
        fd = os.open(path, os.O_RDONLY)
        try:
            for _, header, data in read_batches(fd):
                if header.is_control and header.records_count and marker_is_abort(data):
                    markers.add(header.base_offset)
        except InvalidRecordBatch:
            pass
        finally:
            os.close(fd)
        return markers

    @staticmethod
    def _next_offset_of_file(path: str, base: int) -> int:
        """The offset after the last whole batch of a segment file (`base` when it has none)."""
        next_offset = base
        fd = os.open(path, os.O_RDONLY)
        try:
            for _, header, _ in read_batches(fd):
                next_offset = header.next_offset
        except InvalidRecordBatch:
            pass  # the rest is torn; recovery of the segment cuts it
        finally:
            os.close(fd)
        return next_offset

    def _recover_from(self, start: int, on_batch) -> None:
        """Re-scan segments from index `start`; at the first corrupt one, cut it and drop the rest."""
        for i in range(start, len(self._segments)):
            segment = self._segments[i]
            truncated = segment.recover(on_batch)
            segment.flush(indexes=True)
            if truncated:
                logger.warning("%s: truncated %d bytes of torn or corrupt data in %s",
                               self.dir, truncated, segment.log_path)
                for later in self._segments[i + 1 :]:
                    logger.warning("%s: deleting %s after the truncation point", self.dir, later.log_path)
                    later.delete()
                del self._segments[i + 1 :], self._bases[i + 1 :]
                self.producer_state.delete_snapshots_after(segment.next_offset())
                return

    def close(self, sync: bool = True) -> None:
        """Clean shutdown: fsync, snapshot producer state at the LEO, close the files. sync=False
        writes the same files without any fsync: the caller makes the whole file system durable
        (one syncfs, LogManager.close) before it writes the checkpoints that say so."""
        if self._closed:
            return
        self.wait_for_background_flushes()
        if sync:
            self.flush()
        else:
            self.recovery_point = self.log_end_offset
        # Truncations of the leader epoch cache may still wait for the flusher: written now.
        self.leader_epoch_cache.close(write_pending=True, sync=sync)
        self.producer_state.map_end_offset = self.log_end_offset
        self.producer_state.take_snapshot(sync=sync)
        active = self._segments[-1]
        # The time index's last entry is the segment's max timestamp when it is reopened
        # (rolled segments got theirs, and their fsync, when they were rolled).
        active.on_become_inactive()
        if sync:
            active.flush(indexes=True)
        for segment in self._segments:
            segment.close()
        self._closed = True
        if self.moved is not None:
            self.moved(self)

    def close_without_flush(self) -> None:
        """Release the files without the clean-shutdown work (for tests simulating a crash)."""
        if not self._closed:
            for segment in self._segments:
                segment.close()
            self.leader_epoch_cache.close()
            self._closed = True
            if self.moved is not None:
                self.moved(self)

    def delete(self, batched: bool = False) -> str:
        """Topic deletion: close and remove the directory (renamed first, as Kafka does, so a
        crash half-way leaves a `*-delete` directory that the log manager removes on start).
        `batched`: only close and rename; the caller fsyncs the parent directory once for many
        partitions and removes the returned `*-delete` directory (LogManager.delete_partitions)."""
        if not self._closed:
            for segment in self._segments:
                segment.close()
            self._closed = True
            if self.moved is not None:
                self.moved(self)
        self.leader_epoch_cache.close()
        parent = os.path.dirname(self.dir)
        doomed = os.path.join(parent, deleted_dir_name(self.topic, self.partition))
        os.rename(self.dir, doomed)
        if not batched:
            fsync_directory(parent)
            shutil.rmtree(doomed, ignore_errors=True)
        return doomed

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.topic}-{self.partition}, start={self.log_start_offset}, "
            f"end={self.log_end_offset}, hw={self._high_watermark}, segments={len(self._segments)})"
        )
