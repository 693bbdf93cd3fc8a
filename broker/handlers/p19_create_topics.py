"""CreateTopics (19): validate every topic as Kafka does, then create (unless validate_only)."""

from __future__ import annotations

from collections import Counter

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..config import ConfigError, parse_topic_configs
from ..metadata_store import validate_topic_name

API = APIS_BY_NAME["CreateTopics"]


def _collision(broker, name: str) -> str | None:
    """Kafka refuses names that differ from an existing one only by '.' versus '_'."""
    folded = name.replace(".", "_")
    for existing in broker.metadata.topics:
        if existing != name and existing.replace(".", "_") == folded:
            return existing
    return None


def check_topic(broker, topic) -> tuple[ErrorCode, str | None, int, int, dict]:
    """(error, message, partitions, replication factor, parsed configs) for one requested topic."""
    name = topic.name
    invalid = validate_topic_name(name)
    if invalid:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, invalid, -1, -1, {}
    if broker.metadata.topic(name) is not None:
        return ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.", -1, -1, {}
    other = _collision(broker, name)
    if other:
        return (ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Topic '{name}' collides with existing topic: {other}", -1, -1, {})
    live_brokers = [broker.node_id]
    if topic.assignments:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            return (ErrorCode.INVALID_REQUEST,
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time.", -1, -1, {})
        partitions = len(topic.assignments)
        sizes = {len(a.broker_ids) for a in topic.assignments}
        for a in topic.assignments:
            if not a.broker_ids or len(set(a.broker_ids)) != len(a.broker_ids):
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"Invalid replica assignment for partition {a.partition_index}", -1, -1, {})
            unknown = [b for b in a.broker_ids if b not in live_brokers]
            if unknown:
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"Unknown broker ids {unknown} in the replica assignment", -1, -1, {})
        if sorted(a.partition_index for a in topic.assignments) != list(range(partitions)):
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    "Partitions should be a consecutive 0-based integer sequence", -1, -1, {})
        replication = sizes.pop() if len(sizes) == 1 else -1
        if replication == -1:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    "All partitions should have the same number of replicas", -1, -1, {})
    else:
        partitions = topic.num_partitions
        replication = topic.replication_factor
        if partitions == -1:
            partitions = int(broker.config["num.partitions"])
        if replication == -1:
            replication = int(broker.config["default.replication.factor"])
        if partitions <= 0:
            return ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.", -1, -1, {}
        if replication <= 0:
            return (ErrorCode.INVALID_REPLICATION_FACTOR,
                    "Replication factor must be larger than 0.", -1, -1, {})
        if replication > len(live_brokers):
            return (ErrorCode.INVALID_REPLICATION_FACTOR,
                    f"Unable to replicate the partition {replication} time(s): The target replication "
                    f"factor of {replication} cannot be reached because only {len(live_brokers)} "
                    "broker(s) are registered.", -1, -1, {})
    try:
        configs = parse_topic_configs({c.name: c.value for c in topic.configs})
    except ConfigError as exc:
        return ErrorCode.INVALID_CONFIG, str(exc), -1, -1, {}
    return ErrorCode.NONE, None, partitions, replication, configs


def config_entries(broker, overrides: dict) -> list[dict]:
    return [
        {"name": name, "value": value, "read_only": False, "config_source": int(source),
         "is_sensitive": key.sensitive}
        for name, value, source, key in broker.config.describe_topic_config(overrides)
    ]


async def handle(broker, ctx, request):
    counts = Counter(t.name for t in request.topics)
    results = []
    for topic in request.topics:
        result = {"name": topic.name, "num_partitions": -1, "replication_factor": -1, "configs": None}
        if counts[topic.name] > 1:
            result.update(error_code=int(ErrorCode.INVALID_REQUEST),
                          error_message="Create topics request from client contains multiple entries "
                                        f"for the following topics: {topic.name}")
            results.append(result)
            continue
        error, message, partitions, replication, configs = check_topic(broker, topic)
        if error != ErrorCode.NONE:
            result.update(error_code=int(error), error_message=message)
            results.append(result)
            continue
        if request.validate_only:
            topic_id = None
        else:
            meta = broker.create_topic(topic.name, partitions, replication, configs)
            topic_id = meta.topic_id
        result.update(error_code=0, error_message=None, num_partitions=partitions,
                      replication_factor=replication, configs=config_entries(broker, configs))
        if topic_id is not None:
            result["topic_id"] = topic_id
        results.append(result)
    return {"throttle_time_ms": 0, "topics": results}
