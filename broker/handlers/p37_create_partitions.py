"""CreatePartitions (37): grow a topic's partition count."""

from __future__ import annotations

from collections import Counter

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

API = APIS_BY_NAME["CreatePartitions"]


def _check(broker, topic) -> tuple[ErrorCode, str | None]:
    meta = broker.metadata.topic(topic.name)
    if meta is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic.name}' does not exist."
    if topic.count < meta.partitions:
        return (ErrorCode.INVALID_PARTITIONS,
                f"Topic currently has {meta.partitions} partitions, which is higher than the requested "
                f"{topic.count}.")
    if topic.count == meta.partitions:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {meta.partitions} partitions."
    if topic.assignments is not None:
        if len(topic.assignments) != topic.count - meta.partitions:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Increasing the number of partitions by {topic.count - meta.partitions} but "
                    f"{len(topic.assignments)} assignments provided.")
        for a in topic.assignments:
            if any(b != broker.node_id for b in a.broker_ids) or not a.broker_ids:
                return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Unknown broker ids in {a.broker_ids}"
    return ErrorCode.NONE, None


async def handle(broker, ctx, request):
    counts = Counter(t.name for t in request.topics)
    results = []
    for topic in request.topics:
        if counts[topic.name] > 1:
            error, message = ErrorCode.INVALID_REQUEST, "Duplicate topic in request."
        else:
            error, message = _check(broker, topic)
        if error == ErrorCode.NONE and not request.validate_only:
            broker.add_partitions(topic.name, topic.count)
        results.append({"name": topic.name, "error_code": int(error), "error_message": message})
    return {"throttle_time_ms": 0, "results": results}
