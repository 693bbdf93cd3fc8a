"""Heartbeat (12): a member keeps its session and learns whether the group is rebalancing."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["Heartbeat"]


async def handle(broker: BrokerView, ctx, request):
    groups = getattr(broker, "groups", None)
    if not broker.authorizer.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif groups is None:
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE
    else:
        error = groups.heartbeat(group_id=request.group_id, generation_id=request.generation_id,
                                 member_id=request.member_id, group_instance_id=request.group_instance_id)
    return {"throttle_time_ms": 0, "error_code": int(error)}
