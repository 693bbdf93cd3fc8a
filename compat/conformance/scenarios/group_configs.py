"""Group configs (config resource type 32, KIP-848): DescribeConfigs, IncrementalAlterConfigs,
AlterConfigs and ListConfigResources on a group, with Kafka 4.3's keys, defaults, synonyms, checks
and the broker's bounds. Kafka 3.9 has no group configs: the known differences say so."""

from __future__ import annotations

from ..scenario import Session, scenario

GROUP = 32
SET, DELETE, APPEND = 0, 1, 2


def _describe(s: Session, name: str, keys=None, label=None, documentation: bool = True):
    s.call("DescribeConfigs", 4, {"resources": [{"resource_type": GROUP, "resource_name": name,
                                                 "configuration_keys": keys}],
                                  "include_synonyms": True, "include_documentation": documentation}, label=label)


@scenario("IncrementalAlterConfigs", versions=(0, 1), covers=["INVALID_CONFIG", "INVALID_REQUEST"])
def incremental_alter_group_configs(s: Session, v: int):
    """SET and DELETE on a group that has no members yet; every key's checks: type, floor, the
    broker's min/max, allowed values; APPEND, duplicates, nulls, the empty name; then describe."""
    group = s.group()

    def alter(label, configs, name=None, validate_only=False):
        s.call("IncrementalAlterConfigs", v, {"resources": [{"resource_type": GROUP, "resource_name": group
                                                             if name is None else name, "configs": [
            {"name": n, "config_operation": op, "value": value} for n, op, value in configs]}],
            "validate_only": validate_only}, label=label)

    _describe(s, group, label="defaults of a group never seen")
    alter("set session timeout and offset reset", [("consumer.session.timeout.ms", SET, "50000"),
                                                   ("share.auto.offset.reset", SET, "earliest")])
    alter("validate only", [("consumer.heartbeat.interval.ms", SET, "6000")], validate_only=True)
    for label, name, value in (
            ("not a number", "consumer.session.timeout.ms", "soon"),
            ("beyond INT", "consumer.session.timeout.ms", "99999999999"),
            ("below the floor", "consumer.session.timeout.ms", "0"),
            ("below the broker minimum", "consumer.session.timeout.ms", "44999"),
            ("above the broker maximum", "consumer.session.timeout.ms", "60001"),
            ("heartbeat above its maximum", "consumer.heartbeat.interval.ms", "15001"),
            ("heartbeat below its minimum", "consumer.heartbeat.interval.ms", "4999"),
            ("assignment interval 0", "consumer.assignment.interval.ms", "0"),
            ("assignment interval above its maximum", "consumer.assignment.interval.ms", "15001"),
            ("share session above its maximum", "share.session.timeout.ms", "60001"),
            ("share heartbeat below its minimum", "share.heartbeat.interval.ms", "4999"),
            ("lock duration below the floor", "share.record.lock.duration.ms", "999"),
            ("lock duration below the broker minimum", "share.record.lock.duration.ms", "14999"),
            ("delivery count below the floor", "share.delivery.count.limit", "1"),
            ("delivery count above the broker maximum", "share.delivery.count.limit", "11"),
            ("record locks below the floor", "share.partition.max.record.locks", "99"),
            ("record locks above the broker maximum", "share.partition.max.record.locks", "4001"),
            ("offset reset unknown", "share.auto.offset.reset", "first"),
            ("offset reset by duration", "share.auto.offset.reset", "by_duration:PT1H"),
            ("offset reset by a negative duration", "share.auto.offset.reset", "by_duration:-PT1H"),
            ("isolation level unknown", "share.isolation.level", "read_some"),
            ("isolation level in capitals", "share.isolation.level", "READ_COMMITTED"),
            ("renew acknowledge not a boolean", "share.renew.acknowledge.enable", "maybe"),
            ("streams standby replicas above the broker maximum", "streams.num.standby.replicas", "3"),
            ("streams standby replicas negative", "streams.num.standby.replicas", "-1"),
            ("streams rebalance delay negative", "streams.initial.rebalance.delay.ms", "-1"),
            ("streams session below the broker minimum", "streams.session.timeout.ms", "44999"),
            ("unknown key", "consumer.no.such.key", "1"),
            ("internal key", "consumer.assignor.offload.enable", "true")):
        alter(label, [(name, SET, value)])
    alter("append to a non-list", [("consumer.session.timeout.ms", APPEND, "1")])
    alter("duplicate keys", [("consumer.session.timeout.ms", SET, "50000"), ("consumer.session.timeout.ms", SET, "51000")])
    alter("null value", [("consumer.session.timeout.ms", SET, None)])
    alter("empty group name", [("consumer.session.timeout.ms", SET, "50000")], name="")
    alter("delete an unset key", [("streams.session.timeout.ms", DELETE, None)])
    _describe(s, group, label="after")
    _describe(s, group, keys=["consumer.session.timeout.ms", "share.auto.offset.reset", "no.such.key"],
              label="chosen keys")
    _describe(s, "", label="empty group name")
    s.call("ListConfigResources", 1, {"resource_types": [GROUP]}, label="listed")
    alter("delete every override", [("consumer.session.timeout.ms", DELETE, None),
                                    ("share.auto.offset.reset", DELETE, None)])
    s.call("ListConfigResources", 1, {"resource_types": [GROUP]}, label="no longer listed")


@scenario("AlterConfigs", versions=(0, 1, 2))
def alter_group_configs(s: Session, v: int):
    """The legacy whole-set AlterConfigs on a group: replaces every override; a bad value; the empty name."""
    group = s.group()

    def alter(label, configs, name=None):
        s.call("AlterConfigs", v, {"resources": [{"resource_type": GROUP, "resource_name": group if name is None
                                                  else name, "configs": [{"name": n, "value": value}
                                                                         for n, value in configs.items()]}],
                                   "validate_only": False}, label=label)

    alter("set", {"share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed"})
    alter("replace", {"consumer.session.timeout.ms": "46000"})
    _describe(s, group, keys=["share.auto.offset.reset", "share.isolation.level", "consumer.session.timeout.ms"],
              label="after", documentation=False)
    alter("bad value", {"consumer.session.timeout.ms": "1"})
    alter("empty group name", {"consumer.session.timeout.ms": "46000"}, name="")
    alter("clear", {})
