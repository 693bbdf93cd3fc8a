"""ShareAcknowledge (79): acknowledge records a ShareFetch delivered, without fetching (KIP-932).

The member's share session must exist and the request carry its next epoch (0 is refused:
INVALID_SHARE_SESSION_EPOCH; -1 closes the session after the acknowledgements and releases the
member's other acquired records). Each partition's acknowledgements are applied all or nothing
(coordinator/share_partition.py) and made durable in __share_group_state before the answer.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from coordinator.share_sessions import ShareSessionError

from ..features import SHARE_VERSION
from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from ..share_groups import service_of
from ..share_groups import served as serves_share_groups
from .p78_share_fetch import NO_LEADER, _refusal

API = APIS_BY_NAME["ShareAcknowledge"]


def _top_error(error: ErrorCode, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": message,
            "acquisition_lock_timeout_ms": 0, "responses": [], "node_endpoints": []}


def served(broker: BrokerView) -> bool:
    """Not by a ZooKeeper-mode cluster (broker/share_groups.py)."""
    return serves_share_groups(broker)


async def handle(broker: BrokerView, ctx, request):
    version = ctx.api_version
    if broker.feature_level(SHARE_VERSION) < 1:
        return _top_error(ErrorCode.UNSUPPORTED_VERSION)
    group_id, member_id = request.group_id, request.member_id
    if not broker.authorizer.authorize(ctx, AclOperation.READ, ResourceType.GROUP, group_id or ""):
        return _top_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not group_id or not member_id or not member_id.strip():
        return _top_error(ErrorCode.INVALID_REQUEST, "Invalid group id or member id in the request.")
    service = service_of(broker)
    error = service.ready()
    if error is not None:
        return _top_error(error)
    try:
        final = service.sessions.acknowledge_context(group_id, member_id, request.share_session_epoch)
    except ShareSessionError as e:
        return _top_error(e.error, e.message)
    names = {t.topic_id: meta.name for t in request.topics
             if (meta := broker.metadata.topic_by_id(t.topic_id)) is not None}
    readable = broker.authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, set(names.values()))
    is_renew = version >= 2 and request.is_renew_ack
    responses = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            topic, refused = _refusal(broker, readable, t.topic_id, p.partition_index)
            if refused is not None:
                code, message = refused, None
            else:
                code, message = await service.acknowledge(group_id, member_id, topic, t.topic_id, p.partition_index,
                                                          p.acknowledgement_batches, is_renew)
            parts.append({"partition_index": p.partition_index, "error_code": int(code), "error_message": message,
                          "current_leader": dict(NO_LEADER)})
        responses.append({"topic_id": t.topic_id, "partitions": parts})
    if final:
        service.release_member(group_id, member_id)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "acquisition_lock_timeout_ms": service.lock_duration_ms(group_id), "responses": responses,
            "node_endpoints": []}
