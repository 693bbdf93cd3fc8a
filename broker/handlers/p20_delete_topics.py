"""DeleteTopics (20): by name, or by topic id from v6.

As Kafka's ControllerApis.deleteTopics: with delete.topic.enable=false every topic is refused
(TOPIC_DELETION_DISABLED, INVALID_REQUEST before v3); a name or id given twice, or neither or
both given, is INVALID_REQUEST; an unknown name is UNKNOWN_TOPIC_OR_PARTITION, an unknown id
UNKNOWN_TOPIC_ID.

A deleted topic's committed offsets go with it, in every group this broker coordinates (Kafka's
BrokerMetadataPublisher calls GroupCoordinator.onPartitionsDeleted for deleted topics).
"""

from __future__ import annotations

from collections import Counter

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.primitives import ZERO_UUID

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["DeleteTopics"]


def _result(name, topic_id, error: ErrorCode = ErrorCode.NONE, message: str | None = None) -> dict:
    return {"name": name, "topic_id": topic_id, "error_code": int(error), "error_message": message}


def _delete(broker: BrokerView, meta) -> None:
    broker.delete_topic(meta.name)
    broker.groups.on_partitions_deleted([(meta.name, partition) for partition in range(meta.partitions)])


async def handle(broker: BrokerView, ctx, request):
    version = ctx.api_version
    if version >= 6:
        wanted = [(t.name, t.topic_id or ZERO_UUID) for t in request.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in request.topic_names]
    if not broker.config["delete.topic.enable"]:
        error = ErrorCode.TOPIC_DELETION_DISABLED if version >= 3 else ErrorCode.INVALID_REQUEST
        message = None if version >= 3 else "Topic deletion is disabled."
        return {"throttle_time_ms": 0, "responses": [_result(name, topic_id, error, message)
                                                     for name, topic_id in wanted]}
    names = Counter(name for name, topic_id in wanted if name is not None and topic_id == ZERO_UUID)
    everything = broker.authorizer.authorize(ctx, AclOperation.DELETE, ResourceType.CLUSTER, CLUSTER_NAME)

    def may_delete(name: str) -> bool:
        return everything or broker.authorizer.authorize(ctx, AclOperation.DELETE, ResourceType.TOPIC, name)

    ids = Counter(topic_id for name, topic_id in wanted if name is None and topic_id != ZERO_UUID)
    responses = []
    for name, topic_id in wanted:
        if name is None and topic_id == ZERO_UUID:
            responses.append(_result(None, ZERO_UUID, ErrorCode.INVALID_REQUEST,
                                     "Neither topic name nor id were specified."))
        elif name is not None and topic_id != ZERO_UUID:
            responses.append(_result(name, topic_id, ErrorCode.INVALID_REQUEST,
                                     "You may not specify both topic name and topic id."))
    for name, count in names.items():
        if count > 1:
            responses.append(_result(name, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
        elif not may_delete(name):
            responses.append(_result(name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                     ErrorCode.TOPIC_AUTHORIZATION_FAILED.message))
        else:
            meta = broker.metadata.topic(name)
            if meta is None:
                responses.append(_result(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                         "This server does not host this topic-partition."))
            else:
                _delete(broker, meta)
                responses.append(_result(meta.name, meta.topic_id))
    for topic_id, count in ids.items():
        if count > 1:
            responses.append(_result(None, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id."))
            continue
        meta = broker.metadata.topic_by_id(topic_id)
        if meta is not None and not may_delete(meta.name):
            responses.append(_result(None, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                     ErrorCode.TOPIC_AUTHORIZATION_FAILED.message))
        elif meta is None:
            responses.append(_result(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID,
                                     "This server does not host this topic ID."))
        else:
            _delete(broker, meta)
            responses.append(_result(meta.name, meta.topic_id))
    if request.timeout_ms <= 0:
        # "Deleted, not waited for": docs/security.md, Timeouts of 0 (ZkAdminManager.deleteTopics).
        for response in responses:
            if response["error_code"] == ErrorCode.NONE:
                response["error_code"] = int(ErrorCode.REQUEST_TIMED_OUT)
    return {"throttle_time_ms": 0, "responses": responses}
