"""Topic-level log configuration under Kafka's names (segment.bytes, retention.ms, ...) with Kafka's defaults.

A LogConfig is built from a mapping of topic config names to values; values may be strings (from
`server.properties`, `--set`, CreateTopics or AlterConfigs) or already typed. Names this module does
not know are kept as given, so a broker can store and describe them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LONG_MAX = 2**63 - 1

# name -> (type, Kafka 3.x default). Types: int (int32/int64), float, bool, str, list (comma separated).
LOG_CONFIG_DEFS: dict[str, tuple[type, Any]] = {
    "cleanup.policy": (list, ["delete"]),
    "compression.type": (str, "producer"),
    "compression.gzip.level": (int, -1),
    "compression.lz4.level": (int, 9),
    "compression.zstd.level": (int, 3),
    "delete.retention.ms": (int, 86_400_000),
    "file.delete.delay.ms": (int, 60_000),
    "flush.messages": (int, LONG_MAX),
    "flush.ms": (int, LONG_MAX),
    "follower.replication.throttled.replicas": (list, []),
    "index.interval.bytes": (int, 4096),
    "leader.replication.throttled.replicas": (list, []),
    "local.retention.bytes": (int, -2),
    "local.retention.ms": (int, -2),
    "max.compaction.lag.ms": (int, LONG_MAX),
    "max.message.bytes": (int, 1_048_588),
    "message.downconversion.enable": (bool, True),
    "message.timestamp.after.max.ms": (int, LONG_MAX),
    "message.timestamp.before.max.ms": (int, LONG_MAX),
    "message.timestamp.difference.max.ms": (int, LONG_MAX),
    "message.timestamp.type": (str, "CreateTime"),
    "min.cleanable.dirty.ratio": (float, 0.5),
    "min.compaction.lag.ms": (int, 0),
    "min.insync.replicas": (int, 1),
    "preallocate": (bool, False),
    "remote.storage.enable": (bool, False),
    "retention.bytes": (int, -1),
    "retention.ms": (int, 604_800_000),
    "segment.bytes": (int, 1_073_741_824),
    "segment.index.bytes": (int, 10_485_760),
    "segment.jitter.ms": (int, 0),
    "segment.ms": (int, 604_800_000),
    "unclean.leader.election.enable": (bool, False),
}

# Smallest segment.bytes Kafka accepts (LegacyRecord.RECORD_OVERHEAD_V0); tests use small segments.
MIN_SEGMENT_BYTES = 14
# An index must hold at least one entry (Kafka: segment.index.bytes >= 4).
MIN_SEGMENT_INDEX_BYTES = 4


class InvalidConfig(ValueError):
    """A config value that does not parse or is out of range (INVALID_CONFIG)."""


def _parse(name: str, kind: type, value: Any) -> Any:
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "false"):
            return text == "true"
        raise InvalidConfig(f"{name}: {value!r} is not a boolean")
    if kind is int:
        if isinstance(value, bool):
            raise InvalidConfig(f"{name}: {value!r} is not a number")
        try:
            return int(str(value).strip()) if not isinstance(value, int) else value
        except ValueError:
            raise InvalidConfig(f"{name}: {value!r} is not a number") from None
    if kind is float:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise InvalidConfig(f"{name}: {value!r} is not a number") from None
    if kind is list:
        if isinstance(value, (list, tuple)):
            return [str(item).strip() for item in value if str(item).strip()]
        return [item.strip() for item in str(value).split(",") if item.strip()]
    return str(value)


class LogConfig:
    """The effective topic config of one partition log: Kafka defaults overlaid with overrides."""

    __slots__ = ("_values", "overrides")

    def __init__(self, overrides: Mapping[str, Any] | None = None):
        self.overrides: dict[str, Any] = {}
        values = {name: default for name, (_, default) in LOG_CONFIG_DEFS.items()}
        for name, value in (overrides or {}).items():
            definition = LOG_CONFIG_DEFS.get(name)
            parsed = value if definition is None else _parse(name, definition[0], value)
            values[name] = parsed
            self.overrides[name] = parsed
        self._values = values
        self._validate()

    @classmethod
    def of(cls, config: "LogConfig | Mapping[str, Any] | None") -> "LogConfig":
        return config if isinstance(config, LogConfig) else cls(config)

    def merged(self, overrides: Mapping[str, Any] | None) -> "LogConfig":
        """A new config: this one's overrides, then `overrides` on top."""
        combined = dict(self.overrides)
        combined.update(overrides or {})
        return LogConfig(combined)

    def _validate(self) -> None:
        if self.segment_bytes < MIN_SEGMENT_BYTES:
            raise InvalidConfig(f"segment.bytes must be at least {MIN_SEGMENT_BYTES}")
        if self.segment_index_bytes < MIN_SEGMENT_INDEX_BYTES:
            raise InvalidConfig(f"segment.index.bytes must be at least {MIN_SEGMENT_INDEX_BYTES}")
        if self.segment_ms < 1:
            raise InvalidConfig("segment.ms must be at least 1")
        if self.flush_messages < 1:
            raise InvalidConfig("flush.messages must be at least 1")
        if self.index_interval_bytes < 0:
            raise InvalidConfig("index.interval.bytes must not be negative")
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise InvalidConfig("message.timestamp.type must be CreateTime or LogAppendTime")

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name, default)

    def to_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def __repr__(self) -> str:
        return f"LogConfig({self.overrides!r})"

    # Typed accessors for the settings the log itself acts on.
    @property
    def segment_bytes(self) -> int:
        return self._values["segment.bytes"]

    @property
    def segment_ms(self) -> int:
        return self._values["segment.ms"]

    @property
    def segment_jitter_ms(self) -> int:
        return self._values["segment.jitter.ms"]

    @property
    def segment_index_bytes(self) -> int:
        return self._values["segment.index.bytes"]

    @property
    def index_interval_bytes(self) -> int:
        return self._values["index.interval.bytes"]

    @property
    def flush_messages(self) -> int:
        return self._values["flush.messages"]

    @property
    def flush_ms(self) -> int:
        return self._values["flush.ms"]

    @property
    def retention_ms(self) -> int:
        return self._values["retention.ms"]

    @property
    def retention_bytes(self) -> int:
        return self._values["retention.bytes"]

    @property
    def max_message_bytes(self) -> int:
        return self._values["max.message.bytes"]

    @property
    def message_timestamp_type(self) -> str:
        return self._values["message.timestamp.type"]

    @property
    def cleanup_policy(self) -> list[str]:
        return self._values["cleanup.policy"]
