"""Partition reassignment's decisions (broker/cluster/partition_reassignment.py) against Kafka 4.x's
ReplicationControlManager, PartitionReassignmentReplicas and PartitionReassignmentRevert."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from broker.cluster.partition_reassignment import (NO_LEADER, Reassignment, ReassignmentRefused, choose_leader,
                                                   maybe_complete, revert, single_node_outcomes, start,
                                                   validate_replication_factor_unchanged, validate_target)
from broker.cluster.zk_metadata import _parse_topic_node, topic_znode
from broker.metadata import TopicMeta, random_topic_id
from kafka_wire.errors import ErrorCode


def refusal(fn, *args) -> tuple[ErrorCode, str]:
    with pytest.raises(ReassignmentRefused) as caught:
        fn(*args)
    return caught.value.error, caught.value.message


def test_targets_are_validated_as_kafka_validates_manual_assignments():
    validate_target([3, 1], {1, 2, 3})
    assert refusal(validate_target, [], {1}) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list.")
    assert refusal(validate_target, [2, 7, 1], {1, 2}) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "The manual partition assignment includes broker 7, but no such broker is registered.")
    assert refusal(validate_target, [2, 1, 2], {1, 2}) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes the broker 2 more than once.")


def test_replication_factor_change_refused_when_not_allowed():
    validate_replication_factor_unchanged(Reassignment([1, 2]), [3, 4])
    assert refusal(validate_replication_factor_unchanged, Reassignment([1]), [2, 3]) == (
        ErrorCode.INVALID_REPLICATION_FACTOR, "The replication factor is changed from 1 to 2")
    # While a move is ongoing, its target's size counts: [1] moving to [2, 3].
    ongoing = start(Reassignment([1]), [2, 3])
    validate_replication_factor_unchanged(ongoing, [3, 4])
    assert refusal(validate_replication_factor_unchanged, ongoing, [4])[0] == ErrorCode.INVALID_REPLICATION_FACTOR


def test_a_move_is_the_union_until_every_target_replica_is_in_sync():
    moving = start(Reassignment([1, 2]), [3, 1])
    assert moving == Reassignment([3, 1, 2], adding=[3], removing=[2])
    assert moving.in_progress and moving.target() == [3, 1]
    assert maybe_complete(moving, [1, 2]) is None
    assert maybe_complete(moving, [1, 2, 3]) == ([3, 1], [1, 3])
    # Only removing: complete at once.
    assert maybe_complete(start(Reassignment([1, 2, 3]), [1, 2]), [1, 2, 3]) == ([1, 2], [1, 2])
    # Nothing changes: nothing in progress.
    assert not start(Reassignment([1, 2]), [1, 2]).in_progress
    assert maybe_complete(Reassignment([1, 2]), [1, 2]) is None


def test_a_new_target_replaces_an_ongoing_move():
    moving = start(Reassignment([1]), [2, 3])  # replicas [2, 3, 1]
    assert start(moving, [1, 4]) == Reassignment([1, 4, 2, 3], adding=[4], removing=[2, 3])


def test_cancel_drops_the_adding_replicas():
    moving = start(Reassignment([1, 2]), [3, 4])  # [3, 4, 1, 2]
    assert revert(moving, [1, 2, 3]) == ([1, 2], [1, 2])
    assert revert(moving, [3]) == ([1, 2], [])  # would need an unclean election


def test_leader_choice_keeps_a_staying_leader_else_the_first_in_sync_target():
    assert choose_leader(1, [3, 1], [1, 3], {1, 2, 3}) == 1
    assert choose_leader(2, [3, 1], [1, 3], {1, 2, 3}) == 3
    assert choose_leader(2, [3, 1], [1, 3], {1, 2}) == 1
    assert choose_leader(2, [3], [3], {1, 2}) == NO_LEADER


class _Metadata:
    def __init__(self, topics):
        self.topics = topics

    def topic(self, name):
        return self.topics.get(name)


def test_single_node_accepts_only_itself():
    metadata = _Metadata({"t": TopicMeta("t", random_topic_id(), 2, 1, {})})
    outcomes = single_node_outcomes(metadata, 1, [("t", 0, [1]), ("t", 1, [2]), ("t", 2, [1]), ("u", 0, [1]),
                                                  ("t", 0, None), ("t", 1, [1, 1])], True)
    assert {k: v[0] for k, v in outcomes.items()} == {
        ("t", 0): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, ("t", 1): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        ("t", 2): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ("u", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert single_node_outcomes(metadata, 1, [("t", 0, [1])], False) == {("t", 0): (ErrorCode.NONE, None)}


def test_an_ongoing_reassignment_lives_in_the_topic_znode_as_kafka_keeps_it():
    topic_id = random_topic_id()
    data = topic_znode(topic_id, {0: [3, 1, 2], 1: [1]}, {0: [3], 1: []}, {0: [2]})
    value = json.loads(data)
    assert (value["partitions"], value["adding_replicas"], value["removing_replicas"]) == (
        {"0": [3, 1, 2], "1": [1]}, {"0": [3]}, {"0": [2]})
    node = _parse_topic_node(data, SimpleNamespace(czxid=1, mzxid=2, version=3))
    assert node.topic_id == topic_id
    assert node.reassignment(0) == Reassignment([3, 1, 2], [3], [2])
    assert node.reassignment(1) == Reassignment([1]) and not node.reassignment(1).in_progress
    # Written by Kafka's own ZooKeeper-mode controller without the reassignment fields: none ongoing.
    legacy = json.dumps({"version": 1, "partitions": {"0": [1, 2]}}).encode()
    assert not _parse_topic_node(legacy, SimpleNamespace(czxid=1, mzxid=2, version=3)).reassignment(0).in_progress
