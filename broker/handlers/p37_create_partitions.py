"""CreatePartitions (37): grow a topic's partition count.

Manual assignments (one replica list per new partition) are checked as Kafka's
ReplicationControlManager.createPartitions checks them, each with the replication factor of the
topic's first partition, and the new partitions are placed where they say (the first replica
leads); without them the broker places the new partitions as it places a new topic's.
"""

from __future__ import annotations

from collections import Counter

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME
from log.errors import KafkaStorageError

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from .p19_create_topics import manual_assignment_error

API = APIS_BY_NAME["CreatePartitions"]

# Kafka's controller refuses an operation that would write more metadata records than this
# (QuorumController.MAX_RECORDS_PER_USER_OP); creating partitions writes one per new partition.
MAX_RECORDS_PER_USER_OP = 10_000
EXCESSIVE_BATCH = "Unable to perform excessively large batch operation."


def _check(broker: BrokerView, topic) -> tuple[ErrorCode, str | None]:
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
        # Kafka's new partitions keep the replication factor of the topic's first partition.
        replication = len(broker.metadata.partition_state(topic.name, 0).replicas)
        registered = broker.live_broker_ids()
        for a in topic.assignments:
            error = manual_assignment_error(a.broker_ids, registered, replication)
            if error:
                return ErrorCode.INVALID_REPLICA_ASSIGNMENT, error
    return ErrorCode.NONE, None


async def handle(broker: BrokerView, ctx, request):
    counts = Counter(t.name for t in request.topics)
    checked = []
    for topic in request.topics:
        if counts[topic.name] > 1:
            # Kafka collects the request by name: a duplicated topic is answered once.
            if not any(t.name == topic.name for t, _, _ in checked):
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
            assignment = None if topic.assignments is None else [list(a.broker_ids) for a in topic.assignments]
            before = broker.metadata.topic(topic.name).partitions
            try:
                broker.add_partitions(topic.name, topic.count, assignment=assignment)
                # With several workers, each opens its new partitions' logs before the answer; the
                # topic keeps its partitions when one could not.
                failure = await broker.logs_everywhere(topic.name)
                if failure is not None:
                    broker.undo_added_partitions(topic.name, before)
                    raise KafkaStorageError(failure)
            except (OSError, KafkaStorageError) as exc:  # a log that cannot be created
                error, message = ErrorCode.KAFKA_STORAGE_ERROR, str(exc)
            else:
                if request.timeout_ms <= 0:
                    # "Added, not waited for": docs/security.md, Timeouts of 0 (ZkAdminManager.createPartitions).
                    error = ErrorCode.REQUEST_TIMED_OUT
        results.append({"name": topic.name, "error_code": int(error), "error_message": message})
    return {"throttle_time_ms": 0, "results": results}
