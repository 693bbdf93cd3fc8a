"""OffsetFetch (9): committed offsets of a group (v1-7) or of several groups (v8-10).

v9 carries the member id and epoch of a KIP-848 consumer group member, checked against the group.
v10 names topics by id, in the request and the answer: an id this broker does not know is
UNKNOWN_TOPIC_ID for its partitions, as Kafka 4.3 answers.

Null topics (v2+) ask for every committed offset. Partitions without a commit answer offset -1.
With require_stable (v7+), partitions with offsets in an open transaction answer
UNSTABLE_OFFSET_COMMIT. v1 has no group-level error: a group error goes to every partition.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..metadata import topic_names_of
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["OffsetFetch"]

TOPIC_IDS_VERSION = 10


def _fetch(groups, group_id: str, partitions, require_stable: bool, member_id: str | None, member_epoch: int):
    """(group error, [(topic, partition, offset, epoch, metadata, error)]) for one group."""
    if groups is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
    return groups.fetch_offsets(group_id=group_id, partitions=partitions, require_stable=require_stable,
                                member_id=member_id, member_epoch=member_epoch)


def _authorized_fetch(broker: BrokerView, ctx, group_id: str, partitions, require_stable: bool,
                      member_id: str | None = None, member_epoch: int = -1):
    """Like _fetch, for [(topic, partition)] (None: every committed one), with Kafka's checks of
    the group's and the topics' DESCRIBE."""
    if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    error, rows = _fetch(getattr(broker, "groups", None), group_id, partitions, require_stable, member_id,
                         member_epoch)
    describable = broker.authorizer.filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                      {row[0] for row in rows})
    if partitions is None:
        return error, [row for row in rows if row[0] in describable]
    return error, [row if row[0] in describable else (*row[:2], -1, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                   for row in rows]


def _by_topic(rows) -> list[dict]:
    topics: dict[str, list[dict]] = {}
    for topic, partition, offset, epoch, metadata, error in rows:
        topics.setdefault(topic, []).append({
            "partition_index": partition, "committed_offset": offset, "committed_leader_epoch": epoch,
            "metadata": metadata, "error_code": int(error),
        })
    return [{"name": name, "partitions": partitions} for name, partitions in topics.items()]


def _unknown_topic_id(topic_id, partition_indexes) -> dict:
    return {"topic_id": topic_id, "partitions": [
        {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
         "error_code": int(ErrorCode.UNKNOWN_TOPIC_ID)} for p in partition_indexes]}


def _fetch_group(broker: BrokerView, ctx, group, require_stable: bool, version: int) -> dict:
    """One group's answer (v8+)."""
    if version < TOPIC_IDS_VERSION or group.topics is None:
        partitions = None if group.topics is None else [(t.name, p) for t in group.topics for p in t.partition_indexes]
        error, rows = _authorized_fetch(broker, ctx, group.group_id, partitions, require_stable,
                                        group.member_id, group.member_epoch)
        topics = _by_topic(rows)
        if version >= TOPIC_IDS_VERSION:  # every committed offset: each topic by its id
            for topic in topics:
                meta = broker.metadata.topic(topic["name"])
                topic["topic_id"] = meta.topic_id if meta is not None else None
            topics = [topic for topic in topics if topic["topic_id"] is not None]
        return {"group_id": group.group_id, "topics": topics, "error_code": int(error)}
    names = topic_names_of(broker.metadata, (t.topic_id for t in group.topics))
    partitions = [(name, p) for t, name in zip(group.topics, names) if name is not None for p in t.partition_indexes]
    error, rows = _authorized_fetch(broker, ctx, group.group_id, partitions, require_stable,
                                    group.member_id, group.member_epoch)
    if error != ErrorCode.NONE:
        return {"group_id": group.group_id, "topics": [], "error_code": int(error)}
    found = {topic["name"]: topic for topic in _by_topic(rows)}
    topics = []
    for t, name in zip(group.topics, names):
        if name is None:
            topics.append(_unknown_topic_id(t.topic_id, t.partition_indexes))
        elif name in found:
            topics.append({**found.pop(name), "topic_id": t.topic_id})
    return {"group_id": group.group_id, "topics": topics, "error_code": int(error)}


async def handle(broker: BrokerView, ctx, request):
    version = ctx.api_version
    if version >= 8:
        return {"throttle_time_ms": 0, "groups": [_fetch_group(broker, ctx, group, request.require_stable, version)
                                                  for group in request.groups]}
    partitions = None if request.topics is None else [(t.name, p) for t in request.topics for p in t.partition_indexes]
    error, rows = _authorized_fetch(broker, ctx, request.group_id, partitions,
                                    request.require_stable if version >= 7 else False)
    if error != ErrorCode.NONE and version < 2:
        rows = [(t.name, p, -1, -1, "", error) for t in request.topics for p in t.partition_indexes]
    return {"throttle_time_ms": 0, "topics": _by_topic(rows), "error_code": int(error)}
