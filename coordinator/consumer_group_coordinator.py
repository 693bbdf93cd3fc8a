"""The KIP-848 consumer group protocol of the group coordinator: ConsumerGroupHeartbeat and ConsumerGroupDescribe.

Kafka 4.x consumers with `group.protocol=consumer` heartbeat with their member epoch; the
coordinator keeps each group's epoch, computes the target assignment with a server-side assignor
(`uniform` or `range`, see coordinator/assignors.py) and answers each member with its next step
towards it (coordinator/consumer_group.py). As Kafka 4.3 (KIP-1263), the target assignment is
computed at most once per consumer.assignment.interval.ms (the group's config, else the broker's
group.consumer.assignment.interval.ms, 1 s; 0: at every change): a member joining meanwhile gets the
last target assignment's epoch and no partitions, and the next heartbeat after the interval
computes it. Every change is a record of __consumer_offsets with
Kafka's schemas (key versions 3-8), appended before the answer; the same records, replayed, rebuild
the groups when the coordinator loads.

`ConsumerGroupProtocol` is a mixin of GroupCoordinator: it shares its group map (a group id is
either a classic or a consumer group), timers, configuration and log. Member timers, epoch fencing
and the group's base are what streams groups use too (coordinator/modern_group.py).
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import replace

from kafka_wire.errors import ErrorCode
from kafka_wire.internal_records import (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT as CURRENT_ASSIGNMENT,
)
from kafka_wire.internal_records import (
    CONSUMER_GROUP_MEMBER_METADATA as MEMBER_METADATA,
)
from kafka_wire.internal_records import (
    CONSUMER_GROUP_METADATA as GROUP_METADATA,
)
from kafka_wire.internal_records import (
    CONSUMER_GROUP_PARTITION_METADATA as PARTITION_METADATA,
)
from kafka_wire.internal_records import (
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER as TARGET_MEMBER,
)
from kafka_wire.internal_records import (
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA as TARGET_METADATA,
)
from kafka_wire.internal_records import (
    decode_consumer_group_record,
    encode_consumer_group_key,
    encode_consumer_group_value,
)

from . import assignors
from .metadata_hash import group_hash, topic_hash
from .consumer_group import (
    CONSUMER_GROUP_TYPE,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    ConversionError,
    MemberState,
    PartitionOwnedError,
    TopicMetadata,
    described_assignment,
    freeze,
    next_member_assignment,
    partitions_of,
)
from .modern_group import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    HeartbeatError,
    check_member_epoch,
    revocation_key,
)
from .offsets_store import AppendFailed, group_metadata_append_error

logger = logging.getLogger("kafka_wire.coordinator")

# ConsumerGroupMember's MemberType in ConsumerGroupDescribe v1 (KIP-1099).
MEMBER_TYPE_CLASSIC = 0
MEMBER_TYPE_CONSUMER = 1


def _topic_partitions(assignment) -> list[dict]:
    return [{"topic_id": topic, "partitions": sorted(parts)}
            for topic, parts in sorted(assignment.items(), key=lambda kv: str(kv[0]))]


def _from_topic_partitions(items) -> dict:
    return freeze({item.topic_id: item.partitions for item in items or []})


def _topic_partitions_with_epochs(assignment, member: ConsumerGroupMember) -> list[dict]:
    """ConsumerGroupCurrentMemberAssignmentValue's TopicPartitions: each partition's assignment epoch
    alongside, in the same order."""
    topics = _topic_partitions(assignment)
    for topic in topics:
        topic["assignment_epochs"] = [member.assignment_epoch(topic["topic_id"], p) for p in topic["partitions"]]
    return topics


def _assignment_epochs_of(items) -> dict:
    """The assignment epochs a record carries; a topic without them (or with a list of another
    length, which Kafka logs and ignores) gets the member epoch from put_member_assignment."""
    epochs = {}
    for item in items or []:
        if item.assignment_epochs is not None and len(item.assignment_epochs) == len(item.partitions):
            epochs.update({(item.topic_id, p): e for p, e in zip(item.partitions, item.assignment_epochs)})
    return epochs


class ConsumerGroupProtocol:
    """ConsumerGroupHeartbeat and ConsumerGroupDescribe over the coordinator's groups."""

    # == configuration ===============================================================================

    def _consumer_cfg(self, name: str, default):
        return self._cfg(f"group.consumer.{name}", default)

    def consumer_assignors(self) -> list[str]:
        configured = self._consumer_cfg("assignors", ["uniform", "range"])
        if isinstance(configured, str):
            configured = [c.strip() for c in configured.split(",") if c.strip()]
        return [assignors.assignor_name(name) for name in configured] or [assignors.UNIFORM]

    def _group_cfg(self, group_id: str, name: str, default):
        """A group config (consumer.session.timeout.ms, ...): the group's own when the broker keeps
        group configs (set with IncrementalAlterConfigs on the group), else the broker's
        group.<name>."""
        lookup = getattr(self.broker, "group_config", None)
        return lookup(group_id, name) if lookup is not None else self._cfg(f"group.{name}", default)

    def _session_timeout_ms(self, group_id: str) -> int:
        return int(self._group_cfg(group_id, "consumer.session.timeout.ms", 45000))

    def _heartbeat_interval_ms(self, group_id: str) -> int:
        return int(self._group_cfg(group_id, "consumer.heartbeat.interval.ms", 5000))

    def _assignment_interval_ms(self, group_id: str) -> int:
        return int(self._group_cfg(group_id, "consumer.assignment.interval.ms", 1000))

    # == ConsumerGroupHeartbeat ======================================================================

    def consumer_group_heartbeat(self, *, api_version: int, group_id: str, member_id: str, member_epoch: int,
                                 instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int,
                                 subscribed_topic_names: list[str] | None, subscribed_topic_regex: str | None,
                                 server_assignor: str | None, owned_partitions, client_id: str,
                                 client_host: str) -> dict:
        """One heartbeat; the response body (error code and message on failure)."""
        try:
            self._validate_heartbeat(api_version, group_id, member_id, member_epoch, instance_id, rack_id,
                                     rebalance_timeout_ms, subscribed_topic_names, subscribed_topic_regex,
                                     server_assignor, owned_partitions)
            error = self._validate_group(group_id, allow_empty=False)  # loading, or not our partition
            if error is not None:
                raise HeartbeatError(error)
            if member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._consumer_group_leave(group_id, member_id, member_epoch, instance_id)
            owned = None if owned_partitions is None else {
                (item.topic_id, p) for item in owned_partitions for p in item.partitions}
            return self._consumer_group_heartbeat(
                group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                subscribed_topic_names, subscribed_topic_regex, server_assignor, owned, client_id, client_host)
        except HeartbeatError as exc:
            return {"throttle_time_ms": 0, "error_code": int(exc.error), "error_message": exc.message,
                    "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}

    def _validate_heartbeat(self, api_version, group_id, member_id, member_epoch, instance_id, rack_id,
                            rebalance_timeout_ms, subscribed_topic_names, subscribed_topic_regex,
                            server_assignor, owned_partitions) -> None:
        """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid."""
        def invalid(message: str) -> HeartbeatError:
            return HeartbeatError(ErrorCode.INVALID_REQUEST, message)

        if not group_id:
            raise invalid("GroupId can't be empty.")
        if api_version >= 1 and not member_id:
            raise invalid("MemberId can't be empty.")
        if instance_id is not None and not instance_id:
            raise invalid("InstanceId can't be empty.")
        if rack_id is not None and not rack_id:
            raise invalid("RackId can't be empty.")
        if member_epoch > 0 or member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if not member_id:
                raise invalid("MemberId can't be empty.")
        elif member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if owned_partitions is None or len(owned_partitions) != 0:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if subscribed_topic_names is None and subscribed_topic_regex is None:
                raise invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if instance_id is None:
                raise invalid("InstanceId can't be null.")
        else:
            raise invalid(f"MemberEpoch is invalid: {member_epoch}.")
        if subscribed_topic_regex:
            try:
                re.compile(subscribed_topic_regex)
            except re.error as exc:
                raise HeartbeatError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                                     f"SubscribedTopicRegex {subscribed_topic_regex} is not a valid regular "
                                     f"expression: {exc}.") from None
        if server_assignor is not None:
            supported = self.consumer_assignors()
            if assignors.assignor_name(server_assignor) not in supported:
                raise HeartbeatError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                                     f"ServerAssignor {server_assignor} is not supported. "
                                     f"Supported assignors: {', '.join(supported)}.")

    def _consumer_group_or_error(self, group_id: str, *, create: bool) -> tuple[ConsumerGroup, list]:
        """The consumer group, created (replacing an empty classic group) when `create`; plus the
        records that creating it needs. A new group is served once its first records are written."""
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            return group, []
        if getattr(group, "group_type", None) == "streams":
            # Kafka converts only between the classic and the consumer protocol.
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if group is None and not create:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if group is not None and (not create or group.members or group.pending_join_members):
            # A non-empty classic group is upgraded online when it allows it (group_migration.py).
            if create and group.members and self.can_upgrade(group):
                try:
                    return self.convert_to_consumer_group(group)
                except ConversionError as exc:
                    logger.warning("cannot upgrade classic group %s: %s", group_id, exc)
                    raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                                         f"Cannot upgrade classic group {group_id} to consumer group because "
                                         f"the embedded consumer protocol is malformed.") from None
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        consumer_group = ConsumerGroup(group_id, self.clock_ms())
        records = [] if group is None else self._take_over_classic(group, consumer_group)
        return consumer_group, records

    def _update_member(self, group, writer: RecordWriter, member, updated, is_new: bool):
        """Writes a member's new metadata (a ConsumerGroupHeartbeat's, or a classic member's JoinGroup
        inside a consumer group): a new member or a changed subscription bumps the group epoch, and so
        does a change of the subscribed topics' metadata; a group epoch ahead of the assignment's
        computes the target assignment, once the assignment interval since the last one has passed.
        Returns the member as the group now holds it, and whether the
        group epoch was bumped."""
        bump = False
        if is_new or not updated.same_metadata(member):
            writer.member_metadata(updated)
            if is_new or updated.subscribed_topic_names != member.subscribed_topic_names \
                    or updated.subscribed_topic_regex != member.subscribed_topic_regex:
                bump = True
        self._resolve_regexes(group)
        if writer.subscription_metadata_changed():
            bump = True
        if bump:
            writer.group_epoch(group.group_epoch + 1)
        # As Kafka 4.3 (KIP-1263): at most one computation per consumer.assignment.interval.ms; until
        # then the members go on towards the last target assignment, at its epoch.
        if group.group_epoch > group.assignment_epoch and \
                group.may_compute_assignment(self._assignment_interval_ms(group.group_id), self.clock_ms()):
            writer.target_assignment()
        return group.members[updated.member_id], bump

    def _consumer_group_heartbeat(self, group_id, member_id, member_epoch, instance_id, rack_id,
                                  rebalance_timeout_ms, subscribed_topic_names, subscribed_topic_regex,
                                  server_assignor, owned, client_id, client_host) -> dict:
        joining = member_epoch == JOIN_GROUP_MEMBER_EPOCH
        group, records = self._consumer_group_or_error(group_id, create=joining)
        writer = RecordWriter(self, group, records)
        try:
            member = self._member_for_heartbeat(group, writer, member_id, member_epoch, instance_id, owned)
            is_new = member.member_id not in group.members
            if is_new and len(group.members) >= int(self._consumer_cfg("max.size", 2147483647)):
                raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                     f"The consumer group has reached its maximum capacity of "
                                     f"{self._consumer_cfg('max.size', 2147483647)} members.")
            updated = ConsumerGroupMember(
                member.member_id,
                instance_id=instance_id if instance_id is not None else member.instance_id,
                rack_id=rack_id if rack_id is not None else member.rack_id,
                client_id=client_id,
                client_host=client_host,
                subscribed_topic_names=(tuple(sorted(set(subscribed_topic_names)))
                                        if subscribed_topic_names is not None else member.subscribed_topic_names),
                # An empty regex means "no regex any more" (the consumer went back to topic names).
                subscribed_topic_regex=((subscribed_topic_regex or None) if subscribed_topic_regex is not None
                                        else member.subscribed_topic_regex),
                rebalance_timeout_ms=(rebalance_timeout_ms if rebalance_timeout_ms != -1
                                      else member.rebalance_timeout_ms),
                server_assignor=(assignors.assignor_name(server_assignor) if server_assignor is not None
                                 else member.server_assignor),
            )
            member, _ = self._update_member(group, writer, member, updated, is_new)
            # Applying records updates members in place: keep what the member had.
            before = replace(member)
            full_request = (owned is not None and rebalance_timeout_ms != -1
                            and (subscribed_topic_names is not None or subscribed_topic_regex is not None))
            if (not member.is_reconciled_to(group.assignment_epoch) or owned is not None):
                after = next_member_assignment(member, group.assignment_epoch,
                                               group.target.get(member.member_id, {}),
                                               group.partition_epoch, owned)
                if not after.same_assignment(member):
                    writer.current_assignment(after)
            writer.flush()
        except AppendFailed as exc:
            raise HeartbeatError(group_metadata_append_error(exc.error)) from None
        except PartitionOwnedError as exc:
            logger.error("%s", exc)
            raise HeartbeatError(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)) from None
        if self.groups.get(group_id) is not group:
            # The new group (or the classic group it replaces) is now written: serve it.
            previous = self.groups.get(group_id)
            if previous is not None and previous.members:
                self.install_converted_consumer_group(previous, group)
            else:
                self.timer.cancel(("join", group_id))
                self.timer.cancel(("sync", group_id))
                self.groups[group_id] = group
                logger.info("consumer group %s created by member %s", group_id, before.member_id)
        member = group.members[before.member_id]
        self._schedule_consumer_session(group, member.member_id)
        self._maybe_schedule_revocation_timeout(group, member)
        response = {
            "throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": member.member_id,
            "member_epoch": member.member_epoch,
            "heartbeat_interval_ms": self._heartbeat_interval_ms(group.group_id),
            "assignment": None,
        }
        if joining or full_request or member.assigned != before.assigned or is_new:
            response["assignment"] = {"topic_partitions": _topic_partitions(member.assigned)}
        return response

    def _member_for_heartbeat(self, group: ConsumerGroup, writer: RecordWriter, member_id: str, member_epoch: int,
                              instance_id: str | None, owned) -> ConsumerGroupMember:
        """The member the heartbeat is from (a new one when it joins), after Kafka's epoch checks."""
        if instance_id is None:
            member = group.members.get(member_id) if member_id else None
            if member is None:
                if member_epoch != JOIN_GROUP_MEMBER_EPOCH:
                    raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                         f"Member {member_id} is not a member of group {group.group_id}.")
                return ConsumerGroupMember(member_id or new_member_id())
            _check_member_epoch(member, member_epoch, owned)
            return member
        existing = group.static_member(instance_id)
        if member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if existing is None:
                if member_id and member_id in group.members:
                    _check_member_epoch(group.members[member_id], member_epoch, owned)
                    return group.members[member_id]
                return ConsumerGroupMember(member_id or new_member_id(), instance_id=instance_id)
            if existing.member_id == member_id:
                _check_member_epoch(existing, member_epoch, owned)
                return existing
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise HeartbeatError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                     f"Static member {member_id or '<new>'} with instance id {instance_id} "
                                     f"cannot join the group because the instance id is owned by "
                                     f"{existing.member_id} member.")
            # The static member is back under a new member id: it takes over its predecessor's
            # place, epoch and assignment.
            new_id = member_id or new_member_id()
            successor = ConsumerGroupMember(
                new_id, instance_id=instance_id, rack_id=existing.rack_id, client_id=existing.client_id,
                client_host=existing.client_host, subscribed_topic_names=existing.subscribed_topic_names,
                rebalance_timeout_ms=existing.rebalance_timeout_ms, server_assignor=existing.server_assignor,
                member_epoch=existing.previous_member_epoch, previous_member_epoch=existing.previous_member_epoch,
                state=existing.state, assigned=existing.assigned, pending_revocation=existing.pending_revocation,
                assignment_epochs=dict(existing.assignment_epochs))
            target = group.target.get(existing.member_id, {})
            writer.remove_member(existing.member_id, bump_epoch=False)
            self._cancel_consumer_timers(group.group_id, existing.member_id)
            writer.member_metadata(successor)
            writer.target_member(new_id, target)
            writer.current_assignment(successor)
            return group.members[new_id]
        if existing is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Instance id {instance_id} is unknown in group {group.group_id}.")
        if existing.member_id != member_id:
            raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID,
                                 f"Static member {member_id} with instance id {instance_id} is fenced by "
                                 f"member {existing.member_id}.")
        _check_member_epoch(existing, member_epoch, owned)
        return existing

    def _consumer_group_leave(self, group_id: str, member_id: str, member_epoch: int, instance_id: str | None) -> dict:
        group = self.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Member {member_id} is not a member of group {group_id}.")
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Instance id {instance_id} is unknown in group {group_id}.")
            if member.member_id != member_id:
                raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID,
                                     f"Static member {member_id} with instance id {instance_id} is fenced by "
                                     f"member {member.member_id}.")
        writer = RecordWriter(self, group, [])
        try:
            if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                # A static member leaving for a while keeps its partitions until its session expires.
                # Their assignment epochs go to 0, as Kafka 4.3 does: the member coming back under a new
                # member id holds them from epoch 0.
                reset = {tp: 0 if tp in partitions_of(member.assigned) else epoch
                         for tp, epoch in member.assignment_epochs.items()}
                writer.current_assignment(replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                                  previous_member_epoch=member.member_epoch
                                                  if member.member_epoch >= 0 else member.previous_member_epoch,
                                                  assignment_epochs=reset))
                writer.flush()
                self.timer.cancel(revocation_key(CONSUMER_GROUP_TYPE, group_id, member.member_id))
                logger.info("static member %s (instance %s) of consumer group %s left temporarily",
                         member.member_id, instance_id, group_id)
            elif self.maybe_downgrade(group, [member.member_id]):
                logger.info("member %s left consumer group %s, now a classic group", member.member_id, group_id)
            else:
                writer.remove_member(member.member_id)
                writer.flush()
                self._cancel_consumer_timers(group_id, member.member_id)
                logger.info("member %s left consumer group %s", member.member_id, group_id)
        except AppendFailed as exc:
            raise HeartbeatError(group_metadata_append_error(exc.error)) from None
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": member.member_id,
                "member_epoch": member_epoch, "heartbeat_interval_ms": 0, "assignment": None}

    # == timers ======================================================================================

    def _schedule_consumer_session(self, group: ConsumerGroup, member_id: str) -> None:
        member = group.members.get(member_id)
        # A classic member keeps the session timeout of its JoinGroup.
        timeout = (member.classic.session_timeout_ms if member is not None and member.classic is not None
                   else self._session_timeout_ms(group.group_id))
        self._schedule_member_session(group, member_id, timeout, self._fence_consumer_member)

    def _maybe_schedule_revocation_timeout(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        # Classic members have their join and sync timeouts instead (group_migration.py).
        unrevoked = MemberState.UNREVOKED_PARTITIONS
        self._maybe_schedule_member_revocation(
            group, member, revoking=member.state == unrevoked and not member.uses_classic_protocol,
            unrevoked_state=unrevoked, fallback_timeout_ms=self._session_timeout_ms(group.group_id),
            what="partitions", fence=self._fence_consumer_member)

    def _cancel_consumer_timers(self, group_id: str, member_id: str) -> None:
        self._cancel_member_timers(CONSUMER_GROUP_TYPE, group_id, member_id)
        self._cancel_classic_timers(group_id, member_id)

    def _fence_consumer_member(self, group: ConsumerGroup, member_id: str, reason: str) -> None:
        def remove() -> str | None:
            if self.maybe_downgrade(group, [member_id]):
                return "now a classic group"
            writer = RecordWriter(self, group, [])
            writer.remove_member(member_id)
            writer.flush()
            return None

        self._fence_member(group, member_id, reason, remove,
                           lambda: self._cancel_consumer_timers(group.group_id, member_id))

    def _on_consumer_groups_loaded(self) -> None:
        """Loaded members must heartbeat within the session timeout, or they are removed."""
        for group in list(self.groups.values()):
            if isinstance(group, ConsumerGroup):
                self._resolve_regexes(group)
                for member_id in list(group.members):
                    self._schedule_consumer_session(group, member_id)

    # == ConsumerGroupDescribe =======================================================================

    def consumer_group_describe(self, group_id: str) -> dict:
        """A ConsumerGroupDescribe entry (without authorized operations)."""
        entry = {"error_code": 0, "error_message": None, "group_id": group_id, "group_state": "",
                 "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": []}
        error = self._validate_group(group_id, allow_empty=False)
        if error is not None:
            entry["error_code"] = int(error)
            return entry
        group = self.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            entry["error_code"] = int(ErrorCode.GROUP_ID_NOT_FOUND)
            entry["error_message"] = (f"Group {group_id} not found." if group is None
                                      else f"Group {group_id} is not a consumer group.")
            return entry

        entry.update({
            "group_state": group.state,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "assignor_name": group.preferred_assignor(self.consumer_assignors()),
            "members": [{
                "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
                # Kafka 4.3 describes a member without a regex with an empty one, not null.
                "subscribed_topic_regex": m.subscribed_topic_regex or "",
                "assignment": described_assignment(m.assigned, self._topic_name),
                "target_assignment": described_assignment(group.target.get(m.member_id, {}), self._topic_name),
                "member_type": MEMBER_TYPE_CLASSIC if m.uses_classic_protocol else MEMBER_TYPE_CONSUMER,
            } for m in group.members.values()],
        })
        return entry

    # == offsets of consumer groups, and classic requests meeting them ================================

    def _consumer_offset_commit_error(self, group: ConsumerGroup, member_epoch: int, member_id: str,
                                      instance_id: str | None, *, transactional: bool, api_version: int,
                                      partitions=()) -> ErrorCode | None:
        """Kafka's ConsumerGroup.validateOffsetCommit and its per-partition validator: one partition
        (topic name, partition) the member epoch may not commit refuses the whole request."""
        if member_epoch < 0 and group.is_empty():
            return None  # the admin client, or a consumer using assign()
        if transactional and member_epoch == -1 and not member_id and instance_id is None:
            return None
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and api_version < 9 and not member.uses_classic_protocol:
            # Members of consumer groups commit with OffsetCommit v9+ (their member epoch); classic
            # members with any version (their generation is their member epoch).
            return ErrorCode.UNSUPPORTED_VERSION
        topic_ids = {}
        for topic, _ in partitions:
            if topic not in topic_ids:
                meta = self._topic_metadata(topic)
                topic_ids[topic] = None if meta is None else meta.topic_id
        if member.uses_classic_protocol:
            # Kafka's validateMemberEpoch for a classic member: exactly its epoch, else ILLEGAL_GENERATION.
            return None if member_epoch == member.member_epoch else ErrorCode.ILLEGAL_GENERATION
        if group.refuses_commit(member, member_epoch, [(topic_ids[t], p) for t, p in partitions]):
            # TxnOffsetCommit has no STALE_MEMBER_EPOCH: Kafka answers ILLEGAL_GENERATION there.
            return ErrorCode.ILLEGAL_GENERATION if transactional else ErrorCode.STALE_MEMBER_EPOCH
        return None

    def _classic_group_replacing(self, group: ConsumerGroup):
        """A classic member joins an empty consumer (or streams) group with JoinGroup: it becomes a classic group
        (its offsets stay); None when the tombstones cannot be written. (A non-empty consumer group
        takes classic members in: group_migration.py.)"""
        from .group import ClassicGroup

        if not group.is_empty():
            return None
        tombstones = self.group_tombstones(group)
        try:
            self._append(group, tombstones)
        except AppendFailed:
            return None
        classic = ClassicGroup(group.group_id, self.clock_ms())
        classic.offsets, classic.pending_txn_offsets = group.offsets, group.pending_txn_offsets
        group.dead = True
        self.groups[group.group_id] = classic
        return classic

    def _resolve_regexes(self, group: ConsumerGroup) -> None:
        """Match the members' regular expressions against every topic, at every heartbeat, so that
        new topics are picked up at once; what changes the subscription metadata then bumps the
        group epoch. Internal topics are matched too, as Kafka's GroupMetadataManager matches its
        whole topics image (franz-go's Test848RegexBrokerResolves consumes __consumer_offsets so)."""
        regexes = group.subscribed_regexes()
        if not regexes:
            group.resolved_regexes = {}
            return
        broker = self._broker()
        names = [] if broker is None else list(broker.metadata.topics)
        resolved = {}
        for regex in regexes:
            try:
                pattern = re.compile(regex)
            except re.error:
                resolved[regex] = frozenset()
                continue
            resolved[regex] = frozenset(n for n in names if pattern.fullmatch(n))
        group.resolved_regexes = resolved

    # == topics ======================================================================================

    def _broker(self):
        """The broker whose topics the groups subscribe to (GroupCoordinator.attach); None before."""
        return getattr(self, "broker", None)

    def _topic_metadata(self, name: str):
        broker = self._broker()
        return None if broker is None else broker.metadata.topic(name)

    def _partition_racks(self, name: str, partitions: int) -> list[list[str]]:
        """The racks of each partition's replicas, as Kafka's metadata hash takes them: this broker's
        broker.rack for its own replicas (others' racks are not known here: none)."""
        broker = self._broker()
        rack = None if broker is None else broker.config["broker.rack"]
        if rack is None:
            return [[] for _ in range(partitions)]
        racks = []
        for partition in range(partitions):
            state = broker.metadata.partition_state(name, partition)
            replicas = state.replicas if state is not None else [broker.node_id]
            racks.append([rack for replica in replicas if replica == broker.node_id])
        return racks

    def _topic_name(self, topic_id) -> str | None:
        broker = self._broker()
        meta = None if broker is None else broker.metadata.topic_by_id(topic_id)
        return None if meta is None else meta.name

    # == replay ======================================================================================

    def _replay_consumer_group_record(self, record_type: int, group_id: str, member_id: str | None, value) -> None:
        group = self._group_for_replay(group_id, ConsumerGroup, value)
        if group is None:
            return
        try:
            apply_consumer_group_record(group, record_type, member_id, value, strict=False)
        except PartitionOwnedError as exc:
            logger.warning("replaying %s: %s", group.group_id, exc)
        if record_type == GROUP_METADATA and value is None:
            self._drop_modern_group(group)

    def consumer_group_tombstones(self, group: ConsumerGroup) -> list:
        """The records deleting an empty consumer group (Kafka's order: target assignment metadata,
        subscription metadata, group metadata)."""
        return [(encode_consumer_group_key(t, group.group_id), None)
                for t in (TARGET_METADATA, PARTITION_METADATA, GROUP_METADATA)]


def apply_consumer_group_record(group: ConsumerGroup, record_type: int, member_id: str | None, value, *,
                                strict: bool = True) -> None:
    """Apply one record to the group: what both the live path and the replay do. Replaying
    (strict=False) takes a partition from a previous owner rather than refusing."""
    if record_type == GROUP_METADATA:
        if value is None:
            group.dead = True
        else:
            group.group_epoch = value.epoch
            group.metadata_hash = value.metadata_hash
    elif record_type == PARTITION_METADATA:
        # Only in logs written before the metadata hash: what it says is computed again from the topics.
        group.legacy_partition_metadata = value is not None
    elif record_type == MEMBER_METADATA:
        if value is None:
            group.remove_member(member_id)
            return
        group.put_member_metadata(ConsumerGroupMember(
            member_id, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host, subscribed_topic_names=tuple(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex or None,  # Kafka writes "" for none
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor,
            classic=None if value.classic_member_metadata is None else ClassicMemberMetadata(
                value.classic_member_metadata.session_timeout_ms,
                tuple((p.name, bytes(p.metadata)) for p in value.classic_member_metadata.supported_protocols))))
    elif record_type == TARGET_METADATA:
        group.assignment_epoch = -1 if value is None else value.assignment_epoch
        group.assignment_timestamp = 0 if value is None else value.assignment_timestamp
    elif record_type == TARGET_MEMBER:
        if value is None:
            group.target.pop(member_id, None)
        else:
            group.target[member_id] = _from_topic_partitions(value.topic_partitions)
    elif record_type == CURRENT_ASSIGNMENT:
        if value is None:
            group.clear_member_assignment(member_id)
        else:
            state = value.state if value.state in MemberState._value2member_map_ else MemberState.UNKNOWN
            group.put_member_assignment(member_id, value.member_epoch, value.previous_member_epoch,
                                        MemberState(state), _from_topic_partitions(value.assigned_partitions),
                                        _from_topic_partitions(value.partitions_pending_revocation),
                                        {**_assignment_epochs_of(value.assigned_partitions),
                                         **_assignment_epochs_of(value.partitions_pending_revocation)},
                                        strict=strict)


class RecordWriter:
    """Collects one request's records, applying each to the group as it is made (later steps
    read the state earlier ones produced), then appends them as one batch."""

    def __init__(self, coordinator: ConsumerGroupProtocol, group: ConsumerGroup, records: list) -> None:
        self.coordinator = coordinator
        self.group = group
        self.records = records
        self.metadata_hash: int | None = None  # computed by subscription_metadata_changed

    def _emit(self, record_type: int, member_id: str | None, fields: dict | None) -> None:
        key = encode_consumer_group_key(record_type, self.group.group_id, member_id)
        if fields is None:
            value = None
            self.records.append((key, None))
        else:
            encoded = encode_consumer_group_value(record_type, fields)
            self.records.append((key, encoded))
            # Apply what a replay will read back, so that both paths see the very same values.
            value = decode_consumer_group_record(key, encoded)[3]
        apply_consumer_group_record(self.group, record_type, member_id, value)

    def member_metadata(self, member: ConsumerGroupMember) -> None:
        self._emit(MEMBER_METADATA, member.member_id, {
            "instance_id": member.instance_id, "rack_id": member.rack_id, "client_id": member.client_id,
            "client_host": member.client_host, "subscribed_topic_names": list(member.subscribed_topic_names),
            "subscribed_topic_regex": member.subscribed_topic_regex or "",  # as Kafka writes no regex
            "rebalance_timeout_ms": member.rebalance_timeout_ms, "server_assignor": member.server_assignor,
            "classic_member_metadata": None if member.classic is None else {
                "session_timeout_ms": member.classic.session_timeout_ms,
                "supported_protocols": [{"name": n, "metadata": m} for n, m in member.classic.protocols]},
        })

    def group_epoch(self, epoch: int) -> None:
        """The group epoch, with the metadata hash it was bumped for (a new one when the subscribed
        topics' metadata changed in this request)."""
        metadata_hash = self.metadata_hash if self.metadata_hash is not None else self.group.metadata_hash
        self._emit(GROUP_METADATA, None, {"epoch": epoch, "metadata_hash": metadata_hash})

    def target_member(self, member_id: str, assignment) -> None:
        self._emit(TARGET_MEMBER, member_id, {"topic_partitions": _topic_partitions(assignment)})

    def current_assignment(self, member: ConsumerGroupMember) -> None:
        self._emit(CURRENT_ASSIGNMENT, member.member_id, {
            "member_epoch": member.member_epoch, "previous_member_epoch": member.previous_member_epoch,
            "state": int(member.state),
            "assigned_partitions": _topic_partitions_with_epochs(member.assigned, member),
            "partitions_pending_revocation": _topic_partitions_with_epochs(member.pending_revocation, member),
        })

    def remove_member(self, member_id: str, *, bump_epoch: bool = True) -> None:
        """Kafka's order: current assignment, target assignment, member metadata; then the epoch."""
        self._emit(CURRENT_ASSIGNMENT, member_id, None)
        self._emit(TARGET_MEMBER, member_id, None)
        self._emit(MEMBER_METADATA, member_id, None)
        if bump_epoch:
            # The subscriptions changed: the epoch record carries the hash of what is left (Kafka's 0 for none).
            self.subscription_metadata_changed()
            self.group_epoch(self.group.group_epoch + 1)

    def subscription_metadata_changed(self) -> bool:
        """Whether the subscribed topics' metadata changed (a topic created, deleted or given
        partitions) since the group epoch was last bumped: as Kafka 4.1+ (KIP-1101), by comparing the
        hash of it with the group's (the caller bumps the epoch, which records the new hash, and the
        assignment is computed again). A ConsumerGroupPartitionMetadata record of an older log gets its
        tombstone, as Kafka writes one when it meets such a group."""
        group = self.group
        current, hashes = {}, {}
        for name in sorted(group.subscribed_topic_names()):
            meta = self.coordinator._topic_metadata(name)
            if meta is not None:
                current[name] = TopicMetadata(meta.topic_id, name, meta.partitions)
                hashes[name] = topic_hash(meta.topic_id, name, self.coordinator._partition_racks(name, meta.partitions))
        group.subscription_metadata = current
        if group.legacy_partition_metadata:
            self._emit(PARTITION_METADATA, None, None)
        computed = group_hash(hashes)
        if computed == group.metadata_hash:
            return False
        self.metadata_hash = computed
        return True

    def target_assignment(self) -> None:
        group = self.group
        name = group.preferred_assignor(self.coordinator.consumer_assignors())
        topics = {t.topic_id: t.num_partitions for t in group.subscription_metadata.values()}
        specs = {
            member_id: assignors.MemberSpec(
                {group.subscription_metadata[n].topic_id for n in group.member_topic_names(m)
                 if n in group.subscription_metadata},
                {t: set(p) for t, p in group.target.get(member_id, {}).items()})
            for member_id, m in group.members.items()
        }
        computed = assignors.assign(name, specs, topics)
        for member_id in group.members:
            new = freeze(computed.get(member_id, {}))
            if member_id not in group.target or group.target[member_id] != new:
                self.target_member(member_id, new)
        self._emit(TARGET_METADATA, None, {"assignment_epoch": group.group_epoch,
                                           "assignment_timestamp": self.coordinator.clock_ms()})

    def flush(self) -> None:
        if self.records:
            self.coordinator._append(self.group, self.records)


def _check_member_epoch(member: ConsumerGroupMember, received: int, owned) -> None:
    check_member_epoch(CONSUMER_GROUP_TYPE, member, received,
                       owned is not None and owned <= partitions_of(member.assigned))


def new_member_id() -> str:
    """Kafka's Uuid.randomUuid().toString(): URL-safe base64 of 16 random bytes, unpadded."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


__all__ = ["ConsumerGroupProtocol", "apply_consumer_group_record", "MEMBER_TYPE_CONSUMER"]
