"""Answers the request fuzzer (compat/request_fuzz.py) found different from Kafka 4.3.0's and that now
match: a controller operation whose deadline has already passed (timeout_ms <= 0), and legacy
AlterConfigs' checks ahead of the controller (duplicate config keys, null values)."""

from __future__ import annotations

import uuid

from ..scenario import Session, scenario


def _creatable(name: str) -> dict:
    return {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}


@scenario("CreateTopics", versions=(7,), covers=["REQUEST_TIMED_OUT"])
def create_topics_deadline_passed(s: Session, v: int):
    """timeout_ms 0 and -1: every topic REQUEST_TIMED_OUT and none created (an invalid name too);
    an empty list answers at once; timeout_ms 20 creates."""
    for timeout in (0, -1):
        s.call("CreateTopics", v, {"topics": [_creatable(s.topic(f"t{timeout}")), _creatable("bad name!")],
                                   "timeout_ms": timeout, "validate_only": False}, label=f"timeout {timeout}")
        s.call("CreateTopics", v, {"topics": [_creatable(s.topic("validate"))], "timeout_ms": timeout,
                                   "validate_only": True}, label=f"validate only, timeout {timeout}")
    s.call("CreateTopics", v, {"topics": [], "timeout_ms": 0, "validate_only": False}, label="no topics")
    s.call("Metadata", 12, {"topics": [{"name": s.topic("t0"), "topic_id": None}],
                            "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
           label="the topic asked with timeout 0 does not exist")


@scenario("DeleteTopics", versions=(6,), covers=["REQUEST_TIMED_OUT"])
def delete_topics_deadline_passed(s: Session, v: int):
    """timeout_ms 0: an existing topic (not deleted) and an unknown one answer REQUEST_TIMED_OUT."""
    s.create_topic(s.topic())
    s.call("DeleteTopics", v, {"topics": [{"name": s.topic(), "topic_id": uuid.UUID(int=0)},
                                          {"name": s.topic("missing"), "topic_id": uuid.UUID(int=0)}],
                               "timeout_ms": 0}, label="timeout 0")
    s.call("DeleteTopics", v, {"topics": [], "timeout_ms": 0}, label="no topics")
    s.call("DeleteTopics", v, {"topics": [{"name": s.topic(), "topic_id": uuid.UUID(int=0)}], "timeout_ms": 30000},
           label="the topic is still there to delete")


@scenario("CreatePartitions", versions=(3,), covers=["REQUEST_TIMED_OUT"])
def create_partitions_deadline_passed(s: Session, v: int):
    """timeout_ms -1: a valid increase and an unknown topic answer REQUEST_TIMED_OUT; nothing grows."""
    s.create_topic(s.topic())
    s.call("CreatePartitions", v, {"topics": [{"name": s.topic(), "count": 2, "assignments": None},
                                              {"name": s.topic("missing"), "count": 2, "assignments": None}],
                                   "timeout_ms": -1, "validate_only": False}, label="timeout -1")
    s.call("CreatePartitions", v, {"topics": [{"name": s.topic(), "count": 2, "assignments": None}],
                                   "timeout_ms": 30000, "validate_only": True}, label="still one partition")


@scenario("ElectLeaders", versions=(2,), covers=["REQUEST_TIMED_OUT"])
def elect_leaders_deadline_passed(s: Session, v: int):
    """timeout_ms 0: the top level and each partition REQUEST_TIMED_OUT; all partitions (null) too;
    an empty list answers at once."""
    s.create_topic(s.topic())
    s.call("ElectLeaders", v, {"election_type": 0, "timeout_ms": 0, "topic_partitions": [
        {"topic": s.topic(), "partitions": [0]}, {"topic": s.topic("missing"), "partitions": [0]}]}, label="timeout 0")
    s.call("ElectLeaders", v, {"election_type": 0, "timeout_ms": 0, "topic_partitions": None}, label="all partitions")
    s.call("ElectLeaders", v, {"election_type": 0, "timeout_ms": 0, "topic_partitions": []}, label="no partitions")


@scenario("AlterConfigs", versions=(0, 2), covers=["INVALID_REQUEST"])
def alter_configs_refused_before_the_controller(s: Session, v: int):
    """A config key named twice and a null value: INVALID_REQUEST, for a topic that exists."""
    s.create_topic(s.topic())

    def alter(label, configs):
        s.call("AlterConfigs", v, {"resources": [{"resource_type": 2, "resource_name": s.topic(), "configs": [
            {"name": k, "value": value} for k, value in configs]}], "validate_only": False}, label=label)

    alter("a key twice", [("retention.ms", "1000"), ("retention.ms", "2000")])
    alter("a null value", [("retention.ms", None), ("segment.ms", None)])
