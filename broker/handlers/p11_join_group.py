"""JoinGroup (11): join a classic group; the answer waits until the rebalance's join phase ends.

From v4 a member without an id is first answered MEMBER_ID_REQUIRED with its new id (KIP-394);
v9 members may be told to skip the assignment (KIP-814). Responses before v7 carry no null
protocol name: Kafka sends "" there.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["JoinGroup"]


def client_host(ctx) -> str:
    # Kafka reports InetAddress.toString(): "/127.0.0.1".
    return "/" + str(ctx.peer[0]) if ctx.peer else ""


async def handle(broker: BrokerView, ctx, request):
    version = ctx.api_version
    groups = getattr(broker, "groups", None)
    if not broker.authorizer.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        groups, denied = None, ErrorCode.GROUP_AUTHORIZATION_FAILED
    else:
        denied = ErrorCode.COORDINATOR_NOT_AVAILABLE
    if groups is None:
        response = {"throttle_time_ms": 0, "error_code": int(denied),
                    "generation_id": -1, "protocol_type": None, "protocol_name": None, "leader": "",
                    "member_id": request.member_id, "members": []}
    else:
        response = await groups.join_group(
            group_id=request.group_id,
            member_id=request.member_id,
            group_instance_id=request.group_instance_id,
            protocol_type=request.protocol_type,
            protocols=[(p.name, p.metadata) for p in request.protocols],
            session_timeout_ms=request.session_timeout_ms,
            rebalance_timeout_ms=request.rebalance_timeout_ms if version >= 1 else -1,
            client_id=ctx.client_id or "",
            client_host=client_host(ctx),
            require_known_member_id=version >= 4,
            supports_skip_assignment=version >= 9,
            reason=request.reason,
        )
    if version < 7 and response["protocol_name"] is None:
        response["protocol_name"] = ""
    return response
