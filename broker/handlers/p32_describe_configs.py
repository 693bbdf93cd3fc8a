"""DescribeConfigs (32): topic and broker configs with their sources, synonyms and types."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..config import TOPIC_TO_BROKER, ConfigSource

API = APIS_BY_NAME["DescribeConfigs"]

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8


def _topic_synonyms(broker, name: str, overrides: dict) -> list[dict]:
    """Kafka lists, most specific first: the topic override, the broker's static value, the default."""
    cfg = broker.config
    synonyms = []
    if name in overrides:
        key = next(k for n, _, _, k in cfg.describe_topic_config({}) if n == name)
        synonyms.append({"name": name, "value": key.render(overrides[name]),
                         "source": int(ConfigSource.DYNAMIC_TOPIC_CONFIG)})
    broker_key = TOPIC_TO_BROKER[name]
    if broker_key in cfg.explicit:
        from ..config import BROKER_KEYS

        synonyms.append({"name": broker_key, "value": BROKER_KEYS[broker_key].render(cfg[broker_key]),
                         "source": int(ConfigSource.STATIC_BROKER_CONFIG)})
    default_value = dict((n, v) for n, v, _, _ in cfg.describe_topic_config({}))[name]
    synonyms.append({"name": broker_key, "value": default_value, "source": int(ConfigSource.DEFAULT_CONFIG)})
    return synonyms


def _entries(rows, wanted, include_synonyms, include_docs, synonyms_of=None) -> list[dict]:
    entries = []
    for name, value, source, key in rows:
        if wanted is not None and name not in wanted:
            continue
        entries.append({
            "name": name,
            "value": None if key.sensitive else value,
            "read_only": source != ConfigSource.DYNAMIC_TOPIC_CONFIG and synonyms_of is None,
            "config_source": int(source),
            "is_sensitive": key.sensitive,
            "synonyms": synonyms_of(name) if (include_synonyms and synonyms_of) else [],
            "config_type": int(key.type),
            "documentation": key.doc if include_docs else None,
        })
    return entries


async def handle(broker, ctx, request):
    results = []
    for resource in request.resources:
        result = {"error_code": 0, "error_message": None, "resource_type": resource.resource_type,
                  "resource_name": resource.resource_name, "configs": []}
        wanted = set(resource.configuration_keys) if resource.configuration_keys is not None else None
        if resource.resource_type == TOPIC:
            meta = broker.metadata.topic(resource.resource_name)
            if meta is None:
                result.update(error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                              error_message=f"Topic {resource.resource_name} does not exist")
            else:
                rows = broker.config.describe_topic_config(meta.configs)
                configs = _entries(rows, wanted, request.include_synonyms, request.include_documentation,
                                   lambda n: _topic_synonyms(broker, n, meta.configs))
                for entry in configs:
                    entry["read_only"] = False
                result["configs"] = configs
        elif resource.resource_type == BROKER:
            if resource.resource_name not in ("", str(broker.node_id)):
                result.update(error_code=int(ErrorCode.INVALID_REQUEST),
                              error_message=f"Unexpected broker id, expected {broker.node_id} or empty "
                                            f"string, but received {resource.resource_name}")
            else:
                rows = broker.config.describe_broker_config()
                configs = _entries(rows, wanted, request.include_synonyms, request.include_documentation)
                for entry in configs:
                    if request.include_synonyms:
                        entry["synonyms"] = [{"name": entry["name"], "value": entry["value"],
                                              "source": entry["config_source"]}]
                result["configs"] = configs
        elif resource.resource_type == BROKER_LOGGER:
            result["configs"] = []
        else:
            result.update(error_code=int(ErrorCode.INVALID_REQUEST),
                          error_message=f"Unsupported resource type {resource.resource_type}")
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}
