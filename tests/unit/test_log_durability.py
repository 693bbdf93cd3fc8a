"""Durability of the log: disk errors leave nothing half-written and heal when the disk does;
a crash at any system call (what kill -9 does) loses no acknowledged write and leaves a log that
opens, reads and appends; the same for compaction's segment swap."""

from __future__ import annotations

import errno
import os
import pathlib
import shutil
import tempfile

import pytest

from kafka_wire.record_codec import Record, build_batch, build_control_batch, decode_batches
from log.errors import KafkaStorageError
from log.log_manager import LogManager
from log.partition_log import PartitionLog
from log.producer_state import AppendOrigin

NOW = 1_700_000_000_000


def batch(value: bytes, key: bytes = b"k", **kwargs) -> bytearray:
    return bytearray(build_batch([Record(0, 0, key, value)], base_timestamp=NOW, **kwargs))


def values_of(log: PartitionLog) -> list[tuple[int, bytes]]:
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
            out += [(header.base_offset + r.offset_delta, r.value) for r in records]
            advanced = header.next_offset
        offset = advanced
    return out


def read_records(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None, object]]:
    out = []
    for segment in log.segments:
        for header, records in decode_batches(segment.read_batch(0, segment.size)):
            out += [(header.base_offset + r.offset_delta, r.key, r.value, header) for r in records]
    return out


def disk_error(code: int) -> OSError:
    return OSError(code, os.strerror(code))


class FailingWrites:
    """Makes os.write fail on chosen calls: after writing `partial` bytes (a disk filling up
    mid-write) or at once."""

    def __init__(self, monkeypatch, fail_calls, code=errno.ENOSPC, partial: int = 0):
        self.real = os.write
        self.calls = 0
        self.fail_calls = set(fail_calls)
        self.code = code
        self.partial = partial
        monkeypatch.setattr(os, "write", self)

    def __call__(self, fd, data):
        self.calls += 1
        if self.calls in self.fail_calls:
            if self.partial:
                self.real(fd, bytes(data)[: self.partial])
            raise disk_error(self.code)
        return self.real(fd, data)


@pytest.fixture
def log(tmp_path):
    log = PartitionLog(str(tmp_path / "t-0"), {"segment.bytes": 2000, "index.interval.bytes": 1})
    for i in range(3):
        log.append(batch(b"before-%d" % i), leader_epoch=0)
    yield log
    log.close_without_flush()


# -- storage errors -------------------------------------------------------------------------------


def test_disk_full_mid_write_leaves_nothing_half_written(log, monkeypatch):
    size = os.path.getsize(log.active_segment.log_path)
    FailingWrites(monkeypatch, {1}, errno.ENOSPC, partial=20)
    with pytest.raises(KafkaStorageError, match="No space left"):
        log.append(batch(b"lost"), leader_epoch=0)
    assert os.path.getsize(log.active_segment.log_path) == size
    assert log.log_end_offset == 3 and log.active_segment.size == size
    monkeypatch.undo()  # the disk has room again
    assert log.append(batch(b"after"), leader_epoch=0).base_offset == 3
    assert [v for _, v in values_of(log)] == [b"before-0", b"before-1", b"before-2", b"after"]
    reopened = PartitionLog(log.dir, log.config)  # as after kill -9
    assert [v for _, v in values_of(reopened)] == [b"before-0", b"before-1", b"before-2", b"after"]
    reopened.close_without_flush()


def test_a_failed_index_write_takes_back_the_log_write(log, monkeypatch):
    segment = log.active_segment
    size, entries = segment.size, len(segment.offset_index)
    FailingWrites(monkeypatch, {2}, errno.EIO)  # the log write succeeds, its index entry fails
    with pytest.raises(KafkaStorageError, match="Input/output error"):
        log.append(batch(b"lost"), leader_epoch=0)
    assert os.path.getsize(segment.log_path) == size and len(segment.offset_index) == entries
    assert os.path.getsize(segment.offset_index.path) == entries * 8
    monkeypatch.undo()
    assert log.append(batch(b"after"), leader_epoch=0).base_offset == 3
    reopened = PartitionLog(log.dir, log.config, clean_shutdown=True)
    assert reopened.active_segment.indexes_valid
    assert [v for _, v in values_of(reopened)][-1] == b"after"
    reopened.close_without_flush()


def test_when_even_the_truncate_fails_the_next_append_cuts_the_tail_first(log, monkeypatch):
    segment = log.active_segment
    size = segment.size
    FailingWrites(monkeypatch, {1}, errno.EIO, partial=30)
    monkeypatch.setattr(os, "ftruncate", lambda fd, length: (_ for _ in ()).throw(disk_error(errno.EIO)))
    with pytest.raises(KafkaStorageError):
        log.append(batch(b"lost"), leader_epoch=0)
    assert os.path.getsize(segment.log_path) == size + 30  # the torn bytes are still there...
    assert log.read_slice(2, 1 << 20).length == size - log.read_slice(2, 1 << 20).position  # ...never read
    with pytest.raises(KafkaStorageError):  # still sick: nothing is written behind the torn bytes
        log.append(batch(b"lost too"), leader_epoch=0)
    assert os.path.getsize(segment.log_path) == size + 30
    monkeypatch.undo()
    assert log.append(batch(b"after"), leader_epoch=0).base_offset == 3
    assert os.path.getsize(segment.log_path) == segment.size
    reopened = PartitionLog(log.dir, log.config)
    assert [v for _, v in values_of(reopened)] == [b"before-0", b"before-1", b"before-2", b"after"]
    reopened.close_without_flush()


def test_a_read_only_filesystem_during_a_roll_keeps_the_log_usable(tmp_path, monkeypatch):
    log = PartitionLog(str(tmp_path / "t-0"), {"segment.bytes": 200})
    log.append(batch(b"x" * 100), leader_epoch=0)
    real_open = os.open

    def read_only_open(path, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            raise disk_error(errno.EROFS)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only_open)
    with pytest.raises(KafkaStorageError, match="Read-only file system"):
        log.append(batch(b"y" * 100), leader_epoch=0)  # needs a new segment
    assert len(log.segments) == 1 and log.log_end_offset == 1
    monkeypatch.undo()
    assert log.append(batch(b"y" * 100), leader_epoch=0).base_offset == 1
    assert len(log.segments) == 2
    assert not [n for n in os.listdir(log.dir) if n.endswith((".tmp", ".deleted"))]
    log.close_without_flush()


def test_a_failed_fsync_under_flush_messages_1_takes_the_append_back(tmp_path, monkeypatch):
    log = PartitionLog(str(tmp_path / "t-0"), {"flush.messages": 1})
    log.append(batch(b"kept"), leader_epoch=0)
    size = log.active_segment.size
    monkeypatch.setattr(os, "fdatasync", lambda fd: (_ for _ in ()).throw(disk_error(errno.EIO)))
    with pytest.raises(KafkaStorageError, match="fsync"):
        log.append(batch(b"not durable"), leader_epoch=0)
    assert (log.log_end_offset, log.recovery_point, log.active_segment.size) == (1, 1, size)
    monkeypatch.undo()
    assert log.append(batch(b"durable"), leader_epoch=0).base_offset == 1
    assert log.recovery_point == 2
    assert [v for _, v in values_of(log)] == [b"kept", b"durable"]
    log.close_without_flush()


def test_a_failed_leader_epoch_checkpoint_appends_nothing(log, monkeypatch):
    FailingWrites(monkeypatch, {1}, errno.ENOSPC)  # the first write is the new epoch's checkpoint
    with pytest.raises(KafkaStorageError):
        log.append(batch(b"epoch 1"), leader_epoch=1)
    assert log.log_end_offset == 3 and log.latest_epoch() == 0
    monkeypatch.undo()
    assert log.append(batch(b"epoch 1"), leader_epoch=1).base_offset == 3
    assert log.latest_epoch() == 1 and log.end_offset_for_epoch(0) == (0, 3)


def test_an_idempotent_batch_that_hit_a_full_disk_can_be_retried(log, monkeypatch):
    first = batch(b"p0", producer_id=5, producer_epoch=0, base_sequence=0)
    log.append(first, leader_epoch=0)
    second = batch(b"p1", producer_id=5, producer_epoch=0, base_sequence=1)
    FailingWrites(monkeypatch, {1}, errno.ENOSPC, partial=10)
    with pytest.raises(KafkaStorageError):
        log.append(bytearray(second), leader_epoch=0)
    monkeypatch.undo()
    # The failed attempt left no producer state behind: the retry is in sequence, not a duplicate.
    info = log.append(bytearray(second), leader_epoch=0)
    assert not info.duplicate and info.base_offset == 4
    assert log.append(bytearray(second), leader_epoch=0).duplicate


# -- crash at any system call ---------------------------------------------------------------------


class Crash(BaseException):
    """The process died here (not an Exception: no handler of the code under test catches it)."""


class SyscallKiller:
    """Counts the system calls that change the disk; at call `crash_at` the process "dies": that
    call is cut short (a write gets half its bytes) and every later one fails too, as after
    kill -9 nothing more reaches the files."""

    CHANGING_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC

    def __init__(self, patcher: pytest.MonkeyPatch, crash_at: int | None):
        self.crash_at = crash_at
        self.calls = 0
        self.dead = False
        for name in ("write", "ftruncate", "fsync", "fdatasync", "rename", "replace", "unlink", "mkdir", "rmdir"):
            patcher.setattr(os, name, self._gate(name, getattr(os, name)))
        real_open = os.open

        def open_(path, flags, *args, **kwargs):
            if flags & self.CHANGING_FLAGS:
                self._tick("open")
            return real_open(path, flags, *args, **kwargs)

        patcher.setattr(os, "open", open_)

    def _gate(self, name, real):
        def call(*args, **kwargs):
            if self._tick(name) and name == "write" and len(args[1]) > 1:
                real(args[0], bytes(args[1])[: len(args[1]) // 2])
            if self.dead:
                raise Crash(name)
            return real(*args, **kwargs)

        return call

    def _tick(self, name) -> bool:
        """True when this call is the one the process dies in."""
        if self.dead:
            raise Crash(name)
        self.calls += 1
        if self.calls == self.crash_at:
            self.dead = True
            if name != "write":
                raise Crash(name)
            return True
        return False


def abandon(manager: LogManager) -> None:
    """Drop a dead process's objects: close descriptors without writing anything."""
    for _, log in manager.logs():
        log.close_without_flush()


def crash_points(workload, check, tmp_path, prepare=None, limit=2000):
    """Run `workload(manager, journal)` once per crash point, then `check(manager, journal)` on
    the reopened log dir; until a run completes without reaching its crash point. `prepare(dir)`
    sets up each run's log dir beforehand (not counted).

    kill -9 keeps the page cache, so fsync changes nothing a restarted process can see: it is
    a crash point like any other but skipped here, which makes the hundreds of runs fast."""
    # Hundreds of runs create and remove thousands of files: memory is the place for them.
    base = tempfile.mkdtemp(prefix="kw-crash-points-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        with pytest.MonkeyPatch.context() as no_fsync:
            no_fsync.setattr(os, "fsync", lambda fd: None)
            no_fsync.setattr(os, "fdatasync", lambda fd: None)
            return _crash_points(workload, check, pathlib.Path(base), prepare, limit)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _crash_points(workload, check, tmp_path, prepare, limit):
    for crash_at in range(1, limit):
        data = tmp_path / f"crash-{crash_at}"
        if prepare is not None:
            prepare(data)
        journal = {}
        manager = LogManager([str(data)])
        with pytest.MonkeyPatch.context() as patcher:
            killer = SyscallKiller(patcher, crash_at)
            try:
                manager.load()
                workload(manager, journal)
                completed = True
            except Crash:
                completed = False
        abandon(manager)
        reopened = LogManager([str(data)])
        reopened.load()
        try:
            check(reopened, journal, crash_at)
        finally:
            reopened.close()
        if completed:
            return crash_at, killer.calls
    raise AssertionError("the workload never completed")


APPEND_CONFIG = {"segment.bytes": 500, "index.interval.bytes": 100, "flush.ms": 0, "retention.ms": 1000}
PRODUCER = 77


def producer_batch(seq: int) -> bytearray:
    return batch(b"value-%d" % seq, producer_id=PRODUCER, producer_epoch=0, base_sequence=seq)


def append_workload(manager: LogManager, journal: dict) -> None:
    acked = journal.setdefault("acked", {})
    journal["start"] = 0
    log = manager.get_or_create("t", 0, APPEND_CONFIG)
    for seq in range(24):
        journal["in_flight"] = seq
        info = log.append(producer_batch(seq), leader_epoch=0 if seq < 12 else 1)
        log.high_watermark = log.log_end_offset
        acked[info.base_offset] = b"value-%d" % seq
        if seq % 5 == 4:
            manager.flush_dirty_logs()
        if seq == 15:
            journal["deleting"] = 4
            log.delete_records_before(4)
            manager.flush_dirty_logs()  # writes the log start offset checkpoint: now acknowledged
            journal["start"] = 4
    journal["in_flight"] = None
    manager.close()


def check_appends(manager: LogManager, journal: dict, crash_at: int) -> None:
    log = manager.get_or_create("t", 0, APPEND_CONFIG)
    where = f"after a crash at system call {crash_at}"
    found = dict(values_of(log))
    acked = journal.get("acked", {})
    start = journal.get("start", 0)
    # A DeleteRecords under way when the process died may or may not have happened.
    assert start <= log.log_start_offset <= max(start, journal.get("deleting", 0)), where
    for offset, value in acked.items():
        if offset >= log.log_start_offset:
            assert found.get(offset) == value, f"acknowledged offset {offset} lost {where}"
    assert set(found.values()) <= {b"value-%d" % seq for seq in range(24)}, where
    assert list(found) == sorted(found), where
    # The producer retries what was in flight: appended once, never out of sequence, never twice.
    in_flight = journal.get("in_flight")
    if in_flight is not None:
        retried = log.append(producer_batch(in_flight), leader_epoch=1)
        values = [v for _, v in values_of(log)]
        assert values.count(b"value-%d" % in_flight) == 1, where
        assert retried.duplicate == (b"value-%d" % in_flight in found.values()), where
        log.append(producer_batch(in_flight + 1), leader_epoch=1)
    log.append(batch(b"afterwards"), leader_epoch=1)
    assert values_of(log)[-1][1] == b"afterwards", where
    assert not [n for n in os.listdir(log.dir) if n.endswith((".deleted", ".cleaned", ".swap", ".tmp"))], where


def test_a_crash_at_any_system_call_of_appends_rolls_flushes_and_deletions_loses_nothing_acknowledged(tmp_path):
    crash_at, calls = crash_points(append_workload, check_appends, tmp_path)
    print(f"{crash_at - 1} crash points")
    assert calls > 100  # the workload really exercised rolls, checkpoints, snapshots and deletions


CONTROL = "transaction marker"
COMPACT_CONFIG = {"cleanup.policy": "compact", "segment.bytes": 400, "index.interval.bytes": 100,
                  "delete.retention.ms": 0}


def compaction_log(manager: LogManager) -> PartitionLog:
    log = manager.get_or_create("c", 0, COMPACT_CONFIG)
    return log


def prepare_compaction(data_dir) -> dict[int, tuple[bytes, bytes | None]]:
    manager = LogManager([str(data_dir)])
    manager.load()
    log = compaction_log(manager)
    written = {}
    for i in range(24):
        key, value = b"key-%d" % (i % 5), (None if i % 9 == 8 else b"value-%d" % i)
        if i in (6, 14):  # transactions of producer 3: aborted, then committed
            info = log.append(batch(value, key=key, producer_id=3, producer_epoch=0, base_sequence=i // 14,
                                    is_transactional=True), leader_epoch=0)
            written[info.base_offset] = (key, value)
            marker = build_control_batch(i == 14, 3, 0, 0, timestamp=NOW)
            info = log.append(bytearray(marker), leader_epoch=0, origin=AppendOrigin.COORDINATOR)
            written[info.base_offset] = CONTROL
            continue
        info = log.append(batch(value, key=key), leader_epoch=0)
        written[info.base_offset] = (key, value)
    log.high_watermark = log.log_end_offset
    log.roll()
    manager.close()
    return written


def table_from(pairs) -> dict:
    table = {}
    for key, value in pairs:
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
    return table


def test_a_crash_at_any_system_call_of_a_compaction_swap_keeps_the_table(tmp_path):
    template = tmp_path / "template"
    written = prepare_compaction(template)
    # The aborted transaction's record (offset 6) is not part of the table.
    expected = table_from(written[o] for o in sorted(written) if written[o] is not CONTROL and o != 6)
    end = max(written) + 1

    def workload(manager, journal):
        log = compaction_log(manager)
        manager.cleaner.clean_log(log)  # cleans each segment group and swaps it in
        manager.cleaner.clean_log(log)  # merges the cleaned groups, drops tombstones
        manager.close()

    def check(manager, journal, crash_at):
        where = f"after a crash at system call {crash_at}"
        log = compaction_log(manager)
        records = read_records(log)
        offsets = [offset for offset, _, _, _ in records]
        assert offsets == sorted(set(offsets)), where
        for offset, key, value, header in records:
            assert written[offset] == (CONTROL if header.is_control else (key, value)), f"offset {offset} {where}"
        data = [(offset, k, v) for offset, k, v, h in records if not h.is_control]
        assert table_from((k, v) for offset, k, v in data if offset != 6) == expected, where
        # Every aborted transaction still indexed has its ABORT marker in the log, and its record
        # is indexed as long as it is there.
        markers = {offset for offset, _, _, h in records if h.is_control}
        indexed = log.collect_aborted_transactions(0, end)
        assert all(entry.last_offset in markers for entry in indexed), where
        if any(offset == 6 for offset, _, _ in data):
            assert [(e.producer_id, e.first_offset) for e in indexed] == [(3, 6)], where
        assert log.log_end_offset == end, where
        assert not [n for n in os.listdir(log.dir) if n.endswith((".deleted", ".cleaned", ".swap"))], where
        manager.cleaner.clean_log(log)  # and the recovered log cleans again
        assert table_from((k, v) for _, k, v, h in read_records(log) if not h.is_control) == expected, where

    def copy_of_template(data_dir):
        shutil.copytree(template, data_dir)

    crash_at, calls = crash_points(workload, check, tmp_path, prepare=copy_of_template)
    print(f"{crash_at - 1} crash points")
    assert calls > 50
