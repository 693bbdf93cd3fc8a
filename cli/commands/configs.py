"""`kafka-wire configs --describe|--alter`: topic, broker and group configs and client quotas over the wire,
as kafka-configs.sh manages them.

    kafka-wire configs --bootstrap-server localhost:9092 --entity-type brokers --entity-default \\
        --alter --add-config log.retention.ms=86400000
    kafka-wire configs --bootstrap-server localhost:9092 --entity-type brokers --entity-name 1 --describe --all
    kafka-wire configs --bootstrap-server localhost:9092 --entity-type topics --entity-name orders \\
        --alter --add-config 'cleanup.policy=[compact,delete]' --delete-config retention.ms
    kafka-wire configs --bootstrap-server localhost:9092 --entity-type users --entity-name alice \\
        --entity-type clients --entity-default --alter --add-config producer_byte_rate=1048576
    kafka-wire configs --bootstrap-server localhost:9092 --entity-type clients --describe

Kafka's ConfigCommand rules and output: topics and brokers go through DescribeConfigs and
IncrementalAlterConfigs (--describe lists the dynamic configs, --all every one, each with its
synonyms; --delete-config of a config that is not set fails with "Invalid config(s)"); groups
(Kafka 4.3's group configs) likewise, without that check, a group with neither configs nor members
being said not to exist; users,
clients (alone or together) and ips go through DescribeClientQuotas (the filter names exactly the
given entity types) and AlterClientQuotas. The shorthand flags (--topic, --broker,
--broker-defaults, --user, --user-defaults, --client, --client-defaults, --ip, --ip-defaults) work
as in kafka-configs.sh. SCRAM credentials are `kafka-wire users`' job.
"""

from __future__ import annotations

import argparse
import re

from kafka_wire.client_quotas import IP_KEYS, USER_CLIENT_KEYS
from ..tool_support import ToolError, add_connection_arguments, connect, reports_errors
from client import KafkaError

TOPIC_RESOURCE, BROKER_RESOURCE, GROUP_RESOURCE = 2, 4, 32
RESOURCE_TYPES = {"topics": TOPIC_RESOURCE, "brokers": BROKER_RESOURCE, "groups": GROUP_RESOURCE}
SET, DELETE = 0, 1
SOURCE_NAMES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
                4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
                7: "DYNAMIC_CLIENT_METRICS_CONFIG", 8: "DYNAMIC_GROUP_CONFIG"}
QUOTA_ENTITY_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
ENTITY_TYPES = ("topics", "brokers", "groups", "users", "clients", "ips")
DESCRIBED_AS = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}


class _EntityName(argparse.Action):
    """--entity-name NAME and --entity-default fill one list in command-line order ("" = default)."""

    def __call__(self, parser, namespace, values, option_string=None):
        names = getattr(namespace, "entity_names", None) or []
        names.append("" if option_string == "--entity-default" else values)
        namespace.entity_names = names


def parse_add_config(text: str) -> dict[str, str]:
    """kafka-configs.sh's --add-config: k1=v1,k2=[v1,v2],k3=v3 (brackets group commas)."""
    configs: dict[str, str] = {}
    for part in re.findall(r"(?:[^,\[]|\[[^\]]*\])+", text):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ToolError("Invalid entity config: all configs to be added must be in the format \"key=val\".")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        configs[key.strip()] = value
    return configs


def java_double(value: float) -> str:
    """A double as Java's Double.toString prints it (1024.0, 1.0E9)."""
    if value != 0 and not 1e-3 <= abs(value) < 1e7:
        mantissa, exponent = f"{value:.16E}".split("E")
        mantissa = mantissa.rstrip("0")
        if mantissa.endswith("."):
            mantissa += "0"
        return f"{float(mantissa)!r}E{int(exponent)}"
    text = repr(float(value))
    return text


def _entities(args) -> tuple[list[str], list[str]]:
    """Kafka's ConfigCommandOptions.entityTypes and entityNames (shorthand flags included)."""
    types = list(args.entity_type or [])
    names = list(getattr(args, "entity_names", None) or [])
    flags = [("topic", "topics"), ("client", "clients"), ("user", "users"), ("broker", "brokers"), ("ip", "ips"),
             ("group", "groups")]
    defaults = [("client_defaults", "clients"), ("user_defaults", "users"), ("broker_defaults", "brokers"),
                ("ip_defaults", "ips")]
    shorthand = [(getattr(args, flag), kind) for flag, kind in flags if getattr(args, flag) is not None]
    shorthand_defaults = [kind for flag, kind in defaults if getattr(args, flag)]
    if (types or names) and (shorthand or shorthand_defaults):
        raise ToolError("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
    types += [kind for _, kind in shorthand] + shorthand_defaults
    names += [name for name, _ in shorthand] + [""] * len(shorthand_defaults)
    if not types:
        raise ToolError("At least one entity type must be specified")
    duplicates = sorted({t for t in types if types.count(t) > 1})
    if duplicates:
        raise ToolError(f"Duplicate entity type(s) specified: {','.join(duplicates)}")
    for kind in types:
        if kind not in ENTITY_TYPES:
            raise ToolError(f"Invalid entity type {kind}, the entity type must be one of {', '.join(ENTITY_TYPES)} "
                            "with a --bootstrap-server argument")
    if len(types) > 1 and set(types) != {"users", "clients"}:
        raise ToolError("Only 'users' and 'clients' entity types may be specified together")
    if len(names) > len(types):
        raise ToolError("More entity names specified than entity types")
    if types[0] == "brokers":
        for name in names:
            if name and not name.lstrip("-").isdigit():
                raise ToolError(f"The entity name for brokers must be a valid integer broker id, but it is: {name}")
    return types, names


@reports_errors
def run(args) -> int:
    types, names = _entities(args)
    if args.describe == args.alter:
        raise ToolError("Command must include exactly one action: --describe, --alter")
    with connect(args) as cluster:
        client = cluster.any_broker()
        if args.describe:
            if args.add_config or args.delete_config:
                raise ToolError("Option --describe does not accept --add-config or --delete-config")
            if types[0] in RESOURCE_TYPES:
                _describe_resources(client, types[0], names[0] if names else None, args.all)
            else:
                _describe_quotas(client, types, names)
            return 0
        if not names or (types[0] not in ("users", "clients", "brokers", "ips") and not names[0]):
            raise ToolError(f"An entity name must be specified with --alter of {types[0]}"
                            if types[0] in ("topics", "groups") else "An entity-name or default entity must be "
                            "specified with --alter of users, clients, brokers or ips")
        added = parse_add_config(args.add_config) if args.add_config else {}
        deleted = [n.strip() for item in args.delete_config for n in item.split(",") if n.strip()]
        if not added and not deleted:
            raise ToolError("At least one of --add-config, --add-config-file, or --delete-config must be specified "
                            "with --alter")
        if types[0] in RESOURCE_TYPES:
            _alter_resource(client, types[0], names[0], added, deleted)
        else:
            _alter_quotas(client, types, names, added, deleted)
        if names[0]:
            print(f"Completed updating config for {types[0][:-1]} {names[0]}.")
        else:
            print(f"Completed updating default config for {types[0]} in the cluster.")
    return 0


# -- topics, brokers and groups ---------------------------------------------------------------------------


def _resource_configs(client, entity_type: str, name: str, describe_all: bool, synonyms: bool = True) -> list:
    response = client.call("DescribeConfigs", 4, {"resources": [
        {"resource_type": RESOURCE_TYPES[entity_type], "resource_name": name, "configuration_keys": None}],
        "include_synonyms": synonyms, "include_documentation": False})
    result = response.results[0]
    if result.error_code:
        raise KafkaError(result.error_code, f"describe configs of {entity_type[:-1]} {name or '<default>'}",
                         result.error_message)
    wanted = {"topics": 1, "brokers": 2 if name else 3, "groups": 8}[entity_type]
    return sorted((c for c in result.configs if describe_all or c.config_source == wanted), key=lambda c: c.name)


def _groups(client) -> tuple[list[str], list[str]]:
    """The groups with configs of their own (ListConfigResources), and every group (ListGroups)."""
    configured = client.call("ListConfigResources", 1, {"resource_types": [GROUP_RESOURCE]})
    if configured.error_code:
        raise KafkaError(configured.error_code, "list config resources")
    listed = client.call("ListGroups", 5, {"states_filter": [], "types_filter": []})
    if listed.error_code:
        raise KafkaError(listed.error_code, "list groups")
    return [r.resource_name for r in configured.config_resources], [g.group_id for g in listed.groups]


def _describe_resources(client, entity_type: str, name: str | None, describe_all: bool) -> None:
    if entity_type == "groups":
        configured, existing = _groups(client)
        if name is not None and name not in configured and name not in existing:
            print(f"The group '{name}' doesn't exist and doesn't have dynamic config.")
            return
        names = [name] if name is not None else sorted(set(configured) | set(existing))
    elif name is not None:
        names = [name]
    elif entity_type == "topics":
        metadata = client.call("Metadata", 12, {"topics": None, "allow_auto_topic_creation": False})
        names = sorted(t.name for t in metadata.topics)
    else:
        metadata = client.call("Metadata", 12, {"topics": [], "allow_auto_topic_creation": False})
        names = [str(b.node_id) for b in sorted(metadata.brokers, key=lambda b: b.node_id)] + [""]
    for entity in names:
        if entity_type == "brokers" and not entity:
            print("Default configs for brokers in the cluster are:")
        else:
            print(f"{'All' if describe_all else 'Dynamic'} configs for {entity_type[:-1]} {entity} are:")
        for config in _resource_configs(client, entity_type, entity, describe_all):
            synonyms = ", ".join(f"{SOURCE_NAMES.get(s.source, 'UNKNOWN')}:{s.name}={s.value}" for s in config.synonyms)
            value = "null" if config.value is None else config.value
            sensitive = "true" if config.is_sensitive else "false"
            print(f"  {config.name}={value} sensitive={sensitive} synonyms={{{synonyms}}}")


def _alter_resource(client, entity_type: str, name: str, added: dict[str, str], deleted: list[str]) -> None:
    if entity_type != "groups":  # Kafka 4.3's tool deletes a group config that is not set without a word
        existing = {c.name for c in _resource_configs(client, entity_type, name, False, synonyms=False)}
        invalid = [n for n in deleted if n not in existing]
        if invalid:
            raise ToolError(f"Invalid config(s): {','.join(invalid)}")
    ops = ([{"name": n, "config_operation": DELETE, "value": ""} for n in deleted]
           + [{"name": k, "config_operation": SET, "value": v} for k, v in added.items()])
    response = client.call("IncrementalAlterConfigs", 1, {"resources": [
        {"resource_type": RESOURCE_TYPES[entity_type], "resource_name": name, "configs": ops}],
        "validate_only": False})
    result = response.responses[0]
    if result.error_code:
        raise KafkaError(result.error_code, f"alter configs of {entity_type[:-1]} {name or '<default>'}",
                         result.error_message)


# -- users, clients and ips -----------------------------------------------------------------------


def _components(types: list[str], names: list[str]) -> list[dict]:
    components = []
    for i, kind in enumerate(types):
        entity_type = QUOTA_ENTITY_TYPES[kind]
        if i >= len(names):
            components.append({"entity_type": entity_type, "match_type": 2, "match": None})
        elif names[i] == "":
            components.append({"entity_type": entity_type, "match_type": 1, "match": None})
        else:
            components.append({"entity_type": entity_type, "match_type": 0, "match": names[i]})
    return components


def _quotas(client, types: list[str], names: list[str]) -> list:
    response = client.call("DescribeClientQuotas", 1, {"components": _components(types, names), "strict": True})
    if response.error_code:
        raise KafkaError(response.error_code, "describe client quotas", response.error_message)
    return response.entries or []


def _describe_quotas(client, types: list[str], names: list[str]) -> None:
    for entry in _quotas(client, types, names):
        entity = {e.entity_type: e.entity_name for e in entry.entity}
        parts = []
        for entity_type in ("user", "client-id", "ip"):
            if entity_type in entity:
                name = entity[entity_type]
                parts.append(f"{DESCRIBED_AS[entity_type]} '{name}'" if name is not None
                             else f"the default {DESCRIBED_AS[entity_type]}")
        values = ", ".join(f"{v.key}={java_double(v.value)}" for v in entry.values)
        print(f"Quota configs for {', '.join(parts)} are {values}")


def _alter_quotas(client, types: list[str], names: list[str], added: dict[str, str], deleted: list[str]) -> None:
    valid = IP_KEYS if types[0] == "ips" else USER_CLIENT_KEYS
    unknown = [k for k in [*added, *deleted] if k not in valid]
    if unknown:
        if types[0] == "ips":
            raise ToolError("Only connection quota configs can be added for 'ips' using --bootstrap-server. "
                            f"Unexpected config names: {','.join(unknown)}")
        raise ToolError(f"Only quota configs can be added for '{types[0]}' using --bootstrap-server. "
                        f"Unexpected config names: {','.join(unknown)}")
    if len(names) != len(types):
        raise ToolError("An entity-name or default entity must be specified with --alter of users, clients, "
                        "brokers or ips")
    current = _quotas(client, types, names)
    existing = {v.key for entry in current for v in entry.values}
    invalid = [n for n in deleted if n not in existing]
    if invalid:
        raise ToolError(f"Invalid config(s): {','.join(invalid)}")
    ops = []
    for key, value in added.items():
        try:
            ops.append({"key": key, "value": float(value), "remove": False})
        except ValueError:
            raise ToolError(f"Cannot parse quota configuration value for {key}: {value}") from None
    ops += [{"key": key, "value": 0.0, "remove": True} for key in deleted]
    entity = [{"entity_type": QUOTA_ENTITY_TYPES[kind], "entity_name": name or None} for kind, name in zip(types, names)]
    response = client.call("AlterClientQuotas", 1, {"entries": [{"entity": entity, "ops": ops}], "validate_only": False})
    for result in response.entries:
        if result.error_code:
            raise KafkaError(result.error_code, "alter client quotas", result.error_message)


def register(subparsers) -> None:
    parser = subparsers.add_parser("configs", help="describe and alter topic, broker and group configs and client "
                                                   "quotas (kafka-configs.sh)")
    add_connection_arguments(parser)
    action = parser.add_argument_group("action")
    action.add_argument("--describe", action="store_true", help="list the configs of the given entity")
    action.add_argument("--alter", action="store_true", help="alter the configs of the given entity")
    parser.add_argument("--all", action="store_true", help="with --describe: every config, static ones included")
    parser.add_argument("--entity-type", action="append", choices=ENTITY_TYPES,
                        help="topics, brokers, groups, users, clients or ips (users and clients may be given "
                             "together)")
    parser.add_argument("--entity-name", action=_EntityName, dest="entity_names",
                        help="topic name, broker id, group id, user principal name, client id or ip")
    parser.add_argument("--entity-default", action=_EntityName, nargs=0, dest="entity_names",
                        help="the default entity of the type (the cluster-wide broker defaults for brokers)")
    for flag, what in (("--topic", "a topic"), ("--broker", "a broker id"), ("--user", "a user principal name"),
                       ("--client", "a client id"), ("--ip", "an ip"), ("--group", "a group id")):
        parser.add_argument(flag, help=f"shorthand for --entity-type ... --entity-name: {what}")
    for flag in ("--broker-defaults", "--user-defaults", "--client-defaults", "--ip-defaults"):
        parser.add_argument(flag, action="store_true", help="shorthand for --entity-type ... --entity-default")
    parser.add_argument("--add-config", help="k1=v1,k2=[v1,v2],k3=v3 (brackets group values holding commas)")
    parser.add_argument("--delete-config", action="append", default=[], help="keys to remove: k1,k2")
    parser.set_defaults(func=run)
