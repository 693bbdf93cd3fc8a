"""ListGroups (16): the groups this broker coordinates; v4 filters by state, v5 by type ("classic",
"consumer"; both ignore case) and tells each group's type."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ..share_groups import list_share_groups

API = APIS_BY_NAME["ListGroups"]


async def handle(broker: BrokerView, ctx, request):
    groups = getattr(broker, "groups", None)
    if groups is None:
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE), "groups": []}
    states = request.states_filter if ctx.api_version >= 4 else None
    types = request.types_filter if ctx.api_version >= 5 else None
    error, listed = groups.list_groups(states, types)
    if error == ErrorCode.NONE:
        listed = listed + list_share_groups(broker, states, types)  # KIP-932 (broker/share_groups.py)
    if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        visible = broker.authorizer.filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP,
                                                      (g["group_id"] for g in listed))
        listed = [g for g in listed if g["group_id"] in visible]
    return {"throttle_time_ms": 0, "error_code": int(error), "groups": listed}
