"""Every topic config through its boundaries, on CreateTopics (19), AlterConfigs (33) and
IncrementalAlterConfigs (44): generated from the topic config table (broker/config.py TOPIC_KEYS,
Kafka 4.3's LogConfig), so a key added there is walked too.

Per key, by its type: below the minimum, the minimum, the maximum, above it (or the type's own
limits where Kafka sets none), a number beyond the type, a word where a number belongs, a fraction
for an integer; for booleans a word that is neither; for allowed values each one, one in the wrong
case and an unknown one; for lists the empty list, every allowed value, an empty item, an unknown
item, a duplicate; for the throttled-replica lists '*', pairs, a triple and '*' mixed with a pair.
Every request is validate_only, one value per request (so each answer is that value's own), and the
answers kept are the error code and message, and, where CreateTopics accepts a value, how it
describes the key (a success answer otherwise repeats the topic's whole config table per value).
"""

from __future__ import annotations

from broker.config import TOPIC_KEYS, ConfigKey, ConfigType
from log.config import SCHEMA_VALIDATION_CONFIGS

from ..scenario import Session, scenario

TOPIC = 2
SET = 0
_TYPE_LIMITS = {ConfigType.INT: (-(2**31), 2**31 - 1), ConfigType.SHORT: (-(2**15), 2**15 - 1),
                ConfigType.LONG: (-(2**63), 2**63 - 1)}
# Values beyond a key's generic boundaries: its own validator's edges (gzip: 1-9 or -1; the throttled
# replica lists' grammar).
_EXTRA = {
    "compression.gzip.level": ["-2", "0", "1", "9", "10"],
    "leader.replication.throttled.replicas": ["*", "0:1,1:1", "0:1:2", "*,0:1", "a:b"],
    "follower.replication.throttled.replicas": ["*", "0:1,1:1", "0:1:2", "*,0:1", "a:b"],
}


def _integer(value: float) -> str:
    return str(int(value))


def boundary_values(key: ConfigKey) -> list[str]:
    """The values a key is walked through (each accepted value in the form both brokers describe it)."""
    values: list[str] = []
    if key.type in _TYPE_LIMITS:
        low, high = _TYPE_LIMITS[key.type]
        if key.minimum is not None:
            values += [_integer(key.minimum - 1), _integer(key.minimum)]
        elif key.validator is None:
            values.append(str(low))
        if key.maximum is not None:
            values += [_integer(key.maximum), _integer(key.maximum + 1)]
        elif key.validator is None:
            values.append(str(high))
        values += [str(high + 1), "ten", "1.5"]
    elif key.type == ConfigType.DOUBLE:
        low = 0.0 if key.minimum is None else float(key.minimum)
        high = 1.0 if key.maximum is None else float(key.maximum)
        values += [repr(low - 0.5), repr(low), repr(high), repr(high + 0.5), "ten"]
    elif key.type == ConfigType.BOOLEAN:
        values += ["true", "false", "yes"]
    elif key.type == ConfigType.STRING and key.choices:
        values += [*key.choices, key.choices[0].upper(), "unknown"]
    elif key.type == ConfigType.LIST and key.choices:
        values += ["", *key.choices, ",".join(key.choices), f"{key.choices[0]},", f"{key.choices[0]},unknown",
                   f"{key.choices[0]},{key.choices[0]}"]
    return [*values, *(v for v in _EXTRA.get(key.name, []) if v not in values)]


def _walked() -> list[tuple[str, list[str]]]:
    # Kafka 4.3's keys: not the schema id validation keys kafka-wire adds under Confluent Server's
    # names (log/config.py SCHEMA_VALIDATION_CONFIGS), which Kafka refuses as unknown.
    return [(name, boundary_values(key)) for name, key in TOPIC_KEYS.items() if name not in SCHEMA_VALIDATION_CONFIGS]


def _verdict(error_code: int, error_message: str | None) -> dict:
    return {"error_code": error_code, "error_message": error_message}


@scenario("CreateTopics", versions=(7,), covers=["INVALID_CONFIG"])
def config_boundaries_create_topics(s: Session, v: int):
    """CreateTopics (validate only) with each topic config at each of its boundary values."""
    for name, values in _walked():
        for i, value in enumerate(values):
            answer = s.call("CreateTopics", v, {
                "topics": [{"name": s.topic(f"{name}-{i}"), "num_partitions": 1, "replication_factor": 1,
                            "assignments": [], "configs": [{"name": name, "value": value}]}],
                "timeout_ms": 30000, "validate_only": True}, record=False)
            if answer is None:
                s.record(f"{name}={value!r}", {"connection": "closed"})
                continue
            topic = answer.topics[0]
            verdict = _verdict(topic.error_code, topic.error_message)
            if topic.error_code == 0:
                verdict["described"] = [{"value": c.value, "config_source": c.config_source}
                                        for c in topic.configs or [] if c.name == name]
            s.record(f"{name}={value!r}", verdict)


def _alter_each(s: Session, api: str, v: int, body) -> None:
    s.create_topic(s.topic())
    for name, values in _walked():
        for value in values:
            answer = s.call(api, v, {"resources": [{"resource_type": TOPIC, "resource_name": s.topic(),
                                                     "configs": [body(name, value)]}], "validate_only": True},
                            record=False)
            if answer is None:
                s.record(f"{name}={value!r}", {"connection": "closed"})
                continue
            result = answer.responses[0]
            s.record(f"{name}={value!r}", _verdict(result.error_code, result.error_message))


@scenario("AlterConfigs", versions=(2,), covers=["INVALID_CONFIG"])
def config_boundaries_alter_configs(s: Session, v: int):
    """AlterConfigs (validate only) setting each topic config to each of its boundary values."""
    _alter_each(s, "AlterConfigs", v, lambda name, value: {"name": name, "value": value})


@scenario("IncrementalAlterConfigs", versions=(1,), covers=["INVALID_CONFIG"])
def config_boundaries_incremental_alter_configs(s: Session, v: int):
    """IncrementalAlterConfigs (validate only) SET of each topic config to each of its boundary values."""
    _alter_each(s, "IncrementalAlterConfigs", v,
                lambda name, value: {"name": name, "config_operation": SET, "value": value})
