"""Broker and topic configuration under Kafka's property names, from server.properties and --set.

Every key we read is declared once here with Kafka's type and default. Topic-level keys
(`retention.ms`, `segment.bytes`, ...) take their default from the broker key Kafka maps them to
(`log.retention.ms`, `log.segment.bytes`, ...), so DescribeConfigs can say where a value came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

LONG_MAX = 9223372036854775807


class ConfigType(IntEnum):
    """DescribeConfigs' config_type values."""

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

    def parse(self, raw) -> object:
        """Parse a property value (string or already typed) into its Python value."""
        if raw is None:
            return None
        t = self.type
        try:
            if t == ConfigType.BOOLEAN:
                if isinstance(raw, bool):
                    return raw
                text = str(raw).strip().lower()
                if text not in ("true", "false"):
                    raise ValueError(raw)
                value = text == "true"
            elif t in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
                value = int(str(raw).strip())
            elif t == ConfigType.DOUBLE:
                value = float(str(raw).strip())
            elif t == ConfigType.LIST:
                if isinstance(raw, (list, tuple)):
                    value = list(raw)
                else:
                    value = [x.strip() for x in str(raw).split(",") if x.strip()]
            else:
                value = str(raw).strip()
        except ValueError:
            raise ConfigError(f"Invalid value {raw} for configuration {self.name}") from None
        if self.minimum is not None and isinstance(value, (int, float)) and value < self.minimum:
            raise ConfigError(
                f"Invalid value {raw} for configuration {self.name}: Value must be at least {self.minimum:g}"
            )
        if self.choices:
            items = value if isinstance(value, list) else [value]
            for item in items:
                if item not in self.choices:
                    raise ConfigError(
                        f"Invalid value {raw} for configuration {self.name}: String must be one of: "
                        + ", ".join(self.choices)
                    )
        return value

    def render(self, value) -> str | None:
        """A value as Kafka prints it in DescribeConfigs."""
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return ",".join(value)
        return str(value)


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
        ConfigKey("log.segment.bytes", I, 1073741824, minimum=14),
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
        ConfigKey("log.cleanup.policy", LS, ["delete"], choices=("delete", "compact")),
        ConfigKey("log.cleaner.enable", B, True),
        ConfigKey("log.cleaner.delete.retention.ms", L, 86400000, minimum=0),
        ConfigKey("log.cleaner.min.cleanable.ratio", D, 0.5, minimum=0),
        ConfigKey("log.cleaner.min.compaction.lag.ms", L, 0, minimum=0),
        ConfigKey("log.cleaner.max.compaction.lag.ms", L, LONG_MAX, minimum=1),
        ConfigKey("log.cleaner.backoff.ms", L, 15000, minimum=0),
        ConfigKey("log.message.timestamp.type", S, "CreateTime", choices=("CreateTime", "LogAppendTime")),
        ConfigKey("log.message.timestamp.before.max.ms", L, LONG_MAX, minimum=0),
        ConfigKey("log.message.timestamp.after.max.ms", L, LONG_MAX, minimum=0),
        ConfigKey("compression.type", S, "producer",
                  choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
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
        ConfigKey("transaction.state.log.num.partitions", I, 50, minimum=1),
        ConfigKey("transaction.state.log.replication.factor", ConfigType.SHORT, 3, minimum=1),
        ConfigKey("transaction.state.log.min.isr", I, 2, minimum=1),
        ConfigKey("transaction.max.timeout.ms", I, 900000, minimum=1),
        ConfigKey("transaction.abort.timed.out.transaction.cleanup.interval.ms", I, 10000, minimum=1),
        ConfigKey("transactional.id.expiration.ms", I, 604800000, minimum=1),
        ConfigKey("producer.id.expiration.ms", I, 86400000, minimum=1),
        ConfigKey("replica.lag.time.max.ms", L, 30000),
        ConfigKey("replica.fetch.max.bytes", I, 1048576, minimum=0),
        ConfigKey("replica.fetch.wait.max.ms", I, 500),
        ConfigKey("zookeeper.connect", S, None),
        ConfigKey("zookeeper.session.timeout.ms", I, 18000),
        ConfigKey("controlled.shutdown.enable", B, True),
        ConfigKey("auto.leader.rebalance.enable", B, True),
        ConfigKey("num.network.threads", I, 3, minimum=1),
        ConfigKey("num.io.threads", I, 8, minimum=1),
        ConfigKey("broker.rack", S, None),
        ConfigKey("super.users", S, None),
        ConfigKey("allow.everyone.if.no.acl.found", B, False),
        ConfigKey("metrics.port", I, None, "Port of the Prometheus endpoint (kafka-wire); unset: off."),
    ]
}

# Topic-level config -> (broker key supplying its default, type, Kafka's hard default, extra).
TOPIC_KEYS: dict[str, ConfigKey] = {
    k.name: k
    for k in [
        ConfigKey("cleanup.policy", LS, ["delete"], choices=("delete", "compact")),
        ConfigKey("compression.type", S, "producer",
                  choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
        ConfigKey("delete.retention.ms", L, 86400000, minimum=0),
        ConfigKey("file.delete.delay.ms", L, 60000, minimum=0),
        ConfigKey("flush.messages", L, LONG_MAX, minimum=1),
        ConfigKey("flush.ms", L, LONG_MAX, minimum=0),
        ConfigKey("index.interval.bytes", I, 4096, minimum=0),
        ConfigKey("max.compaction.lag.ms", L, LONG_MAX, minimum=1),
        ConfigKey("max.message.bytes", I, 1048588, minimum=0),
        ConfigKey("message.timestamp.type", S, "CreateTime", choices=("CreateTime", "LogAppendTime")),
        ConfigKey("message.timestamp.before.max.ms", L, LONG_MAX, minimum=0),
        ConfigKey("message.timestamp.after.max.ms", L, LONG_MAX, minimum=0),
        ConfigKey("min.cleanable.dirty.ratio", D, 0.5, minimum=0),
        ConfigKey("min.compaction.lag.ms", L, 0, minimum=0),
        ConfigKey("min.insync.replicas", I, 1, minimum=1),
        ConfigKey("preallocate", B, False),
        ConfigKey("retention.bytes", L, -1),
        ConfigKey("retention.ms", L, 604800000, minimum=-1),
        ConfigKey("segment.bytes", I, 1073741824, minimum=14),
        ConfigKey("segment.index.bytes", I, 10485760, minimum=4),
        ConfigKey("segment.jitter.ms", L, 0, minimum=0),
        ConfigKey("segment.ms", L, 604800000, minimum=1),
        ConfigKey("unclean.leader.election.enable", B, False),
    ]
}

TOPIC_TO_BROKER = {
    "cleanup.policy": "log.cleanup.policy",
    "compression.type": "compression.type",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "index.interval.bytes": "log.index.interval.bytes",
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


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties: `key=value`, `key: value` or `key value`; # and ! comments; \\ continues."""
    props: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        key, value = _split_property(logical)
        props[key] = value
        logical = ""
    if logical:
        key, value = _split_property(logical)
        props[key] = value
    return props


def _split_property(line: str) -> tuple[str, str]:
    for i, ch in enumerate(line):
        if ch in "=:" or ch.isspace():
            key = line[:i].strip()
            rest = line[i:].lstrip()
            if rest and rest[0] in "=:":
                rest = rest[1:]
            return key, rest.strip()
    return line.strip(), ""


class BrokerConfig:
    """The broker's static configuration: defaults, then server.properties, then --set overrides."""

    def __init__(self, props: dict[str, str] | None = None) -> None:
        self.original = dict(props or {})
        self.values: dict[str, object] = {}
        self.explicit: set[str] = set()
        for name, key in BROKER_KEYS.items():
            self.values[name] = key.default
        for name, raw in self.original.items():
            key = BROKER_KEYS.get(name)
            if key is None:
                # Kafka logs unknown keys and keeps going; so do we (they stay visible in `original`).
                continue
            self.values[name] = key.parse(raw)
            self.explicit.add(name)
        self._validate()

    @classmethod
    def load(cls, path: str | None, overrides: list[str] | None = None) -> BrokerConfig:
        props: dict[str, str] = {}
        if path:
            props.update(parse_properties(Path(path).read_text()))
        for item in overrides or []:
            if "=" not in item:
                raise ConfigError(f"--set expects key=value, got {item!r}")
            key, value = item.split("=", 1)
            props[key.strip()] = value.strip()
        return cls(props)

    def _validate(self) -> None:
        if self.values["broker.id"] not in (-1, None) and "node.id" not in self.explicit:
            self.values["node.id"] = self.values["broker.id"]

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

    def _topic_default_from_broker(self, topic_key: str) -> tuple[object, bool]:
        """A topic config's broker-level default, and whether the broker config set it explicitly."""
        if topic_key == "retention.ms":
            explicit = bool({"log.retention.ms", "log.retention.minutes", "log.retention.hours"} & self.explicit)
            return self.retention_ms(), explicit
        if topic_key == "segment.ms":
            if self.values["log.roll.ms"] is not None:
                return int(self.values["log.roll.ms"]), True
            return int(self.values["log.roll.hours"]) * 3_600_000, "log.roll.hours" in self.explicit
        if topic_key == "segment.jitter.ms":
            if self.values["log.roll.jitter.ms"] is not None:
                return int(self.values["log.roll.jitter.ms"]), True
            return int(self.values["log.roll.jitter.hours"]) * 3_600_000, "log.roll.jitter.hours" in self.explicit
        if topic_key == "flush.ms":
            value = self.values["log.flush.interval.ms"]
            if value is None:
                return self.values["log.flush.scheduler.interval.ms"], False
            return value, True
        broker_key = TOPIC_TO_BROKER[topic_key]
        return self.values[broker_key], broker_key in self.explicit

    def topic_defaults(self) -> dict[str, object]:
        return {name: self._topic_default_from_broker(name)[0] for name in TOPIC_KEYS}

    def describe_topic_config(self, overrides: dict[str, object]) -> list[tuple[str, str | None, ConfigSource, ConfigKey]]:
        """Every topic config with its effective value and where it came from."""
        out = []
        for name, key in TOPIC_KEYS.items():
            if name in overrides:
                out.append((name, key.render(overrides[name]), ConfigSource.DYNAMIC_TOPIC_CONFIG, key))
                continue
            value, explicit = self._topic_default_from_broker(name)
            source = ConfigSource.STATIC_BROKER_CONFIG if explicit else ConfigSource.DEFAULT_CONFIG
            out.append((name, key.render(value), source, key))
        return out

    def describe_broker_config(self) -> list[tuple[str, str | None, ConfigSource, ConfigKey]]:
        out = []
        for name, key in BROKER_KEYS.items():
            source = ConfigSource.STATIC_BROKER_CONFIG if name in self.explicit else ConfigSource.DEFAULT_CONFIG
            out.append((name, key.render(self.values[name]), source, key))
        return out


def parse_topic_configs(configs: dict[str, str | None]) -> dict[str, object]:
    """Validate topic config overrides as CreateTopics/AlterConfigs do; raises ConfigError."""
    parsed: dict[str, object] = {}
    for name, raw in configs.items():
        key = TOPIC_KEYS.get(name)
        if key is None:
            raise ConfigError(f"Unknown topic config name: {name}")
        if raw is None:
            raise ConfigError(f"Null value not supported for topic configs: {name}")
        parsed[name] = key.parse(raw)
    return parsed


def parse_listener(item: str) -> tuple[str, str, int]:
    """'PLAINTEXT://127.0.0.1:9092' -> ('PLAINTEXT', '127.0.0.1', 9092); [::1] supported."""
    name, sep, rest = item.partition("://")
    if not sep:
        raise ConfigError(f"Invalid listener {item!r}: expected NAME://host:port")
    host, _, port = rest.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port_num = int(port)
    except ValueError:
        raise ConfigError(f"Invalid listener {item!r}: bad port") from None
    return name.strip().upper(), host, port_num
