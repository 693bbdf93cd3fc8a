"""LeaveGroup (13): members leave a group, which then rebalances.

v0-2 name one member; v3+ a batch, by member id or (the admin client) by group instance id with
an empty member id, each answered on its own. Before v3 the top-level error is the first
member's error, as Kafka's LeaveGroupResponse reports it.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["LeaveGroup"]


async def handle(broker: BrokerView, ctx, request):
    version = ctx.api_version
    if version >= 3:
        members = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        members = [(request.member_id, None)]
    groups = getattr(broker, "groups", None)
    if not broker.authorizer.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        error, results = ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    elif groups is None:
        error, results = ErrorCode.COORDINATOR_NOT_AVAILABLE, []
    else:
        error, results = groups.leave_group(group_id=request.group_id, members=members)
    if version < 3:
        if error == ErrorCode.NONE:
            error = next((e for _, _, e in results if e != ErrorCode.NONE), ErrorCode.NONE)
        return {"throttle_time_ms": 0, "error_code": int(error)}
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "members": [{"member_id": m, "group_instance_id": i, "error_code": int(e)} for m, i, e in results],
    }
