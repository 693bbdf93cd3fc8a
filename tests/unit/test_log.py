"""The partition log: appends, reads, indexes, timestamps, recovery, retention, truncation, log dirs."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import textwrap

import pytest

from kafka_wire.record_codec import InvalidRecord, Record, build_batch, decode_batches
from kafka_wire.records import CorruptBatch, InvalidRecordBatch, iter_batch_headers, read_batch_header
from log.checkpoints import (
    CLEAN_SHUTDOWN_MARKER,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from log.config import InvalidConfig, LogConfig
from log.errors import OffsetOutOfRange, RecordBatchTooLarge, RecordTooLarge, UnexpectedAppendOffset
from log.log_manager import LogManager
from log.partition_log import OffsetAndTimestamp, PartitionLog, parse_partition_dir_name
from log.segment import OffsetIndex, TimeIndex

SMALL = {"segment.bytes": 1000, "index.interval.bytes": 200}


class Clock:
    def __init__(self, now: int = 1_700_000_000_000):
        self.now = now

    def __call__(self) -> int:
        return self.now


def batch(count: int = 1, timestamp: int = 1000, *, deltas=None, value: bytes = b"v" * 50, **kwargs) -> bytearray:
    deltas = deltas or [0] * count
    records = [Record(i, deltas[i], f"k{i}".encode(), value) for i in range(count)]
    return bytearray(build_batch(records, base_timestamp=timestamp, **kwargs))


def open_log(tmp_path, config=None, name="topic-0", **kwargs) -> PartitionLog:
    return PartitionLog(str(tmp_path / name), config, **kwargs)


def offsets_in(data: bytes) -> list[int]:
    return [h.base_offset for _, h in iter_batch_headers(data)]


def segment_bases(log: PartitionLog) -> list[int]:
    return [s.base_offset for s in log.segments]


# -- appending and reading ------------------------------------------------------------------------


def test_append_assigns_offsets_and_leader_epoch_and_reads_back(tmp_path):
    log = open_log(tmp_path)
    first = log.append(batch(3), leader_epoch=7)
    second = log.append(batch(2), leader_epoch=7)
    assert (first.base_offset, first.last_offset) == (0, 2)
    assert (second.base_offset, second.last_offset) == (3, 4)
    assert second.record_count == 2 and second.log_append_time == -1
    assert log.log_end_offset == 5

    data = log.read_slice(0, 1 << 20).read_bytes()
    headers = [h for _, h in iter_batch_headers(data)]
    assert [h.base_offset for h in headers] == [0, 3]
    assert all(h.partition_leader_epoch == 7 for h in headers)
    values = [[r.key for r in records] for _, records in decode_batches(data)]
    assert values == [[b"k0", b"k1", b"k2"], [b"k0", b"k1"]]


def test_append_writes_the_caller_buffer_in_place(tmp_path):
    log = open_log(tmp_path)
    log.append(batch(), leader_epoch=0)
    buf = batch()
    log.append(memoryview(buf), leader_epoch=0)
    assert read_batch_header(buf).base_offset == 1


def test_segments_roll_by_size_with_kafka_file_names(tmp_path):
    log = open_log(tmp_path, SMALL)
    for _ in range(20):
        log.append(batch(2), leader_epoch=0)
    bases = segment_bases(log)
    assert len(bases) > 3 and bases[0] == 0
    names = set(os.listdir(log.dir))
    for base in bases:
        for suffix in (".log", ".index", ".timeindex"):
            assert f"{base:020d}{suffix}" in names
    # Every segment stays within segment.bytes.
    assert all(s.size <= 1000 for s in log.segments)
    # Each offset reads back from the batch containing it, across all segments.
    for offset in range(log.log_end_offset):
        data = log.read_slice(offset, 1).read_bytes()
        header = read_batch_header(data)
        assert header.base_offset <= offset <= header.last_offset


def test_read_returns_the_batch_containing_the_offset(tmp_path):
    log = open_log(tmp_path)
    log.append(batch(5), leader_epoch=0)
    log.append(batch(5), leader_epoch=0)
    assert offsets_in(log.read_slice(7, 1 << 20).read_bytes()) == [5]
    assert offsets_in(log.read_slice(4, 1 << 20).read_bytes()) == [0, 5]


def test_read_stops_at_max_bytes_on_whole_batches(tmp_path):
    log = open_log(tmp_path)
    sizes = [log.append(batch(), leader_epoch=0).valid_bytes for _ in range(10)]
    one = sizes[0]
    assert offsets_in(log.read_slice(0, one * 3 + one // 2).read_bytes()) == [0, 1, 2]
    # KIP-74: at least one whole batch even when it is larger than max_bytes ...
    assert offsets_in(log.read_slice(2, 10).read_bytes()) == [2]
    # ... unless the caller already has data for the response.
    assert log.read_slice(2, 10, min_one_batch=False) is None


def test_read_with_small_index_interval_finds_boundaries(tmp_path):
    log = open_log(tmp_path, {"index.interval.bytes": 1})
    one = log.append(batch(), leader_epoch=0).valid_bytes
    for _ in range(49):
        log.append(batch(), leader_epoch=0)
    for start in (0, 13, 31):
        for count in (1, 4, 9):
            data = log.read_slice(start, one * count + one - 1).read_bytes()
            assert offsets_in(data) == list(range(start, min(start + count, 50)))


def test_read_is_bounded_by_max_offset(tmp_path):
    log = open_log(tmp_path, SMALL)
    for _ in range(12):
        log.append(batch(2), leader_epoch=0)
    # A high watermark in the middle of the log, on a batch boundary and inside a batch.
    data = log.read_slice(0, 1 << 20, max_offset=6).read_bytes()
    assert offsets_in(data)[-1] == 4
    data = log.read_slice(0, 1 << 20, max_offset=7).read_bytes()
    assert offsets_in(data)[-1] == 4  # the batch 6..7 reaches the bound: left out
    assert log.read_slice(6, 1 << 20, max_offset=6) is None
    assert log.read_slice(6, 1 << 20, max_offset=7) is None
    # A bound in a later segment does not cut the current one.
    first_segment_end = log.segments[1].base_offset
    data = log.read_slice(0, 1 << 20, max_offset=20).read_bytes()
    assert offsets_in(data)[-1] + 2 == first_segment_end


def test_read_out_of_range_and_at_the_end(tmp_path):
    log = open_log(tmp_path)
    log.append(batch(3), leader_epoch=0)
    assert log.read_slice(3, 100) is None  # at the LEO: nothing yet
    with pytest.raises(OffsetOutOfRange):
        log.read_slice(4, 100)
    log.high_watermark = 3
    log.delete_records_before(2)
    with pytest.raises(OffsetOutOfRange):
        log.read_slice(1, 100)
    # From the log start offset, the batch holding it comes back whole (clients skip earlier records).
    assert offsets_in(log.read_slice(2, 100).read_bytes()) == [0]


def test_file_slice_gives_fd_position_and_length_for_sendfile(tmp_path):
    log = open_log(tmp_path)
    log.append(batch(), leader_epoch=0)
    size = log.append(batch(), leader_epoch=0).valid_bytes
    with log.read_slice(1, 1 << 20) as part:
        assert len(part) == size and part.position == size
        assert os.pread(part.fd, len(part), part.position) == part.read_bytes()
        assert part.first_offset == 1


def test_file_slice_survives_segment_deletion(tmp_path):
    log = open_log(tmp_path, SMALL)
    for _ in range(12):
        log.append(batch(2), leader_epoch=0)
    part = log.read_slice(0, 1 << 20)
    expected = part.read_bytes()
    log.high_watermark = log.log_end_offset
    log.delete_records_before(log.segments[2].base_offset)
    assert not os.path.exists(part.path)
    assert part.read_bytes() == expected
    part.close()


# -- validation -----------------------------------------------------------------------------------


def test_corrupt_or_torn_batches_are_rejected_before_anything_is_written(tmp_path):
    log = open_log(tmp_path)
    good = batch()
    bad = batch()
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptBatch):
        log.append(good + bad, leader_epoch=0)
    with pytest.raises(InvalidRecordBatch):
        log.append(batch()[:-3], leader_epoch=0)
    with pytest.raises(InvalidRecordBatch):
        log.append(bytearray(), leader_epoch=0)
    assert log.log_end_offset == 0 and log.active_segment.size == 0


def test_client_batch_rules(tmp_path):
    log = open_log(tmp_path, {"max.message.bytes": 500})
    with pytest.raises(InvalidRecord):
        log.append(batch(base_offset=5), leader_epoch=0)
    with pytest.raises(RecordTooLarge):
        log.append(batch(value=b"x" * 600), leader_epoch=0)
    with pytest.raises(InvalidRecord):
        log.append(batch(producer_id=3, producer_epoch=0), leader_epoch=0)  # no sequence
    small_segments = open_log(tmp_path, {"segment.bytes": 200}, name="small-0")
    with pytest.raises(RecordBatchTooLarge):
        small_segments.append(batch(value=b"x" * 300), leader_epoch=0)
    assert log.log_end_offset == 0


def test_log_append_time_rewrites_timestamps(tmp_path):
    clock = Clock(5_000_000)
    log = open_log(tmp_path, {"message.timestamp.type": "LogAppendTime"}, clock_ms=clock)
    info = log.append(batch(2, timestamp=1), leader_epoch=0)
    assert info.log_append_time == 5_000_000
    data = log.read_slice(0, 1 << 20).read_bytes()
    header, _ = next(decode_batches(data))  # decode verifies the rewritten CRC
    assert header.timestamp_type == 1 and header.max_timestamp == 5_000_000
    log.high_watermark = 2
    log.delete_records_before(1)
    assert log.fetch_offset_by_timestamp(0) == (1, 5_000_000)


def test_follower_append_keeps_offsets_and_epochs(tmp_path):
    log = open_log(tmp_path)
    log.append(batch(2, base_offset=0, partition_leader_epoch=1), leader_epoch=-1, assign_offsets=False)
    log.append(batch(1, base_offset=5, partition_leader_epoch=3), leader_epoch=-1, assign_offsets=False)
    assert log.log_end_offset == 6
    assert log.leader_epoch_cache.entries == [(1, 0), (3, 5)]
    with pytest.raises(UnexpectedAppendOffset):
        log.append(batch(1, base_offset=4, partition_leader_epoch=3), leader_epoch=-1, assign_offsets=False)
    assert offsets_in(log.read_slice(3, 1 << 20).read_bytes()) == [5]


def test_config_parses_strings_and_rejects_nonsense():
    config = LogConfig({"segment.bytes": "2048", "cleanup.policy": "compact,delete", "preallocate": "true"})
    assert config.segment_bytes == 2048 and config.cleanup_policy == ["compact", "delete"]
    assert config["preallocate"] is True and config.retention_ms == 604_800_000
    with pytest.raises(InvalidConfig):
        LogConfig({"segment.bytes": "lots"})
    with pytest.raises(InvalidConfig):
        LogConfig({"message.timestamp.type": "Whenever"})


# -- indexes --------------------------------------------------------------------------------------


def test_offset_and_time_index_files_have_kafka_entries(tmp_path):
    log = open_log(tmp_path, {"index.interval.bytes": 100})
    positions = []
    position = 0
    for i in range(10):
        info = log.append(batch(2, timestamp=1000 + i), leader_epoch=0)
        positions.append(position)
        position += info.valid_bytes
    segment = log.active_segment
    with open(segment.offset_index.path, "rb") as f:
        entries = list(struct.iter_unpack(">ii", f.read()))
    # One entry per batch once more than index.interval.bytes were appended since the last one:
    # (relative last offset of the batch, position where the batch starts).
    # Batches are larger than the interval, so every batch but the first gets an entry.
    assert len(entries) == 9 and all(pos == positions[(rel - 1) // 2] for rel, pos in entries)
    with open(segment.time_index.path, "rb") as f:
        time_entries = list(struct.iter_unpack(">qi", f.read()))
    assert time_entries and all(ts == 1000 + (rel - 1) // 2 for ts, rel in time_entries)
    assert segment.offset_index.lookup(0) == 0
    rel, pos = entries[-1]
    assert segment.offset_index.lookup(rel + 5) == pos


def test_index_lookups(tmp_path):
    index = OffsetIndex(str(tmp_path / "0.index"), 100, 1 << 20)
    for offset, position in ((110, 0), (120, 500), (130, 900)):
        index.append(offset, position)
    assert [index.lookup(o) for o in (100, 110, 119, 120, 500)] == [0, 0, 0, 500, 900]
    index.truncate_to(120)
    assert len(index) == 1 and os.path.getsize(index.path) == 8
    time_index = TimeIndex(str(tmp_path / "0.timeindex"), 100, 1 << 20)
    time_index.maybe_append(50, 110)
    time_index.maybe_append(40, 120)  # not larger: ignored
    time_index.maybe_append(70, 130)
    assert time_index.lookup(10) == (-1, 100)
    assert time_index.lookup(60) == (50, 110)
    assert os.path.getsize(time_index.path) == 24


def test_full_offset_index_rolls_the_segment(tmp_path):
    log = open_log(tmp_path, {"index.interval.bytes": 0, "segment.index.bytes": 24})
    for _ in range(10):
        log.append(batch(), leader_epoch=0)
    assert len(log.segments) > 1
    assert all(len(s.offset_index) <= 3 for s in log.segments)


def test_segment_rolls_by_age_of_its_first_batch(tmp_path):
    log = open_log(tmp_path, {"segment.ms": 1000})
    log.append(batch(timestamp=10_000), leader_epoch=0)
    log.append(batch(timestamp=10_900), leader_epoch=0)
    assert len(log.segments) == 1
    log.append(batch(timestamp=11_001), leader_epoch=0)
    assert segment_bases(log) == [0, 2]


# -- timestamps -----------------------------------------------------------------------------------


def test_offset_by_timestamp_finds_the_first_record_at_or_after(tmp_path):
    log = open_log(tmp_path, {"segment.bytes": 1500, "index.interval.bytes": 100})
    for i in range(20):
        # Records at 1000+100i, +10, +20 within each batch of three.
        log.append(batch(3, timestamp=1000 + 100 * i, deltas=[0, 10, 20]), leader_epoch=0)
    assert len(log.segments) > 2
    assert log.fetch_offset_by_timestamp(0) == OffsetAndTimestamp(0, 1000)
    assert log.fetch_offset_by_timestamp(1000) == (0, 1000)
    assert log.fetch_offset_by_timestamp(1005) == (1, 1010)
    assert log.fetch_offset_by_timestamp(1021) == (3, 1100)
    assert log.fetch_offset_by_timestamp(2415) == (44, 2420)
    assert log.fetch_offset_by_timestamp(2921) is None
    assert log.fetch_offset_by_timestamp(-2) == (0, -1)
    assert log.fetch_offset_by_timestamp(-1) == (60, -1)


def test_offset_by_timestamp_skips_records_below_the_log_start_offset(tmp_path):
    log = open_log(tmp_path)
    log.append(batch(3, timestamp=1000, deltas=[0, 10, 20]), leader_epoch=0)
    log.high_watermark = 3
    log.delete_records_before(2)
    assert log.fetch_offset_by_timestamp(1000) == (2, 1020)


def test_offset_by_timestamp_with_out_of_order_timestamps(tmp_path):
    log = open_log(tmp_path)
    log.append(batch(3, timestamp=5000, deltas=[0, -4000, 10]), leader_epoch=0)
    log.append(batch(1, timestamp=2000), leader_epoch=0)
    assert log.fetch_offset_by_timestamp(1500) == (0, 5000)
    assert log.fetch_offset_by_timestamp(5005) == (2, 5010)


def test_max_timestamp_offset_is_the_record_carrying_it(tmp_path):
    log = open_log(tmp_path, SMALL)
    assert log.max_timestamp_offset() is None
    for i in range(10):
        log.append(batch(3, timestamp=1000 + i), leader_epoch=0)
    log.append(batch(3, timestamp=9000, deltas=[0, 500, 100]), leader_epoch=0)
    log.append(batch(3, timestamp=2000), leader_epoch=0)
    assert log.max_timestamp_offset() == (31, 9500)
    assert log.fetch_offset_by_timestamp(-3) == (31, 9500)


# -- recovery -------------------------------------------------------------------------------------


def fill(log, batches=8, count=2):
    for i in range(batches):
        log.append(batch(count, timestamp=1000 + i), leader_epoch=0)


def test_reopen_after_clean_close_keeps_everything(tmp_path):
    log = open_log(tmp_path, SMALL)
    fill(log, 20)
    before = [log.read_slice(o, 1 << 20).read_bytes() for o in range(0, 40, 7)]
    log.close()
    reopened = open_log(tmp_path, SMALL, clean_shutdown=True, log_start_offset=3, high_watermark=30)
    assert reopened.log_end_offset == 40
    assert (reopened.log_start_offset, reopened.high_watermark, reopened.recovery_point) == (3, 30, 40)
    assert reopened.max_timestamp_offset() == (38, 1019)  # the first record carrying it
    assert [reopened.read_slice(o, 1 << 20).read_bytes() for o in range(7, 40, 7)] == before[1:]
    assert reopened.append(batch(), leader_epoch=0).base_offset == 40


def test_recovery_after_a_torn_write(tmp_path):
    log = open_log(tmp_path, SMALL)
    fill(log, 20)
    path = log.active_segment.log_path
    size = os.path.getsize(path)
    last_size = log.append(batch(2), leader_epoch=0).valid_bytes
    log.close_without_flush()
    with open(path, "r+b") as f:
        f.truncate(size + last_size - 7)  # the last batch only half reached the disk
    reopened = open_log(tmp_path, SMALL)
    assert reopened.log_end_offset == 40
    assert os.path.getsize(path) == size
    assert reopened.append(batch(), leader_epoch=0).base_offset == 40


def test_recovery_after_a_flipped_byte_in_the_last_batch(tmp_path):
    log = open_log(tmp_path, SMALL)
    fill(log, 20)
    last_size = log.append(batch(2), leader_epoch=0).valid_bytes
    path = log.active_segment.log_path
    size = os.path.getsize(path) - last_size
    log.close_without_flush()
    with open(path, "r+b") as f:
        f.seek(size + 70)
        byte = f.read(1)
        f.seek(size + 70)
        f.write(bytes([byte[0] ^ 0x01]))
    reopened = open_log(tmp_path, SMALL)
    assert reopened.log_end_offset == 40 and os.path.getsize(path) == size
    assert reopened.append(batch(3), leader_epoch=0).base_offset == 40
    data = reopened.read_slice(40, 1 << 20).read_bytes()
    assert [h.last_offset for _, h in iter_batch_headers(data)] == [42]


def test_corruption_in_an_earlier_unflushed_segment_drops_later_segments(tmp_path):
    log = open_log(tmp_path, SMALL)
    fill(log, 20)
    bases = segment_bases(log)
    log.close_without_flush()
    victim = os.path.join(log.dir, f"{bases[1]:020d}.log")
    with open(victim, "r+b") as f:
        f.seek(100)
        f.write(b"\x00" * 4)
    reopened = open_log(tmp_path, SMALL, recovery_point=bases[1])
    assert segment_bases(reopened) == bases[:2]
    assert reopened.log_end_offset < bases[2]
    assert not os.path.exists(os.path.join(log.dir, f"{bases[2]:020d}.log"))


def test_recovery_stops_at_offsets_going_backwards(tmp_path):
    log = open_log(tmp_path)
    fill(log, 3)
    size = log.active_segment.size
    log.close_without_flush()
    with open(log.active_segment.log_path, "ab") as f:
        f.write(batch(2, base_offset=1))  # a whole, CRC-valid batch, but offsets 1..2 again
    reopened = open_log(tmp_path)
    assert reopened.log_end_offset == 6 and reopened.active_segment.size == size


def test_clean_shutdown_still_cuts_a_torn_tail(tmp_path):
    log = open_log(tmp_path)
    fill(log, 3)
    log.close()
    with open(log.active_segment.log_path, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x10")  # a header that never finished
    reopened = open_log(tmp_path, clean_shutdown=True)
    assert reopened.log_end_offset == 6
    assert reopened.append(batch(), leader_epoch=0).base_offset == 6


def test_recovery_rebuilds_a_deleted_index(tmp_path):
    config = {"index.interval.bytes": 100, "segment.bytes": 3000}
    log = open_log(tmp_path, config)
    fill(log, 30)
    first = log.segments[0]
    with open(first.offset_index.path, "rb") as f:
        index_bytes = f.read()
    with open(first.time_index.path, "rb") as f:
        time_index_bytes = f.read()
    assert index_bytes
    log.close()
    os.unlink(first.offset_index.path)
    os.unlink(first.time_index.path)
    reopened = open_log(tmp_path, config, clean_shutdown=True)
    with open(first.offset_index.path, "rb") as f:
        assert f.read() == index_bytes
    with open(first.time_index.path, "rb") as f:
        assert f.read() == time_index_bytes
    assert reopened.log_end_offset == 60
    assert offsets_in(reopened.read_slice(17, 1).read_bytes()) == [16]


def test_corrupt_index_is_rebuilt(tmp_path):
    config = {"index.interval.bytes": 100}
    log = open_log(tmp_path, config)
    fill(log, 10)
    log.close()
    with open(log.segments[0].offset_index.path, "ab") as f:
        f.write(b"\x01\x02\x03")  # not a whole entry
    reopened = open_log(tmp_path, config, clean_shutdown=True)
    assert os.path.getsize(reopened.segments[0].offset_index.path) % 8 == 0
    assert offsets_in(reopened.read_slice(9, 1).read_bytes()) == [8]


def test_acknowledged_appends_survive_kill_9(tmp_path):
    directory = tmp_path / "killed-0"
    script = textwrap.dedent(f"""
        import os, sys
        from kafka_wire.record_codec import Record, build_batch
        from log.partition_log import PartitionLog
        log = PartitionLog({str(directory)!r}, {{"segment.bytes": 4000}})
        for i in range(50):
            info = log.append(bytearray(build_batch([Record(0, 0, None, b"%d" % i)], base_timestamp=1)), leader_epoch=0)
        print(info.last_offset, flush=True)
        os.kill(os.getpid(), {int(signal.SIGKILL)})
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == -signal.SIGKILL
    assert result.stdout.strip() == "49"
    reopened = PartitionLog(str(directory))
    assert reopened.log_end_offset == 50
    values = []
    offset = 0
    while offset < 50:
        data = reopened.read_slice(offset, 1 << 20).read_bytes()
        for header, records in decode_batches(data):
            values += [r.value for r in records]
            offset = header.next_offset
    assert values == [b"%d" % i for i in range(50)]


# -- flushing -------------------------------------------------------------------------------------


def test_flush_messages_one_fsyncs_every_append(tmp_path, monkeypatch):
    calls = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (calls.append(fd), real(fd)))
    log = open_log(tmp_path, {"flush.messages": 1})
    calls.clear()
    for expected in (1, 2, 3):
        log.append(batch(), leader_epoch=0)
        assert log.recovery_point == log.log_end_offset
        assert len(calls) == expected


def test_default_policy_leaves_fsync_to_rolls_and_flush(tmp_path, monkeypatch):
    calls = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (calls.append(fd), real(fd)))
    clock = Clock()
    log = open_log(tmp_path, {"flush.ms": 1000}, clock_ms=clock)
    calls.clear()
    log.append(batch(), leader_epoch=0)
    assert calls == [] and log.recovery_point == 0
    assert not log.maybe_flush()
    clock.now += 1000
    assert log.maybe_flush() and log.recovery_point == 1
    log.append(batch(), leader_epoch=0)
    log.flush()
    assert log.recovery_point == 2


# -- retention, DeleteRecords, truncation ---------------------------------------------------------


def test_delete_records_moves_the_log_start_offset_and_drops_whole_segments(tmp_path):
    log = open_log(tmp_path, SMALL)
    fill(log, 20)
    bases = segment_bases(log)
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(5)  # above the high watermark (0)
    log.high_watermark = log.log_end_offset
    assert log.delete_records_before(bases[2] + 1) == bases[2] + 1
    assert segment_bases(log) == bases[2:]
    assert not os.path.exists(os.path.join(log.dir, f"{bases[0]:020d}.log"))
    assert log.delete_records_before(3) == bases[2] + 1  # never backwards
    log.close()
    reopened = open_log(tmp_path, SMALL, clean_shutdown=True, log_start_offset=bases[2] + 1)
    assert reopened.log_start_offset == bases[2] + 1


def test_retention_by_time_keeps_recent_segments_and_respects_the_high_watermark(tmp_path):
    clock = Clock(100_000)
    log = open_log(tmp_path, SMALL, clock_ms=clock)
    for i in range(20):
        log.append(batch(2, timestamp=10_000 + i * 1000), leader_epoch=0)
    bases = segment_bases(log)
    log.high_watermark = bases[2]
    # Segments whose newest record is older than 50s: everything below ~t=50000, bounded by the HW.
    deleted = log.delete_segments_older_than(70_000)
    assert deleted == 2 and segment_bases(log) == bases[2:]
    assert log.log_start_offset == bases[2]
    assert log.fetch_offset_by_timestamp(-2) == (bases[2], -1)


def test_retention_by_time_rolls_and_deletes_the_active_segment_when_all_expired(tmp_path):
    clock = Clock(1_000_000)
    log = open_log(tmp_path, clock_ms=clock)
    fill(log, 3)
    log.high_watermark = log.log_end_offset
    assert log.delete_segments_older_than(1000) == 1
    assert segment_bases(log) == [6] and log.log_start_offset == 6 and log.log_end_offset == 6
    assert log.read_slice(6, 100) is None
    assert log.append(batch(), leader_epoch=0).base_offset == 6


def test_retention_by_size(tmp_path):
    log = open_log(tmp_path, SMALL)
    fill(log, 20)
    log.high_watermark = log.log_end_offset
    sizes = [s.size for s in log.segments]
    limit = sum(sizes) - sizes[0] - sizes[1] // 2
    assert log.delete_segments_over_size(limit) == 1
    assert log.size_in_bytes == sum(sizes[1:])


def test_truncate_to_removes_whole_batches_and_appends_continue(tmp_path):
    log = open_log(tmp_path, SMALL)
    fill(log, 20, count=2)
    log.high_watermark = 40
    bases = segment_bases(log)
    assert log.truncate_to(bases[1] + 3)  # inside a batch of two: the whole batch goes
    assert log.log_end_offset == bases[1] + 2
    assert segment_bases(log) == bases[:2]
    assert log.high_watermark == log.log_end_offset
    assert not log.truncate_to(100)
    assert log.append(batch(), leader_epoch=1).base_offset == bases[1] + 2
    log.close()
    reopened = open_log(tmp_path, SMALL, clean_shutdown=True)
    assert reopened.log_end_offset == bases[1] + 3


def test_truncate_below_the_first_segment_restarts_the_log(tmp_path):
    log = open_log(tmp_path, SMALL)
    fill(log, 20)
    log.high_watermark = 40
    log.delete_records_before(20)
    first = segment_bases(log)[0]
    log.truncate_to(first - 1)
    assert segment_bases(log) == [first - 1]
    assert log.log_start_offset == log.log_end_offset == first - 1


# -- leader epochs --------------------------------------------------------------------------------


def test_leader_epoch_checkpoint_and_end_offsets(tmp_path):
    log = open_log(tmp_path)
    log.append(batch(2), leader_epoch=0)
    log.append(batch(3), leader_epoch=2)
    log.append(batch(1), leader_epoch=2)
    log.append(batch(4), leader_epoch=5)
    with open(os.path.join(log.dir, LEADER_EPOCH_CHECKPOINT)) as f:
        assert f.read() == "0\n3\n0 0\n2 2\n5 6\n"
    assert log.end_offset_for_epoch(0) == (0, 2)
    assert log.end_offset_for_epoch(1) == (0, 2)  # unknown epoch: the largest one below it
    assert log.end_offset_for_epoch(2) == (2, 6)
    assert log.end_offset_for_epoch(5) == (5, 10)  # the latest epoch ends at the LEO
    assert log.end_offset_for_epoch(6) == (-1, -1)
    assert log.epoch_for_offset(4) == 2 and log.latest_epoch() == 5
    log.truncate_to(3)  # inside the batch 2..4, which goes entirely
    assert log.log_end_offset == 2
    assert log.leader_epoch_cache.entries == [(0, 0)]
    assert log.end_offset_for_epoch(0) == (0, 2)
    assert log.end_offset_for_epoch(2) == (-1, -1)
    with open(os.path.join(log.dir, LEADER_EPOCH_CHECKPOINT)) as f:
        assert f.read() == "0\n1\n0 0\n"


def test_leader_epochs_survive_reopen_and_are_rebuilt_without_checkpoint(tmp_path):
    log = open_log(tmp_path)
    log.append(batch(2), leader_epoch=1)
    log.append(batch(2), leader_epoch=4)
    log.close()
    assert open_log(tmp_path, clean_shutdown=True).leader_epoch_cache.entries == [(1, 0), (4, 2)]
    os.unlink(os.path.join(log.dir, LEADER_EPOCH_CHECKPOINT))
    assert open_log(tmp_path, clean_shutdown=True).leader_epoch_cache.entries == [(1, 0), (4, 2)]


def test_recovery_keeps_where_an_epoch_really_started(tmp_path):
    log = open_log(tmp_path, SMALL)
    for _ in range(5):
        log.append(batch(2), leader_epoch=3)
    for _ in range(10):
        log.append(batch(2), leader_epoch=4)
    for _ in range(5):
        log.append(batch(2), leader_epoch=5)
    # Re-scan from a segment in the middle of epoch 4: its batches must not move epoch 4's start.
    recovery_point = next(b for b in segment_bases(log) if 10 < b < 30)
    log.close_without_flush()
    reopened = open_log(tmp_path, SMALL, recovery_point=recovery_point)
    assert reopened.leader_epoch_cache.entries == [(3, 0), (4, 10), (5, 30)]


def test_log_start_offset_moves_the_first_epoch_entry(tmp_path):
    log = open_log(tmp_path)
    log.append(batch(2), leader_epoch=1)
    log.append(batch(2), leader_epoch=3)
    log.append(batch(2), leader_epoch=4)
    log.high_watermark = 6
    log.delete_records_before(3)
    assert log.leader_epoch_cache.entries == [(3, 3), (4, 4)]


# -- log manager ----------------------------------------------------------------------------------


def test_partition_dir_names_split_at_the_last_dash():
    assert parse_partition_dir_name("my.topic_with-dashes-12") == ("my.topic_with-dashes", 12)
    with pytest.raises(ValueError):
        parse_partition_dir_name("nodash")


def test_log_manager_checkpoints_and_clean_shutdown(tmp_path):
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    manager = LogManager(dirs, {"segment.bytes": 1000})
    manager.load()
    logs = {tp: manager.get_or_create(*tp) for tp in [("my.topic-x", 0), ("my.topic-x", 1), ("t_2", 0)]}
    # New partitions spread over the log dirs.
    assert {manager.log_dir_of(*tp) for tp in logs} == set(dirs)
    for log in logs.values():
        for _ in range(3):
            log.append(batch(), leader_epoch=0)
        log.high_watermark = 2
    manager.close()
    for d in dirs:
        assert os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_MARKER))
    a_dir = dirs[0]
    with open(os.path.join(a_dir, RECOVERY_POINT_CHECKPOINT)) as f:
        lines = f.read().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2
    assert all(line.split(" ")[2] == "3" for line in lines[2:])
    with open(os.path.join(a_dir, REPLICATION_OFFSET_CHECKPOINT)) as f:
        assert all(line.endswith(" 2") for line in f.read().splitlines()[2:])
    assert os.path.exists(os.path.join(a_dir, LOG_START_OFFSET_CHECKPOINT))

    again = LogManager(dirs, {"segment.bytes": 1000})
    again.load()
    for d in dirs:
        assert not os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_MARKER))
    assert sorted(again.partitions()) == sorted(logs)
    log = again.get("my.topic-x", 1)
    assert (log.log_end_offset, log.high_watermark, log.recovery_point) == (3, 2, 3)
    assert again.get_or_create("my.topic-x", 1, {"retention.ms": "1000"}) is log
    assert log.config.retention_ms == 1000 and log.config.segment_bytes == 1000


def test_a_topic_with_a_name_of_249_characters_can_be_deleted(tmp_path):
    """Kafka's longest topic name: `<topic>-<partition>.<uuid>-delete` would be 292 bytes, more
    than a file name may have (the request fuzzer's DeleteTopics crashed with ENAMETOOLONG);
    the name is cut short as Kafka's logDeleteDirName cuts it, and removed on the next start."""
    dirs = [str(tmp_path / "data")]
    manager = LogManager(dirs)
    manager.load()
    name = "a" * 249
    for partition in (0, 17):
        manager.get_or_create(name, partition).append(batch(), leader_epoch=0)
    assert manager.delete_partitions([(name, 0)]) and manager.delete_partition(name, 17)
    assert manager.partitions() == [] and os.listdir(dirs[0]) == sorted(os.listdir(dirs[0]))
    assert not any(entry.startswith("a") for entry in os.listdir(dirs[0]))
    manager.close()


def test_log_manager_recovers_without_the_marker_and_deletes_partitions(tmp_path):
    dirs = [str(tmp_path / "data")]
    manager = LogManager(dirs)
    manager.load()
    log = manager.get_or_create("t", 0)
    log.append(batch(), leader_epoch=0)
    manager.checkpoint_all()
    path = log.active_segment.log_path
    with open(path, "ab") as f:
        f.write(b"garbage at the tail")
    # No close(): as after kill -9.
    again = LogManager(dirs)
    again.load()
    assert again.get("t", 0).log_end_offset == 1
    assert os.path.getsize(path) == again.get("t", 0).active_segment.size
    part_dir = again.get("t", 0).dir
    assert again.delete_partition("t", 0)
    assert not os.path.exists(part_dir) and again.get("t", 0) is None
    assert not any(name.startswith("t-0") for name in os.listdir(dirs[0]))
    os.makedirs(os.path.join(dirs[0], "gone-3.0123abcd-delete"))
    third = LogManager(dirs)
    third.load()
    assert third.partitions() == []
    assert not os.path.exists(os.path.join(dirs[0], "gone-3.0123abcd-delete"))
