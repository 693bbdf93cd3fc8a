"""CreateTopics, DeleteTopics and CreatePartitions as Apache Kafka (KRaft) answers them.

Sources (apache/kafka): core/.../server/ControllerApis.scala createTopics/deleteTopics,
metadata/.../controller/ReplicationControlManager.java createTopics/createTopic/
validateNewTopicNames/createPartitions, clients/.../internals/Topic.java validate.
"""

from __future__ import annotations

import uuid

import pytest

from testing.broker_process import running_broker
from client import WireClient
from kafka_wire.primitives import ZERO_UUID

from wire_cases import batch, create_topic, error_name, log_end_offset, metadata, produce, read_all, unique

DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap) as c:
        yield c


def _create(client, *topics: dict, validate_only: bool = False, version: int = 7):
    body = {"topics": [{"num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": [], **t}
                       for t in topics], "timeout_ms": 5000, "validate_only": validate_only}
    return client.call("CreateTopics", version, body).topics


def _exists(client, topic: str) -> bool:
    return metadata(client, [topic]).topics[0].error_code == 0


# -- CreateTopics ----------------------------------------------------------------------------------------


def test_validate_only_creates_nothing(client):
    """A validate-only success is answered like a real one (num_partitions, replication factor,
    configs, a made-up topic id) but writes no records (ReplicationControlManager.createTopics)."""
    topic = unique("validate")
    [answer] = _create(client, {"name": topic, "num_partitions": 4,
                                "configs": [{"name": "retention.ms", "value": "1000"}]}, validate_only=True)
    assert (answer.error_code, answer.num_partitions, answer.replication_factor) == (0, 4, 1)
    assert {c.name: c.value for c in answer.configs}["retention.ms"] == "1000"
    assert not _exists(client, topic)
    [again] = _create(client, {"name": topic})
    assert again.error_code == 0  # the name was never taken


def test_create_answer_carries_partitions_id_and_configs(client):
    """v5+ answers the effective configs, sorted by name, each with its source; v7 the topic id."""
    topic = unique("created")
    [answer] = _create(client, {"name": topic, "num_partitions": 2,
                                "configs": [{"name": "retention.ms", "value": "12345"}]})
    assert (answer.error_code, answer.num_partitions, answer.replication_factor) == (0, 2, 1)
    assert answer.topic_id == metadata(client, [topic]).topics[0].topic_id != ZERO_UUID
    names = [c.name for c in answer.configs]
    assert names == sorted(names) and "segment.bytes" in names
    configs = {c.name: c for c in answer.configs}
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("12345", DYNAMIC_TOPIC_CONFIG)
    assert (configs["segment.bytes"].value, configs["segment.bytes"].config_source) == ("1073741824", DEFAULT_CONFIG)
    [old] = _create(client, {"name": unique("v4")}, version=4)
    assert old.error_code == 0 and old.configs == []  # v4 has no configs in the answer


def test_topic_already_exists(client):
    topic = unique("exists")
    create_topic(client, topic)
    [answer] = _create(client, {"name": topic})
    assert (error_name(answer.error_code), answer.error_message) == ("TOPIC_ALREADY_EXISTS",
                                                                    f"Topic '{topic}' already exists.")


@pytest.mark.parametrize("partitions,replication,expected", [
    (0, 1, "INVALID_PARTITIONS"),
    (-5, 1, "INVALID_PARTITIONS"),
    (1, 0, "INVALID_REPLICATION_FACTOR"),
    (1, 3, "INVALID_REPLICATION_FACTOR"),
    (1, -7, "INVALID_REPLICATION_FACTOR"),
    (0, 0, "INVALID_REPLICATION_FACTOR"),  # Kafka checks the replication factor first
])
def test_invalid_counts(client, partitions, replication, expected):
    topic = unique("counts")
    [answer] = _create(client, {"name": topic, "num_partitions": partitions, "replication_factor": replication})
    assert error_name(answer.error_code) == expected
    assert answer.error_message and (answer.num_partitions, answer.replication_factor) == (-1, -1)
    assert not _exists(client, topic)


def test_replication_factor_above_the_broker_count(client):
    """Kafka 4.3's message (KIP-1066 added the cordoned log directories), as kafka-topics.sh prints it."""
    [answer] = _create(client, {"name": unique("rf"), "replication_factor": 3})
    assert error_name(answer.error_code) == "INVALID_REPLICATION_FACTOR"
    assert answer.error_message == ("Unable to replicate the partition 3 time(s): The target replication factor of 3 "
                                    "cannot be reached because only 1 broker(s) are registered or some brokers have "
                                    "all their log directories cordoned.")


_CHARACTERS = "contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"


@pytest.mark.parametrize("name, reason", [
    ("bad name!", f"'bad name!' {_CHARACTERS}"),
    ("x" * 250, f"the length of '{'x' * 250}' is longer than the max allowed length 249"),
    (".", "'.' is not allowed"),
    ("..", "'..' is not allowed"),
    ("", "the empty string is not allowed"),
    ("tab\tbed", f"'tab\tbed' {_CHARACTERS}"),
])
def test_invalid_topic_names(client, name, reason):
    """Kafka 4.3's words (Topic.validate), which kafka-topics.sh prints after "Error while executing
    topic command : "."""
    [answer] = _create(client, {"name": name})
    assert error_name(answer.error_code) == "INVALID_TOPIC_EXCEPTION"
    assert answer.error_message == f"Topic name is invalid: {reason}"


def test_dot_and_underscore_collision(client):
    """ReplicationControlManager.validateNewTopicNames: names equal but for '.' and '_' collide."""
    stem = uuid.uuid4().hex[:8]
    create_topic(client, f"metrics.{stem}")
    [answer] = _create(client, {"name": f"metrics_{stem}"})
    assert error_name(answer.error_code) == "INVALID_TOPIC_EXCEPTION"
    assert answer.error_message == f"Topic 'metrics_{stem}' collides with existing topic: metrics.{stem}"


@pytest.mark.parametrize("name,value", [
    ("no.such.config", "1"),
    ("retention.ms", "soon"),
    ("segment.bytes", "1"),
    ("compression.type", "brotli"),
    ("cleanup.policy", "forever"),
    ("min.cleanable.dirty.ratio", "1.5"),
    ("retention.ms", None),
])
def test_invalid_configs(client, name, value):
    topic = unique("bad-config")
    [answer] = _create(client, {"name": topic, "configs": [{"name": name, "value": value}]})
    assert error_name(answer.error_code) == "INVALID_CONFIG"
    assert name in answer.error_message
    assert not _exists(client, topic)


def test_manual_assignments(client):
    topic = unique("assigned")
    assignments = [{"partition_index": i, "broker_ids": [1]} for i in range(3)]
    [answer] = _create(client, {"name": topic, "num_partitions": -1, "replication_factor": -1,
                                "assignments": assignments})
    assert (answer.error_code, answer.num_partitions, answer.replication_factor) == (0, 3, 1)
    assert len(metadata(client, [topic]).topics[0].partitions) == 3


@pytest.mark.parametrize("change,expected", [
    ({"num_partitions": 3}, "INVALID_REQUEST"),
    ({"replication_factor": 1}, "INVALID_REQUEST"),
    ({"assignments": [{"partition_index": 0, "broker_ids": [9]}]}, "INVALID_REPLICA_ASSIGNMENT"),
    ({"assignments": [{"partition_index": 0, "broker_ids": [1]},
                      {"partition_index": 2, "broker_ids": [1]}]}, "INVALID_REPLICA_ASSIGNMENT"),
    ({"assignments": [{"partition_index": 0, "broker_ids": [1, 1]}]}, "INVALID_REPLICA_ASSIGNMENT"),
])
def test_bad_manual_assignments(client, change, expected):
    topic = {"name": unique("bad-assignment"), "num_partitions": -1, "replication_factor": -1,
             "assignments": [{"partition_index": 0, "broker_ids": [1]}], **change}
    [answer] = _create(client, topic)
    assert error_name(answer.error_code) == expected


def test_duplicate_names_are_answered_once(client):
    """ControllerApis.createTopics: a name given twice is INVALID_REQUEST "Duplicate topic name.",
    answered once after the other topics, and not created."""
    twice, once = unique("twice"), unique("once")
    answers = _create(client, {"name": twice}, {"name": once}, {"name": twice})
    assert [(a.name, error_name(a.error_code), a.error_message) for a in answers] == [
        (once, "NONE", None), (twice, "INVALID_REQUEST", "Duplicate topic name.")]
    assert _exists(client, once) and not _exists(client, twice)


def test_cluster_metadata_topic_cannot_be_created(client):
    [answer] = _create(client, {"name": "__cluster_metadata"})
    assert error_name(answer.error_code) == "INVALID_REQUEST"


def test_defaults_from_the_broker(tmp_path):
    """num_partitions and replication_factor -1 take num.partitions and default.replication.factor."""
    with running_broker(tmp_path, config={"num.partitions": 3}) as broker, WireClient(broker.bootstrap) as client:
        topic = unique("defaults")
        [answer] = _create(client, {"name": topic, "num_partitions": -1, "replication_factor": -1})
        assert (answer.error_code, answer.num_partitions, answer.replication_factor) == (0, 3, 1)
        assert len(metadata(client, [topic]).topics[0].partitions) == 3


# -- DeleteTopics ----------------------------------------------------------------------------------------------


def test_delete_by_name(client):
    topic = unique("delete-name")
    create_topic(client, topic)
    for version, body in ((5, {"topic_names": [topic]}), (6, {"topics": [{"name": topic}]})):
        answer = client.call("DeleteTopics", version, {**body, "timeout_ms": 5000}).responses[0]
        if version == 5:
            assert (answer.name, answer.error_code) == (topic, 0)
            assert not _exists(client, topic)
            create_topic(client, topic)
        else:
            assert (answer.name, answer.error_code) == (topic, 0)
    assert not _exists(client, topic)


def test_delete_by_id(client):
    topic = unique("delete-id")
    create_topic(client, topic)
    topic_id = metadata(client, [topic]).topics[0].topic_id
    answer = client.call("DeleteTopics", 6, {"topics": [{"name": None, "topic_id": topic_id}],
                                             "timeout_ms": 5000}).responses[0]
    assert (answer.error_code, answer.name, answer.topic_id) == (0, topic, topic_id)
    assert not _exists(client, topic)


def test_delete_unknown(client):
    by_name = client.call("DeleteTopics", 6, {"topics": [{"name": unique("missing")}],
                                              "timeout_ms": 5000}).responses[0]
    assert error_name(by_name.error_code) == "UNKNOWN_TOPIC_OR_PARTITION"
    by_id = client.call("DeleteTopics", 6, {"topics": [{"name": None, "topic_id": uuid.uuid4()}],
                                            "timeout_ms": 5000}).responses[0]
    assert error_name(by_id.error_code) == "UNKNOWN_TOPIC_ID"
    old = client.call("DeleteTopics", 1, {"topic_names": [unique("missing")], "timeout_ms": 5000}).responses[0]
    assert error_name(old.error_code) == "UNKNOWN_TOPIC_OR_PARTITION"


def test_delete_disabled(tmp_path):
    """delete.topic.enable=false: TOPIC_DELETION_DISABLED from v3, INVALID_REQUEST before
    (ControllerApis.deleteTopics); the topic stays."""
    with running_broker(tmp_path, config={"delete.topic.enable": False}) as broker, \
            WireClient(broker.bootstrap) as client:
        topic = unique("kept")
        create_topic(client, topic)
        answer = client.call("DeleteTopics", 6, {"topics": [{"name": topic}], "timeout_ms": 5000}).responses[0]
        assert error_name(answer.error_code) == "TOPIC_DELETION_DISABLED"
        old = client.call("DeleteTopics", 2, {"topic_names": [topic], "timeout_ms": 5000}).responses[0]
        assert error_name(old.error_code) == "INVALID_REQUEST"
        assert _exists(client, topic)


def test_recreated_topic_starts_at_offset_zero_with_a_new_id(client):
    topic = unique("recreated")
    create_topic(client, topic)
    old_id = metadata(client, [topic]).topics[0].topic_id
    for i in range(3):
        produce(client, topic, batch([b"old-%d" % i]))
    client.call("DeleteTopics", 6, {"topics": [{"name": topic}], "timeout_ms": 5000})
    create_topic(client, topic)
    new_id = metadata(client, [topic]).topics[0].topic_id
    assert new_id not in (old_id, ZERO_UUID)
    assert log_end_offset(client, topic) == 0
    assert produce(client, topic, batch([b"new"])).base_offset == 0
    assert [r[3] for r in read_all(client, topic)] == [b"new"]


# -- CreatePartitions ----------------------------------------------------------------------------------------


def _create_partitions(client, topic: str, count: int, validate_only: bool = False, assignments=None):
    response = client.call("CreatePartitions", 3, {"topics": [{"name": topic, "count": count,
                                                               "assignments": assignments}],
                                                   "timeout_ms": 5000, "validate_only": validate_only})
    return response.results[0]


def test_grow_partitions(client):
    topic = unique("grow")
    create_topic(client, topic)
    assert _create_partitions(client, topic, 3).error_code == 0
    assert len(metadata(client, [topic]).topics[0].partitions) == 3
    answer = produce(client, topic, batch([b"in the new partition"]), partition=2)
    assert (answer.error_code, answer.base_offset) == (0, 0)
    assert [r[3] for r in read_all(client, topic, partition=2)] == [b"in the new partition"]


def test_grow_with_assignments(client):
    topic = unique("grow-assigned")
    create_topic(client, topic)
    assert _create_partitions(client, topic, 2, assignments=[{"broker_ids": [1]}]).error_code == 0
    bad = _create_partitions(client, topic, 4, assignments=[{"broker_ids": [1]}])
    assert error_name(bad.error_code) == "INVALID_REPLICA_ASSIGNMENT"


@pytest.mark.parametrize("count,expected,message", [
    (2, "INVALID_PARTITIONS", "Topic already has 2 partition(s)."),
    (1, "INVALID_PARTITIONS", "The topic {topic} currently has 2 partition(s); 1 would not be an increase."),
])
def test_partitions_cannot_stay_or_shrink(client, count, expected, message):
    topic = unique("shrink")
    create_topic(client, topic, partitions=2)
    answer = _create_partitions(client, topic, count)
    assert (error_name(answer.error_code), answer.error_message) == (expected, message.format(topic=topic))
    assert len(metadata(client, [topic]).topics[0].partitions) == 2


def test_create_partitions_of_unknown_topic(client):
    answer = _create_partitions(client, unique("missing"), 3)
    assert (error_name(answer.error_code), answer.error_message) == ("UNKNOWN_TOPIC_OR_PARTITION", None)


def test_create_partitions_validate_only(client):
    topic = unique("grow-validate")
    create_topic(client, topic)
    assert _create_partitions(client, topic, 5, validate_only=True).error_code == 0
    assert len(metadata(client, [topic]).topics[0].partitions) == 1


def test_excessively_large_operations_are_refused(client):
    """Kafka's controller writes at most 10,000 metadata records per operation
    (QuorumController.MAX_RECORDS_PER_USER_OP): more partitions than that in one CreateTopics or
    CreatePartitions is POLICY_VIOLATION for every topic in it, validate_only or not."""
    huge, small = unique("huge"), unique("small")
    for validate_only in (True, False):
        answers = _create(client, {"name": huge, "num_partitions": 20_000}, {"name": small},
                          validate_only=validate_only)
        assert [(a.name, error_name(a.error_code)) for a in answers] == [(huge, "POLICY_VIOLATION"),
                                                                         (small, "POLICY_VIOLATION")]
        # Kafka 4.3.0's answer (compat/conformance create_topics: "more than 10000 partitions").
        assert answers[0].error_message == "Excessively large number of partitions per request."
    assert not _exists(client, huge) and not _exists(client, small)
    create_topic(client, small)
    answer = _create_partitions(client, small, 2_000_000_000)
    assert error_name(answer.error_code) == "POLICY_VIOLATION"
    assert len(metadata(client, [small]).topics[0].partitions) == 1
