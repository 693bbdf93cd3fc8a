"""DeleteShareGroupOffsets (92): drop a share group's state for whole topics (kafka-share-groups.sh
--delete-offsets, KIP-932). Only while the group has no members (NON_EMPTY_GROUP otherwise); the
share-partitions' state is tombstoned in __share_group_state, so a later consumer starts them again
by share.auto.offset.reset.
"""

from __future__ import annotations

import uuid

from coordinator.offsets_store import AppendFailed
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from ..share_groups import ShareRequestRefused, open_share_request, share_group_summaries
from .p91_alter_share_group_offsets import _error, missing_group_id

API = APIS_BY_NAME["DeleteShareGroupOffsets"]

async def handle(broker: BrokerView, ctx, request):
    group_id = request.group_id
    try:
        service = open_share_request(broker, ctx, group_id, AclOperation.DELETE, missing_group_id(group_id))
    except ShareRequestRefused as e:
        return _error(e.error, e.message)
    group = service.coordinator.groups.get(group_id)
    if group is None:
        return _error(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    if group.members:
        return _error(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
    readable = broker.authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC,
                                                   {t.topic_name for t in request.topics})
    summaries = await share_group_summaries(service, group_id, [t.topic_name for t in request.topics])
    keys = {k for k, summary in summaries.items() if not isinstance(summary, ErrorCode)}
    responses = []
    for t in request.topics:
        meta = broker.metadata.topic(t.topic_name)
        code = ErrorCode.NONE
        if t.topic_name not in readable:
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif meta is None:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            try:
                for key in sorted(k for k in keys if k[1] == meta.topic_id):
                    await service.delete_state(key)
            except AppendFailed as e:
                code = e.error
        responses.append({"topic_name": t.topic_name, "topic_id": meta.topic_id if meta else uuid.UUID(int=0),
                          "error_code": int(code), "error_message": None})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": responses}
