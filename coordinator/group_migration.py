"""Online migration between the classic and the KIP-848 consumer group protocols in one group.

Users roll their consumers from `group.protocol=classic` to `group.protocol=consumer` (and back)
without stopping them, so for a while one group has members of both kinds (Kafka 4.x,
`group.consumer.migration.policy`, default `bidirectional`):

- upgrade: a ConsumerGroupHeartbeat joining a non-empty classic group whose protocol type is
  "consumer" converts it to a consumer group. Each classic member becomes a consumer group member
  at the classic generation, Stable, holding what its last SyncGroup gave it; its JoinGroup
  protocols and session timeout are kept as its classic member metadata.
- classic members inside a consumer group keep speaking JoinGroup/SyncGroup/Heartbeat/LeaveGroup:
  a JoinGroup is one reconciliation step (the generation is the member epoch, the assignment is
  handed out by the SyncGroup answer), Heartbeat says REBALANCE_IN_PROGRESS when the member must
  join again to make progress (the group epoch moved on, it must revoke, or what it waits for was
  released).
- downgrade: when the last ConsumerGroupHeartbeat member leaves (or is fenced) and only classic
  members remain, the group becomes a classic group again (generation = group epoch, each member
  holding its target assignment) and rebalances.

A conversion writes the new group's records and tombstones the old group's (Kafka's order), in one
append: replaying __consumer_offsets rebuilds the converted group.

`GroupMigration` is a mixin of GroupCoordinator, next to ConsumerGroupProtocol.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from kafka_wire.errors import ErrorCode
from kafka_wire.internal_records import (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    CONSUMER_GROUP_MEMBER_METADATA,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
    encode_consumer_group_key,
)

from .consumer_group import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConversionError,
    ConsumerGroupMember,
    MemberState,
    PartitionOwnedError,
    freeze,
    next_member_assignment,
)
from .classic_protocol import UNKNOWN_MEMBER_ID, heartbeat_key, join_key, join_response, sync_key, sync_response
from .consumer_group_coordinator import RecordWriter, new_member_id
from .modern_group import HeartbeatError
from kafka_wire.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    assigned_partitions,
    parse_subscription,
    protocol_version,
    serialize_assignment,
)
from .group import DEAD, STABLE, ClassicGroup, GroupMember
from .offsets_store import AppendFailed, group_metadata_append_error, group_metadata_record, group_tombstone

logger = logging.getLogger("kafka_wire.coordinator")

MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


def _join_timeout_key(group_id: str, member_id: str) -> tuple:
    return ("consumer-classic-join", group_id, member_id)


def _sync_timeout_key(group_id: str, member_id: str) -> tuple:
    return ("consumer-classic-sync", group_id, member_id)


class GroupMigration:
    """Classic members in consumer groups, and the conversions between the two kinds of group."""

    # == policy ======================================================================================

    def migration_policy(self) -> str:
        policy = str(self._cfg("group.consumer.migration.policy", "bidirectional")).strip().lower()
        return policy if policy in MIGRATION_POLICIES else "bidirectional"

    def _upgrade_enabled(self) -> bool:
        return self.migration_policy() in ("bidirectional", "upgrade")

    def _downgrade_enabled(self) -> bool:
        return self.migration_policy() in ("bidirectional", "downgrade")

    def _consumer_max_size(self) -> int:
        return int(self._consumer_cfg("max.size", 2147483647))

    # == upgrade: classic group -> consumer group ====================================================

    def can_upgrade(self, classic: ClassicGroup) -> bool:
        """Kafka's validateOnlineUpgrade, for a non-empty classic group a ConsumerGroupHeartbeat joins."""
        if not self._upgrade_enabled():
            logger.info("cannot upgrade classic group %s: the online upgrade is disabled", classic.group_id)
            return False
        if not classic.uses_consumer_protocol() or classic.protocol_name is None:
            logger.info("cannot upgrade classic group %s: it does not use the consumer protocol", classic.group_id)
            return False
        if classic.size > self._consumer_max_size():
            logger.info("cannot upgrade classic group %s: more members than group.consumer.max.size", classic.group_id)
            return False
        return True

    def convert_to_consumer_group(self, classic: ClassicGroup) -> tuple[ConsumerGroup, list]:
        """The consumer group a classic group becomes, and the records saying so (the classic
        group's tombstone, then Kafka's createConsumerGroupRecords). Nothing is installed yet."""
        group = ConsumerGroup(classic.group_id, self.clock_ms())
        group.offsets, group.pending_txn_offsets = classic.offsets, classic.pending_txn_offsets
        records = [group_tombstone(classic.group_id)]
        writer = RecordWriter(self, group, records)
        generation = classic.generation_id
        converted = []
        for m in classic.members.values():
            subscription = parse_subscription(m.metadata(classic.protocol_name))
            assignment = self._assignment_by_topic_id(m.assignment)
            if subscription is None or assignment is None:
                raise ConversionError(f"member {m.member_id}: the embedded consumer protocol is malformed")
            converted.append((ConsumerGroupMember(
                m.member_id, instance_id=m.group_instance_id, rack_id=subscription.rack_id,
                client_id=m.client_id, client_host=m.client_host,
                subscribed_topic_names=tuple(sorted(set(subscription.topics))),
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                classic=ClassicMemberMetadata(m.session_timeout_ms, tuple(m.protocols))), assignment))
        try:
            for member, _ in converted:
                writer.member_metadata(member)
            writer.group_epoch(generation)
            for member, assignment in converted:
                writer.target_member(member.member_id, assignment)
            # Timestamp 0, as Kafka's ConsumerGroup.fromClassicGroup: the converted group's first
            # computation does not wait for the assignment interval.
            writer._emit(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, None, {"assignment_epoch": generation,
                                                                           "assignment_timestamp": 0})
            for member, assignment in converted:
                writer.current_assignment(replace(
                    group.members[member.member_id], member_epoch=generation, previous_member_epoch=generation,
                    state=MemberState.STABLE, assigned=assignment, pending_revocation={}, assignment_epochs={}))
        except PartitionOwnedError as exc:
            raise ConversionError(str(exc)) from None
        return group, records

    def install_converted_consumer_group(self, classic: ClassicGroup, group: ConsumerGroup) -> None:
        """Once the conversion's records are written: serve the consumer group. Members waiting in
        JoinGroup/SyncGroup are told REBALANCE_IN_PROGRESS (they rejoin the consumer group)."""

        for member in list(classic.members.values()):
            classic.complete_join(member, join_response(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
            classic.complete_sync(member, sync_response(ErrorCode.REBALANCE_IN_PROGRESS))
            self.timer.cancel(heartbeat_key(classic.group_id, member.member_id))
        for member_id in classic.pending_join_members:
            self.timer.cancel(heartbeat_key(classic.group_id, member_id))
        self.timer.cancel(join_key(classic.group_id))
        self.timer.cancel(sync_key(classic.group_id))
        classic.state = DEAD
        self.groups[group.group_id] = group
        for member_id in group.members:
            self._schedule_consumer_session(group, member_id)
        logger.info("classic group %s upgraded to a consumer group at epoch %d (%d members)", group.group_id,
                 group.group_epoch, len(group.members))

    def _assignment_by_topic_id(self, assignment: bytes):
        """A classic assignment by topic id (topics that no longer exist are dropped); None when
        the bytes do not parse."""
        parsed = assigned_partitions(assignment)
        if parsed is None:
            return None
        result: dict = {}
        for topic, partitions in parsed:
            meta = self._topic_metadata(topic)
            if meta is not None:
                result.setdefault(meta.topic_id, set()).update(partitions)
        return freeze(result)

    def _classic_assignment(self, group: ConsumerGroup, member: ConsumerGroupMember, assignment,
                            version: int) -> bytes:
        topics = []
        for topic_id, partitions in sorted(assignment.items(), key=lambda kv: str(kv[0])):
            name = self._topic_name(topic_id)
            if name is not None:
                topics.append((name, sorted(partitions)))
        return serialize_assignment(topics, version)

    # == downgrade: consumer group -> classic group ==================================================

    def can_downgrade(self, group: ConsumerGroup, leaving: list[str]) -> bool:
        """Kafka's validateOnlineDowngradeWithFencedMembers: the members leaving are the last ones
        using ConsumerGroupHeartbeat, others remain, and the policy and the classic size limit allow it."""
        remaining = [m for m in group.members.values() if m.member_id not in leaving]
        if not remaining or not all(m.uses_classic_protocol for m in remaining):
            return False
        if not self._downgrade_enabled():
            logger.info("cannot downgrade consumer group %s: the online downgrade is disabled", group.group_id)
            return False
        if len(remaining) > int(self._cfg("group.max.size", 2147483647)):
            logger.info("cannot downgrade consumer group %s: more members than group.max.size", group.group_id)
            return False
        return True

    def convert_to_classic_group(self, group: ConsumerGroup, leaving: list[str]) -> tuple[ClassicGroup, list]:
        """The classic group a consumer group becomes when the `leaving` members leave, and the
        records: the consumer group's tombstones, then the classic group's metadata."""
        records = []
        for member_id in group.members:
            records.append((encode_consumer_group_key(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group.group_id,
                                                      member_id), None))
        for member_id in group.target:
            records.append((encode_consumer_group_key(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group.group_id,
                                                      member_id), None))
        for member_id in group.members:
            records.append((encode_consumer_group_key(CONSUMER_GROUP_MEMBER_METADATA, group.group_id,
                                                      member_id), None))
        records.extend(self.consumer_group_tombstones(group))
        classic = ClassicGroup(group.group_id, self.clock_ms(), STABLE, generation_id=group.group_epoch,
                               protocol_type=CONSUMER_PROTOCOL_TYPE)
        classic.offsets, classic.pending_txn_offsets = group.offsets, group.pending_txn_offsets
        for member in group.members.values():
            if member.member_id in leaving:
                continue
            classic.add(GroupMember(
                member_id=member.member_id, group_instance_id=member.instance_id, client_id=member.client_id,
                client_host=member.client_host, rebalance_timeout_ms=member.rebalance_timeout_ms,
                session_timeout_ms=member.classic.session_timeout_ms, protocol_type=CONSUMER_PROTOCOL_TYPE,
                protocols=list(member.classic.protocols)))
        classic.protocol_name = classic.select_protocol()
        classic.subscribed_topics = classic.compute_subscribed_topics()
        assignments = {}
        for member in classic.members.values():
            version = protocol_version(member.metadata(classic.protocol_name))
            member.assignment = self._classic_assignment(group, group.members[member.member_id],
                                                         group.target.get(member.member_id, {}), version)
            assignments[member.member_id] = member.assignment
        records.append(group_metadata_record(classic, assignments))
        return classic, records

    def maybe_downgrade(self, group: ConsumerGroup, leaving: list[str]) -> bool:
        """Downgrade when the `leaving` members leaving allows it; True when the group is now classic
        (the leaving members are gone with the consumer group)."""
        if not self.can_downgrade(group, leaving):
            return False
        try:
            classic, records = self.convert_to_classic_group(group, leaving)
        except ValueError as exc:
            logger.warning("cannot downgrade consumer group %s: %s", group.group_id, exc)
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Cannot downgrade the consumer group {group.group_id}: {exc}.") from None
        self._append(group, records)
        self._install_downgraded_group(group, classic, f"members {leaving} left", rebalance=True)
        return True

    def _can_downgrade_after_replacement(self, group: ConsumerGroup) -> bool:
        """Kafka's validateOnlineDowngradeWithReplacedMember, once the replacement is applied."""
        return (all(m.uses_classic_protocol for m in group.members.values()) and self._downgrade_enabled()
                and len(group.members) <= int(self._cfg("group.max.size", 2147483647)))

    def _install_downgraded_group(self, group: ConsumerGroup, classic: ClassicGroup, why: str, *,
                                  rebalance: bool) -> None:
        """Once the downgrade's records are written: serve the classic group (rebalancing when a
        member left, or a replacing static member subscribes to something else)."""
        for member_id in group.members:
            self._cancel_consumer_timers(group.group_id, member_id)
        group.dead = True
        self.groups[group.group_id] = classic
        for member in classic.members.values():
            self._reschedule_heartbeat(classic, member)
        logger.info("consumer group %s downgraded to a classic group at generation %d (%s)", group.group_id,
                 classic.generation_id, why)
        if rebalance:
            self._prepare_rebalance(classic, f"Downgrade group {group.group_id} from consumer to classic.")

    # == classic requests to a consumer group ========================================================

    def classic_join_to_consumer_group(self, group: ConsumerGroup, request, api_version_requires_id: bool) -> dict:
        """Kafka's classicGroupJoinToConsumerGroup: one JoinGroup is one reconciliation step. Its
        errors carry an empty member id, as Kafka's."""

        member_id = request.member_id
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        if is_unknown:
            member_id = new_member_id()
        if len(group.members) >= self._consumer_max_size() and (is_unknown or member_id not in group.members):
            return join_response(ErrorCode.GROUP_MAX_SIZE_REACHED)
        if not group.supports_classic_protocols(request.protocol_type, {n for n, _ in request.protocols}):
            return join_response(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if is_unknown and request.group_instance_id is None and api_version_requires_id:
            logger.info("dynamic member joins consumer group %s with the classic protocol: asking it to rejoin "
                     "with member id %s", group.group_id, member_id)
            return join_response(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        subscription = parse_subscription(request.protocols[0][1]) if request.protocols else None
        if subscription is None:
            return join_response(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        writer = RecordWriter(self, group, [])
        try:
            replaced = group.static_member(request.group_instance_id) if is_unknown else None
            member = self._classic_member_for_join(group, writer, member_id, request.group_instance_id, is_unknown)
            updated = ConsumerGroupMember(
                member.member_id,
                instance_id=request.group_instance_id if request.group_instance_id is not None else member.instance_id,
                rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
                client_id=request.client_id, client_host=request.client_host,
                subscribed_topic_names=tuple(sorted(set(subscription.topics))),
                subscribed_topic_regex=member.subscribed_topic_regex,
                rebalance_timeout_ms=(request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
                                      else member.rebalance_timeout_ms),
                server_assignor=member.server_assignor,
                classic=ClassicMemberMetadata(request.session_timeout_ms, tuple(request.protocols)))
            # (A classic member keeps the regex it had, none: only its topic names can change.)
            member, bump = self._update_member(group, writer, member, updated, updated.member_id not in group.members)
            owned = set()
            for topic, partitions in subscription.owned_partitions:
                meta = self._topic_metadata(topic)
                if meta is not None:
                    owned.update((meta.topic_id, p) for p in partitions)
            after = next_member_assignment(member, group.assignment_epoch, group.target.get(member.member_id, {}),
                                           group.partition_epoch, owned)
            if not after.same_assignment(member):
                writer.current_assignment(after)
            if replaced is not None and self._can_downgrade_after_replacement(group):
                # The joining static member replaced the last KIP-848 member: the group is classic again.
                member = group.members[updated.member_id]
                classic, records = self.convert_to_classic_group(group, [])
                writer.records.extend(records)
                writer.flush()
                self._install_downgraded_group(group, classic, f"static member {replaced.member_id} replaced",
                                               rebalance=bump)
                return join_response(member_id=member.member_id, generation_id=member.member_epoch,
                                     protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=member.classic.protocol_name)
            writer.flush()
        except ValueError as exc:
            logger.warning("cannot downgrade consumer group %s: %s", group.group_id, exc)
            return join_response(ErrorCode.GROUP_ID_NOT_FOUND)
        except HeartbeatError as exc:
            return join_response(exc.error)
        except AppendFailed as exc:
            return join_response(group_metadata_append_error(exc.error))
        except PartitionOwnedError as exc:
            logger.error("%s", exc)
            return join_response(ErrorCode.UNKNOWN_SERVER_ERROR)
        member = group.members[updated.member_id]
        self.timer.cancel(_join_timeout_key(group.group_id, member.member_id))
        self._schedule_consumer_session(group, member.member_id)
        self._schedule_classic_sync_timeout(group, member.member_id, request.rebalance_timeout_ms)
        logger.info("classic member %s joined consumer group %s at epoch %d", member.member_id, group.group_id,
                 member.member_epoch)
        return join_response(member_id=member.member_id, generation_id=member.member_epoch,
                             protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=member.classic.protocol_name)

    def _classic_member_for_join(self, group: ConsumerGroup, writer: RecordWriter, member_id: str,
                                 instance_id: str | None, is_unknown: bool) -> ConsumerGroupMember:
        """The member a classic JoinGroup is from (Kafka's getOrMaybeSubscribe*ConsumerGroupMember):
        a dynamic one is created when unknown, whatever member id it brings; a static one joining
        without a member id takes over its instance id's place, one with a member id must be it."""
        if instance_id is None:
            return group.members.get(member_id) or ConsumerGroupMember(member_id)
        existing = group.static_member(instance_id)
        if not is_unknown:
            if existing is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Instance id {instance_id} is unknown in group {group.group_id}.")
            if existing.member_id != member_id:
                raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID,
                                     f"Static member {member_id} with instance id {instance_id} is fenced by "
                                     f"member {existing.member_id}.")
            return existing
        if existing is None:
            return ConsumerGroupMember(member_id, instance_id=instance_id)
        # The static member is back under a new member id: it replaces its predecessor, from epoch 0.
        successor = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0,
                            assignment_epochs=dict(existing.assignment_epochs))
        target = group.target.get(existing.member_id, {})
        writer.remove_member(existing.member_id, bump_epoch=False)
        self._cancel_consumer_timers(group.group_id, existing.member_id)
        writer.member_metadata(successor)
        writer.target_member(member_id, target)
        writer.current_assignment(successor)
        return group.members[member_id]

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        """Kafka's validateConsumerGroupMember plus throwIfMemberDoesNotUseClassicProtocol."""
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Member {member_id} is not a member of group {group.group_id}.")
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Member with instance id {instance_id} is not a member of group "
                                     f"{group.group_id}.")
            if member.member_id != member_id:
                raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID,
                                     f"Static member {member_id} with instance id {instance_id} is fenced by "
                                     f"member {member.member_id}.")
        if not member.uses_classic_protocol:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic "
                                                              f"protocol.")
        return member

    def classic_sync_to_consumer_group(self, group: ConsumerGroup, *, generation_id: int, member_id: str,
                                       group_instance_id: str | None, protocol_type: str | None,
                                       protocol_name: str | None) -> dict:
        """Kafka's classicGroupSyncToConsumerGroup: the member's current assignment, in its own
        version of the consumer protocol."""

        try:
            member = self._classic_member(group, member_id, group_instance_id)
        except HeartbeatError as exc:
            return sync_response(exc.error)
        if generation_id != member.member_epoch:
            return sync_response(ErrorCode.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or \
                (protocol_name is not None and protocol_name != member.classic.protocol_name):
            return sync_response(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.group_epoch > member.member_epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
            self._schedule_classic_join_timeout(group, member)
            return sync_response(ErrorCode.REBALANCE_IN_PROGRESS)
        self.timer.cancel(_sync_timeout_key(group.group_id, member.member_id))
        self._schedule_consumer_session(group, member.member_id)
        version = protocol_version(member.classic.protocols[0][1])
        return sync_response(assignment=self._classic_assignment(group, member, member.assigned, version),
                             protocol_type=protocol_type, protocol_name=protocol_name)

    def classic_heartbeat_to_consumer_group(self, group: ConsumerGroup, *, generation_id: int, member_id: str,
                                            group_instance_id: str | None) -> ErrorCode:
        """Kafka's classicGroupHeartbeatToConsumerGroup: REBALANCE_IN_PROGRESS when the member must
        join again (the group epoch moved on, it must revoke, or what it waits for was released)."""
        try:
            member = self._classic_member(group, member_id, group_instance_id)
        except HeartbeatError as exc:
            return exc.error
        if generation_id != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        self._schedule_consumer_session(group, member.member_id)
        if member.member_epoch < group.group_epoch or member.state == MemberState.UNREVOKED_PARTITIONS or (
                member.state == MemberState.UNRELEASED_PARTITIONS
                and not group.waiting_on_unreleased_partition(member)):
            self._schedule_classic_join_timeout(group, member)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def classic_leave_to_consumer_group(self, group: ConsumerGroup, members: list[tuple[str, str | None]]
                                        ) -> list[tuple[str, str | None, ErrorCode]]:
        """Kafka 4.3's classicGroupLeaveToConsumerGroup: each member named leaves (a KIP-848 member
        too), then Kafka's consumerGroupFenceMembers: a downgrade when only classic members remain,
        else their removal and one epoch bump. Answers carry the member ids as the request gave them."""
        results = []
        leaving: list[str] = []
        for member_id, instance_id in members:
            if instance_id is None:
                member = group.members.get(member_id)
                if member is None:
                    results.append((member_id, instance_id, ErrorCode.UNKNOWN_MEMBER_ID))
                    continue
            else:
                member = group.static_member(instance_id)
                if member is None:
                    results.append((member_id, instance_id, ErrorCode.UNKNOWN_MEMBER_ID))
                    continue
                if member_id != UNKNOWN_MEMBER_ID and member.member_id != member_id:
                    results.append((member_id, instance_id, ErrorCode.FENCED_INSTANCE_ID))
                    continue
            results.append((member_id, instance_id, ErrorCode.NONE))
            if member.member_id not in leaving:
                leaving.append(member.member_id)
        if not leaving:
            return results
        try:
            if self.maybe_downgrade(group, leaving):
                return results
            writer = RecordWriter(self, group, [])
            for member_id in leaving:
                writer.remove_member(member_id, bump_epoch=False)
            writer.subscription_metadata_changed()
            writer.group_epoch(group.group_epoch + 1)
            writer.flush()
        except (AppendFailed, HeartbeatError) as exc:
            error = group_metadata_append_error(exc.error) if isinstance(exc, AppendFailed) else exc.error
            return [(m, i, error if e == ErrorCode.NONE else e) for m, i, e in results]
        for member_id in leaving:
            self._cancel_consumer_timers(group.group_id, member_id)
        logger.info("members %s left consumer group %s (LeaveGroup)", leaving, group.group_id)
        return results

    # == timers of classic members ===================================================================

    def _schedule_classic_join_timeout(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        key = _join_timeout_key(group.group_id, member.member_id)
        if not self.timer.is_scheduled(key):
            self.timer.schedule(key, max(member.rebalance_timeout_ms, 0), lambda: self._fence_consumer_member(
                group, member.member_id, "the classic member failed to join within the rebalance timeout"))

    def _schedule_classic_sync_timeout(self, group: ConsumerGroup, member_id: str, rebalance_timeout_ms: int) -> None:
        self.timer.schedule(_sync_timeout_key(group.group_id, member_id), max(rebalance_timeout_ms, 0),
                            lambda: self._fence_consumer_member(group, member_id,
                                                                "the classic member failed to sync within timeout"))

    def _cancel_classic_timers(self, group_id: str, member_id: str) -> None:
        self.timer.cancel(_join_timeout_key(group_id, member_id))
        self.timer.cancel(_sync_timeout_key(group_id, member_id))


__all__ = ["GroupMigration", "ConversionError", "MIGRATION_POLICIES"]
