"""log/flusher.py: path syncs queued back to back coalesce into one job that syncs each path once
(one syncfs with whole_file_system), jobs keep their order, errors reach every caller of the job.

A first job that waits on an Event holds the flusher thread, so the test decides what is queued
while it runs."""

from __future__ import annotations

import errno
import os
import threading

import pytest

import log.flusher as flusher_module
from log.flusher import LogFlusher, sync_paths_on
from log.partition_log import PartitionLog
from test_log_background_flush import NOW, ManualFlusher, batch


class Recorded:
    """What the flusher synced, in order: ("file"|"dir"|"syncfs", path)."""

    def __init__(self, monkeypatch) -> None:
        self.calls: list[tuple[str, str]] = []
        monkeypatch.setattr(flusher_module, "fsync_file_if_exists", lambda p: self.calls.append(("file", p)))
        monkeypatch.setattr(flusher_module, "fsync_directory_if_exists", lambda p: self.calls.append(("dir", p)))
        monkeypatch.setattr(flusher_module, "syncfs", lambda fd: self.calls.append(
            ("syncfs", os.readlink(f"/proc/self/fd/{fd}"))))


def _held(flusher: LogFlusher) -> threading.Event:
    """Occupy the flusher's thread until the returned event is set."""
    release = threading.Event()
    started = threading.Event()

    def hold() -> None:
        started.set()
        release.wait(10)

    flusher.submit(hold)
    assert started.wait(10)
    return release


@pytest.fixture
def flusher():
    f = LogFlusher()
    yield f
    f.shutdown()


def test_path_syncs_queued_together_run_as_one_job_each_path_once(tmp_path, monkeypatch, flusher):
    recorded = Recorded(monkeypatch)
    parent = str(tmp_path)
    release = _held(flusher)
    futures = [flusher.sync_paths([f"{parent}/p{i}/leader-epoch-checkpoint"], [f"{parent}/p{i}", parent])
               for i in range(3)]
    assert len({id(f) for f in futures}) == 1  # one job for the three
    assert not futures[0].done()
    release.set()
    futures[0].result(10)
    assert flusher.path_syncs == 3 and flusher.path_sync_jobs == 1
    assert recorded.calls == [("file", f"{parent}/p{i}/leader-epoch-checkpoint") for i in range(3)] + \
        [("dir", f"{parent}/p0"), ("dir", parent), ("dir", f"{parent}/p1"), ("dir", f"{parent}/p2")]


def test_a_job_submitted_between_path_syncs_keeps_its_place(tmp_path, monkeypatch, flusher):
    recorded = Recorded(monkeypatch)
    release = _held(flusher)
    first = flusher.sync_paths([], [str(tmp_path / "a")])
    flusher.submit(lambda: recorded.calls.append(("job", "x")))
    second = flusher.sync_paths([], [str(tmp_path / "b")])
    third = flusher.sync_paths([], [str(tmp_path / "c")])
    assert first is not second and second is third
    release.set()
    third.result(10)
    assert recorded.calls == [("dir", str(tmp_path / "a")), ("job", "x"), ("dir", str(tmp_path / "b")),
                              ("dir", str(tmp_path / "c"))]


def test_a_path_sync_after_its_job_started_gets_a_new_job(tmp_path, monkeypatch, flusher):
    recorded = Recorded(monkeypatch)
    flusher.sync_paths([], [str(tmp_path / "a")]).result(10)
    flusher.sync_paths([], [str(tmp_path / "b")]).result(10)
    assert flusher.path_sync_jobs == 2
    assert recorded.calls == [("dir", str(tmp_path / "a")), ("dir", str(tmp_path / "b"))]


def test_with_whole_file_system_a_joined_job_is_one_syncfs(tmp_path, monkeypatch):
    recorded = Recorded(monkeypatch)
    monkeypatch.setattr(LogFlusher, "_syncfs_ok", lambda self, device, path: True)
    for name in ("p0", "p1"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "leader-epoch-checkpoint").write_text("0\n0\n")
    flusher = LogFlusher(whole_file_system=True)
    try:
        release = _held(flusher)
        future = None
        for name in ("p0", "p1"):
            future = flusher.sync_paths([str(tmp_path / name / "leader-epoch-checkpoint")],
                                        [str(tmp_path / name), str(tmp_path)])
        release.set()
        future.result(10)
        assert [kind for kind, _ in recorded.calls] == ["syncfs"]
        # One path alone is fsynced: cheaper than writing back the whole file system.
        recorded.calls.clear()
        flusher.sync_paths([], [str(tmp_path / "p0")]).result(10)
        assert recorded.calls == [("dir", str(tmp_path / "p0"))]
    finally:
        flusher.shutdown()


def test_without_whole_file_system_every_path_is_fsynced(tmp_path, monkeypatch, flusher):
    recorded = Recorded(monkeypatch)
    monkeypatch.setattr(LogFlusher, "_syncfs_ok", lambda self, device, path: True)
    release = _held(flusher)
    future = None
    for name in ("p0", "p1", "p2"):
        (tmp_path / name).mkdir()
        future = flusher.sync_paths([], [str(tmp_path / name)])
    release.set()
    future.result(10)
    assert [kind for kind, _ in recorded.calls] == ["dir", "dir", "dir"]


def test_a_failed_sync_fails_every_caller_of_the_job_and_the_next_job_works(tmp_path, monkeypatch, flusher):
    failing = {"on": True}

    def fsync_dir(path):
        if failing["on"]:
            raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(flusher_module, "fsync_directory_if_exists", fsync_dir)
    release = _held(flusher)
    futures = [flusher.sync_paths([], [str(tmp_path / name)]) for name in ("a", "b")]
    release.set()
    for future in futures:
        with pytest.raises(OSError):
            future.result(10)
    failing["on"] = False
    assert flusher.sync_paths([], [str(tmp_path / "a")]).result(10) is None


def test_a_path_gone_before_the_job_runs_is_skipped(tmp_path, flusher):
    """The real fsyncs: a deleted partition's directory is no error."""
    (tmp_path / "kept").mkdir()
    assert flusher.sync_paths([str(tmp_path / "gone" / "file")],
                              [str(tmp_path / "gone"), str(tmp_path / "kept")]).result(10) is None


def test_after_shutdown_or_on_another_executor_the_fallback_runs(tmp_path):
    ran = []

    def fallback():
        ran.append(True)
        return "fallback"

    flusher = LogFlusher()
    flusher.shutdown()
    assert sync_paths_on(flusher, [], [str(tmp_path)], fallback) == "fallback"
    assert sync_paths_on(None, [], [str(tmp_path)], fallback) == "fallback"
    assert sync_paths_on(ManualFlusher(), [], [str(tmp_path)], fallback) == "fallback"
    assert len(ran) == 3


def _directories_of_first_sync(log: PartitionLog) -> list[str]:
    target, fds, paths, directories = log.sync_job(descriptors=True)
    for fd in fds:
        os.close(fd)
    return directories


def test_a_new_partitions_first_sync_leaves_out_the_directory_its_creation_synced(tmp_path):
    flusher = ManualFlusher()
    log = PartitionLog(tmp_path / "logs" / "t-0", clock_ms=lambda: NOW, flusher=flusher)
    log.append(batch(b"v" * 100), leader_epoch=0)
    # The creation's job has not run: the first sync names both directories itself.
    assert _directories_of_first_sync(log) == [log.dir, str(tmp_path / "logs")]
    flusher.run_all()
    assert _directories_of_first_sync(log) == []
    log.close()


def test_after_a_truncation_the_first_segment_is_a_new_name_again(tmp_path):
    flusher = ManualFlusher()
    log = PartitionLog(tmp_path / "logs" / "t-0", clock_ms=lambda: NOW, flusher=flusher)
    flusher.run_all()
    log.append(batch(b"v" * 100), leader_epoch=0)
    log.truncate_fully_and_start_at(0)
    log.append(batch(b"w" * 100), leader_epoch=0)
    assert _directories_of_first_sync(log) == [log.dir]
    log.close()
