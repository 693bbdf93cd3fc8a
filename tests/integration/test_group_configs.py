"""Group configs (config resource type 32): set and described with confluent-kafka's AdminClient as
with Kafka 4.3, checked against the broker's bounds, kept across a restart, listed by
ListConfigResources, kept when the group is deleted, and used by the KIP-848 coordinator (the
heartbeat interval a member is given); in ZooKeeper cluster mode, stored in ZooKeeper and seen by
every broker."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from client import WireClient
from testing.cluster import running_cluster

from wire_cases import create_topic, error_name, unique

GROUP = 32
SET, DELETE = 0, 1
GROUP_CONFIG, DEFAULT_CONFIG = 8, 5


def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def alter(client: WireClient, group: str, *ops):
    response = client.call("IncrementalAlterConfigs", 1, {"resources": [{
        "resource_type": GROUP, "resource_name": group,
        "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]}], "validate_only": False})
    answer = response.responses[0]
    return error_name(answer.error_code), answer.error_message


def describe(client: WireClient, group: str, keys=None) -> dict:
    response = client.call("DescribeConfigs", 4, {"resources": [{"resource_type": GROUP, "resource_name": group,
                                                                 "configuration_keys": keys}],
                                                  "include_synonyms": True, "include_documentation": False})
    return {c.name: (c.value, c.config_source, [(s.name, s.value, s.source) for s in c.synonyms])
            for c in response.results[0].configs}


def listed_groups(client: WireClient) -> list[str]:
    response = client.call("ListConfigResources", 1, {"resource_types": [GROUP]})
    return [r.resource_name for r in response.config_resources]


def test_admin_client_sets_and_describes_group_configs(broker):
    group = unique("configured")
    tool = admin(broker)  # kept: a future of a destroyed client fails
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("consumer.session.timeout.ms", "50000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    for future in tool.incremental_alter_configs([resource]).values():
        assert future.result() is None
    described = next(iter(tool.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values())).result()
    assert len(described) == 17
    session = described["consumer.session.timeout.ms"]
    assert (session.value, session.source) == ("50000", GROUP_CONFIG)
    assert [(s.name, s.value, s.source) for s in session.synonyms.values()] == [
        ("consumer.session.timeout.ms", "50000", GROUP_CONFIG), ("group.consumer.session.timeout.ms", "45000", DEFAULT_CONFIG)]
    assert (described["share.auto.offset.reset"].value, described["share.auto.offset.reset"].source) == (
        "earliest", GROUP_CONFIG)
    heartbeat = described["consumer.heartbeat.interval.ms"]
    assert (heartbeat.value, heartbeat.source) == ("5000", DEFAULT_CONFIG)

    refused = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("consumer.session.timeout.ms", "30000", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(Exception) as error:
        next(iter(tool.incremental_alter_configs([refused]).values())).result()
    assert "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms" \
        in str(error.value)


def test_checks_storage_listing_and_restart(broker):
    group, other = unique("stored"), unique("never-set")
    with WireClient(broker.bootstrap) as client:
        assert alter(client, group, ("nope", SET, "1")) == ("INVALID_CONFIG", "Unknown group config name: nope")
        assert alter(client, group, ("share.delivery.count.limit", SET, "11")) == (
            "INVALID_CONFIG", "share.delivery.count.limit must be less than or equal to "
                              "group.share.max.delivery.count.limit")
        assert alter(client, group, ("share.isolation.level", SET, "READ_COMMITTED")) == (
            "INVALID_CONFIG", "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be "
                              "one of: read_committed, read_uncommitted")
        assert alter(client, "", ("consumer.session.timeout.ms", SET, "50000")) == (
            "INVALID_REQUEST", "Default group resources are not allowed.")
        assert alter(client, group, ("share.renew.acknowledge.enable", SET, "FALSE"),
                     ("consumer.heartbeat.interval.ms", SET, " 6000 ")) == ("NONE", None)
        assert group in listed_groups(client) and other not in listed_groups(client)
    broker.restart()
    with WireClient(broker.bootstrap) as client:
        described = describe(client, group, ["share.renew.acknowledge.enable", "consumer.heartbeat.interval.ms"])
        assert described == {
            "share.renew.acknowledge.enable": ("false", GROUP_CONFIG, [
                ("share.renew.acknowledge.enable", "false", GROUP_CONFIG),
                ("share.renew.acknowledge.enable", "true", DEFAULT_CONFIG)]),
            "consumer.heartbeat.interval.ms": ("6000", GROUP_CONFIG, [
                ("consumer.heartbeat.interval.ms", "6000", GROUP_CONFIG),
                ("group.consumer.heartbeat.interval.ms", "5000", DEFAULT_CONFIG)])}
        assert alter(client, group, ("share.renew.acknowledge.enable", DELETE, None),
                     ("consumer.heartbeat.interval.ms", DELETE, None)) == ("NONE", None)
        assert group not in listed_groups(client)
        assert describe(client, group, ["consumer.heartbeat.interval.ms"])["consumer.heartbeat.interval.ms"][:2] == (
            "5000", DEFAULT_CONFIG)


def _join(client: WireClient, group: str, topic: str):
    """A new member's first heartbeat, once the group's coordinator is ready (the offsets topic is
    created on the first FindCoordinator)."""
    for _ in range(300):
        if client.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": [group]}).coordinators[0] \
                .error_code == 0:
            break
        time.sleep(0.1)
    return client.call("ConsumerGroupHeartbeat", 1, {
        "group_id": group, "member_id": str(uuid.uuid4()), "member_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 30000, "subscribed_topic_names": [topic], "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": []})


def test_consumer_group_gets_its_heartbeat_interval_and_keeps_configs_when_deleted(broker):
    topic, configured, plain = unique("hb"), unique("hb-configured"), unique("hb-plain")
    with WireClient(broker.bootstrap) as client:
        create_topic(client, topic)
        assert alter(client, configured, ("consumer.heartbeat.interval.ms", SET, "7000")) == ("NONE", None)
        joined, other = _join(client, configured, topic), _join(client, plain, topic)
        assert (joined.error_code, joined.heartbeat_interval_ms) == (0, 7000)
        assert (other.error_code, other.heartbeat_interval_ms) == (0, 5000)
        # The member leaves (epoch -1), the group is empty and deleted; its configs stay, as in Kafka 4.3.
        left = client.call("ConsumerGroupHeartbeat", 1, {
            "group_id": configured, "member_id": joined.member_id, "member_epoch": -1, "instance_id": None,
            "rack_id": None, "rebalance_timeout_ms": -1, "subscribed_topic_names": None,
            "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": None})
        assert left.error_code == 0
        deleted = client.call("DeleteGroups", 2, {"groups_names": [configured]})
        assert error_name(deleted.results[0].error_code) == "NONE"
        assert describe(client, configured, ["consumer.heartbeat.interval.ms"])["consumer.heartbeat.interval.ms"][:2] \
            == ("7000", GROUP_CONFIG)


@pytest.fixture(scope="module")
def cluster(zookeeper_installed, tmp_path_factory):
    with running_cluster(2, config={"offsets.topic.replication.factor": 2},
                         tmp_dir=tmp_path_factory.mktemp("group-configs-cluster")) as cluster:
        yield cluster


def test_cluster_keeps_group_configs_in_zookeeper(cluster):
    from kazoo.client import KazooClient

    group = unique("zk-group")
    first, second = (WireClient(b.bootstrap, timeout=10) for b in cluster.brokers.values())
    with first, second:
        assert alter(first, group, ("consumer.session.timeout.ms", SET, "55000")) == ("NONE", None)
        zk = KazooClient(hosts=cluster.zookeeper.connect, timeout=5)
        zk.start(timeout=5)
        try:
            assert json.loads(zk.get(f"/config/groups/{group}")[0]) == {
                "version": 1, "config": {"consumer.session.timeout.ms": "55000"}}
        finally:
            zk.stop()
            zk.close()
        # The other broker follows the change notification.
        cluster.wait_for(lambda: describe(second, group, ["consumer.session.timeout.ms"])
                           ["consumer.session.timeout.ms"][:2] == ("55000", GROUP_CONFIG))
        assert group in listed_groups(second)
        assert alter(second, group, ("consumer.session.timeout.ms", DELETE, None)) == ("NONE", None)
        cluster.wait_for(lambda: group not in listed_groups(first))
