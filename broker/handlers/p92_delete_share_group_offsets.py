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

from ..features import SHARE_VERSION
from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from ..share_groups import group_state_keys, service_of
from ..share_groups import served as serves_share_groups

API = APIS_BY_NAME["DeleteShareGroupOffsets"]


def _error(error: ErrorCode, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": message, "responses": []}


def served(broker: BrokerView) -> bool:
    """Not by a ZooKeeper-mode cluster (broker/share_groups.py)."""
    return serves_share_groups(broker)


async def handle(broker: BrokerView, ctx, request):
    if broker.feature_level(SHARE_VERSION) < 1:
        return _error(ErrorCode.UNSUPPORTED_VERSION)
    group_id = request.group_id
    if not group_id:
        return _error(ErrorCode.INVALID_GROUP_ID)
    if not broker.authorizer.authorize(ctx, AclOperation.DELETE, ResourceType.GROUP, group_id):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    service = service_of(broker)
    error = service.ready()
    if error is not None:
        return _error(error)
    group = service.coordinator.groups.get(group_id)
    if group is None:
        return _error(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    if group.members:
        return _error(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
    readable = broker.authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC,
                                                   {t.topic_name for t in request.topics})
    persisted = group_state_keys(service, group_id)
    keys = set(persisted) | {k for k in service.partitions if k[0] == group_id}
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
                    service.delete_state(key)
            except AppendFailed as e:
                code = e.error
        responses.append({"topic_name": t.topic_name, "topic_id": meta.topic_id if meta else uuid.UUID(int=0),
                          "error_code": int(code), "error_message": None})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": responses}
