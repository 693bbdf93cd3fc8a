"""ListOffsets (2): earliest (-2), latest (-1), max timestamp (-3), or the first offset at a time.

Tiered storage's special timestamps (KIP-405, KIP-1005, KIP-1023) are answered as Kafka answers them
for a topic without remote storage: earliest local (-4) is the log start offset, latest tiered (-5)
and earliest pending upload (-6) are -1 with no error. v10's timeout for remote lookups has nothing
to wait for here.

A partition named twice in one request is INVALID_REQUEST (Kafka's
ListOffsetsRequest.duplicatePartitions), answered once: Kafka 4.3 collects the answers by partition. A consumer (replica id -1) reads up to the high
watermark, or the last stable offset under read_committed; a replica up to the log end offset.
"""

from __future__ import annotations

from collections import Counter

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..log_errors import error_code_of
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["ListOffsets"]

CONSUMER_REPLICA_ID = -1

# The first version each special (negative) timestamp may be asked at: max timestamp (KIP-734),
# earliest local (KIP-405), latest tiered (KIP-1005), earliest pending upload (KIP-1023). Kafka
# answers any other negative timestamp, or one asked at an older version, UNSUPPORTED_VERSION,
# before it looks the partition up.
SPECIAL_TIMESTAMP_SINCE = {-1: 0, -2: 0, -3: 7, -4: 8, -5: 9, -6: 11}


def unsupported_timestamp(timestamp: int, version: int) -> bool:
    return timestamp < 0 and version < SPECIAL_TIMESTAMP_SINCE.get(timestamp, 1 << 15)


async def handle(broker: BrokerView, ctx, request):
    from_consumer = request.replica_id == CONSUMER_REPLICA_ID
    read_committed = ctx.api_version >= 2 and request.isolation_level == 1
    counts = Counter((topic.name, p.partition_index) for topic in request.topics for p in topic.partitions)
    topics = []
    answered_twice: set[tuple[str, int]] = set()
    describable = broker.authorizer.filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                      (t.name for t in request.topics))
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            entry = {"partition_index": p.partition_index, "error_code": 0, "timestamp": -1,
                     "offset": -1, "leader_epoch": -1, "old_style_offsets": []}
            if topic.name not in describable:
                entry["error_code"] = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif counts[(topic.name, p.partition_index)] > 1:
                if (topic.name, p.partition_index) in answered_twice:
                    continue
                answered_twice.add((topic.name, p.partition_index))
                entry["error_code"] = int(ErrorCode.INVALID_REQUEST)
            elif unsupported_timestamp(p.timestamp, ctx.api_version):
                entry["error_code"] = int(ErrorCode.UNSUPPORTED_VERSION)
            else:
                try:
                    error, offset, timestamp, epoch = broker.list_offset(
                        topic.name, p.partition_index, p.timestamp, read_committed=read_committed,
                        current_leader_epoch=p.current_leader_epoch, from_consumer=from_consumer)
                except Exception as exc:
                    # A timestamp lookup reads batches: a corrupt one or a disk error is that
                    # partition's error (CORRUPT_MESSAGE, KAFKA_STORAGE_ERROR), not the connection's.
                    error = error_code_of(exc)
                    if error is None:
                        raise
                    offset = timestamp = epoch = -1
                entry.update(error_code=int(error), offset=offset, timestamp=timestamp, leader_epoch=epoch)
            partitions.append(entry)
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
