"""The state of one share-partition (KIP-932): which records of a partition a share group has in
flight, who holds them, how often they were delivered, and what gets persisted.

Where each piece lives when the broker runs several workers (issue "Every core"):

- This object (a SharePartition in Kafka's words) lives at the worker that owns the topic
  partition's log, `broker/workers/ownership.py` `owner_of(topic, partition, count)`: ShareFetch
  reads the log there and acquires records here in the same step, and ShareAcknowledge for that
  partition is handed to that worker like a Produce or Fetch naming another worker's partition.
  One object per (group, topic id, partition), created on the first ShareFetch and loaded from the
  share coordinator (ReadShareGroupState).
- Group membership and the assignment (coordinator/share_group.py) live with the group
  coordinator: the worker owning the group's `__consumer_offsets` partition (worker 0 today, as
  `owner_of` places every internal topic there), whose records are the share group records of
  `kafka_wire.internal_records` (types 10-15).
- The persisted state (ShareSnapshot / ShareUpdate records, WriteShareGroupState's batch form,
  produced here by `snapshot()` and by every state change) lives in `__share_group_state`, whose
  partitions are owned by `owner_of` like any partition (worker 0, as an internal topic); the share
  coordinator there answers Read/WriteShareGroupState for them. A worker that owns the data
  partition writes its updates through that owner, and must not answer an acknowledgement before
  the update is durable (Kafka completes the acknowledgement after the write).

Sans-io: no clock, no timer, no I/O. Time is a parameter (`now_ms`); lock expiry happens when the
caller calls `expire_locks(now_ms)` (from its timer, and before it serves a fetch). Every method
that changes persisted state returns a `StateUpdate`, the payload of one WriteShareGroupState
partition, for the caller to persist.

Record states and the transitions Kafka allows (SharePartition.RecordState):

    AVAILABLE (0) --acquire--> ACQUIRED (1) --ACCEPT--> ACKNOWLEDGED (2)
                                    |      --REJECT/GAP--> ARCHIVED (4)
                                    +--RELEASE / lock timeout / session close--> AVAILABLE,
                                       or ARCHIVED once the delivery count reached the limit

The start offset moves past every leading record that is ACKNOWLEDGED or ARCHIVED; records below it
leave the in-flight set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum

from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import ControlRecordType, decode_control_key, decode_records
from kafka_wire.records import InvalidRecordBatch, iter_batch_headers

# Defaults of the broker configs that bound a share-partition (Kafka 4.3).
DEFAULT_RECORD_LOCK_DURATION_MS = 30000  # group.share.record.lock.duration.ms
DEFAULT_DELIVERY_COUNT_LIMIT = 5  # group.share.delivery.count.limit
DEFAULT_MAX_RECORD_LOCKS = 2000  # group.share.partition.max.record.locks

# The member id Kafka stores for records nobody holds (Uuid.ZERO_UUID as a string).
EMPTY_MEMBER_ID = "AAAAAAAAAAAAAAAAAAAAAA"

# ShareFetch v2 ShareAcquireMode.
BATCH_OPTIMIZED = 0  # acquire whole fetched batches, possibly more than max records
RECORD_LIMIT = 1  # acquire at most max records, splitting a batch if needed


class RecordState(IntEnum):
    """A record's delivery state, with the ids Kafka persists (DeliveryState in StateBatch)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(IntEnum):
    """The acknowledgement types of ShareFetch/ShareAcknowledge (AcknowledgeTypes entries)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4  # v2 IsRenewAck: keep the records, restart their acquisition lock


_TARGET_STATE = {
    AcknowledgeType.GAP: RecordState.ARCHIVED,
    AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
    AcknowledgeType.RELEASE: RecordState.AVAILABLE,
    AcknowledgeType.REJECT: RecordState.ARCHIVED,
}


class ShareAcknowledgeError(Exception):
    """An acknowledgement Kafka refuses: the partition's AcknowledgeErrorCode and message."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


@dataclass(frozen=True)
class AcquiredRecords:
    """One entry of ShareFetchResponse AcquiredRecords."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True)
class StateBatch:
    """One run of offsets with one delivery state and count (WriteShareGroupState StateBatch)."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True)
class StateUpdate:
    """What to persist after a change: WriteShareGroupState's PartitionData for this partition."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    state_batches: tuple[StateBatch, ...]

    def to_write_partition(self, partition: int) -> dict:
        """The WriteShareGroupState request's PartitionData, as a dict of its fields."""
        return {
            "partition": partition,
            "state_epoch": self.state_epoch,
            "leader_epoch": self.leader_epoch,
            "start_offset": self.start_offset,
            "delivery_complete_count": self.delivery_complete_count,
            "state_batches": [
                {"first_offset": b.first_offset, "last_offset": b.last_offset,
                 "delivery_state": b.delivery_state, "delivery_count": b.delivery_count}
                for b in self.state_batches
            ],
        }


@dataclass
class _InFlight:
    state: RecordState
    delivery_count: int
    member_id: str = EMPTY_MEMBER_ID
    lock_deadline_ms: int | None = None


def _runs(items):
    """Group (offset, key) pairs, sorted by offset, into (first, last, key) runs of consecutive
    offsets with equal keys."""
    runs: list[list] = []
    for offset, key in items:
        if runs and runs[-1][1] == offset - 1 and runs[-1][2] == key:
            runs[-1][1] = offset
        else:
            runs.append([offset, offset, key])
    return runs


def throttle_records_delivery_limit(delivery_count_limit: int) -> int:
    """The delivery count from which Kafka 4.3 throttles redelivery: half the limit, at least 2."""
    return max(2, -(-delivery_count_limit // 2))


# -- read_committed ----------------------------------------------------------------------------------


def _is_abort_marker(data, pos: int) -> bool:
    try:
        _, records = decode_records(data, pos)
        return bool(records) and decode_control_key(records[0].key)[1] == ControlRecordType.ABORT
    except (InvalidRecordBatch, ValueError):
        return False


def aborted_batch_ranges(data, aborted_transactions) -> list[tuple[int, int]]:
    """(base offset, last offset) of the fetched batches that belong to aborted transactions, as
    Kafka's SharePartition.fetchAbortedTransactionRecordBatches finds them: walking the batches in
    order, a producer is aborted from the first offset of its aborted transaction (the fetch's
    AbortedTransactions, dicts or objects with producer_id and first_offset) until its abort marker;
    its transactional data batches in between are aborted. Markers themselves are not."""
    def field(txn, name):
        return txn[name] if isinstance(txn, dict) else getattr(txn, name)

    pending = sorted((field(t, "first_offset"), field(t, "producer_id")) for t in aborted_transactions)
    aborted_producers: set[int] = set()
    ranges = []
    for pos, header in iter_batch_headers(data):
        if header.producer_id < 0:
            continue
        while pending and pending[0][0] <= header.last_offset:
            aborted_producers.add(pending.pop(0)[1])
        if header.is_control:
            if _is_abort_marker(data, pos):
                aborted_producers.discard(header.producer_id)
        elif header.is_transactional and header.producer_id in aborted_producers:
            ranges.append((header.base_offset, header.last_offset))
    return ranges


# -- share.auto.offset.reset --------------------------------------------------------------------------

_ISO_DURATION = re.compile(
    r"^P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$", re.IGNORECASE)


def parse_duration_ms(text: str) -> int:
    """An ISO-8601 duration as java.time.Duration parses it (PnDTnHnMn.nS), in milliseconds."""
    match = _ISO_DURATION.match(text.strip())
    if match is None or text.strip().upper() in ("P", "PT") or text.strip().upper().endswith("T"):
        raise ValueError(f"Invalid duration: {text}")
    days, hours, minutes = (int(match.group(k) or 0) for k in "dhm")
    seconds = float(match.group("s") or 0)
    return round(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)


def initial_start_offset(reset: str, *, log_start_offset: int, log_end_offset: int, now_ms: int,
                         offset_for_timestamp=None) -> int:
    """The start offset of a share-partition the group has no state for, by share.auto.offset.reset:
    earliest (the log start offset), latest (the log end offset; Kafka's default), or
    by_duration:<ISO-8601 duration> (the first offset whose timestamp is at or after now - duration,
    the log end offset when there is none). `offset_for_timestamp(ts)` answers like ListOffsets
    with a timestamp: an offset, or None when no record is that recent."""
    reset = reset.strip()
    if reset == "earliest":
        return log_start_offset
    if reset == "latest":
        return log_end_offset
    if reset.startswith("by_duration:"):
        duration_ms = parse_duration_ms(reset[len("by_duration:"):])
        if offset_for_timestamp is None:
            raise ValueError("by_duration needs offset_for_timestamp")
        offset = offset_for_timestamp(now_ms - duration_ms)
        return log_end_offset if offset is None or offset < 0 else max(offset, log_start_offset)
    raise ValueError(f"Invalid value for share.auto.offset.reset: {reset}")


# -- the share-partition ------------------------------------------------------------------------------


class SharePartition:
    """The in-flight records of one (share group, topic partition) and their acquisition locks.

    `start_offset` is the first offset whose delivery is not complete; `end_offset` the last offset
    acquired so far (Kafka's endOffset: the in-flight window is start..end). Records below the start
    offset are done; records above the end offset were never fetched.
    """

    def __init__(self, group_id: str, topic_id, partition: int, *,
                 record_lock_duration_ms: int = DEFAULT_RECORD_LOCK_DURATION_MS,
                 delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT,
                 max_record_locks: int = DEFAULT_MAX_RECORD_LOCKS,
                 start_offset: int = 0, state_epoch: int = 0, leader_epoch: int = 0,
                 renew_enabled: bool = True) -> None:
        self.group_id = group_id
        self.topic_id = topic_id
        self.partition = partition
        self.record_lock_duration_ms = record_lock_duration_ms
        self.delivery_count_limit = delivery_count_limit
        self.max_record_locks = max_record_locks
        self.renew_enabled = renew_enabled  # the group's share.renew.acknowledge.enable
        self.state_epoch = state_epoch
        self.leader_epoch = leader_epoch
        self.start_offset = start_offset
        self.end_offset = start_offset
        self._records: dict[int, _InFlight] = {}  # offset -> state, for start_offset..end_offset
        # Set by the broker when it stops serving this copy (a state write failed or was fenced): a
        # request still holding it must not write its changes.
        self.discarded = False

    # -- loading ---------------------------------------------------------------------------------------

    @classmethod
    def from_persisted(cls, group_id: str, topic_id, partition: int, *, start_offset: int,
                       state_batches, state_epoch: int = 0, leader_epoch: int = 0, **limits) -> "SharePartition":
        """Rebuild from ReadShareGroupState's answer (start offset and state batches, as objects or
        dicts with first_offset/last_offset/delivery_state/delivery_count). Offsets between the
        batches, and after them, are available and never delivered. A batch persisted ACQUIRED (no
        writer does) loads as AVAILABLE: locks do not survive the leader."""
        sp = cls(group_id, topic_id, partition, start_offset=start_offset, state_epoch=state_epoch,
                 leader_epoch=leader_epoch, **limits)
        last = start_offset - 1
        for batch in state_batches:
            get = batch.get if isinstance(batch, dict) else lambda name, b=batch: getattr(b, name)
            first, last_offset = get("first_offset"), get("last_offset")
            state = RecordState(get("delivery_state"))
            if state == RecordState.ACQUIRED:
                state = RecordState.AVAILABLE
            for offset in range(max(first, start_offset), last_offset + 1):
                sp._records[offset] = _InFlight(state, get("delivery_count"))
            last = max(last, last_offset)
        if sp._records:
            for offset in range(start_offset, last + 1):
                sp._records.setdefault(offset, _InFlight(RecordState.AVAILABLE, 0))
            sp.end_offset = last
        sp._advance_start_offset()
        return sp

    # -- questions ---------------------------------------------------------------------------------------

    def record_state(self, offset: int) -> tuple[RecordState, int, str] | None:
        """(state, delivery count, holding member) of an in-flight offset; None when not in flight."""
        rec = self._records.get(offset)
        return None if rec is None else (rec.state, rec.delivery_count, rec.member_id)

    def in_flight_count(self) -> int:
        """Kafka's count of in-flight records: the window start..end, when anything is cached."""
        return 0 if not self._records else self.end_offset - self.start_offset + 1

    def next_fetch_offset(self) -> int:
        """Where the next fetch should read: the first AVAILABLE in-flight record, else past the end."""
        for offset in sorted(self._records):
            if self._records[offset].state == RecordState.AVAILABLE:
                return offset
        return self.end_offset + 1 if self._records else self.end_offset

    def can_acquire(self) -> bool:
        """Whether a fetch may acquire anything: something in flight is available again, or fewer
        records than group.share.partition.max.record.locks are in flight."""
        if any(r.state == RecordState.AVAILABLE for r in self._records.values()):
            return True
        return self.in_flight_count() < self.max_record_locks

    # -- acquisition --------------------------------------------------------------------------------------

    def acquire(self, member_id: str, batches, max_records: int, now_ms: int, *,
                acquire_mode: int = BATCH_OPTIMIZED) -> list[AcquiredRecords]:
        """Acquire records from what a fetch read at `next_fetch_offset()`: `batches` are the fetched
        record batches' (base offset, last offset), in order. Records already in flight are acquired
        when AVAILABLE; records past the end offset join the in-flight set. At most `max_records`
        are acquired, and no more than the record-lock limit leaves room for (at the limit, only
        records inside the in-flight window), except that in BATCH_OPTIMIZED mode the last batch
        touched is taken whole, as Kafka does.
        Each acquired record's delivery count goes up by one and it is locked to `member_id`
        until now + the record lock duration.

        Redelivery is throttled as in Kafka 4.3: once a batch's record has been delivered
        `throttle_records_delivery_limit()` times, that batch gives at most max(1, batch size >>
        (deliveries - throttle limit + 1)) records per fetch; and (with a limit above 2) a record on
        its last delivery attempt is delivered alone."""
        if max_records <= 0:
            return []
        deadline = now_ms + self.record_lock_duration_ms
        acquired: list[tuple[int, int]] = []  # (offset, delivery count)
        # Kafka 4.3 (lastOffsetAndMaxRecordsToAcquire): at most as many records as the record-lock
        # limit leaves room for; at the limit, only records inside the in-flight window.
        room = self.max_record_locks - self.in_flight_count()
        window_end = None
        if room > 0:
            max_records = min(max_records, room)
        else:
            fetch_offset = self.next_fetch_offset()
            if not self._records or fetch_offset > self.end_offset:
                return []
            max_records = min(max_records, self.end_offset - fetch_offset + 1)
            window_end = self.end_offset
        limit = self.delivery_count_limit
        throttle_from = throttle_records_delivery_limit(limit)
        stop = False
        for base, last in batches:
            if stop or len(acquired) >= max_records:
                break
            in_batch = 0
            throttled_max = None
            if window_end is not None:
                last = min(last, window_end)
            for offset in range(max(base, self.start_offset), last + 1):
                if len(acquired) >= max_records and acquire_mode == RECORD_LIMIT:
                    break
                rec = self._records.get(offset)
                if rec is None:
                    if self._records and offset <= self.end_offset:
                        continue  # a hole inside the window: no record there (compacted away)
                    rec = self._records[offset] = _InFlight(RecordState.AVAILABLE, 0)
                    self.end_offset = offset
                if rec.state != RecordState.AVAILABLE:
                    continue
                # Kafka 4.3: a record on its last delivery attempt goes out alone (a poison record
                # then fails by itself), and records delivered many times already come back in
                # smaller and smaller pieces of their batch.
                if limit > 2 and rec.delivery_count == limit - 1 and acquired:
                    stop = True
                    break
                if rec.delivery_count >= throttle_from and throttled_max is None:
                    throttled_max = max(1, (last - base + 1) >> (rec.delivery_count - throttle_from + 1))
                rec.state = RecordState.ACQUIRED
                rec.delivery_count += 1
                rec.member_id = member_id
                rec.lock_deadline_ms = deadline
                acquired.append((offset, rec.delivery_count))
                in_batch += 1
                if limit > 2 and rec.delivery_count == limit:
                    stop = True
                    break
                if throttled_max is not None and in_batch >= throttled_max:
                    stop = True
                    break
        return [AcquiredRecords(first, last, count) for first, last, count in _runs(acquired)]

    def archive_aborted(self, acquired: list[AcquiredRecords],
                        aborted_ranges) -> tuple[list[AcquiredRecords], StateUpdate | None]:
        """read_committed: of the records a fetch just acquired, those in `aborted_ranges` (batches
        of aborted transactions, `aborted_batch_ranges`) are archived at once, never delivered, as
        Kafka's SharePartition.filterAbortedTransactionalAcquiredRecords does. (what the member
        acquired without them, the update to persist or None)."""
        aborted = [(first, last) for first, last in aborted_ranges]
        if not aborted or not acquired:
            return acquired, None

        def is_aborted(offset: int) -> bool:
            return any(first <= offset <= last for first, last in aborted)

        kept: list[tuple[int, int]] = []
        changed: list[int] = []
        for a in acquired:
            for offset in range(a.first_offset, a.last_offset + 1):
                rec = self._records.get(offset)
                if rec is not None and rec.state == RecordState.ACQUIRED and is_aborted(offset):
                    rec.state = RecordState.ARCHIVED
                    rec.member_id = EMPTY_MEMBER_ID
                    rec.lock_deadline_ms = None
                    changed.append(offset)
                else:
                    kept.append((offset, a.delivery_count))
        if not changed:
            return acquired, None
        return ([AcquiredRecords(first, last, count) for first, last, count in _runs(kept)],
                self._update_for(changed))

    # -- acknowledgement ----------------------------------------------------------------------------------

    def acknowledge(self, member_id: str, batches, now_ms: int | None = None) -> StateUpdate | None:
        """Apply one request's acknowledgement batches for this partition: (first offset, last
        offset, acknowledge types), where types hold one type for the whole range or one per offset.

        All or nothing, as in Kafka: an invalid batch raises ShareAcknowledgeError (INVALID_REQUEST
        for malformed ranges and types, INVALID_RECORD_STATE for records not in flight, not acquired,
        or held by another member) and nothing changes. On success returns the update to persist
        (None when nothing changed). RENEW restarts the acquisition lock from `now_ms`."""
        plan: list[tuple[int, AcknowledgeType]] = []
        previous_last = None
        for first, last, types in batches:
            types = list(types)
            if first > last:
                raise ShareAcknowledgeError(ErrorCode.INVALID_REQUEST,
                                            f"First offset {first} is greater than last offset {last}")
            if previous_last is not None and first <= previous_last:
                raise ShareAcknowledgeError(ErrorCode.INVALID_REQUEST, "Acknowledgement batches overlap or are not in order")
            previous_last = last
            if len(types) != 1 and len(types) != last - first + 1:
                raise ShareAcknowledgeError(ErrorCode.INVALID_REQUEST,
                                            f"Acknowledge types count {len(types)} does not match the batch size")
            try:
                kinds = [AcknowledgeType(t) for t in types]
            except ValueError:
                raise ShareAcknowledgeError(ErrorCode.INVALID_REQUEST, f"Invalid acknowledge type: {types}") from None
            if AcknowledgeType.RENEW in kinds and now_ms is None:
                raise ValueError("a RENEW acknowledgement needs now_ms")
            if last < self.start_offset:
                # Done already, by this member or another (a copy of the share-partition loaded
                # again meanwhile may have handed the records to two): Kafka no longer has such a
                # batch in its cache and refuses it. Answered NONE, an acceptance would be
                # confirmed that this member's delivery never made.
                raise ShareAcknowledgeError(
                    ErrorCode.INVALID_RECORD_STATE,
                    "Batch record not found. The request batch offsets are not found in the cache.")
            if not self._records:
                raise ShareAcknowledgeError(
                    ErrorCode.INVALID_RECORD_STATE,
                    "Batch record not found. The request batch offsets are not found in the cache.")
            if first > self.end_offset:
                raise ShareAcknowledgeError(
                    ErrorCode.INVALID_REQUEST,
                    "Batch record not found. The first offset in request is past acquired records.")
            if last > self.end_offset:
                raise ShareAcknowledgeError(
                    ErrorCode.INVALID_REQUEST,
                    "Batch record not found. The last offset in request is past acquired records.")
            if first < min(self._records) and not first < self.start_offset <= last:
                raise ShareAcknowledgeError(
                    ErrorCode.INVALID_RECORD_STATE,
                    "Batch record not found. The request batch offsets are not found in the cache.")
            for offset in range(max(first, self.start_offset), last + 1):
                kind = kinds[0] if len(kinds) == 1 else kinds[offset - first]
                rec = self._records.get(offset)
                if rec is None:
                    continue  # a hole in the window (no record at that offset): nothing to acknowledge
                if rec.state != RecordState.ACQUIRED:
                    raise ShareAcknowledgeError(
                        ErrorCode.INVALID_RECORD_STATE,
                        "The offset cannot be acknowledged. The offset is not acquired.")
                if rec.member_id != member_id:
                    raise ShareAcknowledgeError(ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of offset")
                if kind == AcknowledgeType.RENEW and not self.renew_enabled:
                    raise ShareAcknowledgeError(ErrorCode.INVALID_RECORD_STATE,
                                                "Renewing acquisition locks is not enabled for the group.")
                plan.append((offset, kind))
        if not plan:
            return None
        changed: list[int] = []
        for offset, kind in plan:
            rec = self._records[offset]
            if kind == AcknowledgeType.RENEW:
                rec.lock_deadline_ms = now_ms + self.record_lock_duration_ms
                continue
            self._release_to(rec, _TARGET_STATE[kind])
            changed.append(offset)
        if not changed:
            return None
        return self._update_for(changed)

    def _release_to(self, rec: _InFlight, target: RecordState) -> None:
        # Kafka: a record going back to AVAILABLE whose delivery count reached the limit is archived.
        if target == RecordState.AVAILABLE and rec.delivery_count >= self.delivery_count_limit:
            target = RecordState.ARCHIVED
        rec.state = target
        rec.member_id = EMPTY_MEMBER_ID
        rec.lock_deadline_ms = None

    # -- releases -----------------------------------------------------------------------------------------

    def release_acquired_records(self, member_id: str) -> StateUpdate | None:
        """The member's share session closed (or it left): its acquired records become AVAILABLE
        again (ARCHIVED at the delivery count limit)."""
        changed = [o for o, r in sorted(self._records.items())
                   if r.state == RecordState.ACQUIRED and r.member_id == member_id]
        for offset in changed:
            self._release_to(self._records[offset], RecordState.AVAILABLE)
        return self._update_for(changed) if changed else None

    def next_lock_deadline(self) -> int | None:
        """When the earliest acquisition lock runs out (for the caller's timer); None if none."""
        deadlines = [r.lock_deadline_ms for r in self._records.values() if r.state == RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def expire_locks(self, now_ms: int) -> StateUpdate | None:
        """Release every record whose acquisition lock ran out at or before `now_ms`: it becomes
        AVAILABLE for redelivery, or ARCHIVED once delivered delivery.count.limit times."""
        changed = [o for o, r in sorted(self._records.items())
                   if r.state == RecordState.ACQUIRED and r.lock_deadline_ms is not None
                   and r.lock_deadline_ms <= now_ms]
        for offset in changed:
            self._release_to(self._records[offset], RecordState.AVAILABLE)
        return self._update_for(changed) if changed else None

    def update_log_start_offset(self, log_start_offset: int) -> StateUpdate | None:
        """Retention or DeleteRecords moved the log start past records: they can never be delivered,
        so the share-partition moves its start offset there (Kafka archives them)."""
        if log_start_offset <= self.start_offset:
            return None
        for offset in [o for o in self._records if o < log_start_offset]:
            del self._records[offset]
        self.start_offset = log_start_offset
        if not self._records or self.end_offset < log_start_offset:
            self._records.clear()
            self.end_offset = log_start_offset
        self._advance_start_offset()
        return self._update_for([])

    def reset_start_offset(self, start_offset: int) -> StateUpdate:
        """AlterShareGroupOffsets on an empty group: drop everything in flight, start there."""
        self._records.clear()
        self.start_offset = self.end_offset = start_offset
        self.state_epoch += 1
        return self._update_for([])

    # -- persistence --------------------------------------------------------------------------------------

    def _advance_start_offset(self) -> None:
        """Move the start offset past the leading records whose delivery is complete (and past holes
        between them, offsets that hold no record); when nothing stays in flight, start and end
        both point at the next offset to fetch, as in Kafka."""
        if not self._records:
            return
        for offset in sorted(self._records):
            if offset < self.start_offset:
                del self._records[offset]
                continue
            if self._records[offset].state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                self.start_offset = offset
                return
            del self._records[offset]
        self.start_offset = self.end_offset = self.end_offset + 1

    def delivery_complete_count(self) -> int:
        """In-flight records whose delivery is complete (ACKNOWLEDGED or ARCHIVED)."""
        return sum(1 for r in self._records.values()
                   if r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))

    @staticmethod
    def _persisted_form(rec: _InFlight) -> tuple[int, int]:
        # Acquisition is not persisted (Kafka writes no state on acquire): an acquired record is
        # stored as it was before, available with the deliveries before this one.
        if rec.state == RecordState.ACQUIRED:
            return int(RecordState.AVAILABLE), rec.delivery_count - 1
        return int(rec.state), rec.delivery_count

    def _update_for(self, changed_offsets) -> StateUpdate:
        forms = [(o, self._persisted_form(self._records[o])) for o in sorted(changed_offsets) if o in self._records]
        self._advance_start_offset()
        forms = [(o, f) for o, f in forms if o >= self.start_offset]
        batches = tuple(StateBatch(first, last, state, count) for first, last, (state, count) in _runs(forms))
        return StateUpdate(self.state_epoch, self.leader_epoch, self.start_offset,
                           self.delivery_complete_count(), batches)

    def snapshot(self) -> StateUpdate:
        """The whole persisted state, as a ShareSnapshot record or a full WriteShareGroupState holds
        it: the start offset and one batch per run of in-flight records with equal state and
        delivery count. Records never delivered (available, count 0) are left out: no batch means
        exactly that."""
        forms = [(o, self._persisted_form(r)) for o, r in sorted(self._records.items())]
        forms = [(o, f) for o, f in forms if f != (int(RecordState.AVAILABLE), 0)]
        batches = tuple(StateBatch(first, last, state, count) for first, last, (state, count) in _runs(forms))
        return StateUpdate(self.state_epoch, self.leader_epoch, self.start_offset,
                           self.delivery_complete_count(), batches)
