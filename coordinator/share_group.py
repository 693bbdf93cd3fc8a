"""Share groups (KIP-932) as Kafka 4.3's group coordinator keeps them: members joining, heartbeating
and leaving with ShareGroupHeartbeat, member and group epochs, session timeouts, the group size
limit, and the server-side SimpleAssignor that spreads partitions over members.

Unlike a consumer group, a share group never revokes: a partition may be assigned to several members
at once (records, not partitions, are what members hold), so a member takes its target assignment,
and the assignment epoch, on its next heartbeat. Group states: Empty (no members), Stable (members),
Dead (deleted).

As Kafka 4.3's GroupMetadataManager (shareGroupHeartbeat, maybeUpdateTargetAssignment,
initializedAssignmentPending), a partition is assigned only once its share-partition state is
initialized at the share coordinator (`await_state_initialization`): the heartbeat that subscribes
the group to a partition asks for that (`HeartbeatResult.initialize`, recorded as initializing in the
group's ShareGroupStatePartitionMetadata record), the caller initializes it after answering and says
so (`state_initialized`), and the next heartbeat of any member that finds initialized partitions
missing from the target assignment bumps the group epoch, so the target assignment is computed
again (at most once per share.assignment.interval.ms) with them. Members that join together thus
get a new partition together, at their next heartbeats, as on Kafka.

Sans-io: time is a parameter (`now_ms`), topic metadata is a function given by the caller, and every
change comes back as the share group records Kafka writes to __consumer_offsets
(`kafka_wire.internal_records`, record types 10-15) for the caller to append. Where this lives with
several workers: see the note at the top of coordinator/share_partition.py.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Callable

from kafka_wire import internal_records as ir
from kafka_wire.errors import ErrorCode

from .consumer_group import described_assignment
from .modern_group import can_compute_assignment

# Defaults of the broker configs (Kafka 4.3).
DEFAULT_SESSION_TIMEOUT_MS = 45000  # group.share.session.timeout.ms
DEFAULT_HEARTBEAT_INTERVAL_MS = 5000  # group.share.heartbeat.interval.ms
DEFAULT_MAX_SIZE = 200  # group.share.max.size
DEFAULT_ASSIGNMENT_INTERVAL_MS = 1000  # group.share.assignment.interval.ms
DEFAULT_INITIALIZE_RETRY_INTERVAL_MS = 30000  # group.share.initialize.retry.interval.ms

JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1

SHARE_GROUP_TYPE = "share"
SIMPLE_ASSIGNOR_NAME = "simple"

# Kafka's MemberState id for a share group member's current assignment record: always STABLE.
MEMBER_STATE_STABLE = 0

TopicId = uuid.UUID
Assignment = dict[TopicId, set[int]]
# name -> (topic id, partition count), or None when the topic does not exist.
TopicDescriber = Callable[[str], "tuple[TopicId, int] | None"]


class ShareGroupState:
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


class ShareGroupError(Exception):
    """An error Kafka answers a share group request with: its code and message."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


@dataclass
class ShareGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: list[str] = field(default_factory=list)
    assigned_partitions: Assignment = field(default_factory=dict)
    session_deadline_ms: int = 0


# -- SimpleAssignor -----------------------------------------------------------------------------------


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _assign_balanced(member_ids: list[str], targets: list[tuple[TopicId, int]],
                     old: dict[str, set[tuple[TopicId, int]]]) -> dict[str, set[tuple[TopicId, int]]]:
    """Kafka's SimpleHomogeneousAssignmentBuilder over one set of target partitions and the members
    that may take them: balance first (each partition shared by ceil(members / partitions) members,
    assignment counts differing by at most one), then stickiness (members keep what they had).
    Kafka iterates hash maps; this walks members and partitions in a fixed order, so the shape is
    Kafka's and the exact picks are deterministic."""
    if not member_ids or not targets:
        return {m: set() for m in member_ids}
    num_members, num_targets = len(member_ids), len(targets)
    target_set = set(targets)
    desired_sharing = _ceil_div(num_members, num_targets)
    total = desired_sharing * num_targets
    desired = [_ceil_div(total * (i + 1), num_members) - _ceil_div(total * i, num_members)
               for i in range(num_members)]
    final_by_member: dict[int, list[tuple[TopicId, int]]] = {}
    final_by_partition: dict[tuple[TopicId, int], list[int]] = {}
    unfilled: list[int] = []
    overfilled: list[int] = []
    # 1. Keep what each member had that it may still have.
    for index, member in enumerate(member_ids):
        kept = sorted(tp for tp in old.get(member, ()) if tp in target_set)
        final_by_member[index] = kept
        for tp in kept:
            final_by_partition.setdefault(tp, []).append(index)
        if len(kept) < desired[index]:
            unfilled.append(index)
        elif len(kept) > desired[index]:
            overfilled.append(index)
    # 2. Members holding too many give up the excess.
    for index in overfilled:
        while len(final_by_member[index]) > desired[index]:
            tp = final_by_member[index].pop(0)
            final_by_partition[tp].remove(index)
    # 3. Partitions shared by more members than desired lose the extra members.
    for tp in sorted(final_by_partition):
        holders = final_by_partition[tp]
        while len(holders) > desired_sharing:
            index = holders.pop(0)
            final_by_member[index].remove(tp)
            if index not in unfilled:
                unfilled.append(index)
    # 4. Partitions with too few members go round the unfilled members.
    unfilled.sort()
    for tp in targets:
        final_by_partition.setdefault(tp, [])
    position = 0
    assigned_this_round = False  # whether the current pass over the unfilled members placed anything
    for tp in targets:
        if not unfilled:
            break
        holders = final_by_partition[tp]
        to_make = desired_sharing - len(holders)
        while to_make > 0 and unfilled:
            if position >= len(unfilled):
                if not assigned_this_round:
                    break
                position = 0
                assigned_this_round = False
            index = unfilled[position]
            if index in holders:
                position += 1
                continue
            holders.append(index)
            final_by_member[index].append(tp)
            to_make -= 1
            assigned_this_round = True
            if len(final_by_member[index]) >= desired[index]:
                unfilled.pop(position)
            else:
                position += 1
    return {member_ids[i]: set(tps) for i, tps in final_by_member.items()}


def simple_assign(members: dict[str, ShareGroupMember], topics: dict[str, tuple[TopicId, int]],
                  old_target: dict[str, Assignment] | None = None,
                  assignable: Callable[[TopicId, int], bool] | None = None) -> dict[str, Assignment]:
    """Kafka's SimpleAssignor: the target assignment of every member. `topics` describes the
    subscribed topics (name -> (id, partition count)); `assignable` says which partitions may be
    assigned (Kafka assigns a share-partition once its state is initialized); `old_target` is the
    previous target assignment, kept where balance allows. When all members subscribe to the same
    topics the whole group is balanced at once (homogeneous); otherwise each topic is balanced over
    the members subscribed to it (heterogeneous)."""
    old_target = old_target or {}
    member_ids = sorted(members)
    if not member_ids:
        return {}

    def targets_of(names) -> list[tuple[TopicId, int]]:
        out = []
        for name in sorted(set(names)):
            described = topics.get(name)
            if described is None:
                continue
            topic_id, count = described
            out.extend((topic_id, p) for p in range(count) if assignable is None or assignable(topic_id, p))
        return out

    def flat(assignment: Assignment | None, only=None) -> set[tuple[TopicId, int]]:
        return {(t, p) for t, parts in (assignment or {}).items() if only is None or t in only for p in parts}

    result: dict[str, Assignment] = {m: {} for m in member_ids}
    subscriptions = {m: frozenset(members[m].subscribed_topic_names) for m in member_ids}
    if len(set(subscriptions.values())) == 1:
        groups = [(member_ids, targets_of(subscriptions[member_ids[0]]))]
    else:
        by_topic: dict[str, list[str]] = {}
        for m in member_ids:
            for name in subscriptions[m]:
                by_topic.setdefault(name, []).append(m)
        groups = [(subscribers, targets_of([name])) for name, subscribers in sorted(by_topic.items())]
    for subscribers, targets in groups:
        topic_ids = {t for t, _ in targets}
        old = {m: flat(old_target.get(m), topic_ids) for m in subscribers}
        for member, tps in _assign_balanced(subscribers, targets, old).items():
            for topic_id, partition in tps:
                result[member].setdefault(topic_id, set()).add(partition)
    return result


# -- the group ----------------------------------------------------------------------------------------


def _assignment_records(assignment: Assignment) -> list[dict]:
    return [{"topic_id": t, "partitions": sorted(parts)} for t, parts in sorted(assignment.items(), key=lambda kv: str(kv[0])) if parts]


class ShareGroup:
    """One share group's members, epochs and target assignment."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ShareGroupMember] = {}
        self.target_assignment: dict[str, Assignment] = {}
        self.subscription_metadata: dict[str, tuple[TopicId, int]] = {}
        self.assignment_timestamp_ms = 0  # when the target assignment was last computed; 0: never
        self.dead = False
        # Share-partitions whose state the share coordinator has initialized for the group, and those
        # asked for and not yet answered (ShareGroupStatePartitionMetadata): topic id -> partitions.
        self.initialized: Assignment = {}
        self.initializing: Assignment = {}
        self.initializing_since: dict[TopicId, int] = {}  # when each was asked for
        self.topic_names: dict[TopicId, str] = {}

    @property
    def state(self) -> str:
        if self.dead:
            return ShareGroupState.DEAD
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def subscribed_topic_names(self) -> set[str]:
        return {name for m in self.members.values() for name in m.subscribed_topic_names}


@dataclass
class HeartbeatResult:
    """The ShareGroupHeartbeat response (a dict of its fields) and the records to append."""

    response: dict
    records: list[tuple[bytes, bytes | None]]
    # Share-partitions whose state the caller is to initialize after answering (then
    # `state_initialized`, or `state_initialization_failed`), at this state epoch (the group epoch).
    initialize: Assignment = field(default_factory=dict)
    state_epoch: int = 0


class ShareGroupCoordinator:
    """ShareGroupHeartbeat, session expiry and ShareGroupDescribe for the share groups of one
    coordinator. `describe_topic(name)` gives (topic id, partition count) or None."""

    def __init__(self, describe_topic: TopicDescriber, *,
                 session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
                 heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS,
                 max_size: int = DEFAULT_MAX_SIZE,
                 assignment_interval_ms: int = DEFAULT_ASSIGNMENT_INTERVAL_MS,
                 await_state_initialization: bool = False) -> None:
        self.describe_topic = describe_topic
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.max_size = max_size
        self.assignment_interval_ms = assignment_interval_ms
        # True (the broker): only partitions whose share state is initialized are assigned, as in
        # Kafka; False: every partition of a subscribed topic at once (no share coordinator to ask).
        self.await_state_initialization = await_state_initialization
        self.initialize_retry_interval_ms = DEFAULT_INITIALIZE_RETRY_INTERVAL_MS
        self.groups: dict[str, ShareGroup] = {}
        # Group ids taken by groups of other types (classic, consumer, streams): a share heartbeat
        # for them is refused, as Kafka does not convert between protocols.
        self.other_groups: Callable[[str], bool] = lambda group_id: False

    # -- validation ------------------------------------------------------------------------------------

    @staticmethod
    def _validate(request) -> None:
        """GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid, in its order."""
        def blank(value) -> bool:
            return value is not None and value.strip() == ""

        if blank(request.member_id):
            raise ShareGroupError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if blank(request.group_id):
            raise ShareGroupError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if blank(request.rack_id):
            raise ShareGroupError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        if request.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if not request.subscribed_topic_names:
                raise ShareGroupError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        elif request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            raise ShareGroupError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")

    def _group(self, group_id: str, create: bool) -> ShareGroup:
        group = self.groups.get(group_id)
        if group is not None and not group.dead:
            return group
        if self.other_groups(group_id):
            raise ShareGroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        if not create:
            raise ShareGroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        group = self.groups[group_id] = ShareGroup(group_id)
        return group

    # -- heartbeat -------------------------------------------------------------------------------------

    def heartbeat(self, request, now_ms: int, *, client_id: str = "", client_host: str = "") -> HeartbeatResult:
        """Handle one ShareGroupHeartbeat request (the decoded request object). Errors come back as
        the response's error code and message, with no records."""
        try:
            self._validate(request)
            if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                return self._leave(request.group_id, request.member_id)
            return self._heartbeat(request, now_ms, client_id, client_host)
        except ShareGroupError as e:
            return HeartbeatResult({"error_code": int(e.error), "error_message": e.message,
                                    "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0}, [])

    def _heartbeat(self, request, now_ms: int, client_id: str, client_host: str) -> HeartbeatResult:
        records: list[tuple[bytes, bytes | None]] = []
        joining = request.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        group = self._group(request.group_id, create=joining)
        member_id = request.member_id
        if len(group.members) >= self.max_size and member_id not in group.members:
            raise ShareGroupError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                  f"The share group has reached its maximum capacity of {self.max_size} members.")
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise ShareGroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                                      f"Member {member_id} is not a member of group {group.group_id}.")
            member = ShareGroupMember(member_id)
        received = request.member_epoch
        if received > member.member_epoch:
            raise ShareGroupError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has a greater member epoch ({received}) than the one known by the "
                f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.")
        if received < member.member_epoch and received != member.previous_member_epoch:
            raise ShareGroupError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has a smaller member epoch ({received}) than the one known by the "
                f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.")

        previous_assignment = {t: set(p) for t, p in member.assigned_partitions.items()}
        is_new = member_id not in group.members
        changed_subscription = (
            request.subscribed_topic_names is not None
            and sorted(request.subscribed_topic_names) != sorted(member.subscribed_topic_names))
        changed_metadata = (
            is_new or changed_subscription
            or (request.rack_id is not None and request.rack_id != member.rack_id)
            or client_id != member.client_id or client_host != member.client_host)
        if request.subscribed_topic_names is not None:
            member.subscribed_topic_names = list(request.subscribed_topic_names)
        if request.rack_id is not None:
            member.rack_id = request.rack_id
        member.client_id, member.client_host = client_id, client_host
        if is_new:
            group.members[member_id] = member
        if changed_metadata:
            records.append(self._member_metadata_record(group, member))

        bump = is_new or changed_subscription
        # A subscribed topic created, deleted or grown changes the assignment too.
        metadata = self._subscription_metadata(group)
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            bump = True
        if group.assignment_epoch >= group.group_epoch and self._initialized_assignment_pending(group):
            bump = True
        if bump:
            group.group_epoch += 1
            records.append(self._group_metadata_record(group))
        if group.group_epoch > group.assignment_epoch and self._can_compute_assignment(group, now_ms):
            self._update_target_assignment(group, now_ms, records)

        # No revocation in share groups: the member takes its target at once.
        target = group.target_assignment.get(member_id, {})
        if member.member_epoch != group.assignment_epoch or target != member.assigned_partitions:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
            member.assigned_partitions = {t: set(p) for t, p in target.items()}
            records.append(self._current_assignment_record(group, member))
        member.session_deadline_ms = now_ms + self.session_timeout_ms

        response = {"error_code": 0, "error_message": None, "member_id": member_id,
                    "member_epoch": member.member_epoch, "heartbeat_interval_ms": self.heartbeat_interval_ms,
                    "assignment": None}
        # Kafka answers the assignment on a join, a full request (one naming the subscription) and
        # a change.
        if joining or request.subscribed_topic_names is not None or member.assigned_partitions != previous_assignment:
            response["assignment"] = {"topic_partitions": _assignment_records(member.assigned_partitions)}
        initialize = self._partitions_to_initialize(group, now_ms, records)
        return HeartbeatResult(response, records, initialize, group.group_epoch)

    def _leave(self, group_id: str, member_id: str) -> HeartbeatResult:
        group = self._group(group_id, create=False)
        if member_id not in group.members:
            raise ShareGroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        records = self._fence(group, member_id)
        return HeartbeatResult({"error_code": 0, "error_message": None, "member_id": member_id,
                                "member_epoch": LEAVE_GROUP_MEMBER_EPOCH, "heartbeat_interval_ms": 0,
                                "assignment": None}, records)

    def _fence(self, group: ShareGroup, member_id: str) -> list[tuple[bytes, bytes | None]]:
        """Remove a member (left, or its session expired): tombstones for its records, and a new
        group epoch so that the others' target assignment is recomputed."""
        del group.members[member_id]
        group.target_assignment.pop(member_id, None)
        records = [
            (ir.encode_share_group_key(ir.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, group.group_id, member_id), None),
            (ir.encode_share_group_key(ir.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, group.group_id, member_id), None),
            (ir.encode_share_group_key(ir.SHARE_GROUP_MEMBER_METADATA, group.group_id, member_id), None),
        ]
        group.subscription_metadata = self._subscription_metadata(group)
        group.group_epoch += 1
        records.append(self._group_metadata_record(group))
        return records

    def expire_sessions(self, now_ms: int) -> list[tuple[bytes, bytes | None]]:
        """Fence every member that has not heartbeated within group.share.session.timeout.ms."""
        records: list[tuple[bytes, bytes | None]] = []
        for group in self.groups.values():
            for member_id in [m.member_id for m in group.members.values() if m.session_deadline_ms <= now_ms]:
                records.extend(self._fence(group, member_id))
        return records

    # -- assignment ------------------------------------------------------------------------------------

    def _subscription_metadata(self, group: ShareGroup) -> dict[str, tuple[TopicId, int]]:
        metadata = {}
        for name in sorted(group.subscribed_topic_names()):
            described = self.describe_topic(name)
            if described is not None:
                metadata[name] = described
        return metadata

    def _can_compute_assignment(self, group: ShareGroup, now_ms: int) -> bool:
        """At most once per group.share.assignment.interval.ms (modern_group.can_compute_assignment)."""
        return can_compute_assignment(group.assignment_timestamp_ms, self.assignment_interval_ms, now_ms)

    def _initialized_assignment_pending(self, group: ShareGroup) -> bool:
        """Kafka's initializedAssignmentPending: partitions of a subscribed topic whose state is
        initialized are not all in the target assignment (they were initialized after it)."""
        if not self.await_state_initialization or not group.members or not group.initialized:
            return False
        subscribed = {topic_id for topic_id, _ in group.subscription_metadata.values()}
        in_target: Assignment = {}
        for assignment in group.target_assignment.values():
            for topic_id, parts in assignment.items():
                in_target.setdefault(topic_id, set()).update(parts)
        return any(in_target.get(topic_id, set()) != parts
                   for topic_id, parts in group.initialized.items() if topic_id in subscribed)

    def _partitions_to_initialize(self, group: ShareGroup, now_ms: int, records) -> Assignment:
        """Kafka's maybeCreateInitializeShareGroupStateRequest: the subscribed partitions whose state
        is neither initialized nor being initialized (asked for less than
        group.share.initialize.retry.interval.ms ago); they are recorded as initializing."""
        if not self.await_state_initialization:
            return {}
        wanted: Assignment = {}
        for name, (topic_id, count) in group.subscription_metadata.items():
            known = set(group.initialized.get(topic_id, set()))
            if now_ms - group.initializing_since.get(topic_id, now_ms) < self.initialize_retry_interval_ms:
                known |= group.initializing.get(topic_id, set())
            missing = set(range(count)) - known
            if missing:
                wanted[topic_id] = missing
                group.topic_names[topic_id] = name
        if wanted:
            for topic_id, parts in wanted.items():
                group.initializing.setdefault(topic_id, set()).update(parts)
                group.initializing_since[topic_id] = now_ms
            records.append(self._state_partition_metadata_record(group))
        return wanted

    def state_initialized(self, group_id: str, partitions: Assignment) -> list[tuple[bytes, bytes | None]]:
        """The share coordinator initialized these share-partitions' state (Kafka's
        initializeShareGroupState): they become assignable, from the next heartbeat on."""
        return self._initialization_done(group_id, partitions, initialized=True)

    def state_initialization_failed(self, group_id: str, partitions: Assignment) -> list[tuple[bytes, bytes | None]]:
        """Initializing failed: no longer initializing, so a later heartbeat asks again."""
        return self._initialization_done(group_id, partitions, initialized=False)

    def _initialization_done(self, group_id: str, partitions: Assignment, initialized: bool):
        group = self.groups.get(group_id)
        if group is None or group.dead:
            return []
        for topic_id, parts in partitions.items():
            pending = group.initializing.get(topic_id, set())
            pending -= parts
            if not pending:
                group.initializing.pop(topic_id, None)
                group.initializing_since.pop(topic_id, None)
            if initialized:
                group.initialized.setdefault(topic_id, set()).update(parts)
        return [self._state_partition_metadata_record(group)]

    def _update_target_assignment(self, group: ShareGroup, now_ms: int, records) -> None:
        assignable = None
        if self.await_state_initialization:
            assignable = lambda topic_id, partition: partition in group.initialized.get(topic_id, ())  # noqa: E731
        new_target = simple_assign(group.members, group.subscription_metadata, group.target_assignment, assignable)
        for member_id, assignment in new_target.items():
            if group.target_assignment.get(member_id) != assignment:
                records.append((
                    ir.encode_share_group_key(ir.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, group.group_id, member_id),
                    ir.encode_share_group_value(ir.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
                                                {"topic_partitions": _assignment_records(assignment)}),
                ))
        group.target_assignment = new_target
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp_ms = now_ms
        records.append((
            ir.encode_share_group_key(ir.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, group.group_id),
            ir.encode_share_group_value(ir.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
                                        {"assignment_epoch": group.assignment_epoch,
                                         "assignment_timestamp": now_ms}),
        ))

    # -- records ---------------------------------------------------------------------------------------

    @staticmethod
    def _member_metadata_record(group: ShareGroup, member: ShareGroupMember):
        return (ir.encode_share_group_key(ir.SHARE_GROUP_MEMBER_METADATA, group.group_id, member.member_id),
                ir.encode_share_group_value(ir.SHARE_GROUP_MEMBER_METADATA, {
                    "rack_id": member.rack_id, "client_id": member.client_id, "client_host": member.client_host,
                    "subscribed_topic_names": sorted(member.subscribed_topic_names)}))

    @staticmethod
    def _group_metadata_record(group: ShareGroup):
        # Kafka 4.3 also stores a hash of the subscribed topics' metadata (KIP-1101); 0 here until the
        # coordinator computes it the same way.
        return (ir.encode_share_group_key(ir.SHARE_GROUP_METADATA, group.group_id),
                ir.encode_share_group_value(ir.SHARE_GROUP_METADATA, {"epoch": group.group_epoch, "metadata_hash": 0}))

    @staticmethod
    def _state_partition_metadata_record(group: ShareGroup):
        def infos(topics: Assignment) -> list[dict]:
            return [{"topic_id": t, "topic_name": group.topic_names.get(t, ""), "partitions": sorted(parts)}
                    for t, parts in sorted(topics.items(), key=lambda kv: str(kv[0])) if parts]

        return (ir.encode_share_group_key(ir.SHARE_GROUP_STATE_PARTITION_METADATA, group.group_id),
                ir.encode_share_group_value(ir.SHARE_GROUP_STATE_PARTITION_METADATA, {
                    "initializing_topics": infos(group.initializing), "initialized_topics": infos(group.initialized),
                    "deleting_topics": []}))

    @staticmethod
    def _current_assignment_record(group: ShareGroup, member: ShareGroupMember):
        return (ir.encode_share_group_key(ir.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, group.group_id, member.member_id),
                ir.encode_share_group_value(ir.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, {
                    "member_epoch": member.member_epoch, "previous_member_epoch": member.previous_member_epoch,
                    "state": MEMBER_STATE_STABLE,
                    "assigned_partitions": _assignment_records(member.assigned_partitions)}))

    # -- replay --------------------------------------------------------------------------------------

    def replay(self, record_type: int, group_id: str, member_id: str | None, value, now_ms: int) -> None:
        """Rebuild a group from its records in __consumer_offsets (`decode_share_group_record`'s
        answer), in log order: what a coordinator does when it loads the partition after a restart.
        Loaded members must heartbeat within the session timeout, counted from `now_ms`."""
        group = self.groups.get(group_id)
        if value is None:  # a tombstone
            if group is None:
                return
            if record_type == ir.SHARE_GROUP_MEMBER_METADATA:
                group.members.pop(member_id, None)
            elif record_type == ir.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
                group.target_assignment.pop(member_id, None)
            elif record_type == ir.SHARE_GROUP_METADATA:
                del self.groups[group_id]
            return
        if group is None:
            group = self.groups[group_id] = ShareGroup(group_id)
        if record_type == ir.SHARE_GROUP_METADATA:
            group.group_epoch = value.epoch
        elif record_type == ir.SHARE_GROUP_MEMBER_METADATA:
            member = group.members.get(member_id)
            if member is None:
                member = group.members[member_id] = ShareGroupMember(member_id)
            member.rack_id = value.rack_id
            member.client_id, member.client_host = value.client_id, value.client_host
            member.subscribed_topic_names = list(value.subscribed_topic_names)
            member.session_deadline_ms = now_ms + self.session_timeout_ms
        elif record_type == ir.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
            group.target_assignment[member_id] = {tp.topic_id: set(tp.partitions) for tp in value.topic_partitions}
        elif record_type == ir.SHARE_GROUP_STATE_PARTITION_METADATA:
            group.initialized = {tp.topic_id: set(tp.partitions) for tp in value.initialized_topics}
            group.initializing = {tp.topic_id: set(tp.partitions) for tp in value.initializing_topics}
            for tp in [*value.initialized_topics, *value.initializing_topics]:
                group.topic_names[tp.topic_id] = tp.topic_name
        elif record_type == ir.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA:
            group.assignment_epoch = value.assignment_epoch
            group.assignment_timestamp_ms = value.assignment_timestamp
        elif record_type == ir.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            member = group.members.get(member_id)
            if member is None:
                member = group.members[member_id] = ShareGroupMember(member_id)
                member.session_deadline_ms = now_ms + self.session_timeout_ms
            member.member_epoch = value.member_epoch
            member.previous_member_epoch = value.previous_member_epoch
            member.assigned_partitions = {tp.topic_id: set(tp.partitions) for tp in value.assigned_partitions}

    def loaded(self) -> None:
        """After a replay: each group's subscription metadata as the topics stand now. Initializations
        left unanswered by the coordinator before are asked for again at the next heartbeat."""
        for group in self.groups.values():
            group.subscription_metadata = self._subscription_metadata(group)
            group.initializing = {}

    # -- describe --------------------------------------------------------------------------------------

    def describe(self, group_id: str, topic_name: Callable[[TopicId], str | None]) -> dict:
        """One ShareGroupDescribe DescribedGroup (a dict of its fields). An unknown group, or one of
        another type, answers GROUP_ID_NOT_FOUND, as Kafka 4.3 does."""
        try:
            group = self._group(group_id, create=False)
        except ShareGroupError as e:
            # Kafka 4.3 answers the group id, the error and its message, other fields at defaults.
            return {"error_code": int(e.error), "error_message": e.message, "group_id": group_id}

        return {
            "error_code": 0, "error_message": None, "group_id": group_id, "group_state": group.state,
            "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
            "assignor_name": SIMPLE_ASSIGNOR_NAME,
            "members": [{
                "member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                "client_id": m.client_id, "client_host": m.client_host,
                "subscribed_topic_names": sorted(m.subscribed_topic_names),
                "assignment": described_assignment({t: p for t, p in m.assigned_partitions.items() if p},
                                                   topic_name),
            } for m in group.members.values()],
        }

    def delete_group(self, group_id: str) -> list[tuple[bytes, bytes | None]]:
        """DeleteGroups on a share group: only an empty one (NON_EMPTY_GROUP otherwise); it goes Dead
        and its group records are tombstoned."""
        group = self._group(group_id, create=False)
        if group.members:
            raise ShareGroupError(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
        group.dead = True
        del self.groups[group_id]
        records = [
            (ir.encode_share_group_key(ir.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, group_id), None),
            (ir.encode_share_group_key(ir.SHARE_GROUP_METADATA, group_id), None),
        ]
        if group.initialized or group.initializing:
            records.insert(0, (ir.encode_share_group_key(ir.SHARE_GROUP_STATE_PARTITION_METADATA, group_id), None))
        return records
