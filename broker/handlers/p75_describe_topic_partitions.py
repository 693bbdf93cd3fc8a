"""DescribeTopicPartitions (75): the partitions of topics, a page at a time (KIP-966).

As Kafka's DescribeTopicPartitionsRequestHandler and KRaftMetadataCache
(getTopicMetadataForDescribeTopicResponse):
- no topics named = every topic (internal ones too); topics the principal may not DESCRIBE are
  then left out silently, while a named one answers TOPIC_AUTHORIZATION_FAILED (zero topic id);
- topics are answered in name order from the cursor's topic on, the cursor's topic from the
  cursor's partition; a cursor whose topic is not among the named ones, or whose partition is
  negative, is INVALID_REQUEST for the whole request;
- at most min(response_partition_limit, max.request.partition.size.limit) partitions: where the
  limit cuts a topic, next_cursor names the first partition left out; where it falls between two
  topics, next_cursor names the next topic at partition 0;
- a named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an
  illegal name), with no partitions; nothing is auto-created.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.primitives import ZERO_UUID

from ..handler_view import BrokerView
from ..metadata import INTERNAL_TOPICS, validate_topic_name
from ..security.authorizer import AclOperation, ResourceType
from .p03_metadata import partition_entries

API = APIS_BY_NAME["DescribeTopicPartitions"]


def _error_topic(name: str, error: ErrorCode) -> dict:
    return {"error_code": int(error), "name": name, "topic_id": ZERO_UUID,
            "is_internal": name in INTERNAL_TOPICS, "partitions": []}


def _error_response(request, error: ErrorCode) -> dict:
    """Kafka's DescribeTopicPartitionsRequest.getErrorResponse: each named topic with the error."""
    return {"throttle_time_ms": 0, "next_cursor": None,
            "topics": [{**_error_topic(t.name, error), "is_internal": False} for t in request.topics]}


def _page(broker: BrokerView, names: list[str], fetch_all: bool, cursor, limit: int) -> tuple[list[dict], dict | None]:
    remaining = limit
    topics: list[dict] = []
    for name in names:
        if remaining <= 0:
            if remaining == 0:
                # The previous topics were answered whole: the next page starts at this topic.
                return topics, {"topic_name": name, "partition_index": 0}
            break
        meta = broker.metadata.topic(name)
        if meta is None:
            if not fetch_all:
                error = ErrorCode.INVALID_TOPIC_EXCEPTION if validate_topic_name(name) \
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                topics.append(_error_topic(name, error))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        end = min(meta.partitions, start + remaining)
        partitions = []
        for entry in partition_entries(broker, meta)[start:end]:
            entry["error_code"] = 0  # Kafka reports a leaderless partition by leader_id -1 only
            # Kafka always fills these (empty without KIP-966's ELR); Java's admin reads them unchecked.
            entry["eligible_leader_replicas"] = []
            entry["last_known_elr"] = []
            partitions.append(entry)
        topics.append({"error_code": 0, "name": name, "topic_id": meta.topic_id,
                       "is_internal": meta.internal, "partitions": partitions})
        if end < meta.partitions:
            return topics, {"topic_name": name, "partition_index": end}
        remaining -= len(partitions)
    return topics, None


async def handle(broker: BrokerView, ctx, request):
    authorizer = broker.authorizer
    cursor = request.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    fetch_all = not request.topics
    candidates = broker.metadata.topics if fetch_all else dict.fromkeys(t.name for t in request.topics)
    names = {name for name in candidates if name >= cursor_topic}
    if cursor is not None and (cursor.partition_index < 0 or (not fetch_all and cursor_topic not in names)):
        return _error_response(request, ErrorCode.INVALID_REQUEST)
    authorized = authorizer.filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    if cursor is not None and cursor_topic not in authorized:
        cursor = None  # Kafka restarts at partition 0 when the cursor's topic is not to be described
    limit = min(broker.config["max.request.partition.size.limit"], request.response_partition_limit)
    topics, next_cursor = _page(broker, sorted(authorized), fetch_all, cursor, limit)
    for entry in topics:
        entry["topic_authorized_operations"] = authorizer.authorized_operations(
            ctx, ResourceType.TOPIC, entry["name"])
    if not fetch_all:
        topics.extend(_error_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED) | {"is_internal": False}
                      for name in sorted(names - authorized))
    return {"throttle_time_ms": 0, "topics": topics, "next_cursor": next_cursor}
