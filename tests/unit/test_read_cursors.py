"""broker/workers/read_cursors.py: a consumer reading on through another worker's partition, read
where the owner's bytes ended, from what the owner publishes (a segment file of real batches and a
log standing in for the owner's)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from broker.workers.read_cursors import PublishedLogs, ReadCursors, new_table
from broker.workers.runtime import FdSlice
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch

READER = 7


class FakeLog:
    """What PublishedLogs reads of a PartitionLog."""

    def __init__(self) -> None:
        self.rewrites = 0
        self.log_start_offset = 0
        self.last_stable_offset = 0
        self.high_watermark = 0
        self.closed = False
        self.moved = None
        self.last_abort = -1
        self.transaction_index = SimpleNamespace(last_abort_offset=lambda: self.last_abort)

    def set(self, **values) -> None:
        for name, value in values.items():
            setattr(self, name, value)
        if self.moved is not None:
            self.moved(self)


@pytest.fixture
def segment(tmp_path):
    """A file of 10 batches: batch i holds offsets 3i..3i+2 (300-byte values); (fd, [(position, size)])."""
    path = tmp_path / "00000000000000000000.log"
    batches, position = [], 0
    with open(path, "wb") as f:
        for i in range(10):
            data = build_batch([Record(j, 0, None, bytes([65 + i]) * 300) for j in range(3)], base_offset=3 * i)
            f.write(data)
            batches.append((position, len(data)))
            position += len(data)
    fd = os.open(path, os.O_RDONLY)
    yield fd, batches
    os.close(fd)


def _part(offset: int, topic: str = "t", partition: int = 0):
    return SimpleNamespace(topic=topic, partition=partition, fetch_offset=offset, topic_id=None,
                           current_leader_epoch=-1)


def _setup(segment, high_watermark: int = 30):
    fd, batches = segment
    table = new_table()
    owner, reader = PublishedLogs(table), ReadCursors([new_table(), table])
    log = FakeLog()
    log.set(high_watermark=high_watermark, last_stable_offset=high_watermark)
    slot, incarnation = owner.slot_of(log)
    # The owner sent batch 0 from position 0: the cursor starts there.
    reader.remember(READER, _part(0), 1, slot, incarnation, owner.rewrites(slot), 0,
                    FdSlice(os.dup(fd), 0, batches[0][1]))
    return owner, reader, log


def _span(batches, first: int, last: int) -> tuple[int, int]:
    return batches[first][0], batches[last][0] + batches[last][1] - batches[first][0]


def test_reads_on_below_the_high_watermark_in_whole_batches(segment):
    _, batches = segment
    _, reader, log = _setup(segment, high_watermark=15)  # batches 0-4 are below it
    read = reader.read(READER, _part(3), 1 << 20, False)
    assert read.error == ErrorCode.NONE and (read.high_watermark, read.log_start_offset) == (15, 0)
    assert (read.records.position, read.records.length) == _span(batches, 1, 4)
    caught_up = reader.read(READER, _part(15), 1 << 20, False)  # at the high watermark: no records, as the owner
    assert (caught_up.error, caught_up.records, caught_up.high_watermark, caught_up.aborted_transactions) == (
        ErrorCode.NONE, None, 15, [])
    log.set(high_watermark=17)  # batch 5 ends at 17: not whole below it
    assert reader.read(READER, _part(15), 1 << 20, False) is None
    log.set(high_watermark=18)
    read = reader.read(READER, _part(16), 1 << 20, False)  # an offset inside batch 5: from its start
    assert (read.records.position, read.records.length) == _span(batches, 5, 5)
    assert reader.local_reads == 2


def test_limit_cuts_at_whole_batches_with_at_least_one(segment):
    _, batches = segment
    _, reader, log = _setup(segment)
    size = batches[0][1]
    read = reader.read(READER, _part(3), 2 * size + 10, False)
    assert (read.records.position, read.records.length) == _span(batches, 1, 2)
    read = reader.read(READER, _part(9), 1, False)  # smaller than one batch: that batch
    assert (read.records.position, read.records.length) == _span(batches, 3, 3)
    read = reader.read(READER, _part(12), 1 << 20, False)  # on from the last read's end
    assert (read.records.position, read.records.length) == _span(batches, 4, 9)
    log.set(high_watermark=33)  # past the file's end (the segment rolled): the owner reads
    assert reader.read(READER, _part(30), 1 << 20, False) is None


def test_reads_behind_the_cursor_or_moved_logs_go_to_the_owner(segment):
    _, reader, log = _setup(segment)
    assert reader.read(READER, _part(9), 1 << 20, False) is not None
    assert reader.read(READER, _part(0), 1 << 20, False) is None  # behind the cursor
    assert reader.read(READER + 1, _part(9), 1 << 20, False) is None  # another connection has no cursor
    log.set(log_start_offset=12)  # DeleteRecords
    assert reader.read(READER, _part(9), 1 << 20, False) is None
    assert reader.read(READER, _part(12), 1 << 20, False) is not None
    log.set(rewrites=1)  # truncated or compacted: the cursor is gone
    assert reader.read(READER, _part(12), 1 << 20, False) is None
    assert len(reader) == 0


def test_a_closed_logs_slot_serves_the_next_log_and_old_cursors_see_it(segment):
    owner, reader, log = _setup(segment)
    log.set(closed=True)  # deleted: its slot is free, its incarnation moved on
    assert log.moved is None
    other = FakeLog()
    other.set(high_watermark=30)
    slot, _ = owner.slot_of(other)
    assert slot == 0  # the same slot, another log
    assert reader.read(READER, _part(3), 1 << 20, False) is None
    assert len(reader) == 0


def test_closed_connections_and_far_reads(segment, tmp_path):
    _, reader, _ = _setup(segment)
    reader.drop(READER)
    assert len(reader) == 0 and reader.read(READER, _part(3), 1 << 20, False) is None
    # 80 batches of ~40 KB: a read 70 batches past the cursor leaves it to the owner's index.
    path = tmp_path / "big.log"
    with open(path, "wb") as f:
        for i in range(80):
            f.write(build_batch([Record(0, 0, None, os.urandom(40_000))], base_offset=i))
    fd = os.open(path, os.O_RDONLY)
    try:
        table = new_table()
        owner, far = PublishedLogs(table), ReadCursors([table])
        log = FakeLog()
        log.set(high_watermark=80)
        slot, incarnation = owner.slot_of(log)
        far.remember(READER, _part(0), 0, slot, incarnation, 0, 0, FdSlice(os.dup(fd), 0, 1))
        assert far.read(READER, _part(10), 1, False).records.length > 40_000
        assert far.read(READER, _part(78), 1, False) is None
    finally:
        os.close(fd)


def test_a_batch_not_following_on_ends_the_walk(segment, tmp_path):
    """Offsets that jump (a compacted segment) or bytes that are no batch end what is read here."""
    fd, batches = segment
    owner, reader, log = _setup(segment)
    with open(f"/proc/self/fd/{fd}", "ab") as f:
        f.write(build_batch([Record(0, 0, None, b"x")], base_offset=40))
    log.set(high_watermark=50)
    read = reader.read(READER, _part(0), 1 << 20, False)
    assert (read.records.position, read.records.length) == _span(batches, 0, 9)
    assert reader.read(READER, _part(30), 1 << 20, False) is None


def test_read_committed_stops_at_the_last_stable_offset_and_leaves_aborts_to_the_owner(segment):
    _, batches = segment
    _, reader, log = _setup(segment)
    log.set(last_stable_offset=9)  # a transaction open from offset 9
    read = reader.read(READER, _part(3), 1 << 20, True)
    assert (read.records.position, read.records.length) == _span(batches, 1, 2)
    assert (read.high_watermark, read.last_stable_offset, read.aborted_transactions) == (30, 9, [])
    assert reader.read(READER, _part(9), 1 << 20, True).records is None  # caught up
    assert reader.read(READER, _part(9), 1 << 20, False) is not None  # uncommitted: to the high watermark
    log.set(last_stable_offset=30, last_abort=20)  # aborted, its marker at 20
    assert reader.read(READER, _part(12), 1 << 20, True) is None  # the owner tells of it
    assert reader.read(READER, _part(21), 1 << 20, True) is not None


def test_out_of_descriptors_the_cursors_go_and_the_owner_reads(segment, monkeypatch):
    fd, batches = segment
    _, reader, _ = _setup(segment)
    real_dup = os.dup

    def no_descriptor(_fd):
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(os, "dup", no_descriptor)
    assert reader.read(READER, _part(3), 1 << 20, False) is None
    assert len(reader) == 0
    reader.remember(READER, _part(0), 1, 0, 0, 0, 0, FdSlice(real_dup(fd), 0, batches[0][1]))
    assert len(reader) == 0
