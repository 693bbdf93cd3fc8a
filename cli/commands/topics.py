"""`kafka-wire topics create|list|describe|alter|delete`: kafka-topics.sh over the wire, against any
Kafka-compatible broker.

    kafka-wire topics create --bootstrap-server localhost:9092 --topic orders --partitions 3 \\
        --config retention.ms=86400000
    kafka-wire topics describe --bootstrap-server localhost:9092 --topic orders
    kafka-wire topics alter --bootstrap-server localhost:9092 --topic orders --partitions 6 \\
        --add-config cleanup.policy=compact --delete-config retention.ms

--topic in list, describe, alter and delete is Kafka's include list: a regular expression (commas
mean "or") that must match the whole name.
"""

from __future__ import annotations

import re
import sys

from kafka_wire.errors import ErrorCode

from ..tool_support import (
    ToolError,
    add_connection_arguments,
    connect,
    kafka_uuid,
    parse_key_values,
    reports_errors,
    split_names,
)
from client import KafkaError

TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
DEFAULT_CONFIG_SOURCE = 5  # DescribeConfigs: a value nobody set
SET, DELETE = 0, 1  # IncrementalAlterConfigs operations
INTERNAL_TOPICS = {"__consumer_offsets", "__transaction_state"}


def _include_list(pattern: str | None):
    """Kafka's IncludeList: commas are alternatives, quotes and spaces are dropped."""
    if not pattern:
        return None
    cleaned = pattern.strip().replace(",", "|").replace(" ", "").strip("\"'")
    try:
        return re.compile(cleaned)
    except re.error as error:
        raise ToolError(f"invalid --topic pattern {pattern!r}: {error}") from None


def _matching_topics(cluster, pattern: str | None, exclude_internal: bool) -> list:
    """Metadata entries of the existing topics the include list selects, sorted by name."""
    regex = _include_list(pattern)
    response = cluster.metadata(None)
    found = []
    for topic in response.topics:
        internal = topic.is_internal or topic.name in INTERNAL_TOPICS
        if exclude_internal and internal:
            continue
        if regex is not None and not regex.fullmatch(topic.name):
            continue
        found.append(topic)
    return sorted(found, key=lambda t: t.name)


def _require_found(found: list, args) -> None:
    if not found and args.topic and not getattr(args, "if_exists", False):
        raise ToolError(f"Topic '{args.topic}' does not exist as expected")


def _check_result(error_code: int, message: str | None, context: str) -> None:
    if error_code:
        raise KafkaError(error_code, context, message)


# -- create ---------------------------------------------------------------------------------------


@reports_errors
def create(args) -> int:
    if args.partitions is not None and args.partitions < 1:
        raise ToolError("The partitions must be greater than 0")
    if args.replication_factor is not None and not 1 <= args.replication_factor <= 32767:
        raise ToolError("The replication factor must be between 1 and 32767 inclusive")
    configs = parse_key_values(args.config, "topic config")
    with connect(args) as cluster:
        client = cluster.controller()
        body = {
            "topics": [{
                "name": args.topic,
                "num_partitions": -1 if args.partitions is None else args.partitions,
                "replication_factor": -1 if args.replication_factor is None else args.replication_factor,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }],
            "timeout_ms": args.request_timeout_ms,
            "validate_only": False,
        }
        # -1 partitions / replication factor (the broker's defaults) need v4 (KIP-464).
        lowest = 4 if args.partitions is None or args.replication_factor is None else None
        response = client.request("CreateTopics", body, lowest=lowest)
        result = response.topics[0]
        if result.error_code == ErrorCode.TOPIC_ALREADY_EXISTS and args.if_not_exists:
            return 0
        _check_result(result.error_code, result.error_message, f"create topic {args.topic}")
    print(f"Created topic {args.topic}.")
    return 0


# -- list -----------------------------------------------------------------------------------------


@reports_errors
def list_topics(args) -> int:
    with connect(args) as cluster:
        for topic in _matching_topics(cluster, args.topic, args.exclude_internal):
            print(topic.name)
    return 0


# -- describe -------------------------------------------------------------------------------------


def _describe_configs(cluster, names: list[str]) -> dict[str, list]:
    if not names:
        return {}
    client = cluster.any_broker()
    body = {"resources": [{"resource_type": TOPIC_RESOURCE, "resource_name": n, "configuration_keys": None}
                          for n in names],
            "include_synonyms": False, "include_documentation": False}
    response = client.request("DescribeConfigs", body)
    configs = {}
    for result in response.results:
        _check_result(result.error_code, result.error_message, f"describe configs of {result.resource_name}")
        configs[result.resource_name] = result.configs
    return configs


def _nodes(ids) -> str:
    return ",".join(str(i) for i in ids)


@reports_errors
def describe(args) -> int:
    with connect(args) as cluster:
        topics = _matching_topics(cluster, args.topic, args.exclude_internal)
        _require_found(topics, args)
        configs = _describe_configs(cluster, [t.name for t in topics])
    only_under_replicated = args.under_replicated_partitions
    for topic in topics:
        partitions = sorted(topic.partitions, key=lambda p: p.partition_index)
        if not only_under_replicated:
            overridden = ",".join(f"{c.name}={c.value}" for c in configs.get(topic.name, [])
                                  if c.config_source != DEFAULT_CONFIG_SOURCE)
            line = f"Topic: {topic.name}"
            if topic.topic_id is not None and topic.topic_id.int != 0:
                line += f"\tTopicId: {kafka_uuid(topic.topic_id)}"
            replication = len(partitions[0].replica_nodes) if partitions else 0
            print(f"{line}\tPartitionCount: {len(partitions)}\tReplicationFactor: {replication}\tConfigs: {overridden}")
        for p in partitions:
            if only_under_replicated and len(p.isr_nodes) >= len(p.replica_nodes):
                continue
            leader = p.leader_id if p.leader_id >= 0 else "none"
            # Elr/LastKnownElr come from DescribeTopicPartitions (KIP-966), which we do not serve;
            # Kafka's tool prints N/A for brokers without it.
            print(f"\tTopic: {topic.name}\tPartition: {p.partition_index}\tLeader: {leader}"
                  f"\tReplicas: {_nodes(p.replica_nodes)}\tIsr: {_nodes(p.isr_nodes)}"
                  f"\tElr: N/A\tLastKnownElr: N/A")
    return 0


# -- alter ----------------------------------------------------------------------------------------


@reports_errors
def alter(args) -> int:
    add = parse_key_values(args.add_config, "config")
    delete = split_names(args.delete_config)
    if args.partitions is None and not add and not delete:
        raise ToolError("alter needs --partitions, --add-config or --delete-config")
    with connect(args) as cluster:
        topics = _matching_topics(cluster, args.topic, exclude_internal=False)
        _require_found(topics, args)
        if not topics:
            return 0
        client = cluster.controller()
        if args.partitions is not None:
            body = {"topics": [{"name": t.name, "count": args.partitions, "assignments": None} for t in topics],
                    "timeout_ms": args.request_timeout_ms, "validate_only": False}
            response = client.request("CreatePartitions", body)
            for result in response.results:
                _check_result(result.error_code, result.error_message, f"add partitions to {result.name}")
        if add or delete:
            operations = ([{"name": k, "config_operation": SET, "value": v} for k, v in add.items()]
                          + [{"name": k, "config_operation": DELETE, "value": None} for k in delete])
            body = {"resources": [{"resource_type": TOPIC_RESOURCE, "resource_name": t.name, "configs": operations}
                                  for t in topics], "validate_only": False}
            response = client.request("IncrementalAlterConfigs", body)
            for result in response.responses:
                _check_result(result.error_code, result.error_message, f"alter configs of {result.resource_name}")
            for t in topics:
                print(f"Completed updating config for topic {t.name}.")
    return 0


# -- delete ---------------------------------------------------------------------------------------


@reports_errors
def delete(args) -> int:
    with connect(args) as cluster:
        topics = _matching_topics(cluster, args.topic, args.exclude_internal)
        _require_found(topics, args)
        if not topics:
            return 0
        client = cluster.controller()
        # v6 names topics by id or name in structs; v1-5 take a list of names.
        response = client.request("DeleteTopics", {"topic_names": [t.name for t in topics],
                                                   "timeout_ms": args.request_timeout_ms}, highest=5)
        failed = [r for r in response.responses if r.error_code]
        for result in failed:
            print(f"Error: delete topic {result.name}: {ErrorCode.from_code(result.error_code).name}: "
                  f"{result.error_message or ErrorCode.from_code(result.error_code).message}", file=sys.stderr)
    return 1 if failed else 0


# -- the command line -----------------------------------------------------------------------------


def register(subparsers) -> None:
    parser = subparsers.add_parser("topics", help="create, list, describe, alter and delete topics (kafka-topics.sh)")
    actions = parser.add_subparsers(dest="topics_action", required=True)

    p = actions.add_parser("create", help="create a topic")
    add_connection_arguments(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, help="default: the broker's num.partitions")
    p.add_argument("--replication-factor", type=int, help="default: the broker's default.replication.factor")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="topic config (repeatable)")
    p.add_argument("--if-not-exists", action="store_true", help="succeed when the topic already exists")
    p.set_defaults(func=create)

    p = actions.add_parser("list", help="list topic names")
    add_connection_arguments(p)
    p.add_argument("--topic", help="include list (regular expression)")
    p.add_argument("--exclude-internal", action="store_true", help="leave out internal topics")
    p.set_defaults(func=list_topics)

    p = actions.add_parser("describe", help="partitions, leaders, replicas, ISR and overridden configs")
    add_connection_arguments(p)
    p.add_argument("--topic", help="include list (regular expression); default: every topic")
    p.add_argument("--exclude-internal", action="store_true", help="leave out internal topics")
    p.add_argument("--if-exists", action="store_true", help="succeed when no topic matches")
    p.add_argument("--under-replicated-partitions", action="store_true",
                   help="only partitions whose ISR is smaller than their replica set")
    p.set_defaults(func=describe)

    p = actions.add_parser("alter", help="add partitions, set or delete topic configs")
    add_connection_arguments(p)
    p.add_argument("--topic", required=True, help="include list (regular expression)")
    p.add_argument("--partitions", type=int, help="new partition count (can only grow)")
    p.add_argument("--add-config", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                   help="set topic configs (IncrementalAlterConfigs SET)")
    p.add_argument("--delete-config", action="append", default=[], metavar="KEY[,KEY]",
                   help="remove topic config overrides (IncrementalAlterConfigs DELETE)")
    p.add_argument("--if-exists", action="store_true", help="succeed when no topic matches")
    p.set_defaults(func=alter)

    p = actions.add_parser("delete", help="delete topics")
    add_connection_arguments(p)
    p.add_argument("--topic", required=True, help="include list (regular expression)")
    p.add_argument("--exclude-internal", action="store_true", help="never delete internal topics")
    p.add_argument("--if-exists", action="store_true", help="succeed when no topic matches")
    p.set_defaults(func=delete)
