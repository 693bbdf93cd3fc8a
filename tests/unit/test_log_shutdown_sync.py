"""LogManager.close on a local file system: every log is closed without an fsync of its own, one
syncfs of the log dir's file system follows, and only then the checkpoints and the clean-shutdown
marker are written; elsewhere each log is fsynced as it closes; a failed syncfs writes no marker."""

from __future__ import annotations

import errno
import os

import pytest

import log.flusher as flusher_module
import log.log_manager as log_manager_module
from kafka_wire.record_codec import Record, build_batch
from log.checkpoints import CLEAN_SHUTDOWN_MARKER, RECOVERY_POINT_CHECKPOINT
from log.errors import KafkaStorageError
from log.log_manager import LogManager, clean_shutdown_marked

NOW = 1_700_000_000_000


class Syscalls:
    """Records fsync, fdatasync and syncfs calls in order, with the file each reached."""

    def __init__(self, monkeypatch, fail_syncfs: bool = False) -> None:
        self.calls: list[tuple[str, str]] = []
        for name in ("fsync", "fdatasync"):
            real = getattr(os, name)

            def record(fd, real=real, name=name):
                self.calls.append((name, os.readlink(f"/proc/self/fd/{fd}")))
                return real(fd)

            monkeypatch.setattr(os, name, record)

        def syncfs(fd):
            self.calls.append(("syncfs", os.readlink(f"/proc/self/fd/{fd}")))
            if fail_syncfs:
                raise OSError(errno.EIO, "I/O error")

        monkeypatch.setattr(flusher_module, "syncfs", syncfs)


def _manager_with_data(data) -> LogManager:
    manager = LogManager([str(data)])
    manager.load()
    for partition in range(3):
        log = manager.get_or_create("t", partition, {})
        for i in range(5):
            log.append(bytearray(build_batch([Record(0, 0, b"k", b"v%d" % i)], base_timestamp=NOW)), leader_epoch=0)
        log.high_watermark = log.log_end_offset
    return manager


def test_on_a_local_file_system_one_syncfs_comes_before_the_checkpoints_and_the_marker(tmp_path, monkeypatch):
    data = tmp_path / "data"
    manager = _manager_with_data(data)
    monkeypatch.setattr(log_manager_module, "syncfs_usable", lambda path: True)
    calls = Syscalls(monkeypatch).calls
    manager.close()
    kinds = [kind for kind, _ in calls]
    first_syncfs = kinds.index("syncfs")
    assert kinds.count("syncfs") == 1 and calls[first_syncfs][1] == str(data)
    # Nothing of a partition was fsynced on its own; after the syncfs only checkpoint files and
    # the log dir (their renames, the marker).
    assert not any(f"{os.sep}t-" in path for _, path in calls[:first_syncfs])
    after = [os.path.basename(path) for _, path in calls[first_syncfs + 1:]]
    assert RECOVERY_POINT_CHECKPOINT + ".tmp" in after and CLEAN_SHUTDOWN_MARKER + ".tmp" in after
    assert not any(name.endswith((".log", ".index", ".timeindex", ".snapshot")) for name in after)
    monkeypatch.undo()
    reopened = LogManager([str(data)])
    assert clean_shutdown_marked([str(data)])
    reopened.load()
    for partition in range(3):
        log = reopened.get("t", partition)
        assert log.log_end_offset == 5 and log.recovery_point == 5
    reopened.close()


def test_elsewhere_every_log_is_fsynced_as_it_closes(tmp_path, monkeypatch):
    data = tmp_path / "data"
    manager = _manager_with_data(data)
    monkeypatch.setattr(log_manager_module, "syncfs_usable", lambda path: False)
    calls = Syscalls(monkeypatch).calls
    manager.close()
    assert "syncfs" not in [kind for kind, _ in calls]
    for partition in range(3):
        assert any(path.endswith(".log") and f"t-{partition}" in path for kind, path in calls if kind == "fdatasync")
    assert clean_shutdown_marked([str(data)])


def test_a_failed_syncfs_writes_no_marker(tmp_path, monkeypatch):
    data = tmp_path / "data"
    manager = _manager_with_data(data)
    monkeypatch.setattr(log_manager_module, "syncfs_usable", lambda path: True)
    Syscalls(monkeypatch, fail_syncfs=True)
    with pytest.raises(KafkaStorageError):
        manager.close()
    assert not clean_shutdown_marked([str(data)])
