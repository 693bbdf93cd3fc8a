"""A KIP-848 consumer group: members with epochs, the group's target assignment, and reconciliation.

The group has an epoch, bumped whenever what the assignment depends on changes (a member joins,
leaves or changes its subscription; a subscribed topic gains partitions). The coordinator then
computes a target assignment for that epoch (its assignment epoch). Each member converges to its
target one step at a time (Kafka's CurrentAssignmentBuilder, here `next_member_assignment`):

    Stable                the member has its target for the assignment epoch
    UnrevokedPartitions   it must first give up partitions (it keeps its epoch until it has)
    UnreleasedPartitions  it has the new epoch but waits for partitions still owned by others

Each partition a member holds (assigned or pending revocation) keeps the epoch it was assigned to
the member at (its assignment epoch, Kafka 4.3): a commit carrying an older member epoch is still
accepted for partitions held since that epoch (KIP-1251), see `ConsumerGroup.refuses_commit`.

A partition is owned by at most one member at a time: every partition a member was given or must
still revoke carries that member's epoch (the partition epoch), and a member is only given a
partition whose epoch says nobody owns it. Group states (Kafka's ConsumerGroupState) follow:
Empty (no members), Assigning (group epoch ahead of the assignment epoch), Reconciling (some
member not yet at its target), Stable.

This module keeps state and answers questions; the coordinator drives it from records
(coordinator/consumer_group_coordinator.py), so that replaying __consumer_offsets rebuilds it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from enum import IntEnum

from .group import CommittedOffset
from .modern_group import ModernGroup, ModernGroupMember

TopicId = uuid.UUID
Assignment = dict[TopicId, frozenset[int]]
AssignmentEpochs = dict[tuple[TopicId, int], int]  # (topic id, partition) -> epoch it was assigned at

CONSUMER_GROUP_TYPE = "consumer"


class MemberState(IntEnum):
    """Kafka's MemberState, with the values ConsumerGroupCurrentMemberAssignmentValue stores."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class ConsumerGroupState:
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


def freeze(assignment: dict[TopicId, object] | None) -> Assignment:
    """An assignment with immutable partition sets and without empty topics."""
    if not assignment:
        return {}
    return {topic: frozenset(parts) for topic, parts in assignment.items() if parts}


def partitions_of(assignment: Assignment) -> set[tuple[TopicId, int]]:
    return {(topic, p) for topic, parts in assignment.items() for p in parts}


def described_assignment(assignment, topic_name) -> dict:
    """A member's assignment as ConsumerGroupDescribe and ShareGroupDescribe answer it (their Assignment
    struct, TopicPartitions with topic id, name and partitions): topics by id, partitions sorted;
    topics whose name `topic_name(topic_id)` does not know (deleted) are left out, as Kafka does."""
    topics = []
    for topic_id, parts in sorted(assignment.items(), key=lambda kv: str(kv[0])):
        name = topic_name(topic_id)
        if name is not None:
            topics.append({"topic_id": topic_id, "topic_name": name, "partitions": sorted(parts)})
    return {"topic_partitions": topics}


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """What a member using the classic protocol in a consumer group joined with (online migration):
    its session timeout and its JoinGroup protocols (name, subscription bytes) in its order."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        """The protocol its JoinGroup and SyncGroup answers name: its first (Kafka does the same)."""
        return self.protocols[0][0]


@dataclass
class ConsumerGroupMember(ModernGroupMember):
    """One member (Kafka's ConsumerGroupMember): its metadata, epochs and current assignment."""

    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # The epoch each partition of `assigned` and `pending_revocation` was assigned to the member at.
    assignment_epochs: AssignmentEpochs = field(default_factory=dict)
    # Set when the member uses the classic protocol (JoinGroup/SyncGroup/Heartbeat), None for a
    # ConsumerGroupHeartbeat member.
    classic: ClassicMemberMetadata | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def same_assignment(self, other: ConsumerGroupMember) -> bool:
        return (self.member_epoch == other.member_epoch and self.previous_member_epoch == other.previous_member_epoch
                and self.state == other.state and self.assigned == other.assigned
                and self.pending_revocation == other.pending_revocation
                and self.assignment_epochs == other.assignment_epochs)

    def assignment_epoch(self, topic_id: TopicId, partition: int) -> int | None:
        """The epoch the partition was assigned to the member at; None when it does not hold it."""
        if partition not in self.assigned.get(topic_id, ()) \
                and partition not in self.pending_revocation.get(topic_id, ()):
            return None
        return self.assignment_epochs.get((topic_id, partition), max(self.member_epoch, 0))

    def same_metadata(self, other: ConsumerGroupMember) -> bool:
        return (self.instance_id == other.instance_id and self.rack_id == other.rack_id
                and self.client_id == other.client_id and self.client_host == other.client_host
                and self.subscribed_topic_names == other.subscribed_topic_names
                and self.subscribed_topic_regex == other.subscribed_topic_regex
                and self.rebalance_timeout_ms == other.rebalance_timeout_ms
                and self.server_assignor == other.server_assignor and self.classic == other.classic)

    def is_reconciled_to(self, assignment_epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == assignment_epoch


@dataclass(frozen=True)
class TopicMetadata:
    """A subscribed topic as the last assignment saw it (ConsumerGroupPartitionMetadataValue)."""

    topic_id: TopicId
    name: str
    num_partitions: int


class ConsumerGroup(ModernGroup):
    """A consumer group's members, epochs, target assignment and committed offsets."""

    group_type = CONSUMER_GROUP_TYPE

    def __init__(self, group_id: str, now_ms: int) -> None:
        super().__init__(group_id, now_ms)
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.target: dict[str, Assignment] = {}  # member id -> target assignment
        # (topic id, partition) -> (member id, epoch) of the member owning it (assigned or revoking).
        self.partition_owners: dict[tuple[TopicId, int], tuple[str, int]] = {}
        self.subscription_metadata: dict[str, TopicMetadata] = {}  # topic name -> metadata
        # Kafka 4.1+ (KIP-1101): the hash of the subscribed topics' metadata the group epoch was last
        # bumped for (ConsumerGroupMetadataValue.metadataHash, coordinator/metadata_hash.py).
        self.metadata_hash = 0
        # A ConsumerGroupPartitionMetadata record (Kafka 3.7-4.0's layout, kafka-wire's before it
        # hashed) is in the log: the next metadata check writes its tombstone, as Kafka 4.1+ does.
        self.legacy_partition_metadata = False
        # Subscribed regular expression -> the topic names it matched when last resolved.
        self.resolved_regexes: dict[str, frozenset[str]] = {}
        self.offsets: dict[tuple[str, int], CommittedOffset] = {}
        self.pending_txn_offsets: dict[int, dict[tuple[str, int], CommittedOffset]] = {}

    # -- state --------------------------------------------------------------------------------

    def state_with_members(self) -> str:
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def uses_consumer_protocol(self) -> bool:
        return True

    def member_topic_names(self, member: ConsumerGroupMember) -> set[str]:
        """The topics a member subscribes to: by name, and those its regular expression matched."""
        topics = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex is not None:
            topics |= self.resolved_regexes.get(member.subscribed_topic_regex, frozenset())
        return topics

    def subscribed_regexes(self) -> set[str]:
        return {m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex is not None}

    def subscribed_topic_names(self) -> set[str]:
        return {t for m in self.members.values() for t in self.member_topic_names(m)}

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    # -- members ------------------------------------------------------------------------------

    def put_member_metadata(self, member: ConsumerGroupMember) -> None:
        """Add or update a member's metadata (its assignment fields are left as they are)."""
        existing = self.members.get(member.member_id)
        if existing is None:
            existing = ConsumerGroupMember(member.member_id)
            self.members[member.member_id] = existing
        if existing.instance_id is not None and self.static_members.get(existing.instance_id) == member.member_id:
            del self.static_members[existing.instance_id]
        for name in ("instance_id", "rack_id", "client_id", "client_host", "subscribed_topic_names",
                     "subscribed_topic_regex", "rebalance_timeout_ms", "server_assignor", "classic"):
            setattr(existing, name, getattr(member, name))
        if existing.instance_id is not None:
            self.static_members[existing.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is None:
            return
        self._release_partitions(member)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]

    def put_member_assignment(self, member_id: str, member_epoch: int, previous_member_epoch: int,
                              state: MemberState, assigned: Assignment, pending_revocation: Assignment,
                              assignment_epochs: AssignmentEpochs | None = None, *, strict: bool = True) -> None:
        """Set a member's assignment. A partition without an assignment epoch gets the member epoch
        (never below 0), as Kafka reads a record written without them (Utils.assignmentFromTopicPartitions)."""
        member = self.members.get(member_id)
        if member is None:
            member = self.members[member_id] = ConsumerGroupMember(member_id)
        self._release_partitions(member)
        member.member_epoch = member_epoch
        member.previous_member_epoch = previous_member_epoch
        member.state = state
        member.assigned = freeze(assigned)
        member.pending_revocation = freeze(pending_revocation)
        epochs = assignment_epochs or {}
        member.assignment_epochs = {
            tp: epochs.get(tp, max(member_epoch, 0))
            for tp in partitions_of(member.assigned) | partitions_of(member.pending_revocation)}
        for tp in partitions_of(member.assigned) | partitions_of(member.pending_revocation):
            holder = self.partition_owners.get(tp)
            if holder is not None and holder[0] != member_id and strict:
                raise PartitionOwnedError(f"group {self.group_id}: partition {tp} of member {holder[0]} "
                                          f"given to member {member_id}")
            self.partition_owners[tp] = (member_id, member_epoch)

    def clear_member_assignment(self, member_id: str) -> None:
        member = self.members.get(member_id)
        if member is not None:
            self._release_partitions(member)
            member.assigned, member.pending_revocation, member.assignment_epochs = {}, {}, {}

    def _release_partitions(self, member: ConsumerGroupMember) -> None:
        for tp in partitions_of(member.assigned) | partitions_of(member.pending_revocation):
            holder = self.partition_owners.get(tp)
            if holder is not None and holder[0] == member.member_id:
                del self.partition_owners[tp]

    def partition_epoch(self, topic_id: TopicId, partition: int) -> int:
        """The epoch of the member owning the partition, -1 when nobody does."""
        holder = self.partition_owners.get((topic_id, partition))
        return -1 if holder is None else holder[1]

    def owner_of(self, topic_id: TopicId, partition: int) -> str | None:
        holder = self.partition_owners.get((topic_id, partition))
        return None if holder is None else holder[0]

    def refuses_commit(self, member: ConsumerGroupMember, member_epoch: int, partitions) -> bool:
        """Kafka 4.3's ConsumerGroup.validateOffsetCommit for a member of this group, over the
        (topic id, partition)s a commit writes (topic id None: a topic that does not exist). The
        member's current epoch may write any partition, a newer one none; an older one (a commit
        sent before the member learnt its new epoch, KIP-1251) only partitions the member holds
        (assigned or pending revocation) since that epoch or earlier."""
        if member_epoch == member.member_epoch:
            return False
        if member_epoch > member.member_epoch:
            return True
        for topic_id, partition in partitions:
            epoch = None if topic_id is None else member.assignment_epoch(topic_id, partition)
            if epoch is None or member_epoch < epoch:
                return True
        return False

    # -- members using the classic protocol (online migration) ----------------------------------

    def classic_members(self) -> list[ConsumerGroupMember]:
        return [m for m in self.members.values() if m.uses_classic_protocol]

    def all_members_classic_except(self, member_id: str) -> bool:
        """Kafka's allMembersUseClassicProtocolExcept: every other member joined with JoinGroup."""
        return all(m.uses_classic_protocol for m in self.members.values() if m.member_id != member_id)

    def supports_classic_protocols(self, protocol_type: str | None, names: set[str]) -> bool:
        """Whether a classic member joining with these protocols may join: of type 'consumer', and
        sharing a protocol with every classic member already in (any one when there is none)."""
        if protocol_type != CONSUMER_GROUP_TYPE:
            return False
        classic = self.classic_members()
        if not classic:
            return bool(names)
        return any(all(name in {n for n, _ in m.classic.protocols} for m in classic) for name in names)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Whether a partition of the member's target is still owned by another member."""
        for topic, parts in self.target.get(member.member_id, {}).items():
            for partition in parts:
                if partition in member.assigned.get(topic, ()):
                    continue
                owner = self.owner_of(topic, partition)
                if owner is not None and owner != member.member_id:
                    return True
        return False

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        if instance_id is None:
            return None
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def preferred_assignor(self, configured: list[str]) -> str:
        """The server assignor most members asked for; the first configured one when none did."""
        votes: dict[str, int] = {}
        for member in self.members.values():
            if member.server_assignor:
                votes[member.server_assignor] = votes.get(member.server_assignor, 0) + 1
        if not votes:
            return configured[0]
        return max(votes, key=lambda name: (votes[name], -configured.index(name) if name in configured else -99))


class ConversionError(Exception):
    """A group cannot change protocol (online migration): its embedded consumer protocol does not parse."""


class PartitionOwnedError(RuntimeError):
    """A partition was about to be given to a member while another owns it: a broken invariant."""


def next_member_assignment(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
                           partition_epoch, owned: set[tuple[TopicId, int]] | None) -> ConsumerGroupMember:
    """Kafka's CurrentAssignmentBuilder: the member's next step towards its target assignment.

    `partition_epoch(topic_id, partition)` is the owning member's epoch (-1 when free); `owned`
    the partitions the member says it owns in this heartbeat (None when it did not say).
    Returns the member unchanged or an updated copy.
    """
    if member.state == MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _compute_next(member, target_epoch, target, partition_epoch, owned)
        return member
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        # Only once the member shows it no longer owns what it had to revoke does it move on.
        if owned is not None and not (partitions_of(member.pending_revocation) & owned):
            return _compute_next(member, target_epoch, target, partition_epoch, owned)
        return member
    if member.state == MemberState.UNRELEASED_PARTITIONS:
        # Partitions may have been released since the last heartbeat: look again every time.
        return _compute_next(member, target_epoch, target, partition_epoch, owned)
    return member


def _compute_next(member: ConsumerGroupMember, target_epoch: int, target: Assignment, partition_epoch,
                  owned: set[tuple[TopicId, int]] | None) -> ConsumerGroupMember:
    keep: dict[TopicId, set[int]] = {}
    revoke: dict[TopicId, set[int]] = {}
    assign: dict[TopicId, set[int]] = {}
    has_unreleased = False
    for topic in set(target) | set(member.assigned):
        wanted = target.get(topic, frozenset())
        current = member.assigned.get(topic, frozenset())
        keep[topic] = set(current & wanted)
        revoke[topic] = set(current - wanted)
        free = set()
        for partition in wanted - current:
            if partition_epoch(topic, partition) == -1:
                free.add(partition)
            else:
                has_unreleased = True
        assign[topic] = free
    keep_f, revoke_f, assign_f = freeze(keep), freeze(revoke), freeze(assign)
    # Partitions the member keeps or must revoke keep the epoch they were assigned at; new ones
    # are assigned at the target epoch.
    held_epochs = {tp: member.assignment_epoch(*tp) for tp in partitions_of(keep_f) | partitions_of(revoke_f)}
    still_owns_revoked = owned is None or bool(partitions_of(revoke_f) & owned)
    if revoke_f and still_owns_revoked:
        # Revoke first, keeping the epoch: the partitions cannot move on before the member lets go.
        return replace(member, state=MemberState.UNREVOKED_PARTITIONS, previous_member_epoch=member.member_epoch,
                       assigned=keep_f, pending_revocation=revoke_f, assignment_epochs=held_epochs)
    kept_epochs = {tp: held_epochs[tp] for tp in partitions_of(keep_f)}
    if assign_f:
        merged = {t: keep_f.get(t, frozenset()) | assign_f.get(t, frozenset()) for t in set(keep_f) | set(assign_f)}
        return replace(member, state=MemberState.UNRELEASED_PARTITIONS if has_unreleased else MemberState.STABLE,
                       member_epoch=target_epoch, previous_member_epoch=member.member_epoch,
                       assigned=freeze(merged), pending_revocation={},
                       assignment_epochs={**kept_epochs, **dict.fromkeys(partitions_of(assign_f), target_epoch)})
    return replace(member, state=MemberState.UNRELEASED_PARTITIONS if has_unreleased else MemberState.STABLE,
                   member_epoch=target_epoch, previous_member_epoch=member.member_epoch,
                   assigned=keep_f, pending_revocation={}, assignment_epochs=kept_epochs)
