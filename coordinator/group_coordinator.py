"""The group coordinator: Kafka's classic group protocol and offset storage, for every group of this broker.

JoinGroup, SyncGroup, Heartbeat and LeaveGroup drive each group's state machine (coordinator/group.py)
as Apache Kafka's GroupMetadataManager does; JoinGroup and SyncGroup responses wait on futures
until the rebalance reaches them (the member's connection waits, as Kafka mutes it). Offsets
and group metadata are records in __consumer_offsets (coordinator/offsets_store.py), written
before the answer, and replayed by `start`.

Handlers call the public methods with the request's fields and build the response from what
they return; nothing here touches a socket.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable

from kafka_wire.errors import ErrorCode
from kafka_wire.internal_records import decode_consumer_group_record, decode_streams_group_record
from kafka_wire.record_codec import ControlRecordType, InvalidRecord, decode_control_key
from kafka_wire.primitives import DecodeError

from .consumer_group import ConsumerGroup
from .consumer_group_coordinator import ConsumerGroupProtocol
from .streams_group import StreamsGroup
from .streams_group_coordinator import StreamsGroupProtocol
from .modern_group import ModernGroup, ModernGroupMembers
from .classic_protocol import UNKNOWN_MEMBER_ID, heartbeat_key, join_key, join_response, sync_key, sync_response
from .group_migration import GroupMigration
from .group import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    CommittedOffset,
    GroupMember,
    GroupState,
)
from .offsets_store import (
    OFFSETS_TOPIC,
    AppendFailed,
    OffsetsTopic,
    decode_offsets_record,
    group_metadata_append_error,
    group_metadata_record,
    group_tombstone,
    offset_commit_append_error,
    offset_commit_record,
    offset_tombstone,
)
from .timer import CoordinatorTimer, stop_task

logger = logging.getLogger("kafka_wire.coordinator")

# A new member cannot heartbeat before its first JoinGroup answer; it is dropped after this
# long instead (Kafka's group.coordinator classic new-member join timeout: 5 minutes).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
# Kafka's offset.metadata.max.bytes default.
OFFSET_METADATA_MAX_BYTES = 4096

TopicPartition = tuple[str, int]


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class GroupCoordinator(ConsumerGroupProtocol, StreamsGroupProtocol, ModernGroupMembers, GroupMigration):
    """Every group of this broker (classic, and KIP-848 consumer groups through the mixin) and
    their committed offsets."""

    def __init__(self, *, clock_ms: Callable[[], int] = _wall_clock_ms) -> None:
        self.clock_ms = clock_ms
        self.groups: dict[str, ClassicGroup] = {}
        self.timer = CoordinatorTimer()
        self.offsets_topic: OffsetsTopic | None = None
        self.config = None
        self.broker = None
        self.active = False
        self.loading = False
        self._expiration_task: asyncio.Task | None = None

    # == lifecycle ===================================================================================

    def attach(self, broker) -> None:
        """What every coordinator reads of its broker from the start, whatever it replays when: its
        config, its topics and each group's own configs (a cluster's coordinator attaches at start
        and loads partitions as it comes to lead them, broker/cluster/group_failover.py)."""
        self.config = broker.config
        self.broker = broker

    async def start(self, broker) -> None:
        """Create __consumer_offsets when missing, replay it, then serve (and expire offsets)."""
        self.attach(broker)
        self.offsets_topic = OffsetsTopic(broker)
        partitions = self.offsets_topic.ensure_created()
        self.active = True
        self.loading = True
        started = time.monotonic()
        try:
            for partition in range(partitions):
                self._replay_partition(partition)
                # Let the server answer other requests (COORDINATOR_LOAD_IN_PROGRESS for groups).
                await asyncio.sleep(0)
        finally:
            self.loading = False
        self._on_loaded()
        logger.info("group coordinator loaded %d groups from %d partitions of %s in %.3f s",
                 len(self.groups), partitions, OFFSETS_TOPIC, time.monotonic() - started)
        self._expiration_task = asyncio.create_task(self._expire_offsets_periodically())

    async def stop(self) -> None:
        """Stop serving: members waiting in JoinGroup/SyncGroup are told NOT_COORDINATOR."""
        self.active = False
        if self._expiration_task is not None:
            await stop_task(self._expiration_task)
            self._expiration_task = None
        self.timer.cancel_all()
        for group in self.groups.values():
            if isinstance(group, (ConsumerGroup, StreamsGroup)):
                continue
            for member in list(group.members.values()):
                group.complete_join(member, join_response(ErrorCode.NOT_COORDINATOR, member.member_id))
                group.complete_sync(member, sync_response(ErrorCode.NOT_COORDINATOR))
        self.groups.clear()

    # == common checks ===============================================================================

    def _cfg(self, name: str, default=None):
        if self.config is None:
            return default
        value = self.config.get(name, default) if hasattr(self.config, "get") else self.config[name]
        return default if value is None else value

    def coordinator_error(self) -> ErrorCode | None:
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return None

    def _validate_group(self, group_id: str | None, *, allow_empty: bool) -> ErrorCode | None:
        """Kafka's validateGroupStatus: the group id, then whether we can serve it now.
        OffsetCommit/OffsetFetch/DescribeGroups/DeleteGroups accept an empty group id."""
        if group_id is None or (not allow_empty and group_id == ""):
            return ErrorCode.INVALID_GROUP_ID
        return self.coordinator_error()

    def _current(self, group: ClassicGroup) -> bool:
        """A timer's group is still the one we serve (not deleted, unloaded or replaced)."""
        return self.active and self.groups.get(group.group_id) is group and not group.is_in(DEAD)

    def partition_for(self, group_id: str) -> int:
        return self.offsets_topic.partition_for(group_id)

    # == JoinGroup ===================================================================================

    async def join_group(self, *, group_id: str, member_id: str, group_instance_id: str | None,
                         protocol_type: str, protocols: list[tuple[str, bytes]], session_timeout_ms: int,
                         rebalance_timeout_ms: int, client_id: str, client_host: str,
                         require_known_member_id: bool, supports_skip_assignment: bool = False,
                         reason: str | None = None) -> dict:
        """Join (or rejoin) a group; answers when the join phase of the rebalance completes."""
        error = self._validate_group(group_id, allow_empty=False)
        if error is not None:
            return join_response(error, member_id)
        if not (int(self._cfg("group.min.session.timeout.ms", 6000)) <= session_timeout_ms
                <= int(self._cfg("group.max.session.timeout.ms", 1800000))):
            return join_response(ErrorCode.INVALID_SESSION_TIMEOUT, member_id)
        if rebalance_timeout_ms is None or rebalance_timeout_ms < 0:
            rebalance_timeout_ms = session_timeout_ms  # JoinGroup v0 has no rebalance timeout
        request = _JoinRequest(member_id, group_instance_id, protocol_type, [(n, bytes(m)) for n, m in protocols],
                               session_timeout_ms, rebalance_timeout_ms, client_id or "", client_host,
                               require_known_member_id, supports_skip_assignment, reason)
        future = asyncio.get_running_loop().create_future()
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        group = self.groups.get(group_id)
        if isinstance(group, StreamsGroup):
            # A streams group with members refuses classic members; an empty one becomes a classic
            # group (its offsets stay), as Kafka 4.3 does.
            group = self._classic_group_replacing(group) if group.is_empty() else None
            if group is None:
                return join_response(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        elif isinstance(group, ConsumerGroup):
            if not group.is_empty():
                # Classic members join a consumer group (online migration, group_migration.py).
                return self.classic_join_to_consumer_group(group, request, require_known_member_id)
            group = self._classic_group_replacing(group)
            if group is None:
                return join_response(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if group is None:
            if not is_unknown:
                return join_response(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
            group = ClassicGroup(group_id, self.clock_ms())
            self.groups[group_id] = group
            # As Kafka's coordinator (classicGroupJoinToClassicGroup): a group a JoinGroup creates is
            # committed with an empty GroupMetadata record (generation 0, no members), so it is known
            # after a restart too; if that write fails the group is not created.
            try:
                self._append(group, [group_metadata_record(group, {})])
            except AppendFailed as exc:
                del self.groups[group_id]
                return join_response(group_metadata_append_error(exc.error))
        if not self._accept_joining_member(group, member_id):
            member = group.members.get(member_id)
            if member is not None:
                self._forget_member(group, member)
            return join_response(ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID)
        if is_unknown:
            self._join_new_member(group, request, future)
        else:
            self._join_existing_member(group, request, future)
        return await future

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = int(self._cfg("group.max.size", 2147483647))
        if group.is_in(EMPTY, DEAD):
            return True
        if group.is_in(PREPARING_REBALANCE):
            # Counting the members awaiting a join lets the last rejoining members be the ones
            # turned away when group.max.size shrank.
            member = group.members.get(member_id)
            return (member is not None and member.is_awaiting_join) or group.num_awaiting_join < max_size
        return group.has_member(member_id) or group.size < max_size

    def _join_new_member(self, group: ClassicGroup, request: _JoinRequest, future: asyncio.Future) -> None:
        if group.is_in(DEAD):
            _resolve(future, join_response(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(request.protocol_type, {name for name, _ in request.protocols}):
            _resolve(future, join_response(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        new_member_id = group.generate_member_id(request.client_id, request.group_instance_id)
        if request.group_instance_id is not None:
            existing = group.static_member_id(request.group_instance_id)
            if existing is not None:
                logger.info("static member %s of group %s rejoins with an unknown member id in state %s; "
                         "replacing member %s", request.group_instance_id, group.group_id, group.state, existing)
                self._update_static_member_then_rebalance_or_complete_join(
                    group, request, existing, new_member_id, future)
            else:
                self._add_member_then_rebalance_or_complete_join(group, request, new_member_id, future)
        elif request.require_known_member_id:
            # KIP-394: the member must come back with this id, so that a client retrying a lost
            # JoinGroup does not leave orphan members behind.
            group.pending_join_members.add(new_member_id)
            self.timer.schedule(heartbeat_key(group.group_id, new_member_id), request.session_timeout_ms,
                                lambda: self._expire_heartbeat(group, new_member_id))
            _resolve(future, join_response(ErrorCode.MEMBER_ID_REQUIRED, new_member_id))
        else:
            self._add_member_then_rebalance_or_complete_join(group, request, new_member_id, future)

    def _join_existing_member(self, group: ClassicGroup, request: _JoinRequest, future: asyncio.Future) -> None:
        member_id = request.member_id
        if group.is_in(DEAD):
            _resolve(future, join_response(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(request.protocol_type, {name for name, _ in request.protocols}):
            _resolve(future, join_response(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_join_members:
            if request.group_instance_id is not None:
                # Pending members are always dynamic (static members never get MEMBER_ID_REQUIRED).
                _resolve(future, join_response(ErrorCode.UNKNOWN_SERVER_ERROR, member_id))
                return
            self._add_member_then_rebalance_or_complete_join(group, request, member_id, future)
            return
        error = group.member_error(member_id, request.group_instance_id)
        if error is not None:
            _resolve(future, join_response(ErrorCode[error], member_id))
            return
        member = group.members[member_id]
        if group.is_in(PREPARING_REBALANCE):
            self._update_member_then_rebalance_or_complete_join(
                group, member, request, future, f"member {member_id} is joining group during {group.state}")
        elif group.is_in(COMPLETING_REBALANCE):
            if member.matches(request.protocols):
                # The member lost the first answer: give it the same one again.
                _resolve(future, join_response(
                    member_id=member_id, generation_id=group.generation_id,
                    protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                    leader=group.leader_id,
                    members=group.current_members_for_leader() if group.is_leader(member_id) else []))
            else:
                self._update_member_then_rebalance_or_complete_join(
                    group, member, request, future, f"updating metadata for member {member_id} during {group.state}")
        elif group.is_in(STABLE):
            if group.is_leader(member_id):
                # The leader rejoining forces a rebalance: it may have seen a metadata change
                # (new partitions, a new topic matching a pattern) that needs a new assignment.
                self._update_member_then_rebalance_or_complete_join(
                    group, member, request, future, f"leader {member_id} re-joining group during Stable")
            elif not member.matches(request.protocols):
                self._update_member_then_rebalance_or_complete_join(
                    group, member, request, future, f"updating metadata for member {member_id} during Stable")
            else:
                _resolve(future, join_response(
                    member_id=member_id, generation_id=group.generation_id,
                    protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                    leader=group.leader_id))
        else:
            logger.warning("member %s tried to rejoin group %s in state %s", member_id, group.group_id, group.state)
            _resolve(future, join_response(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _add_member_then_rebalance_or_complete_join(self, group: ClassicGroup, request: _JoinRequest,
                                                    member_id: str, future: asyncio.Future) -> None:
        member = GroupMember(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=request.protocols,
            is_new=True,
        )
        if group.is_in(PREPARING_REBALANCE) and group.previous_state == EMPTY:
            group.new_member_added = True  # extends group.initial.rebalance.delay.ms
        group.add(member, future)
        self._reschedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance_or_complete_join(
            group, f"adding new member {member_id} with group instance id {request.group_instance_id}; "
                   f"client reason: {request.reason or 'not provided'}")

    def _update_member_then_rebalance_or_complete_join(self, group: ClassicGroup, member: GroupMember,
                                                       request: _JoinRequest, future: asyncio.Future,
                                                       reason: str) -> None:
        if member.join_future is not None and member.join_future is not future:
            # A retried JoinGroup replaces one whose client stopped waiting for it.
            group.complete_join(member, join_response(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        group.update_member(member, request.protocols, request.rebalance_timeout_ms,
                            request.session_timeout_ms, future)
        self._maybe_prepare_rebalance_or_complete_join(group, reason)

    def _update_static_member_then_rebalance_or_complete_join(self, group: ClassicGroup, request: _JoinRequest,
                                                              old_member_id: str, new_member_id: str,
                                                              future: asyncio.Future) -> None:
        current_leader = group.leader_id
        member = group.replace_static_member(
            request.group_instance_id, old_member_id, new_member_id,
            join_response(ErrorCode.FENCED_INSTANCE_ID, old_member_id),
            sync_response(ErrorCode.FENCED_INSTANCE_ID))
        self.timer.cancel(heartbeat_key(group.group_id, old_member_id))
        self._reschedule_heartbeat(group, member)
        old_protocols = member.protocols
        old_rebalance_timeout, old_session_timeout = member.rebalance_timeout_ms, member.session_timeout_ms
        group.update_member(member, request.protocols, request.rebalance_timeout_ms,
                            request.session_timeout_ms, future)
        if group.is_in(STABLE):
            if group.protocol_name == group.select_protocol():
                # A restarted static member takes its old place without a rebalance (KIP-345);
                # only its new member id is persisted.
                assignment = {m.member_id: m.assignment for m in group.members.values()}
                try:
                    self._append(group, [group_metadata_record(group, assignment)])
                except AppendFailed as exc:
                    logger.warning("could not persist static member %s of group %s: %s; keeping member id %s",
                                new_member_id, group.group_id, exc.error.name, old_member_id)
                    group.update_member(member, old_protocols, old_rebalance_timeout, old_session_timeout, None)
                    restored = group.replace_static_member(request.group_instance_id, new_member_id, old_member_id,
                                                           join_response(), sync_response())
                    self.timer.cancel(heartbeat_key(group.group_id, new_member_id))
                    self._reschedule_heartbeat(group, restored)
                    _resolve(future, join_response(
                        group_metadata_append_error(exc.error), UNKNOWN_MEMBER_ID,
                        generation_id=group.generation_id, protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name, leader=current_leader))
                    return
                if request.supports_skip_assignment:
                    # KIP-814: a returning static leader learns it leads, but must not reassign.
                    is_leader = group.is_leader(new_member_id)
                    group.complete_join(member, join_response(
                        member_id=new_member_id, generation_id=group.generation_id,
                        protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                        leader=group.leader_id,
                        members=group.current_members_for_leader() if is_leader else [],
                        skip_assignment=is_leader))
                else:
                    # The old leader id keeps a returning static leader from assigning for a Stable
                    # group, whose SyncGroup would not distribute a new assignment anyway.
                    group.complete_join(member, join_response(
                        member_id=new_member_id, generation_id=group.generation_id,
                        protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                        leader=current_leader))
            else:
                self._maybe_prepare_rebalance_or_complete_join(
                    group, f"group's selected protocol changes: static member {new_member_id} with instance id "
                           f"{request.group_instance_id} joined with other protocols")
        elif group.is_in(COMPLETING_REBALANCE):
            # The leader may be assigning to the old member id: start over so the new id gets partitions.
            self._prepare_rebalance(group, f"updating metadata for static member {new_member_id} with instance id "
                                           f"{request.group_instance_id}")
        else:
            self._maybe_complete_join_phase(group)

    # -- rebalance ----------------------------------------------------------------------------------

    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)
        else:
            self._maybe_complete_join_phase(group)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        # The initial rebalance of a new group always waits for group.initial.rebalance.delay.ms.
        if group.is_in(PREPARING_REBALANCE) and group.has_all_members_joined() and group.previous_state != EMPTY:
            self._complete_join(group)

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_in(COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        initial = group.is_in(EMPTY)
        if initial:
            delay = int(self._cfg("group.initial.rebalance.delay.ms", 3000))
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self.timer.schedule(join_key(group.group_id), delay,
                                lambda: self._try_complete_initial_rebalance(group, delay, remaining))
        group.transition_to(PREPARING_REBALANCE, self.clock_ms())
        logger.info("preparing to rebalance group %s with old generation %d (reason: %s)",
                 group.group_id, group.generation_id, reason)
        if not initial:
            self._maybe_complete_join_else_schedule(group)

    def _maybe_complete_join_else_schedule(self, group: ClassicGroup) -> None:
        if group.has_all_members_joined():
            self._complete_join(group)
        else:
            self.timer.schedule(join_key(group.group_id), group.rebalance_timeout_ms(),
                                lambda: self._complete_join_if_current(group))

    def _try_complete_initial_rebalance(self, group: ClassicGroup, delay: int, remaining: int) -> None:
        if not self._current(group):
            return
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(int(self._cfg("group.initial.rebalance.delay.ms", 3000)), remaining)
            new_remaining = max(remaining - delay, 0)
            self.timer.schedule(join_key(group.group_id), new_delay,
                                lambda: self._try_complete_initial_rebalance(group, new_delay, new_remaining))
        else:
            self._complete_join(group)

    def _complete_join_if_current(self, group: ClassicGroup) -> None:
        if self._current(group) and group.is_in(PREPARING_REBALANCE):
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        """End the join phase: drop dynamic members that did not rejoin, start the next
        generation, and answer every waiting JoinGroup (the leader gets all members)."""
        self.timer.cancel(join_key(group.group_id))
        gone = [m for m in group.not_yet_rejoined() if not m.is_static]
        for member in gone:
            self._forget_member(group, member)
        if gone:
            logger.info("group %s removed dynamic members who did not rejoin: %s",
                     group.group_id, [m.member_id for m in gone])
        if group.is_in(DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Only static members remain and none rejoined: wait for their sessions to end.
            logger.error("group %s could not complete rebalance because no members rejoined", group.group_id)
            self.timer.schedule(join_key(group.group_id), group.rebalance_timeout_ms(),
                                lambda: self._complete_join_if_current(group))
            return
        group.init_next_generation(self.clock_ms())
        if group.is_in(EMPTY):
            logger.info("group %s with generation %d is now empty", group.group_id, group.generation_id)
            try:
                self._append(group, [group_metadata_record(group, {})])
            except AppendFailed as exc:
                # The previous generation on disk has no live members either; nothing to undo.
                logger.warning("failed to write empty metadata for group %s: %s", group.group_id, exc.error.name)
            return
        logger.info("stabilized group %s generation %d (%s) with %d members", group.group_id, group.generation_id,
                 group.protocol_name, group.size)
        for member in list(group.members.values()):
            members = group.current_members_for_leader() if group.is_leader(member.member_id) else []
            group.complete_join(member, join_response(
                member_id=member.member_id, generation_id=group.generation_id,
                protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                leader=group.leader_id, members=members))
            self._reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self._schedule_pending_sync(group)

    def _schedule_pending_sync(self, group: ClassicGroup) -> None:
        generation = group.generation_id
        self.timer.schedule(sync_key(group.group_id), group.rebalance_timeout_ms(),
                            lambda: self._expire_pending_sync(group, generation))

    def _remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self.timer.cancel(sync_key(group.group_id))

    def _expire_pending_sync(self, group: ClassicGroup, generation: int) -> None:
        if not self._current(group) or generation != group.generation_id:
            return
        if group.is_in(COMPLETING_REBALANCE, STABLE) and group.pending_sync_members:
            missing = sorted(group.pending_sync_members)
            for member_id in missing:
                member = group.members.get(member_id)
                if member is not None:
                    self._forget_member(group, member)
            logger.info("group %s removed members who did not send SyncGroup: %s", group.group_id, missing)
            self._prepare_rebalance(group, f"removing {missing} on pending sync request expiration")

    def _reset_and_propagate_assignment_error(self, group: ClassicGroup, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _set_and_propagate_assignment(self, group: ClassicGroup, assignment: dict[str, bytes]) -> None:
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
        self._propagate_assignment(group, ErrorCode.NONE)

    def _propagate_assignment(self, group: ClassicGroup, error: ErrorCode) -> None:
        ok = error == ErrorCode.NONE
        for member in list(group.members.values()):
            response = sync_response(error, member.assignment,
                                     protocol_type=group.protocol_type if ok else None,
                                     protocol_name=group.protocol_name if ok else None)
            if group.complete_sync(member, response):
                # Sessions that ran out while the member waited for the assignment start over.
                self._reschedule_heartbeat(group, member)

    # -- members and sessions -----------------------------------------------------------------------

    def _reschedule_heartbeat(self, group: ClassicGroup, member: GroupMember, timeout_ms: int | None = None) -> None:
        member_id = member.member_id
        if isinstance(group, StreamsGroup):
            self._schedule_streams_session(group, member_id)
            return
        if isinstance(group, ConsumerGroup):
            # A loaded consumer group's member (cluster failover): its session timeout applies.
            self._schedule_consumer_session(group, member_id)
            return
        self.timer.schedule(heartbeat_key(group.group_id, member_id),
                            member.session_timeout_ms if timeout_ms is None else timeout_ms,
                            lambda: self._expire_heartbeat(group, member_id))

    def _expire_heartbeat(self, group: ClassicGroup, member_id: str) -> None:
        if not self._current(group):
            return
        if member_id in group.pending_join_members:
            logger.info("pending member %s of group %s removed after its session timeout", member_id, group.group_id)
            group.remove(member_id)
            if group.is_in(PREPARING_REBALANCE) and group.has_all_members_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        logger.info("member %s of group %s has failed (session timeout), removing it", member_id, group.group_id)
        self._remove_member_and_update_group(group, member, f"removing member {member_id} on heartbeat expiration")

    def _forget_member(self, group: ClassicGroup, member: GroupMember) -> None:
        """Drop a member and its session timer; a JoinGroup or SyncGroup it waits in gets
        UNKNOWN_MEMBER_ID so that a live client starts over."""
        group.complete_join(member, join_response(ErrorCode.UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID))
        group.complete_sync(member, sync_response(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        self.timer.cancel(heartbeat_key(group.group_id, member.member_id))

    def _remove_member_and_update_group(self, group: ClassicGroup, member: GroupMember, reason: str) -> None:
        self._forget_member(group, member)
        if group.is_in(STABLE, COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group, reason)
        elif group.is_in(PREPARING_REBALANCE) and group.has_all_members_joined():
            self._complete_join(group)

    # == SyncGroup ===================================================================================

    async def sync_group(self, *, group_id: str, generation_id: int, member_id: str,
                         group_instance_id: str | None, protocol_type: str | None, protocol_name: str | None,
                         assignments: Iterable[tuple[str, bytes]]) -> dict:
        """Hand in (leader) or wait for (followers) the assignment of the current generation."""
        error = self._validate_group(group_id, allow_empty=False)
        if error is not None:
            return sync_response(error)
        group = self.groups.get(group_id)
        if isinstance(group, StreamsGroup):
            return sync_response(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if isinstance(group, ConsumerGroup):
            return self.classic_sync_to_consumer_group(
                group, generation_id=generation_id, member_id=member_id, group_instance_id=group_instance_id,
                protocol_type=protocol_type, protocol_name=protocol_name)
        if group is None:
            return sync_response(ErrorCode.UNKNOWN_MEMBER_ID)
        error = self._sync_error(group, generation_id, member_id, group_instance_id, protocol_type, protocol_name)
        if error is not None:
            return sync_response(error)
        if group.is_in(EMPTY):
            return sync_response(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_in(PREPARING_REBALANCE):
            return sync_response(ErrorCode.REBALANCE_IN_PROGRESS)
        member = group.members[member_id]
        if group.is_in(STABLE):
            self._remove_pending_sync_member(group, member_id)
            return sync_response(assignment=member.assignment, protocol_type=group.protocol_type,
                                 protocol_name=group.protocol_name)
        # CompletingRebalance: wait for the leader's assignment.
        future = asyncio.get_running_loop().create_future()
        if member.sync_future is not None:
            group.complete_sync(member, sync_response(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_future = future
        self._remove_pending_sync_member(group, member_id)
        if group.is_leader(member_id):
            assignment = {m.member_id: b"" for m in group.members.values()}
            for assigned_member, data in assignments:
                if assigned_member in assignment:
                    assignment[assigned_member] = bytes(data) if data is not None else b""
            logger.info("assignment received from leader %s for group %s generation %d (%d members)",
                     member_id, group_id, group.generation_id, group.size)
            try:
                self._append(group, [group_metadata_record(group, assignment)])
            except AppendFailed as exc:
                error = group_metadata_append_error(exc.error)
                self._reset_and_propagate_assignment_error(group, error)
                self._maybe_prepare_rebalance_or_complete_join(
                    group, f"error {error.name} when storing group assignment during SyncGroup (member {member_id})")
            else:
                self._set_and_propagate_assignment(group, assignment)
                group.transition_to(STABLE, self.clock_ms())
        return await future

    def _sync_error(self, group: ClassicGroup, generation_id: int, member_id: str, group_instance_id: str | None,
                    protocol_type: str | None, protocol_name: str | None) -> ErrorCode | None:
        if group.is_in(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = group.member_error(member_id, group_instance_id)
        if error is not None:
            return ErrorCode[error]
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if protocol_type is not None and protocol_type != group.protocol_type:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if protocol_name is not None and protocol_name != group.protocol_name:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if group.is_in(DEAD, EMPTY, PREPARING_REBALANCE) or not group.pending_sync_members:
            self.timer.cancel(sync_key(group.group_id))

    # == Heartbeat ===================================================================================

    def heartbeat(self, *, group_id: str, generation_id: int, member_id: str,
                  group_instance_id: str | None) -> ErrorCode:
        error = self._validate_group(group_id, allow_empty=False)
        if error is not None:
            return error
        group = self.groups.get(group_id)
        if isinstance(group, StreamsGroup):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if isinstance(group, ConsumerGroup):
            return self.classic_heartbeat_to_consumer_group(group, generation_id=generation_id, member_id=member_id,
                                                            group_instance_id=group_instance_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_in(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        member_error = group.member_error(member_id, group_instance_id)
        if member_error is not None:
            return ErrorCode[member_error]
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_in(EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._reschedule_heartbeat(group, group.members[member_id])
        if group.is_in(PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        # CompletingRebalance: members may heartbeat between their JoinGroup and SyncGroup answers.
        return ErrorCode.NONE

    # == LeaveGroup ==================================================================================

    def leave_group(self, *, group_id: str, members: list[tuple[str, str | None]]
                    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """Remove members, by member id or (admin) group instance id with an empty member id.

        Returns (top-level error, [(member id, group instance id, error)]).
        """
        error = self._validate_group(group_id, allow_empty=False)
        if error is not None:
            return error, []
        group = self.groups.get(group_id)
        if isinstance(group, StreamsGroup):
            return ErrorCode.NONE, [(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in members]
        if isinstance(group, ConsumerGroup):
            return ErrorCode.NONE, self.classic_leave_to_consumer_group(group, members)
        if group is None:
            return ErrorCode.NONE, [(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in members]
        if group.is_in(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        results = []
        for member_id, instance_id in members:
            if member_id == UNKNOWN_MEMBER_ID:
                existing = group.static_member_id(instance_id)
                if existing is not None:
                    self._forget_member(group, group.members[existing])
                    results.append((member_id, instance_id, ErrorCode.NONE))
                else:
                    results.append((member_id, instance_id, ErrorCode.UNKNOWN_MEMBER_ID))
            elif member_id in group.pending_join_members:
                group.remove(member_id)
                self.timer.cancel(heartbeat_key(group_id, member_id))
                results.append((member_id, instance_id, ErrorCode.NONE))
            else:
                member_error = group.member_error(member_id, instance_id)
                if member_error is not None:
                    results.append((member_id, instance_id, ErrorCode[member_error]))
                else:
                    self._forget_member(group, group.members[member_id])
                    results.append((member_id, instance_id, ErrorCode.NONE))
        left = [m for m, _, e in results if e == ErrorCode.NONE]
        if left:
            logger.info("members %s left group %s", left, group_id)
            if group.is_in(STABLE, COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance_or_complete_join(group, f"explicit LeaveGroup request for {left}")
            elif group.is_in(PREPARING_REBALANCE):
                self._maybe_complete_join_phase(group)
        return ErrorCode.NONE, results

    # == OffsetCommit ================================================================================

    def commit_offsets(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                       offsets: list[tuple[str, int, int, int, str | None]], retention_time_ms: int = -1,
                       api_version: int = 8) -> dict[TopicPartition, ErrorCode]:
        """Commit (topic, partition, offset, leader epoch, metadata) for a group; durable when
        this returns. Returns the error per partition."""
        partitions = [(t, p) for t, p, *_ in offsets]
        error = self._validate_group(group_id, allow_empty=True)
        if error is not None:
            return dict.fromkeys(partitions, error)
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                # A member of a generation the coordinator does not know (the group expired, or the
                # member is from another coordinator's era): OffsetCommit v8 and older say so this way,
                # v9+ (KIP-848) with GROUP_ID_NOT_FOUND, as Kafka's OffsetMetadataManager does.
                error = ErrorCode.GROUP_ID_NOT_FOUND if api_version >= 9 else ErrorCode.ILLEGAL_GENERATION
                return dict.fromkeys(partitions, error)
            # A consumer using assign(), or the admin client: a "simple" group that only stores offsets.
            group = ClassicGroup(group_id, self.clock_ms())
            self.groups[group_id] = group
        if isinstance(group, StreamsGroup):
            error = self._streams_offset_commit_error(group, generation_id, member_id, transactional=False)
        elif isinstance(group, ConsumerGroup):
            error = self._consumer_offset_commit_error(group, generation_id, member_id, group_instance_id,
                                                       transactional=False, api_version=api_version,
                                                       partitions=self._partitions_to_validate(offsets))
        else:
            error = self._offset_commit_error(group, generation_id, member_id, group_instance_id, transactional=False)
        if error is not None:
            return dict.fromkeys(partitions, error)
        results = self._store_offsets(group, offsets, retention_time_ms)
        if isinstance(group, (ConsumerGroup, StreamsGroup)):
            return results
        if generation_id >= 0 and group.is_in(STABLE, PREPARING_REBALANCE) and member_id in group.members:
            # A commit keeps a classic member's session alive, as a heartbeat does.
            self._reschedule_heartbeat(group, group.members[member_id])
        return results

    def commit_transactional_offsets(self, *, group_id: str, producer_id: int, producer_epoch: int,
                                     generation_id: int, member_id: str, group_instance_id: str | None,
                                     offsets: list[tuple[str, int, int, int, str | None]]
                                     ) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit: offsets written in the producer's transaction; they count (OffsetFetch
        sees them) once the transaction commits, see `complete_transaction`."""
        partitions = [(t, p) for t, p, *_ in offsets]
        error = self._validate_group(group_id, allow_empty=True)
        if error is not None:
            return dict.fromkeys(partitions, error)
        group = self.groups.get(group_id)
        if group is None:
            group = ClassicGroup(group_id, self.clock_ms())
            self.groups[group_id] = group
        if isinstance(group, StreamsGroup):
            error = self._streams_offset_commit_error(group, generation_id, member_id, transactional=True)
        elif isinstance(group, ConsumerGroup):
            error = self._consumer_offset_commit_error(group, generation_id, member_id, group_instance_id,
                                                       transactional=True, api_version=-1,
                                                       partitions=self._partitions_to_validate(offsets))
        else:
            error = self._offset_commit_error(group, generation_id, member_id, group_instance_id, transactional=True)
        if error is not None:
            return dict.fromkeys(partitions, error)
        return self._store_offsets(group, offsets, -1, producer_id=producer_id, producer_epoch=producer_epoch)

    def _offset_commit_error(self, group: ClassicGroup, generation_id: int, member_id: str,
                             group_instance_id: str | None, *, transactional: bool) -> ErrorCode | None:
        """Kafka's ClassicGroup.validateOffsetCommit."""
        if group.is_in(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_in(EMPTY):
            return None  # the group only stores offsets
        if generation_id >= 0 or member_id or group_instance_id is not None:
            member_error = group.member_error(member_id, group_instance_id)
            if member_error is not None:
                return ErrorCode[member_error]
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif not transactional and not group.is_in(EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and group.is_in(COMPLETING_REBALANCE):
            # The member has its new generation but not yet its assignment.
            return ErrorCode.REBALANCE_IN_PROGRESS
        return None

    def _metadata_too_large(self, metadata: str | None) -> bool:
        max_metadata = int(self._cfg("offset.metadata.max.bytes", OFFSET_METADATA_MAX_BYTES))
        return metadata is not None and len(metadata.encode("utf-8", "surrogatepass")) > max_metadata

    def _partitions_to_validate(self, offsets) -> list[TopicPartition]:
        """The partitions a commit's member epoch is checked against: Kafka answers a partition
        with too large metadata OFFSET_METADATA_TOO_LARGE before validating it."""
        return [(t, p) for t, p, _, _, metadata in offsets if not self._metadata_too_large(metadata)]

    def _topic_id(self, topic: str):
        meta = self.broker.metadata.topic(topic) if self.broker is not None else None
        return meta.topic_id if meta is not None else None

    def _store_offsets(self, group: ClassicGroup, offsets, retention_time_ms: int, *,
                       producer_id: int = -1, producer_epoch: int = -1) -> dict[TopicPartition, ErrorCode]:
        now = self.clock_ms()
        expire = now + retention_time_ms if retention_time_ms is not None and retention_time_ms >= 0 else -1
        results: dict[TopicPartition, ErrorCode] = {}
        accepted: list[tuple[TopicPartition, CommittedOffset]] = []
        for topic, partition, offset, leader_epoch, metadata in offsets:
            if self._metadata_too_large(metadata):
                results[(topic, partition)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            accepted.append(((topic, partition), CommittedOffset(
                offset=offset, leader_epoch=-1 if leader_epoch is None else leader_epoch,
                metadata=metadata or "", commit_timestamp=now, expire_timestamp=expire,
                # Kafka 4.x records an OffsetCommit's topic id, not a TxnOffsetCommit's.
                topic_id=None if producer_id >= 0 else self._topic_id(topic))))
        if not accepted:
            return results
        records = [offset_commit_record(group.group_id, t, p, committed) for (t, p), committed in accepted]
        transactional = producer_id >= 0
        try:
            base_offset = self._append(group, records, producer_id=producer_id, producer_epoch=producer_epoch,
                                       transactional=transactional)
        except AppendFailed as exc:
            error = offset_commit_append_error(exc.error)
            for tp, _ in accepted:
                results[tp] = error
            return results
        pending = group.pending_txn_offsets.setdefault(producer_id, {}) if transactional else None
        for i, (tp, committed) in enumerate(accepted):
            committed.record_offset = base_offset + i
            if pending is not None:
                pending[tp] = committed
            else:
                group.offsets[tp] = committed
            results[tp] = ErrorCode.NONE
        return results

    def complete_transaction(self, producer_id: int, partitions: Iterable[int], committed: bool) -> None:
        """A transaction marker was written to these __consumer_offsets partitions: the producer's
        pending offsets there become committed offsets (commit) or vanish (abort)."""
        wanted = set(partitions)
        for group in list(self.groups.values()):
            if self.partition_for(group.group_id) in wanted:
                self._complete_pending_offsets(group, producer_id, committed)

    def _complete_pending_offsets(self, group: ClassicGroup, producer_id: int, committed: bool) -> None:
        pending = group.pending_txn_offsets.pop(producer_id, None)
        if not pending or not committed:
            return
        for tp, offset in pending.items():
            current = group.offsets.get(tp)
            # A plain commit written after the transaction's offsets wins over them.
            if current is None or current.record_offset < offset.record_offset:
                group.offsets[tp] = offset

    # == OffsetFetch =================================================================================

    def fetch_offsets(self, *, group_id: str, partitions: list[TopicPartition] | None, require_stable: bool = False,
                      member_id: str | None = None, member_epoch: int = -1
                      ) -> tuple[ErrorCode, list[tuple[str, int, int, int, str, ErrorCode]]]:
        """(group error, [(topic, partition, offset, leader epoch, metadata, error)]); partitions
        None means every committed offset of the group."""
        error = self._validate_group(group_id, allow_empty=True)
        if error is not None:
            return error, []
        group = self.groups.get(group_id)
        if group is None:
            if partitions is None:
                return ErrorCode.NONE, []
            return ErrorCode.NONE, [(t, p, -1, -1, "", ErrorCode.NONE) for t, p in partitions]
        if group.is_in(DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        if isinstance(group, ModernGroup):
            error = group.offset_fetch_error(member_id, member_epoch)
            if error is not None:
                return error, []
        if partitions is None:
            partitions = sorted(group.offsets)
        results = []
        for topic, partition in partitions:
            if require_stable and group.has_pending_txn_offset(topic, partition):
                results.append((topic, partition, -1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT))
                continue
            committed = group.offsets.get((topic, partition))
            if committed is None:
                results.append((topic, partition, -1, -1, "", ErrorCode.NONE))
            else:
                results.append((topic, partition, committed.offset, committed.leader_epoch,
                                committed.metadata, ErrorCode.NONE))
        return ErrorCode.NONE, results

    # == DescribeGroups / ListGroups =================================================================

    def describe_group(self, group_id: str, api_version: int = 5) -> dict:
        """A DescribeGroups entry: members' metadata only while Stable; their assignments in every
        state (Kafka's describeNoMetadata keeps the assignment of the last generation)."""
        error = self._validate_group(group_id, allow_empty=True)
        if error is not None:
            return {"error_code": int(error), "group_id": group_id, "group_state": "", "protocol_type": "",
                    "protocol_data": "", "members": []}
        group = self.groups.get(group_id)
        if group is None or isinstance(group, (ConsumerGroup, StreamsGroup)):
            # Not a classic group: Dead, and from v6 (KIP-1043) GROUP_ID_NOT_FOUND with Kafka's message.
            entry = {"error_code": 0, "group_id": group_id, "group_state": str(DEAD), "protocol_type": "",
                     "protocol_data": "", "members": []}
            if api_version >= 6:
                entry["error_code"] = int(ErrorCode.GROUP_ID_NOT_FOUND)
                entry["error_message"] = (f"Group {group_id} not found." if group is None
                                          else f"Group {group_id} is not a classic group.")
            return entry
        stable = group.is_in(STABLE)
        members = [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_metadata": m.metadata(group.protocol_name) if stable else b"",
                "member_assignment": m.assignment,
            }
            for m in group.members.values()
        ]
        return {
            "error_code": 0,
            "group_id": group_id,
            "group_state": str(group.state),
            "protocol_type": group.protocol_type or "",
            "protocol_data": (group.protocol_name or "") if stable else "",
            "members": members,
        }

    def list_groups(self, states_filter: Iterable[str] | None = None, types_filter: Iterable[str] | None = None
                    ) -> tuple[ErrorCode, list[dict]]:
        """(error, [{group_id, protocol_type, group_state, group_type}]); the filters ignore case.
        Group types are Kafka's: "classic" and "consumer" (KIP-848)."""
        if self.offsets_topic is None:
            # Never started: __consumer_offsets does not exist yet (a fresh broker creates it on
            # the first FindCoordinator), so there is no group, as Kafka answers.
            return ErrorCode.NONE, []
        error = self.coordinator_error()
        if error is not None:
            return error, []
        wanted = {s.lower() for s in states_filter} if states_filter else None
        wanted_types = {t.lower() for t in types_filter} if types_filter else None
        listed = []
        for group in self.groups.values():
            if group.is_in(DEAD):
                continue
            if wanted is not None and str(group.state).lower() not in wanted:
                continue
            consumer = isinstance(group, ConsumerGroup)
            streams = isinstance(group, StreamsGroup)
            group_type = "consumer" if consumer else "streams" if streams else "classic"
            if wanted_types is not None and group_type not in wanted_types:
                continue
            listed.append({"group_id": group.group_id,
                           "protocol_type": ("consumer" if consumer else "streams" if streams
                                             else group.protocol_type or ""),
                           "group_state": str(group.state), "group_type": group_type})
        return ErrorCode.NONE, listed

    # == DeleteGroups / OffsetDelete =================================================================

    def delete_groups(self, group_ids: list[str]) -> list[tuple[str, ErrorCode]]:
        results = []
        for group_id in group_ids:
            error = self._validate_group(group_id, allow_empty=True)
            if error is None:
                error = self._delete_group(group_id)
            results.append((group_id, error))
        return results

    def group_tombstones(self, group) -> list:
        """The records deleting an empty group of any kind (its offsets aside)."""
        if isinstance(group, ConsumerGroup):
            return self.consumer_group_tombstones(group)
        if isinstance(group, StreamsGroup):
            return self.streams_group_tombstones(group)
        return [group_tombstone(group.group_id)]

    def _delete_group(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None or group.is_in(DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND
        if not group.is_in(EMPTY):
            return ErrorCode.NON_EMPTY_GROUP
        tombstones = [offset_tombstone(group_id, t, p) for t, p in sorted(group.offsets)]
        for pending in group.pending_txn_offsets.values():
            tombstones.extend(offset_tombstone(group_id, t, p) for t, p in sorted(pending) if (t, p) not in group.offsets)
        tombstones.extend(self.group_tombstones(group))
        try:
            self._append(group, tombstones)
        except AppendFailed as exc:
            return group_metadata_append_error(exc.error)
        self._remove_group(group)
        logger.info("deleted group %s", group_id)
        return ErrorCode.NONE

    def _remove_group(self, group: ClassicGroup) -> None:
        if isinstance(group, (ConsumerGroup, StreamsGroup)):
            group.dead = True
        else:
            group.transition_to(DEAD, self.clock_ms())
        self.groups.pop(group.group_id, None)
        self.timer.cancel(join_key(group.group_id))
        self.timer.cancel(sync_key(group.group_id))

    def delete_offsets(self, group_id: str, partitions: list[TopicPartition]
                       ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """OffsetDelete: remove committed offsets of topics the group does not consume (an empty
        group id is INVALID_GROUP_ID here, as Kafka answers)."""
        error = self._validate_group(group_id, allow_empty=False)
        if error is not None:
            return error, {}
        group = self.groups.get(group_id)
        if group is None or group.is_in(DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        if not group.is_in(EMPTY) and not group.uses_consumer_protocol() and not isinstance(group, StreamsGroup):
            return ErrorCode.NON_EMPTY_GROUP, {}
        results: dict[TopicPartition, ErrorCode] = {}
        doomed = []
        for topic, partition in partitions:
            if group.is_subscribed_to_topic(topic):
                results[(topic, partition)] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                continue
            results[(topic, partition)] = ErrorCode.NONE
            if (topic, partition) in group.offsets:
                doomed.append((topic, partition))
        if doomed:
            try:
                self._append(group, [offset_tombstone(group_id, t, p) for t, p in doomed])
            except AppendFailed as exc:
                return group_metadata_append_error(exc.error), {}
            for tp in doomed:
                group.offsets.pop(tp, None)
        return ErrorCode.NONE, results

    def on_partitions_deleted(self, partitions: list[TopicPartition]) -> int:
        """Kafka's GroupCoordinator.onPartitionsDeleted: the committed offsets of deleted partitions
        go with them (tombstones), so a topic re-created under the same name starts without
        them. Returns how many offsets were deleted."""
        if self.coordinator_error() is not None:
            return 0
        deleted = set(partitions)
        removed = 0
        for group in list(self.groups.values()):
            doomed = sorted(tp for tp in group.offsets if tp in deleted)
            if not doomed:
                continue
            try:
                self._append(group, [offset_tombstone(group.group_id, t, p) for t, p in doomed])
            except AppendFailed as exc:
                logger.warning("could not delete offsets of deleted partitions for group %s: %s",
                            group.group_id, exc.error.name)
                continue
            for tp in doomed:
                group.offsets.pop(tp, None)
            removed += len(doomed)
        return removed

    # == offset expiration ===========================================================================

    async def _expire_offsets_periodically(self) -> None:
        interval = int(self._cfg("offsets.retention.check.interval.ms", 600000)) / 1000.0
        while True:
            await asyncio.sleep(interval)
            try:
                self.expire_offsets()
            except Exception:
                logger.exception("offset expiration failed")

    def expire_offsets(self) -> int:
        """Tombstone offsets past offsets.retention.minutes (Kafka's expiration conditions), and
        delete Empty groups left without offsets. Returns how many offsets expired."""
        if self.coordinator_error() is not None:
            return 0
        now = self.clock_ms()
        retention_ms = int(self._cfg("offsets.retention.minutes", 10080)) * 60_000
        expired_total = 0
        for group in list(self.groups.values()):
            base_of = self._expiration_base(group)
            expired = []
            if base_of is not None:
                for tp, committed in group.offsets.items():
                    if group.has_pending_txn_offset(*tp):
                        continue
                    base = base_of(tp, committed)
                    if base is None:
                        continue
                    if committed.expire_timestamp != -1:
                        gone = now >= committed.expire_timestamp
                    else:
                        gone = now - base >= retention_ms
                    if gone:
                        expired.append(tp)
            # An Empty group left without offsets is deleted (not one a new member is joining).
            delete_group = (group.is_in(EMPTY) and len(group.offsets) == len(expired)
                            and not group.pending_txn_offsets
                            and not getattr(group, "pending_join_members", None))
            if not expired and not delete_group:
                continue
            records = [offset_tombstone(group.group_id, t, p) for t, p in expired]
            if delete_group:
                records.extend(self.group_tombstones(group))
            try:
                self._append(group, records)
            except AppendFailed as exc:
                logger.warning("could not expire offsets of group %s: %s", group.group_id, exc.error.name)
                continue
            for tp in expired:
                group.offsets.pop(tp, None)
            expired_total += len(expired)
            if expired:
                logger.info("expired %d offsets of group %s", len(expired), group.group_id)
            if delete_group:
                self._remove_group(group)
                logger.info("group %s is empty and has no offsets left: deleted", group.group_id)
        return expired_total

    def _expiration_base(self, group: ClassicGroup):
        """Kafka's offsetExpirationCondition: the timestamp retention counts from, per offset,
        or None when this group's offsets do not expire now."""
        if isinstance(group, (ConsumerGroup, StreamsGroup)):
            if group.is_empty():
                return lambda tp, c: c.commit_timestamp
            subscribed = group.subscribed_topic_names()
            return lambda tp, c: None if tp[0] in subscribed else c.commit_timestamp
        if group.protocol_type:
            if group.is_in(EMPTY):
                # Retention counts from when the group became empty.
                state_timestamp = group.state_timestamp
                return lambda tp, c: state_timestamp if state_timestamp >= 0 else c.commit_timestamp
            if group.uses_consumer_protocol() and group.subscribed_topics is not None and group.is_in(STABLE):
                subscribed = group.subscribed_topics
                # Only offsets of topics the group no longer consumes.
                return lambda tp, c: None if tp[0] in subscribed else c.commit_timestamp
            return None
        return lambda tp, c: c.commit_timestamp

    # == persistence =================================================================================

    def _append(self, group: ClassicGroup, records, *, producer_id: int = -1, producer_epoch: int = -1,
                transactional: bool = False) -> int:
        if self.offsets_topic is None:
            raise AppendFailed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return self.offsets_topic.append(self.partition_for(group.group_id), records, now_ms=self.clock_ms(),
                                         producer_id=producer_id, producer_epoch=producer_epoch,
                                         transactional=transactional)

    def _replay_partition(self, partition: int) -> None:
        for header, records in self.offsets_topic.read_batches(partition):
            if header.is_control:
                for record in records:
                    try:
                        _, record_type = decode_control_key(record.key)
                    except InvalidRecord:
                        continue
                    if record_type in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
                        for group in list(self.groups.values()):
                            if self.partition_for(group.group_id) == partition:
                                self._complete_pending_offsets(group, header.producer_id,
                                                               record_type == ControlRecordType.COMMIT)
                continue
            producer_id = header.producer_id if header.is_transactional else None
            for record in records:
                try:
                    consumer_record = decode_consumer_group_record(record.key, record.value)
                    if consumer_record is not None:
                        self._replay_consumer_group_record(*consumer_record)
                        continue
                    streams_record = decode_streams_group_record(record.key, record.value)
                    if streams_record is not None:
                        self._replay_streams_group_record(*streams_record)
                        continue
                    decoded = decode_offsets_record(record.key, record.value)
                except (DecodeError, UnicodeDecodeError, ValueError) as exc:
                    logger.warning("skipping undecodable record at %s-%d offset %d: %s", OFFSETS_TOPIC, partition,
                                header.base_offset + record.offset_delta, exc)
                    continue
                if decoded is None:
                    continue
                if decoded.topic is not None:
                    self._replay_offset(decoded, header.base_offset + record.offset_delta, producer_id)
                else:
                    self._replay_group_metadata(decoded.group_id, decoded.value)

    def _replay_offset(self, decoded, record_offset: int, producer_id: int | None) -> None:
        group = self.groups.get(decoded.group_id)
        if group is None:
            group = ClassicGroup(decoded.group_id, self.clock_ms())
            self.groups[decoded.group_id] = group
        tp = (decoded.topic, decoded.partition)
        value = decoded.value
        if value is None:
            group.offsets.pop(tp, None)
            return
        committed = CommittedOffset(
            offset=value.offset,
            leader_epoch=value.leader_epoch,
            metadata=value.metadata or "",
            commit_timestamp=value.commit_timestamp,
            expire_timestamp=value.expire_timestamp,
            topic_id=value.topic_id if value.topic_id.int else None,
            record_offset=record_offset,
        )
        if producer_id is not None:
            group.pending_txn_offsets.setdefault(producer_id, {})[tp] = committed
        else:
            group.offsets[tp] = committed

    def _replay_group_metadata(self, group_id: str, value) -> None:
        previous = self.groups.get(group_id)
        if value is None:
            if previous is None:
                return
            if previous.has_offsets():
                # Offsets outlive the group's membership: keep them in a group that only stores them.
                group = ClassicGroup(group_id, self.clock_ms())
                group.offsets, group.pending_txn_offsets = previous.offsets, previous.pending_txn_offsets
                self.groups[group_id] = group
            else:
                del self.groups[group_id]
            return
        protocol_type = value.protocol_type or None
        group = ClassicGroup(
            group_id, self.clock_ms(), STABLE if value.members else EMPTY,
            generation_id=value.generation, protocol_type=protocol_type, protocol_name=value.protocol,
            leader_id=value.leader,
            state_timestamp=value.current_state_timestamp,
        )
        for m in value.members:
            rebalance_timeout = m.rebalance_timeout if m.rebalance_timeout > 0 else m.session_timeout
            group.add(GroupMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                client_host=m.client_host, rebalance_timeout_ms=rebalance_timeout,
                session_timeout_ms=m.session_timeout, protocol_type=value.protocol_type,
                protocols=[(value.protocol, bytes(m.subscription))], assignment=bytes(m.assignment)))
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        group.subscribed_topics = group.compute_subscribed_topics()
        if previous is not None:
            group.offsets, group.pending_txn_offsets = previous.offsets, previous.pending_txn_offsets
        self.groups[group_id] = group

    def _on_loaded(self) -> None:
        """Loaded members must heartbeat within their session timeout, or they are removed."""
        for group in self.groups.values():
            if isinstance(group, (ConsumerGroup, StreamsGroup)):
                continue
            for member in group.members.values():
                self._reschedule_heartbeat(group, member)
        self._on_consumer_groups_loaded()
        self._on_streams_groups_loaded()


class _JoinRequest:
    """The JoinGroup fields the state machine uses."""

    __slots__ = ("member_id", "group_instance_id", "protocol_type", "protocols", "session_timeout_ms",
                 "rebalance_timeout_ms", "client_id", "client_host", "require_known_member_id",
                 "supports_skip_assignment", "reason")

    def __init__(self, member_id, group_instance_id, protocol_type, protocols, session_timeout_ms,
                 rebalance_timeout_ms, client_id, client_host, require_known_member_id,
                 supports_skip_assignment, reason) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.client_id = client_id
        self.client_host = client_host
        self.require_known_member_id = require_known_member_id
        self.supports_skip_assignment = supports_skip_assignment
        self.reason = reason


def _resolve(future: asyncio.Future, response: dict) -> None:
    if not future.done():
        future.set_result(response)


__all__ = ["GroupCoordinator", "GroupState", "join_response", "sync_response", "OFFSETS_TOPIC"]
