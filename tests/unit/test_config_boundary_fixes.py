"""What the boundary walks of group and dynamic broker configs (compat/conformance/scenarios/
group_configs_boundaries.py, dynamic_broker_boundaries.py) found kafka-wire answering otherwise than
Kafka 4.3.0, each fixed here with Kafka 4.3.0's answer as the reference broker gave it."""

from __future__ import annotations

import pytest

from broker.config import BROKER_KEYS, BrokerConfig, ConfigError, validate_dynamic_broker_configs
from broker.dynamic_broker_config import validate_reconfiguration
from broker.group_configs import GroupConfigError, validate

WRAPPED = "Invalid value org.apache.kafka.common.config.ConfigException: {} for configuration Invalid dynamic configuration"
THREADS = "Dynamic thread count update validation failed for {}={}, value should {}"


def change(props: dict[str, str], per_broker: bool = True) -> None:
    """What the broker checks of a change of broker 1's (or the default broker's) dynamic configs."""
    config = BrokerConfig({})
    validate_dynamic_broker_configs(props, per_broker)
    new = config.overlaid(config.dynamic_default, props) if per_broker else config.overlaid(props, config.dynamic_broker)
    validate_reconfiguration(config, new)


def refusal(props: dict[str, str], per_broker: bool = True) -> str:
    with pytest.raises(ConfigError) as refused:
        change(props, per_broker)
    return str(refused.value)


@pytest.mark.parametrize("value", ["P1DT-1H", "P-1DT25H", "PT-1M61S", "-P-1D"])
def test_a_duration_with_a_negative_part_but_a_positive_total_is_accepted(value):
    """Java's Duration.parse takes a sign on each part; Kafka refuses only a negative total (P1DT-1H is 23 h)."""
    validate(BrokerConfig({}), {"share.auto.offset.reset": f"by_duration:{value}"})


@pytest.mark.parametrize("value", ["-PT1H", "PT-1H", "P-1DT23H", "PT-0.5S", "P1W", "PT", "P"])
def test_a_negative_or_malformed_duration_is_refused(value):
    with pytest.raises(GroupConfigError):
        validate(BrokerConfig({}), {"share.auto.offset.reset": f"by_duration:{value}"})


@pytest.mark.parametrize("name, minimum", [
    ("group.consumer.assignment.interval.ms", 0), ("group.share.assignment.interval.ms", 0),
    ("group.streams.assignment.interval.ms", 0), ("group.coordinator.cached.buffer.max.bytes", 524288),
    ("share.coordinator.cached.buffer.max.bytes", 524288), ("num.replica.fetchers", 1),
    ("remote.log.manager.copier.thread.pool.size", 1), ("remote.log.manager.expiration.thread.pool.size", 1),
    ("remote.log.manager.follower.thread.pool.size", 1)])
def test_kafkas_lower_bounds_of_dynamic_keys(name, minimum):
    """Before: the value below was accepted (num.replica.fetchers refused only as a thread count)."""
    assert BROKER_KEYS[name].minimum == minimum
    assert refusal({name: str(minimum - 1)}) == \
        f"Invalid value {minimum - 1} for configuration {name}: Value must be at least {minimum}"
    change({name: str(minimum)} if "thread" not in name and "fetchers" not in name else {})


@pytest.mark.parametrize("kind", ["consumer", "share", "streams"])
def test_an_assignment_interval_above_the_brokers_maximum_is_refused(kind):
    name = f"group.{kind}.assignment.interval.ms"
    for per_broker in (True, False):
        assert refusal({name: "15001"}, per_broker) == \
            f"{name} must be less than or equal to group.{kind}.max.assignment.interval.ms"
        change({name: "15000"}, per_broker)


@pytest.mark.parametrize("name, current", [
    ("remote.log.reader.threads", 10), ("remote.log.manager.copier.thread.pool.size", 10),
    ("remote.log.manager.expiration.thread.pool.size", 10), ("remote.log.manager.follower.thread.pool.size", 2)])
def test_remote_thread_pools_are_resized_within_half_and_double(name, current):
    assert refusal({name: str(current * 2 + 1)}) == \
        WRAPPED.format(THREADS.format(name, current * 2 + 1, f"not be greater than double the current value {current}"))
    if current // 2 > 1:
        assert refusal({name: str(current // 2 - 1)}) == \
            WRAPPED.format(THREADS.format(name, current // 2 - 1, f"be at least half the current value {current}"))
    change({name: str(current * 2)})
    change({name: str(current // 2)})


@pytest.mark.parametrize("props, message", [
    ({"log.roll.ms": "0"}, "requirement failed: log.roll.ms must be greater than or equal to 1"),
    ({"log.roll.ms": "-9223372036854775808"}, "requirement failed: log.roll.ms must be greater than or equal to 1"),
    ({"log.roll.jitter.ms": "-1"}, "requirement failed: log.roll.jitter.ms must be greater than or equal to 0"),
    ({"max.connections.per.ip": "0"}, "requirement failed: max.connections.per.ip can be set to zero only if "
                                      "max.connections.per.ip.overrides property is set."),
])
def test_kafkas_config_requirements_across_keys(props, message):
    assert refusal(props) == message
    assert refusal(props, per_broker=False) == message


def test_max_connections_per_ip_zero_with_overrides_and_a_positive_roll():
    change({"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:5"})
    change({"log.roll.ms": "1", "log.roll.jitter.ms": "0"})


def test_ssl_client_auth_names_its_values_in_kafkas_order():
    assert refusal({"ssl.client.auth": "NONE"}) == \
        "Invalid value NONE for configuration ssl.client.auth: String must be one of: required, requested, none"
