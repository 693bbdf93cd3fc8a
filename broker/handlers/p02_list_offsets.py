"""ListOffsets (2): earliest (-2), latest (-1), max timestamp (-3), or the first offset at a time."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

API = APIS_BY_NAME["ListOffsets"]


async def handle(broker, ctx, request):
    read_committed = ctx.api_version >= 2 and request.isolation_level == 1
    topics = []
    for topic in request.topics:
        seen: set[int] = set()
        partitions = []
        for p in topic.partitions:
            entry = {"partition_index": p.partition_index, "error_code": 0, "timestamp": -1,
                     "offset": -1, "leader_epoch": -1, "old_style_offsets": []}
            if p.partition_index in seen:
                entry["error_code"] = int(ErrorCode.INVALID_REQUEST)
            else:
                seen.add(p.partition_index)
                error, offset, timestamp, epoch = broker.list_offset(
                    topic.name, p.partition_index, p.timestamp, read_committed=read_committed,
                    current_leader_epoch=p.current_leader_epoch)
                entry.update(error_code=int(error), offset=offset, timestamp=timestamp, leader_epoch=epoch)
            partitions.append(entry)
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
