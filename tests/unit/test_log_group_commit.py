"""log/group_commit.py: acknowledged appends wait for a sync, one sync at a time covers every
append that came while the previous one ran, recovery points follow what was synced.

The flusher is the ManualFlusher of test_log_background_flush (its jobs run when the test says),
and the event loop's call_soon_threadsafe a list the test runs, so every step is in the test's
order, not in time's.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from log.flusher import SYNCFS_FILE_SYSTEMS, file_system_type
from log.group_commit import SYNCFS_FROM_DIRTY_LOGS, GroupCommit, _sync_log_dirs
from log.partition_log import PartitionLog
from test_log_background_flush import NOW, ManualFlusher, batch


class Loop:
    """call_soon_threadsafe's stand-in: what the flusher's jobs hand back, run by `run`."""

    def __init__(self) -> None:
        self.callbacks = []

    def call_soon_threadsafe(self, callback) -> None:
        self.callbacks.append(callback)

    def run(self) -> None:
        callbacks, self.callbacks = self.callbacks, []
        for callback in callbacks:
            callback()


def _log(tmp_path, name: str, flusher) -> PartitionLog:
    return PartitionLog(tmp_path / "logs" / name, clock_ms=lambda: NOW, flusher=flusher)


def _append(log: PartitionLog, count: int = 1) -> None:
    for _ in range(count):
        log.append(batch(b"v" * 100), leader_epoch=0)


def _syncs_queued(flusher: ManualFlusher) -> int:
    """Group commits among the flusher's jobs (a log's first leader epoch queues one of its own)."""
    return sum(1 for _, fn, _ in flusher.jobs if fn is _sync_log_dirs)


def _step(flusher: ManualFlusher, loop: Loop) -> None:
    """The flusher runs what it was given, then the loop what the jobs handed back."""
    flusher.run_all()
    loop.run()


def test_an_append_counts_as_synced_only_once_the_sync_has_run(tmp_path):
    flusher, loop = ManualFlusher(), Loop()
    log = _log(tmp_path, "t-0", flusher)
    commits = GroupCommit(flusher, loop.call_soon_threadsafe)
    flusher.run_all()  # the new directory's job
    _append(log, 3)
    answers = []
    commits.when_synced([log], answers.append)
    assert answers == [] and log.recovery_point == 0  # nothing synced yet: no answer, no recovery point
    _step(flusher, loop)
    assert answers == [{}] and log.recovery_point == 3 and commits.syncs == 1


def test_appends_during_a_sync_share_the_next_one(tmp_path):
    flusher, loop = ManualFlusher(), Loop()
    a, b = _log(tmp_path, "t-0", flusher), _log(tmp_path, "t-1", flusher)
    commits = GroupCommit(flusher, loop.call_soon_threadsafe)
    flusher.run_all()
    answers = []
    _append(a)
    commits.when_synced([a], lambda failed: answers.append(("first", failed)))
    # While the first sync runs, three more callers come, over both logs.
    for name, log in (("second", a), ("third", b), ("fourth", a)):
        _append(log)
        commits.when_synced([log], lambda failed, name=name: answers.append((name, failed)))
    assert _syncs_queued(flusher) == 1  # one sync at a time
    _step(flusher, loop)
    assert answers == [("first", {})]
    assert a.recovery_point == 1 and b.recovery_point == 0  # the first sync covered only what it saw
    assert _syncs_queued(flusher) == 1  # the next sync started as the first ended, for all who waited
    _step(flusher, loop)
    assert answers[1:] == [("second", {}), ("third", {}), ("fourth", {})]
    assert (a.recovery_point, b.recovery_point) == (3, 1)
    assert commits.syncs == 2 and not flusher.jobs


def test_a_few_dirty_logs_are_fdatasynced_more_share_one_syncfs(tmp_path, monkeypatch):
    flusher, loop = ManualFlusher(), Loop()
    logs = [_log(tmp_path, f"t-{i}", flusher) for i in range(SYNCFS_FROM_DIRTY_LOGS)]
    commits = GroupCommit(flusher, loop.call_soon_threadsafe)
    flusher.run_all()
    synced_files = []
    real_fdatasync = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced_files.append(os.readlink(f"/proc/self/fd/{fd}")),
                                                      real_fdatasync(fd))[1])
    _append(logs[0])
    commits.when_synced([logs[0]], lambda failed: None)
    _step(flusher, loop)
    assert [os.path.basename(path) for path in synced_files] == ["00000000000000000000.log"]
    assert commits.filesystem_syncs == 0
    synced_files.clear()
    for log in logs:
        _append(log)
    answers = []
    commits.when_synced(logs, answers.append)
    _step(flusher, loop)
    assert answers == [{}] and synced_files == []  # one syncfs of the log dir's file system instead
    assert commits.filesystem_syncs == 1 and commits.synced_logs == 1 + SYNCFS_FROM_DIRTY_LOGS
    assert [log.recovery_point for log in logs] == [2] + [1] * (SYNCFS_FROM_DIRTY_LOGS - 1)


def test_a_failed_sync_fails_its_callers_and_moves_no_recovery_point(tmp_path, monkeypatch):
    flusher, loop = ManualFlusher(), Loop()
    log = _log(tmp_path, "t-0", flusher)
    commits = GroupCommit(flusher, loop.call_soon_threadsafe)
    flusher.run_all()
    _append(log, 2)

    def failing_fdatasync(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", failing_fdatasync)
    answers = []
    commits.when_synced([log], answers.append)
    _step(flusher, loop)
    assert len(answers) == 1 and isinstance(answers[0][log], OSError) and answers[0][log].errno == errno.EIO
    assert log.recovery_point == 0
    monkeypatch.undo()
    _append(log)
    commits.when_synced([log], answers.append)
    _step(flusher, loop)
    assert answers[1] == {} and log.recovery_point == 3  # the next sync covered the whole range again


def test_a_log_whose_range_an_earlier_flush_job_covers_waits_for_that_job(tmp_path):
    flusher, loop = ManualFlusher(), Loop()
    log = _log(tmp_path, "t-0", flusher)
    commits = GroupCommit(flusher, loop.call_soon_threadsafe)
    flusher.run_all()
    _append(log, 2)
    log.roll()  # its background flush covers [0, 2) and is queued first
    answers = []
    commits.when_synced([log], answers.append)
    assert answers == []
    _step(flusher, loop)
    assert answers == [{}] and log.recovery_point == 2


def test_an_append_fsynced_by_flush_messages_waits_for_no_sync(tmp_path):
    flusher, loop = ManualFlusher(), Loop()
    log = PartitionLog(tmp_path / "logs" / "t-0", {"flush.messages": 1}, clock_ms=lambda: NOW, flusher=flusher)
    commits = GroupCommit(flusher, loop.call_soon_threadsafe)
    flusher.run_all()
    _append(log)
    answers = []
    commits.when_synced([log], answers.append)
    assert answers == [{}] and _syncs_queued(flusher) == 0 and commits.syncs == 0


def test_without_a_flusher_the_sync_runs_on_the_callers_thread(tmp_path):
    log = _log(tmp_path, "t-0", None)
    commits = GroupCommit(None)
    _append(log, 2)
    answers = []
    commits.when_synced([log], answers.append)
    assert answers == [{}] and log.recovery_point == 2


def test_on_a_file_system_outside_the_syncfs_list_every_log_is_fdatasynced(tmp_path):
    """tmpfs stands in for the file systems syncfs does not reach (FUSE, as the faults suite's
    lazyfs): however many logs are dirty, each gets its own fdatasync."""
    if file_system_type("/dev/shm") != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm")
    assert file_system_type(str(tmp_path)) in SYNCFS_FILE_SYSTEMS  # pytest's tmp dir is on the disk here
    shm = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        flusher, loop = ManualFlusher(), Loop()
        logs = [_log(shm, f"t-{i}", flusher) for i in range(SYNCFS_FROM_DIRTY_LOGS + 2)]
        commits = GroupCommit(flusher, loop.call_soon_threadsafe)
        flusher.run_all()
        for log in logs:
            _append(log)
        answers = []
        commits.when_synced(logs, answers.append)
        _step(flusher, loop)
        assert answers == [{}] and commits.filesystem_syncs == 0
        assert [log.recovery_point for log in logs] == [1] * len(logs)
        for log in logs:
            log.close()
    finally:
        shutil.rmtree(shm)
