"""Moving a partition between log dirs (log/future_log.py, LogManager.replace_current_with_future):
the copy catches up with appends, rolls, retention, truncation and compaction swaps made while it
runs; the swap keeps every offset, the producer state and the checkpoints; a restart resumes an
interrupted move; a deleted partition or a move back abandons it."""

from __future__ import annotations

import asyncio
import os

import pytest

from kafka_wire.record_codec import Record, build_batch, decode_batches
from log.checkpoints import LOG_START_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT, read_offset_checkpoint
from log.future_log import FUTURE_DIR_SUFFIX, FutureLog, future_dir_name, parse_future_dir_name
from log.log_manager import LogManager

SMALL = {"segment.bytes": 2000, "index.interval.bytes": 200}


def batch(n: int, producer_id: int = -1, sequence: int = -1) -> bytearray:
    return bytearray(build_batch([Record(0, 0, f"k{n}".encode(), f"value-{n}".encode() * 10)],
                                 base_timestamp=1_700_000_000_000 + n, producer_id=producer_id,
                                 producer_epoch=0 if producer_id >= 0 else -1, base_sequence=sequence))


def values(log) -> list[bytes]:
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        piece = log.read_slice(offset, 1 << 20)
        data = piece.read_bytes()
        piece.close()
        for header, records in decode_batches(data):
            out += [r.value for r in records]
            offset = header.base_offset + header.last_offset_delta + 1
    return out


@pytest.fixture
def dirs(tmp_path):
    return [str(tmp_path / "a"), str(tmp_path / "b")]


@pytest.fixture
def manager(dirs):
    logs = LogManager(dirs, SMALL)
    logs.load()
    yield logs
    logs.close()


def start_move(manager, topic="t", partition=0) -> tuple[FutureLog, str]:
    source = manager.log_dir_of(topic, partition)
    target = next(d for d in manager.log_dirs if d != source)
    manager.mover.alter_log_dir(topic, partition, target)
    return manager.mover.future(topic, partition), target


def test_future_dir_names_are_kafkas():
    name = future_dir_name("my.topic-x", 12)
    assert name.startswith("my.topic-x-12.") and name.endswith(FUTURE_DIR_SUFFIX) and len(name) == len(
        "my.topic-x-12.") + 32 + len(FUTURE_DIR_SUFFIX)
    assert parse_future_dir_name(name) == ("my.topic-x", 12)
    with pytest.raises(ValueError):
        parse_future_dir_name("t-0-future")


def test_copy_passes_follow_appends_rolls_and_retention_then_the_swap_keeps_everything(manager):
    log = manager.get_or_create("t", 0)
    for n in range(30):
        log.append(batch(n, producer_id=7, sequence=n), leader_epoch=0)
    future, target = start_move(manager)
    assert manager.cleaner.paused == {("t", 0)}
    assert future.copy(future.plan(log)) > 0 and future.log_end_offset == 30
    assert future.copy(future.plan(log)) == 0  # nothing changed
    for n in range(30, 60):  # appends and rolls meanwhile
        log.append(batch(n, producer_id=7, sequence=n), leader_epoch=1)
    log.high_watermark = 55
    log.delete_records_before(12)
    log.delete_old_segments()
    assert future.copy(future.plan(log)) > 0 and future.log_end_offset == 60
    expected = values(log)
    assert log.log_start_offset > 12  # retention (old timestamps) dropped whole segments too
    state = (log.log_start_offset, log.log_end_offset, log.high_watermark)
    source_dir = log.dir

    doomed = manager.replace_current_with_future(future)
    moved = manager.get("t", 0)
    assert moved is not log and manager.log_dir_of("t", 0) == target
    assert moved.dir == os.path.join(target, "t-0") and not os.path.exists(future.path)
    assert not os.path.exists(source_dir) and os.path.isdir(doomed) and doomed.endswith("-delete")
    assert (moved.log_start_offset, moved.log_end_offset, moved.high_watermark) == state
    assert values(moved) == expected
    assert moved.latest_epoch() == 1 and moved.epoch_for_offset(58) == 1
    # The producer state came along: the next sequence is accepted, a duplicate is not appended again.
    moved.append(batch(60, producer_id=7, sequence=60), leader_epoch=1)
    assert moved.log_end_offset == 61
    # The checkpoints name the partition in its new dir only.
    for d in manager.log_dirs:
        starts = read_offset_checkpoint(os.path.join(d, LOG_START_OFFSET_CHECKPOINT))
        hws = read_offset_checkpoint(os.path.join(d, REPLICATION_OFFSET_CHECKPOINT))
        assert (("t", 0) in starts, ("t", 0) in hws) == ((d == target),) * 2
        if d == target:
            assert (starts[("t", 0)], hws[("t", 0)]) == (state[0], 55)


def test_truncation_during_the_copy_is_copied_again(manager):
    log = manager.get_or_create("t", 0)
    for n in range(10):
        log.append(batch(n), leader_epoch=0)
    future, _ = start_move(manager)
    future.copy(future.plan(log))
    # A follower truncates and the leader's different records take the same offsets: same file,
    # same size, different bytes.
    log.truncate_to(5)
    for n in range(100, 105):
        log.append(batch(n), leader_epoch=1)
    future.copy(future.plan(log))
    manager.replace_current_with_future(future)
    assert values(manager.get("t", 0)) == values_of(range(5)) + values_of(range(100, 105))


def values_of(ns) -> list[bytes]:
    return [f"value-{n}".encode() * 10 for n in ns]


def test_mover_runs_moves_in_the_background_and_a_restart_resumes_one(dirs):
    async def scenario():
        manager = LogManager(dirs, SMALL)
        manager.load()
        log = manager.get_or_create("t", 0)
        for n in range(20):
            log.append(batch(n), leader_epoch=0)
        future, target = start_move(manager)
        # A pass made, then the broker stops before the swap.
        future.copy(future.plan(log))
        manager.close()
        assert os.path.isdir(future.path)

        again = LogManager(dirs, SMALL)
        again.load()
        assert again.log_dir_of("t", 0) != target
        again.mover.recover()
        assert not os.path.exists(future.path)  # copied again from the start
        assert again.mover.future("t", 0).log_dir == target
        task = asyncio.create_task(again.mover.run())
        def leftovers():
            return [n for n in os.listdir(dirs[0]) + os.listdir(dirs[1]) if n.startswith("t-0.")]

        for _ in range(200):
            if again.mover.future("t", 0) is None and not leftovers():
                break
            await asyncio.sleep(0.01)
        task.cancel()
        assert again.log_dir_of("t", 0) == target and values(again.get("t", 0)) == values_of(range(20))
        assert not leftovers()  # neither the future nor the old (-delete) directory
        assert again.cleaner.paused == set()
        again.close()

    asyncio.run(scenario())


def test_moving_back_or_deleting_abandons_the_future_log(manager):
    async def scenario():
        log = manager.get_or_create("t", 0)
        log.append(batch(1), leader_epoch=0)
        source = manager.log_dir_of("t", 0)
        future, target = start_move(manager)
        future.copy(future.plan(log))
        manager.mover.alter_log_dir("t", 0, source)  # back where it is: the move stops
        assert manager.mover.future("t", 0) is None and manager.cleaner.paused == set()
        manager.get_or_create("u", 0).append(batch(2), leader_epoch=0)
        other, _ = start_move(manager, "u")
        other.copy(other.plan(manager.get("u", 0)))
        manager.delete_partition("u", 0)
        task = asyncio.create_task(manager.mover.run())
        for _ in range(200):
            if not os.path.exists(future.path) and not manager.mover.futures() and not os.path.exists(other.path):
                break
            await asyncio.sleep(0.01)
        task.cancel()
        assert not os.path.exists(future.path) and not os.path.exists(other.path)
        assert manager.log_dir_of("t", 0) == source and manager.mover.futures() == []

    asyncio.run(scenario())
