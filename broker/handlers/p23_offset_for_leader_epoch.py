"""OffsetForLeaderEpoch (23): the end offset of a leader epoch, for truncation after a leader change."""

from __future__ import annotations

from kafka_wire.messages import APIS_BY_NAME

API = APIS_BY_NAME["OffsetForLeaderEpoch"]


async def handle(broker, ctx, request):
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            error, epoch, end_offset = broker.end_offset_for_epoch(
                topic.topic, p.partition, p.leader_epoch, current_leader_epoch=p.current_leader_epoch)
            partitions.append({"error_code": int(error), "partition": p.partition,
                               "leader_epoch": epoch, "end_offset": end_offset})
        topics.append({"topic": topic.topic, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
