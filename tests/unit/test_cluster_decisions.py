"""Cluster mode's pure decisions: replica assignment, leader election, ISR changes, znode formats."""

from __future__ import annotations

import json
import random
import uuid
from collections import Counter
from types import SimpleNamespace

import pytest

from broker.cluster.controller import elect_preferred, elect_without
from broker.cluster.replica_assignment import InvalidReplicationFactor, assign_replicas
from broker.cluster.replica_fetcher import whole_batches
from broker.cluster.zk_metadata import (
    BrokerInfo,
    LeaderAndIsr,
    broker_registration,
    config_znode,
    kafka_uuid,
    parse_config_znode,
    parse_kafka_uuid,
    topic_znode,
)
from kafka_wire.record_codec import Record, build_batch


# -- assignment -------------------------------------------------------------------------------------


def test_assignment_matches_kafkas_for_fixed_start():
    # AdminUtils.assignReplicasToBrokers with startIndex 0 and nextReplicaShift 0 over brokers 0..4
    # (Kafka's AdminRackAwareTest/ReplicaAssignmentTest expectation).
    expected = {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
                5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}
    assert assign_replicas([0, 1, 2, 3, 4], 10, 3, start_index=0, next_replica_shift=0) == expected


def test_assignment_spreads_leaders_and_never_repeats_a_broker():
    assignment = assign_replicas([3, 1, 2], 6, 3, rng=random.Random(7))
    assert Counter(replicas[0] for replicas in assignment.values()) == {1: 2, 2: 2, 3: 2}
    for replicas in assignment.values():
        assert sorted(replicas) == [1, 2, 3]


def test_assignment_of_added_partitions_continues_the_pattern():
    whole = assign_replicas([1, 2, 3], 6, 2, start_index=1, next_replica_shift=0)
    added = assign_replicas([1, 2, 3], 3, 2, start_index=1, next_replica_shift=0, start_partition=3)
    assert added == {p: whole[p] for p in (3, 4, 5)}


def test_assignment_refuses_more_replicas_than_brokers():
    with pytest.raises(InvalidReplicationFactor):
        assign_replicas([1, 2], 1, 3)
    with pytest.raises(InvalidReplicationFactor):
        assign_replicas([1, 2], 1, 0)


# -- leader election ----------------------------------------------------------------------------------


def state(leader, isr, epoch=5):
    return LeaderAndIsr(leader, epoch, list(isr), controller_epoch=1, zk_version=3)


def test_dead_leader_is_replaced_by_the_first_live_isr_member_in_assignment_order():
    decide = elect_without(dead={1}, live={2, 3}, unclean=False)
    assert decide(state(1, [1, 3, 2]), [1, 2, 3]) == (2, [3, 2])


def test_no_live_isr_member_means_no_leader_without_unclean_election():
    decide = elect_without(dead={1}, live={2, 3}, unclean=False)
    # 2 and 3 are out of sync: electing one would lose committed records.
    assert decide(state(1, [1]), [1, 2, 3]) == (-1, [1])
    assert elect_without(dead={1}, live={2, 3}, unclean=True)(state(1, [1]), [1, 2, 3]) == (2, [2])


def test_dead_follower_leaves_the_isr_and_offline_partition_gets_its_leader_back():
    assert elect_without(dead={3}, live={1, 2}, unclean=False)(state(1, [1, 2, 3]), [1, 2, 3]) == (1, [1, 2])
    assert elect_without(dead={3}, live={1, 2}, unclean=False)(state(1, [1, 2]), [1, 2, 3]) is None
    # Broker 1 comes back: the offline partition whose last ISR member it is gets it as leader.
    assert elect_without(dead=set(), live={1, 2, 3}, unclean=False)(state(-1, [1]), [3, 2, 1]) == (1, [1])
    assert elect_without(dead=set(), live={2, 3}, unclean=False)(state(-1, [1]), [3, 2, 1]) is None


def test_preferred_leader_returns_only_when_alive_and_in_sync():
    assert elect_preferred({1, 2, 3})(state(2, [2, 1]), [1, 2, 3]) == (1, [2, 1])
    assert elect_preferred({1, 2, 3})(state(2, [2, 3]), [1, 2, 3]) is None
    assert elect_preferred({2, 3})(state(2, [2, 1]), [1, 2, 3]) is None
    assert elect_preferred({1, 2, 3})(state(1, [1, 2]), [1, 2, 3]) is None


# -- znodes ---------------------------------------------------------------------------------------------


def test_partition_state_znode_is_kafkas_format():
    written = json.loads(LeaderAndIsr(2, 7, [2, 1], 3).to_json())
    assert written == {"controller_epoch": 3, "leader": 2, "version": 1, "leader_epoch": 7, "isr": [2, 1]}
    read = LeaderAndIsr.from_znode(json.dumps(written).encode(), SimpleNamespace(version=4, mzxid=99))
    assert (read.leader, read.leader_epoch, read.isr, read.zk_version) == (2, 7, [2, 1], 4)


def test_topic_and_config_znodes_round_trip():
    topic_id = uuid.uuid4()
    value = json.loads(topic_znode(topic_id, {1: [2, 3], 0: [1, 2]}))
    assert value["partitions"] == {"0": [1, 2], "1": [2, 3]} and value["version"] == 3
    assert parse_kafka_uuid(value["topic_id"]) == topic_id and "=" not in kafka_uuid(topic_id)
    stored = config_znode({"retention.ms": 1000, "cleanup.policy": ["compact", "delete"]})
    assert json.loads(stored)["config"] == {"retention.ms": "1000", "cleanup.policy": "compact,delete"}
    assert parse_config_znode(stored) == {"retention.ms": 1000, "cleanup.policy": ["compact", "delete"]}


def test_broker_registration_round_trips_endpoints():
    data = broker_registration([("PLAINTEXT", "127.0.0.1", 9092), ("SSL", "::1", 9093)],
                               {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}, "rack-a")
    value = json.loads(data)
    assert value["endpoints"] == ["PLAINTEXT://127.0.0.1:9092", "SSL://::1:9093"]
    assert (value["host"], value["port"], value["rack"]) == ("127.0.0.1", 9092, "rack-a")
    info = BrokerInfo.from_znode(4, data, SimpleNamespace(czxid=17))
    assert info.endpoint("SSL") == ("::1", 9093) and info.endpoint(None) == ("127.0.0.1", 9092)
    assert info.epoch == 17


def test_only_whole_fetched_batches_are_appended():
    one = build_batch([Record(0, 0, None, b"a")])
    two = build_batch([Record(0, 0, None, b"bb")])
    assert bytes(whole_batches(one + two)) == one + two
    assert bytes(whole_batches(one + two[:20])) == one
    assert whole_batches(two[:20]) is None and whole_batches(b"") is None


def test_the_cluster_settings_are_read_from_the_broker_config_with_kafka_defaults():
    from broker.config import BrokerConfig

    config = BrokerConfig({"replica.lag.time.max.ms": "500", "leader.imbalance.check.interval.seconds": "2",
                           "auto.leader.rebalance.enable": "false"})
    assert config["replica.lag.time.max.ms"] == 500
    assert config["leader.imbalance.check.interval.seconds"] == 2
    assert config["auto.leader.rebalance.enable"] is False
    defaults = BrokerConfig({})
    assert (defaults["replica.fetch.wait.max.ms"], defaults["replica.fetch.max.bytes"],
            defaults["controlled.shutdown.max.retries"], defaults["leader.imbalance.per.broker.percentage"]) == (
        500, 1048576, 3, 10)
    assert defaults["zookeeper.connection.timeout.ms"] is None  # then zookeeper.session.timeout.ms applies


def test_a_restarted_leader_hands_over_to_a_live_isr_member_or_leads_in_a_new_epoch():
    from broker.cluster.controller import restarted_leader

    assert restarted_leader(1, {1, 2, 3})(state(1, [1, 2, 3]), [1, 2, 3]) == (2, [2, 3])
    assert restarted_leader(1, {1, 2, 3})(state(1, [1]), [1, 2, 3]) == (1, [1])
    assert restarted_leader(1, {1, 2, 3})(state(2, [1, 2]), [1, 2, 3]) is None
