"""DeleteRecords (21): move a partition's log start offset forward (-1: to the high watermark)."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["DeleteRecords"]


async def handle(broker, ctx, request):
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            if not broker.authorizer.authorize(ctx, AclOperation.DELETE, ResourceType.TOPIC, topic.name):
                partitions.append({"partition_index": p.partition_index, "low_watermark": -1,
                                   "error_code": int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)})
                continue
            error, low_watermark = broker.delete_records(topic.name, p.partition_index, p.offset)
            partitions.append({"partition_index": p.partition_index, "low_watermark": low_watermark,
                               "error_code": int(error)})
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
