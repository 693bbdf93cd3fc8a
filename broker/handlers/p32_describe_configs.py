"""DescribeConfigs (32): topic, broker and group configs with their sources, synonyms and types.

As Kafka's ConfigHelper: a topic config's synonyms are its override (DYNAMIC_TOPIC_CONFIG) then
the broker configs that supply its default, static ones before defaults, and its source is the
first synonym's (DEFAULT_CONFIG when there is none). Synonyms list dynamic broker configs (this
broker's, then the default broker's) before static ones. Describing the cluster-wide default
broker (an empty name) lists only the dynamic defaults, each with only its
DYNAMIC_DEFAULT_BROKER_CONFIG synonyms; a broker config is read-only unless it may be changed
dynamically (broker/dynamic_broker_config.py).
"""

from __future__ import annotations

import dataclasses

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from .. import broker_loggers, group_configs
from ..config import (BROKER_KEYS, DYNAMIC_BROKER_KEYS, ConfigKey, ConfigSource, ConfigType, broker_synonyms,
                      listener_base_name)
from ..handler_view import BrokerView
from ..metadata import validate_topic_name
from ..security.authorizer import AclOperation, config_resource_error

API = APIS_BY_NAME["DescribeConfigs"]

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
GROUP = group_configs.GROUP


def _synonym(name: str, value: str | None, source: ConfigSource) -> dict:
    return {"name": name, "value": value, "source": int(source)}


def _entry(name, value, source, key, synonyms, *, read_only: bool, include_synonyms: bool,
           include_documentation: bool) -> dict:
    if key.sensitive:  # Kafka hides a sensitive config's value in its synonyms too
        synonyms = [(synonym, None, synonym_source) for synonym, _, synonym_source in synonyms]
    return {
        "name": name,
        "value": None if key.sensitive else value,
        "read_only": read_only,
        "config_source": int(source),
        "is_sensitive": key.sensitive,
        "synonyms": [_synonym(*s) for s in synonyms] if include_synonyms else [],
        "config_type": int(key.type),
        "documentation": (key.doc or None) if include_documentation else None,
    }


def _stored_key(name: str) -> ConfigKey:
    """The definition of a dynamic broker config: a name no definition knows (stored for plugins, as
    Kafka keeps them) is described as Kafka describes it: unknown type, so sensitive, value hidden; a
    listener-prefixed one (listener.name.<l>.<key>) with its base key's type and sensitivity."""
    key = BROKER_KEYS.get(name)
    if key is not None:
        return key
    base = BROKER_KEYS.get(broker_synonyms(name)[-1]) if listener_base_name(name) is not None else None
    if base is not None:
        return dataclasses.replace(base, name=name)
    return ConfigKey(name, ConfigType.UNKNOWN, None, sensitive=True)


def _wanted(resource) -> set[str] | None:
    # Kafka describes every config when the key list is null or empty.
    return set(resource.configuration_keys) if resource.configuration_keys else None


def describe_topic(broker: BrokerView, resource, request) -> dict:
    name = resource.resource_name
    invalid = validate_topic_name(name)
    if invalid:
        return {"error_code": int(ErrorCode.INVALID_TOPIC_EXCEPTION), "error_message": invalid, "configs": []}
    meta = broker.metadata.topic(name)
    if meta is None:
        return {"error_code": int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), "error_message": "", "configs": []}
    wanted = _wanted(resource)
    config = broker.config
    configs = []
    for config_name, value, source, key in config.describe_topic_config(meta.configs):
        if wanted is not None and config_name not in wanted:
            continue
        synonyms = config.topic_config_synonyms(config_name)
        if config_name in meta.configs:
            synonyms = [(config_name, value, ConfigSource.DYNAMIC_TOPIC_CONFIG), *synonyms]
        configs.append(_entry(config_name, value, source, key, synonyms, read_only=False,
                              include_synonyms=request.include_synonyms,
                              include_documentation=request.include_documentation))
    return {"error_code": 0, "error_message": "", "configs": configs}


def describe_broker(broker: BrokerView, resource, request) -> dict:
    name = resource.resource_name
    if not name:
        return describe_default_broker(broker, resource, request)
    try:
        broker_id = int(name)
    except ValueError:
        return {"error_code": int(ErrorCode.INVALID_REQUEST),
                "error_message": f"Broker id must be an integer, but it is: {name}", "configs": []}
    if broker_id != broker.node_id:
        return {"error_code": int(ErrorCode.INVALID_REQUEST),
                "error_message": f"Unexpected broker id, expected {broker.node_id} or empty string, "
                                 f"but received {name}", "configs": []}
    wanted = _wanted(resource)
    config = broker.config
    configs = []
    for config_name, value, source, key in config.describe_broker_config():
        if wanted is not None and config_name not in wanted:
            continue
        synonyms = config.config_synonyms(config_name, broker_synonyms(config_name))
        configs.append(_entry(config_name, value, source, key, synonyms,
                              read_only=config_name not in DYNAMIC_BROKER_KEYS,
                              include_synonyms=request.include_synonyms,
                              include_documentation=request.include_documentation))
    for config_name in {**config.dynamic_broker, **config.dynamic_default}:
        if config_name in BROKER_KEYS or (wanted is not None and config_name not in wanted):
            continue
        synonyms = config.config_synonyms(config_name, broker_synonyms(config_name))
        value = config.dynamic_broker.get(config_name, config.dynamic_default.get(config_name))
        configs.append(_entry(config_name, value, synonyms[0][2], _stored_key(config_name), synonyms,
                              read_only=True, include_synonyms=request.include_synonyms,
                              include_documentation=request.include_documentation))
    return {"error_code": 0, "error_message": "", "configs": configs}


def describe_default_broker(broker: BrokerView, resource, request) -> dict:
    """The cluster-wide dynamic defaults, as Kafka's ConfigHelper describes the "" broker
    (createBrokerConfigEntry with perBrokerConfig = false)."""
    wanted = _wanted(resource)
    config = broker.config
    configs = []
    for config_name, value in config.dynamic_default.items():
        if wanted is not None and config_name not in wanted:
            continue
        key = _stored_key(config_name)
        synonyms = [s for s in config.config_synonyms(config_name, broker_synonyms(config_name))
                    if s[2] == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        configs.append(_entry(config_name, value, source, key, synonyms,
                              read_only=config_name not in DYNAMIC_BROKER_KEYS,
                              include_synonyms=request.include_synonyms,
                              include_documentation=request.include_documentation))
    return {"error_code": 0, "error_message": "", "configs": configs}


def describe_broker_loggers(broker: BrokerView, resource, request) -> dict:
    """This broker's loggers and their effective levels (broker/broker_loggers.py), as Kafka describes
    its log4j loggers: source DYNAMIC_BROKER_LOGGER_CONFIG, no type, no synonyms, documentation "" (asked
    for or not); names that are no logger skipped."""
    try:
        broker_loggers.check_node(broker, resource.resource_name, describe=True)
    except broker_loggers.BrokerLoggerError as exc:
        return {"error_code": int(exc.error), "error_message": exc.message, "configs": []}
    wanted = _wanted(resource)
    configs = [{"name": name, "value": level, "read_only": False,
                "config_source": int(ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG), "is_sensitive": False,
                "synonyms": [], "config_type": int(ConfigType.UNKNOWN), "documentation": ""}
               for name, level in broker_loggers.levels().items() if wanted is None or name in wanted]
    return {"error_code": 0, "error_message": "", "configs": configs}


def describe_group(broker: BrokerView, resource, request) -> dict:
    """A group's configs (broker/group_configs.py), whether or not the group exists, as Kafka."""
    error, message, entries = group_configs.describe(broker, resource.resource_name, _wanted(resource))
    configs = [_entry(name, value, source, key, synonyms, read_only=False, include_synonyms=request.include_synonyms,
                      include_documentation=request.include_documentation)
               for name, value, source, key, synonyms in entries]
    return {"error_code": int(error), "error_message": message, "configs": configs}


DESCRIBERS = {TOPIC: describe_topic, BROKER: describe_broker, BROKER_LOGGER: describe_broker_loggers,
              GROUP: describe_group}


async def handle(broker: BrokerView, ctx, request):
    results = []
    for resource in request.resources:
        describe = DESCRIBERS.get(resource.resource_type)
        denied = config_resource_error(broker.authorizer, ctx, AclOperation.DESCRIBE_CONFIGS,
                                       resource.resource_type, resource.resource_name)
        if denied:
            result = {"error_code": int(denied), "error_message": denied.message, "configs": []}
        elif describe is None:
            result = {"error_code": int(ErrorCode.INVALID_REQUEST),
                      "error_message": f"Unsupported resource type: {resource.resource_type}", "configs": []}
        else:
            result = describe(broker, resource, request)
        result.update(resource_type=resource.resource_type, resource_name=resource.resource_name)
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}
