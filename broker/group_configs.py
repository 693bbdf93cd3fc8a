"""Group configs (KIP-848 and successors): per-group overrides of the group coordinators' settings,
the GROUP config resource (type 32) of DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and
ListConfigResources.

As Kafka 4.3's GroupConfig: seventeen keys, each an override of a broker config (its synonym, whose
value is the group's default) or, for three share-group keys, with a default of its own. A change is
checked on the group's whole new set (the stored overrides, the change, the broker's values for the
rest): names first ("Unknown group config name"), then each value's type and floor in definition
order, then the broker's bounds (group.consumer.min.session.timeout.ms, ...), then that a session
timeout exceeds its heartbeat interval. Overrides are kept in the metadata (the embedded file, or
/config/groups/<group> in ZooKeeper mode), whether the group exists or not: Kafka accepts them
before the group's first member and keeps them when DeleteGroups deletes the group. What the
coordinators use is the override clamped to the broker's current bounds (GroupConfig.evaluate), so
that narrowing a bound later still holds.
"""

from __future__ import annotations

import logging
import re
from collections import Counter

from kafka_wire.errors import ErrorCode
from log.config import invalid_value

from .config import ConfigError, ConfigKey, ConfigSource, ConfigType, broker_synonyms

logger = logging.getLogger("kafka_wire.broker")

GROUP = 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OPERATION_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

# ISO-8601 durations as Java's Duration.parse reads them (PnDTnHnMn.nS): a sign on the whole and on each
# part; Kafka then refuses a duration whose total is negative (P1DT-1H, 23 hours, is fine).
_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?"
                       r"(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?", re.IGNORECASE)


def _valid_duration(text: str) -> bool:
    match = _DURATION.fullmatch(text)
    if match is None:
        return False
    sign, days, time_part, hours, minutes, seconds, fraction = match.groups()
    if days is None and time_part is None:
        return False
    if time_part is not None and hours is None and minutes is None and seconds is None:
        return False  # a "T" with nothing after it is no duration
    nanos = (int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)) * 10**9
    if fraction:
        part = int(fraction.ljust(9, "0"))
        nanos += -part if (seconds or "").startswith("-") else part
    return (-nanos if sign == "-" else nanos) >= 0


def _auto_offset_reset(name: str, value) -> None:
    """Kafka's ShareGroupAutoOffsetResetStrategy.Validator."""
    text = str(value)
    if text in ("earliest", "latest"):
        return
    if text.startswith("by_duration:") and _valid_duration(text[len("by_duration:"):]):
        return
    raise invalid_value(name, value, f"Invalid value `{text}` for configuration {name}. The value must be either "
                                     "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")


I, S, B = ConfigType.INT, ConfigType.STRING, ConfigType.BOOLEAN

# In Kafka's definition order (the order its parse reports the first bad value in).
GROUP_KEYS: dict[str, ConfigKey] = {k.name: k for k in [
    ConfigKey("consumer.session.timeout.ms", I, 45000,
              "The timeout to detect client failures when using the consumer group protocol.", minimum=1),
    ConfigKey("consumer.heartbeat.interval.ms", I, 5000,
              "The heartbeat interval given to the members of a consumer group.", minimum=1),
    ConfigKey("consumer.assignment.interval.ms", I, 1000,
              "The interval between assignment updates for a consumer group.", minimum=0),
    ConfigKey("share.session.timeout.ms", I, 45000,
              "The timeout to detect client failures when using the share group protocol.", minimum=1),
    ConfigKey("share.heartbeat.interval.ms", I, 5000,
              "The heartbeat interval given to the members of a share group.", minimum=1),
    ConfigKey("share.record.lock.duration.ms", I, 30000,
              "The record acquisition lock duration in milliseconds for share groups.", minimum=1000),
    ConfigKey("share.delivery.count.limit", I, 5,
              "The maximum number of delivery attempts for a record delivered to a share group.", minimum=2),
    ConfigKey("share.partition.max.record.locks", I, 2000,
              "Share-group record lock limit per share-partition.", minimum=100),
    ConfigKey("share.auto.offset.reset", S, "latest",
              "The strategy to initialize the share-partition start offset. <ul><li>earliest: automatically reset "
              "the offset to the earliest offset</li><li>latest: automatically reset the offset to the latest "
              "offset</li><li>by_duration:&lt;duration&gt;: automatically reset the offset to a configured duration "
              "from the current timestamp. &lt;duration&gt; must be specified in ISO8601 format (PnDTnHnMn.nS). "
              "Negative duration is not allowed.</li><li>anything else: throw exception to the share "
              "consumer.</li></ul>", validator=_auto_offset_reset),
    ConfigKey("share.isolation.level", S, "read_uncommitted",
              "Controls how to read records written transactionally. If set to \"read_committed\", the share group "
              "will only deliver transactional records which have been committed. If set to \"read_uncommitted\", "
              "the share group will return all messages, even transactional messages which have been aborted. "
              "Non-transactional records will be returned unconditionally in either mode.",
              choices=("read_committed", "read_uncommitted")),
    ConfigKey("share.renew.acknowledge.enable", B, True,
              "Whether the renew acknowledge type is enabled for the share group."),
    ConfigKey("share.assignment.interval.ms", I, 1000,
              "The interval between assignment updates for a share group.", minimum=0),
    ConfigKey("streams.session.timeout.ms", I, 45000,
              "The timeout to detect client failures when using the streams group protocol.", minimum=1),
    ConfigKey("streams.heartbeat.interval.ms", I, 5000, "The heartbeat interval given to the members.", minimum=1),
    ConfigKey("streams.num.standby.replicas", I, 0, "The number of standby replicas for each task.", minimum=0),
    ConfigKey("streams.initial.rebalance.delay.ms", I, 3000,
              "The amount of time the group coordinator will wait for more streams clients to join a new group "
              "before performing the first rebalance. A longer delay means potentially fewer rebalances.",
              minimum=0),
    ConfigKey("streams.assignment.interval.ms", I, 1000,
              "The interval between assignment updates for a streams group.", minimum=0),
]}

# The broker config whose value is a group config's default (Kafka's ALL_GROUP_CONFIG_SYNONYMS);
# the three share keys without one default to their own definition.
BROKER_SYNONYM = {name: "group." + name for name in GROUP_KEYS
                  if name not in ("share.auto.offset.reset", "share.isolation.level", "share.renew.acknowledge.enable")}

# (group key, broker minimum, broker maximum) in the order Kafka's validateValues checks them; None:
# no bound of that side.
BOUNDS = (
    ("consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms",
     "group.consumer.max.heartbeat.interval.ms"),
    ("consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
    ("consumer.assignment.interval.ms", "group.consumer.min.assignment.interval.ms",
     "group.consumer.max.assignment.interval.ms"),
    ("share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    ("share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms",
     "group.share.max.record.lock.duration.ms"),
    ("share.delivery.count.limit", "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"),
    ("share.partition.max.record.locks", "group.share.min.partition.max.record.locks",
     "group.share.max.partition.max.record.locks"),
    ("share.assignment.interval.ms", "group.share.min.assignment.interval.ms", "group.share.max.assignment.interval.ms"),
    ("streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms",
     "group.streams.max.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
    ("streams.num.standby.replicas", None, "group.streams.max.standby.replicas"),
    ("streams.assignment.interval.ms", "group.streams.min.assignment.interval.ms",
     "group.streams.max.assignment.interval.ms"),
)
SESSION_OVER_HEARTBEAT = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
                          ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
                          ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"))


class GroupConfigError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def group_default(config, name: str):
    """A group config's value where the group does not set it: the broker's (or its own default)."""
    broker_key = BROKER_SYNONYM.get(name)
    return config[broker_key] if broker_key else GROUP_KEYS[name].default


def validate(config, overrides: dict[str, str]) -> None:
    """Kafka's GroupConfig.validate on a group's complete new set of overrides; raises GroupConfigError
    (INVALID_CONFIG) with Kafka's message."""
    for name in overrides:
        if name not in GROUP_KEYS:
            raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")
    values = {}
    for name, key in GROUP_KEYS.items():
        try:
            values[name] = key.parse(overrides[name]) if name in overrides else group_default(config, name)
        except ConfigError as exc:
            raise GroupConfigError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    for name, minimum, maximum in BOUNDS:
        # Kafka refuses to start with a group.* default outside its own bounds, so there only a set key
        # can fail; kafka-wire starts with one (tests give small session timeouts without lowering the
        # minimums), and a key the group does not set is not held against its change.
        if name not in overrides:
            continue
        if minimum is not None and values[name] < config[minimum]:
            raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"{name} must be greater than or equal to {minimum}")
        if maximum is not None and values[name] > config[maximum]:
            raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"{name} must be less than or equal to {maximum}")
    for session, heartbeat in SESSION_OVER_HEARTBEAT:
        if values[session] <= values[heartbeat]:
            raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"{session} must be greater than {heartbeat}")


def effective(config, overrides: dict[str, str], name: str):
    """What a coordinator uses for `name` in a group with these overrides: the override clamped to the
    broker's current bounds (Kafka's GroupConfig.evaluate), or the broker's value."""
    if name not in overrides:
        return group_default(config, name)
    try:
        value = GROUP_KEYS[name].parse(overrides[name])
    except ConfigError:
        return group_default(config, name)
    for key, minimum, maximum in BOUNDS:
        if key == name:
            if minimum is not None:
                value = max(value, config[minimum])
            if maximum is not None:
                value = min(value, config[maximum])
    return value


def check_group_name(name: str, describe: bool = False) -> None:
    if not name:
        raise GroupConfigError(ErrorCode.INVALID_REQUEST, "Group name must not be empty" if describe
                               else "Default group resources are not allowed.")


def incremental_overrides(current: dict[str, str], ops) -> dict[str, str]:
    """A group's overrides after SET/DELETE (APPEND and SUBTRACT refused: no group config is a list)."""
    if any(count > 1 for count in Counter(op.name for op in ops).values()):
        raise GroupConfigError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [op.name for op in ops if op.config_operation != DELETE and op.value is None]
    if nulls:
        raise GroupConfigError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
    props = dict(current)
    for op in ops:
        if op.config_operation == SET:
            props[op.name] = op.value
        elif op.config_operation == DELETE:
            props.pop(op.name, None)
        elif op.config_operation in (APPEND, SUBTRACT):
            raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"Can't {OPERATION_NAMES[op.config_operation]} to key "
                                                             f"{op.name} because its type is not LIST.")
        else:
            raise GroupConfigError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {op.config_operation}")
    return props


def store(broker, group: str, overrides: dict[str, str], validate_only: bool) -> tuple[ErrorCode, str | None]:
    """Validate and (unless validate_only) keep a group's complete new set of overrides, each as Kafka
    keeps it: its parsed value written back (trimmed, booleans in lower case)."""
    try:
        validate(broker.config, overrides)
    except GroupConfigError as exc:
        return exc.error, exc.message
    overrides = {name: GROUP_KEYS[name].render(GROUP_KEYS[name].parse(value)) for name, value in overrides.items()}
    if not validate_only:
        broker.metadata.set_group_configs(group, overrides)
        logger.info("configs of group %r are now %s", group, overrides)
    return ErrorCode.NONE, None


def alter(broker, group: str, configs: dict[str, str], validate_only: bool) -> tuple[ErrorCode, str | None]:
    """AlterConfigs (legacy) on a GROUP resource: the given configs replace the group's (the
    request's own checks, duplicates and nulls, are made by the handler)."""
    try:
        check_group_name(group)
    except GroupConfigError as exc:
        return exc.error, exc.message
    return store(broker, group, dict(configs), validate_only)


def incremental_alter(broker, group: str, ops, validate_only: bool) -> tuple[ErrorCode, str | None]:
    try:
        overrides = incremental_overrides(broker.metadata.read_group_configs(group), ops)
        check_group_name(group)
    except GroupConfigError as exc:
        return exc.error, exc.message
    return store(broker, group, overrides, validate_only)


def describe(broker, group: str, wanted: set[str] | None) -> tuple[ErrorCode, str, list[tuple]]:
    """(error, message, [(name, value, source, key, synonyms)]) as Kafka's ConfigHelper describes a
    group: its override (GROUP_CONFIG) first among the synonyms, then the broker config that
    supplies the default, or the key's own default (DEFAULT_CONFIG) where none does."""
    try:
        check_group_name(group, describe=True)
    except GroupConfigError as exc:
        return exc.error, exc.message, []
    config = broker.config
    overrides = broker.metadata.group_configs.get(group, {})
    entries = []
    for name, key in GROUP_KEYS.items():
        if wanted is not None and name not in wanted:
            continue
        broker_key = BROKER_SYNONYM.get(name)
        if broker_key:
            synonyms = config.config_synonyms(broker_key, broker_synonyms(broker_key))
        else:
            synonyms = [(name, key.render(key.default), ConfigSource.DEFAULT_CONFIG)]
        if name in overrides:
            synonyms = [(name, overrides[name], ConfigSource.GROUP_CONFIG), *synonyms]
        value = overrides[name] if name in overrides else key.render(group_default(config, name))
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        entries.append((name, value, source, key, synonyms))
    return ErrorCode.NONE, "", entries
