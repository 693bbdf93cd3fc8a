"""ListConfigResources (74, KIP-1142; v0 is KIP-714's ListClientMetricsResources) as Apache Kafka
answers it (KafkaApis.handleListConfigResources), through the wire client and Java's
Admin.listConfigResources / listClientMetricsResources; the answers were compared with Kafka 4.3.0.
Groups are listed once they have configs of their own (broker/group_configs.py); kafka-wire has no
client-metrics resources (it refuses to create them), so that type lists nothing; brokers, broker
loggers and topics are this cluster's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kafka_wire.acls import AclOperation as Op, ResourceType as Res
from client import WireClient

from tests.integration.test_security_acls import acl_broker, grant, login  # noqa: F401 (acl_broker: a fixture)
from wire_cases import create_topic, error_name, unique

JAVA_PROGRAM = Path(__file__).parent.parent / "clients" / "java" / "ListConfigResources.java"
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap) as c:
        yield c


def listing(client, version: int = 1, types: list[int] | None = None) -> tuple[str, list[tuple[int, str]]]:
    response = client.call("ListConfigResources", version, {"resource_types": types or []})
    return error_name(response.error_code), [(r.resource_type, r.resource_name) for r in response.config_resources]


def topic_names(client) -> list[str]:
    return sorted(t.name for t in client.call("Metadata", 12, {"topics": None}).topics)


def test_every_type_kafka_lists(client):
    topic = unique("config-resources")
    create_topic(client, topic)
    error, resources = listing(client)
    assert error == "NONE"
    # Kafka's order: groups, client metrics, broker loggers, brokers, topics.
    assert resources[:2] == [(BROKER_LOGGER, "1"), (BROKER, "1")]
    assert [name for kind, name in resources[2:] if kind == TOPIC] == topic_names(client)
    assert {kind for kind, _ in resources} == {BROKER_LOGGER, BROKER, TOPIC} and (TOPIC, topic) in resources


@pytest.mark.parametrize("types,kinds", [([TOPIC], {TOPIC}), ([BROKER, BROKER_LOGGER], {BROKER, BROKER_LOGGER}),
                                         ([GROUP, CLIENT_METRICS], set())])
def test_only_the_types_asked_for(client, types, kinds):
    error, resources = listing(client, types=types)
    assert error == "NONE" and {kind for kind, _ in resources} == kinds


@pytest.mark.parametrize("types", [[0], [3], [TOPIC, 64]])
def test_a_type_kafka_does_not_list_is_unsupported_version(client, types):
    assert listing(client, types=types) == ("UNSUPPORTED_VERSION", [])


def test_v0_lists_client_metrics_resources_only(client):
    assert listing(client, version=0) == ("NONE", [])


def set_group_config(client, group: str) -> None:
    response = client.call("IncrementalAlterConfigs", 1, {"validate_only": False, "resources": [{
        "resource_type": GROUP, "resource_name": group,
        "configs": [{"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "50000"}]}]})
    assert error_name(response.responses[0].error_code) == "NONE"


def test_groups_with_configs_are_listed_client_metrics_cannot_be_created(client):
    """A group is a config resource once it has a config of its own; kafka-wire refuses client-metrics
    configs (Kafka would accept them), so that type lists nothing."""
    group = unique("listed-group")
    set_group_config(client, group)
    response = client.call("ListConfigResources", 1, {"resource_types": [GROUP, CLIENT_METRICS]})
    assert (group, GROUP) in [(r.resource_name, r.resource_type) for r in response.config_resources]
    assert CLIENT_METRICS not in [r.resource_type for r in response.config_resources]
    response = client.call("IncrementalAlterConfigs", 1, {"validate_only": False, "resources": [{
        "resource_type": CLIENT_METRICS, "resource_name": "cm",
        "configs": [{"name": "metrics", "config_operation": 0, "value": "org.apache.kafka.producer."}]}]})
    assert error_name(response.responses[0].error_code) == "INVALID_REQUEST"


def test_java_admin(shared_broker, client, java_kafka_clients):
    topic, group = unique("config-resources-java"), unique("config-resources-java-group")
    create_topic(client, topic)
    set_group_config(client, group)
    command = java_kafka_clients("4.3.0").program(JAVA_PROGRAM)
    done = subprocess.run([*command, shared_broker.bootstrap, "all", "BROKER,BROKER_LOGGER", "GROUP,CLIENT_METRICS",
                           "UNKNOWN"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    every, brokers, groups, unknown, client_metrics = [json.loads(line) for line in done.stdout.strip().splitlines()[-5:]]
    assert ["TOPIC", topic] in every["resources"] and ["BROKER", "1"] in every["resources"]
    assert brokers == {"types": "BROKER,BROKER_LOGGER", "resources": [["BROKER", "1"], ["BROKER_LOGGER", "1"]]}
    assert ["GROUP", group] in groups["resources"] and all(kind == "GROUP" for kind, _ in groups["resources"])
    assert unknown == {"types": "UNKNOWN", "error": "UnsupportedVersionException"}
    assert client_metrics == {"clientMetrics": []}


def test_needs_describe_configs_on_the_cluster(acl_broker):
    with login(acl_broker, "admin") as admin, login(acl_broker, "alice") as alice:
        assert listing(alice) == ("CLUSTER_AUTHORIZATION_FAILED", [])
        grant(admin, Res.CLUSTER, "kafka-cluster", Op.DESCRIBE_CONFIGS)
        error, resources = listing(alice)
        assert error == "NONE" and (BROKER, "1") in resources
