"""Idempotent producer state of one partition: sequence checks, duplicate detection, snapshots.

For each producer id the partition keeps the producer epoch and the metadata of its last five
appended batches (Kafka's ProducerStateEntry: the Java producer keeps at most five requests in
flight per connection, so five batches cover every possible retry). The rules follow Kafka 3.x's
ProducerAppendInfo:

- a batch whose epoch and sequence range equal a cached batch is a duplicate: the broker answers
  with the original offsets and no error, and appends nothing;
- an epoch older than the known one is fenced (INVALID_PRODUCER_EPOCH);
- a new epoch must start at sequence 0, unless the producer is unknown here;
- within an epoch the first sequence must follow the last one (wrapping after int32 max),
  otherwise OUT_OF_ORDER_SEQUENCE_NUMBER;
- an unknown producer (no state, e.g. after retention removed its batches) may start at any
  sequence: Kafka stopped answering UNKNOWN_PRODUCER_ID for that in 2.5 (KIP-360).

Only batch headers are needed, so state is rebuilt on recovery by replaying headers after the
last snapshot. Snapshots are `<20-digit offset>.snapshot` files in our own format (below), taken
on segment roll and clean shutdown; the offset is the log end offset the state reflects.
"""

from __future__ import annotations

import enum
import logging
import os
import struct
from collections import deque
from dataclasses import dataclass, field

from kafka_wire import records
from kafka_wire.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, BatchHeader
from log.checkpoints import write_file_atomically
from log.errors import InvalidProducerEpoch, InvalidTxnState, OutOfOrderSequence

NUM_BATCHES_TO_RETAIN = 5
INT32_MAX = 2**31 - 1
SHORT_MAX = 2**15 - 1  # Short.MAX_VALUE, the epoch a broken TV2 transaction may be aborted at
SNAPSHOT_SUFFIX = ".snapshot"

logger = logging.getLogger(__name__)


class AppendOrigin(enum.Enum):
    """Who is appending, which decides how much is validated (Kafka's AppendOrigin)."""

    CLIENT = "client"  # a producer: full validation, duplicates answered from the cache
    COORDINATOR = "coordinator"  # the group/transaction coordinator: epochs checked, no sequences
    REPLICATION = "replication"  # a follower copying the leader: trusted, nothing rejected


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """What is remembered of one appended batch: enough to answer its retry."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    # First offset of the open transaction, None when none is open (read by the last stable offset).
    current_txn_first_offset: int | None = None

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> "ProducerStateEntry":
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN),
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
        )

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.producer_epoch:
            return None
        first, last = header.base_sequence, header.last_sequence
        for batch in self.batches:
            if batch.first_seq == first and batch.last_seq == last:
                return batch
        return None

    def update_epoch(self, epoch: int) -> None:
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch(self, header: BatchHeader) -> None:
        self.update_epoch(header.producer_epoch)
        self.batches.append(
            BatchMetadata(
                header.base_sequence,
                header.last_sequence,
                header.base_offset,
                header.last_offset,
                header.max_timestamp,
            )
        )
        self.last_timestamp = header.max_timestamp


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


@dataclass
class VerificationState:
    """A producer's transaction verification in progress here (Kafka's VerificationStateEntry,
    KIP-890): started when a transactional batch arrives with no transaction open at its epoch,
    before the coordinator is asked, and ended by the producer's next transactional append. The
    `guard` ties an append to the verification it waited for (a marker in between ends the
    verification, so the late batch cannot open a transaction nobody will close); while it
    lasts, a batch may not start above the lowest sequence it was started with."""

    timestamp: int
    lowest_sequence: int
    epoch: int
    supports_epoch_bump: bool
    guard: object = field(default_factory=object)

    def update(self, sequence: int, epoch: int) -> None:
        """Kafka's maybeUpdateLowestSequenceAndEpoch."""
        if epoch == self.epoch and sequence < self.lowest_sequence:
            self.lowest_sequence = sequence
        if epoch > self.epoch:
            self.epoch, self.lowest_sequence = epoch, sequence


class ProducerAppend:
    """The producer-state side of one append: validated batch by batch, applied only on commit,
    so a rejected batch leaves no trace of the batches before it (Kafka's ProducerAppendInfo)."""

    def __init__(self, manager: "ProducerStateManager", origin: AppendOrigin, transaction_version: int = 0):
        self._manager = manager
        self._origin = origin
        # Of the markers in this append (WriteTxnMarkers v2, KIP-1228): 2 means the coordinator
        # bumped the epoch for them, so one not above the producer's epoch here is late.
        self._transaction_version = transaction_version
        # Producers with a transactional batch here: None for data, the epoch of a marker.
        self._transactional: dict[int, int | None] = {}
        self._staged: dict[int, ProducerStateEntry] = {}
        # (producer id, first offset, marker offset) of each transaction a marker closed here;
        # a transaction with no data in this partition spans only its marker (as in Kafka).
        self.completed_transactions: list[tuple[int, int, int]] = []
        # (producer id, first offset) of each transaction a batch of this append opened.
        self.started_transactions: list[tuple[int, int]] = []

    def check_and_record(self, header: BatchHeader, coordinator_epoch: int | None = None) -> BatchMetadata | None:
        """Validate a batch (offsets already assigned) and stage its metadata. For a transaction
        marker, `coordinator_epoch` is the one its record carries (what DescribeProducers reports).

        Returns the cached metadata of the original batch when this one is a retry of it (client
        appends only); raises InvalidProducerEpoch, OutOfOrderSequence or InvalidTxnState.
        """
        producer_id = header.producer_id
        if producer_id == NO_PRODUCER_ID:
            return None
        current = self._manager.entries.get(producer_id)
        if self._origin is AppendOrigin.CLIENT and current is not None:
            duplicate = current.find_duplicate(header)
            if duplicate is not None:
                if header.is_transactional and not header.is_control and (
                        current.current_txn_first_offset is None
                        or duplicate.first_offset < current.current_txn_first_offset):
                    # The original belongs to a transaction a marker has already ended: this batch
                    # cannot be its retry (a client ends a transaction only after its writes were
                    # answered). It is new data reusing those sequences at the same epoch (librdkafka
                    # rewinds them after an abort when it was told the original was not written,
                    # e.g. NOT_ENOUGH_REPLICAS to a retry after a restart). Answering "duplicate"
                    # would drop its records while the producer commits them: refuse it instead,
                    # and the producer aborts and bumps its epoch. (Kafka deduplicates here; its
                    # transaction.version 2 bumps the epoch at every transaction end instead.)
                    raise OutOfOrderSequence(
                        f"producer {producer_id}: sequences {header.base_sequence}..{header.last_sequence} at "
                        f"epoch {header.producer_epoch} were used by a batch at offset {duplicate.first_offset} of "
                        f"a transaction that has ended; not a retry of it")
                return duplicate
        staged = self._staged.get(producer_id)
        if staged is None:
            staged = current.copy() if current is not None else ProducerStateEntry(producer_id)
            self._staged[producer_id] = staged
        known_epoch = current.producer_epoch if current is not None else NO_PRODUCER_EPOCH

        if header.producer_epoch < staged.producer_epoch:
            message = (
                f"producer {producer_id} epoch {header.producer_epoch} at offset {header.base_offset} "
                f"is older than the last seen epoch {staged.producer_epoch}"
            )
            if self._origin is not AppendOrigin.REPLICATION:
                raise InvalidProducerEpoch(message)
            logger.warning("%s", message)

        if header.is_control and self._transaction_version >= 2 and self._origin is not AppendOrigin.REPLICATION \
                and header.producer_epoch == staged.producer_epoch and staged.current_txn_first_offset is not None \
                and header.producer_epoch != SHORT_MAX:
            # A TV2 marker at the epoch of the open transaction belongs to an earlier transaction
            # (a late or repeated marker): it must not end this one. At the same epoch with no
            # transaction open it is a retry of a marker already written, and harmless (Kafka's
            # ProducerAppendInfo.checkProducerEpoch, KAFKA-19999).
            raise InvalidProducerEpoch(
                f"producer {producer_id}: transaction marker at epoch {header.producer_epoch} (transaction "
                f"version {self._transaction_version}) is not above the epoch of its open transaction")

        if header.is_transactional:
            self._transactional[producer_id] = header.producer_epoch if header.is_control else None

        if header.is_control:
            # A transaction marker: it closes the producer's open transaction. Which (commit or
            # abort) is in the marker record, read by the transaction layer; the producer keeps the
            # marker's coordinator epoch (Kafka's ProducerAppendInfo.appendEndTxnMarker).
            staged.update_epoch(header.producer_epoch)
            if coordinator_epoch is not None:
                staged.coordinator_epoch = coordinator_epoch
            first_offset = staged.current_txn_first_offset
            self.completed_transactions.append(
                (producer_id, header.base_offset if first_offset is None else first_offset, header.base_offset))
            staged.current_txn_first_offset = None
            staged.last_timestamp = header.max_timestamp
            return None

        if self._origin is AppendOrigin.CLIENT:
            first_seq = header.base_sequence
            verification = self._manager.verification_states.get(producer_id)
            if verification is not None:
                if verification.supports_epoch_bump and first_seq != 0 and current is None:
                    raise OutOfOrderSequence(
                        f"producer {producer_id}: sequence {first_seq} at offset {header.base_offset}; a "
                        "transaction version 2 producer with no state here must start at sequence 0")
                if first_seq > verification.lowest_sequence:
                    raise OutOfOrderSequence(
                        f"producer {producer_id}: sequence {first_seq} at offset {header.base_offset} is above "
                        f"{verification.lowest_sequence}, the earliest sequence seen while verifying its transaction")
            if header.producer_epoch != staged.producer_epoch:
                if first_seq != 0 and staged.producer_epoch != NO_PRODUCER_EPOCH:
                    raise OutOfOrderSequence(
                        f"producer {producer_id}: new epoch {header.producer_epoch} must start at "
                        f"sequence 0, got {first_seq} (current epoch {staged.producer_epoch})"
                    )
            elif known_epoch != NO_PRODUCER_EPOCH and not _in_sequence(staged.last_seq, first_seq):
                raise OutOfOrderSequence(
                    f"producer {producer_id}: out of order sequence {first_seq} at offset "
                    f"{header.base_offset}, last appended sequence is {staged.last_seq}"
                )

        staged.add_batch(header)
        if staged.current_txn_first_offset is not None and not header.is_transactional:
            raise InvalidTxnState(
                f"producer {producer_id} wrote a non-transactional batch at offset "
                f"{header.base_offset} while its transaction is open"
            )
        if staged.current_txn_first_offset is None and header.is_transactional:
            staged.current_txn_first_offset = header.base_offset
            self.started_transactions.append((producer_id, header.base_offset))
        return None

    def commit(self) -> None:
        self._manager.entries.update(self._staged)
        self._staged = {}
        for producer_id, marker_epoch in self._transactional.items():
            # A transactional write opened the transaction (or a marker closed it): the verification
            # is over, except after a TV2 marker at the epoch the next transaction verifies with.
            verification = self._manager.verification_states.get(producer_id)
            if verification is not None and not (verification.supports_epoch_bump
                                                 and marker_epoch == verification.epoch):
                del self._manager.verification_states[producer_id]
        self._transactional = {}


class ProducerStateManager:
    """Producer entries of one partition plus their snapshots in the partition directory."""

    def __init__(self, partition_dir: str):
        self.dir = partition_dir
        self.entries: dict[int, ProducerStateEntry] = {}
        # The offset up to which the state reflects the log (exclusive): what a snapshot is named by.
        self.map_end_offset = 0
        # Transaction verifications in progress, by producer id (in memory only, as in Kafka).
        self.verification_states: dict[int, VerificationState] = {}

    # -- appends ----------------------------------------------------------------------------------

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.entries.get(producer_id)

    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        entry = self.entries.get(producer_id)
        return entry is not None and entry.current_txn_first_offset is not None and entry.producer_epoch == producer_epoch

    def start_verification(self, producer_id: int, sequence: int, epoch: int, supports_epoch_bump: bool,
                           now_ms: int) -> object:
        """The guard of the producer's verification, started now unless one is in progress
        (Kafka's maybeCreateVerificationStateEntry)."""
        state = self.verification_states.get(producer_id)
        if state is None:
            state = self.verification_states[producer_id] = VerificationState(now_ms, sequence, epoch,
                                                                               supports_epoch_bump)
        state.update(sequence, epoch)
        return state.guard

    def verification_guard(self, producer_id: int) -> object | None:
        state = self.verification_states.get(producer_id)
        return state.guard if state is not None else None

    def begin_append(self, origin: AppendOrigin = AppendOrigin.CLIENT, transaction_version: int = 0) -> ProducerAppend:
        return ProducerAppend(self, origin, transaction_version)

    def check_and_record(
        self, header: BatchHeader, origin: AppendOrigin = AppendOrigin.CLIENT
    ) -> BatchMetadata | None:
        """Validate and record one batch at once (a one-batch append). See ProducerAppend."""
        append = self.begin_append(origin)
        duplicate = append.check_and_record(header)
        if duplicate is None:
            append.commit()
            self.map_end_offset = max(self.map_end_offset, header.next_offset)
        return duplicate

    def replay(self, header: BatchHeader, coordinator_epoch: int | None = None) -> list[tuple[int, int, int]]:
        """Apply a batch already in the log (recovery): nothing is validated or rejected.
        Returns the transactions it completed (a marker), as ProducerAppend.completed_transactions."""
        completed = []
        if header.producer_id != NO_PRODUCER_ID:
            append = ProducerAppend(self, AppendOrigin.REPLICATION)
            try:
                append.check_and_record(header, coordinator_epoch)
            except InvalidTxnState:
                # The log is the truth; a marker the transaction layer wrote may be missing here.
                pass
            append.commit()
            completed = append.completed_transactions
        self.map_end_offset = header.next_offset
        return completed

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction (bounds the last stable offset)."""
        offsets = [e.current_txn_first_offset for e in self.entries.values() if e.current_txn_first_offset is not None]
        return min(offsets) if offsets else None

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers idle for producer.id.expiration.ms (never one with an open transaction)."""
        expired = [
            pid
            for pid, e in self.entries.items()
            if e.current_txn_first_offset is None and now_ms - e.last_timestamp >= expiration_ms
        ]
        for pid in expired:
            del self.entries[pid]
        for pid in [pid for pid, state in self.verification_states.items() if now_ms - state.timestamp >= expiration_ms]:
            del self.verification_states[pid]
        return expired

    def truncate_fully(self, start_offset: int) -> None:
        """Forget everything (the log was emptied and restarts at `start_offset`)."""
        self.entries = {}
        self.map_end_offset = start_offset
        for offset in self.snapshot_offsets():
            self._delete_snapshot(offset)

    # -- snapshots --------------------------------------------------------------------------------

    def snapshot_path(self, offset: int) -> str:
        return os.path.join(self.dir, f"{offset:020d}{SNAPSHOT_SUFFIX}")

    def snapshot_offsets(self) -> list[int]:
        offsets = []
        for name in os.listdir(self.dir):
            if name.endswith(SNAPSHOT_SUFFIX):
                stem = name[: -len(SNAPSHOT_SUFFIX)]
                if stem.isdigit():
                    offsets.append(int(stem))
        return sorted(offsets)

    def take_snapshot(self, sync: bool = True) -> str:
        """Write the state as of `map_end_offset` (atomically); returns the file's path.

        sync=False leaves the fsync to the caller (a roll flushes it off the event loop); a crash
        before it may leave the file torn, which its CRC tells and loading skips.
        """
        path = self.snapshot_path(self.map_end_offset)
        write_file_atomically(path, encode_snapshot(self.entries.values()), sync=sync)
        return path

    def load_latest_snapshot(self, max_offset: int) -> int | None:
        """Load the newest readable snapshot at or below `max_offset`; return its offset.

        Unreadable snapshots are deleted. With none left the state is empty and None is returned.
        """
        for offset in reversed([o for o in self.snapshot_offsets() if o <= max_offset]):
            path = self.snapshot_path(offset)
            try:
                with open(path, "rb") as f:
                    entries = decode_snapshot(f.read())
            except (OSError, CorruptSnapshot) as e:
                logger.warning("deleting unreadable producer snapshot %s: %s", path, e)
                self._delete_snapshot(offset)
                continue
            self.entries = {e.producer_id: e for e in entries}
            self.map_end_offset = offset
            return offset
        self.entries = {}
        return None

    def delete_snapshots_after(self, offset: int) -> None:
        """Drop snapshots of state past `offset` (the log was truncated there)."""
        for snapshot in self.snapshot_offsets():
            if snapshot > offset:
                self._delete_snapshot(snapshot)

    def delete_snapshots_before(self, offset: int) -> None:
        """Drop snapshots below `offset` (their segments were deleted), keeping the newest one."""
        offsets = self.snapshot_offsets()
        for snapshot in offsets[:-1]:
            if snapshot < offset:
                self._delete_snapshot(snapshot)

    def remove_snapshot(self, offset: int) -> None:
        """Delete the snapshot taken at `offset`, if any (its segment was merged away)."""
        self._delete_snapshot(offset)

    def _delete_snapshot(self, offset: int) -> None:
        try:
            os.unlink(self.snapshot_path(offset))
        except FileNotFoundError:
            pass


# -- snapshot file format -------------------------------------------------------------------------
#
#   magic "KWPS" | version int16 = 1 | crc32c uint32 of everything after it | count int32
#   per producer: producer_id int64, producer_epoch int16, coordinator_epoch int32,
#                 last_timestamp int64, current_txn_first_offset int64 (-1 = none), batch_count int8
#   per batch:    first_seq int32, last_seq int32, first_offset int64, last_offset int64, timestamp int64
#
# Kafka's own format keeps only the last batch per producer; we keep all five so a retry of any
# in-flight batch is still recognised after a restart.

SNAPSHOT_MAGIC = b"KWPS"
SNAPSHOT_VERSION = 1
_SNAPSHOT_HEADER = struct.Struct(">4shI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqqb")
_BATCH = struct.Struct(">iiqqq")


class CorruptSnapshot(ValueError):
    """A producer snapshot that does not parse or fails its CRC."""


def encode_snapshot(entries) -> bytes:
    body = bytearray(_COUNT.pack(len(entries)))
    for e in entries:
        txn = -1 if e.current_txn_first_offset is None else e.current_txn_first_offset
        body += _ENTRY.pack(
            e.producer_id, e.producer_epoch, e.coordinator_epoch, e.last_timestamp, txn, len(e.batches)
        )
        for b in e.batches:
            body += _BATCH.pack(b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp)
    return _SNAPSHOT_HEADER.pack(SNAPSHOT_MAGIC, SNAPSHOT_VERSION, records.crc32c(body)) + bytes(body)


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    if len(data) < _SNAPSHOT_HEADER.size + _COUNT.size:
        raise CorruptSnapshot("snapshot too short")
    magic, version, crc = _SNAPSHOT_HEADER.unpack_from(data, 0)
    if magic != SNAPSHOT_MAGIC or version != SNAPSHOT_VERSION:
        raise CorruptSnapshot(f"unknown snapshot magic/version {magic!r}/{version}")
    body = memoryview(data)[_SNAPSHOT_HEADER.size :]
    if records.crc32c(body) != crc:
        raise CorruptSnapshot("snapshot CRC mismatch")
    try:
        (count,) = _COUNT.unpack_from(body, 0)
        pos = _COUNT.size
        entries = []
        for _ in range(count):
            pid, epoch, coordinator_epoch, last_ts, txn, nbatches = _ENTRY.unpack_from(body, pos)
            pos += _ENTRY.size
            entry = ProducerStateEntry(pid, epoch, coordinator_epoch=coordinator_epoch, last_timestamp=last_ts)
            entry.current_txn_first_offset = None if txn < 0 else txn
            for _ in range(nbatches):
                entry.batches.append(BatchMetadata(*_BATCH.unpack_from(body, pos)))
                pos += _BATCH.size
            entries.append(entry)
    except struct.error as e:
        raise CorruptSnapshot(f"truncated snapshot: {e}") from None
    if pos != len(body):
        raise CorruptSnapshot("trailing bytes in snapshot")
    return entries
