"""Where Kafka's ZooKeeper mode keeps dynamic broker configs and client quotas, and how it tells
the brokers they changed: znode paths, entity names, the JSON of a config znode and of a change
notification.

    /config/brokers/<default>                     {"version":1,"config":{"log.retention.ms":"60000"}}
    /config/brokers/<id>                          one broker's own dynamic configs
    /config/users/<user>                          {"version":1,"config":{"producer_byte_rate":"1024"}}
    /config/users/<user>/clients/<client-id>
    /config/clients/<client-id>
    /config/ips/<ip>
    /config/groups/<group>                        a group's configs (kafka-wire's: ZooKeeper-mode Kafka had none)
    /config/changes/config_change_<10-digit seq>  {"version":2,"entity_path":"users/alice/clients/app"}

A default entity is named `<default>`; other names are sanitized as Kafka's Sanitizer does (URL
encoding, "*" and space percent-encoded: an IPv6 address's colons too).
"""

from __future__ import annotations

import json
from urllib.parse import quote, unquote_plus

from ..client_quotas import CLIENT_ID, IP, IP_KEYS, USER, USER_CLIENT_KEYS, entity_key

CONFIG_CHANGES_PATH = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
BROKER_CONFIGS_PATH = "/config/brokers"
GROUP_CONFIGS_PATH = "/config/groups"
QUOTA_ENTITY_PATHS = ("/config/users", "/config/clients", "/config/ips")
DEFAULT_ENTITY = "<default>"
# Kafka's ZkNodeChangeNotificationListener deletes notifications older than this (15 minutes).
CHANGE_EXPIRATION_MS = 15 * 60 * 1000

_QUOTA_KEY_TYPES = {**USER_CLIENT_KEYS, **IP_KEYS}


def sanitize(name: str) -> str:
    """Kafka's Sanitizer.sanitize: Java's URLEncoder, with "*" and "+" (a space) percent-encoded."""
    return quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    return unquote_plus(name)


def broker_config_path(resource_name: str) -> str:
    """"" (the cluster-wide default) or a broker id."""
    return f"{BROKER_CONFIGS_PATH}/{resource_name or DEFAULT_ENTITY}"


def group_config_path(group: str) -> str:
    return f"{GROUP_CONFIGS_PATH}/{sanitize(group)}"


def group_of_path(entity_path: str) -> str | None:
    """The group that groups/<group> names, None for other entity paths."""
    parts = entity_path.strip("/").split("/")
    if len(parts) == 2 and parts[0] == "groups":
        return desanitize(parts[1])
    return None


def quota_entity_path(entity) -> str | None:
    """The entity path of a quota entity ("users/alice/clients/app"), relative to /config; None
    for a combination Kafka has no znode for."""
    names = dict(entity)
    if any(name == "" for name in names.values()):
        return None  # invalid names (the request is refused for them)

    def part(kind: str) -> str:
        name = names[kind]
        return DEFAULT_ENTITY if name is None else sanitize(name)

    if set(names) == {USER}:
        return f"users/{part(USER)}"
    if set(names) == {CLIENT_ID}:
        return f"clients/{part(CLIENT_ID)}"
    if set(names) == {USER, CLIENT_ID}:
        return f"users/{part(USER)}/clients/{part(CLIENT_ID)}"
    if set(names) == {IP}:
        return f"ips/{part(IP)}"
    return None


def quota_entity_of_path(entity_path: str):
    """The quota entity an entity path names, or None when it names no quota entity."""
    parts = entity_path.strip("/").split("/")

    def name(raw: str) -> str | None:
        return None if raw == DEFAULT_ENTITY else desanitize(raw)

    if len(parts) == 2 and parts[0] == "users":
        return entity_key([(USER, name(parts[1]))])
    if len(parts) == 2 and parts[0] == "clients":
        return entity_key([(CLIENT_ID, name(parts[1]))])
    if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
        return entity_key([(USER, name(parts[1])), (CLIENT_ID, name(parts[3]))])
    if len(parts) == 2 and parts[0] == "ips":
        return entity_key([(IP, name(parts[1]))])
    return None


def broker_of_path(entity_path: str) -> str | None:
    """"" for brokers/<default>, the id for brokers/<id>, None for other entity paths."""
    parts = entity_path.strip("/").split("/")
    if len(parts) == 2 and parts[0] == "brokers":
        return "" if parts[1] == DEFAULT_ENTITY else parts[1]
    return None


def entity_config_znode(config: dict[str, str]) -> bytes:
    return json.dumps({"version": 1, "config": dict(sorted(config.items()))}).encode()


def parse_entity_config(data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    return {str(k): str(v) for k, v in (json.loads(data).get("config") or {}).items()}


def render_quota(key: str, value: float) -> str:
    """A quota value as Kafka's ZooKeeper mode stores it: integral types as integers."""
    if _QUOTA_KEY_TYPES.get(key, "DOUBLE") == "DOUBLE":
        return repr(float(value))
    return str(int(value))


def parse_quotas(config: dict[str, str]) -> dict[str, float]:
    values = {}
    for key, raw in config.items():
        try:
            values[key] = float(raw)
        except ValueError:
            continue
    return values


def change_notification(entity_path: str) -> bytes:
    return json.dumps({"version": 2, "entity_path": entity_path}).encode()


def notified_entity_path(data: bytes | None) -> str | None:
    """The entity path of a change notification (version 2, or version 1's type and name)."""
    if not data:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None
    if value.get("entity_path"):
        return str(value["entity_path"])
    if value.get("entity_type") and value.get("entity_name"):
        return f"{value['entity_type']}/{value['entity_name']}"
    return None


def change_sequence(child: str) -> int | None:
    if not child.startswith(CONFIG_CHANGE_PREFIX):
        return None
    try:
        return int(child[len(CONFIG_CHANGE_PREFIX):])
    except ValueError:
        return None
