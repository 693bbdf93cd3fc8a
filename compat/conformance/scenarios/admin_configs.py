"""DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44): sources, synonyms, errors."""

from __future__ import annotations

from ..scenario import ALL, Session, scenario

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


def _describe(s: Session, v: int, resources, synonyms: bool = True, documentation: bool = False, label=None,
              record: bool = True):
    return s.call("DescribeConfigs", v, {"resources": resources, "include_synonyms": synonyms,
                                         "include_documentation": documentation}, label=label, record=record)


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


@scenario("DescribeConfigs", versions=(3, 4))
def describe_topic_configs_documentation(s: Session, v: int):
    """Every config of a topic without overrides, with documentation: the whole topic config table
    (names, defaults, types, documentation) beside Kafka's."""
    s.create_topic(s.topic())
    _describe(s, v, [{"resource_type": TOPIC, "resource_name": s.topic(), "configuration_keys": None}],
              synonyms=False, documentation=True, label="all keys with documentation")


# Topic configs Kafka 4.0 removed (KIP-724, KIP-896) and their broker synonyms.
_REMOVED_TOPIC_CONFIGS = {"message.format.version": "3.0-IV1", "message.downconversion.enable": "true",
                          "message.timestamp.difference.max.ms": "1000"}
# Values are Kafka 3.x's defaults: harmless on a broker that accepts them.
_REMOVED_BROKER_CONFIGS = {"log.message.format.version": "3.0-IV1", "log.message.downconversion.enable": "true",
                           "log.message.timestamp.difference.max.ms": "9223372036854775807"}


@scenario("CreateTopics", versions=(7,), covers=["INVALID_CONFIG"])
def removed_topic_configs(s: Session, v: int):
    """Setting a topic config Kafka 4.0 removed: CreateTopics, IncrementalAlterConfigs, AlterConfigs (as
    librdkafka's test 0092 sets message.format.version=0.10.0.0), and describing them by name."""
    for name, value in _REMOVED_TOPIC_CONFIGS.items():
        s.call("CreateTopics", v, {"topics": [{"name": s.topic(name), "num_partitions": 1, "replication_factor": 1,
                                               "assignments": [], "configs": [{"name": name, "value": value}]}],
                                   "timeout_ms": 30000, "validate_only": False}, label=f"create with {name}")
    s.create_topic(s.topic())
    topic = {"resource_type": TOPIC, "resource_name": s.topic()}
    for name, value in _REMOVED_TOPIC_CONFIGS.items():
        s.call("IncrementalAlterConfigs", 1, {"resources": [{**topic, "configs": [
            {"name": name, "config_operation": 0, "value": value}]}], "validate_only": False},
            label=f"IncrementalAlterConfigs SET {name}")
    s.call("AlterConfigs", 0, {"resources": [{**topic, "configs": [{"name": "message.format.version",
                                                                    "value": "0.10.0.0"}]}],
                               "validate_only": False}, label="AlterConfigs message.format.version=0.10.0.0")
    _describe(s, 4, [{**topic, "configuration_keys": [*_REMOVED_TOPIC_CONFIGS, "remote.log.copy.disable",
                                                      "remote.log.delete.on.disable"]}],
              label="described by name")
    _describe(s, 4, [{"resource_type": BROKER, "resource_name": "1",
                      "configuration_keys": list(_REMOVED_BROKER_CONFIGS)}], label="broker synonyms described")


# Broker configs that are synonyms of a topic config's broker default, but not the first one (Kafka's
# ServerTopicConfigSynonyms): not dynamic in Kafka. Values are the defaults, harmless if accepted.
_STATIC_SYNONYMS = {"log.retention.hours": "168", "log.retention.minutes": "10080", "log.roll.hours": "168",
                    "log.roll.jitter.hours": "0", "log.flush.scheduler.interval.ms": "9223372036854775807"}


_MADE_UP = "kafka.wire.made.up.name"


@scenario("IncrementalAlterConfigs", versions=ALL, covers=["INVALID_REQUEST"])
def incremental_alter_broker_configs(s: Session, v: int):
    """SET on the default broker ("") and on broker 1: a dynamic key, each static synonym of a topic config's
    broker default, the broker synonyms of removed topic configs (validate only but the refused synonyms);
    then a made-up name and a per-broker SASL key set, the made-up one described, both deleted."""
    keys = {"log.retention.ms": "604800000", **_STATIC_SYNONYMS, **_REMOVED_BROKER_CONFIGS}
    for resource_name in ("", "1"):
        for name, value in keys.items():
            s.call("IncrementalAlterConfigs", v, {"resources": [{
                "resource_type": BROKER, "resource_name": resource_name,
                "configs": [{"name": name, "config_operation": 0, "value": value}]}],
                "validate_only": name not in _STATIC_SYNONYMS}, label=f"broker {resource_name!r}: SET {name}")
    _describe(s, 4, [{"resource_type": BROKER, "resource_name": "1", "configuration_keys": list(_STATIC_SYNONYMS)}],
              label="after")
    # A name no Kafka config defines (a plugin's) is stored on both resources and described with its value
    # hidden; sasl.kerberos.min.time.before.relogin (librdkafka's test 0081) is per broker only.
    for resource_name in ("", "1"):
        for name, value in ((_MADE_UP, resource_name or "default"), ("sasl.kerberos.min.time.before.relogin", "58000")):
            s.call("IncrementalAlterConfigs", v, {"resources": [{
                "resource_type": BROKER, "resource_name": resource_name,
                "configs": [{"name": name, "config_operation": 0, "value": value}]}],
                "validate_only": False}, label=f"broker {resource_name!r}: SET {name}")

    def settled() -> bool:
        # Kafka's broker describes its own metadata image, which follows the controller's commit
        # (the answer to the SET) a moment later: until then broker 1 shows only the default's value.
        answer = _describe(s, 4, [{"resource_type": BROKER, "resource_name": "1", "configuration_keys": [_MADE_UP]}],
                           record=False)
        return any(c.config_source == 2 for c in answer.results[0].configs)

    s.wait_until(settled, what=f"broker 1's own {_MADE_UP} described")
    for resource_name in ("1", ""):
        _describe(s, 4, [{"resource_type": BROKER, "resource_name": resource_name, "configuration_keys": [_MADE_UP]}],
                  label=f"broker {resource_name!r}: {_MADE_UP} described")
    for resource_name in ("", "1"):
        s.call("IncrementalAlterConfigs", v, {"resources": [{
            "resource_type": BROKER, "resource_name": resource_name,
            "configs": [{"name": name, "config_operation": 1, "value": None}
                        for name in (_MADE_UP, "sasl.kerberos.min.time.before.relogin")]}],
            "validate_only": False}, label=f"broker {resource_name!r}: DELETE them")


@scenario("AlterConfigs", versions=ALL, covers=["INVALID_REQUEST"])
def alter_broker_configs(s: Session, v: int):
    """The legacy AlterConfigs on the default broker ("") and broker 1: a dynamic key, each static synonym of
    a topic config's broker default, the broker synonyms of removed topic configs (validate only but the
    refused synonyms)."""
    keys = {"log.retention.ms": "604800000", **_STATIC_SYNONYMS, **_REMOVED_BROKER_CONFIGS}
    for resource_name in ("", "1"):
        for name, value in keys.items():
            configs = [{"name": name, "value": value}]
            if resource_name == "":
                # The whole set of the default broker's dynamic configs: Kafka 4.3 keeps a cluster-level
                # min.insync.replicas there (KIP-966) and refuses a set without it (INVALID_CONFIG).
                configs.append({"name": "min.insync.replicas", "value": "1"})
            s.call("AlterConfigs", v, {"resources": [{"resource_type": BROKER, "resource_name": resource_name,
                                                      "configs": configs}],
                                       "validate_only": name not in _STATIC_SYNONYMS},
                   label=f"broker {resource_name!r}: {name}")



@scenario("IncrementalAlterConfigs", versions=ALL, covers=["INVALID_CONFIG", "INVALID_REQUEST"])
def broker_loggers(s: Session, v: int):
    """Broker loggers (KIP-412): the root logger's level described, set and set back; the refusals: an
    unsupported level (and a lowercase one), a logger that does not exist, unsetting root, APPEND, a
    duplicate name, another broker and the default broker; validate_only; describing the loggers of ""
    and of another broker. (Other loggers' names are each broker's own: log4j's classes, Python's modules.)"""

    def describe(name: str, label: str):
        _describe(s, 4, [{"resource_type": BROKER_LOGGER, "resource_name": name, "configuration_keys": ["root"]}],
                  label=label)

    def alter(label: str, ops, name: str = "1", validate_only: bool = False):
        s.call("IncrementalAlterConfigs", v, {"resources": [{"resource_type": BROKER_LOGGER, "resource_name": name,
                                                             "configs": ops}], "validate_only": validate_only},
               label=label)

    def op(value, name="root", operation=0):
        return {"name": name, "config_operation": operation, "value": value}

    describe("1", "root described")
    alter("root set to WARN", [op("WARN")])
    describe("1", "root after WARN")
    alter("validate only: root to TRACE", [op("TRACE")], validate_only=True)
    describe("1", "root after validate only")
    alter("LOUD is no level", [op("LOUD")])
    alter("lowercase debug", [op("debug")])
    alter("a logger that does not exist", [op("INFO", name="kafka.wire.no.such.logger")])
    alter("unset root", [op(None, operation=1)])
    alter("APPEND", [op("INFO", operation=2)])
    alter("SUBTRACT", [op("INFO", operation=3)])
    alter("root twice", [op("INFO"), op("WARN")])
    alter("a null level", [op(None)])
    alter("the default broker", [op("INFO")], name="")
    alter("broker 2", [op("INFO")], name="2")
    alter("root back to INFO", [op("INFO")])
    describe("", "loggers of the default broker")
    describe("2", "loggers of broker 2")
    s.call("AlterConfigs", 2, {"resources": [{"resource_type": BROKER_LOGGER, "resource_name": "1",
                                              "configs": [{"name": "root", "value": "INFO"}]}], "validate_only": False},
           label="legacy AlterConfigs")
