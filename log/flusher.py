"""The log flusher: the one thread of a broker process that runs the fsyncs kept off the event loop
(rolls, flush.ms, checkpoints, group commits: log/partition_log.py, log/group_commit.py), one job
at a time in the order submitted.

Creating a partition asks for two small jobs: its directory and the log dir made durable (the new
names), and its first leader epoch checkpoint. A topic of 10,000 partitions queued 20,000 such jobs,
each a journal commit of the file system, and the flusher worked through them for seconds while
every group commit (a produce answer with log.flush.on.ack) waited behind them: rdkafka_performance
produced 119 MB/s into a new 10,000-partition topic against 775 MB/s into one partition
(bench/RESULTS.md, "Durable acknowledgements"). So these jobs, "make these paths durable"
(`sync_paths`), coalesce: one submitted while the previous such job still waits in the queue, with
nothing else submitted since, joins it. The joined job fsyncs each distinct path once (the log dir
is named by every creation), and with `whole_file_system` (set when log.flush.on.ack is on) and at
least SYNCFS_FROM_PATHS paths on a local file system, makes them durable with one syncfs(2) instead:
a syncfs writes back everything dirty on that file system, which with the key on is little, while
with the key off (Kafka's page cache behaviour) it could be gigabytes of segments, so then each path
is fsynced. The order of jobs is kept: a job joins only the last one submitted, so nothing submitted
earlier runs after it and nothing submitted later runs before it.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import os
import threading
from collections.abc import Iterable

from log.checkpoints import fsync_directory_if_exists, fsync_file_if_exists

# A joined job with at least this many distinct paths on one local file system syncs it whole (with
# whole_file_system): as for the group commit's SYNCFS_FROM_DIRTY_LOGS, between 2 and 8 dirty
# files fsyncs and a syncfs cost about the same, and 64 directory entries cost 64 journal commits.
SYNCFS_FROM_PATHS = 2

# File systems whose syncfs(2) writes back every file's data and metadata to their disk. Others
# get one fdatasync per file: a FUSE file system (the faults suite's lazyfs, compat/faults/lazyfs.py)
# is not told of a syncfs at all, NFS or 9p may not be, and a tmpfs has no disk.
SYNCFS_FILE_SYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs", "bcachefs", "overlay"})

_libc = ctypes.CDLL(None, use_errno=True)


def file_system_type(path: str) -> str:
    """The type of the file system holding `path` (/proc/self/mounts: the longest mount point
    above it); "" when it cannot be told."""
    path = os.path.realpath(path)
    best, kind = "", ""
    try:
        with open("/proc/self/mounts") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) < 3:
                    continue
                mount_point = fields[1].replace("\\040", " ")
                inside = path == mount_point or path.startswith(mount_point.rstrip("/") + "/")
                if inside and len(mount_point) >= len(best):
                    best, kind = mount_point, fields[2]
    except OSError:
        return ""
    return kind


def syncfs_usable(path: str) -> bool:
    """Whether one syncfs(2) makes what is written under `path` durable (SYNCFS_FILE_SYSTEMS)."""
    return file_system_type(path) in SYNCFS_FILE_SYSTEMS


def syncfs(fd: int) -> None:
    """syncfs(2): write back and wait for everything dirty on the file system holding `fd`
    (Python's os module has no wrapper)."""
    if _libc.syncfs(fd) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def sync_file_system(path: str) -> None:
    """syncfs(2) of the file system holding `path` through a descriptor opened for it (one opened
    now still hears of a writeback error nobody has seen yet)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        syncfs(fd)
    finally:
        os.close(fd)


class _PathSync:
    """One queued job making files and directories durable; others join it until it starts."""

    def __init__(self) -> None:
        self.files: dict[str, None] = {}  # ordered sets
        self.directories: dict[str, None] = {}
        self.started = False
        self.future: concurrent.futures.Future = concurrent.futures.Future()


class LogFlusher(concurrent.futures.Executor):
    """An Executor with one thread whose path syncs coalesce (see the module docstring)."""

    def __init__(self, whole_file_system: bool = False, thread_name_prefix: str = "kafka-wire-log-flusher") -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=thread_name_prefix)
        self.whole_file_system = whole_file_system
        self._lock = threading.Lock()
        self._open: _PathSync | None = None  # the last job submitted, while it is a path sync not yet started
        self._syncfs_usable: dict[int, bool] = {}  # per device (st_dev), read on the flusher thread
        # Counted for tests: path syncs asked, and jobs that ran them.
        self.path_syncs = 0
        self.path_sync_jobs = 0

    def submit(self, fn, /, *args, **kwargs) -> concurrent.futures.Future:
        with self._lock:
            self._open = None  # later path syncs must not run before this job
            return self._executor.submit(fn, *args, **kwargs)

    def sync_paths(self, files: Iterable[str] = (), directories: Iterable[str] = ()) -> concurrent.futures.Future:
        """A future done once `files` and then `directories` are durable (a path gone by then is
        skipped: a deleted partition's); RuntimeError when the flusher was shut down."""
        with self._lock:
            job = self._open
            if job is None or job.started:
                job = _PathSync()
                self._executor.submit(self._run, job)
                self._open = job
            job.files.update(dict.fromkeys(files))
            job.directories.update(dict.fromkeys(directories))
            self.path_syncs += 1
            return job.future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._executor.shutdown(wait, cancel_futures=cancel_futures)

    def _run(self, job: _PathSync) -> None:
        with self._lock:
            job.started = True
            if self._open is job:
                self._open = None
        self.path_sync_jobs += 1
        try:
            self._sync(list(job.files), list(job.directories))
        except OSError as e:
            job.future.set_exception(e)
        else:
            job.future.set_result(None)

    def _sync(self, files: list[str], directories: list[str]) -> None:
        if self.whole_file_system and len(files) + len(directories) >= SYNCFS_FROM_PATHS:
            device_of: dict[str, int] = {}
            for path in directories + files:
                try:
                    device_of[path] = os.stat(path).st_dev
                except FileNotFoundError:
                    pass  # gone meanwhile (a deleted partition's): nothing left to sync
            synced: set[int] = set()
            for path, device in device_of.items():
                if device not in synced and self._syncfs_ok(device, path):
                    sync_file_system(path)
                    synced.add(device)
            files = [path for path in files if path in device_of and device_of[path] not in synced]
            directories = [path for path in directories if path in device_of and device_of[path] not in synced]
        for path in files:
            fsync_file_if_exists(path)
        for path in directories:
            fsync_directory_if_exists(path)

    def _syncfs_ok(self, device: int, path: str) -> bool:
        usable = self._syncfs_usable.get(device)
        if usable is None:
            usable = self._syncfs_usable[device] = syncfs_usable(path)
        return usable


def sync_paths_on(flusher: concurrent.futures.Executor | None, files: list[str], directories: list[str],
                  fallback) -> concurrent.futures.Future | None:
    """Queue a path sync on `flusher` (joined with its neighbours on a LogFlusher) and return its
    future; on any other executor, or when there is none or it was shut down, run `fallback()` and
    return what it returns (PartitionLog's a future, LeaderEpochCache's nothing)."""
    sync = getattr(flusher, "sync_paths", None)
    if sync is not None:
        try:
            return sync(files, directories)
        except RuntimeError:  # shut down (the broker is closing): the fallback runs it here
            pass
    return fallback()
