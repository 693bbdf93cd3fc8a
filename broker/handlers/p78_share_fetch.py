"""ShareFetch (78): records for a share group member, acquired for it, with acknowledgements of
earlier deliveries piggybacked (KIP-932).

Order of work, as Kafka's KafkaApis.handleShareFetchRequest: the share session first (epoch 0 opens
one with the request's partitions, -1 closes it, any other must be the session's next epoch; an
error answers at once with no partitions), then the acknowledgements (each partition's
acknowledge_error_code; made durable in __share_group_state before the answer), then the fetch:
each of the session's partitions is read where it lives (broker/share_groups.py) from its
share-partition's next available offset, and what was read is acquired for the member, at most
max_records over the request (the read is sized to that, not to the request's max_bytes: _read).
The answer carries the batches read and, in acquired_records, the offset ranges the member holds
(its lock lasts share.record.lock.duration.ms, answered as acquisition_lock_timeout_ms). Nothing
acquired: the fetch waits up to max_wait_ms, as Kafka's delayed share fetch, for an append past
what it read or for records or acquisition locks to free up (a release, an acknowledgement, a lock
timeout: group.share.partition.max.record.locks may be what held it back), woken by those events,
never polling. A final request (-1) releases the member's acquired records after its
acknowledgements.

With the group's share.isolation.level=read_committed the partitions are read up to their last
stable offset, and records of aborted transactions that a fetch acquired are archived at once and
never delivered (Kafka's SharePartition does the same); the transaction markers are acquired like
any record, as Kafka does.

A full answer (the session just opened) lists every partition; later ones only the partitions with
records, an error, or an acknowledgement result, as Kafka's ShareSessionContext does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from coordinator.offsets_store import AppendFailed
from coordinator.share_partition import aborted_batch_ranges
from coordinator.share_sessions import ShareSessionError

from ..handler_view import BrokerView
from ..leader_hints import LeaderHints
from ..security.authorizer import AclOperation, ResourceType
from ..share_groups import ShareRequestRefused, batch_ranges, now_ms, open_share_request, share_partition_error

API = APIS_BY_NAME["ShareFetch"]
NO_LEADER = {"leader_id": -1, "leader_epoch": -1}
LEADER_HINTED_ERRORS = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)
DEFAULT_MAX_RECORDS = 500
# A share fetch reads this much first, then only as many bytes as the records it may still acquire
# take at the size per record seen there: not the request's max_bytes (50 MiB from the Java and
# franz-go share consumers) of which it would deliver max_records.
FIRST_READ_BYTES = 64 * 1024


def _top_error(error: ErrorCode, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": message,
            "acquisition_lock_timeout_ms": 0, "responses": [], "node_endpoints": []}


def _partition(index: int, error: ErrorCode = ErrorCode.NONE, message: str | None = None) -> dict:
    return {"partition_index": index, "error_code": int(error), "error_message": message,
            "acknowledge_error_code": 0, "acknowledge_error_message": None, "current_leader": dict(NO_LEADER),
            "records": b"", "acquired_records": []}


def _refusal(broker: BrokerView, readable: set, topic_id, partition: int):
    """(topic name, error) of a partition the request names: an error when it cannot be read."""
    meta = broker.metadata.topic_by_id(topic_id)
    if meta is None:
        return None, ErrorCode.UNKNOWN_TOPIC_ID
    if meta.name not in readable:
        return meta.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if not 0 <= partition < meta.partitions:
        return meta.name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return meta.name, None


def invalid_member(group_id: str, member_id: str) -> tuple | None:
    """ShareFetch's and ShareAcknowledge's refusal of a request without a group id or member id."""
    if not group_id or not member_id or not member_id.strip():
        return ErrorCode.INVALID_REQUEST, "Invalid group id or member id in the request."
    return None


async def _read(service, topic: str, topic_id, partition: int, offset: int, records: int, max_bytes: int,
                read_committed: bool):
    """Read a partition from `offset` for a fetch that may acquire `records` more: (PartitionRead,
    bytes). Kafka hands a lazy file slice of max_bytes to the acquisition and sends only what was
    acquired; here the read is into memory, so it is sized to what can be acquired: FIRST_READ_BYTES,
    then, when that held fewer records, again for `records` at the size per record seen (a read
    returns at least one whole batch; an acquisition may still skip records held by others and
    return fewer, as a fetch may)."""
    first = min(max_bytes, FIRST_READ_BYTES)
    read, data = await service.read(topic, topic_id, partition, offset, first, read_committed)
    if read.error != ErrorCode.NONE or not data or first >= max_bytes:
        return read, data
    ranges = batch_ranges(data)
    held = ranges[-1][1] - offset + 1 if ranges else 0
    if held <= 0 or held >= records or ranges[-1][1] + 1 >= read.high_watermark:
        return read, data
    wanted = min(max_bytes, len(data) * records // held + FIRST_READ_BYTES)
    return await service.read(topic, topic_id, partition, offset, wanted, read_committed)


def _cut_after(data: bytes, last_offset: int) -> bytes:
    """The fetched batches up to the one holding `last_offset` (the rest was not acquired)."""
    pos = 0
    for base, last in batch_ranges(data):
        length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        pos += 12 + length
        if last >= last_offset:
            break
    return data[:pos]


async def handle(broker: BrokerView, ctx, request):
    version = ctx.api_version
    group_id, member_id = request.group_id, request.member_id
    try:
        service = open_share_request(broker, ctx, group_id, AclOperation.READ, invalid_member(group_id, member_id),
                                     at_coordinator=False)
    except ShareRequestRefused as e:
        return _top_error(e.error, e.message)
    asked = [(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions]
    acks = {(t.topic_id, p.partition_index): p.acknowledgement_batches
            for t in request.topics for p in t.partitions if p.acknowledgement_batches}
    forgotten = [(t.topic_id, p) for t in request.forgotten_topics_data for p in t.partitions]
    try:
        context = service.sessions.fetch_context(group_id, member_id, request.share_session_epoch, asked,
                                                 forgotten, bool(acks))
    except ShareSessionError as e:
        return _top_error(e.error, e.message)

    names = {}
    for t in request.topics:
        meta = broker.metadata.topic_by_id(t.topic_id)
        if meta is not None:
            names[t.topic_id] = meta.name
    for topic_id, _ in context.partitions:
        meta = broker.metadata.topic_by_id(topic_id)
        if meta is not None:
            names[topic_id] = meta.name
    readable = broker.authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, set(names.values()))
    answers: dict[tuple, dict] = {}
    listed: set[tuple] = set()

    def answer(tp) -> dict:
        entry = answers.get(tp)
        if entry is None:
            entry = answers[tp] = _partition(tp[1])
        return entry

    # Acknowledgements first.
    is_renew = version >= 2 and request.is_renew_ack
    for (topic_id, partition), batches in acks.items():
        topic, error = _refusal(broker, readable, topic_id, partition)
        entry = answer((topic_id, partition))
        listed.add((topic_id, partition))
        if error is not None:
            entry["acknowledge_error_code"] = int(error)
            continue
        ack_error, message = await service.acknowledge(group_id, member_id, topic, topic_id, partition, batches,
                                                       is_renew)
        entry["acknowledge_error_code"] = int(ack_error)
        entry["acknowledge_error_message"] = message

    lock_ms = service.lock_duration_ms(group_id)
    if context.final:
        await service.release_member(group_id, member_id)
        service.forget_idle_group(group_id)
        return _respond(broker, ctx, names, answers, listed, lock_ms)

    to_read = []
    for tp in context.partitions:
        topic, error = _refusal(broker, readable, *tp)
        if error is not None:
            answer(tp).update(error_code=int(error))
            listed.add(tp)
        else:
            to_read.append((tp, topic))
        if context.full:
            answer(tp)
            listed.add(tp)

    if not is_renew and to_read:
        max_records = request.max_records if version >= 1 and request.max_records > 0 else DEFAULT_MAX_RECORDS
        mode = request.share_acquire_mode if version >= 2 else 0
        read_committed = service.read_committed(group_id)
        deadline = time.monotonic() + max(0, request.max_wait_ms) / 1000
        while True:
            released = service.released  # what a release during this pass sets
            outcome = await _fetch_once(service, group_id, member_id, to_read, request, max_records, mode,
                                        read_committed, answer, listed)
            if outcome.acquired_any:
                break
            if outcome.archived:
                continue  # aborted records were archived: read on past them at once
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not (outcome.waiting or outcome.blocked):
                break
            # As Kafka's delayed share fetch: wait for new data on the partitions read to their end,
            # or for records or acquisition locks to free up on the others, or the max wait.
            await service.wait_for_data(outcome.waiting, remaining, read_committed=read_committed, released=released)
    return _respond(broker, ctx, names, answers, listed, lock_ms)


@dataclass
class FetchPass:
    """What one pass over the session's partitions found."""

    acquired_any: bool = False
    archived: bool = False  # read_committed: acquired records of aborted transactions were archived
    # (topic, partition, offset) read to their end (or the last stable offset): wait for appends.
    waiting: list = field(default_factory=list)
    # Partitions with records to read that could acquire none (every acquisition lock in use, or
    # nothing there available): wait for a release, an acknowledgement or a lock timeout.
    blocked: list = field(default_factory=list)


async def _fetch_once(service, group_id, member_id, to_read, request, max_records, mode, read_committed,
                      answer, listed):
    """One pass over the partitions: read and acquire."""
    left = max_records
    remaining_bytes = request.max_bytes if request.max_bytes > 0 else 0x7FFFFFFF
    found = FetchPass()
    for (topic_id, partition), topic in to_read:
        if left <= 0:
            break
        try:
            sp = await service.share_partition(group_id, topic, topic_id, partition)
            await service.persist(sp, sp.expire_locks(now_ms()))
        except AppendFailed as e:  # its share coordinator refused (a deposed leader) or is away
            _refuse(answer, listed, (topic_id, partition), e)
            continue
        if not sp.can_acquire():
            found.blocked.append((topic, partition))
            continue
        offset = sp.next_fetch_offset()
        read, data = await _read(service, topic, topic_id, partition, offset, left, remaining_bytes, read_committed)
        if read.error == ErrorCode.OFFSET_OUT_OF_RANGE:
            log_start, _, _ = await service.log_offsets(topic, partition)
            if offset < log_start:
                try:
                    await service.persist(sp, sp.update_log_start_offset(log_start))
                except AppendFailed as e:
                    _refuse(answer, listed, (topic_id, partition), e)
                    continue
                offset = sp.next_fetch_offset()
                read, data = await _read(service, topic, topic_id, partition, offset, left, remaining_bytes,
                                         read_committed)
            elif offset >= read.high_watermark:
                read.error = ErrorCode.NONE
        if read.error not in (ErrorCode.NONE, ErrorCode.OFFSET_OUT_OF_RANGE):
            answer((topic_id, partition)).update(error_code=int(read.error))
            listed.add((topic_id, partition))
            continue
        if sp.discarded or service.partitions.get((group_id, topic_id, partition)) is not sp:
            continue  # dropped or loaded again while this read: its acquisitions would be another copy's too
        ranges = batch_ranges(data) if read.error == ErrorCode.NONE else []
        acquired = sp.acquire(member_id, ranges, left, now_ms(), acquire_mode=mode) if ranges else []
        if acquired and read_committed and read.aborted_transactions:
            acquired, update = sp.archive_aborted(acquired, aborted_batch_ranges(data, read.aborted_transactions))
            if update is not None:
                try:
                    await service.persist(sp, update)
                except AppendFailed as e:  # the share-partition is dropped: its acquisitions are not handed out
                    _refuse(answer, listed, (topic_id, partition), e)
                    continue
                found.archived = True
        if not acquired:
            if ranges:
                found.blocked.append((topic, partition))
            else:
                found.waiting.append((topic, partition, offset))
            continue
        found.acquired_any = True
        left -= sum(a.last_offset - a.first_offset + 1 for a in acquired)
        records = _cut_after(data, acquired[-1].last_offset)
        remaining_bytes = max(0, remaining_bytes - len(records))
        entry = answer((topic_id, partition))
        entry["records"] = records
        entry["acquired_records"] = [{"first_offset": a.first_offset, "last_offset": a.last_offset,
                                      "delivery_count": a.delivery_count} for a in acquired]
        listed.add((topic_id, partition))
    return found


def _refuse(answer, listed: set, tp: tuple, failed: AppendFailed) -> None:
    """A partition whose share-partition state could not be read or written: the error Kafka sends."""
    answer(tp).update(error_code=int(share_partition_error(failed.error)))
    listed.add(tp)


def _respond(broker: BrokerView, ctx, names: dict, answers: dict, listed: set, lock_ms: int) -> dict:
    # A partition led elsewhere (a cluster's leader moved): its current leader and that broker's
    # endpoint, as Kafka's ShareFetch answers (KIP-951 hints, broker/leader_hints.py).
    hints = LeaderHints(broker, ctx.listener)
    by_topic: dict = {}
    for tp, entry in answers.items():
        if tp in listed:
            by_topic.setdefault(tp[0], []).append(entry)
            if tp[0] in names:
                hints.annotate(names[tp[0]], tp[1], entry, LEADER_HINTED_ERRORS)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "acquisition_lock_timeout_ms": lock_ms,
            "responses": [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in by_topic.items()],
            "node_endpoints": hints.node_endpoints()}
