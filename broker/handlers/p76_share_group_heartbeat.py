"""ShareGroupHeartbeat (76): members of KIP-932 share groups join, heartbeat and leave.

The group coordinator (broker/share_groups.py, coordinator/share_group.py) answers with the member's
epoch and, when it changed, its assignment; the group's records go to __consumer_offsets before
the answer. Share-partitions the heartbeat subscribed the group to are initialized at their share
coordinator after it (a later heartbeat assigns them, as Kafka does). A member leaving (epoch -1) or fenced loses its share session and its acquired records
are released. With the finalized share.version below 1 the protocol is off: UNSUPPORTED_VERSION,
as Kafka answers.
"""

from __future__ import annotations

from coordinator.offsets_store import AppendFailed
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..features import SHARE_VERSION
from ..handler_view import BrokerView
from ..share_groups import now_ms, service_of
from .group_heartbeat import durable, refused
from .p11_join_group import client_host

API = APIS_BY_NAME["ShareGroupHeartbeat"]
LEAVE_GROUP_MEMBER_EPOCH = -1


def _error(error: ErrorCode, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": message, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}


async def handle(broker: BrokerView, ctx, request):
    error = refused(broker, ctx, feature=SHARE_VERSION, group_id=request.group_id,
                    topics=request.subscribed_topic_names)
    if error is not None:
        return _error(error)
    service = service_of(broker)
    error = service.ready() or service.group_error(request.group_id)
    if error is not None:
        return _error(error)
    service.use_group_settings(request.group_id)
    result = service.coordinator.heartbeat(request, now_ms(), client_id=ctx.client_id or "",
                                           client_host=client_host(ctx))
    try:
        service.append_group_records(request.group_id, result.records)
    except AppendFailed as e:
        if e.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        # A cluster's coordinator that lost its __consumer_offsets partition meanwhile.
        return _error(ErrorCode.NOT_COORDINATOR if e.error == ErrorCode.NOT_LEADER_OR_FOLLOWER else e.error)
    if result.initialize:
        service.initialize_state_later(request.group_id, result.initialize, result.state_epoch)
    response = dict(result.response)
    # Answered once the group's records are durable, as Kafka's coordinator answers once its write
    # is committed: else a power loss of every broker forgets a group whose members were answered
    # (power-loss-all x share: every share consumer then failed fatally with GROUP_ID_NOT_FOUND).
    if response["error_code"] == 0 and result.records and not await durable(broker, broker.groups,
                                                                           request.group_id):
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    response["throttle_time_ms"] = 0
    if response["error_code"] == 0 and request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
        await service.member_gone(request.group_id, request.member_id)
    return response
