"""CreateTopics (19), DeleteTopics (20), CreatePartitions (37), DescribeTopicPartitions (75): success and
each error Kafka documents."""

from __future__ import annotations

import uuid

from ..scenario import ALL, Session, scenario

ZERO_UUID = uuid.UUID(int=0)


def _creatable(name: str, partitions: int = 1, rf: int = 1, configs=None, assignments=None) -> dict:
    return {"name": name, "num_partitions": partitions, "replication_factor": rf,
            "assignments": assignments or [],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}


def _create(s: Session, v: int, topics: list[dict], validate_only: bool = False, label: str | None = None):
    return s.call("CreateTopics", v, {"topics": topics, "timeout_ms": 30000, "validate_only": validate_only},
                  label=label)


@scenario("CreateTopics", versions=ALL, covers=["INVALID_PARTITIONS", "INVALID_REPLICATION_FACTOR", "INVALID_CONFIG",
                                                "INVALID_TOPIC_EXCEPTION", "TOPIC_ALREADY_EXISTS", "POLICY_VIOLATION"])
def create_topics(s: Session, v: int):
    """Created with configs; then each error: exists, 0 and -5 partitions, replication factor 3 on one
    broker, an unknown and an invalid config value, illegal names; validate_only."""
    _create(s, v, [_creatable(s.topic(), 2, 1, {"cleanup.policy": "compact", "retention.ms": "1000"})],
            label="create with configs")
    _create(s, v, [_creatable(s.topic(), 2)], label="already exists")
    _create(s, v, [_creatable(s.topic("zero"), 0), _creatable(s.topic("negative"), -5)], label="bad partition counts")
    _create(s, v, [_creatable(s.topic("rf3"), 1, 3), _creatable(s.topic("rf0"), 1, 0)], label="bad replication factors")
    _create(s, v, [_creatable(s.topic("unknown-config"), 1, 1, {"no.such.config": "1"}),
                   _creatable(s.topic("bad-value"), 1, 1, {"cleanup.policy": "sometimes"}),
                   _creatable(s.topic("bad-number"), 1, 1, {"retention.ms": "soon"})], label="bad configs")
    # (Not "__consumer_offsets": before any group exists both brokers create it as asked, with one
    # partition, which would leave every later group case of the shared brokers without a coordinator.)
    _create(s, v, [_creatable("bad name!"), _creatable("x" * 250), _creatable("..")], label="bad names")
    _create(s, v, [_creatable(s.topic("validate"), 3)], validate_only=True, label="validate only")
    if v >= 4:
        _create(s, v, [_creatable(s.topic("defaults"), -1, -1)], label="broker defaults (-1)")
    _create(s, v, [_creatable(s.topic("dup")), _creatable(s.topic("dup"))], label="the same name twice")
    _create(s, v, [_creatable(s.topic("huge"), 10_005)], label="more than 10000 partitions")
    _create(s, v, [_creatable(s.topic("huge2"), 20_000), _creatable(s.topic("small"))],
            label="more than 10000 partitions beside a small topic")


@scenario("CreateTopics", versions=(5, 7), covers=["INVALID_REPLICA_ASSIGNMENT"])
def create_topics_with_assignments(s: Session, v: int):
    """Manual assignments: valid on node 1, an unknown broker, assignments plus a partition count."""
    _create(s, v, [_creatable(s.topic(), -1, -1, assignments=[{"partition_index": 0, "broker_ids": [1]},
                                                                {"partition_index": 1, "broker_ids": [1]}])],
            label="assigned to node 1")
    _create(s, v, [_creatable(s.topic("unknown-broker"), -1, -1,
                              assignments=[{"partition_index": 0, "broker_ids": [7]}])], label="unknown broker")
    _create(s, v, [_creatable(s.topic("both"), 2, 1, assignments=[{"partition_index": 0, "broker_ids": [1]}])],
            label="assignments and a partition count")
    _create(s, v, [_creatable(s.topic("gap"), -1, -1, assignments=[{"partition_index": 1, "broker_ids": [1]}])],
            label="assignments not starting at 0")


@scenario("DeleteTopics", versions=ALL, covers=["UNKNOWN_TOPIC_OR_PARTITION"])
def delete_topics(s: Session, v: int):
    """Delete a topic, then an unknown one; v6 by topic id (unknown id)."""
    s.create_topic(s.topic())
    if v >= 6:
        s.call("DeleteTopics", v, {"topics": [{"name": s.topic(), "topic_id": ZERO_UUID},
                                              {"name": s.topic("missing"),
                                               "topic_id": ZERO_UUID}],
                                   "timeout_ms": 30000})
        s.call("DeleteTopics", v, {"topics": [{"name": None, "topic_id": uuid.UUID("5a4f1e4e-98a1-4c5e-9d43-2b0a5b3c1d11")}],
                                   "timeout_ms": 30000}, label="unknown topic id")
    else:
        s.call("DeleteTopics", v, {"topic_names": [s.topic(), s.topic("missing")], "timeout_ms": 30000})
    s.wait_until(lambda: _topic_gone(s, s.topic()), what="the topic to be deleted")
    s.call("Metadata", 12, {"topics": [{"name": s.topic()}], "allow_auto_topic_creation": False,
                            "include_topic_authorized_operations": False}, label="Metadata after delete")


def _topic_gone(s: Session, topic: str) -> bool:
    answer = s.call("Metadata", 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": False}, record=False)
    return answer is not None and answer.topics[0].error_code == 3


@scenario("DeleteTopics", versions=(5,), covers=["INVALID_TOPIC_EXCEPTION"])
def delete_illegal_topic_name(s: Session, v: int):
    """Deleting an illegal name. (Deleting __consumer_offsets would break the shared brokers' groups.)"""
    s.call("DeleteTopics", v, {"topic_names": ["bad name!"], "timeout_ms": 30000})


@scenario("CreatePartitions", versions=ALL, covers=["INVALID_PARTITIONS", "UNKNOWN_TOPIC_OR_PARTITION",
                                                    "POLICY_VIOLATION"])
def create_partitions(s: Session, v: int):
    """Grow 1 -> 3; then shrink, same count, unknown topic, validate_only, an assignment to an unknown broker."""
    s.create_topic(s.topic())

    def grow(label, topics, validate_only=False):
        s.call("CreatePartitions", v, {"topics": topics, "timeout_ms": 30000, "validate_only": validate_only},
               label=label)

    grow("grow to 3", [{"name": s.topic(), "count": 3, "assignments": None}])
    grow("shrink and same count", [{"name": s.topic(), "count": 2, "assignments": None}])
    grow("same count", [{"name": s.topic(), "count": 3, "assignments": None}])
    grow("unknown topic", [{"name": s.topic("missing"), "count": 3, "assignments": None}])
    grow("validate only", [{"name": s.topic(), "count": 5, "assignments": None}], validate_only=True)
    grow("unknown broker", [{"name": s.topic(), "count": 4, "assignments": [{"broker_ids": [9]}]}])
    grow("wrong number of assignments", [{"name": s.topic(), "count": 5, "assignments": [{"broker_ids": [1]}]}])
    grow("twice in one request", [{"name": s.topic(), "count": 6, "assignments": None},
                                  {"name": s.topic(), "count": 7, "assignments": None}])

    s.wait_for_leaders(s.topic(), 3)


@scenario("DescribeTopicPartitions", versions=ALL)
def describe_topic_partitions(s: Session, v: int):
    """Pages of 2 partitions over a 3-partition topic; an unknown topic."""
    s.create_topic(s.topic(), partitions=3)
    first = s.call("DescribeTopicPartitions", v, {"topics": [{"name": s.topic()}, {"name": s.topic("missing")}],
                                                  "response_partition_limit": 2, "cursor": None}, label="first page")
    if first is not None and first.next_cursor is not None:
        s.call("DescribeTopicPartitions", v, {"topics": [{"name": s.topic()}], "response_partition_limit": 2,
                                              "cursor": {"topic_name": first.next_cursor.topic_name,
                                                         "partition_index": first.next_cursor.partition_index}},
               label="next page")


@scenario("CreatePartitions", versions=(3,), quick=False)
def create_partitions_over_the_operation_limit(s: Session, v: int):
    """More than 10,000 new partitions in one CreatePartitions (Kafka's records-per-operation limit),
    validate only (the real request leaves Kafka 4.3 busy for minutes)."""
    s.create_topic(s.topic())
    s.call("CreatePartitions", v, {"topics": [{"name": s.topic(), "count": 10_005, "assignments": None}],
                                   "timeout_ms": 30000, "validate_only": True}, label="10,005 partitions")
