"""Dynamic broker configs (KIP-226): AlterConfigs and IncrementalAlterConfigs on a BROKER resource.

The resource named "" holds the cluster-wide defaults, the one named by this broker's id its own
values; both are kept in the metadata (the embedded file, or ZooKeeper's /config/brokers/<default>
and /config/brokers/<id> in cluster mode, where every broker applies a change when notified, as in
Kafka's ZooKeeper mode), so they survive a restart, and overlay
server.properties (BrokerConfig.set_dynamic). Every key Kafka 4.3 may change at run time is
accepted (config.DYNAMIC_BROKER_KEYS), and applying them is live, as in Kafka: topics without an
override of their own take the new broker defaults of their topic configs (retention, segment size,
cleanup policy, message.max.bytes, ...), the cleaner its new backoff, the connection quotas the new
limits, a TLS or SASL listener its new keystore, truststore, protocols, ciphers, client
authentication and mechanisms (for new connections); the keys kafka-wire has no use for (thread
counts, tiered storage, Kerberos, ...) are stored and described.

Checks and messages follow Kafka's ConfigAdminManager (the broker-side preprocessing, whose
failures answer INVALID_REQUEST, and prepareIncrementalConfigs, whose answer INVALID_CONFIG),
DynamicBrokerConfig.validateConfigs (names, types) and its reconfigurables' validateReconfiguration
(config.validate_reconfiguration: "Invalid dynamic configuration").
"""

from __future__ import annotations

import logging
import os
from collections import Counter

from kafka_wire.errors import ErrorCode
from log.config import LogConfig

from .config import (BROKER_KEYS, LISTENER_PREFIX, BrokerConfig, ConfigError, ConfigType, java_set,
                     validate_dynamic_broker_configs)
from .security.listeners import security_protocol
from .security.tls import server_context

logger = logging.getLogger("kafka_wire.broker")

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

# What Kafka's reconfigurables refuse of a change beyond each value's type (their validateReconfiguration):
# INVALID_REQUEST with their reason wrapped as DynamicBrokerConfig.processReconfiguration wraps it
# (ConfigException("Invalid dynamic configuration", reason) printed by Kafka 4.3).
INVALID_DYNAMIC_CONFIGURATION = "Invalid dynamic configuration"

# Thread pools a change may resize by at most half or double (DynamicThreadPool; per listener,
# num.network.threads: DataPlaneAcceptor).
THREAD_COUNT_KEYS = ("num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
                     "background.threads", "remote.log.reader.threads", "remote.log.manager.copier.thread.pool.size",
                     "remote.log.manager.expiration.thread.pool.size", "remote.log.manager.follower.thread.pool.size")
# The group coordinators' dynamic assignment intervals and the broker bounds they must lie within.
ASSIGNMENT_INTERVAL_KEYS = tuple(f"group.{kind}.assignment.interval.ms" for kind in ("consumer", "share", "streams"))
# Per listener (listener.name.<l>.<key> or the broker-wide key): ConnectionQuotas' listener quotas.
LISTENER_QUOTA_KEYS = ("max.connections", "max.connection.creation.rate")
# A listener's TLS and SASL settings (broker/security/): a change rebuilds what the listener serves with.
LISTENER_SECURITY_KEYS = ("ssl.keystore.location", "ssl.keystore.certificate.chain", "ssl.keystore.key",
                          "ssl.keystore.password", "ssl.key.password", "ssl.keystore.type", "ssl.truststore.location",
                          "ssl.truststore.certificates", "ssl.truststore.password", "ssl.truststore.type",
                          "ssl.enabled.protocols", "ssl.protocol", "ssl.cipher.suites", "ssl.client.auth",
                          "sasl.enabled.mechanisms")


def _listener_value(config, listener: str, key: str):
    raw = config.original.get(f"{LISTENER_PREFIX}{listener.lower()}.{key}")
    return BROKER_KEYS[key].parse(raw) if raw is not None else config.get(key)


def _thread_count_refusal(name: str, old: int, new: int) -> str | None:
    """DynamicThreadPool.validateReconfiguration: at least 1, at least half, at most double (Java's int division)."""
    if new == old:
        return None
    why = f"Dynamic thread count update validation failed for {name}={new}"
    if new <= 0:
        return f"{why}, value should be at least 1"
    if new < int(old / 2):
        return f"{why}, value should be at least half the current value {old}"
    if new > old * 2:
        return f"{why}, value should not be greater than double the current value {old}"
    return None


def _refused(reason: str) -> ConfigError:
    return ConfigError(f"Invalid value org.apache.kafka.common.config.ConfigException: {reason} for configuration "
                       f"{INVALID_DYNAMIC_CONFIGURATION}")


def validate_reconfiguration(current: BrokerConfig, new: BrokerConfig) -> None:
    """What Kafka 4.3 refuses of a change from the running configuration `current` to `new` (the same
    static configuration with the new dynamic layers), with its messages: its KafkaConfig's checks across
    keys (the cleaner's dedupe buffer per thread, every listener mapped to a security protocol), then its
    reconfigurables' (thread pools resized beyond half or double, a listener's connection quotas below 1,
    local retention above retention, an existing listener's protocol changed, the advertised listeners
    changed, which KRaft cannot re-register; a TLS listener's new key or trust store that cannot be
    loaded). kafka-wire binds its listeners at start: a change of the listeners themselves is refused
    too. Raises ConfigError."""
    roll_ms = new["log.roll.ms"]
    if (int(new["log.roll.hours"]) * 3_600_000 if roll_ms is None else int(roll_ms)) < 1:
        raise ConfigError("requirement failed: log.roll.ms must be greater than or equal to 1")
    jitter_ms = new["log.roll.jitter.ms"]
    if (int(new["log.roll.jitter.hours"]) * 3_600_000 if jitter_ms is None else int(jitter_ms)) < 0:
        raise ConfigError("requirement failed: log.roll.jitter.ms must be greater than or equal to 0")
    threads = int(new["log.cleaner.threads"])
    if threads == 0:
        raise ConfigError("/ by zero")
    if int(new["log.cleaner.dedupe.buffer.size"]) // threads <= 1024 * 1024:
        raise ConfigError("requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.")
    if int(new["max.connections.per.ip"]) == 0 and not new["max.connections.per.ip.overrides"]:
        raise ConfigError("requirement failed: max.connections.per.ip can be set to zero only if "
                          "max.connections.per.ip.overrides property is set.")
    for key in ASSIGNMENT_INTERVAL_KEYS:
        bounds = key.replace(".assignment.", ".min.assignment."), key.replace(".assignment.", ".max.assignment.")
        if int(new[key]) < int(new[bounds[0]]):
            raise ConfigError(f"{key} must be greater than or equal to {bounds[0]}")
        if int(new[key]) > int(new[bounds[1]]):
            raise ConfigError(f"{key} must be less than or equal to {bounds[1]}")
    # A listener named after a protocol needs no entry of its own only while the map is Kafka's default.
    map_set = any("listener.security.protocol.map" in layer
                  for layer in (new.explicit, new.dynamic_default, new.dynamic_broker))
    mapped = {entry.partition(":")[0].strip().upper() for entry in new["listener.security.protocol.map"]}
    for listener, _, _ in new.listeners():
        if security_protocol(new, listener) is None or (map_set and listener.upper() not in mapped):
            raise ConfigError(f"Error creating broker listeners from '{java_set(new['listeners'])}': "
                              f"No security protocol defined for listener {listener}")

    for key in THREAD_COUNT_KEYS:
        refusal = _thread_count_refusal(key, int(current[key]), int(new[key]))
        if refusal:
            raise _refused(refusal)
    old_cleaner = int(current["log.cleaner.threads"])
    if threads < int(old_cleaner / 2):
        raise _refused(f"Log cleaner threads cannot be reduced to less than half the current value {old_cleaner}")
    if threads > old_cleaner * 2:
        raise _refused(f"Log cleaner threads cannot be increased to more than double the current value {old_cleaner}")
    listeners = [name for name, _, _ in current.listeners()]
    for listener in listeners:
        refusal = _thread_count_refusal("num.network.threads",
                                        *(int(_listener_value(c, listener, "num.network.threads"))
                                          for c in (current, new)))
        if refusal:
            raise _refused(refusal)
        for key in LISTENER_QUOTA_KEYS:
            value = int(_listener_value(new, listener, key))
            if value != int(_listener_value(current, listener, key)) and value <= 0:
                raise _refused(f"Invalid {key} {value}")
    retention_ms, local_ms = new.retention_ms(), int(new["log.local.retention.ms"])
    if retention_ms != -1 and local_ms != -2:
        if local_ms == -1:
            raise _refused(f"Invalid value -1 for configuration log.local.retention.ms: Value must not be -1 as "
                           f"log.retention.ms value is set as {retention_ms}.")
        if local_ms > retention_ms:
            raise _refused(f"Invalid value {local_ms} for configuration log.local.retention.ms: Value must not be "
                           f"more than log.retention.ms property value: {retention_ms}")
    retention_bytes, local_bytes = int(new["log.retention.bytes"]), int(new["log.local.retention.bytes"])
    if retention_bytes > -1 and local_bytes != -2:
        if local_bytes == -1:
            raise _refused(f"Invalid value -1 for configuration log.local.retention.bytes: Value must not be -1 as "
                           f"log.retention.bytes value is set as {retention_bytes}.")
        if local_bytes > retention_bytes:
            raise _refused(f"Invalid value {local_bytes} for configuration log.local.retention.bytes: Value must not "
                           f"be more than log.retention.bytes property value: {retention_bytes}")
    for listener in listeners:
        if security_protocol(new, listener) != security_protocol(current, listener):
            raise _refused(f"Security protocol cannot be updated for existing listener ListenerName({listener})")
    if new.advertised_listeners() != current.advertised_listeners():
        raise _refused("Advertised listeners cannot be altered when using a Raft-based metadata quorum.")
    if new.listeners() != current.listeners():
        raise ConfigError(f"{INVALID_DYNAMIC_CONFIGURATION}: kafka-wire binds its listeners when it starts; "
                          "change listeners in its configuration and restart it")
    for listener in listeners:
        protocol = security_protocol(new, listener)
        if protocol in ("SSL", "SASL_SSL") and \
                listener_security_settings(new, listener) != listener_security_settings(current, listener):
            try:
                server_context(new, listener, protocol)
            except (ConfigError, ValueError) as exc:
                raise _refused(f"Validation of dynamic config update of SSLFactory failed: {exc}") from None


def listener_security_settings(config, listener: str) -> tuple:
    """A listener's TLS and SASL settings as the broker reads them (listener-prefixed, else broker-wide)."""
    return tuple(_listener_value(config, listener, key) for key in LISTENER_SECURITY_KEYS)


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
    """Overlay the stored dynamic configs on the broker's configuration and apply what kafka-wire
    uses of them: the topic config defaults to every partition log (log.*, message.max.bytes,
    compression.*, min.insync.replicas, ...), log.cleaner.backoff.ms to the cleaner, the connection
    limits and each listener's TLS and SASL settings to the server. Keys read from the configuration
    at each use (transaction.partition.verification.enable, ...) need nothing more.

    Called when the metadata is loaded and after every change, in every worker process: worker 0
    stores a change and the others re-read the metadata (reload_shared_state); in ZooKeeper mode every
    worker of every broker follows the config change notifications (broker_configs_changed)."""
    config = broker.config
    before = {listener: listener_security_settings(config, listener) for listener, _, _ in config.listeners()}
    config.set_dynamic(stored(broker, ""), stored(broker, str(broker.node_id)))
    cleaner = getattr(getattr(broker, "logs", None), "cleaner", None)
    backoff_ms = int(config["log.cleaner.backoff.ms"])
    if cleaner is not None and cleaner.backoff_ms != backoff_ms:
        cleaner.backoff_ms = backoff_ms
        logger.info("log cleaner backoff is now %d ms (process %d)", backoff_ms, os.getpid())
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
    securities = getattr(server, "listener_securities", None) or {}
    for listener, security in securities.items():
        if listener_security_settings(config, listener) == before.get(listener):
            continue
        try:
            security.update(config)
        except Exception:  # checked before it was stored (validate_reconfiguration); a file gone since
            logger.exception("listener %s keeps its TLS and SASL settings: the new ones cannot be applied", listener)
            continue
        logger.info("listener %s serves new connections with its new TLS and SASL settings", listener)


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
    config = broker.config
    try:
        validate_dynamic_broker_configs(new_props, per_broker=bool(resource_name))
        if resource_name:
            changed = config.overlaid(config.dynamic_default, new_props)
        else:
            changed = config.overlaid(new_props, config.dynamic_broker)
        validate_reconfiguration(config, changed)
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
