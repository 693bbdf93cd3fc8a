"""ShareGroupDescribe (77): epochs, members and assignments of KIP-932 share groups.

An unknown group, or a group of another type, answers GROUP_ID_NOT_FOUND as Kafka 4.3 does; with the
finalized share.version below 1 every group answers UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..features import SHARE_VERSION
from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from ..share_groups import service_of
from ..share_groups import served as serves_share_groups

API = APIS_BY_NAME["ShareGroupDescribe"]

AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def served(broker: BrokerView) -> bool:
    """Not by a ZooKeeper-mode cluster (broker/share_groups.py)."""
    return serves_share_groups(broker)


async def handle(broker: BrokerView, ctx, request):
    if broker.feature_level(SHARE_VERSION) < 1:
        return {"throttle_time_ms": 0, "groups": [
            {"error_code": int(ErrorCode.UNSUPPORTED_VERSION), "group_id": group_id,
             "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED} for group_id in request.group_ids]}
    service = service_of(broker)
    error = service.ready()

    def topic_name(topic_id):
        meta = broker.metadata.topic_by_id(topic_id)
        return None if meta is None else meta.name

    described = []
    for group_id in request.group_ids:
        if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            entry = {"error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED), "group_id": group_id}
        elif error is not None:
            entry = {"error_code": int(error), "group_id": group_id}
        else:
            entry = service.coordinator.describe(group_id, topic_name)
        if request.include_authorized_operations and entry.get("error_code", 0) == 0:
            entry["authorized_operations"] = broker.authorizer.authorized_operations(ctx, ResourceType.GROUP, group_id)
        else:
            entry["authorized_operations"] = AUTHORIZED_OPERATIONS_OMITTED
        described.append(entry)
    return {"throttle_time_ms": 0, "groups": described}
