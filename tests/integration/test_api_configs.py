"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs as Apache Kafka answers them, and the
changed configs taking effect in the log.

Sources (apache/kafka): core/.../server/ConfigHelper.scala describeConfigs/createTopicConfigEntry/
configSynonyms, server-common/.../config/ServerTopicConfigSynonyms.java,
server/.../config/DynamicBrokerConfig.brokerConfigSynonyms,
metadata/.../controller/ConfigurationControlManager.java incrementalAlterConfigResource/getParts,
core/.../server/ControllerConfigurationValidator.scala.
"""

from __future__ import annotations

import time

import pytest

from testing.broker_process import running_broker
from client import WireClient

from wire_cases import (
    BROKER_RESOURCE, TOPIC_RESOURCE, batch, create_topic, describe_topic_configs, error_name, list_offset,
    produce, unique,
)

DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@pytest.fixture(scope="module")
def configured_broker(tmp_path_factory):
    """A broker with log.retention.ms set in its static config (and a fast retention check)."""
    config = {"log.retention.ms": 12345, "log.retention.check.interval.ms": 200}
    with running_broker(tmp_path_factory.mktemp("configs"), config=config) as broker:
        yield broker


@pytest.fixture
def client(configured_broker):
    with WireClient(configured_broker.bootstrap) as c:
        yield c


def _synonyms(entry) -> list[tuple[str, str, int]]:
    return [(s.name, s.value, s.source) for s in entry.synonyms]


def _alter(client, topic: str, configs: dict, validate_only: bool = False):
    response = client.call("AlterConfigs", 2, {"resources": [{
        "resource_type": TOPIC_RESOURCE, "resource_name": topic,
        "configs": [{"name": k, "value": v} for k, v in configs.items()]}], "validate_only": validate_only})
    return response.responses[0]


def _incremental(client, topic: str, ops: list[tuple[str, int, str | None]], validate_only: bool = False):
    response = client.call("IncrementalAlterConfigs", 1, {"resources": [{
        "resource_type": TOPIC_RESOURCE, "resource_name": topic,
        "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]}],
        "validate_only": validate_only})
    return response.responses[0]


# -- DescribeConfigs -----------------------------------------------------------------------------------------


def test_sources_and_synonyms(client):
    """ConfigHelper.createTopicConfigEntry: synonyms are the topic override, then the broker's static
    settings, then broker defaults; the source is the first synonym's. For retention.ms the broker
    synonyms are log.retention.ms/minutes/hours, listed from log.retention.ms on (configSynonyms'
    dropWhile), so without log.retention.ms set anywhere there are none and the source is
    DEFAULT_CONFIG."""
    topic = unique("describe")
    create_topic(client, topic, configs={"cleanup.policy": "compact"})
    configs = describe_topic_configs(client, topic)
    retention = configs["retention.ms"]
    assert (retention.value, retention.config_source) == ("12345", STATIC_BROKER_CONFIG)
    assert _synonyms(retention) == [("log.retention.ms", "12345", STATIC_BROKER_CONFIG),
                                    ("log.retention.hours", "168", DEFAULT_CONFIG)]
    cleanup = configs["cleanup.policy"]
    assert (cleanup.value, cleanup.config_source, cleanup.read_only) == ("compact", DYNAMIC_TOPIC_CONFIG, False)
    assert _synonyms(cleanup) == [("cleanup.policy", "compact", DYNAMIC_TOPIC_CONFIG),
                                  ("log.cleanup.policy", "delete", DEFAULT_CONFIG)]
    segment = configs["segment.bytes"]
    assert (segment.value, segment.config_source) == ("1073741824", DEFAULT_CONFIG)
    assert _synonyms(segment) == [("log.segment.bytes", "1073741824", DEFAULT_CONFIG)]
    roll = configs["segment.ms"]
    assert (roll.value, roll.config_source, _synonyms(roll)) == ("604800000", DEFAULT_CONFIG, [])


def test_retention_without_a_broker_setting(shared_broker):
    with WireClient(shared_broker.bootstrap) as client:
        topic = unique("describe-default")
        create_topic(client, topic)
        retention = describe_topic_configs(client, topic)["retention.ms"]
        assert (retention.value, retention.config_source, _synonyms(retention)) == ("604800000", DEFAULT_CONFIG, [])


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_versions(client, version):
    topic = unique(f"describe-v{version}")
    create_topic(client, topic, configs={"retention.ms": 999})
    configs = describe_topic_configs(client, topic, version=version)
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("999", DYNAMIC_TOPIC_CONFIG)
    assert [s.name for s in configs["retention.ms"].synonyms] == ["retention.ms", "log.retention.ms",
                                                                   "log.retention.hours"]
    if version >= 3:
        assert configs["retention.ms"].config_type == LONG


def test_configuration_keys_filter_types_and_documentation(client):
    topic = unique("describe-keys")
    create_topic(client, topic)
    keys = ["retention.ms", "segment.bytes", "cleanup.policy", "preallocate", "min.cleanable.dirty.ratio",
            "compression.type"]
    configs = describe_topic_configs(client, topic, keys, documentation=True)
    assert sorted(configs) == sorted(keys)
    assert {k: c.config_type for k, c in configs.items()} == {
        "retention.ms": LONG, "segment.bytes": INT, "cleanup.policy": LIST, "preallocate": BOOLEAN,
        "min.cleanable.dirty.ratio": DOUBLE, "compression.type": STRING}
    assert all(c.documentation for c in configs.values())
    plain = describe_topic_configs(client, topic, ["retention.ms"], synonyms=False)
    assert plain["retention.ms"].documentation is None and plain["retention.ms"].synonyms == []
    everything = describe_topic_configs(client, topic, [])  # an empty list asks for every config
    assert len(everything) > 20 and "max.message.bytes" in everything


def test_describe_unknown_and_invalid_topics(client):
    for name, expected in ((unique("missing"), "UNKNOWN_TOPIC_OR_PARTITION"), ("bad name!", "INVALID_TOPIC_EXCEPTION")):
        response = client.call("DescribeConfigs", 4, {"resources": [
            {"resource_type": TOPIC_RESOURCE, "resource_name": name, "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False})
        assert error_name(response.results[0].error_code) == expected
        assert response.results[0].configs == []


def test_describe_broker(client):
    """The broker's own id lists its configs with their sources; the empty name means the
    cluster-wide dynamic defaults (none here); another id is INVALID_REQUEST."""
    def describe(name):
        return client.call("DescribeConfigs", 4, {"resources": [
            {"resource_type": BROKER_RESOURCE, "resource_name": name, "configuration_keys": None}],
            "include_synonyms": True, "include_documentation": False}).results[0]

    mine = describe("1")
    assert mine.error_code == 0
    configs = {c.name: c for c in mine.configs}
    assert (configs["log.retention.ms"].value, configs["log.retention.ms"].config_source) == \
        ("12345", STATIC_BROKER_CONFIG)
    assert (configs["num.partitions"].value, configs["num.partitions"].config_source) == ("1", DEFAULT_CONFIG)
    assert _synonyms(configs["log.retention.hours"]) == [("log.retention.hours", "168", DEFAULT_CONFIG)]
    default = describe("")
    assert (default.error_code, default.configs) == (0, [])
    for name in ("2", "broker"):
        assert error_name(describe(name).error_code) == "INVALID_REQUEST"


# -- AlterConfigs --------------------------------------------------------------------------------------------


def test_alter_configs_replaces_every_override(client):
    topic = unique("alter")
    create_topic(client, topic, configs={"retention.ms": 1000, "segment.bytes": 2_000_000})
    assert _alter(client, topic, {"cleanup.policy": "compact"}).error_code == 0
    configs = describe_topic_configs(client, topic)
    assert configs["cleanup.policy"].config_source == DYNAMIC_TOPIC_CONFIG
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("12345", STATIC_BROKER_CONFIG)
    assert configs["segment.bytes"].config_source == DEFAULT_CONFIG


def test_alter_configs_validate_only_and_errors(client):
    topic = unique("alter-errors")
    create_topic(client, topic, configs={"retention.ms": 1000})
    assert _alter(client, topic, {"retention.ms": "2000"}, validate_only=True).error_code == 0
    assert describe_topic_configs(client, topic)["retention.ms"].value == "1000"
    for configs in ({"no.such.config": "1"}, {"retention.ms": "abc"}):
        answer = _alter(client, topic, configs)
        assert error_name(answer.error_code) == "INVALID_CONFIG" and answer.error_message
    # A null value is refused before the topic is looked at, as Kafka 4.3.0's broker does
    # (ConfigAdminManager.preprocess): INVALID_REQUEST "Null value not supported for : retention.ms".
    answer = _alter(client, topic, {"retention.ms": None})
    assert (error_name(answer.error_code), answer.error_message) == (
        "INVALID_REQUEST", "Null value not supported for : retention.ms")
    assert describe_topic_configs(client, topic)["retention.ms"].value == "1000"
    assert error_name(_alter(client, unique("missing"), {"retention.ms": "1"}).error_code) == \
        "UNKNOWN_TOPIC_OR_PARTITION"


# -- IncrementalAlterConfigs ------------------------------------------------------------------------------------


def test_incremental_set_delete_append_subtract(client):
    """ConfigurationControlManager.incrementalAlterConfigResource; APPEND/SUBTRACT start from the
    override or, without one, from the config's own default (getParts)."""
    topic = unique("incremental")
    create_topic(client, topic, configs={"segment.bytes": 2_000_000})
    answer = _incremental(client, topic, [("retention.ms", SET, "5000"), ("segment.bytes", DELETE, None),
                                          ("cleanup.policy", APPEND, "compact")])
    assert answer.error_code == 0, answer.error_message
    configs = describe_topic_configs(client, topic)
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("5000", DYNAMIC_TOPIC_CONFIG)
    assert configs["segment.bytes"].config_source == DEFAULT_CONFIG
    assert configs["cleanup.policy"].value == "delete,compact"
    assert _incremental(client, topic, [("cleanup.policy", SUBTRACT, "delete")]).error_code == 0
    assert describe_topic_configs(client, topic)["cleanup.policy"].value == "compact"
    assert _incremental(client, topic, [("cleanup.policy", APPEND, "compact")]).error_code == 0
    assert describe_topic_configs(client, topic)["cleanup.policy"].value == "compact"


def test_incremental_errors_change_nothing(client):
    topic = unique("incremental-errors")
    create_topic(client, topic, configs={"retention.ms": 1000})
    cases = [
        ([("retention.ms", APPEND, "5")], "INVALID_CONFIG"),  # not a LIST
        ([("retention.ms", SET, "abc")], "INVALID_CONFIG"),
        ([("no.such.config", SET, "1")], "INVALID_CONFIG"),
        ([("retention.ms", SET, "1"), ("retention.ms", SET, "2")], "INVALID_REQUEST"),
    ]
    for ops, expected in cases:
        answer = _incremental(client, topic, ops)
        assert error_name(answer.error_code) == expected, ops
    assert _incremental(client, topic, [("retention.ms", SET, "7")], validate_only=True).error_code == 0
    assert describe_topic_configs(client, topic)["retention.ms"].value == "1000"
    assert error_name(_incremental(client, unique("missing"), [("retention.ms", SET, "1")]).error_code) == \
        "UNKNOWN_TOPIC_OR_PARTITION"


def test_kafka_4_minimum_segment_size_on_every_path(client):
    """Kafka 4.x refuses segment.bytes below 1 MiB (KIP-1030) on CreateTopics, AlterConfigs and
    IncrementalAlterConfigs with the same message; its test-only internal.segment.bytes takes any size
    and is described only where set."""
    message = "Invalid value 200 for configuration segment.bytes: Value must be at least 1048576"
    topic = unique("segment-minimum")
    response = client.call("CreateTopics", 7, {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1,
                                                           "configs": [{"name": "segment.bytes", "value": "200"}]}],
                                               "timeout_ms": 10000, "validate_only": False})
    assert (error_name(response.topics[0].error_code), response.topics[0].error_message) == ("INVALID_CONFIG", message)
    create_topic(client, topic)
    answer = _alter(client, topic, {"segment.bytes": "200"})
    assert (error_name(answer.error_code), answer.error_message) == ("INVALID_CONFIG", message)
    answer = _incremental(client, topic, [("segment.bytes", SET, "200")])
    assert (error_name(answer.error_code), answer.error_message) == ("INVALID_CONFIG", message)
    assert _incremental(client, topic, [("segment.bytes", SET, "1048576")]).error_code == 0
    assert "internal.segment.bytes" not in describe_topic_configs(client, topic)
    assert _incremental(client, topic, [("internal.segment.bytes", SET, "200")]).error_code == 0
    described = describe_topic_configs(client, topic)
    assert (described["internal.segment.bytes"].value, described["internal.segment.bytes"].config_source) == (
        "200", DYNAMIC_TOPIC_CONFIG)


# -- configs in effect ---------------------------------------------------------------------------------------------


def _segment_files(broker, topic: str) -> list[str]:
    return sorted(p.name for p in (broker.log_dir / f"{topic}-0").glob("*.log"))


def test_changed_configs_take_effect_in_the_log_and_survive_restart(broker):
    with WireClient(broker.bootstrap) as client:
        topic = unique("in-effect")
        create_topic(client, topic)
        for i in range(4):
            produce(client, topic, batch([b"x" * 300]))
        assert len(_segment_files(broker, topic)) == 1
        # Kafka 4.x's test-only segment size (segment.bytes may not be below 1 MiB).
        assert _incremental(client, topic, [("internal.segment.bytes", SET, "1000")]).error_code == 0
        for i in range(8):
            produce(client, topic, batch([b"y" * 300]))
        assert len(_segment_files(broker, topic)) >= 3  # rolled at the new size
    broker.restart()
    with WireClient(broker.bootstrap) as client:
        configs = describe_topic_configs(client, topic)
        assert (configs["internal.segment.bytes"].value, configs["internal.segment.bytes"].config_source) == \
            ("1000", DYNAMIC_TOPIC_CONFIG)
        before = len(_segment_files(broker, topic))
        for i in range(4):
            produce(client, topic, batch([b"z" * 300]))
        assert len(_segment_files(broker, topic)) > before  # still rolling at 1000 bytes after the restart


def test_retention_change_deletes_old_segments(client, configured_broker):
    topic = unique("retention")
    create_topic(client, topic, configs={"internal.segment.bytes": 500, "retention.ms": -1})
    old = int(time.time() * 1000) - 3_600_000
    for i in range(5):
        produce(client, topic, batch([b"old" * 100], timestamps=[old]))
    assert list_offset(client, topic, -2).offset == 0
    time.sleep(0.5)  # a few retention checks pass: retention.ms=-1 keeps everything
    assert list_offset(client, topic, -2).offset == 0
    assert _incremental(client, topic, [("retention.ms", SET, "60000")]).error_code == 0
    deadline = time.monotonic() + 10
    while list_offset(client, topic, -2).offset == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list_offset(client, topic, -2).offset >= 4  # every rolled segment of hour-old records is gone
    assert list_offset(client, topic, -1).offset == 5


def test_confluent_admin_sees_what_it_changed(shared_broker):
    """A real Admin client (librdkafka) alters incrementally and describes."""
    admin_module = pytest.importorskip("confluent_kafka.admin")
    admin = admin_module.AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    with WireClient(shared_broker.bootstrap) as client:
        topic = unique("confluent-configs")
        create_topic(client, topic)
    resource = admin_module.ConfigResource(admin_module.ResourceType.TOPIC, topic, incremental_configs=[
        admin_module.ConfigEntry("cleanup.policy", "compact",
                                 incremental_operation=admin_module.AlterConfigOpType.APPEND),
        admin_module.ConfigEntry("retention.ms", "4242", incremental_operation=admin_module.AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=15)
    described = admin.describe_configs([admin_module.ConfigResource(admin_module.ResourceType.TOPIC, topic)])
    entries = next(iter(described.values())).result(timeout=15)
    assert entries["cleanup.policy"].value == "delete,compact"
    assert entries["retention.ms"].value == "4242"
    assert entries["retention.ms"].source == admin_module.ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["segment.bytes"].source == admin_module.ConfigSource.DEFAULT_CONFIG.value


@pytest.mark.parametrize("name, value", [("message.format.version", "0.10.0.0"),
                                         ("message.downconversion.enable", "true"),
                                         ("message.timestamp.difference.max.ms", "1000")])
def test_topic_configs_kafka_4_removed_are_unknown(shared_broker, name, value):
    """Kafka 4.0 removed these topic configs: Kafka 4.3 answers INVALID_CONFIG "Unknown topic config
    name" to CreateTopics, AlterConfigs and IncrementalAlterConfigs setting one (so librdkafka's
    0092_mixed_msgver, which sets message.format.version=0.10.0.0, fails against Kafka 4.3 too)."""
    from client import WireClient

    topic = unique("removed-config")
    unknown = (40, f"Unknown topic config name: {name}")
    with WireClient(shared_broker.bootstrap) as client:
        created = client.call("CreateTopics", 7, {"topics": [
            {"name": topic, "num_partitions": 1, "replication_factor": 1,
             "configs": [{"name": name, "value": value}]}], "timeout_ms": 5000})
        assert (created.topics[0].error_code, created.topics[0].error_message) == unknown
        create_topic(client, topic)
        altered = client.call("AlterConfigs", 2, {"resources": [
            {"resource_type": 2, "resource_name": topic, "configs": [{"name": name, "value": value}]}]})
        assert (altered.responses[0].error_code, altered.responses[0].error_message) == unknown
        incremental = client.call("IncrementalAlterConfigs", 1, {"resources": [
            {"resource_type": 2, "resource_name": topic,
             "configs": [{"name": name, "config_operation": 0, "value": value}]}]})
        assert (incremental.responses[0].error_code, incremental.responses[0].error_message) == unknown
        assert name not in describe_topic_configs(client, topic, [])


def test_topic_config_table_is_kafka_4_3s(client):
    """Every config Kafka 4.3 lists for a topic, tiered storage's remote.log.* (KIP-950) included, with
    Kafka's documentation text."""
    topic = unique("kafka-43-table")
    create_topic(client, topic)
    configs = describe_topic_configs(client, topic, [], documentation=True)
    assert {"remote.log.copy.disable", "remote.log.delete.on.disable"} <= set(configs)
    copy = configs["remote.log.copy.disable"]
    assert (copy.value, copy.config_type, copy.config_source, copy.read_only) == ("false", BOOLEAN, 5, False)
    assert copy.documentation.startswith("Determines whether tiered data for a topic should become read only")
    assert configs["retention.ms"].documentation.startswith(
        "This configuration controls the maximum time we will retain a log")
    assert len(configs) == 33
