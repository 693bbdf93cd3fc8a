"""ShareAcknowledge (79): acknowledge records a ShareFetch delivered, without fetching (KIP-932).

The member's share session must exist and the request carry its next epoch (0 is refused:
INVALID_SHARE_SESSION_EPOCH; -1 closes the session after the acknowledgements and releases the
member's other acquired records). Each partition's acknowledgements are applied all or nothing
(coordinator/share_partition.py) and made durable in __share_group_state before the answer.
"""

from __future__ import annotations

from kafka_wire.messages import APIS_BY_NAME

from coordinator.share_sessions import ShareSessionError

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from ..share_groups import ShareRequestRefused, open_share_request
from ..leader_hints import LeaderHints
from .p78_share_fetch import LEADER_HINTED_ERRORS, NO_LEADER, _refusal, _top_error, invalid_member

API = APIS_BY_NAME["ShareAcknowledge"]

async def handle(broker: BrokerView, ctx, request):
    version = ctx.api_version
    group_id, member_id = request.group_id, request.member_id
    try:
        service = open_share_request(broker, ctx, group_id, AclOperation.READ, invalid_member(group_id, member_id),
                                     at_coordinator=False)
    except ShareRequestRefused as e:
        return _top_error(e.error, e.message)
    try:
        final = service.sessions.acknowledge_context(group_id, member_id, request.share_session_epoch)
    except ShareSessionError as e:
        return _top_error(e.error, e.message)
    names = {t.topic_id: meta.name for t in request.topics
             if (meta := broker.metadata.topic_by_id(t.topic_id)) is not None}
    readable = broker.authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, set(names.values()))
    is_renew = version >= 2 and request.is_renew_ack
    hints = LeaderHints(broker, ctx.listener)
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
            entry = {"partition_index": p.partition_index, "error_code": int(code), "error_message": message,
                     "current_leader": dict(NO_LEADER)}
            if topic is not None:
                hints.annotate(topic, p.partition_index, entry, LEADER_HINTED_ERRORS)
            parts.append(entry)
        responses.append({"topic_id": t.topic_id, "partitions": parts})
    if final:
        await service.release_member(group_id, member_id)
        service.forget_idle_group(group_id)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "acquisition_lock_timeout_ms": service.lock_duration_ms(group_id), "responses": responses,
            "node_endpoints": hints.node_endpoints()}
