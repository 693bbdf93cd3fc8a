"""Dynamic broker configs (KIP-226): AlterConfigs and IncrementalAlterConfigs on a BROKER resource.

The resource named "" holds the cluster-wide defaults, the one named by this broker's id its own
values; both are kept in the metadata (the embedded file, or ZooKeeper's /config/brokers/<default>
and /config/brokers/<id> in cluster mode, where every broker applies a change when notified, as in
Kafka's ZooKeeper mode), so they survive a restart, and overlay
server.properties (BrokerConfig.set_dynamic). Applying them is live, as in Kafka: topics without
an override of their own take the new broker defaults of their topic configs (retention, segment
size, cleanup policy, ...), and the connection quotas take the new limits.

Checks and messages follow Kafka's ConfigAdminManager (the broker-side preprocessing, whose
failures answer INVALID_REQUEST, and prepareIncrementalConfigs, whose answer INVALID_CONFIG) and
DynamicBrokerConfig.validateConfigs.
"""

from __future__ import annotations

import logging
from collections import Counter

from kafka_wire.errors import ErrorCode
from log.config import LogConfig

from .config import BROKER_KEYS, ConfigError, ConfigType, validate_dynamic_broker_configs

logger = logging.getLogger("kafka_wire.broker")

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


class BrokerConfigError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def stored(broker, resource_name: str) -> dict[str, str]:
    return dict(broker.metadata.broker_configs.get(resource_name, {}))


def current(broker, resource_name: str) -> dict[str, str]:
    """What an incremental change starts from: in cluster mode a fresh read from ZooKeeper (another
    broker may have just changed the default), as Kafka's ZkAdminManager reads it."""
    return broker.metadata.read_broker_configs(resource_name)


def apply_dynamic_broker_configs(broker) -> None:
    """Overlay the stored dynamic configs on the broker's configuration and push the resulting
    topic config defaults to every partition log and the connection limits to the server.
    Called when the metadata is loaded and after every change."""
    config = broker.config
    config.set_dynamic(stored(broker, ""), stored(broker, str(broker.node_id)))
    broker.logs.default_config = LogConfig.of(config.topic_defaults())
    for meta in broker.metadata.topics.values():
        effective = broker.topic_config(meta)
        for partition in range(meta.partitions):
            plog = broker.logs.get(meta.name, partition)
            if plog is not None:
                plog.update_config(effective)
    server = getattr(broker, "server", None)
    quotas = getattr(server, "quotas", None)
    if quotas is not None:
        from .security.listeners import ConnectionQuotas

        fresh = ConnectionQuotas(config)
        quotas.max_connections = fresh.max_connections
        quotas.max_per_ip = fresh.max_per_ip
        quotas.overrides = fresh.overrides


def check_resource_name(broker, name: str) -> None:
    """"" (the cluster default) or this broker's id (ConfigAdminManager.validateResourceNameIsCurrentNodeId)."""
    if not name:
        return
    try:
        node = int(name)
    except ValueError:
        raise BrokerConfigError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
    if node != broker.node_id:
        raise BrokerConfigError(ErrorCode.INVALID_REQUEST,
                                f"Unexpected broker id, expected {broker.node_id}, but received {name}")


def check_request_configs(names: list[str], null_values: list[str]) -> None:
    if any(count > 1 for count in Counter(names).values()):
        raise BrokerConfigError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    if null_values:
        raise BrokerConfigError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(null_values))


def incremental_props(current: dict[str, str], ops) -> dict[str, str]:
    """Kafka's ConfigAdminManager.prepareIncrementalConfigs on a resource's dynamic configs."""
    props = dict(current)
    for op in ops:
        name = op.name
        if op.config_operation == SET:
            props[name] = op.value
        elif op.config_operation == DELETE:
            props.pop(name, None)
        elif op.config_operation in (APPEND, SUBTRACT):
            key = BROKER_KEYS.get(name)
            if key is None:
                raise BrokerConfigError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {name}")
            verb = "append" if op.config_operation == APPEND else "subtract"
            if key.type != ConfigType.LIST:
                raise BrokerConfigError(ErrorCode.INVALID_CONFIG,
                                        f"Config value {verb} is not allowed for config key: {name}")
            given = (op.value or "").split(",")
            if op.config_operation == APPEND:
                old = props.get(name)
                if old is None:
                    old = key.render(key.default) or ""
                items = old.split(",")
                items += [item for item in given if item not in items]
            else:
                items = props[name].split(",") if name in props else []
                for item in given:
                    if item in items:
                        items.remove(item)
            props[name] = ",".join(items)
        else:
            raise BrokerConfigError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op.config_operation}")
    return props


def alter_broker_configs(broker, resource_name: str, new_props: dict[str, str], validate_only: bool
                         ) -> tuple[ErrorCode, str | None]:
    """Validate and (unless validate_only) store and apply a resource's complete new set of
    dynamic configs."""
    try:
        validate_dynamic_broker_configs(new_props, per_broker=bool(resource_name))
    except ConfigError as exc:
        # ConfigAdminManager.validateBrokerConfigChange turns ConfigException into INVALID_REQUEST.
        return ErrorCode.INVALID_REQUEST, str(exc)
    if not validate_only:
        broker.metadata.set_broker_configs(resource_name, new_props)
        apply_dynamic_broker_configs(broker)
        logger.info("dynamic broker configs of %s are now %s", repr(resource_name) if resource_name else "the default broker",
                 new_props)
    return ErrorCode.NONE, None


def alter(broker, resource_name: str, configs: dict[str, str | None], validate_only: bool
          ) -> tuple[ErrorCode, str | None]:
    """AlterConfigs (legacy) on a BROKER resource: the given configs replace the resource's."""
    try:
        check_request_configs(list(configs), [name for name, value in configs.items() if value is None])
        check_resource_name(broker, resource_name)
    except BrokerConfigError as exc:
        return exc.error, exc.message
    return alter_broker_configs(broker, resource_name, dict(configs), validate_only)


def incremental_alter(broker, resource_name: str, ops, validate_only: bool) -> tuple[ErrorCode, str | None]:
    """IncrementalAlterConfigs on a BROKER resource."""
    try:
        check_request_configs([op.name for op in ops],
                              [op.name for op in ops if op.config_operation != DELETE and op.value is None])
        check_resource_name(broker, resource_name)
        props = incremental_props(current(broker, resource_name), ops)
    except BrokerConfigError as exc:
        return exc.error, exc.message
    return alter_broker_configs(broker, resource_name, props, validate_only)
