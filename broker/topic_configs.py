"""Changing topic configs: the shared core of AlterConfigs and IncrementalAlterConfigs."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode

from .config import TOPIC_KEYS, ConfigError, parse_topic_configs

TOPIC = 2
BROKER = 4

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def apply_topic_configs(broker, resource_type: int, name: str, new_configs: dict | None,
                        validate_only: bool) -> tuple[ErrorCode, str | None]:
    """Validate and (unless validate_only) store a topic's complete new set of overrides."""
    if resource_type == BROKER:
        return (ErrorCode.INVALID_REQUEST,
                "Dynamic broker configs are not supported; set them in server.properties")
    if resource_type != TOPIC:
        return ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource_type}"
    if new_configs is None:
        return ErrorCode.INVALID_CONFIG, "Invalid config operation"
    meta = broker.metadata.topic(name)
    if meta is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist"
    try:
        parsed = parse_topic_configs(new_configs)
    except ConfigError as exc:
        return ErrorCode.INVALID_CONFIG, str(exc)
    if not validate_only:
        broker.set_topic_configs(name, parsed)
    return ErrorCode.NONE, None


def incremental_changes(broker, name: str, ops) -> dict | None:
    """Apply SET/DELETE/APPEND/SUBTRACT to a topic's current overrides; None if an op is invalid."""
    meta = broker.metadata.topic(name)
    current = {k: TOPIC_KEYS[k].render(v) for k, v in (meta.configs if meta else {}).items()}
    defaults = broker.config.topic_defaults()
    for op in ops:
        key = TOPIC_KEYS.get(op.name)
        if op.config_operation == SET:
            current[op.name] = op.value
        elif op.config_operation == DELETE:
            current.pop(op.name, None)
        elif op.config_operation in (APPEND, SUBTRACT):
            if key is None or key.type.name != "LIST":
                return None
            base = current.get(op.name)
            items = base.split(",") if base else list(defaults.get(op.name) or [])
            change = [x.strip() for x in (op.value or "").split(",") if x.strip()]
            if op.config_operation == APPEND:
                items += [x for x in change if x not in items]
            else:
                items = [x for x in items if x not in change]
            current[op.name] = ",".join(items)
        else:
            return None
    return current
