"""CreatePartitions (37): grow a topic's partition count."""

from __future__ import annotations

from collections import Counter

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["CreatePartitions"]

# Kafka's controller refuses an operation that would write more metadata records than this
# (QuorumController.MAX_RECORDS_PER_USER_OP); creating partitions writes one per new partition.
MAX_RECORDS_PER_USER_OP = 10_000
EXCESSIVE_BATCH = "Unable to perform excessively large batch operation."


def _check(broker, topic) -> tuple[ErrorCode, str | None]:
    """Kafka's ReplicationControlManager.createPartitions checks, with its messages."""
    meta = broker.metadata.topic(topic.name)
    if meta is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    if topic.count < meta.partitions:
        return (ErrorCode.INVALID_PARTITIONS,
                f"The topic {topic.name} currently has {meta.partitions} partition(s); {topic.count} would "
                "not be an increase.")
    if topic.count == meta.partitions:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {meta.partitions} partition(s)."
    added = topic.count - meta.partitions
    if topic.assignments is not None:
        if len(topic.assignments) != added:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Attempted to add {added} additional partition(s), but only {len(topic.assignments)} "
                    "assignment(s) were specified.")
        for a in topic.assignments:
            if not a.broker_ids:
                return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
            unknown = [b for b in a.broker_ids if b not in broker.live_broker_ids()]
            if unknown:
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes broker "
                        f"{unknown[0]}, but no such broker is registered.")
            if len(set(a.broker_ids)) != len(a.broker_ids):
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes the "
                        f"broker {a.broker_ids[0]} more than once.")
    return ErrorCode.NONE, None


async def handle(broker, ctx, request):
    counts = Counter(t.name for t in request.topics)
    checked = []
    for topic in request.topics:
        if counts[topic.name] > 1:
            checked.append((topic, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
        elif not broker.authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.TOPIC, topic.name):
            checked.append((topic, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None))
        else:
            checked.append((topic, *_check(broker, topic)))
    new_partitions = sum(topic.count - broker.metadata.topic(topic.name).partitions
                         for topic, error, _ in checked if error == ErrorCode.NONE)
    if new_partitions > MAX_RECORDS_PER_USER_OP:
        # One metadata record per new partition: Kafka's controller fails the whole operation.
        checked = [(topic, ErrorCode.POLICY_VIOLATION, EXCESSIVE_BATCH) if counts[topic.name] == 1 else
                   (topic, error, message) for topic, error, message in checked]
    results = []
    for topic, error, message in checked:
        if error == ErrorCode.NONE and not request.validate_only:
            broker.add_partitions(topic.name, topic.count)
        results.append({"name": topic.name, "error_code": int(error), "error_message": message})
    return {"throttle_time_ms": 0, "results": results}
