"""Topic-level log configuration under Kafka's names (segment.bytes, retention.ms, ...) with Kafka's defaults.

`TOPIC_CONFIGS` is the one table of topic configs: name, Kafka's ConfigDef type, default,
validation and documentation, as Kafka's LogConfig defines them. The broker derives its
CreateTopics/AlterConfigs validation and DescribeConfigs answers from it.

A LogConfig is built from a mapping of topic config names to values; values may be strings (from
`server.properties`, `--set`, CreateTopics or AlterConfigs) or already typed. Names this module does
not know are kept as given, so a broker can store and describe them.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)
INT_MAX = 2**31 - 1
INT_MIN = -(2**31)

# Kafka 4.x's smallest segment.bytes and log.segment.bytes (KIP-1030; 3.x: 14 bytes), checked where
# a client or server.properties sets them.
MIN_SEGMENT_BYTES = 1_048_576
# The smallest segment the log itself works with (LegacyRecord.RECORD_OVERHEAD_V0, Kafka 3.x's
# minimum): what the broker's own settings (offsets.topic.segment.bytes, which Kafka allows down to
# 1) and configs stored by earlier versions may give a log. Tests that need small segments set
# `internal.segment.bytes`, as Kafka's own tests do.
LOG_MIN_SEGMENT_BYTES = 14
# An index must hold at least one entry (Kafka: segment.index.bytes >= 4).
MIN_SEGMENT_INDEX_BYTES = 4

COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


class InvalidConfig(ValueError):
    """A config value that does not parse or is out of range (INVALID_CONFIG)."""


# A validator beyond type, range and allowed values: (config name, parsed value) -> None, raising
# InvalidConfig with Kafka's message (ConfigDef.Validator.ensureValid).
Validator = Callable[[str, Any], None]

# Characters Java's String.trim removes (ConfigDef.parseType trims every string value).
_JAVA_SPACE = "".join(chr(c) for c in range(33))
# Kafka's ConfigDef splits a LIST at commas with any whitespace around them; Java's \s is ASCII.
_LIST_SEPARATOR = re.compile(r"\s*,\s*", re.ASCII)
# What Java's Double.parseDouble reads (Double.valueOf's grammar: NaN, Infinity, decimal and hex
# floats, an f/d suffix), unlike Python's float (inf, nan, underscores).
_JAVA_DOUBLE = re.compile(r"""[+-]?(?:NaN|Infinity|(?:
    (?P<dec>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
    |(?P<hex>0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)
    )[fFdD]?)""", re.VERBOSE)
_TYPE_RANGES = {"INT": (INT_MIN, INT_MAX), "SHORT": (-(2**15), 2**15 - 1), "LONG": (LONG_MIN, LONG_MAX)}


def java_trim(text: str) -> str:
    return text.strip(_JAVA_SPACE)


def java_double(value: float) -> str:
    """A double as Java's Double.toString prints it (Kafka's DescribeConfigs values and messages): the
    shortest digits that read back the same, in E notation outside [0.001, 10^7)."""
    if value != value or value in (float("inf"), float("-inf")):
        return {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[repr(value)]
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)  # Python's repr has no exponent in this range either
    sign, digits, exponent = decimal.Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digits))
    power = len(digits) + exponent - 1
    digits = digits.rstrip("0") or "0"
    return f"{'-' if sign else ''}{digits[0]}.{digits[1:] or '0'}E{power}"


def _java_integer(text: str) -> int | None:
    """Integer.parseInt/Long.parseLong's reading of a trimmed string (a sign and decimal digits, no
    underscores or spaces), or None."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not digits.isdecimal():
        return None
    return int(text)


def _java_double(text: str) -> float | None:
    match = _JAVA_DOUBLE.fullmatch(text)
    if match is None:
        return None
    body = text.rstrip("fFdD") if match["dec"] or match["hex"] else text
    if match["hex"]:
        return float.fromhex(body)
    return float(body.replace("Infinity", "inf").replace("NaN", "nan"))


def _shown(value: Any) -> str:
    """A value as Kafka's ConfigException message prints it (Java's toString)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown(item) for item in value) + "]"
    return str(value)


def invalid_value(name: str, value: Any, reason: str) -> InvalidConfig:
    return InvalidConfig(f"Invalid value {_shown(value)} for configuration {name}: {reason}")


def parse_config_value(name: str, type_name: str, value: Any, *, minimum: float | None = None,
                       maximum: float | None = None, choices: tuple[str, ...] | None = None,
                       validator: Validator | None = None) -> Any:
    """Parse and validate one config value as Kafka's ConfigDef does (parseType, then the
    validator), with its error wording.

    type_name is Kafka's ConfigDef.Type (BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS,
    PASSWORD). Strings are trimmed as Java trims them; a LIST keeps its empty items (`a,,b`), which
    its validator judges; typed values pass through after validation. A value that does not parse
    is shown as given, one out of range or not allowed as parsed (as Kafka's messages show them).
    """
    if value is None:
        return None
    text = None if isinstance(value, (bool, int, float, list, tuple)) else java_trim(str(value))

    def not_a(kind: str) -> InvalidConfig:
        return invalid_value(name, value, f"Not a number of type {kind}" if kind else
                             "Expected value to be either true or false")

    if type_name == "BOOLEAN":
        if isinstance(value, bool):
            parsed = value
        elif text is not None and text.lower() in ("true", "false"):
            parsed = text.lower() == "true"
        else:
            raise not_a("")
    elif type_name in _TYPE_RANGES:
        if isinstance(value, bool) or isinstance(value, (float, list, tuple)):
            raise not_a(type_name)
        parsed = value if isinstance(value, int) else _java_integer(text)
        low, high = _TYPE_RANGES[type_name]
        if parsed is None or not low <= parsed <= high:
            raise not_a(type_name)
    elif type_name == "DOUBLE":
        if isinstance(value, bool) or isinstance(value, (list, tuple)):
            raise not_a("DOUBLE")
        parsed = float(value) if text is None else _java_double(text)
        if parsed is None:
            raise not_a("DOUBLE")
    elif type_name == "LIST":
        if isinstance(value, (list, tuple)):
            parsed = [java_trim(str(item)) for item in value]
        else:
            parsed = _LIST_SEPARATOR.split(text) if text else []
    else:
        parsed = text if text is not None else str(value)
    if isinstance(parsed, (int, float)) and not isinstance(parsed, bool):
        # ConfigDef.Range; NaN passes it, as in Java.
        if minimum is not None and parsed < minimum:
            raise invalid_value(name, parsed, f"Value must be at least {_number(minimum)}")
        if maximum is not None and parsed > maximum:
            raise invalid_value(name, parsed, f"Value must be no more than {_number(maximum)}")
    if choices is not None:
        if isinstance(parsed, list):
            _check_valid_list(name, parsed, choices)
        elif parsed not in choices:
            raise invalid_value(name, parsed, "String must be one of: " + ", ".join(choices))
    if validator is not None:
        validator(name, parsed)
    return parsed


def _check_valid_list(name: str, items: list[str], choices: tuple[str, ...]) -> None:
    """Kafka 4.x's ConfigDef.ValidList on a list value: duplicates are dropped first (Kafka logs a
    warning; the value keeps them as given), then each item must be non-empty and allowed."""
    for item in dict.fromkeys(items):
        if not item:
            raise InvalidConfig(f"Configuration '{name}' values must not be empty.")
        if item not in choices:
            raise invalid_value(name, item, "String must be one of: " + ", ".join(choices))


def _number(limit: float) -> str:
    return str(int(limit)) if float(limit).is_integer() else str(limit)


def gzip_level(name: str, level: int) -> None:
    """Kafka's GzipCompression.LevelValidator: 1 to 9, or -1 (the codec's default)."""
    if level != -1 and not 1 <= level <= 9:
        raise invalid_value(name, level, "Value must be between 1 and 9 or equal to -1")


_THROTTLED_REPLICA = re.compile(r"(?:[0-9]+:[0-9]+)?")


def throttled_replicas(name: str, items: list[str]) -> None:
    """Kafka's ThrottledReplicaListValidator: '*', or partitionId:brokerId pairs (empty items pass)."""
    if not (all(_THROTTLED_REPLICA.fullmatch(java_trim(item)) for item in items)
            or "".join(java_trim(item) for item in items) == "*"):
        raise invalid_value(name, items, f"{name} must be the literal '*' or a list of replicas in the following "
                                         "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    """One topic config: Kafka's name, ConfigDef type, default, validation and documentation.
    `internal`: defined but not listed among a topic's configs unless set (Kafka's defineInternal);
    `log_minimum`: the smallest value the log accepts from the broker itself, where that is below
    the minimum a client may set."""

    name: str
    type: str
    default: Any
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    validator: Validator | None = None
    internal: bool = False
    log_minimum: float | None = None

    def parse(self, value: Any) -> Any:
        return parse_config_value(self.name, self.type, value, minimum=self.minimum,
                                  maximum=self.maximum, choices=self.choices, validator=self.validator)

    def parse_for_log(self, value: Any) -> Any:
        minimum = self.minimum if self.log_minimum is None else self.log_minimum
        return parse_config_value(self.name, self.type, value, minimum=minimum,
                                  maximum=self.maximum, choices=self.choices, validator=self.validator)


def _defs(*defs: TopicConfigDef) -> dict[str, TopicConfigDef]:
    return {d.name: d for d in defs}


# Kafka 4.3's topic configs (LogConfig.CONFIG), by name: names, defaults, validators and documentation
# as Kafka declares them (DescribeConfigs with include_documentation answers the same text). Kafka 4.0 removed
# message.format.version and message.downconversion.enable (message formats v0/v1, KIP-724) and
# message.timestamp.difference.max.ms (deprecated by KIP-937): setting one is INVALID_CONFIG
# "Unknown topic config name: ...", as for any unknown name.
TOPIC_CONFIGS: dict[str, TopicConfigDef] = _defs(
    TopicConfigDef("cleanup.policy", "LIST", ["delete"],
                   "This config designates the retention policy to use on log segments. The \"delete\" policy (which "
                   "is the default) will discard old segments when their retention time or size limit has been "
                   "reached. The \"compact\" policy will enable <a href=\"#compaction\">log compaction</a>, which "
                   "retains the latest value for each key. It is also possible to specify both policies in a "
                   "comma-separated list (e.g. \"delete,compact\"). In this case, old segments will be discarded per "
                   "the retention time and size configuration, while retained segments will be compacted. An empty "
                   "list means infinite retention - no cleanup policies will be applied and log segments will be "
                   "retained indefinitely. Note that with remote storage enabled, local retention limits "
                   "(log.local.retention.ms and log.local.retention.bytes) are still applied to local segments.",
                   choices=("compact", "delete")),
    TopicConfigDef("compression.gzip.level", "INT", -1,
                   "The compression level to use if compression.type is set to <code>gzip</code>.",
                   validator=gzip_level),
    TopicConfigDef("compression.lz4.level", "INT", 9,
                   "The compression level to use if compression.type is set to <code>lz4</code>.",
                   minimum=1, maximum=17),
    TopicConfigDef("compression.type", "STRING", "producer",
                   "Specify the final compression type for a given topic. This configuration accepts the standard "
                   "compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts 'uncompressed' "
                   "which is equivalent to no compression; and 'producer' which means retain the original "
                   "compression codec set by the producer.",
                   choices=COMPRESSION_TYPES),
    TopicConfigDef("compression.zstd.level", "INT", 3,
                   "The compression level to use if compression.type is set to <code>zstd</code>.",
                   minimum=-131_072, maximum=22),
    TopicConfigDef("delete.retention.ms", "LONG", 86_400_000,
                   "The amount of time to retain delete tombstone markers for <a href=\"#compaction\">log "
                   "compacted</a> topics. This setting also gives a bound on the time in which a consumer must "
                   "complete a read if they begin from offset 0 to ensure that they get a valid snapshot of the "
                   "final stage (otherwise delete tombstones may be collected before they complete their scan).",
                   minimum=0),
    TopicConfigDef("file.delete.delay.ms", "LONG", 60_000,
                   "The time to wait before deleting a file from the filesystem",
                   minimum=0),
    TopicConfigDef("flush.messages", "LONG", LONG_MAX,
                   "This setting allows specifying an interval at which we will force an fsync of data written to "
                   "the log. For example if this was set to 1 we would fsync after every message; if it were 5 we "
                   "would fsync after every five messages. In general we recommend you not set this and use "
                   "replication for durability and allow the operating system's background flush capabilities as it "
                   "is more efficient. This setting can be overridden on a per-topic basis (see <a "
                   "href=\"#topicconfigs\">the per-topic configuration section</a>).",
                   minimum=1),
    TopicConfigDef("flush.ms", "LONG", LONG_MAX,
                   "This setting allows specifying a time interval at which we will force an fsync of data written "
                   "to the log. For example if this was set to 1000 we would fsync after 1000 ms had passed. Note "
                   "that this setting depends on the broker-level configuration "
                   "<code>log.flush.scheduler.interval.ms</code>, which controls how frequently the flush check "
                   "occurs. In general we recommend you not set this and use replication for durability and allow "
                   "the operating system's background flush capabilities as it is more efficient.",
                   minimum=0),
    TopicConfigDef("follower.replication.throttled.replicas", "LIST", [],
                   "A list of replicas for which log replication should be throttled on the follower side. The list "
                   "should describe a set of replicas in the form "
                   "[PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or alternatively the wildcard '*' can be "
                   "used to throttle all replicas for this topic.",
                   validator=throttled_replicas),
    TopicConfigDef("index.interval.bytes", "INT", 4096,
                   "This setting controls how frequently Kafka adds entries to its offset index and, conditionally, "
                   "to its time index. The default setting ensures that we index a message roughly every 4096 bytes."
                   " More frequent indexing allows reads to jump closer to the exact position in the log but results"
                   " in larger index files. You probably don't need to change this.<p> Note: the time index will be "
                   "inserted only when the timestamp is greater than the last indexed timestamp.</p>",
                   minimum=0),
    # Kafka 4.x's internal (test-only) segment size: any INT, overriding segment.bytes in the log
    # (LogConfig.segmentSize); accepted from clients and described only where set, as Kafka does.
    TopicConfigDef("internal.segment.bytes", "INT", None,
                   "The maximum size of a single log file. This should be used for testing only.", internal=True),
    TopicConfigDef("leader.replication.throttled.replicas", "LIST", [],
                   "A list of replicas for which log replication should be throttled on the leader side. The list "
                   "should describe a set of replicas in the form "
                   "[PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or alternatively the wildcard '*' can be "
                   "used to throttle all replicas for this topic.",
                   validator=throttled_replicas),
    TopicConfigDef("local.retention.bytes", "LONG", -2,
                   "The maximum size of local log segments that can grow for a partition before it deletes the old "
                   "segments. Default value is -2, it represents <code>retention.bytes</code> value to be used. The "
                   "effective value should always be less than or equal to <code>retention.bytes</code> value.",
                   minimum=-2),
    TopicConfigDef("local.retention.ms", "LONG", -2,
                   "The number of milliseconds to keep the local log segment before it gets deleted. Default value "
                   "is -2, it represents <code>retention.ms</code> value is to be used. The effective value should "
                   "always be less than or equal to <code>retention.ms</code> value.",
                   minimum=-2),
    TopicConfigDef("max.compaction.lag.ms", "LONG", LONG_MAX,
                   "The maximum time a message will remain ineligible for compaction in the log. Only applicable for"
                   " logs that are being compacted.",
                   minimum=1),
    TopicConfigDef("max.message.bytes", "INT", 1_048_588,
                   "The largest record batch size allowed by Kafka (after compression if compression is enabled).",
                   minimum=0),
    TopicConfigDef("message.timestamp.after.max.ms", "LONG", 3_600_000,
                   "This configuration sets the allowable timestamp difference between the message timestamp and the"
                   " broker's timestamp. The message timestamp can be later than or equal to the broker's timestamp,"
                   " with the maximum allowable difference determined by the value set in this configuration. If "
                   "message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps "
                   "exceeds this specified threshold. This configuration is ignored if "
                   "message.timestamp.type=LogAppendTime.",
                   minimum=0),
    TopicConfigDef("message.timestamp.before.max.ms", "LONG", LONG_MAX,
                   "This configuration sets the allowable timestamp difference between the broker's timestamp and "
                   "the message timestamp. The message timestamp can be earlier than or equal to the broker's "
                   "timestamp, with the maximum allowable difference determined by the value set in this "
                   "configuration. If message.timestamp.type=CreateTime, the message will be rejected if the "
                   "difference in timestamps exceeds this specified threshold. This configuration is ignored if "
                   "message.timestamp.type=LogAppendTime.",
                   minimum=0),
    TopicConfigDef("message.timestamp.type", "STRING", "CreateTime",
                   "Define whether the timestamp in the message is message create time or log append time.",
                   choices=("CreateTime", "LogAppendTime")),
    TopicConfigDef("min.cleanable.dirty.ratio", "DOUBLE", 0.5,
                   "This configuration controls how frequently the log compactor will attempt to clean the log "
                   "(assuming <a href=\"#compaction\">log compaction</a> is enabled). By default we will avoid "
                   "cleaning a log where more than 50% of the log has been compacted. This ratio bounds the maximum "
                   "space wasted in the log by duplicates (at 50% at most 50% of the log could be duplicates). A "
                   "higher ratio will mean fewer, more efficient cleanings but will mean more wasted space in the "
                   "log. If the max.compaction.lag.ms or the min.compaction.lag.ms configurations are also "
                   "specified, then the log compactor considers the log to be eligible for compaction as soon as "
                   "either: (i) the dirty ratio threshold has been met and the log has had dirty (uncompacted) "
                   "records for at least the min.compaction.lag.ms duration, or (ii) if the log has had dirty "
                   "(uncompacted) records for at most the max.compaction.lag.ms period.",
                   minimum=0, maximum=1),
    TopicConfigDef("min.compaction.lag.ms", "LONG", 0,
                   "The minimum time a message will remain uncompacted in the log. Only applicable for logs that are"
                   " being compacted.",
                   minimum=0),
    TopicConfigDef("min.insync.replicas", "INT", 1,
                   "Specifies the <i>minimum</i> number of in-sync replicas (including the leader) required for a "
                   "write to succeed when a producer sets <code>acks</code> to \"all\" (or \"-1\"). In the "
                   "<code>acks=all</code> case, every in-sync replica must acknowledge a write for it to be "
                   "considered successful. E.g., if a topic has <code>replication.factor</code> of 3 and the ISR set"
                   " includes all three replicas, then all three replicas must acknowledge an <code>acks=all</code> "
                   "write for it to succeed, even if <code>min.insync.replicas</code> happens to be less than 3. If "
                   "<code>acks=all</code> and the current ISR set contains fewer than "
                   "<code>min.insync.replicas</code> members, then the producer will raise an exception (either "
                   "<code>NotEnoughReplicas</code> or <code>NotEnoughReplicasAfterAppend</code>).<br> Regardless of "
                   "the <code>acks</code> setting, the messages will not be visible to the consumers until they are "
                   "replicated to all in-sync replicas and the <code>min.insync.replicas</code> condition is "
                   "met.<br> When used together, <code>min.insync.replicas</code> and <code>acks</code> allow you to"
                   " enforce greater durability guarantees. A typical scenario would be to create a topic with a "
                   "replication factor of 3, set <code>min.insync.replicas</code> to 2, and produce with "
                   "<code>acks</code> of \"all\". This ensures that a majority of replicas must persist a write before"
                   " it's considered successful by the producer and it's visible to consumers.<p>Note that when the "
                   "Eligible Leader Replicas feature is enabled, the semantics of this config changes. Please refer "
                   "to <a href=\"#eligible_leader_replicas\">the ELR section</a> for more info.</p>",
                   minimum=1),
    TopicConfigDef("preallocate", "BOOLEAN", False,
                   "True if we should preallocate the file on disk when creating a new log segment."),
    TopicConfigDef("remote.log.copy.disable", "BOOLEAN", False,
                   "Determines whether tiered data for a topic should become read only, and no more data uploading "
                   "on a topic. Once this config is set to true, the local retention configuration (i.e. "
                   "local.retention.ms/bytes) becomes irrelevant, and all data expiration follows the topic-wide "
                   "retention configuration(i.e. retention.ms/bytes)."),
    TopicConfigDef("remote.log.delete.on.disable", "BOOLEAN", False,
                   "Determines whether tiered data for a topic should be deleted after tiered storage is disabled on"
                   " a topic. This configuration should be enabled when trying to set "
                   "<code>remote.storage.enable</code> from true to false"),
    TopicConfigDef("remote.storage.enable", "BOOLEAN", False,
                   "To enable tiered storage for a topic, set this configuration to true. To disable tiered storage "
                   "for a topic that has it enabled, set this configuration to false. When disabling, you must also "
                   "set <code>remote.log.delete.on.disable</code> to true."),
    TopicConfigDef("retention.bytes", "LONG", -1,
                   "This configuration controls the maximum size a partition (which consists of log segments) can "
                   "grow to before we will discard old log segments to free up space if we are using the \"delete\" "
                   "retention policy. By default there is no size limit only a time limit. Since this limit is "
                   "enforced at the partition level, multiply it by the number of partitions to compute the topic "
                   "retention in bytes. Additionally, retention.bytes configuration operates independently of "
                   "\"segment.ms\" and \"segment.bytes\" configurations. Moreover, it triggers the rolling of new "
                   "segment if the retention.bytes is configured to zero."),
    TopicConfigDef("retention.ms", "LONG", 604_800_000,
                   "This configuration controls the maximum time we will retain a log before we will discard old log"
                   " segments to free up space if we are using the \"delete\" retention policy. This represents an SLA"
                   " on how soon consumers must read their data. If set to -1, no time limit is applied. "
                   "Additionally, retention.ms configuration operates independently of \"segment.ms\" and "
                   "\"segment.bytes\" configurations. Moreover, it triggers the rolling of new segment if the "
                   "retention.ms condition is satisfied.",
                   minimum=-1),
    TopicConfigDef("segment.bytes", "INT", 1_073_741_824,
                   "This configuration controls the segment file size for the log. Retention and cleaning is always "
                   "done a file at a time so a larger segment size means fewer files but less granular control over "
                   "retention.",
                   minimum=MIN_SEGMENT_BYTES, log_minimum=LOG_MIN_SEGMENT_BYTES),
    TopicConfigDef("segment.index.bytes", "INT", 10_485_760,
                   "This configuration controls the size of the index that maps offsets to file positions. We "
                   "preallocate this index file and shrink it only after log rolls. You generally should not need to"
                   " change this setting.",
                   minimum=MIN_SEGMENT_INDEX_BYTES),
    TopicConfigDef("segment.jitter.ms", "LONG", 0,
                   "The maximum random jitter subtracted from the scheduled segment roll time to avoid thundering "
                   "herds of segment rolling",
                   minimum=0),
    TopicConfigDef("segment.ms", "LONG", 604_800_000,
                   "This configuration controls the period of time after which Kafka will force the log to roll even"
                   " if the segment file isn't full to ensure that retention can delete or compact old data.",
                   minimum=1),
    TopicConfigDef("unclean.leader.election.enable", "BOOLEAN", False,
                   "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last "
                   "resort, even though doing so may result in data loss.<p>Note: In KRaft mode, when enabling this "
                   "config dynamically, it needs to wait for the unclean leader electionthread to trigger election "
                   "periodically (default is 5 minutes). Please run <code>kafka-leader-election.sh</code> with "
                   "<code>unclean</code> option to trigger the unclean leader election immediately if needed.</p>"),
)

# Schema ID validation on produce (broker/schema_validation.py), under the names Confluent Server
# gives it: not Kafka's, so internal (described only where set, as Kafka never lists them).
SUBJECT_NAME_STRATEGIES = (
    "io.confluent.kafka.serializers.subject.TopicNameStrategy",
    "io.confluent.kafka.serializers.subject.RecordNameStrategy",
    "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy",
)
SCHEMA_VALIDATION_CONFIGS: dict[str, TopicConfigDef] = _defs(*(
    definition
    for part in ("key", "value")
    for definition in (
        TopicConfigDef(f"confluent.{part}.schema.validation", "BOOLEAN", False,
                       f"When true, every record's {part} must carry the id of a schema registered in the Schema "
                       f"Registry (the Confluent wire format: magic byte 0, then the 4-byte id) under the subject "
                       f"confluent.{part}.subject.name.strategy names; other records are refused with "
                       f"INVALID_RECORD. A null {part} passes (kafka-wire; Confluent Server's key).",
                       internal=True),
        TopicConfigDef(f"confluent.{part}.subject.name.strategy", "STRING", SUBJECT_NAME_STRATEGIES[0],
                       f"The subject a record {part}'s schema id must be registered under when "
                       f"confluent.{part}.schema.validation is true: TopicNameStrategy <topic>-{part}, "
                       "RecordNameStrategy the schema's record name, TopicRecordNameStrategy <topic>-<record "
                       "name> (kafka-wire; Confluent Server's key).",
                       choices=SUBJECT_NAME_STRATEGIES, internal=True),
    )
))
TOPIC_CONFIGS.update(SCHEMA_VALIDATION_CONFIGS)

# The order of Kafka 4.3's LogConfig definitions, in which ConfigDef.parse checks them: of several
# invalid values in one request, the first in this order is the one reported.
DEFINITION_ORDER = (
    "segment.bytes", "segment.ms", "segment.jitter.ms", "segment.index.bytes", "flush.messages", "flush.ms",
    "retention.bytes", "retention.ms", "max.message.bytes", "index.interval.bytes", "delete.retention.ms",
    "min.compaction.lag.ms", "max.compaction.lag.ms", "file.delete.delay.ms", "min.cleanable.dirty.ratio",
    "cleanup.policy", "unclean.leader.election.enable", "min.insync.replicas", "compression.type",
    "compression.gzip.level", "compression.lz4.level", "compression.zstd.level", "preallocate",
    "message.timestamp.type", "message.timestamp.before.max.ms", "message.timestamp.after.max.ms",
    "leader.replication.throttled.replicas", "follower.replication.throttled.replicas", "remote.storage.enable",
    "local.retention.ms", "local.retention.bytes", "remote.log.copy.disable", "remote.log.delete.on.disable",
    "internal.segment.bytes", *SCHEMA_VALIDATION_CONFIGS,
)
assert set(DEFINITION_ORDER) == set(TOPIC_CONFIGS)


def check_topic_config_values(values: Mapping[str, Any]) -> None:
    """Kafka's LogConfig.validateValues and validateTopicLogConfigValues on a topic's effective
    config (broker defaults overlaid with the topic's overrides), after each value passed its own
    validator. Tiered storage is off in kafka-wire (remote.log.storage.system.enable=false)."""
    min_lag, max_lag = values.get("min.compaction.lag.ms"), values.get("max.compaction.lag.ms")
    if min_lag is not None and max_lag is not None and min_lag > max_lag:
        raise InvalidConfig(f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > "
                            f"max.compaction.lag.ms ({max_lag})")
    if values.get("remote.storage.enable"):
        raise InvalidConfig("Tiered Storage functionality is disabled in the broker. Topic cannot be configured "
                            "with remote log storage.")


class LogConfig:
    """The effective topic config of one partition log: Kafka defaults overlaid with overrides."""

    __slots__ = ("_values", "overrides")

    def __init__(self, overrides: Mapping[str, Any] | None = None):
        self.overrides: dict[str, Any] = {}
        values = {name: definition.default for name, definition in TOPIC_CONFIGS.items()}
        for name, value in (overrides or {}).items():
            definition = TOPIC_CONFIGS.get(name)
            parsed = value if definition is None else definition.parse_for_log(value)
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
        """internal.segment.bytes when set (Kafka's tests' small segments), else segment.bytes."""
        internal = self._values["internal.segment.bytes"]
        return self._values["segment.bytes"] if internal is None else internal

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
