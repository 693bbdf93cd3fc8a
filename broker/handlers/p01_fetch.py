"""Fetch (1): log bytes from each partition, long-polling until min_bytes or max_wait_ms.

Fetch sessions (KIP-227) are declined: a full fetch (session epoch 0, or -1) is answered with
session id 0, so clients keep sending full fetch requests, which the KIP allows. An incremental
fetch (epoch > 0) names a session we never created: FETCH_SESSION_ID_NOT_FOUND, as Kafka answers
for a session it no longer has.

The first partition with data returns at least one whole batch even when it exceeds the byte
limits (KIP-74); later partitions share what is left of max_bytes. As in Kafka's
ReplicaManager.fetchMessages, the answer goes out at once when there are enough bytes, when reading
a partition fails (not leader, a leader epoch, an offset out of range, ...), or when max_wait_ms is
0; otherwise appends wake the waiting fetch. The partitions KafkaApis turns away before reading
(an unknown topic id, topic or partition, or a topic the principal may not read) get their error
but do not cut the others' wait short (Kafka 4.3 still waits max_wait_ms); when no partition is
left to read, the answer goes out at once.

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
from ..leader_hints import LeaderHints
from ..metadata_store import topic_names_of
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["Fetch"]

READ_COMMITTED = 1
INITIAL_EPOCH, FINAL_EPOCH = 0, -1
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


def _readable_topics(broker, ctx, names: list[str | None], replica_id: int) -> set:
    names = {name for name in names if name is not None}
    if replica_id >= 0:  # a follower replicating
        allowed = broker.authorizer.authorize(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
        return names if allowed else set()
    return broker.authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, names)


def _refused(broker, name: str | None, partition: int, readable: set) -> ErrorCode | None:
    """KafkaApis.handleFetchRequest's checks before the read, in its order (None: read it)."""
    if name is None:
        return ErrorCode.UNKNOWN_TOPIC_ID
    if name not in readable:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    meta = broker.metadata.topic(name)
    if meta is None or not 0 <= partition < meta.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return None


def _read_all(broker, request, version: int, names: list[str | None], refused: dict, replica_id: int):
    """(responses, bytes read, whether reading a partition failed)."""
    isolation = request.isolation_level if version >= 4 else 0
    remaining = request.max_bytes
    min_one = True
    total = 0
    has_error = False
    responses = []
    for i, (topic, name) in enumerate(zip(request.topics, names)):
        partitions = []
        for p in topic.partitions:
            error = refused.get((i, p.partition))
            if error is not None:
                partitions.append(_partition_error(p.partition, error))
                continue
            read = broker.read_partition(
                name, p.partition, p.fetch_offset,
                max_bytes=max(0, min(p.partition_max_bytes, remaining)),
                min_one=min_one, read_committed=isolation == READ_COMMITTED,
                current_leader_epoch=p.current_leader_epoch, replica_id=replica_id)
            size = len(read.records) if read.records is not None else 0
            if size:
                min_one = False
                remaining -= size
                total += size
            if read.error != ErrorCode.NONE:
                has_error = True
            partitions.append({
                "partition_index": p.partition,
                "error_code": int(read.error),
                "high_watermark": read.high_watermark,
                "last_stable_offset": read.last_stable_offset,
                "log_start_offset": read.log_start_offset,
                "aborted_transactions": read.aborted_transactions if isolation == READ_COMMITTED else None,
                "preferred_read_replica": -1,
                "records": read.records if read.records is not None else b"",
            })
        responses.append({"topic": topic.topic, "topic_id": topic.topic_id, "partitions": partitions})
    return responses, total, has_error


async def handle(broker, ctx, request):
    version = ctx.api_version
    if version >= 7 and request.session_epoch not in (INITIAL_EPOCH, FINAL_EPOCH):
        # An incremental fetch in a session this broker does not have (it creates none).
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
                "session_id": 0, "responses": []}
    deadline = time.monotonic() + max(0, request.max_wait_ms) / 1000
    replica_id = _replica_id(request, version)
    names = (topic_names_of(broker.metadata, (t.topic_id for t in request.topics)) if version >= TOPIC_IDS_VERSION
             else [t.topic for t in request.topics])
    readable = _readable_topics(broker, ctx, names, replica_id)
    refused = {(i, p.partition): error for i, (t, name) in enumerate(zip(request.topics, names))
               for p in t.partitions if (error := _refused(broker, name, p.partition, readable)) is not None}
    watched = [(name, p.partition) for i, (t, name) in enumerate(zip(request.topics, names))
               for p in t.partitions if (i, p.partition) not in refused]
    if replica_id < 0:
        request.max_bytes = fetch_max_bytes(broker, ctx, request.max_bytes)
    while True:
        responses, total, has_error = _read_all(broker, request, version, names, refused, replica_id)
        if total >= request.min_bytes or has_error or not watched:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        await broker.waiters.wait(watched, remaining)
    if replica_id < 0:
        # consumer_byte_rate quotas (broker/client_quotas.py): Kafka answers a throttled fetch empty.
        throttle_time_ms = fetch_throttle_ms(broker, ctx, total)
        if throttle_time_ms:
            return {"throttle_time_ms": throttle_time_ms, "error_code": 0, "session_id": 0, "responses": []}
    response = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}
    if version >= LEADER_HINTS_VERSION and has_error:
        hints = LeaderHints(broker, ctx.listener)
        for topic, name in zip(responses, names):
            for entry in topic["partitions"]:
                hints.annotate(name, entry["partition_index"], entry, _HINTED_ERRORS)
        if replica_id < 0:  # Kafka sends followers the current leaders without their endpoints
            response["node_endpoints"] = hints.node_endpoints()
    return response
