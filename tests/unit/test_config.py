"""Broker configuration: server.properties parsing, typed values, the one table of topic configs,
and where DescribeConfigs says a topic config's value comes from."""

from __future__ import annotations

import pytest

from broker.config import (
    BROKER_KEYS, TOPIC_KEYS, TOPIC_TO_BROKER, BrokerConfig, ConfigError, ConfigSource, ConfigType,
    parse_properties, parse_topic_configs,
)
from log.config import TOPIC_CONFIGS, InvalidConfig, LogConfig

STATIC, DEFAULT, DYNAMIC = ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG, ConfigSource.DYNAMIC_TOPIC_CONFIG


# -- server.properties ----------------------------------------------------------------------------------------


def test_properties_separators_and_comments():
    text = "# comment\n! comment\n\n  a=1\nb : 2\nc 3\nd\te = 4\nempty=\nbare\n  # indented comment\n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "e = 4", "empty": "", "bare": ""}


def test_properties_continuation_lines():
    text = "listeners=PLAINTEXT://a:1,\\\n          PLAINTEXT2://b:2\nx=1\\\n"
    assert parse_properties(text) == {"listeners": "PLAINTEXT://a:1,PLAINTEXT2://b:2", "x": "1"}


def test_properties_even_backslashes_do_not_continue():
    assert parse_properties("path=C:\\\\\nnext=1\n") == {"path": "C:\\", "next": "1"}


def test_properties_escapes():
    assert parse_properties("key\\:with\\=seps = tab\\there\\u00e9\n") == {"key:with=seps": "tab\there\u00e9"}


def test_properties_comment_marker_inside_a_continuation_is_data():
    assert parse_properties("a=1\\\n# not a comment\n") == {"a": "1# not a comment"}


# -- typed broker values ---------------------------------------------------------------------------------------


def test_broker_values_are_typed_and_remembered_as_explicit():
    config = BrokerConfig({"num.partitions": " 3 ", "auto.create.topics.enable": "FALSE", "some.unknown": "x"})
    assert config["num.partitions"] == 3 and config["auto.create.topics.enable"] is False
    assert config.explicit == {"num.partitions", "auto.create.topics.enable"}
    assert config.original["some.unknown"] == "x"
    assert config.unknown == ["some.unknown"]


@pytest.mark.parametrize("props,message", [
    ({"num.partitions": "abc"}, "Invalid value abc for configuration num.partitions: Not a number of type INT"),
    ({"num.partitions": "0"}, "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
    ({"num.partitions": "3000000000"}, "Not a number of type INT"),
    ({"delete.topic.enable": "yes"}, "Expected value to be either true or false"),
    ({"log.cleanup.policy": "delete,forever"}, "String must be one of: compact, delete"),
    ({"listeners": "127.0.0.1:9092"}, "Invalid value 127.0.0.1:9092 for configuration listeners: Unable to parse "
                                      "127.0.0.1:9092 to a broker endpoint"),
    ({"advertised.listeners": "PLAINTEXT://host:port"}, "Invalid value PLAINTEXT://host:port for configuration "
                                                        "advertised.listeners: Unable to parse"),
    ({"listeners": "PLAINTEXT://h:1,PLAINTEXT://h:2"}, "listeners: Each listener must have a different name"),
    ({"listeners": "PLAINTEXT://h:99999"}, "invalid port number 99999"),
])
def test_bad_broker_values(props, message):
    with pytest.raises(ConfigError, match=message):
        BrokerConfig(props)


def test_load_combines_file_and_overrides(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("num.partitions=2\nlog.retention.hours=1\n")
    config = BrokerConfig.load(str(path), ["num.partitions=5"])
    assert (config["num.partitions"], config.retention_ms()) == (5, 3_600_000)
    with pytest.raises(ConfigError, match="key=value"):
        BrokerConfig.load(None, ["num.partitions"])


# -- one table of topic configs -----------------------------------------------------------------------------------


def test_topic_keys_are_the_log_layer_table():
    assert list(TOPIC_KEYS) == list(TOPIC_CONFIGS)
    for name, key in TOPIC_KEYS.items():
        definition = TOPIC_CONFIGS[name]
        assert (key.type, key.default, key.minimum, key.maximum, key.choices) == \
            (ConfigType[definition.type], definition.default, definition.minimum, definition.maximum,
             definition.choices)


def test_every_broker_synonym_exists_and_has_the_topic_default():
    """A broker's default for a topic config's synonym is the topic config's own default (after the
    unit conversion of the *.hours synonyms), so a fresh broker's topics get Kafka's defaults."""
    config = BrokerConfig()
    defaults = config.topic_defaults()
    for topic_key, broker_key in TOPIC_TO_BROKER.items():
        assert topic_key in TOPIC_KEYS and broker_key in BROKER_KEYS
        assert defaults[topic_key] == TOPIC_KEYS[topic_key].default, topic_key
    assert set(defaults) == set(TOPIC_KEYS)


def test_topic_defaults_follow_broker_settings():
    config = BrokerConfig({"log.retention.hours": "2", "log.roll.ms": "5000", "log.segment.bytes": "2097152",
                           "log.flush.interval.ms": "100", "compression.type": "zstd"})
    defaults = config.topic_defaults()
    assert (defaults["retention.ms"], defaults["segment.ms"], defaults["segment.bytes"]) == (7_200_000, 5000, 2_097_152)
    assert (defaults["flush.ms"], defaults["compression.type"]) == (100, "zstd")
    assert LogConfig(defaults).segment_bytes == 2_097_152


def test_log_config_parses_strings_and_typed_values_with_kafka_validation():
    config = LogConfig({"retention.ms": "-1", "cleanup.policy": ["compact"], "preallocate": "true"})
    assert (config.retention_ms, config.cleanup_policy, config["preallocate"]) == (-1, ["compact"], True)
    with pytest.raises(InvalidConfig, match="Value must be at least -1"):
        LogConfig({"retention.ms": -2})
    with pytest.raises(InvalidConfig, match="no more than 1"):
        LogConfig({"min.cleanable.dirty.ratio": "1.5"})


@pytest.mark.parametrize("configs,message", [
    ({"no.such": "1"}, "Unknown topic config name: no.such"),
    ({"retention.ms": None, "segment.ms": None}, "Null value not supported for topic configs: retention.ms,segment.ms"),
    ({"segment.bytes": "1048575"}, "^Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576$"),
    ({"compression.type": "brotli"}, "String must be one of"),
    ({"message.timestamp.type": "Whenever"}, "String must be one of: CreateTime, LogAppendTime"),
])
def test_topic_config_errors(configs, message):
    with pytest.raises(ConfigError, match=message):
        parse_topic_configs(configs)


# Kafka 4.3's answers (its LogConfig.validate, run on these values), word for word.
@pytest.mark.parametrize("configs,message", [
    ({"segment.bytes": "200"}, "Invalid value 200 for configuration segment.bytes: Value must be at least 1048576"),
    ({"compression.gzip.level": "0"},
     "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
    ({"compression.gzip.level": "10"},
     "Invalid value 10 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
    ({"leader.replication.throttled.replicas": "0:1, x"},
     "Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: "
     "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following "
     "format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."),
    ({"follower.replication.throttled.replicas": "*,0:1"},
     "Invalid value [*, 0:1] for configuration follower.replication.throttled.replicas: "
     "follower.replication.throttled.replicas must be the literal '*' or a list of replicas in the following "
     "format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."),
    ({"cleanup.policy": "delete,"}, "Configuration 'cleanup.policy' values must not be empty."),
    ({"cleanup.policy": "compact,Delete"},
     "Invalid value Delete for configuration cleanup.policy: String must be one of: compact, delete"),
    ({"retention.ms": " -5 "}, "Invalid value -5 for configuration retention.ms: Value must be at least -1"),
    ({"retention.ms": "1_000"}, "Invalid value 1_000 for configuration retention.ms: Not a number of type LONG"),
    ({"message.timestamp.type": " Whenever "},
     "Invalid value Whenever for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"),
    ({"min.cleanable.dirty.ratio": "1e3"},
     "Invalid value 1000.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ({"min.cleanable.dirty.ratio": "inf"},
     "Invalid value inf for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"),
    ({"internal.segment.bytes": "big"}, "Invalid value big for configuration internal.segment.bytes: Not a number of type INT"),
    # Of several invalid values, the first in Kafka's definition order (segment.bytes before retention.ms).
    ({"retention.ms": "y", "segment.bytes": "x"}, "Invalid value x for configuration segment.bytes: Not a number of type INT"),
])
def test_topic_config_messages_are_kafka_4s(configs, message):
    with pytest.raises(ConfigError) as refused:
        parse_topic_configs(configs, BrokerConfig().topic_defaults())
    assert str(refused.value) == message


def test_topic_config_values_kafka_4_accepts():
    accepted = parse_topic_configs({
        "segment.bytes": "1048576", "compression.gzip.level": "-1", "leader.replication.throttled.replicas": "0:1,",
        "follower.replication.throttled.replicas": "*", "cleanup.policy": "delete,delete", "retention.ms": "+5",
        "min.cleanable.dirty.ratio": "0.5f", "internal.segment.bytes": "-5"})
    assert accepted["leader.replication.throttled.replicas"] == ["0:1", ""]  # described as given: "0:1,"
    assert accepted["cleanup.policy"] == ["delete", "delete"] and accepted["retention.ms"] == 5
    assert accepted["min.cleanable.dirty.ratio"] == 0.5 and accepted["internal.segment.bytes"] == -5
    assert parse_topic_configs({"cleanup.policy": ""}) == {"cleanup.policy": []}  # infinite retention


def test_rules_across_topic_configs_see_the_broker_defaults():
    """LogConfig.validateValues on the effective config: min.compaction.lag.ms against the broker's
    log.cleaner.max.compaction.lag.ms too; tiered storage is off in kafka-wire."""
    defaults = BrokerConfig({"log.cleaner.max.compaction.lag.ms": "5"}).topic_defaults()
    with pytest.raises(ConfigError, match=r"^conflict topic config setting min.compaction.lag.ms \(10\) > "
                                          r"max.compaction.lag.ms \(5\)$"):
        parse_topic_configs({"min.compaction.lag.ms": "10"}, defaults)
    with pytest.raises(ConfigError, match="^Tiered Storage functionality is disabled in the broker. Topic cannot "
                                          "be configured with remote log storage.$"):
        parse_topic_configs({"remote.storage.enable": "true"}, BrokerConfig().topic_defaults())


def test_internal_segment_bytes_sizes_the_log_and_is_described_only_where_set():
    """Kafka 4.x's test-only internal.segment.bytes overrides segment.bytes in the log; the log also takes
    the small segment.bytes the broker's own settings may give it (offsets.topic.segment.bytes)."""
    assert LogConfig({"internal.segment.bytes": 300}).segment_bytes == 300
    assert LogConfig({"segment.bytes": 300}).segment_bytes == 300
    assert LogConfig({}).segment_bytes == 1 << 30
    config = BrokerConfig()
    assert "internal.segment.bytes" not in [row[0] for row in config.describe_topic_config({})]
    assert _described(config, {"internal.segment.bytes": 1000}, "internal.segment.bytes") == ("1000", DYNAMIC)
    with pytest.raises(ConfigError, match="log.segment.bytes: Value must be at least 1048576"):
        BrokerConfig({"log.segment.bytes": "1048575"})


# -- where a value comes from ---------------------------------------------------------------------------------------


def _described(config: BrokerConfig, overrides: dict, name: str):
    return next(row for row in config.describe_topic_config(overrides) if row[0] == name)[1:3]


def test_sources_of_topic_configs():
    config = BrokerConfig({"log.retention.ms": "12345", "log.segment.bytes": "4194304"})
    assert _described(config, {}, "retention.ms") == ("12345", STATIC)
    assert _described(config, {}, "segment.bytes") == ("4194304", STATIC)
    assert _described(config, {}, "max.message.bytes") == ("1048588", DEFAULT)
    assert _described(config, {"segment.bytes": 1000}, "segment.bytes") == ("1000", DYNAMIC)
    assert _described(config, {}, "remote.storage.enable") == ("false", DEFAULT)  # no broker synonym


def test_synonyms_follow_kafkas_config_synonyms():
    """ConfigHelper.configSynonyms: static settings, then defaults, starting at the first entry for
    the topic config's main broker synonym; a config set only through a lower-priority synonym
    (log.retention.hours) is described as DEFAULT_CONFIG with no synonyms."""
    assert BrokerConfig().topic_config_synonyms("retention.ms") == []
    assert BrokerConfig({"log.retention.ms": "5"}).topic_config_synonyms("retention.ms") == [
        ("log.retention.ms", "5", STATIC), ("log.retention.hours", "168", DEFAULT)]
    hours_only = BrokerConfig({"log.retention.hours": "1"})
    assert hours_only.topic_config_synonyms("retention.ms") == []
    assert _described(hours_only, {}, "retention.ms") == ("3600000", DEFAULT)
    assert BrokerConfig({"log.segment.bytes": "4194304"}).topic_config_synonyms("segment.bytes") == [
        ("log.segment.bytes", "4194304", STATIC), ("log.segment.bytes", "1073741824", DEFAULT)]
    assert BrokerConfig().topic_config_synonyms("follower.replication.throttled.replicas") == []
