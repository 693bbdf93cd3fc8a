"""CreateTopics (19): validate every topic as Kafka does, then create (unless validate_only).

The order of checks is Kafka's (ControllerApis.createTopics, ReplicationControlManager.createTopics):
names named twice in the request (INVALID_REQUEST, answered once, after the others); the name
(INVALID_TOPIC_EXCEPTION, also for a '.'/'_' collision with an existing topic); an existing topic
(TOPIC_ALREADY_EXISTS); the configs (INVALID_CONFIG); then manual assignments, or the replication
factor before the partition count. A manual assignment places the replicas where it says (the
first replica leads); every broker it names must be registered. A validate-only success is
answered like a real one (with a topic id Kafka makes up too) but nothing is created. A topic whose
logs cannot be created (a failed disk, no room, no file descriptor left) is answered
KAFKA_STORAGE_ERROR with the reason and not kept.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME
from log.errors import KafkaStorageError

from ..config import ConfigError, parse_topic_configs
from ..handler_view import BrokerView
from ..metadata import random_topic_id, validate_topic_name
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["CreateTopics"]

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
# Kafka's controller refuses an operation that would write more metadata records than this
# (QuorumController.MAX_RECORDS_PER_USER_OP): one per topic, per partition and per config.
MAX_RECORDS_PER_USER_OP = 10_000
EXCESSIVE_BATCH = "Unable to perform excessively large batch operation."
EXCESSIVE_PARTITIONS = "Excessively large number of partitions per request."


class TopicRefused(Exception):
    def __init__(self, error: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def _collision(broker: BrokerView, name: str) -> str | None:
    """Kafka refuses names that differ from an existing one only by '.' versus '_'."""
    folded = name.replace(".", "_")
    for existing in broker.metadata.topics:
        if existing != name and existing.replace(".", "_") == folded:
            return existing
    return None


def manual_assignment_error(replicas: list[int], registered, replication_factor: int | None) -> str | None:
    """Why a manual assignment of one partition is refused (INVALID_REPLICA_ASSIGNMENT), or None:
    Kafka's ReplicationControlManager.validateManualPartitionAssignment, which walks the broker
    ids in sorted order, so [9, 1, 1] is refused for naming 1 twice before 9 is looked up."""
    if not replicas:
        return "The manual partition assignment includes an empty replica list."
    previous = None
    for broker_id in sorted(replicas):
        if broker_id not in registered:
            return f"The manual partition assignment includes broker {broker_id}, but no such broker is registered."
        if broker_id == previous:
            return f"The manual partition assignment includes the broker {broker_id} more than once."
        previous = broker_id
    if replication_factor is not None and len(replicas) != replication_factor:
        return (f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this "
                f"is not consistent with previous partitions, which have {replication_factor} replica(s).")
    return None


def _placement(broker: BrokerView, topic) -> tuple[int, int, dict[int, list[int]] | None]:
    """(partitions, replication factor, manual assignment or None) from the request."""
    live_brokers = broker.live_broker_ids()
    if topic.assignments:
        if topic.replication_factor != -1:
            raise TopicRefused(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, "
                               "but replication factor was not set to -1.")
        if topic.num_partitions != -1:
            raise TopicRefused(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, "
                               "but numPartitions was not set to -1.")
        seen: set[int] = set()
        replication = None
        for a in topic.assignments:
            if a.partition_index in seen:
                raise TopicRefused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                   f"Found multiple manual partition assignments for partition {a.partition_index}")
            seen.add(a.partition_index)
            error = manual_assignment_error(a.broker_ids, live_brokers, replication)
            if error:
                raise TopicRefused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, error)
            replication = len(a.broker_ids)
        if seen != set(range(len(seen))):
            raise TopicRefused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               "partitions should be a consecutive 0-based integer sequence")
        return len(seen), replication, {a.partition_index: list(a.broker_ids) for a in topic.assignments}
    if topic.replication_factor < -1 or topic.replication_factor == 0:
        raise TopicRefused(ErrorCode.INVALID_REPLICATION_FACTOR,
                           "Replication factor must be larger than 0, or -1 to use the default value.")
    if topic.num_partitions < -1 or topic.num_partitions == 0:
        raise TopicRefused(ErrorCode.INVALID_PARTITIONS,
                           "Number of partitions was set to an invalid non-positive value.")
    partitions = int(broker.config["num.partitions"]) if topic.num_partitions == -1 else topic.num_partitions
    replication = (int(broker.config["default.replication.factor"]) if topic.replication_factor == -1
                   else topic.replication_factor)
    if replication > len(live_brokers):
        raise TopicRefused(ErrorCode.INVALID_REPLICATION_FACTOR,
                           f"Unable to replicate the partition {replication} time(s): The target replication "
                           f"factor of {replication} cannot be reached because only {len(live_brokers)} "
                           "broker(s) are registered or some brokers have all their log directories cordoned.")
    return partitions, replication, None


@dataclass
class Checked:
    """One requested topic after the checks: its error, or what to create."""
    topic: object
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    partitions: int = 0
    replication: int = 0
    configs: dict = field(default_factory=dict)
    assignment: dict[int, list[int]] | None = None


def check_topic(broker: BrokerView, topic) -> Checked:
    """What to create for one requested topic (partitions, replication factor, parsed configs,
    manual assignment); raises TopicRefused."""
    name = topic.name
    invalid = validate_topic_name(name)
    if invalid:
        raise TopicRefused(ErrorCode.INVALID_TOPIC_EXCEPTION, invalid)
    if broker.metadata.topic(name) is not None:
        raise TopicRefused(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    other = _collision(broker, name)
    if other:
        raise TopicRefused(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic: {other}")
    try:
        configs = parse_topic_configs({c.name: c.value for c in topic.configs}, broker.config.topic_defaults())
    except ConfigError as exc:
        raise TopicRefused(ErrorCode.INVALID_CONFIG, str(exc)) from None
    partitions, replication, assignment = _placement(broker, topic)
    return Checked(topic, partitions=partitions, replication=replication, configs=configs, assignment=assignment)


def config_entries(broker: BrokerView, overrides: dict) -> list[dict]:
    """The new topic's effective configs, sorted by name, as Kafka answers them (v5+)."""
    rows = sorted(broker.config.describe_topic_config(overrides), key=lambda row: row[0])
    return [{"name": name, "value": None if key.sensitive else value, "read_only": False,
             "config_source": int(source), "is_sensitive": key.sensitive}
            for name, value, source, key in rows]


def _refused(name: str, error: ErrorCode, message: str | None) -> dict:
    return {"name": name, "error_code": int(error), "error_message": message,
            "num_partitions": -1, "replication_factor": -1, "configs": []}


async def handle(broker: BrokerView, ctx, request):
    counts = Counter(t.name for t in request.topics)
    checked: list[Checked] = []  # in request order
    creatable = set(counts) if broker.authorizer.authorize(ctx, AclOperation.CREATE, ResourceType.CLUSTER,
                                                           CLUSTER_NAME) else \
        broker.authorizer.filter_authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, counts)
    for topic in request.topics:
        if counts[topic.name] > 1:
            continue
        if topic.name not in creatable and topic.name != CLUSTER_METADATA_TOPIC:
            checked.append(Checked(topic, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."))
            continue
        if topic.name == CLUSTER_METADATA_TOPIC:
            checked.append(Checked(topic, ErrorCode.INVALID_REQUEST,
                                   f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited."))
            continue
        try:
            checked.append(check_topic(broker, topic))
        except TopicRefused as refused:
            checked.append(Checked(topic, refused.error, refused.message))
    records = sum(1 + c.partitions + len(c.configs) for c in checked if c.error == ErrorCode.NONE)
    if records > MAX_RECORDS_PER_USER_OP:
        # The controller fails the whole operation; every topic it was given gets the error. Kafka
        # 4.3 names the partition count when that alone is over the limit.
        partitions = sum(c.partitions for c in checked if c.error == ErrorCode.NONE)
        message = EXCESSIVE_PARTITIONS if partitions > MAX_RECORDS_PER_USER_OP else EXCESSIVE_BATCH
        checked = [Checked(c.topic, ErrorCode.POLICY_VIOLATION, message)
                   if c.topic.name != CLUSTER_METADATA_TOPIC else Checked(c.topic, c.error, c.message)
                   for c in checked]
    # Kafka's controller shows a created topic's settings only to who may describe its configs; the
    # others get TOPIC_AUTHORIZATION_FAILED in topic_config_error_code (v5+) and -1 partitions/replicas.
    describable = broker.authorizer.filter_authorized(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC,
                                                      [c.topic.name for c in checked if c.error == ErrorCode.NONE])
    results = []
    for c in checked:
        if c.error != ErrorCode.NONE:
            results.append(_refused(c.topic.name, c.error, c.message))
            continue
        if request.validate_only:
            topic_id = random_topic_id()
        else:
            try:
                topic_id = broker.create_topic(c.topic.name, c.partitions, c.replication, c.configs,
                                               assignment=c.assignment).topic_id
            except (OSError, KafkaStorageError) as exc:
                # A log (or the metadata) that cannot be written: the topic's error, not a
                # dropped connection (log dirs whose disk failed are offline from now on).
                results.append(_refused(c.topic.name, ErrorCode.KAFKA_STORAGE_ERROR, str(exc)))
                continue
            # With several workers, each opens its partitions' logs before the answer.
            failure = await broker.logs_everywhere(c.topic.name)
            if failure is not None:
                broker.delete_topic(c.topic.name)  # as when a log here fails: the topic is not kept
                results.append(_refused(c.topic.name, ErrorCode.KAFKA_STORAGE_ERROR, failure))
                continue
            if request.timeout_ms <= 0:
                # "Created, not waited for": docs/security.md, Timeouts of 0 (ZkAdminManager.createTopics).
                results.append(_refused(c.topic.name, ErrorCode.REQUEST_TIMED_OUT, None))
                continue
        if c.topic.name not in describable:
            results.append({"name": c.topic.name, "topic_id": topic_id, "error_code": 0, "error_message": None,
                            "topic_config_error_code": int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                            "num_partitions": -1, "replication_factor": -1, "configs": []})
            continue
        results.append({"name": c.topic.name, "topic_id": topic_id, "error_code": 0, "error_message": None,
                        "num_partitions": c.partitions, "replication_factor": c.replication,
                        "configs": config_entries(broker, c.configs)})
    for name, count in counts.items():
        if count > 1:
            results.append(_refused(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
    return {"throttle_time_ms": 0, "topics": results}
