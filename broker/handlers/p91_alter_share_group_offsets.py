"""AlterShareGroupOffsets (91): set share-partitions' start offsets (kafka-share-groups.sh
--reset-offsets, KIP-932). Only while the group has no members (NON_EMPTY_GROUP otherwise; a group
that does not exist yet is created empty, as Kafka does): what was in flight is dropped, the state
epoch moves on, and the new state is durable in __share_group_state before the answer.
"""

from __future__ import annotations

import uuid

from coordinator.offsets_store import AppendFailed
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..features import SHARE_VERSION
from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from ..share_groups import service_of
from ..share_groups import served as serves_share_groups

API = APIS_BY_NAME["AlterShareGroupOffsets"]


def _error(error: ErrorCode, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": message, "responses": []}


def served(broker: BrokerView) -> bool:
    """Not by a ZooKeeper-mode cluster (broker/share_groups.py)."""
    return serves_share_groups(broker)


async def handle(broker: BrokerView, ctx, request):
    if broker.feature_level(SHARE_VERSION) < 1:
        return _error(ErrorCode.UNSUPPORTED_VERSION)
    group_id = request.group_id
    if not group_id:
        return _error(ErrorCode.INVALID_GROUP_ID)
    if not broker.authorizer.authorize(ctx, AclOperation.READ, ResourceType.GROUP, group_id):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    service = service_of(broker)
    error = service.ready()
    if error is not None:
        return _error(error)
    if service._other_group(group_id):
        return _error(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
    group = service.coordinator.groups.get(group_id)
    if group is not None and group.members:
        return _error(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
    if group is None:  # Kafka creates the empty share group, with its state
        group = service.coordinator._group(group_id, create=True)
        try:
            service.append_group_records(group_id, [service.coordinator._group_metadata_record(group)])
        except AppendFailed as e:
            return _error(e.error)
    readable = broker.authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC,
                                                   {t.topic_name for t in request.topics})
    responses = []
    for t in request.topics:
        meta = broker.metadata.topic(t.topic_name)
        topic = {"topic_name": t.topic_name, "topic_id": meta.topic_id if meta else uuid.UUID(int=0), "partitions": []}
        responses.append(topic)
        for p in t.partitions:
            code, message = ErrorCode.NONE, None
            if t.topic_name not in readable:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif meta is None or not 0 <= p.partition_index < meta.partitions:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                try:
                    sp = await service.share_partition(group_id, t.topic_name, meta.topic_id, p.partition_index)
                    sp.reset_start_offset(p.start_offset)
                    service._persist(sp, sp.snapshot(), snapshot=True)
                except AppendFailed as e:
                    code = e.error
            topic["partitions"].append({"partition_index": p.partition_index, "error_code": int(code),
                                        "error_message": message})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": responses}
