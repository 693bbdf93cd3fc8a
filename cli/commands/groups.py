"""`kafka-wire groups list|describe`: kafka-consumer-groups.sh over the wire.

    kafka-wire groups list --bootstrap-server localhost:9092 [--state [STATE]]
    kafka-wire groups describe GROUP --bootstrap-server localhost:9092 [--members | --state]

describe prints, per partition the group has committed offsets for or has assigned, the
committed offset, the log end offset (ListOffsets latest), the lag between them, and the member
that owns the partition, as Kafka's tool does. KIP-848 consumer groups are described with
ConsumerGroupDescribe (their assignments name topics and partitions, the strategy is the server
assignor); classic groups with DescribeGroups, their assignments decoded from the consumer
protocol (groups of other protocol types show their members without partitions). `list --type`
shows each group's type ("classic" or "consumer", ListGroups v5).
"""

from __future__ import annotations

import sys

from kafka_wire.consumer_protocol import CONSUMER_PROTOCOL_TYPE, assigned_partitions
from kafka_wire.errors import ErrorCode

from ..tool_support import add_connection_arguments, connect, print_table, reports_errors
from client import LATEST_TIMESTAMP, KafkaError, UnsupportedVersion

REBALANCING_STATES = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


# -- list -----------------------------------------------------------------------------------------


def list_all_groups(cluster, states: list[str] | None = None, types: list[str] | None = None) -> list:
    """ListGroups of every broker (each lists the groups it coordinates), sorted by group id."""
    cluster.metadata([])
    listed = {}
    for node_id in sorted(cluster.brokers):
        client = cluster.broker(node_id)
        body = {"states_filter": states or [], "types_filter": types or []}
        response = client.request("ListGroups", body, lowest=5 if types is not None else 4 if states else None)
        if response.error_code:
            raise KafkaError(response.error_code, f"ListGroups on node {node_id}")
        for group in response.groups:
            listed[group.group_id] = group
    return [listed[g] for g in sorted(listed)]


@reports_errors
def list_groups(args) -> int:
    states = [s for s in (args.state or "").split(",") if s] if args.state else None
    types = [t for t in (args.type or "").split(",") if t] if args.type is not None else None
    with connect(args) as cluster:
        groups = list_all_groups(cluster, states, types)
    if args.state is None and args.type is None:
        for group in groups:
            print(group.group_id)
    elif args.type is None:
        print_table(["GROUP", "STATE"], [[g.group_id, g.group_state] for g in groups], [25, 0])
    elif args.state is None:
        print_table(["GROUP", "TYPE"], [[g.group_id, g.group_type.capitalize()] for g in groups], [25, 0])
    else:
        print_table(["GROUP", "TYPE", "STATE"], [[g.group_id, g.group_type.capitalize(), g.group_state]
                                                 for g in groups], [25, 15, 0])
    return 0


# -- describe -------------------------------------------------------------------------------------


class ConsumerGroupMemberView:
    """A ConsumerGroupDescribe member with the fields the tables print."""

    def __init__(self, member) -> None:
        self.member_id = member.member_id
        self.client_host = member.client_host
        self.client_id = member.client_id
        self.member_epoch = member.member_epoch
        self.partitions = sorted((t.topic_name, p) for t in member.assignment.topic_partitions for p in t.partitions)


class ConsumerGroupView:
    """A ConsumerGroupDescribe entry shaped as DescribeGroups' (protocol data: the assignor)."""

    protocol_type = CONSUMER_PROTOCOL_TYPE

    def __init__(self, described) -> None:
        self.group_id = described.group_id
        self.group_state = described.group_state
        self.protocol_data = described.assignor_name
        self.group_epoch = described.group_epoch
        self.members = [ConsumerGroupMemberView(m) for m in described.members]


def describe_consumer_group(coordinator, group_id: str):
    """The ConsumerGroupDescribe view of a KIP-848 group; None for a classic (or unknown) group."""
    try:
        response = coordinator.request("ConsumerGroupDescribe", {"group_ids": [group_id],
                                                                 "include_authorized_operations": False})
    except UnsupportedVersion:
        return None
    described = response.groups[0]
    if described.error_code == ErrorCode.GROUP_ID_NOT_FOUND:  # a classic group, or none
        return None
    if described.error_code:
        raise KafkaError(described.error_code, f"describe group {group_id}")
    return ConsumerGroupView(described)


def describe_group(cluster, group_id: str):
    """(coordinator client, DescribeGroups entry or ConsumerGroupView)."""
    coordinator = cluster.coordinator(group_id)
    consumer_group = describe_consumer_group(coordinator, group_id)
    if consumer_group is not None:
        return coordinator, consumer_group
    response = coordinator.request("DescribeGroups", {"groups": [group_id], "include_authorized_operations": False})
    described = response.groups[0]
    # A group that does not exist is Dead; from v6 also GROUP_ID_NOT_FOUND (KIP-1043).
    if described.error_code and described.error_code != ErrorCode.GROUP_ID_NOT_FOUND:
        raise KafkaError(described.error_code, f"describe group {group_id}")
    return coordinator, described


def committed_offsets(coordinator, group_id: str) -> dict[tuple[str, int], int]:
    """Every committed offset of the group (OffsetFetch with null topics)."""
    response = coordinator.request("OffsetFetch", {"group_id": group_id, "topics": None, "require_stable": False},
                                   lowest=2, highest=7)
    if response.error_code:
        raise KafkaError(response.error_code, f"fetch offsets of group {group_id}")
    offsets = {}
    for topic in response.topics:
        for part in topic.partitions:
            if part.error_code:
                raise KafkaError(part.error_code, f"fetch offsets of group {group_id}")
            if part.committed_offset >= 0:
                offsets[(topic.name, part.partition_index)] = part.committed_offset
    return offsets


def member_partitions(described) -> dict[str, list[tuple[str, int]]]:
    """member id -> assigned (topic, partition)s, decoded from the consumer protocol."""
    owned = {}
    for member in described.members:
        if isinstance(member, ConsumerGroupMemberView):
            owned[member.member_id] = member.partitions
            continue
        decoded = assigned_partitions(member.member_assignment) if described.protocol_type == CONSUMER_PROTOCOL_TYPE else []
        owned[member.member_id] = sorted((t, p) for t, parts in (decoded or []) for p in parts)
    return owned


def group_lag(cluster, group_id: str):
    """Rows (topic, partition, committed offset or None, log end offset, lag or None, member or None)
    for every partition the group committed or owns, plus the DescribeGroups entry."""
    coordinator, described = describe_group(cluster, group_id)
    committed = committed_offsets(coordinator, group_id)
    owners = {tp: m for m in described.members for tp in member_partitions(described)[m.member_id]}
    partitions = sorted(set(committed) | set(owners))
    ends = cluster.list_offsets(partitions, LATEST_TIMESTAMP) if partitions else {}
    rows = []
    for tp in partitions:
        offset = committed.get(tp)
        end = ends.get(tp, -1)
        lag = max(end - offset, 0) if offset is not None and end >= 0 else None
        rows.append((tp[0], tp[1], offset, end, lag, owners.get(tp)))
    return described, rows


def _state_warning(group_id: str, described) -> bool:
    """Kafka's messages for groups without members; False when there is nothing to describe."""
    if described.group_state == "Dead":
        print(f"Error: Consumer group '{group_id}' does not exist.", file=sys.stderr)
        return False
    if described.group_state in REBALANCING_STATES:
        print(f"\nWarning: Consumer group '{group_id}' is rebalancing.", file=sys.stderr)
    elif not described.members:
        print(f"\nConsumer group '{group_id}' has no active members.", file=sys.stderr)
    return True


def _print_offsets(group_id: str, described, rows) -> None:
    print()
    table = []
    for topic, partition, offset, end, lag, member in rows:
        host = client_id = None
        if member is not None:
            host, client_id = member.client_host, member.client_id
        table.append([group_id, topic, partition, offset, end, lag,
                      member.member_id if member else None, host, client_id])
    # Members with nothing assigned still show, as Kafka's tool shows them.
    owning = {row[5].member_id for row in rows if row[5] is not None}
    for member in described.members:
        if member.member_id not in owning:
            table.append([group_id, None, None, None, None, None, member.member_id, member.client_host,
                          member.client_id])
    print_table(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                 "HOST", "CLIENT-ID"], table, [15, 15, 10, 15, 15, 15, 15, 15, 0])


def _print_members(group_id: str, described) -> None:
    print()
    owned = member_partitions(described)
    print_table(["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
                [[group_id, m.member_id, m.client_host, m.client_id, len(owned[m.member_id])]
                 for m in described.members], [15, 15, 15, 15, 0])


def _print_state(group_id: str, described, coordinator_address: str, coordinator_id: int) -> None:
    print()
    print_table(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
                [[group_id, f"{coordinator_address} ({coordinator_id})", described.protocol_data or "",
                  described.group_state, len(described.members)]], [25, 25, 20, 15, 0])


@reports_errors
def describe(args) -> int:
    with connect(args) as cluster:
        if args.state:
            coordinator, described = describe_group(cluster, args.group)
            if not _state_warning(args.group, described):
                return 1
            _print_state(args.group, described, coordinator.address, cluster.find_coordinator(args.group))
            return 0
        if args.members:
            _, described = describe_group(cluster, args.group)
            if not _state_warning(args.group, described):
                return 1
            _print_members(args.group, described)
            return 0
        described, rows = group_lag(cluster, args.group)
    if described.group_state == "Dead" and not rows:
        _state_warning(args.group, described)
        return 1
    if described.group_state != "Dead":
        _state_warning(args.group, described)
    _print_offsets(args.group, described, rows)
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("groups", help="list consumer groups, describe members, offsets and lag "
                                                  "(kafka-consumer-groups.sh)")
    actions = parser.add_subparsers(dest="groups_action", required=True)

    p = actions.add_parser("list", help="every group of the cluster")
    add_connection_arguments(p)
    p.add_argument("--state", nargs="?", const="", metavar="STATE[,STATE]",
                   help="show each group's state; with states, only groups in them (ListGroups v4)")
    p.add_argument("--type", nargs="?", const="", metavar="TYPE[,TYPE]",
                   help="show each group's type (classic, consumer); with types, only groups of them "
                        "(ListGroups v5)")
    p.set_defaults(func=list_groups)

    p = actions.add_parser("describe", help="offsets and lag per partition (default), members or state")
    p.add_argument("group")
    add_connection_arguments(p)
    view = p.add_mutually_exclusive_group()
    view.add_argument("--offsets", action="store_true", help="committed offset, log end offset and lag (default)")
    view.add_argument("--members", action="store_true", help="members and how many partitions each owns")
    view.add_argument("--state", action="store_true", help="coordinator, assignment strategy, state, member count")
    p.set_defaults(func=describe)

