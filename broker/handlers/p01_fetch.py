"""Fetch (1): log bytes from each partition, long-polling until min_bytes or max_wait_ms.

Fetch sessions (KIP-227, broker/fetch_sessions.py) decide first which partitions a fetch reads: a
full fetch's own, or an incremental fetch's session's (after its additions and forgotten
partitions); the session then prunes the answer to what changed. A session error answers at once,
without partitions.

The first partition with data returns at least one whole batch even when it exceeds the byte
limits (KIP-74); later partitions share what is left of max_bytes. As in Kafka's
ReplicaManager.fetchMessages, the answer goes out at once when there are enough bytes, when reading
a partition fails (not leader, a leader epoch, an offset out of range, ...), or when max_wait_ms is
0; otherwise appends wake the waiting fetch. The partitions KafkaApis turns away before reading
(an unknown topic id, topic or partition, or a topic the principal may not read) get their error
but do not cut the others' wait short (Kafka 4.3 still waits max_wait_ms); when no partition is
left to read, the answer goes out at once.

As KafkaApis reads the request into a map, a partition named twice is read and answered once (at
its first place, as named last). An isolation level other than 0 and 1 fails the request once a
partition is left to read: UNKNOWN_SERVER_ERROR, Kafka's error response.

v13 names topics by id: an id this broker does not know is UNKNOWN_TOPIC_ID for its partitions.
v15 carries a follower's id in the tagged replica state instead of replica_id. From v16 a partition
answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries the current leader, and a consumer's
response that leader's endpoint (KIP-951, broker/leader_hints.py). v17's directory id and v18's high
watermark are a follower's hints that this broker does not need.
"""

from __future__ import annotations

import time

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..client_quotas import fetch_max_bytes, fetch_throttle_ms
from ..fetch_sessions import ZERO_UUID, CachedPartition
from ..handler_view import BrokerView
from ..leader_hints import LeaderHints
from ..metadata import topic_names_of
from ..node import PartitionRead
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ..workers.fetch import fit, read_remote, remote_owners, wait_across

API = APIS_BY_NAME["Fetch"]

READ_COMMITTED = 1
TOPIC_IDS_VERSION = 13
REPLICA_STATE_VERSION = 15
LEADER_HINTS_VERSION = 16
_HINTED_ERRORS = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)


def _partition_error(partition: int, error: ErrorCode) -> dict:
    """Kafka's FetchResponse.partitionResponse: the error, -1 offsets, no records (and an empty,
    not null, list of aborted transactions)."""
    return {"partition_index": partition, "error_code": int(error),
            "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
            "aborted_transactions": [], "preferred_read_replica": -1, "records": b""}


def _replica_id(request, version: int) -> int:
    """The fetching follower's id, -1 for a consumer (in the tagged replica state from v15)."""
    return request.replica_state.replica_id if version >= REPLICA_STATE_VERSION else request.replica_id


def _readable_topics(broker: BrokerView, ctx, names: list[str | None], replica_id: int) -> set:
    names = {name for name in names if name is not None}
    if replica_id >= 0:  # a follower replicating
        allowed = broker.authorizer.authorize(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
        return names if allowed else set()
    return broker.authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, names)


def _asked_partitions(broker: BrokerView, request, version: int) -> list[CachedPartition]:
    """The request's partitions, named (from v13 by their topic id: None for an id not known here)."""
    names = (topic_names_of(broker.metadata, (t.topic_id for t in request.topics)) if version >= TOPIC_IDS_VERSION
             else [t.topic for t in request.topics])
    asked = [CachedPartition(name, topic.topic_id if version >= TOPIC_IDS_VERSION else ZERO_UUID, p.partition,
                             p.fetch_offset, p.partition_max_bytes, current_leader_epoch=p.current_leader_epoch,
                             log_start_offset=p.log_start_offset, last_fetched_epoch=p.last_fetched_epoch)
             for topic, name in zip(request.topics, names) for p in topic.partitions]
    # FetchRequest.fetchData is a map: a partition named twice is read once, at its first place,
    # as named last.
    return list({part.key: part for part in asked}.values())


def _forgotten_partitions(request, version: int) -> list[tuple]:
    """forgotten_topics_data as session keys (CachedPartition.key)."""
    if version < 7:
        return []
    return [(t.topic_id if version >= TOPIC_IDS_VERSION else t.topic, p)
            for t in request.forgotten_topics_data for p in t.partitions]


def _resolve_unknown_names(broker: BrokerView, partitions: list[CachedPartition]) -> None:
    """CachedPartition.maybeResolveUnknownName: a session's topic id unknown when it was added may
    be known now; a known name is kept (a topic re-created under it is INCONSISTENT_TOPIC_ID)."""
    for part in partitions:
        if part.topic is None and part.topic_id != ZERO_UUID:
            meta = broker.metadata.topic_by_id(part.topic_id)
            if meta is not None:
                part.topic = meta.name


def _refused(broker: BrokerView, part: CachedPartition, readable: set) -> ErrorCode | None:
    """KafkaApis.handleFetchRequest's checks before the read, in its order (None: read it)."""
    if part.topic is None:
        return ErrorCode.UNKNOWN_TOPIC_ID
    if part.topic not in readable:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    meta = broker.metadata.topic(part.topic)
    if meta is None or not 0 <= part.partition < meta.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return None


def _read(broker: BrokerView, part: CachedPartition, **kwargs) -> PartitionRead:
    """ReplicaManager.readFromLocalLog: a session's topic id that is no longer the log's (the topic
    was re-created under its name) is INCONSISTENT_TOPIC_ID, before the read's own checks; a topic
    deleted since the checks before the read (while other workers read theirs) is unknown."""
    if part.topic_id != ZERO_UUID:
        meta = broker.metadata.topic(part.topic)
        if meta is None:
            return PartitionRead(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if meta.topic_id != part.topic_id:
            return PartitionRead(ErrorCode.INCONSISTENT_TOPIC_ID)
    return broker.read_partition(part.topic, part.partition, part.fetch_offset, **kwargs)


def _read_all(broker: BrokerView, request, version: int, partitions: list[CachedPartition], refused: dict,
              replica_id: int, remote: dict | None = None):
    """([(partition, its answer)], bytes read, whether reading a partition failed). `remote`: the
    reads other workers made of their partitions (broker/workers/fetch.py), cut here to what this
    partition's place in the order leaves."""
    isolation = request.isolation_level if version >= 4 else 0
    remaining = request.max_bytes
    min_one = True
    total = 0
    has_error = False
    answers = []
    for i, part in enumerate(partitions):
        error = refused.get(i)
        if error is not None:
            answers.append((part, _partition_error(part.partition, error)))
            continue
        limit = max(0, min(part.partition_max_bytes, remaining))
        if remote is not None and i in remote:
            read = fit(remote[i], limit, min_one)
        else:
            read = _read(broker, part, max_bytes=limit, min_one=min_one, read_committed=isolation == READ_COMMITTED,
                         current_leader_epoch=part.current_leader_epoch, replica_id=replica_id)
        size = len(read.records) if read.records is not None else 0
        if size:
            min_one = False
            remaining -= size
            total += size
        if read.error != ErrorCode.NONE:
            has_error = True
        answers.append((part, {
            "partition_index": part.partition,
            "error_code": int(read.error),
            "high_watermark": read.high_watermark,
            "last_stable_offset": read.last_stable_offset,
            "log_start_offset": read.log_start_offset,
            "aborted_transactions": read.aborted_transactions if isolation == READ_COMMITTED else None,
            "preferred_read_replica": -1,
            "records": read.records if read.records is not None else b"",
        }))
    return answers, total, has_error


def _by_topic(answers: list[tuple[CachedPartition, dict]]) -> list[dict]:
    """FetchResponse.toMessage: consecutive partitions of one topic share its entry."""
    responses = []
    for part, answer in answers:
        if not responses or (responses[-1]["topic"], responses[-1]["topic_id"]) != (part.topic or "", part.topic_id):
            responses.append({"topic": part.topic or "", "topic_id": part.topic_id, "partitions": []})
        responses[-1]["partitions"].append(answer)
    return responses


def _unknown_isolation_level(request, version: int) -> dict:
    """IsolationLevel.forId throws in KafkaApis once there is a partition to read: the request's
    error response (FetchRequest.getErrorResponse), UNKNOWN_SERVER_ERROR at the top and, below v13,
    for every partition the request names."""
    error = ErrorCode.UNKNOWN_SERVER_ERROR
    responses = [] if version >= TOPIC_IDS_VERSION else [
        {"topic": t.topic, "topic_id": t.topic_id, "partitions": [_partition_error(p.partition, error)
                                                                  for p in t.partitions]}
        for t in request.topics]
    return {"throttle_time_ms": 0, "error_code": int(error), "session_id": request.session_id,
            "responses": responses}


async def handle(broker: BrokerView, ctx, request):
    version = ctx.api_version
    replica_id = _replica_id(request, version)
    sessions = broker.fetch_sessions
    context = sessions.new_context(version, request.session_id, request.session_epoch, replica_id >= 0,
                                   _asked_partitions(broker, request, version), _forgotten_partitions(request, version))
    if context.kind == "error":
        return {"throttle_time_ms": 0, "error_code": int(context.error), "session_id": 0, "responses": []}
    deadline = time.monotonic() + max(0, request.max_wait_ms) / 1000
    partitions = context.partitions
    _resolve_unknown_names(broker, partitions)
    readable = _readable_topics(broker, ctx, [p.topic for p in partitions], replica_id)
    refused = {i: error for i, part in enumerate(partitions)
               if (error := _refused(broker, part, readable)) is not None}
    watched = [(part.topic, part.partition) for i, part in enumerate(partitions) if i not in refused]
    if watched and version >= 4 and request.isolation_level not in (0, READ_COMMITTED):
        return _unknown_isolation_level(request, version)
    if replica_id < 0:
        request.max_bytes = fetch_max_bytes(broker, ctx, request.max_bytes)
    # With several workers (broker/workers/), other workers' partitions are read by their owners.
    owners = remote_owners(broker, partitions, refused) if broker.workers is not None else None
    read_committed = version >= 4 and request.isolation_level == READ_COMMITTED
    while True:
        remote = None
        if owners:
            remote = await read_remote(broker, partitions, owners, max_bytes=request.max_bytes,
                                       read_committed=read_committed, replica_id=replica_id,
                                       reader=ctx.connection_id)
        answers, total, has_error = _read_all(broker, request, version, partitions, refused, replica_id, remote)
        if total >= request.min_bytes or has_error or not watched:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        if owners:
            await wait_across(broker, partitions, [i for i in range(len(partitions)) if i not in refused],
                              read_committed=read_committed, timeout=remaining)
        else:
            await broker.waiters.wait(watched, remaining)
    if replica_id < 0:
        # consumer_byte_rate quotas (broker/client_quotas.py): Kafka answers a throttled fetch empty.
        throttle_time_ms = fetch_throttle_ms(broker, ctx, total)
        if throttle_time_ms:
            error, session_id = sessions.throttled(context)
            return {"throttle_time_ms": throttle_time_ms, "error_code": int(error), "session_id": session_id,
                    "responses": []}
    error, session_id, answers = sessions.respond(context, answers)
    responses = _by_topic(answers)
    response = {"throttle_time_ms": 0, "error_code": int(error), "session_id": session_id, "responses": responses}
    if version >= LEADER_HINTS_VERSION and has_error:
        hints = LeaderHints(broker, ctx.listener)
        for topic in responses:
            for entry in topic["partitions"]:
                hints.annotate(topic["topic"] or None, entry["partition_index"], entry, _HINTED_ERRORS)
        if replica_id < 0:  # Kafka sends followers the current leaders without their endpoints
            response["node_endpoints"] = hints.node_endpoints()
    return response
