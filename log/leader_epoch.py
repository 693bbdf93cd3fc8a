"""The leader epoch cache of one partition: which leader epoch started at which offset.

It answers OffsetForLeaderEpoch (a follower asks "where did epoch N end?" to find where its log
diverged) and is persisted in `leader-epoch-checkpoint` (Kafka's format). Entries are kept with
both epochs and start offsets strictly increasing, as Kafka's LeaderEpochFileCache keeps them.

As in Kafka, a new entry is written (and fsynced) before `assign` returns, so the file never
misses an entry, while truncations (DeleteRecords, retention, a follower's truncation) are
written later by the log flusher when there is one (Kafka's truncateFrom*AsyncFlush): a stale
file only holds entries that loading truncates away again (PartitionLog._load). The first entry
of a partition that has no file yet is fsynced by the flusher too: until then a crash leaves no
file or a torn one, and loading rebuilds the cache from the batches' epochs, as without a file
(a new topic's partitions then cost the event loop no fsync).
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
from typing import NamedTuple

from log.flusher import sync_paths_on
from log.checkpoints import (
    LEADER_EPOCH_CHECKPOINT,
    CorruptCheckpoint,
    fsync_directory_if_exists,
    fsync_file_if_exists,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

logger = logging.getLogger(__name__)


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochCache:
    """In-memory epoch entries, written through to the checkpoint file on every change."""

    def __init__(self, partition_dir: str, flusher: concurrent.futures.Executor | None = None):
        self.path = os.path.join(partition_dir, LEADER_EPOCH_CHECKPOINT)
        self._flusher = flusher
        # The event loop (assign) and the flusher (truncations) write the same file.
        self._write_lock = threading.Lock()
        self._closed = False
        self.loaded_from_checkpoint = os.path.exists(self.path)
        try:
            entries = read_leader_epoch_checkpoint(self.path)
        except CorruptCheckpoint as e:
            logger.warning("ignoring corrupt leader epoch checkpoint: %s", e)
            entries = []
            self.loaded_from_checkpoint = False
        self._entries: list[EpochEntry] = []
        for epoch, start in entries:
            self._assign(EpochEntry(epoch, start))

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset` (a no-op when it is already the latest epoch)."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry {epoch} {start_offset}")
        previous = list(self._entries)
        if not self._assign(EpochEntry(epoch, start_offset)):
            return False
        try:
            if not previous and self._flusher is not None and not os.path.exists(self.path):
                with self._write_lock:
                    write_leader_epoch_checkpoint(self.path, list(self._entries), sync=False)
                sync_paths_on(self._flusher, [self.path], [os.path.dirname(self.path)],
                              lambda: self._submit(self._fsync_if_open))
            else:
                self.flush()
        except OSError:
            # The checkpoint could not be written (disk full): the append that asked fails, and
            # the cache stays as the file says, so the next attempt writes the entry again.
            self._entries = previous
            raise
        return True

    def _assign(self, entry: EpochEntry) -> bool:
        if self._entries:
            latest = self._entries[-1]
            if entry.epoch == latest.epoch and entry.start_offset >= latest.start_offset:
                return False
        # A new entry supersedes any that would break monotonicity (a larger or equal epoch, or a
        # start offset at or past the new one): that history was truncated away.
        while self._entries and (
            self._entries[-1].epoch >= entry.epoch or self._entries[-1].start_offset >= entry.start_offset
        ):
            self._entries.pop()
        self._entries.append(entry)
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, with Kafka's rules.

        The end offset of an epoch is the start offset of the next larger epoch, or the log end
        offset when the requested epoch is the latest. A requested epoch we do not know answers
        with the largest known epoch below it; one below everything we know answers with itself
        and the first known start offset; one above everything answers (-1, -1).
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._entries[-1].epoch == requested_epoch:
            return requested_epoch, log_end_offset
        higher = next((e for e in self._entries if e.epoch > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = None
        for e in self._entries:
            if e.epoch <= requested_epoch:
                floor = e
        if floor is None:
            return requested_epoch, higher.start_offset
        return floor.epoch, higher.start_offset

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range contains `offset`, or None when offset precedes every entry."""
        previous = None
        for e in self._entries:
            if e.start_offset == offset:
                return e.epoch
            if e.start_offset > offset:
                return previous
            previous = e.epoch
        return previous

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after `end_offset` (the log was truncated there)."""
        if end_offset < 0 or not self._entries or self._entries[-1].start_offset < end_offset:
            return
        self._entries = [e for e in self._entries if e.start_offset < end_offset]
        self._flush_later()

    def truncate_from_start(self, start_offset: int) -> None:
        """Forget history below the log start offset; the epoch in force there now starts at it."""
        removed = [e for e in self._entries if e.start_offset <= start_offset]
        if not removed:
            return
        kept = [e for e in self._entries if e.start_offset > start_offset]
        last_removed = removed[-1]
        if last_removed.start_offset == start_offset and len(removed) == 1:
            return
        self._entries = [EpochEntry(last_removed.epoch, start_offset), *kept]
        self._flush_later()

    def clear(self) -> None:
        self._entries = []
        self.flush()

    def flush(self) -> None:
        with self._write_lock:
            write_leader_epoch_checkpoint(self.path, list(self._entries))

    def _flush_later(self) -> None:
        if self._flusher is None:
            self.flush()
        else:
            self._submit(self._flush_if_dir_exists)

    def _submit(self, job) -> None:
        try:
            self._flusher.submit(job)
        except RuntimeError:  # the flusher was shut down (the broker is closing): do it here
            job()

    def _flush_if_dir_exists(self) -> None:
        """The flusher's write: the entries as they are then; nothing once the partition was
        closed or deleted (a partition created again under the same name has its own cache)."""
        with self._write_lock:
            if self._closed:
                return
            try:
                write_leader_epoch_checkpoint(self.path, list(self._entries))
            except FileNotFoundError:
                pass  # the partition directory is gone
            except OSError as e:
                logger.error("could not write %s: %s", self.path, e)

    def _fsync_if_open(self) -> None:
        with self._write_lock:
            if self._closed:
                return
            fsync_file_if_exists(self.path)
            fsync_directory_if_exists(os.path.dirname(self.path))

    def close(self, write_pending: bool = False, sync: bool = True) -> None:
        """No more writes from the flusher (the partition is closed or deleted); write_pending
        writes first what the flusher may not have written yet (a clean shutdown; sync=False
        leaves its fsync to the caller)."""
        with self._write_lock:
            if write_pending and self._flusher is not None and not self._closed:
                write_leader_epoch_checkpoint(self.path, list(self._entries), sync=sync)
            self._closed = True
