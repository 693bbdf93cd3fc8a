"""Every dynamic broker config with a type through its boundaries, on IncrementalAlterConfigs (44) of a
BROKER resource (type 4): generated from Kafka 4.3's dynamic keys (broker/kafka_config_names.py
KAFKA_DYNAMIC_BROKER_CONFIG_NAMES) and their types and bounds in broker/config.py BROKER_KEYS, with
config_boundaries.boundary_values, so a key added to either is walked too.

Each value is SET alone, validate_only, on broker 1 and on the default broker "" (a per-broker key only
on broker 1: on "" every value is refused alike, dynamic_broker_keys shows that). Kafka checks a value's
type and bounds first, then its reconfigurables (thread pools resized beyond half or double, the
cleaner's dedupe buffer per thread, local retention within retention, a keystore key without its
listener prefix): both brokers start with the same configuration (the profile), so those answers are
deterministic too. Keys without a type to walk (plain strings, passwords, classes, free lists) are set
at their default by dynamic_broker_keys; the listeners themselves and broker 1's min.insync.replicas
(Kafka 4.3 refuses it while eligible leader replicas are on, a feature kafka-wire has not) are left to
it as well. The CI's quick run walks broker 1 (with group_configs_boundaries_incremental about 7 s in
all); the default broker's walk is in the full run.
"""

from __future__ import annotations

from broker.config import BROKER_KEYS
from broker.kafka_config_names import KAFKA_DYNAMIC_BROKER_CONFIG_NAMES, KAFKA_PER_BROKER_CONFIG_NAMES

from ..scenario import Session, scenario
from .config_boundaries import boundary_values

BROKER = 4
SET = 0
_NOT_WALKED = {"listeners", "listener.security.protocol.map"}
_NOT_ON_BROKER = {"min.insync.replicas"}


def walked() -> list[tuple[str, list[str]]]:
    """(key, its boundary values) for every dynamic key with values to walk, by name."""
    keys = []
    for name in sorted(KAFKA_DYNAMIC_BROKER_CONFIG_NAMES - _NOT_WALKED):
        key = BROKER_KEYS.get(name)
        values = list(dict.fromkeys(boundary_values(key))) if key is not None else []
        if values:
            keys.append((name, values))
    return keys


def _walk(s: Session, v: int, resource: str) -> None:
    for name, values in walked():
        if (resource == "" and name in KAFKA_PER_BROKER_CONFIG_NAMES) or (resource and name in _NOT_ON_BROKER):
            continue
        for value in values:
            answer = s.call("IncrementalAlterConfigs", v, {"resources": [{
                "resource_type": BROKER, "resource_name": resource,
                "configs": [{"name": name, "config_operation": SET, "value": value}]}], "validate_only": True},
                record=False)
            label = f"{name}={value!r}"
            if answer is None:
                s.record(label, {"connection": "closed"})
                continue
            result = answer.responses[0]
            s.record(label, {"error_code": result.error_code, "error_message": result.error_message})


@scenario("IncrementalAlterConfigs", versions=(1,), covers=["INVALID_CONFIG", "INVALID_REQUEST"])
def dynamic_broker_boundaries_broker(s: Session, v: int):
    """IncrementalAlterConfigs (validate only) SET of each dynamic broker config to each of its boundary
    values on broker 1."""
    _walk(s, v, "1")


@scenario("IncrementalAlterConfigs", versions=(1,), covers=["INVALID_CONFIG", "INVALID_REQUEST"], quick=False)
def dynamic_broker_boundaries_default(s: Session, v: int):
    """The same walk on the default broker "" (the cluster-wide defaults), per-broker keys left out."""
    _walk(s, v, "")
