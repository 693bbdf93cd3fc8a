"""The log cleaner: compacts `cleanup.policy=compact` logs so each key keeps its last record.

It follows Kafka's LogCleaner:

- Choosing a log. A log's first dirty offset (kept per partition in each log dir's
  `cleaner-offset-checkpoint`; a worker of the multi-process broker writes its own partitions'
  to `cleaner-offset-checkpoint.worker-<i>`, see log/log_manager.py) splits it into a clean head,
  already compacted, and a dirty tail.
  The cleanable part of the tail ends at the first uncleanable offset: the active segment, the last
  stable offset (open transactions) and, with `min.compaction.lag.ms`, the first segment holding
  records younger than that lag; only whole segments are cleaned. The log with the highest dirty
  ratio (dirty bytes / all cleanable bytes) above `min.cleanable.dirty.ratio` goes first; one whose
  dirty records are older than `max.compaction.lag.ms` goes regardless of the ratio.
- Pass 1 builds the offset map: key -> last offset, over the dirty part only.
- Pass 2 rewrites every segment from the start of the log up to the map's end, in groups that fit
  in `segment.bytes`, each group into one new segment with the same base offset. A record stays if
  no later record has its key. Tombstones (null values) and transaction markers stay until their
  batch's delete horizon passes (KIP-534: the first cleaning that keeps one stamps the batch with
  now + `delete.retention.ms`). Records of aborted transactions go, and a marker goes once no
  record of its transaction is left (and its horizon passed); an aborted transaction stays in the
  `.txnindex` only while its marker stays for it. Offsets never change; gaps appear.
  A batch whose records all go still stays, empty, when it holds a producer's last sequence (so
  idempotent producers are not told OUT_OF_ORDER_SEQUENCE after compaction) or when it ends the
  group (so a crash during the swap can tell which old segments the cleaned one replaces).
  Batches keep their codec: a batch that loses records is re-compressed with it.
- The cleaned segment is swapped in with Kafka's `.cleaned` -> `.swap` -> final names protocol
  (PartitionLog.replace_segments), which the next load completes after a crash.

Why a thread: pass 1 and pass 2 decode every record, which takes seconds on a large log. They run
in a worker thread (`asyncio.to_thread`), one group at a time, reading only closed segments
through descriptors the cleaner holds (pread, no shared file offsets) and writing only its own
`.cleaned` files. Everything that changes the log (choosing segments, the swap, the checkpoint)
runs on the event loop between the thread's steps, where every other change to the log happens,
so the log needs no lock: a swap whose segments changed meanwhile (retention, DeleteRecords,
truncation) is abandoned. The GIL makes the thread share the CPU with the event loop rather than
run beside it, but the loop keeps answering requests every switch interval (5 ms) instead of
stalling for the whole clean, and fsyncs release the GIL.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Generator
from dataclasses import dataclass, field

from kafka_wire.compression import compress
from kafka_wire.record_codec import (
    ControlRecordType,
    Record,
    decode_control_key,
    decode_records,
    encode_records,
    iter_records_with_offsets,
)
from kafka_wire.records import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    NO_PRODUCER_ID,
    BatchHeader,
    InvalidRecordBatch,
    pack_batch,
    read_batch_header,
)
from log.checkpoints import CorruptCheckpoint, read_offset_checkpoint, write_offset_checkpoint
from log.partition_log import PartitionLog
from log.segment import (
    CLEANED_FILE_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    SegmentFile,
    read_batches,
    segment_file_name,
)

logger = logging.getLogger(__name__)

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
# Keys the offset map holds before a round stops short (Kafka sizes it by
# log.cleaner.dedupe.buffer.size); what does not fit is cleaned by the next round.
OFFSET_MAP_MAX_ENTRIES = 1_000_000
# The cleaned segment is written in chunks of about this size.
WRITE_CHUNK_BYTES = 1 << 20
# How often the idle cleaner looks for a log that became cleanable during its backoff.
BACKOFF_PEEK_SECONDS = 1.0
# A cleaned segment's keys are remembered (see SegmentKeys) only when it has at most this many.
SEGMENT_KEYS_MAX = 100_000

TopicPartition = tuple[str, int]


class CleaningAborted(Exception):
    """The round was stopped (shutdown) or the log changed under it; nothing was swapped."""


@dataclass
class CleanerStats:
    """What one round did (Kafka's CleanerStats, the part its log line reports)."""

    batches_read: int = 0
    records_read: int = 0
    bytes_read: int = 0
    records_retained: int = 0
    bytes_written: int = 0
    map_entries: int = 0
    segments_cleaned: int = 0
    end_offset: int = 0
    started: float = field(default_factory=time.monotonic)

    def summary(self) -> str:
        elapsed = time.monotonic() - self.started
        return (f"{self.segments_cleaned} segments, {self.records_read} records read, "
                f"{self.records_retained} kept, {self.bytes_read} -> {self.bytes_written} bytes, "
                f"{self.map_entries} keys mapped, in {elapsed:.2f}s")


@dataclass
class LogToClean:
    """A compacted log's clean and dirty sizes (Kafka's LogToClean)."""

    log: PartitionLog
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    needs_compaction_now: bool = False

    @property
    def cleanable_ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0


@dataclass
class SegmentView:
    """A segment as the cleaner saw it on the event loop: its size then, and a hold on its file."""

    segment: LogSegment
    base_offset: int
    size: int
    next_base: int  # the next segment's base offset (the upper bound of this one's offsets)
    index_entries: int
    file: SegmentFile

    @property
    def fd(self) -> int:
        return self.file.fd


@dataclass
class CleaningRound:
    """Everything the worker thread needs, captured on the event loop."""

    log: PartitionLog
    first_dirty_offset: int
    first_uncleanable_offset: int
    views: list[SegmentView]  # every segment of the log, the active one included
    dirty_start_position: int  # where pass 1 starts in the segment holding the first dirty offset
    high_watermark: int
    active_producers: dict[int, tuple[int | None, int]]
    now_ms: int
    delete_retention_ms: int
    segment_bytes: int
    max_index_entries: int
    index_interval_bytes: int
    segment_index_bytes: int
    stats: CleanerStats = field(default_factory=CleanerStats)

    def release(self) -> None:
        for view in self.views:
            view.file.release()
        self.views = []


@dataclass
class OffsetMap:
    """Pass 1's result: key -> offset of its last record, and what the map covers."""

    offsets: dict[bytes, int]
    latest_offset: int  # records above it were not mapped and are kept as they are
    aborted: dict[int, list[tuple[int, int]]]  # producer id -> aborted transactions' offset ranges


@dataclass(frozen=True)
class SegmentKeys:
    """The keys of a segment the cleaner wrote (or found it had nothing to change in), when it
    holds only plain keyed records and no tombstones: the next round leaves such a segment of the
    clean head alone, without reading it, when none of its keys is in the new offset map, since
    cleaning it again would keep every record and write the same bytes (Kafka rewrites it)."""

    size: int
    keys: frozenset[bytes]


def _control_type(data) -> ControlRecordType:
    _, records = decode_records(data)
    if not records:
        return ControlRecordType.UNKNOWN
    return decode_control_key(records[0].key)[1]


class KeyCollector:
    """The keys of the records a cleaned segment keeps, while it holds only plain keyed data (no
    control or transactional batch, no tombstone, no record without a key) and not too many."""

    def __init__(self) -> None:
        self.keys: set[bytes] | None = set()

    def add(self, header: BatchHeader, retained: list[tuple[int, int, Record]]) -> None:
        if self.keys is None:
            return
        if header.is_control or header.is_transactional or len(self.keys) + len(retained) > SEGMENT_KEYS_MAX:
            self.keys = None
            return
        for _, _, record in retained:
            if record.key is None or record.value is None:
                self.keys = None
                return
            self.keys.add(bytes(record.key))

    def result(self) -> frozenset[bytes] | None:
        return frozenset(self.keys) if self.keys is not None else None


class TransactionTracker:
    """Which batches belong to aborted transactions, and when a marker may go (Kafka's
    CleanedTransactionMetadata), carried across the groups of one round."""

    def __init__(self, aborted: dict[int, list[tuple[int, int]]]):
        self._aborted = aborted
        self._ongoing_committed: set[int] = set()
        self._ongoing_aborted: dict[int, bool] = {}  # producer id -> a batch of it was seen

    def _in_aborted_transaction(self, header: BatchHeader) -> bool:
        for first, last in self._aborted.get(header.producer_id, ()):
            if first <= header.base_offset <= last:
                return True
        return False

    def on_data_batch(self, header: BatchHeader) -> bool:
        """True when the batch belongs to an aborted transaction (its records may all go)."""
        if not header.is_transactional:
            return False
        if self._in_aborted_transaction(header):
            self._ongoing_aborted[header.producer_id] = True
            return True
        self._ongoing_committed.add(header.producer_id)
        return False

    def on_control_batch(self, header: BatchHeader, control_type: ControlRecordType) -> bool:
        """True when the marker may go: no batch of its transaction was seen in this round."""
        producer_id = header.producer_id
        if control_type == ControlRecordType.ABORT:
            self._ongoing_committed.discard(producer_id)
            return not self._ongoing_aborted.pop(producer_id, False)
        if control_type == ControlRecordType.COMMIT:
            self._ongoing_aborted.pop(producer_id, None)
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False


class LogCleaner:
    """Compacts the logs of a LogManager; `run()` is the background task, `clean_log()` one log now."""

    def __init__(self, log_manager, *, clock_ms: Callable[[], int] | None = None,
                 max_map_entries: int = OFFSET_MAP_MAX_ENTRIES):
        self._manager = log_manager
        self._clock_ms = clock_ms or (lambda: time.time_ns() // 1_000_000)
        self.max_map_entries = max_map_entries
        self._first_dirty: dict[TopicPartition, int] = {}
        # Partitions whose data the cleaner could not read (corruption): left alone until restart,
        # as Kafka marks them uncleanable.
        self.uncleanable: set[TopicPartition] = set()
        # Partitions being moved to another log dir (log/future_log.py): not cleaned meanwhile,
        # as Kafka pauses them; `cleaning` is the log a round is cleaning now.
        self.paused: set[TopicPartition] = set()
        self.cleaning: PartitionLog | None = None
        # The earliest delete horizon of the tombstones and markers each log still holds: once it
        # passes, cleaning the log removes something even without new dirty data.
        self._delete_horizons: dict[TopicPartition, int] = {}
        # Keys of segments cleaned before, by segment (read and written on the event loop only).
        self._segment_keys: weakref.WeakKeyDictionary[LogSegment, SegmentKeys] = weakref.WeakKeyDictionary()
        self._stopping = threading.Event()
        # log.cleaner.backoff.ms: read by run() at every idle wait, so a dynamic change (the broker's
        # apply_dynamic_broker_configs sets it) takes effect in the wait under way.
        self.backoff_ms = 15_000

    # -- checkpoints ------------------------------------------------------------------------------

    def load_checkpoints(self) -> None:
        """Read each log dir's cleaner-offset-checkpoint (the log manager calls it on load; a
        worker's reads the main file, as merged by the supervisor, and keeps its own partitions)."""
        self._stopping.clear()
        owns = self._manager.owns_partition
        for log_dir in self._manager.log_dirs:
            path = os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT)
            try:
                offsets = read_offset_checkpoint(path)
            except CorruptCheckpoint as e:
                # Only costs work: every compacted log is cleaned from its start again.
                logger.warning("ignoring %s: %s", path, e)
                continue
            self._first_dirty.update((tp, offset) for tp, offset in offsets.items() if owns(*tp))

    def write_checkpoints(self) -> None:
        """Each log dir's cleaner-offset-checkpoint (a worker's: `cleaner-offset-checkpoint.worker-<i>`,
        with the partitions it deleted or moved out as 0, see LogManager.gone_from)."""
        by_dir: dict[str, dict[TopicPartition, int]] = {d: self._manager.gone_from(d) for d in self._manager.log_dirs}
        for tp, offset in self._first_dirty.items():
            log_dir = self._manager.log_dir_of(*tp)
            if log_dir is not None:
                by_dir[log_dir][tp] = offset
        for log_dir, offsets in by_dir.items():
            path = self._manager.checkpoint_path(log_dir, CLEANER_OFFSET_CHECKPOINT)
            if offsets or os.path.exists(path):
                write_offset_checkpoint(path, offsets)

    def forget(self, topic: str, partition: int) -> None:
        """The partition was deleted: a partition created later under its name starts dirty."""
        tp = (topic, partition)
        self._delete_horizons.pop(tp, None)
        self.uncleanable.discard(tp)
        if self._first_dirty.pop(tp, None) is not None:
            try:
                self.write_checkpoints()
            except OSError as e:
                logger.warning("could not write %s: %s", CLEANER_OFFSET_CHECKPOINT, e)

    def first_dirty_offset(self, log: PartitionLog) -> int:
        offset = self._first_dirty.get((log.topic, log.partition), log.log_start_offset)
        if offset < log.log_start_offset or offset > log.log_end_offset:
            return log.log_start_offset  # the log was truncated or its start moved past it
        return offset

    # -- choosing a log ---------------------------------------------------------------------------

    def log_to_clean(self, log: PartitionLog, now_ms: int | None = None) -> LogToClean | None:
        """The log's clean/dirty split, or None when it is not compacted or nothing is cleanable."""
        config = log.config
        if "compact" not in config.cleanup_policy:
            return None  # most logs: decided without allocating (this runs for every log each second)
        tp = (log.topic, log.partition)
        if tp in self.uncleanable or tp in self.paused:
            return None
        now_ms = self._clock_ms() if now_ms is None else now_ms
        segments = log.segments
        first_dirty = self.first_dirty_offset(log)
        uncleanable = min(segments[-1].base_offset, log.last_stable_offset, log.high_watermark)
        lag = int(config.get("min.compaction.lag.ms", 0))
        if lag > 0:
            for i, segment in enumerate(segments[:-1]):
                if segments[i + 1].base_offset > first_dirty and segment.largest_timestamp() > now_ms - lag:
                    uncleanable = min(uncleanable, segment.base_offset)
                    break
        # Whole segments only: the first uncleanable offset moves down to a segment boundary.
        first_uncleanable = segments[0].base_offset
        for i, segment in enumerate(segments[:-1]):
            if segments[i + 1].base_offset <= uncleanable:
                first_uncleanable = segments[i + 1].base_offset
        clean_bytes = cleanable_bytes = 0
        first_dirty_segment_ts = None
        for i, segment in enumerate(segments[:-1]):
            upper = segments[i + 1].base_offset
            if upper > first_uncleanable:
                break
            if upper <= first_dirty:
                clean_bytes += segment.size
            else:
                cleanable_bytes += segment.size
                if first_dirty_segment_ts is None and segment.size:
                    first_dirty_segment_ts = segment.read_header(0).max_timestamp
        max_lag = int(config.get("max.compaction.lag.ms", 2**63 - 1))
        needs_now = (cleanable_bytes > 0 and first_dirty_segment_ts is not None
                     and first_dirty_segment_ts >= 0 and now_ms - first_dirty_segment_ts > max_lag)
        horizon = self._delete_horizons.get((log.topic, log.partition))
        if horizon is not None and horizon <= now_ms and clean_bytes > 0:
            needs_now = True
        return LogToClean(log, min(first_dirty, first_uncleanable), first_uncleanable,
                          clean_bytes, cleanable_bytes, needs_now)

    def filthiest_log(self, now_ms: int | None = None) -> LogToClean | None:
        """The log most in need of cleaning, or None (Kafka's grabFilthiestCompactedLog)."""
        now_ms = self._clock_ms() if now_ms is None else now_ms
        best = None
        for log in self._manager.log_values():
            candidate = self.log_to_clean(log, now_ms)
            if candidate is None:
                continue
            ratio = float(log.config.get("min.cleanable.dirty.ratio", 0.5))
            if not (candidate.needs_compaction_now or
                    (candidate.cleanable_bytes > 0 and candidate.cleanable_ratio > ratio)):
                continue
            if best is None or candidate.needs_compaction_now > best.needs_compaction_now or (
                    candidate.needs_compaction_now == best.needs_compaction_now
                    and candidate.cleanable_ratio > best.cleanable_ratio):
                best = candidate
        return best

    # -- running ----------------------------------------------------------------------------------

    def clean_log(self, log: PartitionLog, now_ms: int | None = None) -> CleanerStats | None:
        """Clean one log now, whatever its dirty ratio, in the calling thread. None when nothing
        below the first uncleanable offset can be cleaned."""
        cleanable = self.log_to_clean(log, now_ms)
        if cleanable is None:
            return None
        return self._drive(cleanable, now_ms)

    def clean_filthiest_log(self, now_ms: int | None = None) -> CleanerStats | None:
        """One step of the background cleaner, in the calling thread."""
        cleanable = self.filthiest_log(now_ms)
        return None if cleanable is None else self._drive(cleanable, now_ms)

    async def clean_filthiest_log_async(self) -> CleanerStats | None:
        """One step of the background cleaner: the heavy passes in a worker thread."""
        cleanable = self.filthiest_log()
        if cleanable is None:
            return None
        steps = self._begin(cleanable, None)
        if steps is None:
            return None
        result, error = None, None
        self.cleaning = cleanable.log
        try:
            while True:
                work = steps.throw(error) if error is not None else steps.send(result)
                result, error = None, None
                worker = asyncio.ensure_future(asyncio.to_thread(work))
                try:
                    result = await asyncio.shield(worker)
                except asyncio.CancelledError:
                    # Shutdown: the worker stops at its next check; its files are released only
                    # after it has let go of them.
                    self._stopping.set()
                    await asyncio.wait([worker])
                    raise
                except Exception as e:
                    error = e
        except StopIteration as done:
            return done.value
        finally:
            self.cleaning = None
            steps.close()

    async def run(self, enabled: bool = True, backoff_ms: int | None = None) -> None:
        """The background task (log.cleaner.enable, log.cleaner.backoff.ms): clean the filthiest
        log, again at once when one was cleaned, else after the backoff.

        Kafka's backoff is the sleep when there are no logs to clean; a log that becomes cleanable
        during it (a segment rolled, max.compaction.lag.ms passed) ends it, found by a cheap look
        every BACKOFF_PEEK_SECONDS. Otherwise, data written just after an idle look would wait the
        whole backoff and then a round as slow as ours, longer than clients wait for compaction
        (librdkafka's 0077_compaction waits 20 s)."""
        if not enabled:
            return
        if backoff_ms is not None:
            self.backoff_ms = backoff_ms
        loop = asyncio.get_running_loop()
        while not self._stopping.is_set():
            try:
                cleaned = await self.clean_filthiest_log_async()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("log cleaner step failed")
                cleaned = None
            if cleaned is not None:
                await asyncio.sleep(0)
                continue
            # A log chosen that could not be cleaned would be chosen again: only another one counts.
            stuck = self.filthiest_log()
            idle_since = loop.time()
            while not self._stopping.is_set() and (
                    left := idle_since + max(self.backoff_ms, 10) / 1000 - loop.time()) > 0:
                await asyncio.sleep(min(BACKOFF_PEEK_SECONDS, left))
                found = self.filthiest_log()
                if found is not None and (stuck is None or found.log is not stuck.log):
                    break

    def stop(self) -> None:
        """Make a round in progress give up at its next step (broker shutdown)."""
        self._stopping.set()

    def _drive(self, cleanable: LogToClean, now_ms: int | None) -> CleanerStats | None:
        steps = self._begin(cleanable, now_ms)
        if steps is None:
            return None
        result, error = None, None
        try:
            while True:
                work = steps.throw(error) if error is not None else steps.send(result)
                result, error = None, None
                try:
                    result = work()
                except Exception as e:
                    error = e
        except StopIteration as done:
            return done.value
        finally:
            steps.close()

    def _begin(self, cleanable: LogToClean, now_ms: int | None) -> Generator | None:
        round_ = self._capture(cleanable, now_ms)
        if round_ is None:
            return None
        return self._clean(round_)

    def _capture(self, cleanable: LogToClean, now_ms: int | None) -> CleaningRound | None:
        log = cleanable.log
        segments = log.segments
        if len(segments) < 2 or cleanable.first_uncleanable_offset <= segments[0].base_offset:
            return None
        views = []
        for i, segment in enumerate(segments):
            next_base = segments[i + 1].base_offset if i + 1 < len(segments) else log.log_end_offset
            views.append(SegmentView(segment, segment.base_offset, segment.size, next_base,
                                     len(segment.offset_index), segment.file.retain()))
        first_dirty = cleanable.first_dirty_offset
        dirty_position = 0
        for view in views:
            if view.base_offset <= first_dirty < view.next_base:
                dirty_position = view.segment.offset_index.lookup(first_dirty)
                break
        config = log.config
        return CleaningRound(
            log=log,
            first_dirty_offset=first_dirty,
            first_uncleanable_offset=cleanable.first_uncleanable_offset,
            views=views,
            dirty_start_position=dirty_position,
            high_watermark=log.high_watermark,
            active_producers=log.last_records_of_active_producers(),
            now_ms=self._clock_ms() if now_ms is None else now_ms,
            delete_retention_ms=int(config.get("delete.retention.ms", 86_400_000)),
            segment_bytes=config.segment_bytes,
            max_index_entries=max(1, config.segment_index_bytes // 8),
            index_interval_bytes=config.index_interval_bytes,
            segment_index_bytes=config.segment_index_bytes,
        )

    def _clean(self, round_: CleaningRound) -> Generator:
        """The round as steps: each `yield` hands heavy work to the driver (a worker thread in
        the broker) and gets its result back; the code between yields runs on the caller's
        thread (the event loop), where the swaps happen."""
        log = round_.log
        tp = (log.topic, log.partition)
        stats = round_.stats
        try:
            offset_map = yield lambda: self._build_offset_map(round_)
            end_offset = offset_map.latest_offset + 1
            stats.map_entries = len(offset_map.offsets)
            groups = self._group_segments(round_, end_offset)
            tracker = TransactionTracker(offset_map.aborted)
            horizons: list[int] = []
            for i, group in enumerate(groups):
                if self._unchanged_by(round_, group, offset_map):
                    stats.segments_cleaned += 1
                    continue
                cleaned, kept_abort_markers, keys = yield lambda group=group: self._clean_group(
                    round_, group, offset_map, tracker, horizons)
                if cleaned is None:
                    result = group[0].segment
                elif log.replace_segments(cleaned, [view.segment for view in group], kept_abort_markers):
                    result = next((seg for seg in log.segments if seg.base_offset == group[0].base_offset), None)
                else:
                    raise CleaningAborted(f"{log.dir}: segments changed while they were being cleaned")
                if keys is not None and result is not None:
                    self._segment_keys[result] = SegmentKeys(result.size, keys)
                stats.segments_cleaned += len(group)
            self._first_dirty[tp] = end_offset
            if horizons:
                self._delete_horizons[tp] = min(horizons)
            else:
                self._delete_horizons.pop(tp, None)
            stats.end_offset = end_offset
            try:
                self.write_checkpoints()
            except OSError as e:
                logger.warning("could not write %s: %s", CLEANER_OFFSET_CHECKPOINT, e)
            logger.info("cleaned %s-%d up to offset %d: %s", log.topic, log.partition, end_offset, stats.summary())
            return stats
        except CleaningAborted as e:
            logger.info("cleaning of %s-%d stopped: %s", log.topic, log.partition, e)
            return None
        except InvalidRecordBatch as e:
            # Corrupt data (CRC mismatch, undecodable records): Kafka stops cleaning the
            # partition and reports it; the data is left as it is.
            self.uncleanable.add(tp)
            logger.error("%s-%d is uncleanable: corrupt record batch: %s", log.topic, log.partition, e)
            return None
        except OSError as e:
            logger.error("cleaning of %s-%d failed on the disk, retrying later: %s", log.topic, log.partition, e)
            return None
        finally:
            round_.release()

    def _check_stopping(self) -> None:
        if self._stopping.is_set():
            raise CleaningAborted("the cleaner is stopping")

    # -- pass 1: the offset map -------------------------------------------------------------------

    def _build_offset_map(self, round_: CleaningRound) -> OffsetMap:
        first_dirty, end = round_.first_dirty_offset, round_.first_uncleanable_offset
        offsets: dict[bytes, int] = {}
        pending: dict[int, list[tuple[bytes, int]]] = {}  # an open transaction's keyed records
        txn_first: dict[int, int] = {}
        aborted: dict[int, list[tuple[int, int]]] = {}
        latest = first_dirty - 1
        full = False
        stats = round_.stats
        resume: tuple[int, int] | None = None  # (view index, position) where the scan stopped

        def on_control(header: BatchHeader, data) -> None:
            producer_id = header.producer_id
            if producer_id not in txn_first:
                return
            first = txn_first.pop(producer_id)
            records = pending.pop(producer_id, [])
            control = _control_type(data)
            if control == ControlRecordType.ABORT:
                aborted.setdefault(producer_id, []).append((first, header.last_offset))
            elif control == ControlRecordType.COMMIT:
                for key, offset in records:
                    if offsets.get(key, -1) < offset:
                        offsets[key] = offset

        for index, view in enumerate(round_.views):
            if view.next_base <= first_dirty or view.base_offset >= end:
                continue
            position = round_.dirty_start_position if view.base_offset <= first_dirty else 0
            for position, header, data in read_batches(view.fd, position, view.size):
                self._check_stopping()
                if header.last_offset < first_dirty:
                    continue
                if len(offsets) >= self.max_map_entries:
                    full = True
                    break
                stats.batches_read += 1
                if header.is_control:
                    on_control(header, data)
                elif header.is_transactional:
                    txn_first.setdefault(header.producer_id, header.base_offset)
                    batch_header, records = decode_records(data)
                    keyed = pending.setdefault(header.producer_id, [])
                    for offset, _, record in iter_records_with_offsets(batch_header, records):
                        if record.key is not None and offset >= first_dirty:
                            keyed.append((bytes(record.key), offset))
                else:
                    batch_header, records = decode_records(data)
                    for offset, _, record in iter_records_with_offsets(batch_header, records):
                        if record.key is not None and offset >= first_dirty:
                            offsets[bytes(record.key)] = offset
                latest = header.last_offset
            if full:
                resume = (index, position)
                break
            # Offsets may skip past the segment's last batch: the map covers up to the next segment.
            latest = max(latest, view.next_base - 1)
        if not full:
            latest = max(latest, end - 1)
        if txn_first:
            self._resolve_open_transactions(round_, resume, txn_first, on_control)
        return OffsetMap(offsets, latest, aborted)

    def _resolve_open_transactions(self, round_: CleaningRound, resume, txn_first, on_control) -> None:
        """Transactions whose records were mapped but whose marker lies beyond the mapped range:
        read on (batch headers, and the markers) until each one's marker is found. They all end
        below the high watermark: the mapped range ends at or below the last stable offset."""
        views = round_.views
        if resume is None:
            index = next(i for i, v in enumerate(views) if v.base_offset >= round_.first_uncleanable_offset)
            position = 0
        else:
            index, position = resume
        for view in views[index:]:
            for _, header, data in read_batches(view.fd, position, view.size):
                self._check_stopping()
                if header.base_offset >= round_.high_watermark or not txn_first:
                    return
                if header.is_control:
                    on_control(header, data)
            position = 0

    # -- pass 2: rewriting the segments -----------------------------------------------------------

    def _group_segments(self, round_: CleaningRound, end_offset: int) -> list[list[SegmentView]]:
        """Runs of segments below end_offset that fit in one segment (Kafka's groupSegmentsBySize)."""
        candidates = [v for v in round_.views[:-1] if v.base_offset < end_offset
                      and v.next_base <= round_.first_uncleanable_offset]
        groups: list[list[SegmentView]] = []
        for view in candidates:
            group = groups[-1] if groups else None
            if (group is not None
                    and sum(v.size for v in group) + view.size <= round_.segment_bytes
                    and sum(v.index_entries for v in group) + view.index_entries <= round_.max_index_entries
                    and (view.size == 0 or view.next_base - 1 - group[0].base_offset <= 2**31 - 1)):
                group.append(view)
            else:
                groups.append([view])
        return groups

    def _unchanged_by(self, round_: CleaningRound, group: list[SegmentView], offset_map: OffsetMap) -> bool:
        """True when cleaning this group would give back the same single segment: one of the clean
        head, unchanged since the cleaner wrote it, none of whose keys the dirty part holds."""
        if len(group) != 1 or group[0].next_base > round_.first_dirty_offset:
            return False
        known = self._segment_keys.get(group[0].segment)
        return (known is not None and known.size == group[0].size
                and offset_map.offsets.keys().isdisjoint(known.keys))  # walks the smaller of the two

    def _clean_group(self, round_: CleaningRound, group: list[SegmentView], offset_map: OffsetMap,
                     tracker: TransactionTracker, horizons: list[int]
                     ) -> tuple[LogSegment | None, set[int], frozenset[bytes] | None]:
        """Write the group's retained batches into `<base>.log.cleaned` (flushed, indexes built);
        also the offsets of the ABORT markers kept for their transaction (for the `.txnindex`).

        None instead of a segment when the group is one segment of plain data batches that all
        stay byte for byte: Kafka would write the same bytes back under the same name, so the
        cleaned copy is dropped before its fsyncs and swap. Every round rewrites the log from its
        start, and those fsyncs and renames were most of a round's time: without this a round
        over thousands of small segments took longer than clients wait for compaction.
        Last, the keys of the result when it holds only plain keyed records (see SegmentKeys)."""
        log = round_.log
        base = group[0].base_offset
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            path = os.path.join(log.dir, segment_file_name(base, suffix) + CLEANED_FILE_SUFFIX)
            if os.path.exists(path):
                os.unlink(path)  # left by a round that failed
        cleaned = LogSegment(log.dir, base, index_interval_bytes=round_.index_interval_bytes,
                             max_index_bytes=round_.segment_index_bytes, now_ms=round_.now_ms,
                             create=True, file_suffix=CLEANED_FILE_SUFFIX)
        try:
            last_view = next((v for v in reversed(group) if v.size), None)
            kept_abort_markers: set[int] = set()
            out = bytearray()
            out_headers: list[tuple[int, BatchHeader]] = []
            changed = len(group) > 1  # a group of several segments becomes one: always written
            written = 0
            keys = KeyCollector()
            for view in group:
                for position, header, data in read_batches(view.fd, 0, view.size):
                    self._check_stopping()
                    last_of_group = view is last_view and position + header.size == view.size
                    kept = self._filter_batch(round_, header, data, offset_map, tracker, last_of_group, horizons,
                                              kept_abort_markers, keys)
                    # Transactional batches and markers also decide the `.txnindex`: always written.
                    changed = (changed or header.is_control or header.is_transactional
                               or kept is None or len(kept) != header.size or kept != data)
                    if kept is None:
                        continue
                    out_headers.append((len(out), read_batch_header(kept)))
                    out += kept
                    if len(out) >= WRITE_CHUNK_BYTES:
                        cleaned.append(out, out_headers)
                        written += len(out)
                        out, out_headers = bytearray(), []
            if out:
                cleaned.append(out, out_headers)
                written += len(out)
            remembered = keys.result()
            if not changed:
                cleaned.close()
                cleaned.delete()
                return None, kept_abort_markers, remembered
            round_.stats.bytes_written += written
            cleaned.on_become_inactive()
            cleaned.flush(indexes=True)
            return cleaned, kept_abort_markers, remembered
        except BaseException:
            cleaned.close()
            cleaned.delete()
            raise

    def _filter_batch(self, round_: CleaningRound, header: BatchHeader, data, offset_map: OffsetMap,
                      tracker: TransactionTracker, last_of_group: bool, horizons: list[int],
                      kept_abort_markers: set[int], keys: KeyCollector | None = None) -> bytes | None:
        """The batch as it goes into the cleaned segment (the original bytes when nothing
        changes), or None when it goes entirely (Kafka's MemoryRecords.filterTo)."""
        stats = round_.stats
        now = round_.now_ms
        has_horizon = bool(header.attributes & ATTR_DELETE_HORIZON)
        horizon = header.base_timestamp if has_horizon else None
        control_type = None
        if header.is_control:
            control_type = _control_type(data)
            can_discard = tracker.on_control_batch(header, control_type)
            discard_records = can_discard and horizon is not None and horizon <= now
            if control_type == ControlRecordType.ABORT and not can_discard:
                # Records of its transaction were seen: the marker stays, and so does its entry in
                # the aborted-transaction index (Kafka's CleanedTransactionMetadata).
                kept_abort_markers.add(header.base_offset)
        else:
            can_discard = tracker.on_data_batch(header)
            discard_records = can_discard
        retain_empty = last_of_group
        if header.producer_id != NO_PRODUCER_ID:
            last = round_.active_producers.get(header.producer_id)
            if last is not None:
                last_data_offset, epoch = last
                if last_data_offset is not None:
                    retain_empty = retain_empty or header.last_offset == last_data_offset
                else:
                    retain_empty = retain_empty or (header.is_control and header.producer_epoch == epoch)
        stats.bytes_read += header.size
        if discard_records and not retain_empty:
            return None
        stats.records_read += header.records_count
        if discard_records:
            retained: list[tuple[int, int, Record]] = []
            total = header.records_count
        else:
            batch_header, records = decode_records(data)
            total = len(records)
            with_offsets = list(iter_records_with_offsets(batch_header, records))
            if header.is_control:
                retained = with_offsets
            else:
                retain_deletes = horizon is None or now < horizon
                retained = [entry for entry in with_offsets
                            if self._retain_record(entry[0], entry[2], offset_map, retain_deletes)]
        stats.records_retained += len(retained)
        if keys is not None:
            keys.add(header, retained)
        if not retained:
            if not retain_empty:
                return None
            return self._empty_batch(header)
        contains_tombstones = any(record.value is None for _, _, record in retained)
        marker_for_empty_txn = can_discard and header.is_control
        needs_horizon = (contains_tombstones or marker_for_empty_txn) and horizon is None
        if needs_horizon:
            horizon = now + round_.delete_retention_ms
        if horizon is not None and horizon > now and (contains_tombstones or marker_for_empty_txn):
            horizons.append(horizon)  # when it passes, cleaning removes these (see log_to_clean)
        if len(retained) == total and not needs_horizon:
            return bytes(data)
        return self._rebuilt_batch(header, retained, horizon)

    @staticmethod
    def _retain_record(offset: int, record: Record, offset_map: OffsetMap, retain_deletes: bool) -> bool:
        if offset > offset_map.latest_offset:
            return True
        if record.key is None:
            return False  # Kafka drops keyless records from compacted logs
        found = offset_map.offsets.get(bytes(record.key), -1)
        return offset >= found and (record.value is not None or retain_deletes)

    @staticmethod
    def _empty_batch(header: BatchHeader) -> bytes:
        """A batch with no records that keeps the original's offsets, sequence and producer
        (Kafka's DefaultRecordBatch.writeEmptyHeader)."""
        attributes = header.attributes & (ATTR_TIMESTAMP_TYPE | ATTR_TRANSACTIONAL | ATTR_CONTROL)
        return pack_batch(
            b"",
            records_count=0,
            base_offset=header.base_offset,
            partition_leader_epoch=header.partition_leader_epoch,
            attributes=attributes,
            last_offset_delta=header.last_offset_delta,
            base_timestamp=header.max_timestamp,
            max_timestamp=header.max_timestamp,
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence,
        )

    @staticmethod
    def _rebuilt_batch(header: BatchHeader, retained: list[tuple[int, int, Record]], horizon: int | None) -> bytes:
        """The retained records as one batch with the original's base and last offset (so its
        sequence range stays), codec and producer; with a delete horizon, the base timestamp
        carries it and the records' timestamp deltas are rebased on it (KIP-534)."""
        log_append_time = bool(header.attributes & ATTR_TIMESTAMP_TYPE)
        base_timestamp = horizon if horizon is not None else retained[0][1]
        records = [
            Record(offset - header.base_offset, timestamp - base_timestamp, record.key, record.value,
                   record.headers, record.attributes)
            for offset, timestamp, record in retained
        ]
        max_timestamp = header.max_timestamp if log_append_time else max(ts for _, ts, _ in retained)
        codec = header.attributes & ATTR_COMPRESSION_MASK
        blob = encode_records(records)
        if codec:
            blob = compress(codec, blob)
        attributes = header.attributes & ~ATTR_DELETE_HORIZON
        if horizon is not None:
            attributes |= ATTR_DELETE_HORIZON
        return pack_batch(
            blob,
            records_count=len(records),
            base_offset=header.base_offset,
            partition_leader_epoch=header.partition_leader_epoch,
            attributes=attributes,
            last_offset_delta=header.last_offset_delta,
            base_timestamp=base_timestamp,
            max_timestamp=max_timestamp,
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence,
        )
