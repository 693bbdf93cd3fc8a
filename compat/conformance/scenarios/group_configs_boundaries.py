"""Every group config through its boundaries, on IncrementalAlterConfigs (44) and AlterConfigs (33) of a
GROUP resource (type 32): generated from the group config table (broker/group_configs.py GROUP_KEYS,
Kafka 4.3's GroupConfig), so a key added there is walked too.

Per key: the values config_boundaries.boundary_values gives its type (below the key's own floor, the
floor, the type's limits, a number beyond the type, a word, a fraction; for allowed values each one,
one in capitals, an unknown one; for booleans a word that is neither), then the broker's bounds it is
checked against (group.consumer.min.session.timeout.ms, ...: one below the broker's minimum, the
minimum, the maximum, one above), and for share.auto.offset.reset the duration forms its validator
reads (by_duration:<ISO-8601>, signed, empty, in lower case, with a fraction). Every request is
validate_only and sets one value, on a group never seen and (incrementally) on a group that exists
(an empty group with a committed offset): Kafka checks group configs without looking at the group.
Kafka 3.9 has no group configs: known.py's "*group_configs*" entry says so. The CI's quick run plays
the incremental walk on a new group (with dynamic_broker_boundaries_broker about 7 s in all); the
existing group's and AlterConfigs' walks are in the full run.
"""

from __future__ import annotations

from broker.config import BROKER_KEYS
from broker.group_configs import BOUNDS, GROUP_KEYS

from ..scenario import Session, scenario
from .config_boundaries import boundary_values

GROUP = 32
SET = 0

_DURATIONS = ["earliest", "latest", " earliest ", "EARLIEST", "by_duration:PT1H", "by_duration:P1D",
              "by_duration:P1DT2H3M4.5S", "by_duration:PT0S", "by_duration:pt1h", "by_duration:PT1,5S",
              "by_duration:+PT1H", "by_duration:-PT1H", "by_duration:PT-1H", "by_duration:P1DT-1H",
              "by_duration:P1W", "by_duration:PT", "by_duration:P", "by_duration:", "by_duration",
              "by_duration:PT1H:", "unknown", ""]


def _broker_bound_values(name: str) -> list[str]:
    values: list[str] = []
    for key, minimum, maximum in BOUNDS:
        if key != name:
            continue
        if minimum is not None:
            low = int(BROKER_KEYS[minimum].default)
            values += [str(low - 1), str(low)]
        if maximum is not None:
            high = int(BROKER_KEYS[maximum].default)
            values += [str(high), str(high + 1)]
    return values


def group_boundary_values(name: str) -> list[str]:
    """The values a group config is walked through."""
    values = boundary_values(GROUP_KEYS[name])
    if name == "share.auto.offset.reset":
        values += _DURATIONS
    elif GROUP_KEYS[name].type.name == "BOOLEAN":
        values += ["TRUE", ""]
    values += _broker_bound_values(name)
    return list(dict.fromkeys(values))


def _walk(s: Session, api: str, v: int, group: str, config) -> None:
    for name in GROUP_KEYS:
        for value in group_boundary_values(name):
            answer = s.call(api, v, {"resources": [{"resource_type": GROUP, "resource_name": group,
                                                    "configs": [config(name, value)]}], "validate_only": True},
                            record=False)
            label = f"{name}={value!r}"
            if answer is None:
                s.record(label, {"connection": "closed"})
                continue
            result = answer.responses[0]
            s.record(label, {"error_code": result.error_code, "error_message": result.error_message})


@scenario("IncrementalAlterConfigs", versions=(1,), covers=["INVALID_CONFIG"])
def group_configs_boundaries_incremental(s: Session, v: int):
    """IncrementalAlterConfigs (validate only) SET of each group config to each of its boundary values,
    on a group never seen."""
    _walk(s, "IncrementalAlterConfigs", v, s.group(),
          lambda name, value: {"name": name, "config_operation": SET, "value": value})


@scenario("IncrementalAlterConfigs", versions=(1,), covers=["INVALID_CONFIG"], quick=False)
def group_configs_boundaries_existing_group(s: Session, v: int):
    """The same walk on a group that exists (empty, with a committed offset)."""
    topic, group = s.topic(), s.group()
    s.create_topic(topic)
    s.find_coordinator(group)
    s.setup("OffsetCommit", 8, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                                "topics": [{"name": topic, "partitions": [
                                    {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}]})
    _walk(s, "IncrementalAlterConfigs", v, group,
          lambda name, value: {"name": name, "config_operation": SET, "value": value})


@scenario("AlterConfigs", versions=(2,), covers=["INVALID_CONFIG"], quick=False)
def group_configs_boundaries_alter(s: Session, v: int):
    """AlterConfigs (validate only) setting each group config to each of its boundary values."""
    _walk(s, "AlterConfigs", v, s.group(), lambda name, value: {"name": name, "value": value})
