"""The log cleaner: compaction keeps the last record per key, with Kafka's rules for tombstones,
transactions, idempotent producers, dirty ratio and lags; it runs off the event loop."""

from __future__ import annotations

import asyncio
import logging
import os
import random

import pytest

from kafka_wire.internal_records import encode_offset_commit_key
from kafka_wire.record_codec import (
    Record,
    build_batch,
    build_control_batch,
    decode_batches,
)
from kafka_wire.records import ATTR_DELETE_HORIZON, iter_batch_headers
from log.cleaner import CLEANER_OFFSET_CHECKPOINT
from log.errors import RecordValidationError
from log.log_manager import LogManager
from log.producer_state import AppendOrigin

NOW = 1_700_000_000_000
COMPACT = {"cleanup.policy": "compact", "segment.bytes": 16384, "delete.retention.ms": 60_000}


class Clock:
    def __init__(self, now: int = NOW):
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def manager(tmp_path, clock):
    logs = LogManager([str(tmp_path / "data")], clock_ms=clock)
    logs.load()
    yield logs
    logs.close()


def reopen(manager: LogManager, clock) -> LogManager:
    manager.close()
    again = LogManager(manager.log_dirs, clock_ms=clock)
    again.load()
    return again


def compacted(manager, config=None, topic="table", partition=0):
    log = manager.get_or_create(topic, partition, {**COMPACT, **(config or {})})
    return log


def append(log, pairs, *, compression=0, timestamp=NOW, origin=AppendOrigin.CLIENT, **kwargs) -> int:
    records = [Record(i, 0, key, value) for i, (key, value) in enumerate(pairs)]
    info = log.append(bytearray(build_batch(records, compression=compression, base_timestamp=timestamp, **kwargs)),
                      leader_epoch=0, origin=origin)
    log.high_watermark = log.log_end_offset
    return info.base_offset


def read_log(log):
    """(offset, key, value, header) of every record from the log start, as a consumer reads them."""
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        found = log.read_slice(offset, 1 << 20)
        if found is None:
            break
        with found:
            data = found.read_bytes()
        advanced = offset
        for header, records in decode_batches(data):
            for record in records:
                out.append((header.base_offset + record.offset_delta, record.key, record.value, header))
            advanced = header.next_offset
        offset = advanced
    return out


def read_batches_of(log):
    headers = []
    for segment in log.segments:
        data = segment.read_batch(0, segment.size)
        headers += [h for _, h in iter_batch_headers(data)]
    return headers


def table_of(records) -> dict:
    table = {}
    for _, key, value, _ in records:
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
    return table


# -- the acceptance case --------------------------------------------------------------------------


def test_100k_updates_over_1k_keys_compact_to_the_last_value_of_each_live_key(manager, clock):
    log = compacted(manager, {"segment.bytes": 65536})
    rng = random.Random(6)
    keys = [b"key-%04d" % i for i in range(1000)]
    codecs = [0, 1, 2, 3, 4]
    written = 0
    while written < 100_000:
        pairs = []
        for _ in range(100):
            key = rng.choice(keys)
            pairs.append((key, None if rng.random() < 0.02 else b"value-%06d" % written))
            written += 1
        append(log, pairs, compression=codecs[written // 100 % 5])
    # Tombstone a hundred keys for good, then close the segment so everything is cleanable.
    for start in range(0, 100, 20):
        append(log, [(key, None) for key in keys[start:start + 20]])
    log.roll()
    before = read_log(log)
    table_before = table_of(before)
    last = {}
    for offset, key, value, _ in before:
        last[key] = (offset, value)
    tombstoned = {key for key, (_, value) in last.items() if value is None}
    assert len(tombstoned) >= 100 and len(table_before) == 1000 - len(tombstoned)
    codec_of_batch = {h.base_offset: h.compression for h in read_batches_of(log)}
    size_before = log.size_in_bytes

    stats = manager.cleaner.clean_log(log)
    assert stats is not None and stats.segments_cleaned > 1

    after = read_log(log)
    # Exactly one record per key: the last one, at its original offset; tombstones kept for now.
    assert sorted((offset, key, value) for offset, key, value, _ in after) == \
           sorted((offset, key, value) for key, (offset, value) in last.items())
    assert table_of(after) == table_before  # a consumer from offset 0 rebuilds the same table
    assert log.log_end_offset == 100_100 and log.size_in_bytes < size_before / 20
    # Batches keep their offsets and codec; those that lost records were re-compressed with it
    # (a batch left empty, kept for its offsets, has no records to compress, as in Kafka).
    for header in read_batches_of(log):
        assert header.base_offset in codec_of_batch
        if header.records_count:
            assert header.compression == codec_of_batch[header.base_offset]

    # Past delete.retention.ms from that first cleaning, the tombstones go.
    clock.now += 60_001
    assert manager.cleaner.filthiest_log() is not None  # their horizon passing makes the log due
    manager.cleaner.clean_log(log)
    after = read_log(log)
    assert {key for _, key, _, _ in after} == set(table_before)
    assert all(value is not None for _, _, value, _ in after)
    assert table_of(after) == table_before

    again = reopen(manager, clock)
    assert table_of(read_log(again.get("table", 0))) == table_before
    again.close()


def test_tombstones_stay_for_delete_retention_ms_after_their_first_cleaning(manager, clock):
    log = compacted(manager)
    append(log, [(b"a", b"1"), (b"b", b"1")])
    append(log, [(b"a", None)])
    log.roll()
    manager.cleaner.clean_log(log)
    assert [(k, v) for _, k, v, _ in read_log(log)] == [(b"b", b"1"), (b"a", None)]
    # The batch holding the tombstone now carries its delete horizon (KIP-534), and the records
    # keep their timestamps (deltas are rebased on the horizon).
    tombstone_header = read_log(log)[-1][3]
    assert tombstone_header.attributes & ATTR_DELETE_HORIZON
    assert tombstone_header.base_timestamp == NOW + 60_000
    clock.now += 59_999
    append(log, [(b"c", b"1")])
    log.roll()
    manager.cleaner.clean_log(log)
    assert (b"a", None) in [(k, v) for _, k, v, _ in read_log(log)]
    clock.now += 2
    manager.cleaner.clean_log(log)
    assert [(k, v) for _, k, v, _ in read_log(log)] == [(b"b", b"1"), (b"c", b"1")]


def test_the_active_segment_is_never_cleaned(manager):
    log = compacted(manager, {"segment.bytes": 1 << 20})
    for i in range(50):
        append(log, [(b"same", b"%d" % i)])
    assert manager.cleaner.clean_log(log) is None  # one segment: the active one
    assert len(read_log(log)) == 50
    log.roll()
    for i in range(5):
        append(log, [(b"same", b"new-%d" % i)])
    manager.cleaner.clean_log(log)
    # The map covers closed segments only: records in the active segment supersede nothing yet.
    assert [v for _, _, v, _ in read_log(log)] == [b"49"] + [b"new-%d" % i for i in range(5)]


def test_dirty_ratio_and_compaction_lags_decide_when_a_log_is_cleaned(manager, clock):
    log = compacted(manager, {"segment.bytes": 2000, "min.cleanable.dirty.ratio": "0.5"})
    for i in range(60):
        append(log, [(b"k%d" % (i % 10), b"x" * 40)])
    log.roll()
    assert manager.cleaner.filthiest_log().log is log  # all dirty
    manager.cleaner.clean_log(log)
    assert manager.cleaner.filthiest_log() is None  # all clean
    append(log, [(b"k1", b"y" * 40)])
    log.roll()
    small = manager.cleaner.log_to_clean(log)
    assert 0 < small.cleanable_ratio < 0.5 and manager.cleaner.filthiest_log() is None
    # max.compaction.lag.ms: dirty records older than that are cleaned whatever the ratio.
    log.update_config({**COMPACT, "segment.bytes": 2000, "max.compaction.lag.ms": "1000"})
    clock.now += 1001
    assert manager.cleaner.filthiest_log().needs_compaction_now

    # min.compaction.lag.ms: segments with records younger than the lag stay dirty.
    lagged = compacted(manager, {"segment.bytes": 2000, "min.compaction.lag.ms": "10000"}, topic="lagged")
    for i in range(30):
        append(lagged, [(b"k", b"old-%d" % i)], timestamp=clock.now - 20_000)
    lagged.roll()
    for i in range(30):
        append(lagged, [(b"k", b"new-%d" % i)], timestamp=clock.now)
    lagged.roll()
    manager.cleaner.clean_log(lagged)
    values = [v for _, _, v, _ in read_log(lagged)]
    assert values == [b"old-29"] + [b"new-%d" % i for i in range(30)]


def test_an_idempotent_producers_last_batch_stays_empty_and_its_sequence_continues(manager, clock):
    log = compacted(manager)
    pid, epoch = 42, 0
    for seq in range(0, 6, 2):
        append(log, [(b"p", b"a%d" % seq), (b"q", b"b%d" % seq)], producer_id=pid, producer_epoch=epoch,
               base_sequence=seq)
    last_base = log.log_end_offset - 2
    append(log, [(b"p", b"later"), (b"q", b"later")])  # supersedes everything the producer wrote
    log.roll()
    manager.cleaner.clean_log(log)
    kept = read_batches_of(log)
    producer_batches = [h for h in kept if h.producer_id == pid]
    assert len(producer_batches) == 1
    empty = producer_batches[0]
    assert (empty.base_offset, empty.last_offset, empty.records_count) == (last_base, last_base + 1, 0)
    assert (empty.base_sequence, empty.last_sequence) == (4, 5)
    assert [v for _, _, v, _ in read_log(log)] == [b"later", b"later"]
    for restarted in (False, True):
        if restarted:
            manager = reopen(manager, clock)
            log = manager.get("table", 0)
        # A retry of the last batch is still recognised; the next sequence is accepted.
        retry = log.append(bytearray(build_batch([Record(0, 0, b"p", b"a4"), Record(1, 0, b"q", b"b4")],
                                                 producer_id=pid, producer_epoch=epoch, base_sequence=4,
                                                 base_timestamp=NOW)), leader_epoch=0)
        assert retry.duplicate and retry.base_offset == last_base
    append(log, [(b"p", b"next")], producer_id=pid, producer_epoch=epoch, base_sequence=6)
    manager.close()


def test_aborted_transactions_vanish_and_markers_go_after_their_horizon(manager, clock):
    log = compacted(manager)
    aborting, committing = 7, 8
    append(log, [(b"a", b"aborted-a"), (b"b", b"aborted-b")], producer_id=aborting, producer_epoch=0,
           base_sequence=0, is_transactional=True)
    append(log, [(b"c", b"committed-c")], producer_id=committing, producer_epoch=0, base_sequence=0,
           is_transactional=True)
    log.append(bytearray(build_control_batch(False, aborting, 0, 0, timestamp=NOW)), leader_epoch=0,
               origin=AppendOrigin.COORDINATOR)
    log.append(bytearray(build_control_batch(True, committing, 0, 0, timestamp=NOW)), leader_epoch=0,
               origin=AppendOrigin.COORDINATOR)
    # Both producers go on (so their transactional batches are not their last ones).
    append(log, [(b"z", b"1")], producer_id=aborting, producer_epoch=0, base_sequence=2)
    append(log, [(b"y", b"1")], producer_id=committing, producer_epoch=0, base_sequence=1)
    log.high_watermark = log.log_end_offset
    log.roll()

    def values():
        return [(k, v) for _, k, v, h in read_log(log) if not h.is_control]

    def markers():
        return [h.base_offset for _, _, _, h in read_log(log) if h.is_control]

    def aborted_index():
        return [(e.producer_id, e.last_offset) for e in log.collect_aborted_transactions(0, log.log_end_offset)]

    assert aborted_index() == [(aborting, 3)]
    manager.cleaner.clean_log(log)
    assert values() == [(b"c", b"committed-c"), (b"z", b"1"), (b"y", b"1")]
    assert markers() == [3, 4]  # the marker stays while a batch of its transaction was seen
    assert aborted_index() == [(aborting, 3)]
    manager.cleaner.clean_log(log)
    assert markers() == [3, 4]  # now stamped with a delete horizon
    # Nothing of the aborted transaction is left: it leaves the .txnindex (a read_committed
    # consumer told of it would otherwise skip the producer's later batches once the marker goes).
    assert aborted_index() == []
    clock.now += 60_001
    manager.cleaner.clean_log(log)
    assert markers() == [4]  # the abort marker goes; the commit marker's data is still there
    assert values() == [(b"c", b"committed-c"), (b"z", b"1"), (b"y", b"1")]
    append(log, [(b"c", b"newer")])
    log.roll()
    manager.cleaner.clean_log(log)
    manager.cleaner.clean_log(log)
    clock.now += 60_001
    manager.cleaner.clean_log(log)
    assert markers() == []
    assert values() == [(b"z", b"1"), (b"y", b"1"), (b"c", b"newer")]


def test_records_without_a_key_are_refused_by_compacted_topics(manager):
    log = compacted(manager)
    with pytest.raises(RecordValidationError) as refused:
        append(log, [(b"k", b"v"), (None, b"no key")], compression=1)
    assert refused.value.error_name == "INVALID_RECORD"
    assert refused.value.record_errors == [
        (1, "Compacted topic cannot accept message without key in topic partition table-0")]
    assert log.log_end_offset == 0
    # The coordinators' own appends are not checked (they always have keys).
    append(log, [(b"k", b"v")], origin=AppendOrigin.COORDINATOR)


def test_consumer_offsets_stays_small_under_constant_commits(manager):
    offsets = manager.get_or_create("__consumer_offsets", 7, {"cleanup.policy": "compact", "segment.bytes": 16384})
    keys = [encode_offset_commit_key(f"group-{g}", "orders", p) for g in range(5) for p in range(4)]
    latest = {}
    largest = 0
    for i in range(10_000):
        key = keys[i % len(keys)]
        value = b"\x00\x03" + i.to_bytes(8, "big") + b"\x00" * 20
        append(offsets, [(key, value)], origin=AppendOrigin.COORDINATOR)
        latest[key] = value
        if i % 100 == 0:
            manager.cleaner.clean_filthiest_log()
        largest = max(largest, offsets.size_in_bytes)
    # Without cleaning it would be ~1 MB; cleaned, it never exceeds a few segments.
    assert largest < 4 * 16384
    assert table_of(read_log(offsets)) == latest


def test_the_first_dirty_offset_survives_a_restart(manager, clock):
    log = compacted(manager)
    for i in range(200):
        append(log, [(b"k%d" % (i % 7), b"v" * 100)])
    log.roll()
    stats = manager.cleaner.clean_log(log)
    checkpoint = os.path.join(manager.log_dirs[0], CLEANER_OFFSET_CHECKPOINT)
    with open(checkpoint) as f:
        assert f.read().splitlines()[2:] == [f"table 0 {stats.end_offset}"]
    again = reopen(manager, clock)
    log = again.get_or_create("table", 0, COMPACT)
    assert again.cleaner.first_dirty_offset(log) == stats.end_offset
    assert again.cleaner.log_to_clean(log).cleanable_bytes == 0
    # A deleted partition leaves the checkpoint: one created later under its name starts dirty.
    again.delete_partition("table", 0)
    with open(checkpoint) as f:
        assert f.read().splitlines() == ["0", "0"]
    again.close()


def test_a_corrupt_batch_makes_the_partition_uncleanable_and_changes_nothing(manager, caplog):
    log = compacted(manager)
    for i in range(100):
        append(log, [(b"k%d" % (i % 5), b"v" * 100)])
    log.roll()
    victim = log.segments[1]
    with open(victim.log_path, "r+b") as f:
        f.seek(victim.size - 20)
        f.write(b"\xff")
    before = {s.log_path: os.path.getsize(s.log_path) for s in log.segments}
    with caplog.at_level(logging.ERROR, logger="log.cleaner"):
        assert manager.cleaner.clean_log(log) is None
    assert "uncleanable" in caplog.text and "CRC" in caplog.text
    assert ("table", 0) in manager.cleaner.uncleanable
    assert {s.log_path: os.path.getsize(s.log_path) for s in log.segments} == before
    assert not [n for n in os.listdir(log.dir) if n.endswith((".cleaned", ".swap"))]
    assert manager.cleaner.filthiest_log() is None


def test_a_swap_is_abandoned_when_retention_removed_its_segments(manager, monkeypatch):
    log = compacted(manager, {"segment.bytes": 1000})
    for i in range(60):
        append(log, [(b"k%d" % (i % 3), b"v" * 40)])
    log.roll()
    cleaner = manager.cleaner
    original = cleaner._clean_group

    def clean_group_while_records_are_deleted(round_, group, *args):
        cleaned = original(round_, group, *args)
        # Meanwhile, on the event loop: DeleteRecords drops the first segments.
        log.delete_records_before(log.segments[2].base_offset)
        return cleaned

    monkeypatch.setattr(cleaner, "_clean_group", clean_group_while_records_are_deleted)
    before = read_log(log)
    assert cleaner.clean_log(log) is None
    assert read_log(log) == [r for r in before if r[0] >= log.log_start_offset]
    assert not [n for n in os.listdir(log.dir) if n.endswith((".cleaned", ".swap"))]


def test_the_background_task_cleans_in_a_worker_thread_and_stops_on_cancel(manager):
    log = compacted(manager, {"segment.bytes": 1000, "min.cleanable.dirty.ratio": "0.01"})
    for i in range(100):
        append(log, [(b"k%d" % (i % 4), b"v%d" % i + b"." * 40)])
    log.roll()
    threads = []
    original = manager.cleaner._build_offset_map

    def remember_thread(round_):
        import threading

        threads.append(threading.current_thread())
        return original(round_)

    manager.cleaner._build_offset_map = remember_thread

    async def scenario():
        task = asyncio.create_task(manager.cleaner.run(True, backoff_ms=20))
        for _ in range(200):
            await asyncio.sleep(0.01)
            if len(read_log(log)) == 4:
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    import threading

    assert threads and all(t is not threading.main_thread() for t in threads)
    assert sorted(v for _, _, v, _ in read_log(log)) == sorted(b"v%d" % i + b"." * 40 for i in range(96, 100))
