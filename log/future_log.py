"""Moving a partition's log to another of the broker's log dirs (AlterReplicaLogDirs, KIP-113).

As Kafka's ReplicaAlterLogDirsManager does it: the partition keeps serving from its current log
while a *future log*, `<topic>-<partition>.<id>-future` in the destination dir, catches up with
it; then the future log replaces the current one (LogManager.replace_current_with_future: the
future directory takes the partition's name, the old one is renamed `*-delete` and removed).
Kafka fills the future log by fetching from the current one; here it is a copy of the current
log's files, which are append-only except where the log itself rewrites them (truncation and
compaction swaps, counted by `PartitionLog.rewrites`; retention deletes whole files). Each pass
copies what changed since the last one (the new tail of each segment file, any other file whose
identity, size or modification time changed) in a worker thread, fsyncing what it wrote; when a
pass had little left to copy, the current log is closed and the last pass runs on the event loop,
where nothing can change the log under it, and the swap follows at once. Compaction of the
partition is paused meanwhile (Kafka's abortAndPauseCleaning).

Moves run one at a time (Kafka's num.replica.alter.log.dirs.threads defaults to 1). A future
log left by a restart is copied again from the start.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import uuid
from dataclasses import dataclass, field

from log.checkpoints import fsync_directory
from log.partition_log import parse_partition_dir_name

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

FUTURE_DIR_SUFFIX = "-future"
# A pass that copied less than this ends the copying: the rest is copied with the log closed.
SWAP_THRESHOLD_BYTES = 4 << 20
_SEGMENT_SUFFIX = ".log"
_CHUNK = 1 << 20


def future_dir_name(topic: str, partition: int) -> str:
    """Kafka's UnifiedLog.logFutureDirName: `<topic>-<partition>.<uuid without dashes>-future`."""
    return f"{topic}-{partition}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"


def parse_future_dir_name(name: str) -> TopicPartition:
    if not name.endswith(FUTURE_DIR_SUFFIX) or "." not in name:
        raise ValueError(f"not a future log directory: {name}")
    return parse_partition_dir_name(name[: -len(FUTURE_DIR_SUFFIX)].rsplit(".", 1)[0])


@dataclass
class _Pass:
    """What one copy pass copies, taken on the event loop: the segment files' sizes and the log
    end offset they hold together, and the log's rewrite count."""
    source_dir: str
    segment_sizes: dict[str, int]
    log_end_offset: int
    rewrites: int
    final: bool = False


@dataclass
class FutureLog:
    """The copy of one partition's log growing in another log dir."""
    topic: str
    partition: int
    log_dir: str
    path: str
    # What the future directory holds of each source file: (inode, bytes copied, mtime in ns).
    copied: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    # The current log's end offset when the last pass began: the future log has everything below.
    log_end_offset: int = 0
    rewrites: int | None = None
    cancelled: bool = False

    @property
    def size(self) -> int:
        """Bytes of segment files copied so far (DescribeLogDirs' partition size of the future log)."""
        return sum(size for name, (_, size, _) in self.copied.items() if name.endswith(_SEGMENT_SUFFIX))

    def plan(self, plog, final: bool = False) -> _Pass:
        return _Pass(plog.dir, {os.path.basename(s.log_path): s.size for s in plog.segments},
                     plog.log_end_offset, plog.rewrites, final)

    def copy(self, plan: _Pass) -> int:
        """Bring the future directory up to the source's state of `plan`; the bytes copied. Runs in a
        worker thread, or on the event loop for the final pass (the source log closed)."""
        os.makedirs(self.path, exist_ok=True)
        rewritten = self.rewrites is not None and plan.rewrites != self.rewrites
        present = set(os.listdir(plan.source_dir))
        written = 0
        for name in sorted(present):
            source = os.path.join(plan.source_dir, name)
            try:
                stat = os.stat(source)
            except FileNotFoundError:
                continue  # deleted meanwhile (retention): the next pass drops it
            if not os.path.isfile(source):
                continue
            is_segment = name.endswith(_SEGMENT_SUFFIX)
            if is_segment and not plan.final:
                if name not in plan.segment_sizes:
                    continue  # rolled after the pass was planned
                limit = min(plan.segment_sizes[name], stat.st_size)
            else:
                limit = stat.st_size
            done = self.copied.get(name)
            if done is not None and (done[0], done[1], done[2]) == (stat.st_ino, limit, stat.st_mtime_ns) \
                    and not rewritten:
                continue
            if is_segment and done is not None and done[0] == stat.st_ino and done[1] <= limit and not rewritten:
                start = done[1]  # the file only grew: copy its new tail
            else:
                start = 0
            copied_to = self._copy_file(source, os.path.join(self.path, name), start, limit, stat)
            self.copied[name] = (stat.st_ino, copied_to, stat.st_mtime_ns)
            written += copied_to - start
        for name in list(self.copied):
            if name not in present:
                del self.copied[name]
                try:
                    os.unlink(os.path.join(self.path, name))
                except FileNotFoundError:
                    pass
        for name in os.listdir(self.path):
            if name not in self.copied:  # left by an earlier run, or copied before a source delete
                os.unlink(os.path.join(self.path, name))
        fsync_directory(self.path)
        self.rewrites = plan.rewrites
        self.log_end_offset = plan.log_end_offset
        return written

    @staticmethod
    def _copy_file(source: str, target: str, start: int, limit: int, stat: os.stat_result) -> int:
        """Copy source[start:limit] to the same place in target (truncated there first); the end
        copied (short when the source shrank meanwhile). The copy keeps the source's mtime:
        retention of a segment without timestamps goes by it."""
        position = start
        with open(source, "rb") as src, open(target, "r+b" if start and os.path.exists(target) else "wb") as dst:
            dst.truncate(start)
            dst.seek(start)
            src.seek(start)
            while position < limit:
                chunk = src.read(min(_CHUNK, limit - position))
                if not chunk:
                    break
                dst.write(chunk)
                position += len(chunk)
            dst.flush()
            os.fsync(dst.fileno())
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        return position


class LogDirMover:
    """The partitions being moved between the log dirs of one LogManager, and the background task
    (`run`) that moves them."""

    def __init__(self, manager) -> None:
        self._manager = manager
        self._futures: dict[TopicPartition, FutureLog] = {}
        self._abandoned: list[FutureLog] = []
        self._wakeup: asyncio.Event | None = None

    # -- requests (on the event loop) ---------------------------------------------------------------

    def future(self, topic: str, partition: int) -> FutureLog | None:
        return self._futures.get((topic, partition))

    def futures(self) -> list[FutureLog]:
        return list(self._futures.values())

    def alter_log_dir(self, topic: str, partition: int, log_dir: str) -> None:
        """Move the partition's log to `log_dir` (a configured log dir; the caller checks): a
        future log there is started, unless the log is there already (a move elsewhere under way
        is abandoned) or is already heading there (Kafka's ReplicaManager.alterReplicaLogDirs)."""
        tp = (topic, partition)
        current = self._future_abandon_unless(tp, log_dir)
        if current is not None or self._manager.log_dir_of(topic, partition) == log_dir:
            return
        future = FutureLog(topic, partition, log_dir, os.path.join(log_dir, future_dir_name(topic, partition)))
        self._futures[tp] = future
        self._manager.cleaner.paused.add(tp)
        logger.info("moving %s-%d from %s to %s", topic, partition, self._manager.log_dir_of(topic, partition), log_dir)
        self._wake()

    def _future_abandon_unless(self, tp: TopicPartition, log_dir: str) -> FutureLog | None:
        future = self._futures.get(tp)
        if future is None or future.log_dir == log_dir:
            return future
        self._abandon(future)
        return None

    def _abandon(self, future: FutureLog) -> None:
        tp = (future.topic, future.partition)
        future.cancelled = True
        if self._futures.get(tp) is future:
            del self._futures[tp]
            self._manager.cleaner.paused.discard(tp)
        self._abandoned.append(future)
        self._wake()

    def recover(self) -> None:
        """After LogManager.load: future logs a restart interrupted are copied again, from the
        start; those of partitions this broker no longer has are removed."""
        for log_dir in self._manager.log_dirs:
            for name in sorted(os.listdir(log_dir)):
                if not name.endswith(FUTURE_DIR_SUFFIX):
                    continue
                path = os.path.join(log_dir, name)
                try:
                    topic, partition = parse_future_dir_name(name)
                except ValueError:
                    continue
                if not self._manager.owns_partition(topic, partition):
                    continue  # another worker's move (broker/workers/): that worker resumes it
                shutil.rmtree(path, ignore_errors=True)
                if self._manager.get(topic, partition) is not None:
                    self.alter_log_dir(topic, partition, log_dir)

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    # -- the background task ------------------------------------------------------------------------

    async def run(self) -> None:
        self._wakeup = asyncio.Event()
        while True:
            if not self._futures and not self._abandoned:
                await self._wakeup.wait()
            self._wakeup.clear()
            while self._abandoned:
                future = self._abandoned.pop()
                await asyncio.to_thread(shutil.rmtree, future.path, True)
            if self._futures:
                future = next(iter(self._futures.values()))
                try:
                    await self._move(future)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    logger.exception("moving %s-%d to %s failed", future.topic, future.partition, future.log_dir)
                    self._abandon(future)

    async def _move(self, future: FutureLog) -> None:
        """Copy passes until one has little left, then the swap; returns early when the move was
        abandoned or the partition deleted."""
        tp = (future.topic, future.partition)
        cleaner = self._manager.cleaner
        while not future.cancelled:
            plog = self._manager.get(*tp)
            if plog is None:  # deleted
                self._abandon(future)
                return
            plan = future.plan(plog)
            copied = await asyncio.to_thread(future.copy, plan)
            if future.cancelled or self._manager.get(*tp) is not plog:
                continue
            if copied > SWAP_THRESHOLD_BYTES or plog.rewrites != plan.rewrites or cleaner.cleaning is plog:
                await asyncio.sleep(0)
                continue
            # The last pass and the swap, with nothing else running (LogManager closes the log
            # first, so the copy is complete: index entries, epochs, the producer snapshot).
            doomed = self._manager.replace_current_with_future(future)
            del self._futures[tp]
            cleaner.paused.discard(tp)
            logger.info("moved %s-%d to %s", future.topic, future.partition, future.log_dir)
            await asyncio.to_thread(shutil.rmtree, doomed, True)
            return
