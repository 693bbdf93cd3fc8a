"""Dynamic broker configs without a server: layering over server.properties, Kafka's synonyms
order, and the checks of a change (DynamicBrokerConfig.validateConfigs, prepareIncrementalConfigs)."""

from types import SimpleNamespace as NS

import pytest

from broker.config import BrokerConfig, ConfigError, ConfigSource, validate_dynamic_broker_configs
from broker.dynamic_broker_config import BrokerConfigError, incremental_props

DYN, DYN_DEFAULT, STATIC, DEFAULT = (ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                                     ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG)


def test_layers_and_synonyms():
    config = BrokerConfig({"log.retention.hours": "100", "log.segment.bytes": "5000"})
    config.set_dynamic({"log.retention.hours": "50", "log.segment.bytes": "6000"}, {"log.retention.hours": "10"})
    assert config["log.retention.hours"] == 10 and config["log.segment.bytes"] == 6000
    assert config.topic_defaults()["retention.ms"] == 10 * 3_600_000
    assert config.topic_defaults()["segment.bytes"] == 6000
    assert config.config_synonyms("log.retention.hours", ("log.retention.ms", "log.retention.minutes",
                                                          "log.retention.hours")) == [
        ("log.retention.hours", "10", DYN), ("log.retention.hours", "50", DYN_DEFAULT),
        ("log.retention.hours", "100", STATIC), ("log.retention.hours", "168", DEFAULT)]
    # A static higher-priority synonym still wins over a dynamic lower one (each key on its own).
    config = BrokerConfig({"log.retention.ms": "1234"})
    config.set_dynamic({"log.retention.hours": "1"}, {})
    assert config.retention_ms() == 1234
    # Removing the dynamic layers restores the static values.
    config.set_dynamic({}, {})
    assert config["log.retention.hours"] == 168 and config.dynamic_default == {}


def test_validation_messages():
    validate_dynamic_broker_configs({"log.retention.ms": "1000", "max.connections": "10"})
    with pytest.raises(ConfigError, match=r"^Cannot update these configs dynamically: \[log.dirs, foo\]$"):
        validate_dynamic_broker_configs({"log.dirs": "/x", "log.retention.ms": "1", "foo": "1"})
    with pytest.raises(ConfigError, match="log.segment.bytes"):
        validate_dynamic_broker_configs({"log.segment.bytes": "big"})


def _op(name, op, value=None):
    return NS(name=name, config_operation=op, value=value)


def test_incremental_props():
    current = {"log.retention.ms": "5", "log.cleanup.policy": "delete"}
    assert incremental_props(current, [_op("log.retention.ms", 1), _op("log.segment.bytes", 0, "100")]) == {
        "log.cleanup.policy": "delete", "log.segment.bytes": "100"}
    assert incremental_props(current, [_op("log.cleanup.policy", 2, "compact")])["log.cleanup.policy"] == \
        "delete,compact"
    assert incremental_props({}, [_op("log.cleanup.policy", 2, "compact")])["log.cleanup.policy"] == "delete,compact"
    assert incremental_props(current, [_op("log.cleanup.policy", 3, "delete")])["log.cleanup.policy"] == ""
    with pytest.raises(BrokerConfigError, match="Config value subtract is not allowed for config key: log.retention.ms"):
        incremental_props(current, [_op("log.retention.ms", 3, "1")])
    with pytest.raises(BrokerConfigError, match="Unknown config name: nope"):
        incremental_props(current, [_op("nope", 2, "1")])
