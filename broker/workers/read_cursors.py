"""A consumer reading on through another worker's partition, read here without calling the owner.

A consumer whose connection the kernel gave to a worker that does not own its partitions reads
them with a `read` call per Fetch (fetch.py): a round trip between two processes and a descriptor
passed back, for every ~1 MB. But a consumer reads on: its next fetch offset is where the bytes it
was sent end. So the worker holding the connection keeps, per partition it was sent another
worker's bytes of, a cursor: the segment's descriptor (a dup of the one passed), the position of
the next batch and its offset. The next Fetch at that offset reads the batch headers from there
itself and sends the whole batches below the high watermark, as the owner's read would have.

What it must know of the partition, each owner publishes in a table every worker maps (made by the
supervisor before forking, one per worker): per partition some other worker read from it, its high
watermark, last stable offset, log start offset, last aborted transaction and rewrite count (log/partition_log.py's `moved`
hook writes them whenever one moves, and when the log is closed). A cursor is used only while:
- its slot still holds the same log (the slot's incarnation is bumped when the log is closed or
  deleted, and the slot then serves another log);
- the log was not rewritten since (truncation or a compaction swap: the rewrite count);
- the fetch offset is at or past the cursor's, within [log start, high watermark), and the
  request's topic id and current leader epoch are those the owner accepted;
- a read_committed consumer reads below the last stable offset, and past the last aborted
  transaction's marker (else the owner reads, and tells of the aborted transactions).
A consumer caught up (its offset at that bound) is answered no records here, as the owner would,
and its long poll then waits at the owner (fetch.py's `wait`). Otherwise, and whenever the walk
finds nothing (the segment rolled: its end is reached), the owner reads as before and its answer
sets the cursor again. Only a single-node broker's workers keep cursors: in a cluster, leadership
moves and followers truncate.

The high watermark is written after the bytes below it (the owner writes the file, then sets it);
a batch is sent only when its last offset is below the high watermark read, so a batch still
being written is never sent.
"""

from __future__ import annotations

import mmap
import os
import resource
import struct

from kafka_wire.errors import ErrorCode

from ..node import PartitionRead
from .runtime import FdSlice

# Words (int64) of a slot: incarnation, rewrites, high watermark, last stable offset, log start offset,
# and the marker offset of the last aborted transaction (-1: none).
SLOT_WORDS = 6
_INCARNATION, _REWRITES, _HIGH_WATERMARK, _LAST_STABLE, _LOG_START, _LAST_ABORT = range(SLOT_WORDS)
TABLE_SLOTS = 16_384
TABLE_BYTES = TABLE_SLOTS * SLOT_WORDS * 8
MAX_CURSORS = 4_096  # and at most an eighth of the descriptors the process may open
MAX_HEADER_READS = 64  # a walk reading more (a consumer far past its cursor) leaves it to the owner

_HEADER = struct.Struct(">qi")  # base offset, batch length
_LAST_OFFSET_DELTA = struct.Struct(">i")  # at byte 23 of a batch
_HEADER_BYTES = 27
_LOG_OVERHEAD = 12
_CHUNK = 32 * 1024  # batch headers are read this much at a time


def new_table() -> mmap.mmap:
    """A worker's table, made before forking (anonymous and shared)."""
    return mmap.mmap(-1, TABLE_BYTES)


class PublishedLogs:
    """The owner's side: a slot per log another worker read from, kept current by the log's hook."""

    def __init__(self, table) -> None:
        self._words = memoryview(table).cast("q")
        self._slots: dict[int, int] = {}  # id(log) -> slot
        self._logs: dict[int, object] = {}  # slot -> log (keeps id() unique while published)
        self._free: list[int] = []
        self._next = 0

    def slot_of(self, plog) -> tuple[int, int]:
        """(slot, incarnation) publishing `plog`; (-1, 0) when the table is full or the log closed."""
        slot = self._slots.get(id(plog))
        if slot is None:
            if plog.closed:
                return -1, 0
            if self._free:
                slot = self._free.pop()
            elif self._next < TABLE_SLOTS:
                slot = self._next
                self._next += 1
            else:
                return -1, 0
            self._slots[id(plog)] = slot
            self._logs[slot] = plog
            self._publish(slot, plog)
            plog.moved = self.moved
        return slot, self._words[slot * SLOT_WORDS + _INCARNATION]

    def moved(self, plog) -> None:
        slot = self._slots.get(id(plog))
        if slot is None:
            return
        if plog.closed:
            self._words[slot * SLOT_WORDS + _INCARNATION] += 1  # every cursor on it is stale
            del self._slots[id(plog)]
            del self._logs[slot]
            self._free.append(slot)
            plog.moved = None
            return
        self._publish(slot, plog)

    def _publish(self, slot: int, plog) -> None:
        words, at = self._words, slot * SLOT_WORDS
        words[at + _REWRITES] = plog.rewrites  # first: a reader takes the values with the count after them
        words[at + _LOG_START] = plog.log_start_offset
        words[at + _LAST_ABORT] = plog.transaction_index.last_abort_offset()
        words[at + _LAST_STABLE] = plog.last_stable_offset
        words[at + _HIGH_WATERMARK] = plog.high_watermark

    def rewrites(self, slot: int) -> int:
        return self._words[slot * SLOT_WORDS + _REWRITES]


class _Cursor:
    __slots__ = ("owner", "slot", "incarnation", "rewrites", "fd", "position", "offset", "after", "topic_id",
                 "leader_epoch")

    def __init__(self, owner, slot, incarnation, rewrites, fd, position, offset, topic_id, leader_epoch) -> None:
        self.owner, self.slot, self.incarnation, self.rewrites = owner, slot, incarnation, rewrites
        self.fd, self.position, self.offset = fd, position, offset
        self.after = None  # (position, offset) of the batch after the last read here
        self.topic_id, self.leader_epoch = topic_id, leader_epoch

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class ReadCursors:
    """The side holding the connections: a cursor per connection and partition of another worker's
    it was sent bytes of (two consumers of one partition on one worker read at their own places).
    At most MAX_CURSORS, the oldest closed first (a closed connection's go that way)."""

    def __init__(self, tables) -> None:
        self._words = [memoryview(table).cast("q") for table in tables]
        self._cursors: dict[tuple[int, str, int], _Cursor] = {}
        self._of_reader: dict[int, set[tuple[int, str, int]]] = {}
        self.limit = min(MAX_CURSORS, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 8)
        self.local_reads = 0  # (counted for tests and the benchmark's notes)

    def __len__(self) -> int:
        return len(self._cursors)

    def remember(self, reader: int, part, owner: int, slot: int, incarnation: int, rewrites: int,
                 first_offset: int, records: FdSlice) -> None:
        """The owner sent `records` of `part` from `first_offset`, the base offset of the batch at
        their position: the cursor starts there (the next fetch walks past what was sent)."""
        key = (reader, part.topic, part.partition)
        self._pop(key)
        if len(self._cursors) >= self.limit:
            self._pop(next(iter(self._cursors)))
        try:
            fd = os.dup(records.fd)
        except OSError:  # out of descriptors (the logs' cache gives its idle ones back the same way)
            self.close()
            return
        self._of_reader.setdefault(reader, set()).add(key)
        self._cursors[key] = _Cursor(owner, slot, incarnation, rewrites, fd, records.position, first_offset,
                                     part.topic_id, part.current_leader_epoch)

    def forget(self, reader: int, topic: str, partition: int) -> None:
        self._pop((reader, topic, partition))

    def drop(self, reader: int) -> None:
        """Connection `reader` closed: its cursors go."""
        for key in self._of_reader.pop(reader, ()):
            cursor = self._cursors.pop(key, None)
            if cursor is not None:
                cursor.close()

    def _pop(self, key) -> None:
        cursor = self._cursors.pop(key, None)
        if cursor is not None:
            cursor.close()
            keys = self._of_reader.get(key[0])
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._of_reader[key[0]]

    def close(self) -> None:
        for cursor in self._cursors.values():
            cursor.close()
        self._cursors.clear()
        self._of_reader.clear()

    def read(self, reader: int, part, limit: int, read_committed: bool) -> PartitionRead | None:
        """What the owner's read of `part` with `limit` (at least one batch) would return, read here
        for connection `reader`; None when the owner must read."""
        key = (reader, part.topic, part.partition)
        cursor = self._cursors.get(key)
        if cursor is None:
            return None
        offset = part.fetch_offset
        if offset < cursor.offset or part.topic_id != cursor.topic_id \
                or part.current_leader_epoch != cursor.leader_epoch:
            return None
        words, at = self._words[cursor.owner], cursor.slot * SLOT_WORDS
        high_watermark = words[at + _HIGH_WATERMARK]
        last_stable = words[at + _LAST_STABLE]
        log_start = words[at + _LOG_START]
        if words[at + _INCARNATION] != cursor.incarnation or words[at + _REWRITES] != cursor.rewrites:
            self._pop(key)
            return None
        bound = last_stable if read_committed else high_watermark
        if offset == bound and offset >= log_start:  # caught up: the owner would answer no records
            return PartitionRead(ErrorCode.NONE, high_watermark, last_stable, log_start, None, [])
        if not log_start <= offset < bound:
            return None
        if read_committed and words[at + _LAST_ABORT] >= offset:  # aborted transactions to tell of
            return None
        found = self._walk(cursor, offset, bound, limit)
        if found is None:
            return None
        position, length = found
        try:
            fd = os.dup(cursor.fd)
        except OSError:  # out of descriptors: this cursor's goes back, the owner reads
            self._pop(key)
            return None
        self.local_reads += 1
        return PartitionRead(ErrorCode.NONE, high_watermark, last_stable, log_start, FdSlice(fd, position, length), [])

    @staticmethod
    def _walk(cursor: _Cursor, offset: int, bound: int, limit: int) -> tuple[int, int] | None:
        """(position, length) of the whole batches from the one holding `offset`, below `bound` (the
        high watermark, or the last stable offset), at most `limit` bytes but at least one batch; the cursor moves past them. None
        when there is no such batch in this file (its end reached)."""
        fd = cursor.fd
        if cursor.after is not None and offset >= cursor.after[1]:  # the consumer got what was read last
            cursor.position, cursor.offset = cursor.after
        cursor.after = None
        position, expected = cursor.position, cursor.offset
        start = end = -1
        chunk, chunk_at = b"", position
        reads = 0
        while True:
            at = position - chunk_at
            if at + _HEADER_BYTES > len(chunk):
                reads += 1
                if reads > MAX_HEADER_READS:  # far from the fetch offset: the owner's index finds it
                    break
                chunk, chunk_at, at = os.pread(fd, _CHUNK, position), position, 0
                if len(chunk) < _HEADER_BYTES:
                    break
            base, size = _HEADER.unpack_from(chunk, at)
            if base != expected or size <= 0:  # not the batch that follows (or not written yet)
                break
            last = base + _LAST_OFFSET_DELTA.unpack_from(chunk, at + 23)[0]
            if last >= bound:
                break
            following = position + _LOG_OVERHEAD + size
            if last < offset:  # before the fetch offset: skipped, the cursor moves on
                cursor.position, cursor.offset = following, last + 1
            elif start < 0:
                start = position
                end = following
            elif following - start > limit:
                break
            else:
                end = following
            position, expected = following, last + 1
            if end == following:
                cursor.after = (following, last + 1)
        if start < 0:
            return None
        return start, end - start


__all__ = ["MAX_CURSORS", "PublishedLogs", "ReadCursors", "TABLE_BYTES", "new_table"]
