"""`kafka-wire configs`, the kafka-configs.sh of kafka-wire: broker defaults, per-broker, topic and
group configs, and user / client / ip quotas, with kafka-configs.sh's output (ConfigCommand)."""

from __future__ import annotations

import subprocess
import sys

from client import WireClient

from wire_cases import create_topic, unique


def kafka_wire(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", "configs", *args], capture_output=True, text=True,
                          timeout=60)


def ok(*args: str) -> list[str]:
    done = kafka_wire(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.splitlines()


def test_broker_and_topic_configs(broker):
    b = ["--bootstrap-server", broker.bootstrap]
    assert ok(*b, "--entity-type", "brokers", "--entity-default", "--alter", "--add-config",
              "log.retention.ms=86400000,log.cleanup.policy=[delete,compact]") == [
        "Completed updating default config for brokers in the cluster."]
    assert ok(*b, "--entity-type", "brokers", "--entity-default", "--describe") == [
        "Default configs for brokers in the cluster are:",
        "  log.cleanup.policy=delete,compact sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleanup.policy=delete,compact}",
        "  log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000}",
    ]
    assert ok(*b, "--broker", "1", "--alter", "--add-config", "max.connections=1000") == [
        "Completed updating config for broker 1."]
    assert ok(*b, "--entity-type", "brokers", "--entity-name", "1", "--describe") == [
        "Dynamic configs for broker 1 are:",
        "  max.connections=1000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:max.connections=1000, "
        "DEFAULT_CONFIG:max.connections=2147483647}"]
    everything = ok(*b, "--entity-type", "brokers", "--entity-name", "1", "--describe", "--all")
    assert everything[0] == "All configs for broker 1 are:"
    assert ("  log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
            "log.retention.ms=86400000, DEFAULT_CONFIG:log.retention.hours=168}") in everything
    refused = kafka_wire(*b, "--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "log.dirs=/x")
    assert refused.returncode == 1 and "Cannot update these configs dynamically: [log.dirs]" in refused.stderr
    missing = kafka_wire(*b, "--broker-defaults", "--alter", "--delete-config", "log.segment.bytes")
    assert missing.returncode == 1 and "Invalid config(s): log.segment.bytes" in missing.stderr
    assert ok(*b, "--broker-defaults", "--alter", "--delete-config", "log.cleanup.policy") == [
        "Completed updating default config for brokers in the cluster."]

    topic = unique("configs-tool")
    with WireClient(broker.bootstrap) as client:
        create_topic(client, topic)
    assert ok(*b, "--entity-type", "topics", "--entity-name", topic, "--alter", "--add-config", "retention.ms=1000") \
        == [f"Completed updating config for topic {topic}."]
    assert ok(*b, "--topic", topic, "--describe") == [
        f"Dynamic configs for topic {topic} are:",
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000, DEFAULT_CONFIG:log.retention.hours=168}"]


def test_client_quotas(broker):
    b = ["--bootstrap-server", broker.bootstrap]
    assert ok(*b, "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-default",
              "--alter", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=1000000000") == [
        "Completed updating config for user alice."]
    assert ok(*b, "--client", "app", "--alter", "--add-config", "request_percentage=25.5") == [
        "Completed updating config for client app."]
    assert ok(*b, "--ip-defaults", "--alter", "--add-config", "connection_creation_rate=10") == [
        "Completed updating default config for ips in the cluster."]
    assert ok(*b, "--entity-type", "users", "--entity-type", "clients", "--describe") == [
        "Quota configs for user-principal 'alice', the default client-id are "
        "consumer_byte_rate=1.0E9, producer_byte_rate=1048576.0"]
    assert ok(*b, "--entity-type", "clients", "--describe") == [
        "Quota configs for client-id 'app' are request_percentage=25.5"]
    assert ok(*b, "--entity-type", "ips", "--describe") == [
        "Quota configs for the default ip are connection_creation_rate=10.0"]
    assert ok(*b, "--client", "app", "--alter", "--delete-config", "request_percentage") == [
        "Completed updating config for client app."]
    assert ok(*b, "--entity-type", "clients", "--describe") == []
    refused = kafka_wire(*b, "--client", "app", "--alter", "--add-config", "bogus=1")
    assert refused.returncode == 1
    assert "Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected config names: bogus" \
        in refused.stderr


def test_group_configs(broker):
    b = ["--bootstrap-server", broker.bootstrap]
    group = unique("configs-tool-group")
    g = ("--entity-type", "groups", "--entity-name", group)
    assert ok(*b, *g, "--describe") == [f"The group '{group}' doesn't exist and doesn't have dynamic config."]
    assert ok(*b, *g, "--alter", "--add-config", "consumer.session.timeout.ms=50000,share.auto.offset.reset=earliest") \
        == [f"Completed updating config for group {group}."]
    assert ok(*b, "--group", group, "--describe") == [
        f"Dynamic configs for group {group} are:",
        "  consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
        "consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}",
        "  share.auto.offset.reset=earliest sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
        "share.auto.offset.reset=earliest, DEFAULT_CONFIG:share.auto.offset.reset=latest}"]
    everything = ok(*b, *g, "--describe", "--all")
    assert everything[0] == f"All configs for group {group} are:" and len(everything) == 18
    assert f"Dynamic configs for group {group} are:" in ok(*b, "--entity-type", "groups", "--describe")
    refused = kafka_wire(*b, *g, "--alter", "--add-config", "consumer.session.timeout.ms=1000")
    assert refused.returncode == 1 and "consumer.session.timeout.ms must be greater than or equal to " \
        "group.consumer.min.session.timeout.ms" in refused.stderr
    nameless = kafka_wire(*b, "--entity-type", "groups", "--alter", "--add-config", "consumer.session.timeout.ms=1")
    assert nameless.returncode == 1 and "An entity name must be specified with --alter of groups" in nameless.stderr
    # As Kafka 4.3's tool: deleting a group config that is not set is no error.
    assert ok(*b, *g, "--alter", "--delete-config", "consumer.session.timeout.ms,streams.session.timeout.ms") == [
        f"Completed updating config for group {group}."]
