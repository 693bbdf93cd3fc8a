"""OffsetForLeaderEpoch (23): the end offset of a leader epoch, for truncation after a leader change."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["OffsetForLeaderEpoch"]


async def handle(broker: BrokerView, ctx, request):
    topics = []
    if getattr(request, "replica_id", -1) >= 0:
        allowed = broker.authorizer.authorize(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
        describable = {t.topic for t in request.topics} if allowed else set()
    else:
        describable = broker.authorizer.filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                          (t.topic for t in request.topics))
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            if topic.topic not in describable:
                partitions.append({"error_code": int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), "partition": p.partition,
                                   "leader_epoch": -1, "end_offset": -1})
                continue
            error, epoch, end_offset = broker.end_offset_for_epoch(
                topic.topic, p.partition, p.leader_epoch, current_leader_epoch=p.current_leader_epoch)
            partitions.append({"error_code": int(error), "partition": p.partition,
                               "leader_epoch": epoch, "end_offset": end_offset})
        topics.append({"topic": topic.topic, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
