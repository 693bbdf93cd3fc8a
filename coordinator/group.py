"""A classic consumer group: its members, generation, leader, protocol and Kafka's state machine.

States and the transitions Kafka allows (ClassicGroupState):

    Empty               no members; offsets may still be committed and fetched
    PreparingRebalance  members (re)join; JoinGroup responses are held until all have joined
    CompletingRebalance the leader computes the assignment; SyncGroup responses are held for it
    Stable              everyone has its assignment; heartbeats keep members alive
    Dead                the group was deleted or unloaded

This module only keeps state and answers questions about it; the coordinator drives it, owns the
timers and writes what must survive a restart.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from enum import Enum

from kafka_wire.consumer_protocol import CONSUMER_PROTOCOL_TYPE, subscribed_topics


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


EMPTY = GroupState.EMPTY
PREPARING_REBALANCE = GroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

VALID_PREVIOUS_STATES = {
    PREPARING_REBALANCE: {STABLE, COMPLETING_REBALANCE, EMPTY},
    COMPLETING_REBALANCE: {PREPARING_REBALANCE},
    STABLE: {COMPLETING_REBALANCE},
    EMPTY: {PREPARING_REBALANCE},
    DEAD: {STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD},
}

MEMBER_ID_DELIMITER = "-"


@dataclass
class CommittedOffset:
    """One committed offset, as OffsetCommitValue stores it, plus where its record is in the log."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1
    # The committed topic's id, which Kafka 4.x writes into the record (None: none, as for TxnOffsetCommit).
    topic_id: uuid.UUID | None = None
    # Offset of the record in __consumer_offsets: a transaction's offsets only replace a commit
    # written before them (Kafka's CommitRecordMetadataAndOffset).
    record_offset: int = -1


@dataclass(eq=False)
class GroupMember:
    """One member of a classic group (Kafka's ClassicGroupMember)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    # (name, metadata) in the member's order of preference.
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_future: asyncio.Future | None = None
    sync_future: asyncio.Future | None = None
    # A member that has not yet received its first JoinGroup response: it has no member id to
    # heartbeat with, so it expires after the new-member join timeout instead.
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_future is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_future is not None

    def has_satisfied_heartbeat(self) -> bool:
        """Whether a session expiry finds this member alive (Kafka's hasSatisfiedHeartbeat)."""
        if self.is_new:
            return False
        # A member parked in JoinGroup or SyncGroup cannot heartbeat: the rebalance keeps it.
        return self.is_awaiting_join or self.is_awaiting_sync

    def metadata(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise ValueError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols with the same metadata, in the same order."""
        if len(protocols) != len(self.protocols):
            return False
        return all(a[0] == b[0] and bytes(a[1]) == bytes(b[1]) for a, b in zip(protocols, self.protocols))

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} does not support any of the candidate protocols")


class ClassicGroup:
    """A classic group's membership and generation (Kafka's ClassicGroup)."""

    def __init__(self, group_id: str, now_ms: int, state: GroupState = EMPTY, *, generation_id: int = 0,
                 protocol_type: str | None = None, protocol_name: str | None = None,
                 leader_id: str | None = None, state_timestamp: int | None = None) -> None:
        self.group_id = group_id
        self.state = state
        self.previous_state = DEAD
        self.state_timestamp = now_ms if state_timestamp is None else state_timestamp
        self.generation_id = generation_id
        self.protocol_type = protocol_type
        self.protocol_name = protocol_name
        self.leader_id = leader_id
        self.members: dict[str, GroupMember] = {}
        self.static_members: dict[str, str] = {}  # group instance id -> member id
        self.pending_join_members: set[str] = set()
        self.pending_sync_members: set[str] = set()
        self.num_awaiting_join = 0
        self.supported_protocols: dict[str, int] = {}
        self.subscribed_topics: set[str] | None = None
        self.new_member_added = False
        # Committed offsets by (topic, partition), and offsets of open transactions by producer id.
        self.offsets: dict[tuple[str, int], CommittedOffset] = {}
        self.pending_txn_offsets: dict[int, dict[tuple[str, int], CommittedOffset]] = {}

    def __repr__(self) -> str:
        return (f"ClassicGroup({self.group_id!r}, {self.state}, generation={self.generation_id}, "
                f"members={list(self.members)})")

    # -- state ----------------------------------------------------------------------------------

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise RuntimeError(f"group {self.group_id}: cannot go from {self.state} to {state}")
        self.previous_state = self.state
        self.state = state
        self.state_timestamp = now_ms

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[PREPARING_REBALANCE]

    @property
    def size(self) -> int:
        return len(self.members)

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    # -- members --------------------------------------------------------------------------------

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}{MEMBER_ID_DELIMITER}{uuid.uuid4()}"

    def add(self, member: GroupMember, join_future: asyncio.Future | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise RuntimeError(f"static member {member.group_instance_id} is already in group {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count_protocols(member, +1)
        member.join_future = join_future
        if join_future is not None:
            self.num_awaiting_join += 1
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count_protocols(member, -1)
            if member.is_awaiting_join:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def update_member(self, member: GroupMember, protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                      session_timeout_ms: int, join_future: asyncio.Future | None) -> None:
        self._count_protocols(member, -1)
        member.protocols = protocols
        self._count_protocols(member, +1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if join_future is not None and not member.is_awaiting_join:
            self.num_awaiting_join += 1
        elif join_future is None and member.is_awaiting_join:
            self.num_awaiting_join -= 1
        member.join_future = join_future

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str,
                              fenced_join: dict, fenced_sync: dict) -> GroupMember:
        """Give a static member a new member id; whoever still waits under the old id is fenced."""
        member = self.members.pop(old_member_id)
        self.complete_join(member, fenced_join)
        self.complete_sync(member, fenced_sync)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        self.static_members[group_instance_id] = new_member_id
        return member

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        if group_instance_id is None:
            return None
        return self.static_members.get(group_instance_id)

    def is_static_member_fenced(self, group_instance_id: str | None, member_id: str) -> bool:
        existing = self.static_member_id(group_instance_id)
        return existing is not None and existing != member_id

    def member_error(self, member_id: str, group_instance_id: str | None) -> str | None:
        """Kafka's validateMember: 'FENCED_INSTANCE_ID', 'UNKNOWN_MEMBER_ID' or None."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                return "UNKNOWN_MEMBER_ID"
            if existing != member_id:
                return "FENCED_INSTANCE_ID"
        if member_id not in self.members:
            return "UNKNOWN_MEMBER_ID"
        return None

    def not_yet_rejoined(self) -> list[GroupMember]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_join_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick a member that did; False when none did."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    # -- protocols ------------------------------------------------------------------------------

    def _count_protocols(self, member: GroupMember, delta: int) -> None:
        for name, _ in member.protocols:
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + delta

    def candidate_protocols(self) -> set[str]:
        size = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == size}

    def supports_protocols(self, protocol_type: str, protocol_names: set[str]) -> bool:
        if self.state == EMPTY:
            return bool(protocol_type) and bool(protocol_names)
        size = len(self.members)
        return (self.protocol_type == protocol_type
                and any(self.supported_protocols.get(name, 0) == size for name in protocol_names))

    def select_protocol(self) -> str:
        """Each member votes for its preferred protocol among the common ones; most votes win."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def compute_subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, when the group uses the consumer protocol and all
        subscriptions parse; None when unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = subscribed_topics(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics.update(parsed)
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol()
        return topic in self.subscribed_topics

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(EMPTY, now_ms)
        self.pending_sync_members.clear()

    def current_members_for_leader(self) -> list[dict]:
        """Every member with its metadata for the selected protocol: what the leader assigns from."""
        return [
            {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
             "metadata": m.metadata(self.protocol_name)}
            for m in self.members.values()
        ]

    # -- pending join and sync --------------------------------------------------------------------

    def complete_join(self, member: GroupMember, response: dict) -> bool:
        if member.join_future is None:
            return False
        future, member.join_future = member.join_future, None
        self.num_awaiting_join -= 1
        if not future.done():
            future.set_result(response)
        return True

    def complete_sync(self, member: GroupMember, response: dict) -> bool:
        if member.sync_future is None:
            return False
        future, member.sync_future = member.sync_future, None
        if not future.done():
            future.set_result(response)
        return True

    # -- offsets ----------------------------------------------------------------------------------

    def has_pending_txn_offset(self, topic: str, partition: int) -> bool:
        return any((topic, partition) in offsets for offsets in self.pending_txn_offsets.values())

    def has_offsets(self) -> bool:
        return bool(self.offsets) or bool(self.pending_txn_offsets)
