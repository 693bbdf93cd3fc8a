"""Fetch (1): log bytes from each partition, long-polling until min_bytes or max_wait_ms.

Fetch sessions (KIP-227) are declined: a full fetch (session epoch 0, or -1) is answered with
session id 0, so clients keep sending full fetch requests, which the KIP allows. An incremental
fetch (epoch > 0) names a session we never created: FETCH_SESSION_ID_NOT_FOUND, as Kafka answers
for a session it no longer has.

The first partition with data returns at least one whole batch even when it exceeds the byte
limits (KIP-74); later partitions share what is left of max_bytes. As in Kafka's
ReplicaManager.fetchMessages, the answer goes out at once when there are enough bytes, when any
partition has an error, or when max_wait_ms is 0; otherwise appends wake the waiting fetch.
"""

from __future__ import annotations

import time

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..client_quotas import fetch_max_bytes, fetch_throttle_ms
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["Fetch"]

READ_COMMITTED = 1
INITIAL_EPOCH, FINAL_EPOCH = 0, -1


def _unauthorized(partition: int) -> dict:
    return {"partition_index": partition, "error_code": int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
            "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
            "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}


def _readable_topics(broker, ctx, request) -> set:
    names = {t.topic for t in request.topics}
    if request.replica_id >= 0:  # a follower replicating
        allowed = broker.authorizer.authorize(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
        return names if allowed else set()
    return broker.authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, names)


def _read_all(broker, request, version: int, readable: set):
    isolation = request.isolation_level if version >= 4 else 0
    remaining = request.max_bytes
    min_one = True
    total = 0
    has_error = False
    responses = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            if topic.topic not in readable:
                partitions.append(_unauthorized(p.partition))
                has_error = True
                continue
            read = broker.read_partition(
                topic.topic, p.partition, p.fetch_offset,
                max_bytes=max(0, min(p.partition_max_bytes, remaining)),
                min_one=min_one, read_committed=isolation == READ_COMMITTED,
                current_leader_epoch=p.current_leader_epoch, replica_id=request.replica_id)
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
        responses.append({"topic": topic.topic, "partitions": partitions})
    return responses, total, has_error


async def handle(broker, ctx, request):
    version = ctx.api_version
    if version >= 7 and request.session_epoch not in (INITIAL_EPOCH, FINAL_EPOCH):
        # An incremental fetch in a session this broker does not have (it creates none).
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
                "session_id": 0, "responses": []}
    deadline = time.monotonic() + max(0, request.max_wait_ms) / 1000
    watched = [(t.topic, p.partition) for t in request.topics for p in t.partitions]
    readable = _readable_topics(broker, ctx, request)
    if request.replica_id < 0:
        request.max_bytes = fetch_max_bytes(broker, ctx, request.max_bytes)
    while True:
        responses, total, has_error = _read_all(broker, request, version, readable)
        if total >= request.min_bytes or has_error or not watched:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        await broker.waiters.wait(watched, remaining)
    if request.replica_id < 0:
        # consumer_byte_rate quotas (broker/client_quotas.py): Kafka answers a throttled fetch empty.
        throttle_time_ms = fetch_throttle_ms(broker, ctx, total)
        if throttle_time_ms:
            return {"throttle_time_ms": throttle_time_ms, "error_code": 0, "session_id": 0, "responses": []}
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}
