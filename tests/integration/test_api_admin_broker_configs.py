"""Dynamic broker configs (KIP-226) as Apache Kafka handles them: IncrementalAlterConfigs and
AlterConfigs on ConfigResource(BROKER, "") (the cluster-wide default) and (BROKER, "<id>"), their
sources and synonyms in DescribeConfigs, their taking effect at once (topic configs without an
override follow the new broker default: retention deletes old segments without a restart), and
their surviving a restart. Through WireClient and Java's Admin (kafka-configs.sh --entity-type
brokers calls the same).

Sources (apache/kafka): core/.../server/ConfigAdminManager.scala (preprocess,
validateBrokerConfigChange, prepareIncrementalConfigs), DynamicBrokerConfig (validateConfigs,
AllDynamicConfigs), core/.../server/ConfigHelper.scala (createBrokerConfigEntry, configSynonyms).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from testing.broker_process import running_broker
from client import WireClient

from wire_cases import (
    BROKER_RESOURCE, batch, create_topic, describe_topic_configs, error_name, list_offset, produce,
    unique,
)

CLIENTS = Path(__file__).resolve().parent.parent / "clients"
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 2, 3, 4, 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def incremental(client, name: str, ops: list[tuple[str, int, str | None]], validate_only: bool = False):
    response = client.call("IncrementalAlterConfigs", 1, {"resources": [{
        "resource_type": BROKER_RESOURCE, "resource_name": name,
        "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]}],
        "validate_only": validate_only})
    result = response.responses[0]
    return error_name(result.error_code), result.error_message


def alter(client, name: str, configs: dict[str, str | None], validate_only: bool = False):
    response = client.call("AlterConfigs", 2, {"resources": [{
        "resource_type": BROKER_RESOURCE, "resource_name": name,
        "configs": [{"name": k, "value": v} for k, v in configs.items()]}], "validate_only": validate_only})
    result = response.responses[0]
    return error_name(result.error_code), result.error_message


def describe_broker(client, name: str, keys: list[str] | None = None) -> dict:
    response = client.call("DescribeConfigs", 4, {"resources": [
        {"resource_type": BROKER_RESOURCE, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": True, "include_documentation": False})
    result = response.results[0]
    assert result.error_code == 0, result.error_message
    return {c.name: (c.value, c.config_source, c.read_only, [(s.name, s.value, s.source) for s in c.synonyms])
            for c in result.configs}


@pytest.fixture
def configured(tmp_path):
    config = {"log.retention.hours": 100, "log.retention.check.interval.ms": 200}
    with running_broker(tmp_path / "dynamic", config=config) as broker:
        yield broker


def test_default_and_per_broker_configs_sources_and_synonyms(configured):
    with WireClient(configured.bootstrap) as client:
        assert describe_broker(client, "") == {}
        assert incremental(client, "", [("log.retention.ms", SET, "180000000"), ("log.segment.bytes", SET, "2000000")]) \
            == ("NONE", None)
        assert incremental(client, "1", [("log.retention.ms", SET, "36000000")]) == ("NONE", None)
        # The default broker lists only its own dynamic configs, with only their default synonyms.
        assert describe_broker(client, "") == {
            "log.retention.ms": ("180000000", DYNAMIC_DEFAULT_BROKER_CONFIG, False,
                                 [("log.retention.ms", "180000000", DYNAMIC_DEFAULT_BROKER_CONFIG)]),
            "log.segment.bytes": ("2000000", DYNAMIC_DEFAULT_BROKER_CONFIG, False,
                                  [("log.segment.bytes", "2000000", DYNAMIC_DEFAULT_BROKER_CONFIG)]),
        }
        mine = describe_broker(client, "1", ["log.retention.hours", "log.retention.ms", "log.segment.bytes",
                                             "log.dirs", "num.partitions"])
        assert mine["log.retention.ms"] == ("36000000", DYNAMIC_BROKER_CONFIG, False, [
            ("log.retention.ms", "36000000", DYNAMIC_BROKER_CONFIG),
            ("log.retention.ms", "180000000", DYNAMIC_DEFAULT_BROKER_CONFIG),
            ("log.retention.hours", "100", STATIC_BROKER_CONFIG),
            ("log.retention.hours", "168", DEFAULT_CONFIG)])
        # Only a topic config's first broker synonym is dynamic (Kafka's DynamicLogConfig).
        assert mine["log.retention.hours"][:3] == ("100", STATIC_BROKER_CONFIG, True)
        assert mine["log.segment.bytes"][:2] == ("2000000", DYNAMIC_DEFAULT_BROKER_CONFIG)
        assert mine["log.dirs"][2] is True and mine["num.partitions"][2] is True
        # A topic without overrides takes its defaults from there.
        topic = unique("dyn")
        create_topic(client, topic)
        configs = describe_topic_configs(client, topic, ["retention.ms", "segment.bytes"])
        assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == (
            str(10 * 3_600_000), DYNAMIC_BROKER_CONFIG)
        assert (configs["segment.bytes"].value, configs["segment.bytes"].config_source) == (
            "2000000", DYNAMIC_DEFAULT_BROKER_CONFIG)
        assert [(s.name, s.value, s.source) for s in configs["segment.bytes"].synonyms] == [
            ("log.segment.bytes", "2000000", DYNAMIC_DEFAULT_BROKER_CONFIG),
            ("log.segment.bytes", "1073741824", DEFAULT_CONFIG)]
        assert incremental(client, "1", [("log.segment.bytes", SET, "3000000")]) == ("NONE", None)
        configs = describe_topic_configs(client, topic, ["segment.bytes"])
        assert [(s.name, s.value, s.source) for s in configs["segment.bytes"].synonyms] == [
            ("log.segment.bytes", "3000000", DYNAMIC_BROKER_CONFIG),
            ("log.segment.bytes", "2000000", DYNAMIC_DEFAULT_BROKER_CONFIG),
            ("log.segment.bytes", "1073741824", DEFAULT_CONFIG)]
        # DELETE goes back to the next layer.
        assert incremental(client, "1", [("log.retention.ms", DELETE, None)]) == ("NONE", None)
        assert describe_broker(client, "1", ["log.retention.ms"])["log.retention.ms"][:2] == (
            "180000000", DYNAMIC_DEFAULT_BROKER_CONFIG)
        # The legacy AlterConfigs replaces a resource's whole set.
        assert alter(client, "", {"log.cleanup.policy": "compact"}) == ("NONE", None)
        assert set(describe_broker(client, "")) == {"log.cleanup.policy"}
        assert describe_topic_configs(client, topic, ["cleanup.policy"])["cleanup.policy"].value == "compact"
        # APPEND starts from the resource's value, else the default.
        assert incremental(client, "1", [("log.cleanup.policy", APPEND, "compact")]) == ("NONE", None)
        assert describe_broker(client, "1", ["log.cleanup.policy"])["log.cleanup.policy"][:2] == (
            "delete,compact", DYNAMIC_BROKER_CONFIG)
        # validate_only changes nothing.
        assert incremental(client, "", [("message.max.bytes", SET, "5000")], validate_only=True) == ("NONE", None)
        assert "message.max.bytes" not in describe_broker(client, "")


def test_refused_changes_as_kafka(configured):
    with WireClient(configured.bootstrap) as client:
        assert incremental(client, "", [("log.dirs", SET, "/elsewhere")]) == (
            "INVALID_REQUEST", "Cannot update these configs dynamically: [log.dirs]")
        assert incremental(client, "1", [("process.roles", SET, "broker")]) == (
            "INVALID_REQUEST", "Cannot update these configs dynamically: [process.roles]")
        assert incremental(client, "", [("log.retention.ms", SET, "soon")])[0] == "INVALID_REQUEST"
        assert incremental(client, "", [("log.segment.bytes", APPEND, "1")]) == (
            "INVALID_CONFIG", "Config value append is not allowed for config key: log.segment.bytes")
        assert incremental(client, "", [("log.retention.ms", SET, None)]) == (
            "INVALID_REQUEST", "Null value not supported for : log.retention.ms")
        assert incremental(client, "", [("log.retention.ms", SET, "1"), ("log.retention.ms", SET, "2")]) == (
            "INVALID_REQUEST", "Error due to duplicate config keys")
        assert incremental(client, "7", [("log.retention.ms", SET, "1")]) == (
            "INVALID_REQUEST", "Unexpected broker id, expected 1, but received 7")
        assert incremental(client, "one", [("log.retention.ms", SET, "1")]) == (
            "INVALID_REQUEST", "Node id must be an integer, but it is: one")
        assert alter(client, "", {"num.partitions": "4"}) == (
            "INVALID_REQUEST", "Cannot update these configs dynamically: [num.partitions]")
        assert describe_broker(client, "") == {}


def test_names_kafka_does_not_know_are_stored_and_described_as_kafka(configured):
    """Kafka 4.3 accepts and stores a dynamic broker config name it does not know (a plugin's, or one
    Kafka 4.0 removed), and describes it with its value hidden (unknown type: sensitive), read-only;
    its own per-broker keys (sasl.kerberos.*, as librdkafka's test 0081 sets) only on a broker id."""
    made_up, removed = "kafka.wire.made.up.name", "log.message.format.version"
    with WireClient(configured.bootstrap) as client:
        assert incremental(client, "1", [(made_up, SET, "x"), (removed, SET, "3.0-IV1")]) == ("NONE", None)
        assert alter(client, "", {made_up: "y"}) == ("NONE", None)
        assert incremental(client, "1", [("sasl.kerberos.min.time.before.relogin", SET, "58000")]) == ("NONE", None)
        assert incremental(client, "", [("sasl.kerberos.min.time.before.relogin", SET, "58000")]) == (
            "INVALID_REQUEST", "Cannot update these configs at default cluster level, broker id must be specified: "
                               "[sasl.kerberos.min.time.before.relogin]")
        assert incremental(client, "1", [("ssl.keystore.location", SET, "/k")]) == (
            "INVALID_REQUEST", "These security configs can be dynamically updated only per-listener using the "
                               "listener prefix: [ssl.keystore.location]")
        assert describe_broker(client, "1", [made_up, removed]) == {
            made_up: (None, DYNAMIC_BROKER_CONFIG, True,
                      [(made_up, None, DYNAMIC_BROKER_CONFIG), (made_up, None, DYNAMIC_DEFAULT_BROKER_CONFIG)]),
            removed: (None, DYNAMIC_BROKER_CONFIG, True, [(removed, None, DYNAMIC_BROKER_CONFIG)])}
        assert made_up in describe_broker(client, "1")
        assert describe_broker(client, "") == {
            made_up: (None, DYNAMIC_DEFAULT_BROKER_CONFIG, True, [(made_up, None, DYNAMIC_DEFAULT_BROKER_CONFIG)])}
        assert incremental(client, "1", [(made_up, DELETE, None)]) == ("NONE", None)
        assert describe_broker(client, "1", [made_up])[made_up][1] == DYNAMIC_DEFAULT_BROKER_CONFIG


@pytest.mark.parametrize("name, value", [("log.retention.hours", "10"), ("log.retention.minutes", "600"),
                                         ("log.roll.hours", "10"), ("log.roll.jitter.hours", "1"),
                                         ("log.flush.scheduler.interval.ms", "1000")])
def test_only_the_first_broker_synonym_of_a_topic_config_is_dynamic(configured, name, value):
    """Kafka 4.3 (DynamicLogConfig.ReconfigurableConfigs: ServerTopicConfigSynonyms' first synonyms)
    refuses log.retention.hours/minutes, log.roll.hours, log.roll.jitter.hours,
    log.flush.scheduler.interval.ms at run time and describes them read-only; log.retention.ms,
    log.roll.ms, log.roll.jitter.ms, log.flush.interval.ms are dynamic."""
    refused = ("INVALID_REQUEST", f"Cannot update these configs dynamically: [{name}]")
    with WireClient(configured.bootstrap) as client:
        for resource in ("", "1"):
            assert incremental(client, resource, [(name, SET, value)]) == refused
            assert alter(client, resource, {name: value}) == refused
        assert describe_broker(client, "") == {}
        assert describe_broker(client, "1", [name])[name][2] is True
        first = {"log.roll.hours": "log.roll.ms", "log.roll.jitter.hours": "log.roll.jitter.ms",
                 "log.flush.scheduler.interval.ms": "log.flush.interval.ms"}.get(name, "log.retention.ms")
        assert describe_broker(client, "1", [first])[first][2] is False


def test_dynamic_retention_deletes_old_segments_and_survives_restart(configured):
    with WireClient(configured.bootstrap) as client:
        topic = unique("dyn-retention")
        create_topic(client, topic, configs={"internal.segment.bytes": 1024})
        old = int(time.time() * 1000) - 3_600_000
        for _ in range(6):
            assert produce(client, topic, batch([b"x" * 400], timestamps=[old])).error_code == 0
        assert list_offset(client, topic, -2).offset == 0
        # Records an hour old are within 100 hours (static); a 1 minute default deletes them.
        assert incremental(client, "", [("log.retention.ms", SET, "60000")]) == ("NONE", None)
        deadline = time.monotonic() + 10
        while list_offset(client, topic, -2).offset == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list_offset(client, topic, -2).offset > 0
    configured.restart()
    with WireClient(configured.bootstrap) as client:
        assert describe_broker(client, "")["log.retention.ms"][:2] == ("60000", DYNAMIC_DEFAULT_BROKER_CONFIG)
        assert describe_topic_configs(client, topic, ["retention.ms"])["retention.ms"].value == "60000"


def test_java_admin_incremental_alter_and_describe(configured, java_kafka_clients):
    command = [*java_kafka_clients("4.3.0").program(CLIENTS / "java" / "AdminConfigsCheck.java"),
               configured.bootstrap]

    def java(*args) -> list[str]:
        done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout.splitlines()

    assert java("alter-broker", "", "SET", "log.retention.ms", "7200000") == ["ALTERED"]
    assert java("alter-broker", "1", "SET", "max.connections.per.ip", "500") == ["ALTERED"]
    assert java("describe-broker", "") == [
        "CONFIG log.retention.ms 7200000 DYNAMIC_DEFAULT_BROKER_CONFIG dynamic "
        "log.retention.ms=7200000@DYNAMIC_DEFAULT_BROKER_CONFIG"]
    assert java("describe-broker", "1", "log.retention.ms", "max.connections.per.ip", "log.dirs") == [
        "CONFIG log.dirs " + str(configured.log_dir) + " STATIC_BROKER_CONFIG read-only "
        "log.dirs=" + str(configured.log_dir) + "@STATIC_BROKER_CONFIG",
        "CONFIG log.retention.ms 7200000 DYNAMIC_DEFAULT_BROKER_CONFIG dynamic "
        "log.retention.ms=7200000@DYNAMIC_DEFAULT_BROKER_CONFIG log.retention.hours=100@STATIC_BROKER_CONFIG "
        "log.retention.hours=168@DEFAULT_CONFIG",
        "CONFIG max.connections.per.ip 500 DYNAMIC_BROKER_CONFIG dynamic "
        "max.connections.per.ip=500@DYNAMIC_BROKER_CONFIG max.connections.per.ip=2147483647@DEFAULT_CONFIG",
    ]
    refused = java("alter-broker", "", "SET", "log.dirs", "/x")
    assert refused == ["ERROR InvalidRequestException Cannot update these configs dynamically: [log.dirs]"]


def test_dynamic_connection_limit_applies_to_new_connections(configured):
    with WireClient(configured.bootstrap) as client:
        assert incremental(client, "1", [("max.connections.per.ip", SET, "1")]) == ("NONE", None)
        # This connection is the one allowed; another from the same address is closed at once.
        with pytest.raises(Exception):
            with WireClient(configured.bootstrap, timeout=3) as second:
                second.call("ApiVersions", 3, {"client_software_name": "t", "client_software_version": "1"})
        assert incremental(client, "1", [("max.connections.per.ip", DELETE, None)]) == ("NONE", None)
    with WireClient(configured.bootstrap) as first, WireClient(configured.bootstrap) as second:
        for c in (first, second):
            assert c.call("ApiVersions", 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0
