"""All partition logs of a broker across its log.dirs, with Kafka's log-dir checkpoint files.

Each log dir holds `<topic>-<partition>` directories and, at its top level:
- `recovery-point-offset-checkpoint`: per partition, the offset below which data is fsynced;
- `log-start-offset-checkpoint`: per partition, the log start offset (DeleteRecords, retention);
- `replication-offset-checkpoint`: per partition, the high watermark;
- `.kafka_cleanshutdown`: written after a clean close, removed on start. Without it, logs are
  re-scanned from their recovery point (torn or corrupt tails are cut off).

The broker schedules the periodic work: `flush_dirty_logs` (flush.ms, and the log start offset
checkpoint when DeleteRecords moved one), `delete_old_segments` (retention,
log.retention.check.interval.ms), `checkpoint_all` (the checkpoint intervals) and `cleaner.run`
(compaction, log/cleaner.py, which keeps `cleaner-offset-checkpoint` in each log dir).

With a `flusher` (an Executor with one worker thread) the fsyncs of that periodic work leave the
event loop: rolls flush in the background (log/partition_log.py), `start_dirty_flushes` starts
flush.ms jobs, and `checkpoint_later` takes a checkpoint's offsets now and writes the file on the
flusher. Checkpoint files are written one at a time, and a write whose offsets were taken before
another's never replaces it (`CheckpointWriter`), whichever thread gets there first.

Workers (the multi-process broker): a supervisor forks N worker processes over the same log dirs,
each owning a share of the partitions, and each worker has a LogManager made with
`worker=i, owns=...`. It opens only the partition directories it owns (and removes only their
`*-delete` directories); `get_or_create` of another worker's partition raises ValueError. It reads
the main checkpoint files and the `.kafka_cleanshutdown` marker but writes its checkpoints, the
cleaner's too, to `<name>.worker-<i>`, listing only its own partitions, and it never writes or
removes the marker. A partition it deleted or moved out of a log dir is written there as offset 0
(what a missing entry means) until it is back, so that a merge does not take the main file's value
of an older incarnation. The supervisor, alone, runs `merge_worker_checkpoints` (the worker files
into the main ones) before the workers start and after they have all exited, and keeps the marker
with `clean_shutdown_marked`, `remove_clean_shutdown_markers` and `write_clean_shutdown_markers`.
With `worker=None` (a single-process broker) the LogManager does all of this itself.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from log.checkpoints import (
    CLEAN_SHUTDOWN_MARKER,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CorruptCheckpoint,
    fsync_directory,
    read_offset_checkpoint,
    write_file_atomically,
    write_offset_checkpoint,
)
from log.cleaner import CLEANER_OFFSET_CHECKPOINT, LogCleaner
from log.config import LogConfig
from log.flusher import sync_file_system, syncfs_usable
from log.future_log import FutureLog, LogDirMover
from log.errors import KafkaStorageError, LogDirFailure, is_log_dir_failure
from log.partition_log import DELETE_DIR_SUFFIX, PartitionLog, deleted_dir_name, parse_partition_dir_name

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# Directories Kafka uses for moves between log dirs and stray replicas; not partitions we serve.
_NOT_PARTITION_SUFFIXES = (DELETE_DIR_SUFFIX, "-future", "-stray")


# A file created and removed at start to prove a log dir is writable (a worker's has its number:
# workers load at the same time, and one's unlink must not meet another's probe).
_WRITE_PROBE = ".kafka-wire-write-test"

# The log-dir checkpoint files a worker writes as `<name>.worker-<i>` and the supervisor merges.
WORKER_CHECKPOINT_NAMES = (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT,
                           CLEANER_OFFSET_CHECKPOINT)


def worker_checkpoint_name(name: str, worker: int) -> str:
    """The file a worker writes in place of the log-dir checkpoint `name`."""
    return f"{name}.worker-{worker}"


def _os_reason(e: OSError, path: bool = True) -> str:
    """An OSError as Kafka prints a FileSystemException: `path: reason` (the path left out when
    the message names it already)."""
    reason = e.strerror or str(e)
    return f"{e.filename}: {reason}" if path and e.filename else reason


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class CheckpointWriter:
    """Offset checkpoint files written from the event loop or the flusher thread: one write at a
    time, and offsets taken earlier never replace offsets taken later (a stale log start offset
    would bring deleted records back after a restart)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._taken: dict[str, int] = {}
        self._written: dict[str, int] = {}

    def take(self, path: str) -> int:
        """A ticket for offsets being taken now (on the event loop), in taking order."""
        ticket = self._taken.get(path, 0) + 1
        self._taken[path] = ticket
        return ticket

    def write(self, path: str, ticket: int, offsets: Mapping[TopicPartition, int]) -> None:
        with self._lock:
            if self._written.get(path, 0) >= ticket:
                return  # newer offsets are already in the file
            write_offset_checkpoint(path, offsets)
            self._written[path] = ticket


class LogManager:
    """Creates, loads, flushes, checkpoints and deletes the partition logs of one broker."""

    def __init__(
        self,
        log_dirs: list[str],
        default_config: LogConfig | Mapping[str, Any] | None = None,
        *,
        clock_ms: Callable[[], int] = _wall_clock_ms,
        flusher: concurrent.futures.Executor | None = None,
        owns: Callable[[str, int], bool] | None = None,
        worker: int | None = None,
        shared_dir_counts=None,
    ):
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        if (owns is None) != (worker is None):
            raise ValueError("a worker's log manager needs both its number (worker) and what it owns (owns)")
        # A worker of the multi-process broker: which partitions are its own (see the module docstring).
        self.worker = worker
        self._owns = owns
        # A worker's partitions deleted from or moved out of a log dir since load, by that dir: its
        # checkpoint files there list them as 0 while they are not back (the main file may hold the
        # offsets of an older incarnation that a merge would otherwise keep).
        self._gone: dict[TopicPartition, str] = {}
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        self.default_config = LogConfig.of(default_config)
        self._clock_ms = clock_ms
        # Where fsyncs of rolls, flush.ms and checkpoints run (None: inline, on the caller's thread).
        self.flusher = flusher
        self._checkpoints = CheckpointWriter()
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._dir_of: dict[TopicPartition, str] = {}
        # Partitions per log dir (where new ones go), kept with _dir_of: counting them for each
        # new partition made creating N partitions quadratic.
        self._partitions_in: dict[str, int] = dict.fromkeys(self.log_dirs, 0)
        # A worker's: the partitions of every worker per log dir (`add(dir index, delta)`, `get(dir
        # index)`, kept in memory the workers share), so that a new partition goes to the dir with
        # the fewest of the whole broker's, as with one process.
        self._shared_dir_counts = shared_dir_counts
        # Log dirs taken offline after an I/O failure (why), and the partitions they held.
        self.offline_dirs: dict[str, str] = {}
        self._offline: dict[TopicPartition, str] = {}
        self._loaded = False
        # Log start offsets as last written to log-start-offset-checkpoint.
        self._checkpointed_start_offsets: dict[TopicPartition, int] = {}
        self.cleaner = LogCleaner(self, clock_ms=clock_ms)
        # Moves of partitions between log dirs (AlterReplicaLogDirs); `mover.run()` is its task.
        self.mover = LogDirMover(self)

    # -- workers ----------------------------------------------------------------------------------

    def owns_partition(self, topic: str, partition: int) -> bool:
        """Whether this log manager may open the partition's log (always, unless it is a worker's)."""
        return self._owns is None or self._owns(topic, partition)

    def checkpoint_path(self, log_dir: str, name: str) -> str:
        """Where this log manager writes the log-dir checkpoint `name` (a worker: its own file)."""
        return os.path.join(log_dir, name if self.worker is None else worker_checkpoint_name(name, self.worker))

    def gone_from(self, log_dir: str) -> dict[TopicPartition, int]:
        """A worker's partitions deleted from or moved out of `log_dir` and not back, as the 0
        entries its checkpoint files there carry (empty when not a worker)."""
        return {tp: 0 for tp, d in self._gone.items() if d == log_dir and self._dir_of.get(tp) != log_dir}

    # -- start ------------------------------------------------------------------------------------

    def load(self, topic_configs: Callable[[str], Mapping[str, Any] | None] | None = None) -> None:
        """Open every partition directory found in the log dirs (recovering after a crash).

        `topic_configs(topic)` may give a topic's overrides; otherwise logs open with the default
        config and `get_or_create(topic, partition, config)` updates it later.
        """
        if self._loaded:
            return
        self._gone.clear()
        self.create_and_validate_log_dirs()
        for log_dir in self.log_dirs:
            try:
                self._load_dir(log_dir, topic_configs)
            except OSError as e:
                raise LogDirFailure(log_dir, f"Error while loading log dir {log_dir}: {_os_reason(e)}") from e
        self._loaded = True
        try:
            self.cleaner.load_checkpoints()
            checkpoint_files = (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT)
            if self._logs or any(os.path.exists(os.path.join(d, name)) for d in self.log_dirs for name in checkpoint_files):
                self.checkpoint_all()
            # (A fresh log dir has nothing to record: missing checkpoint files read as empty.)
        except OSError as e:
            raise self.load_failure(e) from e

    def load_failure(self, e: OSError) -> LogDirFailure:
        """An I/O error met while loading, as the failure of the log dir holding its file (the
        first when the file is elsewhere)."""
        where = os.path.abspath(e.filename) if isinstance(e.filename, str) else ""
        log_dir = next((d for d in self.log_dirs if where == d or where.startswith(d + os.sep)), self.log_dirs[0])
        return LogDirFailure(log_dir, f"Error while loading log dir {log_dir}: {_os_reason(e)}")

    def create_and_validate_log_dirs(self) -> None:
        """Kafka's LogManager.createAndValidateLogDirs: each log dir is created with its missing
        parents and must be a directory that takes new files. Root passes every permission check,
        so the test is a file really created (a read-only mount, /proc or /sys fail it too).
        Raises LogDirFailure naming the dir and why."""
        for log_dir in self.log_dirs:
            failed = f"Failed to create or validate data directory {log_dir}"
            try:
                os.makedirs(log_dir, exist_ok=True)
            except FileExistsError as e:  # a file (or a dangling link) in its place
                raise LogDirFailure(log_dir, f"{failed}: it exists and is not a directory") from e
            except OSError as e:
                raise LogDirFailure(log_dir, f"{failed}: cannot create it: {_os_reason(e, path=False)}") from e
            probe_name = _WRITE_PROBE if self.worker is None else f"{_WRITE_PROBE}.worker-{self.worker}"
            probe = os.path.join(log_dir, probe_name)
            try:
                os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
                os.unlink(probe)
            except OSError as e:
                raise LogDirFailure(log_dir, f"{failed}: cannot write in it: {_os_reason(e, path=False)}") from e

    def _load_dir(self, log_dir: str, topic_configs: Callable[[str], Mapping[str, Any] | None] | None) -> None:
        marker = os.path.join(log_dir, CLEAN_SHUTDOWN_MARKER)
        clean = os.path.exists(marker)
        try:
            recovery_points = read_offset_checkpoint(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT))
            start_offsets = read_offset_checkpoint(os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT))
            high_watermarks = read_offset_checkpoint(os.path.join(log_dir, REPLICATION_OFFSET_CHECKPOINT))
        except CorruptCheckpoint as e:
            # Without trustworthy checkpoints every segment is re-scanned.
            logger.warning("%s: %s; recovering all logs from their start", log_dir, e)
            recovery_points, start_offsets, high_watermarks, clean = {}, {}, {}, False
        for name in sorted(os.listdir(log_dir)):
            path = os.path.join(log_dir, name)
            if not os.path.isdir(path) or name.startswith("."):
                continue
            if name.endswith(DELETE_DIR_SUFFIX):
                # A deletion interrupted by a crash; a worker removes only its own partitions'.
                if self._owns is None or self._owns_deleted_dir(name):
                    shutil.rmtree(path, ignore_errors=True)
                continue
            if name.endswith(_NOT_PARTITION_SUFFIXES):
                continue
            try:
                tp = parse_partition_dir_name(name)
            except ValueError:
                if self._owns is None:  # (a worker leaves it to the supervisor's log manager to say)
                    logger.warning("%s: ignoring directory %s (not <topic>-<partition>)", log_dir, name)
                continue
            if self._owns is not None and not self._owns(*tp):
                continue  # another worker's
            if tp in self._logs:
                raise LogDirFailure(log_dir, f"Duplicate log directories for {tp[0]}-{tp[1]} are found at both "
                                             f"{self._dir_of[tp]} and {log_dir}: delete one of the two")
            overrides = topic_configs(tp[0]) if topic_configs is not None else None
            self._logs[tp] = PartitionLog(
                path,
                self.default_config.merged(overrides),
                recovery_point=recovery_points.get(tp, 0),
                log_start_offset=start_offsets.get(tp, 0),
                high_watermark=high_watermarks.get(tp, 0),
                clean_shutdown=clean,
                clock_ms=self._clock_ms,
                flusher=self.flusher,
            )
            self._place(tp, log_dir)
        if self.worker is None:  # (the supervisor removes it once every worker has read it)
            remove_clean_shutdown_markers([log_dir])

    def _owns_deleted_dir(self, name: str) -> bool:
        """Whether a `<topic>-<partition>.<id>-delete` directory is one of this worker's partitions'
        (partition_log.deleted_dir_name; a topic cut short there is judged by what is left of it,
        so one worker at most removes it)."""
        try:
            return self._owns(*parse_partition_dir_name(name[: -len(DELETE_DIR_SUFFIX)].rsplit(".", 1)[0]))
        except ValueError:
            return False

    # -- partitions -------------------------------------------------------------------------------

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    @property
    def live_log_dirs(self) -> list[str]:
        return [d for d in self.log_dirs if d not in self.offline_dirs]

    def is_offline(self, topic: str, partition: int) -> bool:
        """Whether the partition's log is in a log dir taken offline (KAFKA_STORAGE_ERROR)."""
        return (topic, partition) in self._offline

    def mark_offline(self, log_dir: str, reason: str) -> list[TopicPartition]:
        """Kafka's LogManager.handleLogDirFailure: stop serving the logs of a log dir whose disk
        failed. Its logs are closed (errors swallowed: the disk is gone) and forgotten; their
        partitions answer KAFKA_STORAGE_ERROR until a restart finds the dir usable again.
        Returns the partitions taken offline. (Kafka halts the broker when its last log dir
        fails; kafka-wire keeps answering, so clients see the error instead of a closed socket.)"""
        if log_dir in self.offline_dirs or log_dir not in self.log_dirs:
            return []
        self.offline_dirs[log_dir] = reason
        gone = [tp for tp, d in self._dir_of.items() if d == log_dir]
        logger.error("Stopping serving logs in dir %s: %s", log_dir, reason)
        for tp in gone:
            log = self._logs.pop(tp)
            self._unplace(tp)
            self._offline[tp] = log_dir
            try:
                log.close()
            except Exception:  # noqa: BLE001 - the disk failed; nothing more to save here
                pass
            self.cleaner.forget(*tp)
        if gone:
            logger.error("Logs for partitions %s are offline due to failure on log directory %s",
                         ",".join(f"{t}-{p}" for t, p in sorted(gone)), log_dir)
        return gone

    def handle_storage_error(self, topic: str, partition: int, exc: BaseException) -> None:
        """An I/O error met while serving a partition: its log dir goes offline when the error
        says the dir failed (see log.errors.is_log_dir_failure); shortages leave it online."""
        log_dir = self._dir_of.get((topic, partition))
        if log_dir is not None and is_log_dir_failure(exc):
            self.mark_offline(log_dir, f"Error while serving {topic}-{partition} in dir {log_dir}: {exc}")

    def get_or_create(
        self, topic: str, partition: int, config: LogConfig | Mapping[str, Any] | None = None
    ) -> PartitionLog:
        """The partition's log, created in the least loaded log dir when missing.

        A given config (the topic's effective config) replaces the log's current one.
        """
        tp = (topic, partition)
        effective = None if config is None else self.default_config.merged(
            config.overrides if isinstance(config, LogConfig) else config
        )
        existing = self._logs.get(tp)
        if existing is not None:
            if effective is not None:
                existing.update_config(effective)
            return existing
        if self._owns is not None and not self._owns(topic, partition):
            raise ValueError(f"worker {self.worker} does not own {topic}-{partition}: "
                             "its log is opened by the worker that owns it, never by another")
        if tp in self._offline:
            raise KafkaStorageError(f"Partition {topic}-{partition} is in an offline log directory")
        live = self.live_log_dirs
        if not live:
            raise KafkaStorageError(f"No log directories available. Tried {', '.join(self.log_dirs)}")
        if self._shared_dir_counts is not None:
            shared = self._shared_dir_counts
            log_dir = min(live, key=lambda d: shared.get(self.log_dirs.index(d)))
        else:
            log_dir = min(live, key=lambda d: self._partitions_in[d])
        path = os.path.join(log_dir, f"{topic}-{partition}")
        existed = os.path.exists(path)
        try:
            os.makedirs(log_dir, exist_ok=True)
            log = PartitionLog(
                path,
                effective if effective is not None else self.default_config,
                clock_ms=self._clock_ms,
                flusher=self.flusher,
            )
        except OSError as e:
            # Kafka's LogManager.getOrCreateLog: the dir goes offline when its disk failed.
            message = f"Error while creating log for {topic}-{partition} in dir {log_dir}: {_os_reason(e)}"
            if is_log_dir_failure(e):
                self.mark_offline(log_dir, message)
            elif not existed:
                shutil.rmtree(path, ignore_errors=True)  # a shortage: nothing half-made stays
            raise KafkaStorageError(message) from e
        self._logs[tp] = log
        self._place(tp, log_dir)
        return log

    def partitions(self) -> list[TopicPartition]:
        return list(self._logs)

    def logs(self) -> Iterator[tuple[TopicPartition, PartitionLog]]:
        return iter(list(self._logs.items()))

    def log_values(self):
        """A live view of the logs, without a copy: for scans that run every second over every
        partition and do not create or delete logs meanwhile (the cleaner's look for work).
        Copying 10,000 entries each time woke the garbage collector over the whole heap."""
        return self._logs.values()

    def log_dir_of(self, topic: str, partition: int) -> str | None:
        return self._dir_of.get((topic, partition))

    def _place(self, tp: TopicPartition, log_dir: str) -> None:
        self._unplace(tp)
        self._dir_of[tp] = log_dir
        self._partitions_in[log_dir] += 1
        if self._shared_dir_counts is not None:
            self._shared_dir_counts.add(self.log_dirs.index(log_dir), 1)

    def _unplace(self, tp: TopicPartition) -> str | None:
        log_dir = self._dir_of.pop(tp, None)
        if log_dir is not None:
            self._partitions_in[log_dir] -= 1
            if self._shared_dir_counts is not None:
                self._shared_dir_counts.add(self.log_dirs.index(log_dir), -1)
        return log_dir

    def delete_partition(self, topic: str, partition: int) -> bool:
        """Remove a partition's log and its directory; False when there was none."""
        return bool(self.delete_partitions([(topic, partition)]))

    def delete_partitions(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """Remove these partitions' logs and directories (a deleted topic): each is closed and
        renamed `*-delete`, then each log dir is fsynced and checkpointed once, and the renamed
        directories removed (on the flusher thread when there is one, as Kafka deletes them
        in the background; a restart removes what a crash left). Per partition, an fsync and
        the checkpoints made deleting a topic of 10,000 partitions take minutes. Returns the
        partitions there were."""
        deleted, dirs, doomed = [], set(), []
        try:
            for tp in partitions:
                if self._offline.pop(tp, None) is not None:
                    deleted.append(tp)  # its files stay on the failed disk, as with Kafka
                    continue
                log = self._logs.pop(tp, None)
                log_dir = self._unplace(tp)
                if log is None:
                    continue
                dirs.add(log_dir)
                doomed.append(log.delete(batched=True))
                if self.worker is not None:
                    self._gone[tp] = log_dir
                self.cleaner.forget(*tp)
                deleted.append(tp)
        finally:
            for log_dir in sorted(dirs):
                fsync_directory(log_dir)
                self.checkpoint_all(only_dir=log_dir)
            if doomed:
                self._remove_later(doomed)
        return deleted

    def _remove_later(self, paths: list[str]) -> None:
        def remove() -> None:
            for path in paths:
                shutil.rmtree(path, ignore_errors=True)

        if self.flusher is not None:
            try:
                self.flusher.submit(remove)
                return
            except RuntimeError:  # shut down: do it here
                pass
        remove()

    def replace_current_with_future(self, future: FutureLog) -> str:
        """The end of a move between log dirs (log/future_log.py), as Kafka's
        LogManager.replaceCurrentWithFutureLog: the current log is closed, the future log's last
        copy pass made, the future directory renamed to the partition's name and the old one to
        `*-delete` (returned, for the caller to remove), and the log opened in its new dir with the
        offsets it had (its files were closed cleanly). The partition's offsets are checkpointed
        in the new dir before its directory appears there. A failure before the rename reopens
        the current log where it was."""
        tp = (future.topic, future.partition)
        current, source_dir = self._logs[tp], self._dir_of[tp]
        offsets = {"recovery_point": current.log_end_offset, "log_start_offset": current.log_start_offset,
                   "high_watermark": current.high_watermark}
        current.close()
        target = os.path.join(future.log_dir, os.path.basename(current.dir))
        try:
            future.copy(future.plan(current, final=True))
            self._place(tp, future.log_dir)
            self.checkpoint_all(only_dir=future.log_dir)
            os.rename(future.path, target)
        except BaseException:
            self._place(tp, source_dir)
            self._logs[tp] = self._open_moved(current.dir, current.config, offsets)
            raise
        self._logs[tp] = self._open_moved(target, current.config, offsets)
        doomed = os.path.join(source_dir, deleted_dir_name(*tp))
        os.rename(current.dir, doomed)
        if self.worker is not None:
            self._gone[tp] = source_dir
        fsync_directory(future.log_dir)
        fsync_directory(source_dir)
        self.checkpoint_all(only_dir=source_dir)
        self.cleaner.write_checkpoints()
        return doomed

    def _open_moved(self, path: str, config: LogConfig, offsets: dict[str, int]) -> PartitionLog:
        return PartitionLog(path, config, clean_shutdown=True, clock_ms=self._clock_ms, flusher=self.flusher,
                            **offsets)

    # -- periodic work ----------------------------------------------------------------------------

    def flush_all(self) -> None:
        for _, log in self.logs():
            log.flush()
        self.checkpoint_recovery_points()

    def flush_dirty_logs(self, now_ms: int | None = None) -> int:
        """fsync logs whose flush.ms has passed; returns how many were flushed.

        Also writes the log start offset checkpoint when one moved (DeleteRecords): a restart
        must not bring back records a client was told are deleted.
        """
        now_ms = self._clock_ms() if now_ms is None else now_ms
        flushed = sum(1 for _, log in self.logs() if log.maybe_flush(now_ms))
        if flushed:
            self.checkpoint_recovery_points()
        if any(self._checkpointed_start_offsets.get(tp) != log.log_start_offset for tp, log in self.logs()):
            self.checkpoint_log_start_offsets()
        return flushed

    def start_dirty_flushes(self, now_ms: int | None = None) -> list[concurrent.futures.Future]:
        """flush_dirty_logs off the event loop: start a flush job for each log whose flush.ms has
        passed; the flush jobs under way of all logs (rolls' too), for the caller to await before
        `checkpoint_later(RECOVERY_POINT_CHECKPOINT)`."""
        now_ms = self._clock_ms() if now_ms is None else now_ms
        pending = []
        for log in self._logs.values():  # no copy: this runs every second over every log
            log.maybe_flush(now_ms, background=True)
            pending.extend(log.pending_flushes())
        return pending

    def start_offsets_moved(self) -> bool:
        """Whether a log start offset moved since log-start-offset-checkpoint was last written."""
        checkpointed = self._checkpointed_start_offsets
        return any(checkpointed.get(tp) != log.log_start_offset for tp, log in self._logs.items())

    def delete_old_segments(self, now_ms: int | None = None, checkpoint: bool = True) -> int:
        """One retention pass over all logs (retention.ms, retention.bytes, log start offset);
        checkpoint=False leaves the log start offset checkpoint to the caller (`checkpoint_later`)."""
        now_ms = self._clock_ms() if now_ms is None else now_ms
        deleted = sum(log.delete_old_segments(now_ms) for _, log in self.logs())
        if deleted and checkpoint:
            self.checkpoint_log_start_offsets()
        return deleted

    # -- checkpoints ------------------------------------------------------------------------------

    _OFFSET_OF: dict[str, Callable[[PartitionLog], int]] = {
        RECOVERY_POINT_CHECKPOINT: lambda log: log.recovery_point,
        LOG_START_OFFSET_CHECKPOINT: lambda log: log.log_start_offset,
        REPLICATION_OFFSET_CHECKPOINT: lambda log: log.high_watermark,
    }

    def _take_checkpoint(self, file_name: str, only_dir: str | None = None
                         ) -> list[tuple[str, int, dict[TopicPartition, int]]]:
        """(path, ticket, offsets) of each log dir's checkpoint file, taken now."""
        offset_of = self._OFFSET_OF[file_name]
        taken = []
        for log_dir in self.log_dirs:
            if (only_dir is not None and log_dir != only_dir) or log_dir in self.offline_dirs:
                continue
            path = self.checkpoint_path(log_dir, file_name)
            offsets = {tp: offset_of(log) for tp, log in self._logs.items() if self._dir_of[tp] == log_dir}
            if self._gone:
                offsets.update(self.gone_from(log_dir))
            taken.append((path, self._checkpoints.take(path), offsets))
        if file_name == LOG_START_OFFSET_CHECKPOINT and only_dir is None:
            self._checkpointed_start_offsets = {tp: log.log_start_offset for tp, log in self._logs.items()}
        return taken

    def _write_checkpoint(self, file_name: str, only_dir: str | None = None) -> None:
        for path, ticket, offsets in self._take_checkpoint(file_name, only_dir):
            self._checkpoints.write(path, ticket, offsets)

    def checkpoint_later(self, file_name: str) -> concurrent.futures.Future:
        """Take a checkpoint's offsets now and write its files on the flusher (inline without one)."""
        taken = self._take_checkpoint(file_name)

        def write() -> None:
            for path, ticket, offsets in taken:
                self._checkpoints.write(path, ticket, offsets)

        if self.flusher is None:
            future = concurrent.futures.Future()
            write()
            future.set_result(None)
            return future
        return self.flusher.submit(write)

    def checkpoint_recovery_points(self) -> None:
        self._write_checkpoint(RECOVERY_POINT_CHECKPOINT)

    def checkpoint_log_start_offsets(self) -> None:
        self._write_checkpoint(LOG_START_OFFSET_CHECKPOINT)

    def checkpoint_high_watermarks(self) -> None:
        self._write_checkpoint(REPLICATION_OFFSET_CHECKPOINT)

    def checkpoint_all(self, only_dir: str | None = None) -> None:
        self._write_checkpoint(RECOVERY_POINT_CHECKPOINT, only_dir=only_dir)
        self._write_checkpoint(LOG_START_OFFSET_CHECKPOINT, only_dir=only_dir)
        self._write_checkpoint(REPLICATION_OFFSET_CHECKPOINT, only_dir=only_dir)

    # -- shutdown ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Clean shutdown: flush and close every log, write the checkpoints, then the marker (a
        worker's: its checkpoint files only; the supervisor writes the marker)."""
        if not self._loaded:
            return  # never loaded: the checkpoints on disk are still the truth
        self.cleaner.stop()
        # On a local file system one syncfs makes every closed log durable: with 10,000 partitions
        # one fsync after another (segment, indexes, snapshot, epochs: 11-20 s) outlasted a 15 s
        # stop. Elsewhere (FUSE, NFS) each log is fsynced as it closes.
        whole: dict[str, bool] = {}
        for _, log in self.logs():
            parent = os.path.dirname(log.dir)
            if parent not in whole:
                whole[parent] = syncfs_usable(parent)
            log.close(sync=not whole[parent])
        for parent in (parent for parent, used in whole.items() if used):
            try:
                sync_file_system(parent)
            except OSError as e:
                # Neither checkpoints nor the marker: the next start recovers from the last ones.
                logger.error("Error while syncing %s at shutdown: %s", parent, e)
                raise KafkaStorageError(f"syncfs of {parent} failed: {e}") from e
        self.checkpoint_all()
        if self.worker is None:
            write_clean_shutdown_markers(self.live_log_dirs)
        self._logs.clear()
        for tp in list(self._dir_of):
            self._unplace(tp)
        self._partitions_in = dict.fromkeys(self.log_dirs, 0)
        self._offline.clear()
        self.offline_dirs.clear()
        self._loaded = False


# -- the supervisor of workers ---------------------------------------------------------------------
# Run in one process, before the workers start and after they have all exited: never beside a
# LogManager that writes the same log dirs.


def _partition_dirs(log_dir: str) -> set[TopicPartition]:
    """The partitions whose `<topic>-<partition>` directory is in the log dir."""
    present = set()
    for name in os.listdir(log_dir):
        if name.startswith(".") or name.endswith(_NOT_PARTITION_SUFFIXES):
            continue
        try:
            tp = parse_partition_dir_name(name)
        except ValueError:
            continue
        if os.path.isdir(os.path.join(log_dir, name)):
            present.add(tp)
    return present


def _worker_files(log_dir: str, name: str) -> list[str]:
    """The `<name>.worker-<i>` files in the log dir and the temporary files a write of one left,
    by worker number."""
    pattern = re.compile(re.escape(name) + r"\.worker-(\d+)(\.tmp)?")
    found = [(int(m.group(1)), entry) for entry in os.listdir(log_dir) if (m := pattern.fullmatch(entry))]
    return [entry for _, entry in sorted(found)]


# When two worker files list one partition (each partition has one owner, so only files left by
# something other than a worker's run could): the value that is safe to be wrong with. A lower
# recovery point re-scans more; a higher log start offset brings no deleted record back; a lower
# high watermark or first dirty offset delays a read or cleans again.
_ON_CONFLICT: dict[str, Callable[[int, int], int]] = {
    RECOVERY_POINT_CHECKPOINT: min,
    LOG_START_OFFSET_CHECKPOINT: max,
    REPLICATION_OFFSET_CHECKPOINT: min,
    CLEANER_OFFSET_CHECKPOINT: min,
}


def merge_worker_checkpoints(log_dirs: list[str]) -> None:
    """Fold the workers' `<name>.worker-<i>` checkpoint files into each log dir's main files.

    For every partition whose directory is in the log dir, the value a worker file lists, else the
    main file's; partitions without a directory there are dropped. The main file is replaced
    atomically, then the worker files are removed, so running it again, or after a crash half-way,
    gives the same files. A corrupt worker file is logged and skipped: the main file's older value
    stands (an older recovery point re-scans more of the log, which is safe).
    """
    for log_dir in (os.path.abspath(d) for d in log_dirs):
        if not os.path.isdir(log_dir):
            continue
        present = _partition_dirs(log_dir)
        removed = False
        for name in WORKER_CHECKPOINT_NAMES:
            worker_files = _worker_files(log_dir, name)
            main = os.path.join(log_dir, name)
            try:
                offsets = read_offset_checkpoint(main)
                main_corrupt = False
            except CorruptCheckpoint as e:
                logger.warning("%s; merging the worker files without it", e)
                offsets, main_corrupt = {}, True
            from_workers: dict[TopicPartition, int] = {}
            for entry in worker_files:
                if entry.endswith(".tmp"):
                    continue  # a write a crash interrupted: the worker file it replaced still counts
                path = os.path.join(log_dir, entry)
                try:
                    listed = read_offset_checkpoint(path)
                except CorruptCheckpoint as e:
                    logger.warning("%s; skipping it (the offsets in %s stand)", e, main)
                    continue
                for tp, offset in listed.items():
                    if tp in from_workers and from_workers[tp] != offset:
                        logger.warning("%s: %s-%d is listed by two workers (%d and %d)", main, tp[0], tp[1],
                                       from_workers[tp], offset)
                        offset = _ON_CONFLICT[name](from_workers[tp], offset)
                    from_workers[tp] = offset
            merged = {tp: from_workers[tp] if tp in from_workers else offsets[tp]
                      for tp in present if tp in from_workers or tp in offsets}
            if merged != offsets or (main_corrupt and any(not e.endswith(".tmp") for e in worker_files)):
                write_offset_checkpoint(main, merged)
            # (A corrupt main file with no worker file to replace it stays: loading it re-scans every log.)
            for entry in worker_files:
                try:
                    os.unlink(os.path.join(log_dir, entry))
                    removed = True
                except FileNotFoundError:
                    pass
        if removed:
            fsync_directory(log_dir)


def clean_shutdown_marked(log_dirs: list[str]) -> bool:
    """Whether every log dir carries the clean-shutdown marker (its logs need no recovery)."""
    return all(os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_MARKER)) for d in log_dirs)


def remove_clean_shutdown_markers(log_dirs: list[str]) -> None:
    """Remove the clean-shutdown markers (durably: a crash from now on must be recovered from)."""
    for log_dir in log_dirs:
        try:
            os.unlink(os.path.join(log_dir, CLEAN_SHUTDOWN_MARKER))
        except FileNotFoundError:
            continue
        fsync_directory(log_dir)


def write_clean_shutdown_markers(log_dirs: list[str]) -> None:
    """Mark the log dirs as closed cleanly (after their logs and checkpoints are written)."""
    for log_dir in log_dirs:
        write_file_atomically(os.path.join(log_dir, CLEAN_SHUTDOWN_MARKER), b"")
