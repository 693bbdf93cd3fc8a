"""Topic-level log configuration under Kafka's names (segment.bytes, retention.ms, ...) with Kafka's defaults.

`TOPIC_CONFIGS` is the one table of topic configs: name, Kafka's ConfigDef type, default,
validation and documentation, as Kafka's LogConfig defines them. The broker derives its
CreateTopics/AlterConfigs validation and DescribeConfigs answers from it.

A LogConfig is built from a mapping of topic config names to values; values may be strings (from
`server.properties`, `--set`, CreateTopics or AlterConfigs) or already typed. Names this module does
not know are kept as given, so a broker can store and describe them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)
INT_MAX = 2**31 - 1
INT_MIN = -(2**31)

# Smallest segment.bytes Kafka accepts (LegacyRecord.RECORD_OVERHEAD_V0); tests use small segments.
MIN_SEGMENT_BYTES = 14
# An index must hold at least one entry (Kafka: segment.index.bytes >= 4).
MIN_SEGMENT_INDEX_BYTES = 4

COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


class InvalidConfig(ValueError):
    """A config value that does not parse or is out of range (INVALID_CONFIG)."""


def parse_config_value(name: str, type_name: str, value: Any, *, minimum: float | None = None,
                       maximum: float | None = None, choices: tuple[str, ...] | None = None) -> Any:
    """Parse and validate one config value as Kafka's ConfigDef does, with its error wording.

    type_name is Kafka's ConfigDef.Type (BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS,
    PASSWORD). Strings are trimmed; typed values pass through after validation.
    """
    if value is None:
        return None

    def invalid(reason: str) -> InvalidConfig:
        return InvalidConfig(f"Invalid value {value} for configuration {name}: {reason}")

    if type_name == "BOOLEAN":
        if isinstance(value, bool):
            parsed = value
        else:
            text = str(value).strip().lower()
            if text not in ("true", "false"):
                raise invalid("Expected value to be either true or false")
            parsed = text == "true"
    elif type_name in ("INT", "SHORT", "LONG"):
        if isinstance(value, bool):
            raise invalid(f"Not a number of type {type_name}")
        try:
            parsed = value if isinstance(value, int) else int(str(value).strip())
        except ValueError:
            raise invalid(f"Not a number of type {type_name}") from None
        low, high = {"INT": (INT_MIN, INT_MAX), "SHORT": (-(2**15), 2**15 - 1),
                     "LONG": (LONG_MIN, LONG_MAX)}[type_name]
        if not low <= parsed <= high:
            raise invalid(f"Not a number of type {type_name}")
    elif type_name == "DOUBLE":
        try:
            parsed = float(value) if not isinstance(value, str) else float(value.strip())
        except (TypeError, ValueError):
            raise invalid("Not a number of type DOUBLE") from None
    elif type_name == "LIST":
        if isinstance(value, (list, tuple)):
            parsed = [str(item).strip() for item in value if str(item).strip()]
        else:
            parsed = [item.strip() for item in str(value).split(",") if item.strip()]
    else:
        parsed = str(value).strip()
    if isinstance(parsed, (int, float)) and not isinstance(parsed, bool):
        if minimum is not None and parsed < minimum:
            raise invalid(f"Value must be at least {_number(minimum)}")
        if maximum is not None and parsed > maximum:
            raise invalid(f"Value must be no more than {_number(maximum)}")
    if choices is not None:
        for item in parsed if isinstance(parsed, list) else [parsed]:
            if item not in choices:
                raise invalid("String must be one of: " + ", ".join(choices))
    return parsed


def _number(limit: float) -> str:
    return str(int(limit)) if float(limit).is_integer() else str(limit)


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    """One topic config: Kafka's name, ConfigDef type, default, validation and documentation."""

    name: str
    type: str
    default: Any
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None

    def parse(self, value: Any) -> Any:
        return parse_config_value(self.name, self.type, value, minimum=self.minimum,
                                  maximum=self.maximum, choices=self.choices)


def _defs(*defs: TopicConfigDef) -> dict[str, TopicConfigDef]:
    return {d.name: d for d in defs}


# Kafka 3.x topic configs (LogConfig.CONFIG), defaults and validators as Kafka declares them.
TOPIC_CONFIGS: dict[str, TopicConfigDef] = _defs(
    TopicConfigDef("cleanup.policy", "LIST", ["delete"],
                   "Retention policy of old log segments: delete, compact, or both.",
                   choices=("compact", "delete")),
    TopicConfigDef("compression.type", "STRING", "producer",
                   "Codec of the topic's batches; producer keeps the producer's codec.",
                   choices=COMPRESSION_TYPES),
    TopicConfigDef("compression.gzip.level", "INT", -1,
                   "Compression level when the topic's codec is gzip (-1: the codec's default).",
                   minimum=-1, maximum=9),
    TopicConfigDef("compression.lz4.level", "INT", 9,
                   "Compression level when the topic's codec is lz4.", minimum=1, maximum=17),
    TopicConfigDef("compression.zstd.level", "INT", 3,
                   "Compression level when the topic's codec is zstd.", minimum=-131072, maximum=22),
    TopicConfigDef("delete.retention.ms", "LONG", 86_400_000,
                   "How long delete tombstones are kept in a compacted topic.", minimum=0),
    TopicConfigDef("file.delete.delay.ms", "LONG", 60_000,
                   "Time to wait before deleting a file from the filesystem.", minimum=0),
    TopicConfigDef("flush.messages", "LONG", LONG_MAX,
                   "Number of messages after which the log is fsynced.", minimum=1),
    TopicConfigDef("flush.ms", "LONG", LONG_MAX,
                   "Time after which the log is fsynced.", minimum=0),
    TopicConfigDef("follower.replication.throttled.replicas", "LIST", [],
                   "Replicas whose follower replication is throttled."),
    TopicConfigDef("index.interval.bytes", "INT", 4096,
                   "Bytes of log between two offset index entries.", minimum=0),
    TopicConfigDef("leader.replication.throttled.replicas", "LIST", [],
                   "Replicas whose leader replication is throttled."),
    TopicConfigDef("local.retention.bytes", "LONG", -2,
                   "Bytes kept locally before tiered storage deletes them (-2: retention.bytes).",
                   minimum=-2),
    TopicConfigDef("local.retention.ms", "LONG", -2,
                   "Time kept locally before tiered storage deletes it (-2: retention.ms).", minimum=-2),
    TopicConfigDef("max.compaction.lag.ms", "LONG", LONG_MAX,
                   "Longest time a message stays ineligible for compaction.", minimum=1),
    TopicConfigDef("max.message.bytes", "INT", 1_048_588,
                   "Largest record batch size the topic accepts.", minimum=0),
    TopicConfigDef("message.downconversion.enable", "BOOLEAN", True,
                   "Whether old consumers get batches down-converted to their format."),
    # Kafka 3.x still accepts this topic config and ignores it: the inter-broker protocol is
    # 3.0 or later, so every batch is written in the v2 format (it was removed in Kafka 4.0).
    TopicConfigDef("message.format.version", "STRING", "3.0-IV1",
                   "Deprecated and ignored: batches are always written as RecordBatch v2."),
    TopicConfigDef("message.timestamp.after.max.ms", "LONG", LONG_MAX,
                   "How far after the broker's clock a CreateTime timestamp may be.", minimum=0),
    TopicConfigDef("message.timestamp.before.max.ms", "LONG", LONG_MAX,
                   "How far before the broker's clock a CreateTime timestamp may be.", minimum=0),
    TopicConfigDef("message.timestamp.difference.max.ms", "LONG", LONG_MAX,
                   "Deprecated: largest difference between a CreateTime timestamp and the broker's clock.",
                   minimum=0),
    TopicConfigDef("message.timestamp.type", "STRING", "CreateTime",
                   "Whether records keep the producer's timestamp or get the append time.",
                   choices=("CreateTime", "LogAppendTime")),
    TopicConfigDef("min.cleanable.dirty.ratio", "DOUBLE", 0.5,
                   "Dirty share of the log above which compaction runs.", minimum=0, maximum=1),
    TopicConfigDef("min.compaction.lag.ms", "LONG", 0,
                   "Shortest time a message stays uncompacted.", minimum=0),
    TopicConfigDef("min.insync.replicas", "INT", 1,
                   "In-sync replicas needed for an acks=all write to succeed.", minimum=1),
    TopicConfigDef("preallocate", "BOOLEAN", False,
                   "Whether new segment files are preallocated."),
    TopicConfigDef("remote.storage.enable", "BOOLEAN", False,
                   "Whether the topic uses tiered storage."),
    TopicConfigDef("retention.bytes", "LONG", -1,
                   "Size a partition may grow to before old segments are deleted (-1: no limit)."),
    TopicConfigDef("retention.ms", "LONG", 604_800_000,
                   "Age after which old segments are deleted (-1: no limit).", minimum=-1),
    TopicConfigDef("segment.bytes", "INT", 1_073_741_824,
                   "Size of one log segment file.", minimum=MIN_SEGMENT_BYTES),
    TopicConfigDef("segment.index.bytes", "INT", 10_485_760,
                   "Size of the offset index of one segment.", minimum=MIN_SEGMENT_INDEX_BYTES),
    TopicConfigDef("segment.jitter.ms", "LONG", 0,
                   "Random jitter subtracted from segment.ms.", minimum=0),
    TopicConfigDef("segment.ms", "LONG", 604_800_000,
                   "Time after which the active segment is rolled.", minimum=1),
    TopicConfigDef("unclean.leader.election.enable", "BOOLEAN", False,
                   "Whether an out-of-sync replica may become leader."),
)


class LogConfig:
    """The effective topic config of one partition log: Kafka defaults overlaid with overrides."""

    __slots__ = ("_values", "overrides")

    def __init__(self, overrides: Mapping[str, Any] | None = None):
        self.overrides: dict[str, Any] = {}
        values = {name: definition.default for name, definition in TOPIC_CONFIGS.items()}
        for name, value in (overrides or {}).items():
            definition = TOPIC_CONFIGS.get(name)
            parsed = value if definition is None else definition.parse(value)
            values[name] = parsed
            self.overrides[name] = parsed
        self._values = values

    @classmethod
    def of(cls, config: "LogConfig | Mapping[str, Any] | None") -> "LogConfig":
        return config if isinstance(config, LogConfig) else cls(config)

    def merged(self, overrides: Mapping[str, Any] | None) -> "LogConfig":
        """A new config: this one's overrides, then `overrides` on top."""
        combined = dict(self.overrides)
        combined.update(overrides or {})
        return LogConfig(combined)

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
