"""Aborted-transaction indexes: Kafka's `.txnindex` file next to each segment.

When an ABORT marker is appended, the aborted transaction is recorded in the index of the segment
that received the marker. A read_committed Fetch gets, with its data, the aborted transactions
overlapping the fetched range, so that the consumer can drop their records (it cannot tell
aborted records from committed ones by looking at the batches alone).

Each entry is Kafka's AbortedTxn, 34 bytes big-endian:

    version int16 (0) | producer id int64 | first offset int64 | last offset int64 | last stable offset int64

`first offset` is the transaction's first offset in this partition, `last offset` the marker's
offset, and `last stable offset` the partition's LSO once this transaction completed (the first
offset of the earliest other open transaction, else last offset + 1). The LSO lets a search stop:
once an entry's LSO reaches past the fetched range, no transaction ending in a later segment can
overlap it.

Entries are only ever appended in marker order, so each file is sorted by last offset. Files are
created with their first entry (most segments never have one). The partition log keeps them in
step with its segments (`retain`, `merge_into`) and rebuilds missing entries on recovery by
replaying the markers after its last producer snapshot (`append` is idempotent for that).
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
import os
import struct
from dataclasses import dataclass

from kafka_wire.record_codec import (ControlRecordType, InvalidRecord, decode_control_key, decode_end_transaction_marker,
                                     decode_records)
from kafka_wire.records import InvalidRecordBatch
from log.checkpoints import fsync_directory, write_file_atomically

TXN_INDEX_SUFFIX = ".txnindex"
ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34
ENTRY_VERSION = 0

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return ENTRY.pack(ENTRY_VERSION, self.producer_id, self.first_offset, self.last_offset,
                          self.last_stable_offset)


def marker_is_abort(buf, position: int = 0) -> bool:
    """Whether the control batch at `position` is an ABORT marker (not COMMIT)."""
    try:
        _, records = decode_records(buf, position)
        return bool(records) and decode_control_key(records[0].key)[1] == ControlRecordType.ABORT
    except (InvalidRecord, InvalidRecordBatch):
        return False


def marker_coordinator_epoch(buf, position: int = 0) -> int | None:
    """The coordinator epoch an ABORT or COMMIT marker at `position` carries (None when unreadable)."""
    try:
        _, records = decode_records(buf, position)
        return decode_end_transaction_marker(records[0].value)[1] if records else None
    except (InvalidRecord, InvalidRecordBatch):
        return None


def index_file_name(base_offset: int) -> str:
    return f"{base_offset:020d}{TXN_INDEX_SUFFIX}"


class TransactionIndex:
    """The aborted transactions of one segment, in the order of their markers."""

    def __init__(self, directory: str, base_offset: int, entries: list[AbortedTxn] | None = None):
        self.base_offset = base_offset
        self.path = os.path.join(directory, index_file_name(base_offset))
        self.entries: list[AbortedTxn] = entries if entries is not None else []
        self._dirty = False

    @classmethod
    def load(cls, directory: str, base_offset: int) -> "TransactionIndex":
        """Read a file; a torn last entry (a crash during its write) is cut off."""
        index = cls(directory, base_offset)
        with open(index.path, "rb") as f:
            data = f.read()
        whole = len(data) - len(data) % ENTRY_SIZE
        previous_last = -1
        for pos in range(0, whole, ENTRY_SIZE):
            version, producer_id, first, last, lso = ENTRY.unpack_from(data, pos)
            if version != ENTRY_VERSION or last <= previous_last:
                logger.warning("%s: unreadable entry at byte %d, keeping the %d entries before it",
                               index.path, pos, len(index.entries))
                whole = pos
                break
            index.entries.append(AbortedTxn(producer_id, first, last, lso))
            previous_last = last
        if whole != len(data):
            os.truncate(index.path, whole)
        return index

    @property
    def last_offset(self) -> int:
        return self.entries[-1].last_offset if self.entries else -1

    def append(self, entry: AbortedTxn) -> bool:
        """Add an entry; False (and nothing written) when its marker is already indexed."""
        if entry.last_offset <= self.last_offset:
            if any(e.last_offset == entry.last_offset for e in self.entries):
                return False
            # Only recovery of a damaged index gets here: keep the file in marker order.
            logger.warning("%s: re-inserting the aborted transaction ending at %d", self.path, entry.last_offset)
            self.rewrite(sorted([*self.entries, entry], key=lambda e: e.last_offset))
            return True
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, entry.encode())
        finally:
            os.close(fd)
        self.entries.append(entry)
        self._dirty = True
        return True

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Kafka's TransactionIndex.collectAbortedTxns: entries overlapping [fetch_offset,
        upper_bound_offset), and whether the search may stop here."""
        found = []
        for entry in self.entries:
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound_offset:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def rewrite(self, entries: list[AbortedTxn]) -> None:
        """Replace the file's content (truncation, merges); an empty index has no file."""
        self.entries = entries
        if entries:
            write_file_atomically(self.path, b"".join(e.encode() for e in entries))
        else:
            self.delete()
        self._dirty = False

    def flush(self) -> None:
        if not self._dirty:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self._dirty = False
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._dirty = False

    def take_dirty_path(self) -> str | None:
        """The file's path when it has unflushed appends, for a flush elsewhere; marks it clean."""
        if not self._dirty:
            return None
        self._dirty = False
        return self.path

    def delete(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class PartitionTransactionIndex:
    """The `.txnindex` files of one partition directory, by the base offset of their segment."""

    def __init__(self, directory: str):
        self.dir = directory
        self._indexes: dict[int, TransactionIndex] = {}
        self._bases: list[int] = []  # sorted keys of _indexes
        for name in os.listdir(directory):
            stem = name[: -len(TXN_INDEX_SUFFIX)]
            if name.endswith(TXN_INDEX_SUFFIX) and stem.isdigit():
                try:
                    index = TransactionIndex.load(directory, int(stem))
                except OSError as e:
                    logger.warning("cannot read %s: %s; it will be rebuilt where possible", name, e)
                    continue
                self._put(index)
        self._repair_last_stable_offsets()

    def _repair_last_stable_offsets(self) -> None:
        """Lower each entry's last stable offset to the first offsets of the entries after it.
        A correct index already holds that (a transaction open at a marker bounds the marker's
        LSO; one opened later starts past the marker); files written before the LSO was taken at
        each marker of a follower's multi-transaction append may not, and collect() would stop
        before aborts they hide. Only the copy in memory is changed."""
        lowest_first = None
        for base in reversed(self._bases):
            index = self._indexes[base]
            entries = index.entries
            for i in range(len(entries) - 1, -1, -1):
                entry = entries[i]
                if lowest_first is not None and entry.last_stable_offset > lowest_first:
                    entries[i] = dataclasses.replace(entry, last_stable_offset=lowest_first)
                if lowest_first is None or entry.first_offset < lowest_first:
                    lowest_first = entry.first_offset

    def _put(self, index: TransactionIndex) -> None:
        if index.base_offset not in self._indexes:
            bisect.insort(self._bases, index.base_offset)
        self._indexes[index.base_offset] = index

    def _remove(self, base: int) -> None:
        index = self._indexes.pop(base, None)
        if index is not None:
            self._bases.remove(base)
            index.delete()

    def all_entries(self) -> list[AbortedTxn]:
        return [entry for base in self._bases for entry in self._indexes[base].entries]

    def append(self, segment_base: int, entry: AbortedTxn) -> bool:
        """Record an aborted transaction whose marker went to the segment at `segment_base`.
        Idempotent: recovery replays markers that may already be indexed."""
        # Later segments hold later markers: the newest indexed marker is in the last index.
        newest = self._indexes[self._bases[-1]].last_offset if self._bases else -1
        if entry.last_offset <= newest:
            # Only a replay gets here (markers come in offset order): is it indexed already?
            for index in self._indexes.values():
                if any(e.last_offset == entry.last_offset for e in index.entries):
                    return False
        index = self._indexes.get(segment_base)
        if index is None:
            index = TransactionIndex(self.dir, segment_base)
            self._put(index)
        return index.append(entry)

    def last_abort_offset(self) -> int:
        """The marker offset of the last aborted transaction indexed; -1 when there is none (a
        read_committed fetch from past it has no aborted transaction to be told of)."""
        for base in reversed(self._bases):
            last = self._indexes[base].last_offset
            if last >= 0:
                return last
        return -1

    def collect(self, segment_bases: list[int], fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound_offset), searching the index
        of the segment holding fetch_offset and the later ones until an entry's last stable offset
        shows no later transaction can overlap (Kafka's UnifiedLog.collectAbortedTransactions)."""
        i = bisect.bisect_right(segment_bases, fetch_offset) - 1
        start_base = segment_bases[max(i, 0)] if segment_bases else 0
        found: list[AbortedTxn] = []
        for base in self._bases[bisect.bisect_left(self._bases, start_base):]:
            entries, complete = self._indexes[base].collect(fetch_offset, upper_bound_offset)
            found.extend(entries)
            if complete:
                break
        return found

    def retain(self, segment_bases: list[int], log_end_offset: int | None = None) -> None:
        """Forget the indexes of segments that are gone, and (after a truncation) the entries of
        markers at or after the log end offset."""
        live = set(segment_bases)
        for base in [b for b in self._bases if b not in live]:
            self._remove(base)
        if log_end_offset is not None:
            for base in list(self._bases):
                index = self._indexes[base]
                if index.last_offset >= log_end_offset:
                    index.rewrite([e for e in index.entries if e.last_offset < log_end_offset])
                    if not index.entries:
                        self._indexes.pop(base)
                        self._bases.remove(base)

    def merge_into(self, base: int, merged_bases: list[int]) -> None:
        """Compaction replaced the segments at `merged_bases` by the one at `base`: their entries
        move to its index (written before the old files go, so a crash loses none)."""
        moved = [e for b in merged_bases if b in self._indexes for e in self._indexes[b].entries]
        if not moved:
            return
        target = self._indexes.get(base)
        combined = sorted((target.entries if target else []) + moved, key=lambda e: e.last_offset)
        if target is None:
            target = TransactionIndex(self.dir, base)
            self._put(target)
        target.rewrite(combined)
        for b in merged_bases:
            if b != base:
                self._remove(b)
        fsync_directory(self.dir)

    def keep_only(self, base: int, marker_offsets: set[int]) -> None:
        """Compaction: the segment at `base` keeps only the entries whose ABORT marker it still
        holds as a marker. A consumer told of an aborted transaction drops the producer's batches
        until it meets that marker; with the marker gone it would drop later committed ones too."""
        index = self._indexes.get(base)
        if index is None:
            return
        kept = [e for e in index.entries if e.last_offset in marker_offsets]
        if len(kept) == len(index.entries):
            return
        if kept:
            index.rewrite(kept)
        else:
            self._remove(base)

    def flush(self) -> None:
        for index in self._indexes.values():
            index.flush()

    def take_dirty_paths(self) -> list[str]:
        """The files with unflushed appends, for a flush off the event loop; marks them clean."""
        return [path for index in self._indexes.values() if (path := index.take_dirty_path()) is not None]
