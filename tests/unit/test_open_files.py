"""The log's bounded cache of open files (log/open_files.py): idle files closed and reopened on
demand, pinned ones kept, and partition logs that keep working with far fewer descriptors than
segments."""

from __future__ import annotations

import os

import pytest

from kafka_wire.record_codec import Record, build_batch, decode_batches
from log.open_files import OPEN_FILES, OpenFiles
from log.partition_log import PartitionLog


def open_descriptors(under) -> int:
    """This process's descriptors open on files under a directory (other tests' files do not count)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(str(under)):
                count += 1
        except OSError:
            pass
    return count


def test_idle_files_are_closed_least_recently_used_first_and_reopened_on_use(tmp_path):
    cache = OpenFiles(limit=2)
    files = [cache.open(str(tmp_path / f"f{i}"), os.O_RDWR | os.O_CREAT | os.O_APPEND) for i in range(3)]
    assert len(cache) == 2 and not files[0].is_open and files[1].is_open and files[2].is_open
    for round_ in range(3):
        for i, file in enumerate(files):
            os.write(file.fd, b"%d%d" % (round_, i))
            assert len(cache) <= 2
    assert cache.evictions > 0 and cache.reopens > 0
    for i, file in enumerate(files):
        assert os.pread(file.fd, 100, 0) == b"".join(b"%d%d" % (r, i) for r in range(3))
    for file in files:
        file.close()
    assert len(cache) == 0


def test_a_pinned_file_keeps_its_descriptor_through_unlink_and_pressure(tmp_path):
    cache = OpenFiles(limit=1)
    pinned = cache.open(str(tmp_path / "pinned"), os.O_RDWR | os.O_CREAT | os.O_APPEND)
    os.write(pinned.fd, b"still here")
    fd = pinned.pin()
    os.unlink(tmp_path / "pinned")
    others = [cache.open(str(tmp_path / f"o{i}"), os.O_RDWR | os.O_CREAT) for i in range(3)]
    assert pinned.is_open and pinned.fd == fd
    assert os.pread(fd, 100, 0) == b"still here"
    assert len(cache) == 2  # the pinned file beyond the limit, and one other
    pinned.close()  # the owner lets go: the descriptor stays until the pin goes
    assert os.pread(fd, 100, 0) == b"still here"
    pinned.unpin()
    assert not pinned.is_open
    for other in others:
        other.close()
    assert len(cache) == 0


@pytest.fixture
def few_open_files():
    limit = OPEN_FILES.limit
    OPEN_FILES.set_limit(8)
    yield OPEN_FILES
    OPEN_FILES.set_limit(limit)


def test_many_partition_logs_work_with_few_descriptors(tmp_path, few_open_files):
    config = {"segment.bytes": 600, "index.interval.bytes": 100}
    logs = [PartitionLog(str(tmp_path / f"t-{p}"), config) for p in range(40)]
    for round_ in range(10):
        for p, log in enumerate(logs):
            log.append(bytearray(build_batch([Record(0, 0, b"k", b"%d-%d-" % (p, round_) + b"x" * 80)])), leader_epoch=0)
    assert all(len(log.segments) > 2 for log in logs)  # 3 files a segment, far more than 8 descriptors
    assert open_descriptors(tmp_path) <= few_open_files.limit
    assert few_open_files.evictions > 0
    # A slice pins its file: still readable after retention deleted the segment under it.
    held = logs[0].read_slice(0, 1 << 20)
    logs[0].high_watermark = logs[0].log_end_offset
    logs[0].delete_records_before(logs[0].log_end_offset)
    assert not os.path.exists(held.path)
    logs[0].delete_old_segments()
    for log in logs[1:]:
        for batch in range(10):
            first = log.read_slice(batch, 1 << 20)
            values = [r.value for _, records in decode_batches(first.read_bytes()) for r in records]
            first.close()
            assert values[0].startswith(b"%d-%d-" % (logs.index(log), batch))
    assert [r.value[:4] for _, records in decode_batches(held.read_bytes()) for r in records][0] == b"0-0-"
    held.close()
    for log in logs:
        log.close()
    reopened = [PartitionLog(str(tmp_path / f"t-{p}"), config, clean_shutdown=True) for p in range(1, 40)]
    assert [log.log_end_offset for log in reopened] == [10] * 39
    for log in reopened:
        log.close()
    assert open_descriptors(tmp_path) == 0


def test_deleting_a_topic_checkpoints_each_log_dir_once_and_removes_every_directory(tmp_path, monkeypatch):
    """Deleting a topic of 10,000 partitions took minutes: every partition rewrote the three
    checkpoint files (listing every partition) and fsynced the log dir."""
    from log import log_manager
    from log.log_manager import LogManager

    manager = LogManager([str(tmp_path / "a"), str(tmp_path / "b")])
    manager.load()
    for p in range(200):
        manager.get_or_create("big", p)
    manager.get_or_create("kept", 0)
    written = []
    real = log_manager.write_offset_checkpoint
    monkeypatch.setattr(log_manager, "write_offset_checkpoint", lambda path, offsets: (written.append(path),
                                                                                       real(path, offsets)))
    assert len(manager.delete_partitions([("big", p) for p in range(200)] + [("big", 999)])) == 200
    assert len(written) == 6  # three files in each of the two log dirs
    assert manager.partitions() == [("kept", 0)]
    assert sorted(os.listdir(tmp_path / "a")) + sorted(os.listdir(tmp_path / "b")) == [
        "kept-0", "log-start-offset-checkpoint", "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
        "log-start-offset-checkpoint", "recovery-point-offset-checkpoint", "replication-offset-checkpoint"]
    manager.close()
