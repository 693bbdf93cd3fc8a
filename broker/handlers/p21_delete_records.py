"""DeleteRecords (21): move a partition's log start offset forward (-1: to the high watermark).

As Kafka's KafkaApis collects the request into maps keyed by partition, a partition (or topic)
named twice is answered once, with the offset named last.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["DeleteRecords"]


async def handle(broker: BrokerView, ctx, request):
    offsets: dict[str, dict[int, int]] = {}
    for topic in request.topics:
        for p in topic.partitions:
            offsets.setdefault(topic.name, {})[p.partition_index] = p.offset
    topics = []
    for name, partition_offsets in offsets.items():
        partitions = []
        allowed = broker.authorizer.authorize(ctx, AclOperation.DELETE, ResourceType.TOPIC, name)
        for partition, offset in partition_offsets.items():
            if not allowed:
                partitions.append({"partition_index": partition, "low_watermark": -1,
                                   "error_code": int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)})
                continue
            error, low_watermark = broker.delete_records(name, partition, offset)
            partitions.append({"partition_index": partition, "low_watermark": low_watermark,
                               "error_code": int(error)})
        topics.append({"name": name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
