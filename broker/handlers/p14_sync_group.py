"""SyncGroup (14): the leader hands in the assignment; every member waits for and gets its own."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["SyncGroup"]


async def handle(broker: BrokerView, ctx, request):
    if ctx.api_version >= 5 and (request.protocol_type is None or request.protocol_name is None):
        # Mandatory from v5 on: Kafka answers INCONSISTENT_GROUP_PROTOCOL before any other check.
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
                "protocol_type": None, "protocol_name": None, "assignment": b""}
    groups = getattr(broker, "groups", None)
    denied = not broker.authorizer.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id)
    if groups is None or denied:
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED if denied else ErrorCode.COORDINATOR_NOT_AVAILABLE
        return {"throttle_time_ms": 0, "error_code": int(error),
                "protocol_type": None, "protocol_name": None, "assignment": b""}
    return await groups.sync_group(
        group_id=request.group_id,
        generation_id=request.generation_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id,
        protocol_type=request.protocol_type,
        protocol_name=request.protocol_name,
        assignments=[(a.member_id, a.assignment) for a in request.assignments],
    )
