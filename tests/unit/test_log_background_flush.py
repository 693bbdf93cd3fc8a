"""Rolls and scheduled flushes fsync off the event loop; the recovery point follows the fsyncs.

Kafka flushes a rolled segment from its scheduler ("flush-log") and moves the recovery point
after; a request arriving meanwhile is answered. The tests hold an fsync back (a fake slow disk)
and look at what happened while it was held, by the order of events, not by timing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading

import pytest

import test_log_durability as durability
from broker.config import BrokerConfig
from broker.node import Broker
from broker.server import KafkaServer
from client import WireClient
from kafka_wire.record_codec import Record, build_batch
from log.log_manager import LogManager
from log.partition_log import PartitionLog

NOW = 1_700_000_000_000


def batch(value: bytes) -> bytearray:
    return bytearray(build_batch([Record(0, 0, b"k", value)], base_timestamp=NOW))


class ManualFlusher(concurrent.futures.Executor):
    """An executor whose jobs run only when the test says so (in order, on the test's thread)."""

    def __init__(self) -> None:
        self.jobs: list[tuple[concurrent.futures.Future, object, tuple]] = []

    def submit(self, fn, /, *args, **kwargs):
        future = concurrent.futures.Future()
        self.jobs.append((future, fn, args))
        return future

    def run_all(self) -> None:
        jobs, self.jobs = self.jobs, []
        for future, fn, args in jobs:
            try:
                future.set_result(fn(*args))
            except Exception as e:  # noqa: BLE001 - handed to the log like a worker thread would
                future.set_exception(e)


class SyncedFiles:
    """Records which files fdatasync/fsync reached (by path), and on which thread."""

    def __init__(self, monkeypatch) -> None:
        self.calls: list[tuple[str, str]] = []
        for name in ("fdatasync", "fsync"):
            real = getattr(os, name)

            def record(fd, real=real):
                self.calls.append((os.path.basename(os.readlink(f"/proc/self/fd/{fd}")),
                                   threading.current_thread().name))
                return real(fd)

            monkeypatch.setattr(os, name, record)

    def names(self) -> set[str]:
        return {name for name, _ in self.calls}


def rolled_log(tmp_path, flusher, before_roll=lambda: None) -> PartitionLog:
    log = PartitionLog(str(tmp_path / "t-0"), {"segment.bytes": 300}, flusher=flusher)
    log.append(batch(b"a" * 150), leader_epoch=0)
    flusher.run_all()  # the new directory and the first leader epoch entry
    before_roll()
    log.append(batch(b"b" * 150), leader_epoch=0)  # does not fit: rolls first
    assert [s.base_offset for s in log.segments] == [0, 1]
    return log


def test_a_roll_leaves_its_fsyncs_to_the_flusher_and_the_recovery_point_waits_for_them(tmp_path, monkeypatch):
    synced: list[SyncedFiles] = []
    flusher = ManualFlusher()
    log = rolled_log(tmp_path, flusher, lambda: synced.append(SyncedFiles(monkeypatch)))
    synced = synced[0]
    assert synced.calls == []  # nothing fsynced on the appending thread
    assert log.recovery_point == 0  # the rolled segment is not durable yet
    assert len(flusher.jobs) == 1
    flusher.run_all()
    # The rolled segment, its indexes, the producer snapshot and the directory, then the recovery point.
    assert {"00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex",
            "00000000000000000001.snapshot", "t-0"} <= synced.names()
    assert log.recovery_point == 1
    log.close()


def test_a_failed_background_flush_moves_nothing_and_the_next_flush_covers_it(tmp_path, monkeypatch):
    flusher = ManualFlusher()
    log = rolled_log(tmp_path, flusher)
    with monkeypatch.context() as sick:
        sick.setattr(os, "fdatasync", lambda fd: (_ for _ in ()).throw(OSError(5, "Input/output error")))
        flusher.run_all()
    assert log.recovery_point == 0
    synced = SyncedFiles(monkeypatch)
    log.flush()
    assert "00000000000000000000.log" in synced.names() and log.recovery_point == log.log_end_offset == 2
    log.close()


def test_a_truncation_forgets_an_unfinished_background_flush(tmp_path):
    flusher = ManualFlusher()
    log = rolled_log(tmp_path, flusher)
    log.truncate_to(0)
    log.append(batch(b"c"), leader_epoch=1)  # offset 0 again, not fsynced by anyone
    flusher.run_all()
    assert log.recovery_point == 0
    log.close()


def test_flush_ms_starts_a_background_flush_and_the_checkpoint_records_where_it_got(tmp_path, monkeypatch):
    flusher = ManualFlusher()
    manager = LogManager([str(tmp_path)], {"flush.ms": 0}, flusher=flusher)
    manager.load()
    log = manager.get_or_create("t", 0)
    log.append(batch(b"x"), leader_epoch=0)
    synced = SyncedFiles(monkeypatch)
    pending = manager.start_dirty_flushes()
    assert len(pending) == 1 and synced.calls == [] and log.recovery_point == 0
    flusher.run_all()
    assert log.recovery_point == 1
    future = manager.checkpoint_later("recovery-point-offset-checkpoint")
    assert not future.done()
    flusher.run_all()
    assert future.done()
    with open(tmp_path / "recovery-point-offset-checkpoint") as f:
        assert f.read().splitlines()[2:] == ["t 0 1"]
    manager.close()


def test_an_older_checkpoint_never_replaces_a_newer_one(tmp_path):
    flusher = ManualFlusher()
    manager = LogManager([str(tmp_path)], flusher=flusher)
    manager.load()
    log = manager.get_or_create("t", 0)
    for value in (b"a", b"b", b"c"):
        log.append(batch(value), leader_epoch=0)
    log.high_watermark = 3
    stale = manager.checkpoint_later("log-start-offset-checkpoint")  # log start offset 0, taken now
    log.delete_records_before(2)
    manager.checkpoint_log_start_offsets()  # DeleteRecords: written at once
    flusher.run_all()  # the stale write comes later and must not bring offset 0 back
    assert stale.done()
    with open(tmp_path / "log-start-offset-checkpoint") as f:
        assert f.read().splitlines()[2:] == ["t 0 2"]
    manager.close()


def test_a_crash_before_the_background_flush_recovers_the_rolled_segment(tmp_path):
    flusher = ManualFlusher()
    manager = LogManager([str(tmp_path)], {"segment.bytes": 300}, flusher=flusher)
    manager.load()
    log = manager.get_or_create("t", 0)
    for value in (b"a" * 150, b"b" * 150, b"c" * 150):
        log.append(batch(value), leader_epoch=0)
    manager.checkpoint_recovery_points()  # records 0: the rolls' flushes have not run
    for _, partition_log in manager.logs():
        partition_log.close_without_flush()  # kill -9
    reopened = LogManager([str(tmp_path)], {"segment.bytes": 300})
    reopened.load()
    log = reopened.get("t", 0)
    # Recovered from offset 0 (the checkpointed recovery point): everything is there again.
    assert (log.log_end_offset, log.recovery_point, len(log.segments)) == (3, 0, 3)
    reopened.close()


def test_a_new_partition_leaves_its_fsyncs_to_the_flusher_unless_a_sync_flush_needs_them_first(tmp_path, monkeypatch):
    synced = SyncedFiles(monkeypatch)
    flusher = ManualFlusher()
    log = PartitionLog(str(tmp_path / "t-0"), {"flush.messages": 1}, flusher=flusher)
    log.leader_epoch_cache.assign(0, 0)  # what a new leader does
    assert synced.calls == [] and len(flusher.jobs) == 2  # the directories; the epoch file
    log.append(batch(b"a"), leader_epoch=0)  # flush.messages=1: durable before it counts
    assert {"00000000000000000000.log", "t-0", os.path.basename(tmp_path)} <= synced.names()
    assert log.recovery_point == 1
    flusher.run_all()
    assert "leader-epoch-checkpoint" in synced.names()
    log.close()


def epoch_lines(log: PartitionLog) -> list[str]:
    with open(os.path.join(log.dir, "leader-epoch-checkpoint")) as f:
        return f.read().splitlines()[2:]


def test_leader_epoch_truncations_are_written_by_the_flusher_and_a_stale_file_is_truncated_on_load(tmp_path):
    flusher = ManualFlusher()
    log = PartitionLog(str(tmp_path / "t-0"), flusher=flusher)
    log.append(batch(b"a"), leader_epoch=0)
    flusher.run_all()
    log.append(batch(b"b"), leader_epoch=1)  # a new epoch: written at once, as Kafka's assign does
    assert epoch_lines(log) == ["0 0", "1 1"] and flusher.jobs == []
    log.truncate_to(1)  # a follower's truncation: epoch 1 goes, the file follows later
    assert log.leader_epoch_cache.entries == [(0, 0)] and epoch_lines(log) == ["0 0", "1 1"]
    log.close_without_flush()  # kill -9 before the flusher ran
    flusher.run_all()  # a dead process writes nothing more
    assert epoch_lines(log) == ["0 0", "1 1"]
    reopened = PartitionLog(log.dir)
    assert reopened.log_end_offset == 1 and reopened.leader_epoch_cache.entries == [(0, 0)]
    reopened.close()


def test_a_clean_close_writes_leader_epoch_truncations_still_waiting_for_the_flusher(tmp_path):
    flusher = ManualFlusher()
    log = PartitionLog(str(tmp_path / "t-0"), flusher=flusher)
    log.append(batch(b"a"), leader_epoch=0)
    log.append(batch(b"b"), leader_epoch=1)
    log.truncate_to(1)
    log.close()
    assert epoch_lines(log) == ["0 0"]


class LaggingFlusher(concurrent.futures.Executor):
    """Runs each job only when the next one is submitted (or on drain): the roll has returned and
    appends went on before its fsyncs ran. All on the test's thread, so crash points stay
    deterministic, and a crash (a BaseException) stops the jobs as it stops everything."""

    jobs_run = 0

    def __init__(self) -> None:
        self.queue: list[tuple[concurrent.futures.Future, object, tuple]] = []

    def submit(self, fn, /, *args, **kwargs):
        self.drain()
        future = concurrent.futures.Future()
        self.queue.append((future, fn, args))
        return future

    def drain(self) -> None:
        queue, self.queue = self.queue, []
        for future, fn, args in queue:
            LaggingFlusher.jobs_run += 1
            try:
                future.set_result(fn(*args))
            except Exception as e:  # noqa: BLE001 - handed to the log like a worker thread would
                future.set_exception(e)


class LaggingLogManager(LogManager):
    def __init__(self, log_dirs, *args, **kwargs):
        super().__init__(log_dirs, *args, flusher=LaggingFlusher(), **kwargs)

    def close(self) -> None:
        self.flusher.drain()
        super().close()


def test_a_crash_at_any_system_call_with_background_flushes_loses_nothing_acknowledged(tmp_path, monkeypatch):
    """The crash-point test of test_log_durability, its logs flushing in the background."""
    made = []

    def log_manager(log_dirs, *args, **kwargs):
        # Each crash point builds the crashing broker's manager, then the restarted one's.
        made.append(log_dirs)
        manager_class = LaggingLogManager if len(made) % 2 else LogManager
        return manager_class(log_dirs, *args, **kwargs)

    monkeypatch.setattr(durability, "LogManager", log_manager)
    crash_at, calls = durability.crash_points(durability.append_workload, durability.check_appends, tmp_path)
    assert calls > 100 and LaggingFlusher.jobs_run > 100, (calls, LaggingFlusher.jobs_run)


# -- the event loop during a roll --------------------------------------------------------------


@pytest.mark.parametrize("flush_on_ack", [True, False])
def test_requests_are_answered_while_a_rolled_segment_is_fsynced(tmp_path, monkeypatch, flush_on_ack):
    """Another connection's request is answered while the fsync of a rolled segment is held back
    (before, it waited for the disk); the produce that rolled is answered once that fsync and its
    own sync are done (log.flush.on.ack: its sync is queued behind the roll's on the flusher), and
    at once with log.flush.on.ack=false."""
    events: list[str] = []
    release, started, hold = threading.Event(), threading.Event(), threading.Event()
    real_fdatasync = os.fdatasync

    def slow_fdatasync(fd):
        # The rolled segment's files (its .log is in sync already when log.flush.on.ack synced it).
        if "/t-0/00000000000000000000." in os.readlink(f"/proc/self/fd/{fd}") and not release.is_set() \
                and hold.is_set():
            events.append("rolled segment fsync started")
            started.set()
            # Bounded: a loop blocked here shows up as the wrong order of events, not as a hang.
            release.wait(5)
            events.append("rolled segment fsync finished")
        real_fdatasync(fd)

    async def scenario():
        broker = Broker(BrokerConfig({"log.dirs": str(tmp_path), "listeners": "PLAINTEXT://127.0.0.1:0",
                                      "log.flush.on.ack": str(flush_on_ack).lower()}))
        broker.load()
        broker.create_topic("t", 1, 1, {"segment.bytes": "1024"})
        monkeypatch.setattr(os, "fdatasync", slow_fdatasync)
        server = KafkaServer(broker)
        broker.server = server
        await server.start()
        address = f"127.0.0.1:{server.bound[0][2]}"
        loop = asyncio.get_running_loop()

        def produce(value: bytes) -> int:
            with WireClient(address) as client:
                response = client.call("Produce", 9, {"acks": -1, "timeout_ms": 5000, "topic_data": [
                    {"name": "t", "partition_data": [{"index": 0, "records": bytes(batch(value))}]}]})
            return response.responses[0].partition_responses[0].error_code

        def metadata() -> None:
            with WireClient(address) as client:
                client.call("Metadata", 12, {"topics": None})

        try:
            assert await loop.run_in_executor(None, produce, b"a" * 600) == 0
            hold.set()  # the first produce's own sync went through: hold the roll's
            rolling = loop.run_in_executor(None, produce, b"b" * 600)  # rolls
            rolling.add_done_callback(lambda _: events.append("produce answered"))
            assert await loop.run_in_executor(None, started.wait, 5)  # the flusher holds the fsync now
            await loop.run_in_executor(None, metadata)
            events.append("metadata answered")
            plog = broker.logs.get("t", 0)
            assert [s.base_offset for s in plog.segments] == [0, 1]
            held = plog.recovery_point
            if not flush_on_ack:
                assert await rolling == 0
            release.set()
            assert await rolling == 0
            pending = plog.pending_flushes()
            if pending:
                await asyncio.wait([asyncio.wrap_future(f) for f in pending], timeout=10)
            return held, plog.recovery_point
        finally:
            release.set()
            await server.stop()
            broker.close()

    held, after = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert "produce answered" in events and "metadata answered" in events
    assert events.index("metadata answered") < events.index("rolled segment fsync finished"), events
    if flush_on_ack:
        assert events.index("rolled segment fsync finished") < events.index("produce answered"), events
        # The first record was synced before its answer; the second once the roll's fsync was done.
        assert held == 1 and after == 2
    else:
        assert held == 0 and after == 1  # the recovery point moved only once the fsync was done


@pytest.fixture(autouse=True)
def _no_leftover_flusher_threads():
    """A closed broker's flusher thread has ended (Broker.close shuts it down)."""
    before = set(threading.enumerate())
    yield
    assert not [t for t in set(threading.enumerate()) - before if t.name.startswith("kafka-wire-log-flusher")]
