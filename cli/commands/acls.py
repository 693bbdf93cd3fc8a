"""`kafka-wire acls --add|--remove|--list`: ACLs over the wire, as kafka-acls.sh manages them.

    kafka-wire acls --bootstrap-server localhost:9092 --command-config admin.properties \\
        --add --allow-principal User:alice --operation Read --operation Describe --topic orders
    kafka-wire acls --bootstrap-server localhost:9092 --add --allow-principal User:bob \\
        --producer --topic orders --transactional-id orders-app --idempotent
    kafka-wire acls --bootstrap-server localhost:9092 --add --allow-principal User:carol \\
        --consumer --topic orders --group billing --resource-pattern-type prefixed
    kafka-wire acls --bootstrap-server localhost:9092 --list --topic orders --resource-pattern-type match
    kafka-wire acls --bootstrap-server localhost:9092 --remove --topic orders --force

Kafka's AclCommand rules: each resource option (--topic, --group, --transactional-id, repeatable,
and --cluster) combined with each principal, host and operation gives one ACL (--operation
defaults to All, --allow-host/--deny-host to `*`). --producer means WRITE, DESCRIBE and CREATE on
the topics and WRITE, DESCRIBE on the transactional ids (IDEMPOTENT_WRITE on the cluster with
--idempotent); --consumer means READ, DESCRIBE on the topics and READ on the groups. --remove with
no principal removes every ACL of the resource pattern, after a confirmation that --force skips.
Add and remove print the resulting ACLs in kafka-acls.sh's "Current ACLs for resource" layout.
Requests are CreateAcls, DescribeAcls and DeleteAcls.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from kafka_wire.acls import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    WILDCARD,
    AclOperation as Op,
    AclPermissionType as Perm,
    PatternType,
    ResourceType,
)
from ..tool_support import ToolError, add_connection_arguments, connect, reports_errors
from client import KafkaError

PATTERN_TYPES = {"literal": PatternType.LITERAL, "prefixed": PatternType.PREFIXED, "match": PatternType.MATCH,
                 "any": PatternType.ANY}
PRODUCER_TOPIC_OPERATIONS = (Op.WRITE, Op.DESCRIBE, Op.CREATE)
PRODUCER_TRANSACTIONAL_ID_OPERATIONS = (Op.WRITE, Op.DESCRIBE)
CONSUMER_TOPIC_OPERATIONS = (Op.READ, Op.DESCRIBE)
CONSUMER_GROUP_OPERATIONS = (Op.READ,)


@dataclass(frozen=True, order=True)
class ResourcePattern:
    """A resource pattern, or a pattern filter when pattern_type is MATCH or ANY (Kafka's
    ResourcePattern / ResourcePatternFilter; both print the same way)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, " \
               f"patternType={self.pattern_type.name})"


@dataclass(frozen=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: Op
    permission_type: Perm

    def __str__(self) -> str:
        return f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, " \
               f"permissionType={self.permission_type.name})"


CLUSTER_PATTERN = ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)


def parse_operation(name: str) -> Op:
    """`Read`, `READ`, `ClusterAction`, `cluster_action`: Kafka's SecurityUtils.operation is case-blind."""
    key = name.strip().replace("_", "").replace("-", "").upper()
    for op in Op:
        if op.name.replace("_", "") == key and op not in (Op.UNKNOWN, Op.ANY):
            return op
    raise ToolError(f"Invalid operation '{name}': expected one of "
                    + ", ".join(_pascal(op) for op in Op if op not in (Op.UNKNOWN, Op.ANY)))


def _pascal(op: Op) -> str:
    return "".join(part.capitalize() for part in op.name.split("_"))


def parse_principal(text: str) -> str:
    principal = text.strip()
    kind, sep, name = principal.partition(":")
    if not sep or not kind:
        raise ToolError(f"Could not parse principal from `{principal}` (no colon is present separating the "
                        "principal type from the principal name)")
    return principal


# -- from the command line to patterns and entries (AclCommand's getResourceFilterToAcls) --------------


def resource_filters(args, *, required: bool = True) -> list[ResourcePattern]:
    pattern_type = PATTERN_TYPES[args.resource_pattern_type]
    filters: list[ResourcePattern] = []
    filters += [ResourcePattern(ResourceType.TOPIC, t.strip(), pattern_type) for t in args.topic]
    if pattern_type == PatternType.LITERAL and (args.cluster or args.idempotent):
        filters.append(CLUSTER_PATTERN)
    filters += [ResourcePattern(ResourceType.GROUP, g.strip(), pattern_type) for g in args.group]
    filters += [ResourcePattern(ResourceType.TRANSACTIONAL_ID, t, pattern_type) for t in args.transactional_id]
    if not filters and required:
        raise ToolError("You must provide at least one resource: --topic <topic> or --cluster or --group <group> "
                        "or --transactional-id <transactional id>")
    return list(dict.fromkeys(filters))


def entries(args, operations) -> set[AccessControlEntry]:
    """Every (principal, host, operation) of --allow-principal/--deny-principal; hosts default to `*`."""
    out = set()
    for principals, hosts, permission in ((args.allow_principal, args.allow_host, Perm.ALLOW),
                                          (args.deny_principal, args.deny_host, Perm.DENY)):
        for principal in principals:
            for host in (hosts or [WILDCARD]):
                for op in operations:
                    out.add(AccessControlEntry(parse_principal(principal), host.strip(), op, permission))
    return out


def filters_to_entries(args) -> dict[ResourcePattern, set[AccessControlEntry]]:
    result: dict[ResourcePattern, set[AccessControlEntry]] = {}
    if not args.producer and not args.consumer:
        operations = {parse_operation(o) for o in (args.operation or ["All"])}
        for pattern in resource_filters(args):
            result[pattern] = entries(args, operations)
    if args.producer:
        for pattern in resource_filters(args):
            if pattern.resource_type == ResourceType.TOPIC:
                result[pattern] = entries(args, PRODUCER_TOPIC_OPERATIONS)
            elif pattern.resource_type == ResourceType.TRANSACTIONAL_ID:
                result[pattern] = entries(args, PRODUCER_TRANSACTIONAL_ID_OPERATIONS)
        if args.idempotent:
            result[CLUSTER_PATTERN] = entries(args, (Op.IDEMPOTENT_WRITE,))
    if args.consumer:
        for pattern in resource_filters(args):
            if pattern.resource_type == ResourceType.TOPIC:
                result[pattern] = entries(args, CONSUMER_TOPIC_OPERATIONS) | result.get(pattern, set())
            elif pattern.resource_type == ResourceType.GROUP:
                result[pattern] = entries(args, CONSUMER_GROUP_OPERATIONS) | result.get(pattern, set())
    for pattern, acls in result.items():
        valid = set(SUPPORTED_OPERATIONS.get(pattern.resource_type, ())) | {Op.ALL}
        if any(acl.operation not in valid for acl in acls):
            raise ToolError(f"ResourceType {pattern.resource_type.name} only supports operations "
                            + ", ".join(_pascal(op) for op in sorted(valid)))
    return result


def check_arguments(args) -> None:
    """AclCommandOptions.checkArgs: which options go with which action."""
    actions = [a for a in ("add", "remove", "list") if getattr(args, a)]
    if len(actions) != 1:
        raise ToolError("Command must include exactly one action: --list, --add, --remove.")
    if args.list and (args.producer or args.consumer or args.allow_principal or args.deny_principal
                      or args.operation or args.allow_host or args.deny_host):
        raise ToolError("--list takes only resource options (and --principal)")
    if args.principal and not args.list:
        raise ToolError("--principal is only valid with --list")
    if args.producer and not args.topic and not args.transactional_id:
        raise ToolError("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise ToolError("The --idempotent option is only available if --producer is set")
    if args.consumer and (not args.topic or not args.group or (not args.producer and (args.cluster or
                                                                                       args.transactional_id))):
        raise ToolError("With --consumer you must specify a --topic and a --group and no --cluster or "
                        "--transactional-id option should be specified.")
    if (args.producer or args.consumer) and (args.operation or args.deny_principal or args.deny_host):
        raise ToolError("--operation, --deny-principal and --deny-host cannot be used with --producer or --consumer")


# -- the wire -------------------------------------------------------------------------------------------


def _filter_body(pattern: ResourcePattern, entry: AccessControlEntry | None = None) -> dict:
    return {"resource_type_filter": int(pattern.resource_type), "resource_name_filter": pattern.name,
            "pattern_type_filter": int(pattern.pattern_type),
            "principal_filter": entry.principal if entry else None, "host_filter": entry.host if entry else None,
            "operation": int(entry.operation) if entry else int(Op.ANY),
            "permission_type": int(entry.permission_type) if entry else int(Perm.ANY)}


ANY_FILTER = {"resource_type_filter": int(ResourceType.ANY), "resource_name_filter": None,
              "pattern_type_filter": int(PatternType.ANY), "principal_filter": None, "host_filter": None,
              "operation": int(Op.ANY), "permission_type": int(Perm.ANY)}


def describe(client, filters: list[ResourcePattern]) -> dict[ResourcePattern, set[AccessControlEntry]]:
    bodies = [_filter_body(f) for f in filters] if filters else [ANY_FILTER]
    found: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for body in bodies:
        response = client.request("DescribeAcls", body)
        if response.error_code:
            raise KafkaError(response.error_code, "DescribeAcls", response.error_message)
        for resource in response.resources:
            pattern = ResourcePattern(ResourceType(resource.resource_type), resource.resource_name,
                                      PatternType(resource.pattern_type))
            found.setdefault(pattern, set()).update(
                AccessControlEntry(a.principal, a.host, Op(a.operation), Perm(a.permission_type))
                for a in resource.acls)
    return found


def create(client, pattern: ResourcePattern, acls: set[AccessControlEntry]) -> None:
    creations = [{"resource_type": int(pattern.resource_type), "resource_name": pattern.name,
                  "resource_pattern_type": int(pattern.pattern_type), "principal": a.principal, "host": a.host,
                  "operation": int(a.operation), "permission_type": int(a.permission_type)} for a in sorted(acls)]
    response = client.request("CreateAcls", {"creations": creations})
    for result in response.results:
        if result.error_code:
            raise KafkaError(result.error_code, f"CreateAcls {pattern}", result.error_message)


def delete(client, pattern: ResourcePattern, acls: set[AccessControlEntry]) -> None:
    filters = [_filter_body(pattern, a) for a in sorted(acls)] if acls else [_filter_body(pattern)]
    response = client.request("DeleteAcls", {"filters": filters})
    for result in response.filter_results:
        if result.error_code:
            raise KafkaError(result.error_code, f"DeleteAcls {pattern}", result.error_message)
        for matching in result.matching_acls:
            if matching.error_code:
                raise KafkaError(matching.error_code, f"DeleteAcls {pattern}", matching.error_message)


# -- output (AclCommand's printResourceAcls) --------------------------------------------------------------


def _entries_block(acls) -> str:
    return "\n".join("\t" + str(a) for a in sorted(acls))


def print_resource_acls(found: dict[ResourcePattern, set[AccessControlEntry]]) -> None:
    for pattern in sorted(found):
        print(f"Current ACLs for resource `{pattern}`: \n {_entries_block(found[pattern])} \n")


def list_acls(client, args) -> None:
    found = describe(client, resource_filters(args, required=False))
    if not args.principal:
        print_resource_acls(found)
        return
    for principal in args.principal:
        principal = parse_principal(principal)
        print(f"ACLs for principal `{principal}`")
        print_resource_acls({p: {a for a in acls if a.principal == principal} for p, acls in found.items()
                             if any(a.principal == principal for a in acls)})


def confirm(args, question: str) -> bool:
    if args.force:
        return True
    print(question)
    answer = sys.stdin.readline()
    return answer.strip().lower() == "y"


@reports_errors
def run(args) -> int:
    check_arguments(args)
    if args.add:
        pattern_type = PATTERN_TYPES[args.resource_pattern_type]
        if pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise ToolError(f"A '--resource-pattern-type' value of '{pattern_type.name}' is not valid when "
                            "adding acls.")
        to_add = filters_to_entries(args)
        if any(not acls for acls in to_add.values()):
            raise ToolError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    with connect(args) as cluster:
        client = cluster.controller()
        if args.add:
            for pattern, acls in to_add.items():
                print(f"Adding ACLs for resource `{pattern}`: \n {_entries_block(acls)} \n")
                create(client, pattern, acls)
        elif args.remove:
            for pattern, acls in filters_to_entries(args).items():
                if not acls:
                    question = f"Are you sure you want to delete all ACLs for resource filter `{pattern}`? (y/n)"
                else:
                    question = (f"Are you sure you want to remove ACLs: \n {_entries_block(acls)} \n from resource "
                                f"filter `{pattern}`? (y/n)")
                if confirm(args, question):
                    delete(client, pattern, acls)
        list_acls(client, args)
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("acls", help="add, remove and list ACLs (kafka-acls.sh)")
    add_connection_arguments(parser)
    action = parser.add_argument_group("actions (exactly one)")
    action.add_argument("--add", action="store_true", help="add the ACLs the other options describe")
    action.add_argument("--remove", action="store_true", help="remove ACLs (all of a resource without principals)")
    action.add_argument("--list", action="store_true", help="list ACLs (of the given resources, else all)")
    resources = parser.add_argument_group("resources")
    resources.add_argument("--topic", action="append", default=[], help="a topic (repeatable; * for all)")
    resources.add_argument("--group", action="append", default=[], help="a consumer group (repeatable)")
    resources.add_argument("--cluster", action="store_true", help="the cluster")
    resources.add_argument("--transactional-id", action="append", default=[],
                           help="a transactional id (repeatable)")
    resources.add_argument("--resource-pattern-type", type=str.lower, choices=tuple(PATTERN_TYPES),
                           default="literal", help="literal (default) or prefixed; when listing or removing also "
                                                   "any (any pattern, this exact name) or match (every ACL that "
                                                   "applies to the name)")
    entries_group = parser.add_argument_group("entries")
    entries_group.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL",
                               help="User:NAME allowed (repeatable; User:* for everyone)")
    entries_group.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL",
                               help="User:NAME denied (repeatable)")
    entries_group.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                               help="host the allowed principals connect from (default *)")
    entries_group.add_argument("--deny-host", action="append", default=[], metavar="HOST",
                               help="host the denied principals connect from (default *)")
    entries_group.add_argument("--operation", action="append", default=[],
                               help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, AlterConfigs, "
                                    "DescribeConfigs, IdempotentWrite, All (repeatable; default All)")
    entries_group.add_argument("--producer", action="store_true",
                               help="WRITE, DESCRIBE, CREATE on --topic; WRITE, DESCRIBE on --transactional-id")
    entries_group.add_argument("--idempotent", action="store_true",
                               help="with --producer: IDEMPOTENT_WRITE on the cluster")
    entries_group.add_argument("--consumer", action="store_true", help="READ, DESCRIBE on --topic; READ on --group")
    parser.add_argument("--principal", action="append", default=[],
                        help="with --list: only the ACLs of this principal (repeatable)")
    parser.add_argument("--force", action="store_true", help="remove without asking for confirmation")
    parser.set_defaults(func=run)
