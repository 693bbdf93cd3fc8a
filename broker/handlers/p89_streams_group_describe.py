"""StreamsGroupDescribe (89): topology, epochs, members and task assignments of KIP-1071 streams
groups. A group of another type (or an unknown group id) answers GROUP_ID_NOT_FOUND, as Kafka does;
with the finalized streams.version below 1 every group answers UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..features import STREAMS_VERSION
from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["StreamsGroupDescribe"]

AUTHORIZED_OPERATIONS_OMITTED = -2147483648


async def handle(broker: BrokerView, ctx, request):
    groups = getattr(broker, "groups", None)
    if broker.feature_level(STREAMS_VERSION) < 1:
        return {"throttle_time_ms": 0, "groups": [
            {"error_code": int(ErrorCode.UNSUPPORTED_VERSION), "group_id": group_id,
             "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED} for group_id in request.group_ids]}
    described = []
    for group_id in request.group_ids:
        if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            entry = {"error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED), "group_id": group_id}
        elif groups is None:
            entry = {"error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE), "group_id": group_id}
        else:
            entry = groups.streams_group_describe(group_id)
        if request.include_authorized_operations and entry.get("error_code", 0) == 0:
            entry["authorized_operations"] = broker.authorizer.authorized_operations(ctx, ResourceType.GROUP, group_id)
        else:
            entry["authorized_operations"] = AUTHORIZED_OPERATIONS_OMITTED
        described.append(entry)
    return {"throttle_time_ms": 0, "groups": described}
