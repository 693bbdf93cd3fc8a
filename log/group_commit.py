"""Group commit: an append is acknowledged only once it is on stable storage, and one sync covers
every append that arrived while the previous sync ran (`log.flush.on.ack`, broker/config.py).

The broker asks `when_synced(logs, done)` after appending to `logs`; `done` is called, on the
caller's thread, once everything those logs held at that moment is durable, with the logs whose
sync failed (empty when all is well). One sync runs at a time: callers that come while it runs
wait for the next one, which starts when it ends and covers every log appended to meanwhile, up to
its log end offset at that moment. So the number of syncs follows the disk's speed, not the
number of appends, and a caller waits at most two syncs.

A sync is a job on the log's flusher thread (the `flusher` Executor of log/partition_log.py,
which also runs rolls', flush.ms' and checkpoints' fsyncs, one job at a time in the order they
were submitted). Each log's part of it is tracked as that log's own background flushes are
(`PartitionLog.track_flush`): its recovery point moves to the synced offset when the job has
succeeded, never before, so the recovery-point checkpoint never claims more than was synced. A
caller's logs count as synced when their recovery point covers what they held: the flusher runs
jobs in order, so a roll's flush submitted earlier (the new segment's directory entry) has
finished by then too, and a job of it that failed shows as a recovery point left behind.

Per log dir, the job makes the dirty logs durable in one of two ways (measured on ext4 over
virtio, 2 cores shared with other work, bench/RESULTS.md "Durable acknowledgements"): fdatasync of
each dirty segment (and fsync of the partition directory when a segment is new) when fewer than
SYNCFS_FROM_DIRTY_LOGS logs are dirty there, the cheapest for one busy partition (0.08-0.8 ms for
one file, where syncfs took 0.5-1.9 ms); syncfs(2) of the log dir's file system when more are: with
64 dirty files of 10,000 it took 1.2-8.7 ms against 11-45 ms for one fdatasync each (each file's
size change is its own journal commit), with 256 dirty files 50 ms against 151 ms, and between 2 and
8 dirty files the two were within the noise of each other. syncfs also writes back whatever else
is dirty on that file system, which is why a log dir on its own file system (as Kafka advises)
keeps syncs short. It is used only on the local file systems of log/flusher.py's SYNCFS_FILE_SYSTEMS: a FUSE file
system (such as the faults suite's lazyfs) never hears of a syncfs, so there every file is
fdatasynced whatever their number. Its errors are read through a descriptor of the log dir held open from the first sync on (Linux
5.8+ reports a writeback error once to each descriptor opened before it; older kernels report
none). A failed sync leaves the recovery points where they were and fails its callers' logs;
the next sync covers the whole range again.

Without a flusher (tools, tests) the sync runs on the caller's thread and `done` is called before
`when_synced` returns. Not thread-safe: called from the thread that appends (the event loop);
`call_soon_threadsafe` brings the end of a job back to it.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
from collections.abc import Callable, Iterable

from log.errors import KafkaStorageError
from log.flusher import syncfs, syncfs_usable
from log.partition_log import PartitionLog, _fsync_off_the_loop

logger = logging.getLogger("kafka_wire.log")

# A log dir with at least this many dirty logs is synced with one syncfs(2) instead of one
# fdatasync per segment (see the module docstring for the numbers).
SYNCFS_FROM_DIRTY_LOGS = 4

Done = Callable[[dict[PartitionLog, BaseException]], None]


class GroupCommit:
    """One sync at a time for the logs of one broker process (see the module docstring)."""

    def __init__(self, flusher: concurrent.futures.Executor | None,
                 call_soon_threadsafe: Callable[[Callable[[], None]], object] | None = None) -> None:
        self._flusher = flusher
        self._call_soon_threadsafe = call_soon_threadsafe
        self._next_logs: dict[PartitionLog, None] = {}  # ordered set: appended to since the running sync began
        self._next_waiters: list[tuple[list[tuple[PartitionLog, int]], Done]] = []
        self._running = False
        self._dir_fds: dict[str, int] = {}
        self._syncfs_usable: dict[str, bool] = {}  # per log dir (SYNCFS_FILE_SYSTEMS)
        # The running sync's callers, and each of its logs' job (to name the error of a failure).
        self._waiters_of_running: list[tuple[list[tuple[PartitionLog, int]], Done]] = []
        self._job_of: dict[PartitionLog, concurrent.futures.Future] = {}
        # Counted for the metrics endpoint (kafka_wire_log_syncs_total and the like).
        self.syncs = 0
        self.synced_logs = 0
        self.filesystem_syncs = 0

    def when_synced(self, logs: Iterable[PartitionLog], done: Done) -> None:
        """Call `done(failed)` once everything `logs` hold now is durable; `failed` maps each log
        whose sync failed to the error (empty when every one was synced)."""
        wanted = [(log, log.log_end_offset) for log in logs]
        if all(log.recovery_point >= offset for log, offset in wanted):
            done({})  # durable already (flush.messages fsynced it in the append): no sync to wait for
            return
        for log, _ in wanted:
            self._next_logs[log] = None
        self._next_waiters.append((wanted, done))
        if not self._running:
            self._start()

    def close(self) -> None:
        for fd in self._dir_fds.values():
            os.close(fd)
        self._dir_fds.clear()

    def _start(self) -> None:
        logs, waiters = self._next_logs, self._next_waiters
        self._next_logs, self._next_waiters = {}, []
        by_dir: dict[str, list[PartitionLog]] = {}
        for log in logs:
            if log.log_end_offset > log.flushed_or_pending:
                by_dir.setdefault(os.path.dirname(log.dir), []).append(log)
        jobs: list[tuple[str, concurrent.futures.Future, int | None, list]] = []
        for log_dir, dirty in by_dir.items():
            future: concurrent.futures.Future = concurrent.futures.Future()
            whole_fs = len(dirty) >= SYNCFS_FROM_DIRTY_LOGS and self._syncfs_ok(log_dir)
            parts = []
            try:
                dir_fd = self._dir_fd(log_dir) if whole_fs else None
                for log in dirty:
                    target, fds, paths, directories = log.sync_job(descriptors=not whole_fs)
                    if not whole_fs:
                        parts.append((fds, paths, directories))
                    log.track_flush(future, target)
            except OSError as e:
                for fds, _, _ in parts:
                    for fd in fds:
                        os.close(fd)
                future.set_exception(e)
                for log in dirty:
                    log.track_flush(future, log.log_end_offset)  # reaps the failure (logged there)
                continue
            jobs.append((log_dir, future, dir_fd, parts))
            self.synced_logs += len(dirty)
            self.filesystem_syncs += whole_fs
            for log in dirty:
                self._job_of[log] = future
        self._running = True
        self._waiters_of_running = waiters
        if self._flusher is not None and self._call_soon_threadsafe is not None:
            try:
                submitted = self._flusher.submit(_sync_log_dirs, jobs)
            except RuntimeError:  # shut down (the broker is closing): do it here
                pass
            else:
                submitted.add_done_callback(self._finish_soon)
                return
        _sync_log_dirs(jobs)
        self._finish()

    def _syncfs_ok(self, log_dir: str) -> bool:
        usable = self._syncfs_usable.get(log_dir)
        if usable is None:
            usable = self._syncfs_usable[log_dir] = syncfs_usable(log_dir)
        return usable

    def _dir_fd(self, log_dir: str) -> int:
        fd = self._dir_fds.get(log_dir)
        if fd is None:
            fd = self._dir_fds[log_dir] = os.open(log_dir, os.O_RDONLY | os.O_DIRECTORY)
        return fd

    def _finish_soon(self, _: concurrent.futures.Future) -> None:
        """On the flusher thread: the rest happens on the caller's."""
        try:
            self._call_soon_threadsafe(self._finish)
        except RuntimeError:  # the event loop is closed (the broker stopped): nobody waits any more
            pass

    def _finish(self) -> None:
        self._running = False
        self.syncs += 1
        waiters, self._waiters_of_running = self._waiters_of_running, []
        job_of, self._job_of = self._job_of, {}
        for wanted, done in waiters:
            failed = {}
            for log, offset in wanted:
                # A truncation meanwhile (a leader became follower) took the rest away: not a failure.
                if log.recovery_point < min(offset, log.log_end_offset):
                    job = job_of.get(log)
                    error = job.exception() if job is not None and job.done() else None
                    # Otherwise an earlier job of this log failed (a roll's flush; logged then).
                    failed[log] = error or KafkaStorageError(
                        f"a flush of {log.topic}-{log.partition} failed: its recovery point {log.recovery_point} "
                        f"is below {offset}")
            try:
                done(failed)
            except Exception:
                logger.exception("a group commit's caller failed")
        if self._next_waiters:
            self._start()


def _sync_log_dirs(jobs: list[tuple[str, concurrent.futures.Future, int | None, list]]) -> None:
    """The flusher's part: each log dir's sync, its future told how it went."""
    for _, future, dir_fd, parts in jobs:
        try:
            if dir_fd is not None:
                syncfs(dir_fd)
            else:
                errors = []
                for fds, paths, directories in parts:
                    try:
                        _fsync_off_the_loop(fds, paths, directories)
                    except OSError as e:
                        errors.append(e)
                if errors:
                    raise errors[0]
        except OSError as e:
            future.set_exception(e)
        else:
            future.set_result(None)
