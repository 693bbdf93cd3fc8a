"""Options for Spark's Kafka source and sink (spark-sql-kafka-0-10), built and checked before Spark runs.

Spark reads its Kafka options as strings: "kafka."-prefixed ones go to the Kafka clients
(kafka.bootstrap.servers, kafka.isolation.level, ...), the rest steer the connector. The
offset-range options follow the connector's rules, checked here so a mistake is a clear
command-line error instead of a failure inside a Spark job:

- startingOffsets / endingOffsets: "earliest", "latest", or JSON per partition
  {"orders": {"0": 23, "1": -2}} where -2 means earliest and -1 latest. A batch query cannot
  start at "latest" nor end at "earliest" (-1 is not allowed in startingOffsets, -2 not in
  endingOffsets); a streaming query ignores endingOffsets.
- startingTimestamp / endingTimestamp: one timestamp (epoch ms) for every partition.
- startingOffsetsByTimestamp / endingOffsetsByTimestamp: JSON per partition, epoch ms.
  For each partition Kafka answers the first offset whose timestamp is at or after the given one
  (ListOffsets); when there is none, the connector fails the query, or starts at the latest
  offset with startingOffsetsByTimestampStrategy=latest.

When several are given the connector uses the global timestamp first, then the per-partition
timestamps, then the offsets; the functions here refuse more than one on each side instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

EARLIEST = -2
LATEST = -1

# Kafka client properties the connector sets itself and refuses from users.
CONNECTOR_MANAGED = {"auto.offset.reset", "enable.auto.commit", "interceptor.classes",
                     "key.deserializer", "value.deserializer", "key.serializer", "value.serializer"}


class OptionError(ValueError):
    """Options Spark's Kafka connector would refuse or misread."""


def offsets_json(offsets: Mapping[str, Mapping[int, int]]) -> str:
    """{"orders": {0: 23, 1: EARLIEST}} -> the connector's JSON, partitions in order."""
    return json.dumps({topic: {str(p): int(o) for p, o in sorted(parts.items())}
                       for topic, parts in sorted(offsets.items())}, separators=(",", ":"))


def parse_partition_json(text: str, what: str) -> dict[str, dict[int, int]]:
    """The connector's per-partition JSON -> {topic: {partition: number}}; OptionError if malformed."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise OptionError(f"{what}: not JSON ({error.msg}): {text!r}") from None
    if not isinstance(raw, dict) or not raw:
        raise OptionError(f'{what}: expected {{"topic": {{"partition": number, ...}}, ...}}, got {text!r}')
    parsed: dict[str, dict[int, int]] = {}
    for topic, partitions in raw.items():
        if not isinstance(partitions, dict) or not partitions:
            raise OptionError(f"{what}: topic {topic!r} needs a non-empty object of partition -> number")
        parsed[topic] = {}
        for partition, number in partitions.items():
            if not str(partition).isdigit() or isinstance(number, bool) or not isinstance(number, int):
                raise OptionError(f"{what}: {topic!r} partition {partition!r} -> {number!r}: expected "
                                  "a partition number and an integer")
            parsed[topic][int(partition)] = number
    return parsed


def _check_offsets(value: str, what: str, *, batch: bool, starting: bool) -> None:
    if value in ("earliest", "latest"):
        if batch and starting and value == "latest":
            raise OptionError(f"{what}=latest is not allowed in a batch query (it would read nothing)")
        if batch and not starting and value == "earliest":
            raise OptionError(f"{what}=earliest is not allowed in a batch query (it would read nothing)")
        return
    for topic, partitions in parse_partition_json(value, what).items():
        for partition, offset in partitions.items():
            if offset < EARLIEST:
                raise OptionError(f"{what}: {topic}-{partition} offset {offset}: use an offset >= 0, "
                                  "-2 (earliest) or -1 (latest)")
            if batch and starting and offset == LATEST:
                raise OptionError(f"{what}: {topic}-{partition} -1 (latest) is not allowed as a batch start")
            if batch and not starting and offset == EARLIEST:
                raise OptionError(f"{what}: {topic}-{partition} -2 (earliest) is not allowed as a batch end")


def _check_timestamp(value: str, what: str) -> None:
    if not value.isdigit():
        raise OptionError(f"{what}: expected epoch milliseconds (a non-negative integer), got {value!r}")


def _check_timestamps_json(value: str, what: str) -> None:
    for topic, partitions in parse_partition_json(value, what).items():
        for partition, timestamp in partitions.items():
            if timestamp < 0:
                raise OptionError(f"{what}: {topic}-{partition} timestamp {timestamp}: expected epoch milliseconds")


def range_options(*, batch: bool, starting_offsets: str | None = None, ending_offsets: str | None = None,
                  starting_timestamp: str | int | None = None, ending_timestamp: str | int | None = None,
                  starting_offsets_by_timestamp: str | None = None,
                  ending_offsets_by_timestamp: str | None = None,
                  no_match_starts_at_latest: bool = False) -> dict[str, str]:
    """The offset-range options of one query, checked; only what was given is set (the
    connector's defaults: a batch reads earliest..latest, a stream starts at latest)."""
    options: dict[str, str] = {}
    for side, offsets, timestamp, by_timestamp in (
            ("starting", starting_offsets, starting_timestamp, starting_offsets_by_timestamp),
            ("ending", ending_offsets, ending_timestamp, ending_offsets_by_timestamp)):
        given = [name for name, value in ((f"{side}Offsets", offsets), (f"{side}Timestamp", timestamp),
                                          (f"{side}OffsetsByTimestamp", by_timestamp)) if value is not None]
        if len(given) > 1:
            raise OptionError(f"give one of {', '.join(given)}, not several")
        if side == "ending" and given and not batch:
            raise OptionError(f"{given[0]} applies to batch queries only; a stream has no end")
        if offsets is not None:
            _check_offsets(offsets, f"{side}Offsets", batch=batch, starting=side == "starting")
            options[f"{side}Offsets"] = offsets
        if timestamp is not None:
            _check_timestamp(str(timestamp), f"{side}Timestamp")
            options[f"{side}Timestamp"] = str(timestamp)
        if by_timestamp is not None:
            _check_timestamps_json(by_timestamp, f"{side}OffsetsByTimestamp")
            options[f"{side}OffsetsByTimestamp"] = by_timestamp
    if no_match_starts_at_latest:
        options["startingOffsetsByTimestampStrategy"] = "latest"
    return options


def subscription_options(*, topic: str | None = None, pattern: str | None = None) -> dict[str, str]:
    """subscribe (comma-separated topics) or subscribePattern (a Java regex, matched anywhere in
    the name, as Spark does), exactly one."""
    if (topic is None) == (pattern is None):
        raise OptionError("give a topic (comma-separated list) or a topic pattern, exactly one")
    if topic is not None:
        topics = [t.strip() for t in topic.split(",") if t.strip()]
        if not topics:
            raise OptionError(f"no topic in {topic!r}")
        return {"subscribe": ",".join(topics)}
    return {"subscribePattern": pattern}


def client_options(bootstrap_servers: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """kafka.bootstrap.servers plus `extra` Kafka client properties (isolation.level,
    security.protocol, ...), each given the "kafka." prefix Spark expects. Properties the
    connector manages itself are refused here, as Spark would refuse them."""
    if not bootstrap_servers.strip():
        raise OptionError("bootstrap servers are required (HOST:PORT[,HOST:PORT...])")
    options = {"kafka.bootstrap.servers": bootstrap_servers.strip()}
    for key, value in (extra or {}).items():
        name = key.removeprefix("kafka.")
        if name in CONNECTOR_MANAGED:
            raise OptionError(f"Spark's Kafka connector manages {name} itself and refuses it"
                              + (" (use startingOffsets)" if name == "auto.offset.reset" else ""))
        options[f"kafka.{name}"] = str(value)
    return options


def parse_key_values(items: list[str] | None, what: str) -> dict[str, str]:
    """["k=v", ...] from the command line -> {k: v}."""
    parsed = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise OptionError(f"{what}: expected KEY=VALUE, got {item!r}")
        parsed[key.strip()] = value
    return parsed
