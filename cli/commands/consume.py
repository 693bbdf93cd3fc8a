"""`kafka-wire consume`: kafka-console-consumer over the wire. Prints records as Kafka's
DefaultMessageFormatter does (value per line; key, timestamp, partition, offset, headers on request).

    kafka-wire consume --bootstrap-server localhost:9092 --topic orders --from-beginning \\
        --max-messages 10 --print-key
    kafka-wire consume --bootstrap-server localhost:9092 --topic orders --partition 0 --offset 42
    kafka-wire consume --bootstrap-server localhost:9092 --topic orders --group audit

Without --group it assigns itself the partitions (all, or --partition) and fetches; with --group
it joins the group through the classic protocol (JoinGroup/SyncGroup with the "range" assignor,
heartbeats, offset commits, LeaveGroup on exit), as a Java consumer would.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from kafka_wire.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    assigned_partitions,
    serialize_assignment,
    serialize_subscription,
    subscribed_topics,
)
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import ControlRecordType, decode_batches, decode_control_key, iter_records_with_offsets
from kafka_wire.records import InvalidRecordBatch

from ..tool_support import ToolError, add_connection_arguments, connect, parse_key_values, reports_errors
from client import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, KafkaError

RANGE_ASSIGNOR = "range"
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
FETCH_WAIT_MS = 500
FETCH_MAX_BYTES = 50 * 1024 * 1024
PARTITION_MAX_BYTES = 1024 * 1024
HEARTBEAT_INTERVAL_S = 3.0
TopicPartition = tuple[str, int]


# -- the consumer protocol's embedded subscription and assignment (v0 layout) -----------------------


def range_assign(subscriptions: dict[str, list[str]], partition_counts: dict[str, int]) -> dict[str, dict[str, list[int]]]:
    """Kafka's RangeAssignor: per topic, members sorted by id take consecutive ranges, the first
    ones one partition more when the count does not divide."""
    assignment: dict[str, dict[str, list[int]]] = {member: {} for member in subscriptions}
    topics = sorted({t for topics in subscriptions.values() for t in topics})
    for topic in topics:
        members = sorted(m for m, subscribed in subscriptions.items() if topic in subscribed)
        count = partition_counts.get(topic, 0)
        per_member, extra = divmod(count, len(members))
        start = 0
        for i, member in enumerate(members):
            length = per_member + (1 if i < extra else 0)
            if length:
                assignment[member][topic] = list(range(start, start + length))
            start += length
    return assignment


# -- group membership -------------------------------------------------------------------------------


class RebalanceNeeded(Exception):
    """The coordinator says the group is rebalancing or no longer knows this member."""


class GroupMember:
    """One member of a classic consumer group: join, sync, heartbeat, commit, leave."""

    def __init__(self, cluster, group_id: str, topics: list[str], *, session_timeout_ms: int = 10000,
                 rebalance_timeout_ms: int = 30000) -> None:
        self.cluster = cluster
        self.group_id = group_id
        self.topics = topics
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.member_id = ""
        self.generation_id = -1
        self.coordinator_id = cluster.find_coordinator(group_id)
        self.last_heartbeat = 0.0

    @property
    def coordinator(self):
        return self.cluster.broker(self.coordinator_id)

    def _check(self, error_code: int, what: str) -> None:
        error = ErrorCode.from_code(error_code)
        if error == ErrorCode.NONE:
            return
        if error in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION):
            raise RebalanceNeeded(error.name)
        if error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            self.member_id, self.generation_id = "", -1
            raise RebalanceNeeded(error.name)
        if error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                     ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
            time.sleep(0.2)
            self.coordinator_id = self.cluster.find_coordinator(self.group_id)
            raise RebalanceNeeded(error.name)
        raise KafkaError(error, f"{what} of group {self.group_id}")

    def join(self) -> list[TopicPartition]:
        """Join (and re-join) until the group is stable; returns this member's partitions."""
        deadline = time.monotonic() + self.rebalance_timeout_ms / 1000 + 30
        while True:
            try:
                return self._join_once()
            except RebalanceNeeded:
                if time.monotonic() >= deadline:
                    raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, f"join group {self.group_id}") from None

    def _join_once(self) -> list[TopicPartition]:
        wait = self.rebalance_timeout_ms / 1000 + 5  # the coordinator holds JoinGroup during a rebalance
        body = {"group_id": self.group_id, "session_timeout_ms": self.session_timeout_ms,
                "rebalance_timeout_ms": self.rebalance_timeout_ms, "member_id": self.member_id,
                "group_instance_id": None, "protocol_type": CONSUMER_PROTOCOL_TYPE,
                "protocols": [{"name": RANGE_ASSIGNOR, "metadata": serialize_subscription(self.topics)}],
                "reason": None}
        response = self.coordinator.request("JoinGroup", body, wait=wait)
        if response.error_code == ErrorCode.MEMBER_ID_REQUIRED:
            # KIP-394: the first join only obtains a member id; join again with it.
            self.member_id = response.member_id
            raise RebalanceNeeded("MEMBER_ID_REQUIRED")
        self._check(response.error_code, "JoinGroup")
        self.member_id = response.member_id
        self.generation_id = response.generation_id
        assignments = []
        if response.leader == self.member_id:
            subscriptions = {m.member_id: subscribed_topics(m.metadata) or [] for m in response.members}
            counts = {}
            for topic in sorted({t for ts in subscriptions.values() for t in ts}):
                try:
                    counts[topic] = len(self.cluster.partition_leaders(topic))
                except KafkaError:
                    counts[topic] = 0
            plan = range_assign(subscriptions, counts)
            assignments = [{"member_id": m, "assignment": serialize_assignment(parts.items())} for m, parts in plan.items()]
        body = {"group_id": self.group_id, "generation_id": self.generation_id, "member_id": self.member_id,
                "group_instance_id": None, "protocol_type": CONSUMER_PROTOCOL_TYPE,
                "protocol_name": RANGE_ASSIGNOR, "assignments": assignments}
        response = self.coordinator.request("SyncGroup", body, wait=wait)
        self._check(response.error_code, "SyncGroup")
        self.last_heartbeat = time.monotonic()
        decoded = assigned_partitions(response.assignment) or []
        return sorted((topic, p) for topic, parts in decoded for p in parts)

    def heartbeat_if_due(self) -> bool:
        """Heartbeat every few seconds (True when it did); raises RebalanceNeeded when the group
        moved on."""
        if time.monotonic() - self.last_heartbeat < HEARTBEAT_INTERVAL_S:
            return False
        response = self.coordinator.request("Heartbeat", {"group_id": self.group_id, "generation_id": self.generation_id,
                                                          "member_id": self.member_id, "group_instance_id": None})
        self.last_heartbeat = time.monotonic()
        self._check(response.error_code, "Heartbeat")
        return True

    def committed(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Committed offsets (-1 where the group has none)."""
        topics: dict[str, list[int]] = {}
        for topic, p in partitions:
            topics.setdefault(topic, []).append(p)
        body = {"group_id": self.group_id, "require_stable": True,
                "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}
        response = self.coordinator.request("OffsetFetch", body, highest=7)
        self._check(response.error_code, "OffsetFetch")
        offsets = {}
        for topic in response.topics:
            for part in topic.partitions:
                self._check(part.error_code, "OffsetFetch")
                offsets[(topic.name, part.partition_index)] = part.committed_offset
        return offsets

    def commit(self, positions: dict[TopicPartition, int]) -> None:
        if not positions:
            return
        topics: dict[str, list[dict]] = {}
        for (topic, p), offset in positions.items():
            topics.setdefault(topic, []).append({"partition_index": p, "committed_offset": offset,
                                                 "committed_leader_epoch": -1, "committed_metadata": ""})
        body = {"group_id": self.group_id, "generation_id_or_member_epoch": self.generation_id,
                "member_id": self.member_id, "group_instance_id": None, "retention_time_ms": -1,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
        response = self.coordinator.request("OffsetCommit", body, highest=9)  # v10 names topics by id
        for topic in response.topics:
            for part in topic.partitions:
                self._check(part.error_code, "OffsetCommit")

    def leave(self) -> None:
        if not self.member_id:
            return
        body = {"group_id": self.group_id, "member_id": self.member_id,
                "members": [{"member_id": self.member_id, "group_instance_id": None, "reason": "the consumer is closing"}]}
        self.coordinator.request("LeaveGroup", body)
        self.member_id = ""


# -- printing ---------------------------------------------------------------------------------------


@dataclass
class MessageFormat:
    """Kafka's DefaultMessageFormatter: timestamp, partition, offset, headers, key, value."""

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_headers: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    header_key_separator: bytes = b":"
    null_literal: bytes = b"null"

    def format(self, partition: int, offset: int, timestamp: int, log_append_time: bool, record) -> bytes:
        fields = []
        if self.print_timestamp:
            kind = "LogAppendTime" if log_append_time else "CreateTime"
            fields.append(f"{kind}:{timestamp}".encode() if timestamp >= 0 else b"NO_TIMESTAMP")
        if self.print_partition:
            fields.append(f"Partition:{partition}".encode())
        if self.print_offset:
            fields.append(f"Offset:{offset}".encode())
        if self.print_headers:
            if record.headers:
                fields.append(self.headers_separator.join(
                    k.encode() + self.header_key_separator + (self.null_literal if v is None else bytes(v))
                    for k, v in record.headers))
            else:
                fields.append(b"NO_HEADERS")
        if self.print_key:
            fields.append(self.null_literal if record.key is None else bytes(record.key))
        if self.print_value:
            fields.append(self.null_literal if record.value is None else bytes(record.value))
        return self.key_separator.join(fields) + self.line_separator


def message_format(args) -> MessageFormat:
    props = parse_key_values(args.property, "property")

    def flag(name: str, given: bool) -> bool:
        return given or props.get(name, "false").lower() == "true"

    fmt = MessageFormat(
        print_timestamp=flag("print.timestamp", args.print_timestamp),
        print_partition=flag("print.partition", args.print_partition),
        print_offset=flag("print.offset", args.print_offset),
        print_headers=flag("print.headers", args.print_headers),
        print_key=flag("print.key", args.print_key),
        print_value=props.get("print.value", "true").lower() == "true",
    )
    if args.key_separator is not None:
        fmt.key_separator = args.key_separator.encode()
    for prop, attr in (("key.separator", "key_separator"), ("line.separator", "line_separator"),
                       ("headers.separator", "headers_separator"), ("headers.key.separator", "header_key_separator"),
                       ("null.literal", "null_literal")):
        if prop in props:
            setattr(fmt, attr, props[prop].encode().decode("unicode_escape").encode())
    return fmt


# -- fetching ---------------------------------------------------------------------------------------


class ConsoleConsumer:
    """Fetches assigned partitions from their leaders and prints what it reads, in offset order
    per partition."""

    def __init__(self, cluster, topic: str, fmt: MessageFormat, out, *, isolation_level: int,
                 reset_to: int, max_messages: int | None) -> None:
        self.cluster = cluster
        self.topic = topic
        self.fmt = fmt
        self.out = out
        self.isolation_level = isolation_level
        self.reset_to = reset_to  # EARLIEST_TIMESTAMP or LATEST_TIMESTAMP (auto.offset.reset)
        self.max_messages = max_messages
        self.positions: dict[TopicPartition, int] = {}
        self.leaders: dict[int, int] = {}
        self.consumed = 0

    @property
    def done(self) -> bool:
        return self.max_messages is not None and self.consumed >= self.max_messages

    def assign(self, positions: dict[TopicPartition, int]) -> None:
        """Take these partitions; an offset < 0 starts at the reset position."""
        self.leaders = self.cluster.partition_leaders(self.topic)
        unknown = [tp for tp, offset in positions.items() if offset < 0]
        resolved = self.cluster.list_offsets(unknown, self.reset_to, isolation_level=self.isolation_level) if unknown else {}
        self.positions = {tp: resolved.get(tp, offset) if offset < 0 else offset for tp, offset in positions.items()}

    def poll(self) -> int:
        """One fetch from each leader of the assigned partitions; returns records printed."""
        printed = 0
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in self.positions:
            by_leader.setdefault(self.leaders.get(tp[1], -1), []).append(tp)
        if not by_leader:
            time.sleep(FETCH_WAIT_MS / 1000)
            return 0
        for leader, partitions in by_leader.items():
            if leader < 0:
                self.leaders = self.cluster.partition_leaders(self.topic)
                continue
            printed += self._fetch_from(leader, partitions)
            if self.done:
                break
        return printed

    def _fetch_from(self, leader: int, partitions: list[TopicPartition]) -> int:
        client = self.cluster.broker(leader)
        body = {"replica_id": -1, "max_wait_ms": FETCH_WAIT_MS, "min_bytes": 1, "max_bytes": FETCH_MAX_BYTES,
                "isolation_level": self.isolation_level, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": self.topic, "partitions": [
                    {"partition": p, "fetch_offset": self.positions[(t, p)], "partition_max_bytes": PARTITION_MAX_BYTES}
                    for t, p in partitions]}],
                "forgotten_topics_data": [], "rack_id": ""}
        # v13+ name topics by id; this consumer asks and reads by name.
        response = client.request("Fetch", body, highest=12, wait=FETCH_WAIT_MS / 1000)
        if response.error_code:
            raise KafkaError(response.error_code, "Fetch")
        printed = 0
        for topic in response.responses:
            for part in topic.partitions:
                tp = (topic.topic, part.partition_index)
                error = ErrorCode.from_code(part.error_code)
                if error == ErrorCode.OFFSET_OUT_OF_RANGE:
                    reset = self.cluster.list_offsets([tp], self.reset_to, isolation_level=self.isolation_level)
                    print(f"Resetting offset of {tp[0]}-{tp[1]} from {self.positions[tp]} to {reset[tp]}",
                          file=sys.stderr)
                    self.positions[tp] = reset[tp]
                    continue
                if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                             ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH):
                    self.leaders = self.cluster.partition_leaders(self.topic)
                    continue
                if error != ErrorCode.NONE:
                    raise KafkaError(error, f"Fetch {tp[0]}-{tp[1]}")
                if part.records:
                    printed += self._print_records(tp, part)
                if self.done:
                    return printed
        self.out.flush()
        return printed

    def _print_records(self, tp: TopicPartition, part) -> int:
        position = self.positions[tp]
        aborted = sorted(part.aborted_transactions or [], key=lambda a: a.first_offset)
        open_aborted: set[int] = set()
        printed = 0
        try:
            batches = list(decode_batches(part.records))
        except InvalidRecordBatch as error:
            raise ToolError(f"corrupt record batch in {tp[0]}-{tp[1]} at offset {position}: {error}") from None
        for header, records in batches:
            if header.next_offset <= position:
                continue
            if self.isolation_level == READ_COMMITTED:
                while aborted and aborted[0].first_offset <= header.last_offset:
                    open_aborted.add(aborted.pop(0).producer_id)
                if header.is_control:
                    if records and decode_control_key(records[0].key)[1] == ControlRecordType.ABORT:
                        open_aborted.discard(header.producer_id)
                    position = header.next_offset
                    continue
                if header.is_transactional and header.producer_id in open_aborted:
                    position = header.next_offset
                    continue
            elif header.is_control:
                position = header.next_offset
                continue
            log_append_time = bool(header.timestamp_type)
            for offset, timestamp, record in iter_records_with_offsets(header, records):
                if offset < position:
                    continue  # a compressed batch starts before the offset we asked for
                self.out.write(self.fmt.format(tp[1], offset, timestamp, log_append_time, record))
                printed += 1
                self.consumed += 1
                position = offset + 1
                if self.done:
                    self.positions[tp] = position
                    return printed
            position = max(position, header.next_offset)
        self.positions[tp] = position
        return printed


def _start_offset(args) -> int | None:
    """--offset as a number, or None for earliest/latest (resolved with ListOffsets)."""
    if args.offset is None or args.offset in ("earliest", "latest"):
        return None
    try:
        offset = int(args.offset)
    except ValueError:
        raise ToolError(f"--offset must be a number, 'earliest' or 'latest', not {args.offset!r}") from None
    if offset < 0:
        raise ToolError("--offset must not be negative")
    return offset


@reports_errors
def run(args) -> int:
    if args.offset is not None and args.partition is None:
        raise ToolError("The partition is required when offset is specified.")
    if args.group and (args.partition is not None or args.offset is not None):
        raise ToolError("Options group and partition cannot be specified together.")
    start = _start_offset(args)
    reset_to = EARLIEST_TIMESTAMP if args.from_beginning or args.offset == "earliest" else LATEST_TIMESTAMP
    isolation = READ_COMMITTED if args.isolation_level == "read_committed" else READ_UNCOMMITTED
    out = sys.stdout.buffer
    timeout = args.timeout_ms / 1000 if args.timeout_ms is not None else None
    member = None
    with connect(args) as cluster:
        consumer = ConsoleConsumer(cluster, args.topic, message_format(args), out, isolation_level=isolation,
                                   reset_to=reset_to, max_messages=args.max_messages)
        try:
            if args.group:
                member = GroupMember(cluster, args.group, [args.topic])
                _rejoin(member, consumer)
            else:
                partitions = ([args.partition] if args.partition is not None
                              else sorted(cluster.partition_leaders(args.topic)))
                consumer.assign({(args.topic, p): -1 if start is None else start for p in partitions})
            last_message = time.monotonic()
            while not consumer.done:
                if member is not None:
                    try:
                        if member.heartbeat_if_due():
                            # Commit as often as we heartbeat (auto.commit.interval.ms, roughly).
                            member.commit(consumer.positions)
                    except RebalanceNeeded:
                        # As Kafka's consumer does before re-joining: commit what we consumed, so the
                        # partitions' next owner continues from there (fails harmlessly when the
                        # group no longer knows us).
                        try:
                            member.commit(consumer.positions)
                        except (RebalanceNeeded, KafkaError):
                            pass
                        _rejoin(member, consumer)
                if consumer.poll():
                    last_message = time.monotonic()
                elif timeout is not None and time.monotonic() - last_message >= timeout:
                    break
        except KeyboardInterrupt:
            pass
        finally:
            out.flush()
            if member is not None:
                try:
                    member.commit(consumer.positions)
                    member.leave()
                except (KafkaError, RebalanceNeeded, OSError) as error:
                    print(f"Warning: leaving group {args.group}: {error}", file=sys.stderr)
    print(f"Processed a total of {consumer.consumed} messages", file=sys.stderr)
    return 0


def _rejoin(member: GroupMember, consumer: ConsoleConsumer) -> None:
    """(Re)join the group and continue from the group's committed offsets."""
    assigned = member.join()
    committed = member.committed(assigned) if assigned else {}
    consumer.assign({tp: committed.get(tp, -1) for tp in assigned})


def register(subparsers) -> None:
    parser = subparsers.add_parser("consume", help="print records of a topic (kafka-console-consumer)")
    add_connection_arguments(parser, ("--consumer.config",))
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", help="consume as a member of this consumer group (offsets are committed)")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the earliest offset when there is no committed one (default: latest)")
    parser.add_argument("--partition", type=int, help="consume only this partition")
    parser.add_argument("--offset", help="start offset in --partition: a number, 'earliest' or 'latest'")
    parser.add_argument("--max-messages", type=int, help="exit after this many records")
    parser.add_argument("--timeout-ms", type=int, help="exit when no record arrives for this long")
    parser.add_argument("--isolation-level", choices=("read_uncommitted", "read_committed"),
                        default="read_uncommitted")
    parser.add_argument("--print-key", action="store_true")
    parser.add_argument("--print-timestamp", action="store_true")
    parser.add_argument("--print-partition", action="store_true")
    parser.add_argument("--print-offset", action="store_true")
    parser.add_argument("--print-headers", action="store_true")
    parser.add_argument("--key-separator", help="between printed fields (default: a tab)")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="DefaultMessageFormatter properties: print.key, print.timestamp, key.separator, ...")
    parser.set_defaults(func=run)
