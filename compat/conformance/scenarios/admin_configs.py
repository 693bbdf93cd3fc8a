"""DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44): sources, synonyms, errors."""

from __future__ import annotations

from ..scenario import ALL, Session, scenario

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


def _describe(s: Session, v: int, resources, synonyms: bool = True, documentation: bool = False, label=None):
    return s.call("DescribeConfigs", v, {"resources": resources, "include_synonyms": synonyms,
                                         "include_documentation": documentation}, label=label)


@scenario("DescribeConfigs", versions=ALL, covers=["UNKNOWN_TOPIC_OR_PARTITION", "INVALID_REQUEST"])
def describe_topic_configs(s: Session, v: int):
    """A topic with overrides: chosen keys with sources and synonyms; an unknown topic; an unknown key."""
    s.create_topic(s.topic(), configs={"retention.ms": "86400000", "cleanup.policy": "compact",
                                       "max.message.bytes": "2000000"})
    keys = ["retention.ms", "cleanup.policy", "max.message.bytes", "segment.bytes", "min.insync.replicas",
            "compression.type", "message.timestamp.type", "unclean.leader.election.enable", "no.such.key"]
    _describe(s, v, [{"resource_type": TOPIC, "resource_name": s.topic(), "configuration_keys": keys}],
              label="chosen keys with synonyms")
    _describe(s, v, [{"resource_type": TOPIC, "resource_name": s.topic("missing"), "configuration_keys": None}],
              label="unknown topic")
    _describe(s, v, [{"resource_type": TOPIC, "resource_name": "", "configuration_keys": None}],
              label="empty topic name")
    _describe(s, v, [{"resource_type": 99, "resource_name": "x", "configuration_keys": None}],
              label="unknown resource type")


@scenario("DescribeConfigs", versions=ALL)
def describe_broker_configs(s: Session, v: int):
    """Chosen broker keys by the broker's id, with synonyms (static, default sources)."""
    keys = ["num.partitions", "log.retention.hours", "log.retention.ms", "log.segment.bytes", "auto.create.topics.enable",
            "default.replication.factor", "min.insync.replicas", "message.max.bytes", "compression.type",
            "group.max.size"]
    _describe(s, v, [{"resource_type": BROKER, "resource_name": "1", "configuration_keys": keys}])
    _describe(s, v, [{"resource_type": BROKER, "resource_name": "7", "configuration_keys": keys}],
              label="another broker's id")
    _describe(s, v, [{"resource_type": BROKER, "resource_name": "x", "configuration_keys": keys}],
              label="not a broker id")


@scenario("IncrementalAlterConfigs", versions=ALL, covers=["INVALID_CONFIG", "UNKNOWN_TOPIC_OR_PARTITION"])
def incremental_alter_topic_configs(s: Session, v: int):
    """SET, DELETE, APPEND, SUBTRACT on a topic, then describe; errors: bad value, unknown key, unknown topic."""
    s.create_topic(s.topic(), configs={"cleanup.policy": "delete"})

    def alter(label, configs, name=None, validate_only=False):
        s.call("IncrementalAlterConfigs", v, {"resources": [{"resource_type": TOPIC, "resource_name": name or s.topic(),
                                                             "configs": configs}], "validate_only": validate_only},
               label=label)

    alter("set and append", [{"name": "retention.ms", "config_operation": 0, "value": "3600000"},
                             {"name": "cleanup.policy", "config_operation": 2, "value": "compact"}])
    alter("subtract and delete", [{"name": "cleanup.policy", "config_operation": 3, "value": "delete"},
                                  {"name": "retention.ms", "config_operation": 1, "value": None}])
    alter("bad value", [{"name": "retention.ms", "config_operation": 0, "value": "soon"}])
    alter("unknown key", [{"name": "no.such.key", "config_operation": 0, "value": "1"}])
    alter("append to a non-list", [{"name": "retention.ms", "config_operation": 2, "value": "5"}])
    alter("unknown topic", [{"name": "retention.ms", "config_operation": 0, "value": "1"}], name=s.topic("missing"))
    alter("validate only", [{"name": "retention.ms", "config_operation": 0, "value": "7"}], validate_only=True)
    _describe(s, 4, [{"resource_type": TOPIC, "resource_name": s.topic(),
                      "configuration_keys": ["retention.ms", "cleanup.policy"]}], label="after")


@scenario("AlterConfigs", versions=ALL, covers=["INVALID_CONFIG"])
def alter_topic_configs(s: Session, v: int):
    """The legacy whole-set AlterConfigs on a topic: replaces every override; errors."""
    s.create_topic(s.topic(), configs={"cleanup.policy": "compact", "retention.ms": "1000"})

    def alter(label, configs, name=None):
        s.call("AlterConfigs", v, {"resources": [{"resource_type": TOPIC, "resource_name": name or s.topic(),
                                                  "configs": configs}], "validate_only": False}, label=label)

    alter("replace", [{"name": "segment.ms", "value": "600000"}])
    alter("bad value", [{"name": "segment.ms", "value": "-5"}])
    alter("unknown topic", [{"name": "segment.ms", "value": "600000"}], name=s.topic("missing"))
    _describe(s, 4, [{"resource_type": TOPIC, "resource_name": s.topic(),
                      "configuration_keys": ["retention.ms", "cleanup.policy", "segment.ms"]}], label="after")
