"""Group configs (config resource type 32, KIP-848): DescribeConfigs, IncrementalAlterConfigs,
AlterConfigs and ListConfigResources on a group, with Kafka 4.3's keys, defaults, synonyms, checks
and the broker's bounds. Kafka 3.9 has no group configs: the known differences say so.

Kafka applies a change to its metadata log and describes a group from what its brokers have read of
that log, so a describe right after a change may still show the old values there: each recorded
describe first waits (unrecorded) until the change is visible, on both brokers alike."""

from __future__ import annotations

from ..scenario import Session, scenario

GROUP = 32
SET, DELETE, APPEND = 0, 1, 2
GROUP_CONFIG_SOURCE = 8


def _settled(s: Session, group: str, name: str, value: str | None) -> None:
    """Waits until describing `group` shows `value` for `name` (None: the default, no override)."""
    def visible() -> bool:
        answer = s.call("DescribeConfigs", 4, {"resources": [{"resource_type": GROUP, "resource_name": group,
                                                              "configuration_keys": [name]}],
                                               "include_synonyms": False, "include_documentation": False},
                        record=False)
        if answer is None or not answer.results or not answer.results[0].configs:
            return False
        entry = answer.results[0].configs[0]
        return entry.value == value if value is not None else entry.config_source != GROUP_CONFIG_SOURCE
    if _has_group_configs(s):
        s.wait_until(visible, what=f"{group}'s {name} to read {value}")


def _has_group_configs(s: Session) -> bool:
    """Whether the broker knows GROUP config resources (Kafka 3.9 does not: nothing to wait for)."""
    answer = s.call("DescribeConfigs", 4, {"resources": [{"resource_type": GROUP, "resource_name": "probe",
                                                          "configuration_keys": ["consumer.session.timeout.ms"]}],
                                           "include_synonyms": False, "include_documentation": False}, record=False)
    return answer is not None and answer.results[0].error_code == 0


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
    _settled(s, group, "share.auto.offset.reset", "by_duration:PT1H")
    _describe(s, group, label="after")
    _describe(s, group, keys=["consumer.session.timeout.ms", "share.auto.offset.reset", "no.such.key"],
              label="chosen keys")
    _describe(s, "", label="empty group name")
    s.call("ListConfigResources", 1, {"resource_types": [GROUP]}, label="listed")
    alter("delete every override", [("consumer.session.timeout.ms", DELETE, None),
                                    ("share.auto.offset.reset", DELETE, None)])
    _settled(s, group, "share.auto.offset.reset", None)
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
    _settled(s, group, "consumer.session.timeout.ms", "46000")
    _describe(s, group, keys=["share.auto.offset.reset", "share.isolation.level", "consumer.session.timeout.ms"],
              label="after", documentation=False)
    alter("bad value", {"consumer.session.timeout.ms": "1"})
    alter("empty group name", {"consumer.session.timeout.ms": "46000"}, name="")
    alter("clear", {})


@scenario("DeleteGroups", versions=(2,))
def delete_group_keeps_group_configs(s: Session, v: int):
    """Deleting an empty group with offsets leaves its configs: they are metadata, not the coordinator's."""
    topic, group = s.topic(), s.group()
    s.create_topic(topic)
    s.find_coordinator(group)
    s.setup("IncrementalAlterConfigs", 1, {"resources": [{"resource_type": GROUP, "resource_name": group, "configs": [
        {"name": "consumer.heartbeat.interval.ms", "config_operation": SET, "value": "6000"}]}], "validate_only": False},
        ok=lambda answer: True)
    s.setup("OffsetCommit", 8, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                                "topics": [{"name": topic, "partitions": [
                                    {"partition_index": 0, "committed_offset": 3, "committed_metadata": "m"}]}]})
    _settled(s, group, "consumer.heartbeat.interval.ms", "6000")
    s.call("DeleteGroups", v, {"groups_names": [group]})
    _describe(s, group, keys=["consumer.heartbeat.interval.ms"], label="the deleted group's configs",
              documentation=False)
