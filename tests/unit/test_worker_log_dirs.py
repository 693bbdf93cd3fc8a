"""Log dirs shared by the workers of the multi-process broker: each worker's LogManager opens only
its own partitions and writes `<checkpoint>.worker-<i>` files; the supervisor merges them into the
main checkpoint files and keeps the clean-shutdown marker; a plain LogManager then loads it all."""

from __future__ import annotations

import logging
import os

import pytest

from kafka_wire.record_codec import Record, build_batch, decode_batches
from log.checkpoints import (
    CLEAN_SHUTDOWN_MARKER,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from log.cleaner import CLEANER_OFFSET_CHECKPOINT
from log.log_manager import (
    WORKER_CHECKPOINT_NAMES,
    LogManager,
    clean_shutdown_marked,
    merge_worker_checkpoints,
    remove_clean_shutdown_markers,
    worker_checkpoint_name,
    write_clean_shutdown_markers,
)
from log.partition_log import PartitionLog, deleted_dir_name

NOW = 1_700_000_000_000
OFFSET_FILES = (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT)


def owns_even(topic: str, partition: int) -> bool:
    return partition % 2 == 0


def owns_odd(topic: str, partition: int) -> bool:
    return partition % 2 == 1


def worker(dirs, i, **kwargs) -> LogManager:
    manager = LogManager(dirs, {"segment.bytes": 1000}, owns=owns_even if i == 0 else owns_odd, worker=i, **kwargs)
    manager.load()
    return manager


def plain(dirs) -> LogManager:
    manager = LogManager(dirs, {"segment.bytes": 1000})
    manager.load()
    return manager


def append(log: PartitionLog, *values: bytes) -> None:
    records = [Record(i, 0, b"k", value) for i, value in enumerate(values)]
    log.append(bytearray(build_batch(records, base_timestamp=NOW)), leader_epoch=0)


def values_of(log: PartitionLog) -> list[tuple[int, bytes]]:
    """(offset, value) of every record from the log start, as a consumer reads them."""
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        found = log.read_slice(offset, 1 << 20)
        if found is None:
            break
        with found:
            data = found.read_bytes()
        for header, records in decode_batches(data):
            out += [(header.base_offset + r.offset_delta, r.value) for r in records]
            offset = header.next_offset
    return [(offset, value) for offset, value in out if offset >= log.log_start_offset]


def written(name: str, partition: int, count: int) -> list[bytes]:
    """Record values of 100 bytes: a 1000-byte segment holds a few batches, so logs roll."""
    return [f"{name}-{partition}-{n}".encode().ljust(100, b".") for n in range(count)]


def files_under(path) -> dict[str, tuple[int, int]]:
    """Every file below `path` with its size and modification time: what opening a log changes."""
    out = {}
    for root, _, names in os.walk(path):
        for name in names:
            st = os.stat(os.path.join(root, name))
            out[os.path.relpath(os.path.join(root, name), path)] = (st.st_size, st.st_mtime_ns)
    return out


def test_two_workers_share_log_dirs_and_a_plain_log_manager_loads_the_merge(tmp_path):
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    merge_worker_checkpoints(dirs)  # the supervisor, before the workers start (nothing yet)
    workers = [worker(dirs, 0), worker(dirs, 1)]
    remove_clean_shutdown_markers(dirs)  # the supervisor, once the workers have loaded
    expected = {}
    for partition in range(4):
        owner = workers[partition % 2]
        log = owner.get_or_create("orders", partition)
        for n in range(0, 6 + partition, 2):  # batches of two records, enough to roll segments
            append(log, *written("orders", partition, 6 + partition)[n:n + 2])
        log.high_watermark = log.log_end_offset - 1
        expected[("orders", partition)] = written("orders", partition, 6 + partition)
    # DeleteRecords on a partition of each worker.
    assert workers[0].get("orders", 2).delete_records_before(3) == 3
    assert workers[1].get("orders", 1).delete_records_before(5) == 5
    assert len(workers[1].get("orders", 3).segments) > 1
    for w in workers:
        w.close()

    for d in dirs:
        assert not os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_MARKER))  # a worker never writes it
        for name in OFFSET_FILES:
            assert not os.path.exists(os.path.join(d, name))  # nor the main files
    listed = {}
    for i in (0, 1):
        for d in dirs:
            path = os.path.join(d, worker_checkpoint_name(RECOVERY_POINT_CHECKPOINT, i))
            if os.path.exists(path):
                for tp in read_offset_checkpoint(path):
                    listed[tp] = i
    assert listed == {("orders", p): p % 2 for p in range(4)}  # each worker lists its own only

    merge_worker_checkpoints(dirs)  # the supervisor, after the workers exited
    write_clean_shutdown_markers(dirs)
    assert clean_shutdown_marked(dirs)
    for d in dirs:
        assert not [name for name in os.listdir(d) if ".worker-" in name]

    merged = plain(dirs)
    assert sorted(merged.partitions()) == sorted(expected)
    start = {0: 0, 1: 5, 2: 3, 3: 0}
    for (topic, partition), values in expected.items():
        log = merged.get(topic, partition)
        assert log.log_end_offset == len(values)
        assert log.recovery_point == len(values)
        assert log.high_watermark == len(values) - 1
        assert log.log_start_offset == start[partition]
        assert values_of(log) == list(enumerate(values))[start[partition]:]
    merged.close()


def test_a_worker_opens_and_removes_only_what_it_owns(tmp_path, caplog):
    dirs = [str(tmp_path / "data")]
    before = plain(dirs)
    for partition in range(4):
        append(before.get_or_create("t", partition), b"x", b"y")
    before.close()
    # Deletions a crash interrupted, one per worker, and a stray directory.
    mine, theirs = deleted_dir_name("t", 4), deleted_dir_name("t", 5)
    for name in (mine, theirs, "not a partition"):
        os.makedirs(os.path.join(dirs[0], name))
    foreign = {p: files_under(os.path.join(dirs[0], f"t-{p}")) for p in (1, 3)}

    caplog.set_level(logging.WARNING, logger="log.log_manager")
    w = worker(dirs, 0)
    assert not caplog.records  # (the supervisor's plain log manager is the one to warn)
    assert sorted(w.partitions()) == [("t", 0), ("t", 2)]
    assert w.get("t", 1) is None
    assert not os.path.exists(os.path.join(dirs[0], mine))
    assert os.path.isdir(os.path.join(dirs[0], theirs))
    # The marker is read (the logs opened as closed cleanly) and left for the supervisor.
    assert w.get("t", 0).recovery_point == 2
    assert clean_shutdown_marked(dirs)
    with pytest.raises(ValueError, match="worker 0 does not own t-1"):
        w.get_or_create("t", 1)
    with pytest.raises(ValueError, match="does not own t-7"):
        w.get_or_create("t", 7)
    assert not os.path.exists(os.path.join(dirs[0], "t-7"))
    append(w.get("t", 0), b"z")
    remove_clean_shutdown_markers(dirs)
    w.close()
    assert not clean_shutdown_marked(dirs)
    assert {p: files_under(os.path.join(dirs[0], f"t-{p}")) for p in (1, 3)} == foreign
    # Its checkpoints went to its own files; the main files still hold what the plain close wrote.
    assert read_offset_checkpoint(os.path.join(dirs[0], worker_checkpoint_name(RECOVERY_POINT_CHECKPOINT, 0))) == {
        ("t", 0): 3, ("t", 2): 2}
    assert read_offset_checkpoint(os.path.join(dirs[0], RECOVERY_POINT_CHECKPOINT)) == {
        ("t", p): 2 for p in range(4)}
    # The other worker removes its own interrupted deletion.
    other = worker(dirs, 1)
    assert sorted(other.partitions()) == [("t", 1), ("t", 3)]
    assert not os.path.exists(os.path.join(dirs[0], theirs))
    assert os.path.isdir(os.path.join(dirs[0], "not a partition"))
    other.close()


def test_a_log_manager_is_a_worker_with_both_its_number_and_what_it_owns(tmp_path):
    with pytest.raises(ValueError):
        LogManager([str(tmp_path)], owns=owns_even)
    with pytest.raises(ValueError):
        LogManager([str(tmp_path)], worker=1)


def test_merge_prefers_worker_values_drops_deleted_partitions_and_skips_corrupt_files(tmp_path, caplog):
    log_dir = tmp_path / "data"
    for name in ("t-0", "t-1", "t-2", "other.topic-10"):
        (log_dir / name).mkdir(parents=True)
    (log_dir / "t-3.0123abcd-delete").mkdir()  # being deleted: not a partition any more

    def worker_files() -> None:
        for name in WORKER_CHECKPOINT_NAMES:
            write_offset_checkpoint(str(log_dir / worker_checkpoint_name(name, 0)), {("t", 0): 11, ("t", 2): 12})
            write_offset_checkpoint(str(log_dir / worker_checkpoint_name(name, 13)),
                                    {("other.topic", 10): 1, ("t", 3): 20})
            (log_dir / worker_checkpoint_name(name, 2)).write_text("0\n2\nt 1 99\n")  # torn: one entry of two
            (log_dir / (worker_checkpoint_name(name, 1) + ".tmp")).write_text("0\n1\nt 1 98\n")

    for name in WORKER_CHECKPOINT_NAMES:
        write_offset_checkpoint(str(log_dir / name), {("t", 0): 5, ("t", 1): 7, ("t", 3): 9, ("gone", 0): 4})
    worker_files()
    caplog.set_level(logging.WARNING, logger="log.log_manager")
    merge_worker_checkpoints([str(log_dir)])

    expected = {("t", 0): 11, ("t", 1): 7, ("t", 2): 12, ("other.topic", 10): 1}
    for name in WORKER_CHECKPOINT_NAMES:
        assert read_offset_checkpoint(str(log_dir / name)) == expected
    assert sorted(os.listdir(log_dir)) == sorted(["t-0", "t-1", "t-2", "other.topic-10", "t-3.0123abcd-delete",
                                                  *WORKER_CHECKPOINT_NAMES])
    assert sum(worker_checkpoint_name(RECOVERY_POINT_CHECKPOINT, 2) in r.getMessage() for r in caplog.records) == 1

    # Again, and again after a crash half-way (the main files written, the worker files not yet removed).
    contents = {name: (log_dir / name).read_text() for name in WORKER_CHECKPOINT_NAMES}
    merge_worker_checkpoints([str(log_dir)])
    assert {name: (log_dir / name).read_text() for name in WORKER_CHECKPOINT_NAMES} == contents
    worker_files()
    merge_worker_checkpoints([str(log_dir)])
    assert {name: (log_dir / name).read_text() for name in WORKER_CHECKPOINT_NAMES} == contents
    assert not [name for name in os.listdir(log_dir) if ".worker-" in name]


def test_a_corrupt_main_file_is_replaced_by_the_worker_files_or_left_for_the_load(tmp_path, caplog):
    log_dir = tmp_path / "data"
    for name in ("t-0", "t-1"):
        (log_dir / name).mkdir(parents=True)
    (log_dir / RECOVERY_POINT_CHECKPOINT).write_text("garbage")
    write_offset_checkpoint(str(log_dir / worker_checkpoint_name(RECOVERY_POINT_CHECKPOINT, 1)), {("t", 1): 3})
    (log_dir / LOG_START_OFFSET_CHECKPOINT).write_text("garbage")
    caplog.set_level(logging.WARNING, logger="log.log_manager")
    merge_worker_checkpoints([str(log_dir)])
    assert read_offset_checkpoint(str(log_dir / RECOVERY_POINT_CHECKPOINT)) == {("t", 1): 3}
    # No worker file to take its place: it stays, and loading it re-scans every log from its start.
    assert (log_dir / LOG_START_OFFSET_CHECKPOINT).read_text() == "garbage"
    assert any(LOG_START_OFFSET_CHECKPOINT in r.getMessage() for r in caplog.records)


def test_a_worker_killed_after_a_checkpoint_loses_no_flushed_record(tmp_path):
    dirs = [str(tmp_path / "data")]
    merge_worker_checkpoints(dirs)
    w0, w1 = worker(dirs, 0), worker(dirs, 1)
    remove_clean_shutdown_markers(dirs)
    for w in (w0, w1):
        for partition in (0, 1, 2, 3):
            if w.owns_partition("t", partition):
                append(w.get_or_create("t", partition), *written("t", partition, 4))
        w.flush_all()  # fsynced, and the worker files now hold recovery point 4
    everything = {p: written("t", p, 4) for p in range(4)}
    for p in range(4):
        owner = w0 if p % 2 == 0 else w1
        log = owner.get("t", p)
        more = written("t", p, 20)[4:]
        for n in range(0, len(more), 4):
            append(log, *more[n:n + 4])
        log.flush()  # fsynced, the recovery point moved, but no checkpoint written since
        everything[p] = written("t", p, 20)
    tail = w1.get("t", 3).active_segment.log_path
    with open(tail, "ab") as f:
        f.write(b"torn batch at the tail")
    w0.checkpoint_all()  # w0 checkpointed again; w1 did not
    # No close(): both are gone as after kill -9. The supervisor merges before the next start.
    merge_worker_checkpoints(dirs)
    assert read_offset_checkpoint(os.path.join(dirs[0], RECOVERY_POINT_CHECKPOINT)) == {
        ("t", 0): 20, ("t", 1): 4, ("t", 2): 20, ("t", 3): 4}
    assert not clean_shutdown_marked(dirs)
    again = plain(dirs)
    for p, values in everything.items():
        log = again.get("t", p)
        assert values_of(log) == list(enumerate(values))
        assert log.log_end_offset == 20
    assert os.path.getsize(tail) == again.get("t", 3).active_segment.size
    again.close()


def test_a_partition_a_worker_deleted_and_created_again_loads_without_the_old_offsets(tmp_path):
    """The main file still holds the deleted incarnation's offsets; the worker's files carry the
    partition as 0 until it is back, so a crash before its next checkpoint does not bring them to
    the new log (a log start offset of 6 would hide the new log's 3 records)."""
    dirs = [str(tmp_path / "data")]
    setup = worker(dirs, 0)
    log = setup.get_or_create("t", 0)
    append(log, *written("t", 0, 8))
    log.high_watermark = 8
    log.delete_records_before(6)
    setup.close()
    merge_worker_checkpoints(dirs)
    assert read_offset_checkpoint(os.path.join(dirs[0], LOG_START_OFFSET_CHECKPOINT)) == {("t", 0): 6}

    w = worker(dirs, 0)
    assert w.delete_partition("t", 0)
    log = w.get_or_create("t", 0)
    append(log, *written("again", 0, 3))
    log.flush()
    # Killed here, before its next checkpoint.
    merge_worker_checkpoints(dirs)
    for name in OFFSET_FILES:
        assert read_offset_checkpoint(os.path.join(dirs[0], name)) == {("t", 0): 0}
    again = plain(dirs)
    log = again.get("t", 0)
    assert (log.log_start_offset, log.log_end_offset) == (0, 3)
    assert values_of(log) == list(enumerate(written("again", 0, 3)))
    again.close()


def test_the_cleaner_checkpoint_of_a_worker_is_merged(tmp_path):
    dirs = [str(tmp_path / "data")]
    compact = {"cleanup.policy": "compact", "segment.bytes": 16384}
    w = worker(dirs, 1)
    log = w.get_or_create("table", 1, compact)
    for i in range(200):
        append(log, b"v%d" % (i % 7))
    log.high_watermark = 200  # (the cleaner stops at the last stable offset)
    log.roll()
    stats = w.cleaner.clean_log(log)
    assert stats is not None and stats.end_offset == 200
    assert not os.path.exists(os.path.join(dirs[0], CLEANER_OFFSET_CHECKPOINT))
    worker_file = os.path.join(dirs[0], worker_checkpoint_name(CLEANER_OFFSET_CHECKPOINT, 1))
    assert read_offset_checkpoint(worker_file) == {("table", 1): 200}
    w.close()
    merge_worker_checkpoints(dirs)
    assert not os.path.exists(worker_file)
    again = LogManager(dirs)
    again.load()
    log = again.get_or_create("table", 1, compact)
    assert again.cleaner.first_dirty_offset(log) == 200
    again.close()
    # A worker that does not own the partition neither takes nor drops its first dirty offset.
    other = worker(dirs, 0)
    append(other.get_or_create("table", 0, compact), b"x")
    other.get("table", 0).high_watermark = 1
    other.get("table", 0).roll()
    assert other.cleaner.clean_log(other.get("table", 0)) is not None
    other.close()
    merge_worker_checkpoints(dirs)
    assert read_offset_checkpoint(os.path.join(dirs[0], CLEANER_OFFSET_CHECKPOINT)) == {("table", 0): 1,
                                                                                       ("table", 1): 200}
