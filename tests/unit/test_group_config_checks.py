"""Group configs' checks (broker/group_configs.py) as Kafka 4.3's GroupConfig makes them, and the
value a coordinator uses: the override clamped to the broker's current bounds."""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig
from broker.group_configs import GROUP_KEYS, GroupConfigError, effective, validate


def refusal(config, overrides) -> str:
    with pytest.raises(GroupConfigError) as error:
        validate(config, overrides)
    return error.value.message


def test_kafkas_seventeen_keys_and_defaults_from_the_broker():
    config = BrokerConfig({"group.consumer.heartbeat.interval.ms": "6000"})
    assert len(GROUP_KEYS) == 17
    assert effective(config, {}, "consumer.heartbeat.interval.ms") == 6000
    assert effective(config, {}, "share.auto.offset.reset") == "latest"
    assert effective(config, {}, "share.renew.acknowledge.enable") is True


@pytest.mark.parametrize("overrides, message", [
    ({"nope": "1"}, "Unknown group config name: nope"),
    ({"consumer.session.timeout.ms": "x"},
     "Invalid value x for configuration consumer.session.timeout.ms: Not a number of type INT"),
    ({"share.record.lock.duration.ms": "999"},
     "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"),
    ({"consumer.session.timeout.ms": "44999"},
     "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
    ({"streams.num.standby.replicas": "3"},
     "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"),
    ({"share.auto.offset.reset": "by_duration:-PT1H"},
     "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` "
     "for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format "
     "'by_duration:<PnDTnHnMn.nS>'."),
    # Kafka parses every key before any bound: the bad value of a later key is reported first.
    ({"consumer.session.timeout.ms": "1", "streams.session.timeout.ms": "x"},
     "Invalid value x for configuration streams.session.timeout.ms: Not a number of type INT"),
])
def test_refusals_in_kafkas_words_and_order(overrides, message):
    assert refusal(BrokerConfig({}), overrides) == message


def test_session_must_exceed_heartbeat_where_the_bounds_overlap():
    config = BrokerConfig({"group.consumer.max.heartbeat.interval.ms": "50000"})
    assert refusal(config, {"consumer.heartbeat.interval.ms": "45000"}) == \
        "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
    validate(config, {"consumer.heartbeat.interval.ms": "44999", "share.auto.offset.reset": "by_duration:P1DT2H"})


def test_a_stored_override_is_clamped_to_the_bounds_the_broker_has_now():
    narrowed = BrokerConfig({"group.consumer.max.session.timeout.ms": "50000"})
    assert effective(narrowed, {"consumer.session.timeout.ms": "55000"}, "consumer.session.timeout.ms") == 50000
    assert effective(BrokerConfig({}), {"consumer.session.timeout.ms": "55000"}, "consumer.session.timeout.ms") == 55000
