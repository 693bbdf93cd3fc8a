"""Changing topic configs: the shared core of AlterConfigs and IncrementalAlterConfigs (broker
configs: broker/dynamic_broker_config.py)."""

from __future__ import annotations

from collections import Counter

from kafka_wire.errors import ErrorCode

from .config import TOPIC_KEYS, ConfigError, ConfigType, parse_topic_configs
from .metadata import validate_topic_name

TOPIC = 2
BROKER = 4

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OPERATION_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


class ConfigChangeError(Exception):
    """A requested change Kafka refuses before validating values: (error code, message)."""

    def __init__(self, error: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def apply_topic_configs(broker, resource_type: int, name: str, new_configs: dict | None,
                        validate_only: bool) -> tuple[ErrorCode, str | None]:
    """Validate and (unless validate_only) store a topic's complete new set of overrides (BROKER
    resources are broker/dynamic_broker_config.py's)."""
    if resource_type != TOPIC:
        return ErrorCode.INVALID_REQUEST, f"Unexpected resource type {resource_type}."
    invalid = validate_topic_name(name)
    if invalid:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, invalid
    if broker.metadata.topic(name) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
    try:
        parsed = parse_topic_configs(new_configs, broker.config.topic_defaults())
    except ConfigError as exc:
        return ErrorCode.INVALID_CONFIG, str(exc)
    if not validate_only:
        broker.set_topic_configs(name, parsed)
    return ErrorCode.NONE, None


def incremental_changes(broker, name: str, ops) -> dict:
    """A topic's overrides after SET/DELETE/APPEND/SUBTRACT, as strings (Kafka's
    ConfigurationControlManager.incrementalAlterConfigResource). APPEND and SUBTRACT start from
    the override, or the config's own default when there is none. Raises ConfigChangeError."""
    counts = Counter(op.name for op in ops)
    if any(count > 1 for count in counts.values()):
        raise ConfigChangeError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    meta = broker.metadata.topic(name)
    current = {k: TOPIC_KEYS[k].render(v) if k in TOPIC_KEYS else v
               for k, v in (meta.configs if meta else {}).items()}
    for op in ops:
        operation = op.config_operation
        if operation == SET:
            current[op.name] = op.value
        elif operation == DELETE:
            current.pop(op.name, None)
        elif operation in (APPEND, SUBTRACT):
            key = TOPIC_KEYS.get(op.name)
            if key is None or key.type != ConfigType.LIST:
                raise ConfigChangeError(ErrorCode.INVALID_CONFIG,
                                        f"Can't {OPERATION_NAMES[operation]} to key {op.name} because "
                                        "its type is not LIST.")
            base = current.get(op.name)
            if base is None:
                base = key.render(key.default)
            items = [item for item in (base or "").split(",") if item]
            for item in (op.value or "").split(","):
                if operation == APPEND and item not in items:
                    items.append(item)
                elif operation == SUBTRACT and item in items:
                    items.remove(item)
            current[op.name] = ",".join(items)
        else:
            raise ConfigChangeError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {operation}")
    return current
