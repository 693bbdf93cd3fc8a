"""Broker and topic configuration under Kafka's property names, from server.properties and --set.

Every broker key we read is declared once here with Kafka's type and default. Topic-level keys
(`retention.ms`, `segment.bytes`, ...) are declared once, in the log layer's table
(log.config.TOPIC_CONFIGS); each takes its default from the broker key Kafka maps it to
(`log.retention.ms`, `log.segment.bytes`, ...), so DescribeConfigs can say where a value came from.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

from kafka_wire.properties import MalformedProperties, parse_properties
from log.config import (DEFINITION_ORDER, LONG_MAX, MIN_SEGMENT_BYTES, TOPIC_CONFIGS, InvalidConfig, Validator,
                        check_topic_config_values, gzip_level, java_double, parse_config_value)

from .kafka_config_names import (KAFKA_DYNAMIC_BROKER_CONFIG_NAMES, KAFKA_UNUSED_DYNAMIC_BROKER_CONFIG_MINIMUMS,
                                 KAFKA_UNUSED_DYNAMIC_BROKER_CONFIGS)


class ConfigType(IntEnum):
    """DescribeConfigs' config_type values."""

    UNKNOWN = 0  # a name no config definition knows (stored dynamically for plugins)
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    """DescribeConfigs' config_source values."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigError(ValueError):
    """A config name or value Kafka would reject (INVALID_CONFIG)."""


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: ConfigType
    default: object
    doc: str = ""
    choices: tuple[str, ...] | None = None
    minimum: float | None = None
    sensitive: bool = False
    maximum: float | None = None
    validator: Validator | None = None
    internal: bool = False  # a topic config listed only where set (Kafka's defineInternal)

    def parse(self, raw) -> object:
        """Parse a property value (string or already typed) into its Python value."""
        try:
            return parse_config_value(self.name, self.type.name, raw, minimum=self.minimum,
                                      maximum=self.maximum, choices=self.choices, validator=self.validator)
        except InvalidConfig as exc:
            raise ConfigError(str(exc)) from None

    def render(self, value) -> str | None:
        """A value as Kafka prints it in DescribeConfigs (ConfigDef.convertToString)."""
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return ",".join(value)
        if isinstance(value, float):
            return java_double(value)
        return str(value)


# `listener.name.<listener>.<key>`: a per-listener override of a broker key (security/tls.py).
LISTENER_PREFIX = "listener.name."

B, S, I, L, D, LS = (ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.LONG,
                     ConfigType.DOUBLE, ConfigType.LIST)

BROKER_KEYS: dict[str, ConfigKey] = {
    k.name: k
    for k in [
        ConfigKey("node.id", I, 1, "The id of this broker."),
        ConfigKey("broker.id", I, -1, "Alias of node.id (ZooKeeper-era name)."),
        ConfigKey("listeners", LS, ["PLAINTEXT://127.0.0.1:9092"], "Addresses to listen on."),
        ConfigKey("advertised.listeners", LS, None, "Addresses given to clients; default: listeners."),
        ConfigKey("listener.security.protocol.map", LS,
                  ["PLAINTEXT:PLAINTEXT", "SSL:SSL", "SASL_PLAINTEXT:SASL_PLAINTEXT", "SASL_SSL:SASL_SSL"]),
        ConfigKey("inter.broker.listener.name", S, None),
        ConfigKey("log.dirs", LS, None, "Data directories; default: log.dir."),
        ConfigKey("log.dir", S, "/tmp/kafka-logs"),
        ConfigKey("num.partitions", I, 1, minimum=1),
        ConfigKey("default.replication.factor", I, 1, minimum=1),
        ConfigKey("auto.create.topics.enable", B, True),
        ConfigKey("delete.topic.enable", B, True),
        ConfigKey("message.max.bytes", I, 1048588, minimum=0),
        ConfigKey("socket.request.max.bytes", I, 104857600, minimum=1),
        ConfigKey("socket.send.buffer.bytes", I, 102400),
        ConfigKey("socket.receive.buffer.bytes", I, 102400),
        ConfigKey("connections.max.idle.ms", L, 600000),
        ConfigKey("max.connections", I, 2147483647, minimum=0),
        ConfigKey("max.connections.per.ip", I, 2147483647, minimum=0),
        ConfigKey("queued.max.request.bytes", L, -1),
        ConfigKey("fetch.max.bytes", I, 57671680, minimum=1024),
        ConfigKey("log.segment.bytes", I, 1073741824, minimum=MIN_SEGMENT_BYTES),
        ConfigKey("log.roll.ms", L, None),
        ConfigKey("log.roll.hours", I, 168, minimum=1),
        ConfigKey("log.roll.jitter.ms", L, None),
        ConfigKey("log.roll.jitter.hours", I, 0, minimum=0),
        ConfigKey("log.retention.ms", L, None),
        ConfigKey("log.retention.minutes", I, None),
        ConfigKey("log.retention.hours", I, 168),
        ConfigKey("log.retention.bytes", L, -1),
        ConfigKey("log.retention.check.interval.ms", L, 300000, minimum=1),
        ConfigKey("log.segment.delete.delay.ms", L, 60000, minimum=0),
        ConfigKey("log.flush.interval.messages", L, LONG_MAX, minimum=1),
        ConfigKey("log.flush.interval.ms", L, None),
        ConfigKey("log.flush.scheduler.interval.ms", L, LONG_MAX),
        ConfigKey("log.index.interval.bytes", I, 4096, minimum=0),
        ConfigKey("log.index.size.max.bytes", I, 10485760, minimum=4),
        ConfigKey("log.preallocate", B, False),
        ConfigKey("log.cleanup.policy", LS, ["delete"], choices=("compact", "delete")),
        ConfigKey("log.cleaner.enable", B, True),
        ConfigKey("log.cleaner.delete.retention.ms", L, 86400000, minimum=0),
        ConfigKey("log.cleaner.min.cleanable.ratio", D, 0.5, minimum=0, maximum=1),
        ConfigKey("log.cleaner.min.compaction.lag.ms", L, 0, minimum=0),
        ConfigKey("log.cleaner.max.compaction.lag.ms", L, LONG_MAX, minimum=1),
        ConfigKey("log.cleaner.backoff.ms", L, 15000, minimum=0),
        ConfigKey("log.message.timestamp.type", S, "CreateTime", choices=("CreateTime", "LogAppendTime")),
        ConfigKey("log.message.timestamp.before.max.ms", L, LONG_MAX, minimum=0),
        ConfigKey("log.message.timestamp.after.max.ms", L, 3600000, minimum=0),  # Kafka 4.3: 1 hour
        ConfigKey("compression.type", S, "producer",
                  choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
        ConfigKey("compression.gzip.level", I, -1, validator=gzip_level),
        ConfigKey("compression.lz4.level", I, 9, minimum=1, maximum=17),
        ConfigKey("compression.zstd.level", I, 3, minimum=-131072, maximum=22),
        ConfigKey("log.local.retention.ms", L, -2, minimum=-2),
        ConfigKey("log.local.retention.bytes", L, -2, minimum=-2),
        ConfigKey("min.insync.replicas", I, 1, minimum=1),
        ConfigKey("unclean.leader.election.enable", B, False),
        ConfigKey("offsets.topic.num.partitions", I, 50, minimum=1),
        ConfigKey("offsets.topic.replication.factor", ConfigType.SHORT, 3, minimum=1),
        ConfigKey("offsets.topic.segment.bytes", I, 104857600, minimum=1),
        ConfigKey("offsets.retention.minutes", I, 10080, minimum=1),
        ConfigKey("offsets.retention.check.interval.ms", L, 600000, minimum=1),
        ConfigKey("offsets.commit.timeout.ms", I, 5000, minimum=1),
        ConfigKey("group.initial.rebalance.delay.ms", I, 3000, minimum=0),
        ConfigKey("group.min.session.timeout.ms", I, 6000),
        ConfigKey("group.max.session.timeout.ms", I, 1800000),
        ConfigKey("group.max.size", I, 2147483647, minimum=1),
        # KIP-848 consumer groups (ConsumerGroupHeartbeat): Kafka 4.x names and defaults.
        ConfigKey("group.consumer.session.timeout.ms", I, 45000, minimum=1),
        ConfigKey("group.consumer.heartbeat.interval.ms", I, 5000, minimum=1),
        ConfigKey("group.consumer.max.size", I, 2147483647, minimum=1),
        ConfigKey("group.consumer.assignors", LS, ["uniform", "range"]),
        # Online migration between classic and KIP-848 members in one group (coordinator/group_migration.py).
        ConfigKey("group.consumer.migration.policy", S, "bidirectional",
                  choices=("bidirectional", "upgrade", "downgrade", "disabled")),
        # The bounds a group's own configs are checked against and clamped to (broker/group_configs.py),
        # and the defaults of those a group does not set: Kafka 4.3's GroupCoordinatorConfig and
        # ShareGroupConfig names and defaults.
        ConfigKey("group.consumer.min.session.timeout.ms", I, 45000, minimum=1),
        ConfigKey("group.consumer.max.session.timeout.ms", I, 60000, minimum=1),
        ConfigKey("group.consumer.min.heartbeat.interval.ms", I, 5000, minimum=1),
        ConfigKey("group.consumer.max.heartbeat.interval.ms", I, 15000, minimum=1),
        ConfigKey("group.consumer.assignment.interval.ms", I, 1000, minimum=0),
        ConfigKey("group.consumer.min.assignment.interval.ms", I, 0, minimum=0),
        ConfigKey("group.consumer.max.assignment.interval.ms", I, 15000, minimum=0),
        ConfigKey("group.share.session.timeout.ms", I, 45000, minimum=1),
        ConfigKey("group.share.min.session.timeout.ms", I, 45000, minimum=1),
        ConfigKey("group.share.max.session.timeout.ms", I, 60000, minimum=1),
        ConfigKey("group.share.heartbeat.interval.ms", I, 5000, minimum=1),
        ConfigKey("group.share.min.heartbeat.interval.ms", I, 5000, minimum=1),
        ConfigKey("group.share.max.heartbeat.interval.ms", I, 15000, minimum=1),
        ConfigKey("group.share.record.lock.duration.ms", I, 30000, minimum=1000),
        ConfigKey("group.share.min.record.lock.duration.ms", I, 15000, minimum=1000),
        ConfigKey("group.share.max.record.lock.duration.ms", I, 60000, minimum=1000),
        ConfigKey("group.share.delivery.count.limit", I, 5, minimum=2),
        ConfigKey("group.share.min.delivery.count.limit", I, 2, minimum=2),
        ConfigKey("group.share.max.delivery.count.limit", I, 10, minimum=2),
        ConfigKey("group.share.partition.max.record.locks", I, 2000, minimum=100),
        ConfigKey("group.share.min.partition.max.record.locks", I, 100, minimum=100),
        ConfigKey("group.share.max.partition.max.record.locks", I, 4000, minimum=100),
        ConfigKey("group.share.assignment.interval.ms", I, 1000, minimum=0),
        ConfigKey("group.share.min.assignment.interval.ms", I, 0, minimum=0),
        ConfigKey("group.share.max.assignment.interval.ms", I, 15000, minimum=0),
        # Share groups (KIP-932, broker/share_groups.py) and the share coordinator's state topic.
        ConfigKey("group.share.max.size", I, 200, minimum=1),
        ConfigKey("group.share.max.share.sessions", I, 2000, minimum=1),
        ConfigKey("share.coordinator.state.topic.num.partitions", I, 50, minimum=1),
        ConfigKey("share.coordinator.state.topic.replication.factor", ConfigType.SHORT, 3, minimum=1),
        ConfigKey("share.coordinator.state.topic.segment.bytes", I, 104857600, minimum=1),
        ConfigKey("share.coordinator.snapshot.update.records.per.snapshot", I, 500, minimum=0),
        ConfigKey("group.streams.session.timeout.ms", I, 45000, minimum=1),
        ConfigKey("group.streams.min.session.timeout.ms", I, 45000, minimum=1),
        ConfigKey("group.streams.max.session.timeout.ms", I, 60000, minimum=1),
        ConfigKey("group.streams.heartbeat.interval.ms", I, 5000, minimum=1),
        ConfigKey("group.streams.min.heartbeat.interval.ms", I, 5000, minimum=1),
        ConfigKey("group.streams.max.heartbeat.interval.ms", I, 15000, minimum=1),
        ConfigKey("group.streams.num.standby.replicas", I, 0, minimum=0),
        ConfigKey("group.streams.max.size", I, 2147483647, minimum=1),
        ConfigKey("group.streams.max.standby.replicas", I, 2, minimum=0),
        ConfigKey("group.streams.initial.rebalance.delay.ms", I, 3000, minimum=0),
        ConfigKey("group.streams.assignment.interval.ms", I, 1000, minimum=0),
        ConfigKey("group.streams.min.assignment.interval.ms", I, 0, minimum=0),
        ConfigKey("group.streams.max.assignment.interval.ms", I, 15000, minimum=0),
        ConfigKey("transaction.state.log.num.partitions", I, 50, minimum=1),
        ConfigKey("transaction.state.log.replication.factor", ConfigType.SHORT, 3, minimum=1),
        ConfigKey("transaction.state.log.min.isr", I, 2, minimum=1),
        ConfigKey("transaction.max.timeout.ms", I, 900000, minimum=1),
        ConfigKey("transaction.state.log.segment.bytes", I, 104857600, minimum=1),
        ConfigKey("transaction.remove.expired.transaction.cleanup.interval.ms", I, 3600000, minimum=1),
        ConfigKey("transaction.partition.verification.enable", B, True),
        ConfigKey("offset.metadata.max.bytes", I, 4096),
        ConfigKey("transaction.abort.timed.out.transaction.cleanup.interval.ms", I, 10000, minimum=1),
        ConfigKey("transactional.id.expiration.ms", I, 604800000, minimum=1),
        ConfigKey("producer.id.expiration.ms", I, 86400000, minimum=1),
        ConfigKey("replica.lag.time.max.ms", L, 30000),
        ConfigKey("replica.fetch.max.bytes", I, 1048576, minimum=0),
        ConfigKey("replica.fetch.wait.max.ms", I, 500),
        ConfigKey("zookeeper.connect", S, None),
        ConfigKey("zookeeper.session.timeout.ms", I, 18000),
        ConfigKey("controlled.shutdown.enable", B, True),
        ConfigKey("controlled.shutdown.max.retries", I, 3, minimum=0),
        ConfigKey("controlled.shutdown.retry.backoff.ms", L, 5000, minimum=0),
        ConfigKey("leader.imbalance.check.interval.seconds", L, 300, minimum=1),
        ConfigKey("leader.imbalance.per.broker.percentage", I, 10, minimum=0),
        ConfigKey("replica.fetch.backoff.ms", I, 1000, minimum=0),
        ConfigKey("replica.fetch.min.bytes", I, 1),
        ConfigKey("replica.fetch.response.max.bytes", I, 10485760, minimum=0),
        ConfigKey("replica.socket.timeout.ms", I, 30000),
        ConfigKey("zookeeper.connection.timeout.ms", I, None),
        ConfigKey("auto.leader.rebalance.enable", B, True),
        ConfigKey("num.network.threads", I, 3, minimum=1),
        ConfigKey("num.io.threads", I, 8, minimum=1),
        ConfigKey("max.request.partition.size.limit", I, 2000, minimum=1),
        ConfigKey("broker.rack", S, None),
        ConfigKey("super.users", S, None),
        ConfigKey("allow.everyone.if.no.acl.found", B, False),
        # Security (issue 9): Kafka's names; listener.name.<listener>.<key> overrides any of them.
        ConfigKey("authorizer.class.name", S, "",
                  "org.apache.kafka.metadata.authorizer.StandardAuthorizer turns ACLs on."),
        ConfigKey("sasl.enabled.mechanisms", LS, ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"],
                  choices=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")),
        ConfigKey("sasl.server.max.receive.size", I, 524288, minimum=1),
        ConfigKey("connections.max.reauth.ms", L, 0, minimum=0),
        ConfigKey("connection.failed.authentication.delay.ms", I, 100, minimum=0),
        # Delegation tokens (KIP-48): on when the secret key is set; every broker needs the same one.
        ConfigKey("delegation.token.secret.key", ConfigType.PASSWORD, None, sensitive=True),
        ConfigKey("delegation.token.max.lifetime.ms", L, 7 * 24 * 3600 * 1000, minimum=1),
        ConfigKey("delegation.token.expiry.time.ms", L, 24 * 3600 * 1000, minimum=1),
        ConfigKey("delegation.token.expiry.check.interval.ms", L, 3600 * 1000, minimum=1),
        ConfigKey("max.connections.per.ip.overrides", S, ""),
        ConfigKey("ssl.keystore.type", S, "JKS", choices=("JKS", "PKCS12", "PEM")),
        ConfigKey("ssl.keystore.location", S, None),
        ConfigKey("ssl.keystore.password", ConfigType.PASSWORD, None, sensitive=True),
        ConfigKey("ssl.key.password", ConfigType.PASSWORD, None, sensitive=True),
        ConfigKey("ssl.keystore.certificate.chain", ConfigType.PASSWORD, None, sensitive=True),
        ConfigKey("ssl.keystore.key", ConfigType.PASSWORD, None, sensitive=True),
        ConfigKey("ssl.truststore.type", S, "JKS", choices=("JKS", "PKCS12", "PEM")),
        ConfigKey("ssl.truststore.location", S, None),
        ConfigKey("ssl.truststore.password", ConfigType.PASSWORD, None, sensitive=True),
        ConfigKey("ssl.truststore.certificates", ConfigType.PASSWORD, None, sensitive=True),
        # In the order Kafka lists them in its message (SslClientAuth's values).
        ConfigKey("ssl.client.auth", S, "none", choices=("required", "requested", "none")),
        ConfigKey("ssl.enabled.protocols", LS, ["TLSv1.2", "TLSv1.3"], choices=("TLSv1.2", "TLSv1.3")),
        ConfigKey("ssl.protocol", S, "TLSv1.3"),
        ConfigKey("ssl.cipher.suites", LS, []),
        ConfigKey("ssl.principal.mapping.rules", S, "DEFAULT"),
        ConfigKey("log.max.open.files", I, None, "Most log files (segments, indexes being written) kept open; "
                  "idle ones are closed and reopened on demand (kafka-wire); unset: half of RLIMIT_NOFILE.",
                  minimum=16),
        ConfigKey("metrics.port", I, None, "Port of the Prometheus endpoint (kafka-wire); unset: off."),
        ConfigKey("metrics.host", S, "127.0.0.1", "Address the Prometheus endpoint binds (kafka-wire)."),
        ConfigKey("console.port", I, None, "Port of the web console (kafka-wire); unset: off.", minimum=0,
                  maximum=65535),
        ConfigKey("console.host", S, "127.0.0.1", "Address the web console binds (kafka-wire)."),
        ConfigKey("console.read.only", B, True, "The web console refuses writes (kafka-wire)."),
        ConfigKey("console.sample.interval.ms", I, 5000, "How often the web console samples rates and lag "
                  "(kafka-wire).", minimum=100),
        ConfigKey("schema.registry.port", I, None, "Port of the Confluent-compatible Schema Registry API "
                  "(kafka-wire); unset: off.", minimum=0, maximum=65535),
        ConfigKey("schema.registry.host", S, "127.0.0.1", "Address the Schema Registry API binds (kafka-wire)."),
        ConfigKey("num.worker.processes", I, 0, "Worker processes of the broker, each owning a share of the "
                  "partitions and accepting connections on the same listeners; 0 (the default): one per core this "
                  "process may run on; 1: one process (kafka-wire).", minimum=0),
        ConfigKey("log.flush.on.ack", B, True, "A produce with acks=1 or acks=all is answered once the records "
                  "it appended are on stable storage, one sync covering every append that came while the previous "
                  "one ran; false: answered from the page cache, as Kafka does, with fsyncs left to flush.messages "
                  "and flush.ms (kafka-wire)."),
    ]
}



def _unused_kafka_key(name: str, type_name: str, default: str | None) -> ConfigKey:
    # A key also declared above (the group coordinators' assignment intervals) keeps its bounds.
    declared = BROKER_KEYS.get(name)
    minimum = KAFKA_UNUSED_DYNAMIC_BROKER_CONFIG_MINIMUMS.get(name)
    key = ConfigKey(name, ConfigType[type_name], None, "A Kafka broker config kafka-wire accepts and describes "
                    "but does not use (kafka-wire).", sensitive=type_name == "PASSWORD",
                    minimum=minimum if minimum is not None or declared is None else declared.minimum)
    return dataclasses.replace(key, default=key.parse(default))


# Kafka's dynamic broker configs kafka-wire has no use for (threads, buffers, tiered storage, Kerberos,
# ...): declared with Kafka 4.3's type and default, so AlterConfigs checks a value's type and
# DescribeConfigs describes them as Kafka does; a value set is stored, never applied, and `kafka-wire
# serve` warns that it is not used (BrokerConfig.unknown_key_warnings).
UNUSED_KAFKA_BROKER_KEYS: dict[str, ConfigKey] = {
    name: _unused_kafka_key(name, type_name, default)
    for name, type_name, default in KAFKA_UNUSED_DYNAMIC_BROKER_CONFIGS
}
BROKER_KEYS.update(UNUSED_KAFKA_BROKER_KEYS)

# Topic configs: the log layer's table (log.config.TOPIC_CONFIGS), with DescribeConfigs' types.
TOPIC_KEYS: dict[str, ConfigKey] = {
    d.name: ConfigKey(d.name, ConfigType[d.type], d.default, d.doc, d.choices, d.minimum, maximum=d.maximum,
                      validator=d.validator, internal=d.internal)
    for d in TOPIC_CONFIGS.values()
}

# Topic config -> the broker config that supplies its default (Kafka's ServerTopicConfigSynonyms:
# the first, highest-priority synonym). Topic configs missing here have no broker default.
TOPIC_TO_BROKER = {
    "cleanup.policy": "log.cleanup.policy",
    "compression.type": "compression.type",
    "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "index.interval.bytes": "log.index.interval.bytes",
    "local.retention.bytes": "log.local.retention.bytes",
    "local.retention.ms": "log.local.retention.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.type": "log.message.timestamp.type",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "min.insync.replicas": "min.insync.replicas",
    "preallocate": "log.preallocate",
    "retention.bytes": "log.retention.bytes",
    "retention.ms": "log.retention.ms",
    "segment.bytes": "log.segment.bytes",
    "segment.index.bytes": "log.index.size.max.bytes",
    "segment.jitter.ms": "log.roll.jitter.ms",
    "segment.ms": "log.roll.ms",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
}

# Broker configs that stand for one another, highest priority first (Kafka's
# DynamicBrokerConfig.brokerConfigSynonyms); every other broker config is its only synonym.
_SYNONYM_GROUPS = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)


# Listener configs given per SASL mechanism (listener.name.<l>.<mechanism>.<name>: Kafka's
# DynamicBrokerConfig.ListenerMechanismConfigs).
LISTENER_MECHANISM_CONFIGS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
                              "sasl.server.callback.handler.class", "connections.max.reauth.ms")


def broker_synonyms(name: str) -> tuple[str, ...]:
    """The broker configs that may supply `name`'s value, in Kafka's order of priority; a
    listener-prefixed name's are itself and its base name (of a SASL mechanism's
    `listener.name.<l>.<mechanism>.sasl.jaas.config`, the mechanism config's name)."""
    base = listener_base_name(name)
    if base is not None:
        return (name, next((m for m in LISTENER_MECHANISM_CONFIGS if base.endswith(m)), base))
    if name == "log.flush.interval.ms":  # log.flush.scheduler.interval.ms is its default
        return ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")
    for group in _SYNONYM_GROUPS:
        if name in group:
            return group
    return (name,)


# Broker configs that AlterConfigs/IncrementalAlterConfigs may change at run time: Kafka 4.3's
# DynamicBrokerConfig.AllDynamicConfigs, every one of them (the broker defaults of topic configs, the
# log cleaner's, thread counts, listeners and their SSL/SASL settings, connection quotas, ...). Of a
# topic config's broker synonyms only the first is dynamic (Kafka's DynamicLogConfig takes
# ServerTopicConfigSynonyms' first synonyms): log.retention.ms, log.roll.ms, log.roll.jitter.ms are;
# log.retention.hours, log.retention.minutes, log.roll.hours, log.roll.jitter.hours,
# log.flush.scheduler.interval.ms are read-only, as in Kafka 4.3. What kafka-wire uses of them is applied
# live (broker/dynamic_broker_config.apply_dynamic_broker_configs); the rest is stored and described.
DYNAMIC_BROKER_KEYS = KAFKA_DYNAMIC_BROKER_CONFIG_NAMES

def java_set(names) -> str:
    """A set of names as Kafka 4.x's messages print a Java Set: [a, b]."""
    return "[" + ", ".join(names) + "]"


def listener_base_name(name: str) -> str | None:
    """`max.connections` of `listener.name.<listener>.max.connections` (Kafka's ListenerConfigRegex), else None."""
    if not name.startswith(LISTENER_PREFIX):
        return None
    parts = name.split(".", 3)
    return parts[3] if len(parts) == 4 else None


def validate_dynamic_broker_configs(props: dict[str, str | None], per_broker: bool = True) -> None:
    """Kafka's DynamicBrokerConfig.validateConfigs for a resource's complete new set of dynamic
    configs (per_broker: this broker's id, else the default broker ""): the names, then each value's
    type and bounds (a listener-prefixed name's by its base name's). Raises ConfigError with Kafka's
    message (the broker answers INVALID_REQUEST with it, ConfigAdminManager.validateBrokerConfigChange).
    As Kafka, names it does not know are accepted (kept for plugins; stored, never applied) and only
    Kafka's own non-dynamic names (and kafka-wire's own keys) refused. What a change does to the running
    broker is checked by dynamic_broker_config.validate_reconfiguration."""
    from .kafka_config_names import (KAFKA_BROKER_CONFIG_NAMES, KAFKA_CLUSTER_LEVEL_LISTENER_CONFIG_NAMES,
                                     KAFKA_LISTENER_ONLY_SECURITY_CONFIG_NAMES, KAFKA_PER_BROKER_CONFIG_NAMES)

    def known_static(name: str) -> bool:
        return name not in DYNAMIC_BROKER_KEYS and (name in KAFKA_BROKER_CONFIG_NAMES or name in BROKER_KEYS)

    for names, message in (
            ([n for n in props if known_static(n)], "Cannot update these configs dynamically"),
            ([n for n in props if n in KAFKA_LISTENER_ONLY_SECURITY_CONFIG_NAMES],
             "These security configs can be dynamically updated only per-listener using the listener prefix")):
        if names:
            raise ConfigError(f"{message}: {java_set(names)}")
    for name, raw in props.items():
        key = BROKER_KEYS.get(listener_base_name(name) or name)
        if key is not None:
            key.parse(raw)
    if not per_broker:
        names = [n for n in props if n in KAFKA_PER_BROKER_CONFIG_NAMES or (
            listener_base_name(n) is not None
            and listener_base_name(n) not in KAFKA_CLUSTER_LEVEL_LISTENER_CONFIG_NAMES)]
        if names:
            raise ConfigError("Cannot update these configs at default cluster level, broker id must be specified: "
                              + java_set(names))


class BrokerConfig:
    """The broker's static configuration: defaults, then server.properties, then --set overrides."""

    def __init__(self, props: dict[str, str] | None = None) -> None:
        self.original = dict(props or {})
        self.values: dict[str, object] = {}
        self.explicit: set[str] = set()
        for name, key in BROKER_KEYS.items():
            self.values[name] = key.default
        # Keys this broker does not read: accepted, as Kafka accepts them, and kept in `original`;
        # `kafka-wire serve` warns about each (unknown_key_warnings).
        self.unknown = sorted(name for name in self.original
                              if (name not in BROKER_KEYS or name in UNUSED_KAFKA_BROKER_KEYS)
                              and not name.startswith(LISTENER_PREFIX))
        for name, raw in self.original.items():
            key = BROKER_KEYS.get(name)
            if key is None:
                continue
            self.values[name] = key.parse(raw)
            self.explicit.add(name)
        self._validate()
        # Dynamic broker configs (KIP-226) overlay the static ones: the cluster-wide defaults,
        # then this broker's own (set_dynamic).
        self.static_values = dict(self.values)
        self.static_original = dict(self.original)
        self.dynamic_default: dict[str, str] = {}
        self.dynamic_broker: dict[str, str] = {}

    def set_dynamic(self, default: dict[str, str], per_broker: dict[str, str]) -> None:
        """Overlay the dynamic configs of the default broker, then of this broker, on the static
        configuration, as Kafka's DynamicBrokerConfig does (each key on its own: a static
        log.retention.ms still outranks a dynamic log.retention.hours, its lower synonym)."""
        values = dict(self.static_values)
        for layer in (default, per_broker):
            for name, raw in layer.items():
                key = BROKER_KEYS.get(name)
                if key is None:
                    continue
                try:
                    values[name] = key.parse(raw)
                except ConfigError as exc:  # stored by an older version with other rules: keep starting
                    logging.getLogger("kafka_wire.broker").warning("ignoring dynamic config %s=%s: %s", name, raw, exc)
        self.values = values
        # Listener-prefixed settings (listener.name.<l>.<key>) are read from `original`
        # (security/tls.listener_setting): the dynamic ones overlay the static ones there.
        self.original = {**self.static_original,
                         **{name: raw for layer in (default, per_broker) for name, raw in layer.items()
                            if listener_base_name(name) is not None and raw is not None}}
        self.dynamic_default = dict(default)
        self.dynamic_broker = dict(per_broker)

    def overlaid(self, default: dict[str, str], per_broker: dict[str, str]) -> BrokerConfig:
        """This configuration with other dynamic layers (what a change would make of it)."""
        other = copy.copy(self)
        other.set_dynamic(default, per_broker)
        return other

    @classmethod
    def load(cls, path: str | None, overrides: list[str] | None = None) -> BrokerConfig:
        props: dict[str, str] = {}
        if path:
            try:
                data = Path(path).read_bytes()
            except OSError as exc:
                raise ConfigError(f"Cannot read the configuration file {path}: {exc.strerror or exc}") from None
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:  # what java.util.Properties.load reads: ISO 8859-1
                text = data.decode("latin-1")
            try:
                props.update(parse_properties(text))
            except MalformedProperties as exc:
                raise ConfigError(str(exc)) from None
        for item in overrides or []:
            if "=" not in item:
                raise ConfigError(f"--set expects key=value, got {item!r}")
            key, value = item.split("=", 1)
            props[key.strip()] = value.strip()
        return cls(props)

    def unknown_key_warnings(self) -> list[str]:
        """One warning per supplied key this broker does not read, telling a typo from a Kafka
        setting kafka-wire does without (Kafka 4.3's broker says nothing of either)."""
        if not self.unknown:
            return []
        from .kafka_config_names import KAFKA_BROKER_CONFIG_NAMES

        return [f"The configuration '{name}' is a Kafka broker config that kafka-wire does not use; ignored."
                if name in KAFKA_BROKER_CONFIG_NAMES else
                f"The configuration '{name}' was supplied but isn't a known config."
                for name in self.unknown]

    def _validate(self) -> None:
        if self.values["broker.id"] not in (-1, None) and "node.id" not in self.explicit:
            self.values["node.id"] = self.values["broker.id"]
        # Listener strings are parsed when the server starts; a bad one must stop the broker
        # here, with the configuration error, not later with a traceback.
        for key in ("listeners", "advertised.listeners"):
            items = self.values[key]
            if not items:
                continue
            try:
                parsed = [parse_listener(item) for item in items]
            except ConfigError as exc:
                raise ConfigError(f"Invalid value {self.original.get(key, ','.join(items))} for configuration "
                                  f"{key}: {exc}") from None
            names = [name for name, _, _ in parsed]
            if len(set(names)) != len(names):
                raise ConfigError(f"Invalid value {self.original.get(key, ','.join(items))} for configuration "
                                  f"{key}: Each listener must have a different name")

    def __getitem__(self, name: str):
        return self.values[name]

    def get(self, name: str, default=None):
        return self.values.get(name, default)

    # -- derived settings ---------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return int(self.values["node.id"])

    @property
    def log_dirs(self) -> list[str]:
        dirs = self.values["log.dirs"]
        return list(dirs) if dirs else [str(self.values["log.dir"])]

    def listeners(self) -> list[tuple[str, str, int]]:
        """(listener name, host, port) for each entry of `listeners`."""
        return [parse_listener(item) for item in self.values["listeners"]]

    def advertised_listeners(self) -> list[tuple[str, str, int]]:
        items = self.values["advertised.listeners"] or self.values["listeners"]
        return [parse_listener(item) for item in items]

    def security_protocol(self, listener_name: str) -> str:
        for entry in self.values["listener.security.protocol.map"]:
            name, _, proto = entry.partition(":")
            if name == listener_name:
                return proto
        return listener_name

    def retention_ms(self) -> int:
        if self.values["log.retention.ms"] is not None:
            return int(self.values["log.retention.ms"])
        if self.values["log.retention.minutes"] is not None:
            return int(self.values["log.retention.minutes"]) * 60_000
        return int(self.values["log.retention.hours"]) * 3_600_000

    def _topic_default_from_broker(self, topic_key: str) -> object:
        """A topic config's effective broker-level default (Kafka's KafkaConfig.extractLogConfigMap)."""
        if topic_key == "retention.ms":
            return self.retention_ms()
        if topic_key == "segment.ms":
            if self.values["log.roll.ms"] is not None:
                return int(self.values["log.roll.ms"])
            return int(self.values["log.roll.hours"]) * 3_600_000
        if topic_key == "segment.jitter.ms":
            if self.values["log.roll.jitter.ms"] is not None:
                return int(self.values["log.roll.jitter.ms"])
            return int(self.values["log.roll.jitter.hours"]) * 3_600_000
        if topic_key == "flush.ms":
            value = self.values["log.flush.interval.ms"]
            return self.values["log.flush.scheduler.interval.ms"] if value is None else value
        broker_key = TOPIC_TO_BROKER.get(topic_key)
        if broker_key is None:
            return TOPIC_KEYS[topic_key].default
        return self.values[broker_key]

    def topic_defaults(self) -> dict[str, object]:
        return {name: self._topic_default_from_broker(name) for name in TOPIC_KEYS}

    def config_synonyms(self, name: str, synonyms: tuple[str, ...]) -> list[tuple[str, str | None, ConfigSource]]:
        """Kafka's ConfigHelper.configSynonyms: (name, value, source) of each synonym set
        dynamically for this broker, then for the default broker, then in server.properties,
        then of each with a default, dropping those listed before
        the first entry for `name` itself (so a config set only through a lower-priority synonym,
        or not at all, has none)."""
        found = []
        for source, layer in ((ConfigSource.DYNAMIC_BROKER_CONFIG, self.dynamic_broker),
                              (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, self.dynamic_default)):
            for synonym in synonyms:
                if synonym in layer:
                    found.append((synonym, layer[synonym], source))
        for source, present in ((ConfigSource.STATIC_BROKER_CONFIG, lambda n: n in self.explicit),
                                (ConfigSource.DEFAULT_CONFIG, lambda n: BROKER_KEYS[n].default is not None)):
            for synonym in synonyms:
                if source == ConfigSource.STATIC_BROKER_CONFIG and listener_base_name(synonym) is not None \
                        and synonym in self.static_original:
                    found.append((synonym, self.static_original[synonym], source))
                if synonym in BROKER_KEYS and present(synonym):
                    key = BROKER_KEYS[synonym]
                    value = self.static_values[synonym] if source == ConfigSource.STATIC_BROKER_CONFIG else key.default
                    found.append((synonym, key.render(value), source))
        for i, (synonym, _, _) in enumerate(found):
            if synonym == name:
                return found[i:]
        return []

    def topic_config_synonyms(self, topic_key: str) -> list[tuple[str, str | None, ConfigSource]]:
        """The broker-level synonyms of a topic config (empty for configs with no broker default)."""
        broker_key = TOPIC_TO_BROKER.get(topic_key)
        if broker_key is None:
            return []
        return self.config_synonyms(broker_key, broker_synonyms(broker_key))

    def describe_topic_config(self, overrides: dict[str, object]) -> list[tuple[str, str | None, ConfigSource, ConfigKey]]:
        """Every topic config with its effective value and where it came from (Kafka's
        ConfigHelper.createTopicConfigEntry: the source of the first synonym, DEFAULT_CONFIG if none)."""
        out = []
        for name, key in TOPIC_KEYS.items():
            if name in overrides:
                out.append((name, key.render(overrides[name]), ConfigSource.DYNAMIC_TOPIC_CONFIG, key))
                continue
            if key.internal:
                continue
            synonyms = self.topic_config_synonyms(name)
            source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
            out.append((name, key.render(self._topic_default_from_broker(name)), source, key))
        return out

    def describe_broker_config(self) -> list[tuple[str, str | None, ConfigSource, ConfigKey]]:
        out = []
        for name, key in BROKER_KEYS.items():
            synonyms = self.config_synonyms(name, broker_synonyms(name))
            source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
            out.append((name, key.render(self.values[name]), source, key))
        return out


def parse_topic_configs(configs: dict[str, str | None], defaults: dict[str, object] | None = None
                        ) -> dict[str, object]:
    """Validate a topic's complete set of overrides as CreateTopics/AlterConfigs do (Kafka's
    LogConfig.validate): names, then each value in Kafka's definition order (of several invalid
    ones, Kafka reports the first in that order), then, given the broker's topic config defaults,
    the rules across keys on the effective config. Raises ConfigError."""
    unknown = [name for name in configs if name not in TOPIC_KEYS]
    if unknown:
        raise ConfigError(f"Unknown topic config name: {unknown[0]}")
    nulls = [name for name, raw in configs.items() if raw is None]
    if nulls:
        raise ConfigError("Null value not supported for topic configs: " + ",".join(nulls))
    parsed = {name: TOPIC_KEYS[name].parse(configs[name]) for name in DEFINITION_ORDER if name in configs}
    if defaults is not None:
        try:
            check_topic_config_values({**defaults, **parsed})
        except InvalidConfig as exc:
            raise ConfigError(str(exc)) from None
    return {name: parsed[name] for name in configs}


def parse_listener(item: str) -> tuple[str, str, int]:
    """'PLAINTEXT://127.0.0.1:9092' -> ('PLAINTEXT', '127.0.0.1', 9092); [::1] supported.
    A malformed one raises ConfigError with Kafka's reason (its Endpoint parser's)."""
    name, sep, rest = item.partition("://")
    host, colon, port = rest.rpartition(":")
    if not sep or not name.strip() or not colon or not port.isdigit():
        raise ConfigError(f"Unable to parse {item} to a broker endpoint (expected NAME://host:port)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    port_num = int(port)
    if port_num > 65535:
        raise ConfigError(f"invalid port number {port_num} in {item} (0-65535; 0 picks a free port)")
    return name.strip().upper(), host, port_num
