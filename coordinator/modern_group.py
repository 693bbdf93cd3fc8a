"""What the KIP-848 consumer groups and the KIP-1071 streams groups have in common (Kafka's
ModernGroup, and the member bookkeeping its GroupMetadataManager does alike for both protocols).

- `ModernGroup`: the base of ConsumerGroup (coordinator/consumer_group.py) and StreamsGroup
  (coordinator/streams_group.py): group and assignment epochs (both start at 1, as in Kafka 4.3),
  members, target assignment and when it was last computed (the assignment interval, KIP-1263),
  committed offsets, and what the offset paths of the group coordinator ask any group.
- `check_member_epoch`: Kafka's member epoch fencing of a heartbeat.
- `ModernGroupMembers`: a mixin of GroupCoordinator (with ConsumerGroupProtocol and
  StreamsGroupProtocol): each member's session timer and revocation timer, fencing a member when
  one expires, and turning a group of one kind into another (an empty classic group that only
  stores offsets becomes a consumer or streams group and back; its offsets stay).

Sans-io, as the rest of coordinator/: the timers are the coordinator's, records go through its log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from kafka_wire.errors import ErrorCode

from .group import ClassicGroup
from .offsets_store import AppendFailed, group_tombstone

logger = logging.getLogger("kafka_wire.coordinator")

# Member epochs with a meaning in ConsumerGroupHeartbeat and StreamsGroupHeartbeat requests.
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

# The group states every kind has (Kafka's ConsumerGroupState and StreamsGroupState names).
DEAD = "Dead"
EMPTY = "Empty"


class HeartbeatError(Exception):
    """A heartbeat refused with this error code (and message)."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message


def session_key(group_type: str, group_id: str, member_id: str) -> tuple:
    return (f"{group_type}-session", group_id, member_id)


def revocation_key(group_type: str, group_id: str, member_id: str) -> tuple:
    return (f"{group_type}-revocation", group_id, member_id)


def check_member_epoch(group_type: str, member, received: int, owns_subset: bool) -> None:
    """Kafka's throwIfMemberEpochIsInvalid (consumer groups) and
    throwIfStreamsGroupMemberEpochIsInvalid: a member may come back with its previous epoch when it
    lost the answer that bumped it, provided it owns a subset of what it is assigned
    (`owns_subset`: it reported what it owns, and that is so)."""
    if received > member.member_epoch:
        raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The {group_type} group member has a greater member epoch ({received}) than the one "
                             f"known by the group coordinator ({member.member_epoch}). The member must abandon "
                             f"all its partitions and rejoin.")
    if received < member.member_epoch and (received != member.previous_member_epoch or not owns_subset):
        raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The {group_type} group member has a smaller member epoch ({received}) than the one "
                             f"known by the group coordinator ({member.member_epoch}). The member must abandon "
                             f"all its partitions and rejoin.")


@dataclass
class ModernGroupMember:
    """What a member of either kind says of itself when it joins (the rest is the subclass's)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1


def can_compute_assignment(last_assignment_ms: int, interval_ms: int, now_ms: int) -> bool:
    """Kafka 4.3's canComputeNextTargetAssignment (KIP-1263): a group's target assignment is
    computed at most once per assignment interval (0: every time; a group never assigned: at once);
    until then members stay on the last one, at its assignment epoch."""
    return last_assignment_ms == 0 or interval_ms == 0 or now_ms >= last_assignment_ms + interval_ms


class ModernGroup:
    """A group of the KIP-848 kind: epochs, members, target assignment and committed offsets."""

    group_type = ""

    def __init__(self, group_id: str, now_ms: int) -> None:
        self.group_id = group_id
        # Kafka 4.3 starts both at 1 (ModernGroup, TargetAssignmentMetadata.INITIAL): a new group's
        # first join bumps it to epoch 2.
        self.group_epoch = 1
        self.assignment_epoch = 1
        # When the target assignment was last computed (ms, its TargetAssignmentMetadata record's
        # AssignmentTimestamp; 0: never): the next waits for the group's assignment interval.
        self.assignment_timestamp = 0
        self.members: dict = {}  # member id -> member
        self.target: dict = {}  # member id -> target assignment
        self.dead = False
        self.state_timestamp = now_ms
        self.offsets: dict = {}
        self.pending_txn_offsets: dict = {}

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.group_id!r}, {self.state}, epoch={self.group_epoch}, "
                f"assignment_epoch={self.assignment_epoch}, members={list(self.members)})")

    @property
    def state(self) -> str:
        """Dead once deleted, Empty without members, else what the members' progress says."""
        if self.dead:
            return DEAD
        if not self.members:
            return EMPTY
        return self.state_with_members()

    def state_with_members(self) -> str:
        raise NotImplementedError

    def may_compute_assignment(self, interval_ms: int, now_ms: int) -> bool:
        """Whether the assignment interval since the last target assignment has passed (see
        can_compute_assignment)."""
        return can_compute_assignment(self.assignment_timestamp, interval_ms, now_ms)

    # What the offset paths of the group coordinator ask any group.
    def is_empty(self) -> bool:
        return not self.members

    def is_in(self, *states) -> bool:
        return self.state in {str(s) for s in states}

    def complete_join(self, member, response) -> bool:
        """Nobody waits in JoinGroup or SyncGroup in a consumer or streams group: what unloading a
        coordinator partition tells waiting classic members, it tells nobody here."""
        return False

    complete_sync = complete_join

    def has_pending_txn_offset(self, topic: str, partition: int) -> bool:
        return any((topic, partition) in offsets for offsets in self.pending_txn_offsets.values())

    def has_offsets(self) -> bool:
        return bool(self.offsets) or bool(self.pending_txn_offsets)

    def offset_fetch_error(self, member_id: str | None, member_epoch: int) -> ErrorCode | None:
        """Kafka's validateOffsetFetch: only OffsetFetch v9+ carries a member, with its current epoch."""
        if member_id is None and member_epoch < 0:
            return None
        member = self.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return None


class ModernGroupMembers:
    """Member timers and fencing, and changes of a group's kind, over the coordinator's groups."""

    def _schedule_member_session(self, group: ModernGroup, member_id: str, timeout_ms: int,
                                 fence: Callable[[ModernGroup, str, str], None]) -> None:
        """The member is removed when no heartbeat comes within its session timeout."""
        self.timer.schedule(session_key(group.group_type, group.group_id, member_id), timeout_ms,
                            lambda: fence(group, member_id, "session timeout expired"))

    def _maybe_schedule_member_revocation(self, group: ModernGroup, member, *, revoking: bool, unrevoked_state,
                                          fallback_timeout_ms: int, what: str,
                                          fence: Callable[[ModernGroup, str, str], None]) -> None:
        """A member that must revoke (`revoking`: in `unrevoked_state`) has its rebalance timeout
        (else the session timeout) to do so at this epoch, or it is fenced; otherwise no timer."""
        key = revocation_key(group.group_type, group.group_id, member.member_id)
        if not revoking:
            self.timer.cancel(key)
            return
        if self.timer.is_scheduled(key):
            return
        epoch = member.member_epoch
        timeout = member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 else fallback_timeout_ms

        def expire() -> None:
            current = group.members.get(member.member_id)
            if current is not None and current.state == unrevoked_state and current.member_epoch == epoch:
                fence(group, member.member_id, f"it did not revoke its {what} in time")

        self.timer.schedule(key, timeout, expire)

    def _cancel_member_timers(self, group_type: str, group_id: str, member_id: str) -> None:
        self.timer.cancel(session_key(group_type, group_id, member_id))
        self.timer.cancel(revocation_key(group_type, group_id, member_id))

    def _fence_member(self, group: ModernGroup, member_id: str, reason: str, remove: Callable[[], str | None],
                      cancel_timers: Callable[[], None]) -> None:
        """Remove a member whose timer expired, if the group and member are still this
        coordinator's: `remove` writes it out (or returns what became of the group instead)."""
        if not self.active or self.groups.get(group.group_id) is not group or member_id not in group.members:
            return
        kind = group.group_type
        try:
            outcome = remove()
        except HeartbeatError as exc:
            logger.warning("could not remove member %s of %s group %s: %s", member_id, kind, group.group_id, exc)
            return
        except AppendFailed as exc:
            logger.warning("could not remove member %s of %s group %s: %s", member_id, kind, group.group_id,
                           exc.error.name)
            return
        if outcome is not None:
            logger.info("member %s of %s group %s removed (%s), %s", member_id, kind, group.group_id, reason,
                        outcome)
            return
        cancel_timers()
        logger.info("member %s of %s group %s removed: %s", member_id, kind, group.group_id, reason)

    # -- a group changing kind --------------------------------------------------------------------

    @staticmethod
    def _take_over_classic(classic, group: ModernGroup) -> list:
        """An empty classic group (one that only stores offsets) becomes `group`; its offsets stay.
        The records that needs: the classic group's tombstone when it had metadata written."""
        group.offsets, group.pending_txn_offsets = classic.offsets, classic.pending_txn_offsets
        if classic.protocol_type is not None or classic.generation_id > 0:
            return [group_tombstone(classic.group_id)]
        return []

    def _group_for_replay(self, group_id: str, group_class: type, value) -> ModernGroup | None:
        """The group a replayed record of `group_class`'s kind applies to: made (taking over the
        offsets of whatever group held the id) when the record is not a tombstone."""
        group = self.groups.get(group_id)
        if isinstance(group, group_class):
            return group
        if value is None:
            return None
        made = group_class(group_id, self.clock_ms())
        if group is not None:
            made.offsets, made.pending_txn_offsets = group.offsets, group.pending_txn_offsets
        self.groups[group_id] = made
        return made

    def _drop_modern_group(self, group: ModernGroup) -> None:
        """The group is gone; offsets it still has stay, in an offsets-only classic group."""
        group.dead = True
        if group.has_offsets():
            holder = ClassicGroup(group.group_id, self.clock_ms())
            holder.offsets, holder.pending_txn_offsets = group.offsets, group.pending_txn_offsets
            self.groups[group.group_id] = holder
        else:
            self.groups.pop(group.group_id, None)


__all__ = ["HeartbeatError", "ModernGroup", "ModernGroupMember", "ModernGroupMembers", "check_member_epoch",
           "can_compute_assignment",
           "session_key", "revocation_key", "JOIN_GROUP_MEMBER_EPOCH", "LEAVE_GROUP_MEMBER_EPOCH",
           "LEAVE_GROUP_STATIC_MEMBER_EPOCH"]
