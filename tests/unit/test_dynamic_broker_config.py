"""Dynamic broker configs without a server: layering over server.properties, Kafka's synonyms
order, and the checks of a change (DynamicBrokerConfig.validateConfigs, prepareIncrementalConfigs)."""

from types import SimpleNamespace as NS

import pytest

from broker.config import BrokerConfig, ConfigError, ConfigSource, java_double, validate_dynamic_broker_configs
from broker.dynamic_broker_config import BrokerConfigError, incremental_props

DYN, DYN_DEFAULT, STATIC, DEFAULT = (ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                                     ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG)


def test_layers_and_synonyms():
    config = BrokerConfig({"log.retention.hours": "100", "log.segment.bytes": "5000000"})
    config.set_dynamic({"log.retention.hours": "50", "log.segment.bytes": "6000000"}, {"log.retention.hours": "10"})
    assert config["log.retention.hours"] == 10 and config["log.segment.bytes"] == 6_000_000
    assert config.topic_defaults()["retention.ms"] == 10 * 3_600_000
    assert config.topic_defaults()["segment.bytes"] == 6_000_000
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
    with pytest.raises(ConfigError, match=r"^Cannot update these configs dynamically: \[log.dirs\]$"):
        validate_dynamic_broker_configs({"log.dirs": "/x", "log.retention.ms": "1", "foo": "1"})
    with pytest.raises(ConfigError, match="log.segment.bytes"):
        validate_dynamic_broker_configs({"log.segment.bytes": "big"})


def test_names_kafka_does_not_know_are_accepted_its_static_ones_refused():
    """As Kafka 4.3's DynamicBrokerConfig.validateConfigs: a name no Kafka config defines (a plugin's, or
    one Kafka 4.0 removed) is accepted; Kafka's non-dynamic names are refused, its per-listener
    security configs need the listener prefix, its per-broker ones a broker id."""
    for per_broker in (True, False):
        validate_dynamic_broker_configs({"my.plugin.setting": "x", "log.message.format.version": "3.0-IV1",
                                         "listener.name.plain.max.connections": "5"}, per_broker)
    validate_dynamic_broker_configs({"sasl.kerberos.min.time.before.relogin": "58000",
                                     "listener.name.plain.sasl.jaas.config": "x"})
    with pytest.raises(ConfigError, match=r"^Cannot update these configs at default cluster level, broker id must be "
                                          r"specified: \[sasl.kerberos.min.time.before.relogin\]$"):
        validate_dynamic_broker_configs({"sasl.kerberos.min.time.before.relogin": "58000"}, per_broker=False)
    with pytest.raises(ConfigError, match=r"broker id must be specified: \[listener.name.plain.sasl.jaas.config\]$"):
        validate_dynamic_broker_configs({"listener.name.plain.sasl.jaas.config": "x"}, per_broker=False)
    with pytest.raises(ConfigError, match=r"^These security configs can be dynamically updated only per-listener using "
                                          r"the listener prefix: \[ssl.keystore.location\]$"):
        validate_dynamic_broker_configs({"ssl.keystore.location": "/k"})
    with pytest.raises(ConfigError, match=r"^Cannot update these configs dynamically: \[process.roles\]$"):
        validate_dynamic_broker_configs({"process.roles": "broker", "my.plugin.setting": "x"})


def test_stored_names_no_definition_knows_are_kept_and_ignored():
    config = BrokerConfig({})
    config.set_dynamic({"my.plugin.setting": "y"}, {"my.plugin.setting": "x"})
    assert config.config_synonyms("my.plugin.setting", ("my.plugin.setting",)) == [
        ("my.plugin.setting", "x", DYN), ("my.plugin.setting", "y", DYN_DEFAULT)]


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


def test_kafka_dynamic_configs_kafka_wire_does_not_use_are_typed_and_described_as_kafka():
    """log.cleaner.threads & co.: Kafka 4.3's type and default, a wrong type refused, a value set
    described with Kafka's synonyms (DYNAMIC_BROKER_CONFIG then DEFAULT_CONFIG), `serve` warns."""
    validate_dynamic_broker_configs({"log.cleaner.threads": "2", "num.replica.fetchers": "4"})
    with pytest.raises(ConfigError, match=r"^Invalid value many for configuration log.cleaner.threads: "
                                          r"Not a number of type INT$"):
        validate_dynamic_broker_configs({"log.cleaner.threads": "many"})
    config = BrokerConfig({"num.replica.fetchers": "3"})
    config.set_dynamic({}, {"log.cleaner.threads": "2"})
    assert config.config_synonyms("log.cleaner.threads", ("log.cleaner.threads",)) == [
        ("log.cleaner.threads", "2", DYN), ("log.cleaner.threads", "1", DEFAULT)]
    described = {name: (value, source, key) for name, value, source, key in config.describe_broker_config()}
    assert described["log.cleaner.threads"][:2] == ("2", DYN)
    assert described["log.cleaner.io.max.bytes.per.second"][:2] == ("1.7976931348623157E308", DEFAULT)
    assert described["sasl.jaas.config"][2].sensitive
    assert config.unknown_key_warnings() == [
        "The configuration 'num.replica.fetchers' is a Kafka broker config that kafka-wire does not use; ignored."]


@pytest.mark.parametrize("value, java", [(0.9, "0.9"), (100.0, "100.0"), (1e7, "1.0E7"), (12345678.0, "1.2345678E7"),
                                         (0.0001, "1.0E-4"), (1.7976931348623157e308, "1.7976931348623157E308"),
                                         (-2.5e9, "-2.5E9"), (0.0, "0.0")])
def test_doubles_are_rendered_as_java_prints_them(value, java):
    assert java_double(value) == java
