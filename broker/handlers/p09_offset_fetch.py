"""OffsetFetch (9): committed offsets of a group (v1-7) or of several groups (v8-9).

v9 carries the member id and epoch of a KIP-848 consumer group member, checked against the group.

Null topics (v2+) ask for every committed offset. Partitions without a commit answer offset -1.
With require_stable (v7+), partitions with offsets in an open transaction answer
UNSTABLE_OFFSET_COMMIT. v1 has no group-level error: a group error goes to every partition.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["OffsetFetch"]


def _fetch(groups, group_id: str, topics, require_stable: bool, member_id: str | None, member_epoch: int):
    """(group error, [(topic, partition, offset, epoch, metadata, error)]) for one group."""
    partitions = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
    if groups is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
    return groups.fetch_offsets(group_id=group_id, partitions=partitions, require_stable=require_stable,
                                member_id=member_id, member_epoch=member_epoch)


def _authorized_fetch(broker, ctx, group_id: str, topics, require_stable: bool, member_id: str | None = None,
                      member_epoch: int = -1):
    if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    error, rows = _fetch(getattr(broker, "groups", None), group_id, topics, require_stable, member_id, member_epoch)
    describable = broker.authorizer.filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                      {row[0] for row in rows})
    if topics is None:
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


async def handle(broker, ctx, request):
    version = ctx.api_version
    if version >= 8:
        results = []
        for group in request.groups:
            error, rows = _authorized_fetch(broker, ctx, group.group_id, group.topics, request.require_stable,
                                            group.member_id, group.member_epoch)
            results.append({"group_id": group.group_id, "topics": _by_topic(rows), "error_code": int(error)})
        return {"throttle_time_ms": 0, "groups": results}
    error, rows = _authorized_fetch(broker, ctx, request.group_id, request.topics,
                                    request.require_stable if version >= 7 else False)
    if error != ErrorCode.NONE and version < 2:
        rows = [(t.name, p, -1, -1, "", error) for t in request.topics for p in t.partition_indexes]
    return {"throttle_time_ms": 0, "topics": _by_topic(rows), "error_code": int(error)}
