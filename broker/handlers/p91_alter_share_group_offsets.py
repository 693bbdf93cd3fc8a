"""AlterShareGroupOffsets (91): set share-partitions' start offsets (kafka-share-groups.sh
--reset-offsets, KIP-932). Only while the group has no members (NON_EMPTY_GROUP otherwise; a group
that does not exist yet is created empty, as Kafka does): what was in flight is dropped, the state
epoch moves on, and the new state is durable in __share_group_state before the answer.
"""

from __future__ import annotations

import uuid

from coordinator.offsets_store import AppendFailed
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from ..share_groups import ShareRequestRefused, open_share_request

API = APIS_BY_NAME["AlterShareGroupOffsets"]

def _error(error: ErrorCode, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": message, "responses": []}


def missing_group_id(group_id: str) -> tuple | None:
    """The share group offset APIs' refusal of a request without a group id."""
    return None if group_id else (ErrorCode.INVALID_GROUP_ID, None)


async def handle(broker: BrokerView, ctx, request):
    group_id = request.group_id
    try:
        service = open_share_request(broker, ctx, group_id, AclOperation.READ, missing_group_id(group_id))
    except ShareRequestRefused as e:
        return _error(e.error, e.message)
    if service.is_other_group_type(group_id):
        return _error(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
    group = service.coordinator.groups.get(group_id)
    if group is not None and group.members:
        return _error(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
    if group is None:  # Kafka creates the empty share group, with its state
        group = service.coordinator._group(group_id, create=True)
        try:
            service.append_group_records(group_id, [service.coordinator._group_metadata_record(group)])
        except AppendFailed as e:
            return _error(e.error)
    readable = broker.authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC,
                                                   {t.topic_name for t in request.topics})
    responses = []
    for t in request.topics:
        meta = broker.metadata.topic(t.topic_name)
        topic = {"topic_name": t.topic_name, "topic_id": meta.topic_id if meta else uuid.UUID(int=0), "partitions": []}
        responses.append(topic)
        for p in t.partitions:
            code, message = ErrorCode.NONE, None
            if t.topic_name not in readable:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif meta is None or not 0 <= p.partition_index < meta.partitions:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                try:
                    await service.reset_start_offset(group_id, t.topic_name, meta.topic_id, p.partition_index,
                                                     p.start_offset)
                except AppendFailed as e:
                    code = e.error
            topic["partitions"].append({"partition_index": p.partition_index, "error_code": int(code),
                                        "error_message": message})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": responses}
