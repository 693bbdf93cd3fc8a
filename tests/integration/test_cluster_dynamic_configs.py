"""Client quotas and dynamic broker configs in cluster mode, as Kafka's ZooKeeper mode keeps them:
the broker that receives AlterClientQuotas / (Incremental)AlterConfigs writes ZooKeeper
(/config/users|clients|ips/..., /config/brokers/<default>|<id>, then a
/config/changes/config_change_ notification) and every broker applies the change live; a
restarted broker loads them. Two brokers on one standalone ZooKeeper.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from testing.cluster import running_cluster
from client import WireClient

from wire_cases import BROKER_RESOURCE, batch, describe_topic_configs, error_name, list_offset, produce, unique

CLIENTS = Path(__file__).resolve().parent.parent / "clients"
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 2, 3
SET, DELETE = 0, 1
MATCH_EXACT = 0


@pytest.fixture(scope="module")
def cluster(zookeeper_installed, tmp_path_factory):
    config = {"default.replication.factor": 2, "offsets.topic.replication.factor": 2,
              "log.retention.check.interval.ms": 200}
    with running_cluster(2, config=config, tmp_dir=tmp_path_factory.mktemp("dynamic-cluster")) as cluster:
        yield cluster


def client_of(cluster, node_id: int, client_id: str = "kafka-wire-client") -> WireClient:
    return WireClient(cluster.brokers[node_id].bootstrap, timeout=10, client_id=client_id)


def zk_json(cluster, path: str):
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=cluster.zookeeper.connect, timeout=5)
    zk.start(timeout=5)
    try:
        if path.endswith("/"):  # the children's JSON
            return [json.loads(zk.get(path + child)[0]) for child in sorted(zk.get_children(path.rstrip("/")))]
        return json.loads(zk.get(path)[0])
    finally:
        zk.stop()
        zk.close()


def alter_quotas(client, entity: dict, ops: dict):
    response = client.call("AlterClientQuotas", 1, {"entries": [{
        "entity": [{"entity_type": k, "entity_name": v} for k, v in entity.items()],
        "ops": [{"key": k, "value": v or 0.0, "remove": v is None} for k, v in ops.items()]}],
        "validate_only": False})
    return [(error_name(e.error_code), e.error_message) for e in response.entries]


def describe_quotas(client, entity_type: str, name: str) -> dict:
    response = client.call("DescribeClientQuotas", 1, {"components": [
        {"entity_type": entity_type, "match_type": MATCH_EXACT, "match": name}], "strict": False})
    assert response.error_code == 0, response.error_message
    return {tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)):
            {v.key: v.value for v in entry.values} for entry in response.entries}


def incremental(client, name: str, ops: list[tuple[str, int, str | None]]):
    response = client.call("IncrementalAlterConfigs", 1, {"resources": [{
        "resource_type": BROKER_RESOURCE, "resource_name": name,
        "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]}], "validate_only": False})
    result = response.responses[0]
    return error_name(result.error_code), result.error_message


def describe_broker(client, name: str, keys: list[str] | None = None):
    response = client.call("DescribeConfigs", 4, {"resources": [
        {"resource_type": BROKER_RESOURCE, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": True, "include_documentation": False})
    result = response.results[0]
    if result.error_code:
        return error_name(result.error_code), result.error_message
    return {c.name: (c.value, c.config_source) for c in result.configs}


def produce_throttle(client, topic: str, partition: int, nbytes: int = 4000) -> int:
    response = client.call("Produce", 9, {"transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": batch([b"v" * nbytes])}]}]})
    assert response.responses[0].partition_responses[0].error_code == 0
    return response.throttle_time_ms


def partition_led_by(cluster, topic: str, node_id: int) -> int:
    for t in cluster.metadata([topic]).topics:
        for p in t.partitions:
            if p.leader_id == node_id:
                return p.partition_index
    raise AssertionError(f"broker {node_id} leads no partition of {topic}")


def test_quota_set_on_one_broker_throttles_on_the_other(cluster):
    slow = unique("slow-client")
    with client_of(cluster, 1) as admin:
        assert alter_quotas(admin, {"client-id": slow}, {"producer_byte_rate": 1024}) == [("NONE", None)]
        assert alter_quotas(admin, {"user": "alice", "client-id": "app 1"},
                            {"consumer_byte_rate": 2048, "request_percentage": 12.5}) == [("NONE", None)]
    # Kafka's ZooKeeper layout (client ids sanitized), then a change notification naming the entity.
    assert zk_json(cluster, f"/config/clients/{slow}") == {"version": 1, "config": {"producer_byte_rate": "1024"}}
    assert zk_json(cluster, "/config/users/alice/clients/app%201") == {
        "version": 1, "config": {"consumer_byte_rate": "2048", "request_percentage": "12.5"}}
    notified = [n["entity_path"] for n in zk_json(cluster, "/config/changes/") if n.get("version") == 2]
    assert f"clients/{slow}" in notified and "users/alice/clients/app%201" in notified

    with client_of(cluster, 2) as other:
        cluster.wait_for(lambda: describe_quotas(other, "client-id", slow), 10, "the quota seen by broker 2")
        assert describe_quotas(other, "client-id", slow) == {(("client-id", slow),): {"producer_byte_rate": 1024.0}}
        assert describe_quotas(other, "user", "alice") == {
            (("client-id", "app 1"), ("user", "alice")): {"consumer_byte_rate": 2048.0, "request_percentage": 12.5}}

    topic = unique("quota-cluster")
    cluster.create_topic(topic, partitions=2, replication_factor=1)
    partition = partition_led_by(cluster, topic, 2)
    with client_of(cluster, 2, slow) as slow_client, client_of(cluster, 2, unique("free")) as free_client:
        # ~16 KB in a burst is well over 1 KB/s (the rate is measured over an 11 s span).
        assert max(produce_throttle(slow_client, topic, partition) for _ in range(4)) > 0
        assert [produce_throttle(free_client, topic, partition) for _ in range(4)] == [0] * 4

    # Removed through broker 2: broker 1 stops seeing it.
    with client_of(cluster, 2) as other:
        assert alter_quotas(other, {"user": "alice", "client-id": "app 1"},
                            {"consumer_byte_rate": None, "request_percentage": None}) == [("NONE", None)]
    with client_of(cluster, 1) as admin:
        cluster.wait_for(lambda: describe_quotas(admin, "user", "alice") == {}, 10, "the removal seen by broker 1")
    assert zk_json(cluster, "/config/users/alice/clients/app%201") == {"version": 1, "config": {}}


def test_dynamic_default_broker_config_applies_on_every_broker(cluster):
    topic, overridden = unique("dyn-default"), unique("dyn-override")
    cluster.create_topic(topic, partitions=1, replication_factor=2, configs={"internal.segment.bytes": 1024})
    cluster.create_topic(overridden, partitions=1, replication_factor=2, configs={"retention.ms": "86400000"})
    leader = cluster.leader_of(topic)
    old = int(time.time() * 1000) - 3_600_000
    with client_of(cluster, leader) as client:
        for _ in range(6):
            assert produce(client, topic, batch([b"x" * 400], timestamps=[old])).error_code == 0
        assert list_offset(client, topic, -2).offset == 0

    # Set through the broker that does not lead the topic: the leader applies it from ZooKeeper.
    other = 3 - leader
    with client_of(cluster, other) as client:
        assert incremental(client, "", [("log.retention.ms", SET, "60000")]) == ("NONE", None)
    assert zk_json(cluster, "/config/brokers/<default>") == {"version": 1, "config": {"log.retention.ms": "60000"}}
    assert {"version": 2, "entity_path": "brokers/<default>"} in zk_json(cluster, "/config/changes/")

    for node_id in (1, 2):
        with client_of(cluster, node_id) as client:
            cluster.wait_for(lambda: "log.retention.ms" in describe_broker(client, ""), 10,
                             f"the default on broker {node_id}")
            assert describe_broker(client, "")["log.retention.ms"] == ("60000", DYNAMIC_DEFAULT_BROKER_CONFIG)
            assert describe_broker(client, str(node_id), ["log.retention.ms"])["log.retention.ms"] == (
                "60000", DYNAMIC_DEFAULT_BROKER_CONFIG)
            described = describe_topic_configs(client, topic, ["retention.ms"])["retention.ms"]
            assert (described.value, described.config_source) == ("60000", DYNAMIC_DEFAULT_BROKER_CONFIG)
            assert describe_topic_configs(client, overridden, ["retention.ms"])["retention.ms"].value == "86400000"

    # Records an hour old are beyond the new 1 minute default: the leader deletes their segments.
    with client_of(cluster, leader) as client:
        cluster.wait_for(lambda: list_offset(client, topic, -2).offset > 0, 10, "old segments deleted")


def test_per_broker_config_applies_only_on_that_broker_and_everything_survives_restart(cluster):
    slow = unique("restart-client")
    with client_of(cluster, 2) as client:
        assert incremental(client, "2", [("max.connections", SET, "1000")]) == ("NONE", None)
        assert describe_broker(client, "2", ["max.connections"])["max.connections"] == ("1000", DYNAMIC_BROKER_CONFIG)
        # A later change, to know when broker 1 has handled the notification of the first.
        assert alter_quotas(client, {"client-id": slow}, {"producer_byte_rate": 4096}) == [("NONE", None)]
    assert zk_json(cluster, "/config/brokers/2") == {"version": 1, "config": {"max.connections": "1000"}}
    with client_of(cluster, 1) as client:
        # As in Kafka's ZooKeeper mode, a broker's own configs are changed and described through it.
        assert incremental(client, "2", [("max.connections", SET, "10")]) == (
            "INVALID_REQUEST", "Unexpected broker id, expected 1, but received 2")
        assert describe_broker(client, "2") == (
            "INVALID_REQUEST", "Unexpected broker id, expected 1 or empty string, but received 2")
        cluster.wait_for(lambda: describe_quotas(client, "client-id", slow), 10, "the quota seen by broker 1")
        mine = describe_broker(client, "1", ["max.connections"])["max.connections"]
        assert mine[1] != DYNAMIC_BROKER_CONFIG and mine[0] != "1000"
        assert incremental(client, "", [("log.retention.ms", SET, "120000")]) == ("NONE", None)

    cluster.brokers[2].restart()
    cluster.wait_for_brokers({1, 2})
    with client_of(cluster, 2) as client:
        assert describe_broker(client, "2", ["max.connections"])["max.connections"] == ("1000", DYNAMIC_BROKER_CONFIG)
        assert describe_broker(client, "")["log.retention.ms"] == ("120000", DYNAMIC_DEFAULT_BROKER_CONFIG)
        assert describe_quotas(client, "client-id", slow) == {(("client-id", slow),): {"producer_byte_rate": 4096.0}}
        # Changes after the restart still arrive.
        with client_of(cluster, 1) as admin:
            assert incremental(admin, "", [("log.retention.ms", DELETE, None)]) == ("NONE", None)
        cluster.wait_for(lambda: "log.retention.ms" not in describe_broker(client, ""), 10,
                         "the deleted default on broker 2")


def test_name_kafka_does_not_know_is_stored_in_zookeeper_and_seen_by_every_broker(cluster):
    """As Kafka, a dynamic broker config name no config defines (a plugin's) is stored, not refused."""
    name = "kafka.wire.made.up.name"
    with client_of(cluster, 1) as client:
        assert incremental(client, "", [(name, SET, "x")]) == ("NONE", None)
    assert zk_json(cluster, "/config/brokers/<default>")["config"][name] == "x"
    with client_of(cluster, 2) as client:
        cluster.wait_for(lambda: name in describe_broker(client, ""), 10, "the made-up default on broker 2")
        assert describe_broker(client, "2", [name]) == {name: (None, DYNAMIC_DEFAULT_BROKER_CONFIG)}
        assert incremental(client, "", [(name, DELETE, None)]) == ("NONE", None)
        assert name not in describe_broker(client, "")


def test_java_admin_against_the_cluster(cluster, java_kafka_clients):
    """Java's Admin (what kafka-configs.sh --bootstrap-server sends): a broker's own configs go to
    that broker, the default's and the quotas to any broker."""
    program = CLIENTS / "java" / "AdminConfigsCheck.java"
    command = [*java_kafka_clients("4.3.0").program(program), cluster.bootstrap]

    def java(*args) -> list[str]:
        done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout.splitlines()

    assert java("alter-broker", "2", "SET", "max.connections.per.ip", "500") == ["ALTERED"]
    assert java("alter-broker", "", "SET", "log.retention.ms", "7200000") == ["ALTERED"]
    user = unique("java-user")
    assert java("alter-quota", f"user={user}", "producer_byte_rate=4096") == ["ALTERED"]
    assert java("describe-broker", "2", "max.connections.per.ip") == [
        "CONFIG max.connections.per.ip 500 DYNAMIC_BROKER_CONFIG dynamic "
        "max.connections.per.ip=500@DYNAMIC_BROKER_CONFIG max.connections.per.ip=2147483647@DEFAULT_CONFIG"]
    for node_id in (1, 2):
        with client_of(cluster, node_id) as client:
            cluster.wait_for(lambda: describe_broker(client, "").get("log.retention.ms") == (
                "7200000", DYNAMIC_DEFAULT_BROKER_CONFIG), 10, f"the default on broker {node_id}")
            cluster.wait_for(lambda: describe_quotas(client, "user", user) == {
                (("user", user),): {"producer_byte_rate": 4096.0}}, 10, f"the quota on broker {node_id}")
    assert f"QUOTA {{user={user}}} {{producer_byte_rate=4096.0}}" in java("describe-quotas")
    assert java("alter-broker", "2", "DELETE", "max.connections.per.ip") == ["ALTERED"]
    assert java("alter-broker", "", "DELETE", "log.retention.ms") == ["ALTERED"]
