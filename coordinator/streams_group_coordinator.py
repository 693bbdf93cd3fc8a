"""The KIP-1071 streams group protocol of the group coordinator: StreamsGroupHeartbeat and
StreamsGroupDescribe.

Kafka Streams applications with `group.protocol=streams` send their topology when a member joins;
the coordinator configures it against the topics (coordinator/streams_group.py), names the internal
topics to create (the handler creates them, as Kafka's broker does, and reports
MISSING_INTERNAL_TOPICS meanwhile), assigns the tasks and walks each member to its target
assignment. Every change is a record of __consumer_offsets (record types 17 and 19-23,
kafka_wire.internal_records), appended before the answer and replayed when the coordinator loads.

`StreamsGroupProtocol` is a mixin of GroupCoordinator: it shares its group map (a group id is a
classic, consumer or streams group), timers, configuration, offsets and log, so OffsetCommit and
TxnOffsetCommit of streams members are checked against their member epochs here. Member timers,
epoch fencing and the group's base are what consumer groups use too (coordinator/modern_group.py).

As Kafka 4.3: the group epoch is bumped for the hash of the required topics' metadata and for the
assignment configs (num.standby.replicas), both in StreamsGroupMetadataValue; a target assignment
is computed at most once per streams.assignment.interval.ms (group config, else
group.streams.assignment.interval.ms, 1 s), members hearing ASSIGNMENT_DELAYED meanwhile.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from kafka_wire.errors import ErrorCode
from kafka_wire.internal_records import (
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT as CURRENT_ASSIGNMENT,
)
from kafka_wire.internal_records import (
    STREAMS_GROUP_MEMBER_METADATA as MEMBER_METADATA,
)
from kafka_wire.internal_records import (
    STREAMS_GROUP_METADATA as GROUP_METADATA,
)
from kafka_wire.internal_records import (
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER as TARGET_MEMBER,
)
from kafka_wire.internal_records import (
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA as TARGET_METADATA,
)
from kafka_wire.internal_records import (
    STREAMS_GROUP_TOPOLOGY as TOPOLOGY,
)
from kafka_wire.internal_records import (
    encode_streams_group_key,
    encode_streams_group_value,
)

from .metadata_hash import group_hash, topic_hash
from .modern_group import HeartbeatError, check_member_epoch
from .modern_group import JOIN_GROUP_MEMBER_EPOCH, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH
from .offsets_store import AppendFailed, group_metadata_append_error
from .streams_group import (
    ASSIGNMENT_DELAYED,
    ASSIGNMENT_DELAYED_DETAIL,
    ASSIGNMENT_INTERVAL_DETAIL,
    EMPTY_ASSIGNMENT,
    EMPTY_TASKS,
    SHUTDOWN_APPLICATION,
    SHUTDOWN_DETAIL,
    STALE_TOPOLOGY,
    STREAMS_GROUP_TYPE,
    Assignment,
    InvalidTopology,
    MemberState,
    StreamsGroup,
    StreamsGroupMember,
    configure_topology,
    next_member_assignment,
    sticky_assign,
    topology_from_wire,
    topology_to_record,
    validate_topology,
)

logger = logging.getLogger("kafka_wire.coordinator")

# What Kafka 4.3.0's heartbeat answers tell Kafka Streams of warm-up tasks: 0 and 0, as seen on the
# wire. Its broker-side StickyTaskAssignor assigns no warm-up tasks (Kafka 4.3 has no
# num.warmup.replicas for streams groups), nor does sticky_assign.
ACCEPTABLE_RECOVERY_LAG = 0
TASK_OFFSET_INTERVAL_MS = 0


def task_ids(tasks) -> list[dict]:
    """Tasks as TaskIds entries: one per subtopology, partitions sorted."""
    by_sub: dict[str, list[int]] = {}
    for sub, partition in tasks:
        by_sub.setdefault(sub, []).append(partition)
    return [{"subtopology_id": sub, "partitions": sorted(parts)} for sub, parts in sorted(by_sub.items())]


def tasks_of(items) -> frozenset:
    return frozenset((item.subtopology_id, p) for item in items or () for p in item.partitions)


def _assignment_of(value, pending: bool = False):
    assignment = Assignment(tasks_of(value.active_tasks), tasks_of(value.standby_tasks), tasks_of(value.warmup_tasks))
    return (assignment, tasks_of(value.active_tasks_pending_revocation)) if pending else assignment


class StreamsGroupProtocol:
    """StreamsGroupHeartbeat and StreamsGroupDescribe over the coordinator's groups."""

    # == configuration ===============================================================================

    def _streams_cfg(self, group_id: str, name: str, default) -> int:
        return int(self._group_cfg(group_id, f"streams.{name}", default))

    # == StreamsGroupHeartbeat =======================================================================

    def streams_group_heartbeat(self, request, *, client_id: str, client_host: str) -> tuple[dict, dict]:
        """One heartbeat: the response body, and the internal topics to create (name ->
        (partitions, replication factor, configs))."""
        try:
            self._validate_streams_heartbeat(request)
            error = self._validate_group(request.group_id, allow_empty=False)
            if error is not None:
                raise HeartbeatError(error)
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._streams_group_leave(request), {}
            return self._streams_group_heartbeat(request, client_id, client_host)
        except HeartbeatError as exc:
            return {"throttle_time_ms": 0, "error_code": int(exc.error), "error_message": exc.message,
                    "member_id": "", "member_epoch": 0, "heartbeat_interval_ms": 0, "acceptable_recovery_lag": 0,
                    "task_offset_interval_ms": 0, "status": [], "endpoint_information_epoch": 0}, {}

    @staticmethod
    def _validate_streams_heartbeat(request) -> None:
        """Kafka's throwIfStreamsGroupHeartbeatRequestIsInvalid, in its order."""
        def invalid(message: str) -> HeartbeatError:
            return HeartbeatError(ErrorCode.INVALID_REQUEST, message)

        if not request.group_id or not request.group_id.strip():
            raise invalid("GroupId can't be empty.")
        if not request.member_id or not request.member_id.strip():
            raise invalid("MemberId can't be empty.")
        if request.instance_id is not None:
            # Kafka 4.3.0 refuses every heartbeat naming an instance id (static membership is not part
            # of its streams protocol yet).
            raise invalid("Static membership is not yet supported.")
        if request.rack_id is not None and not request.rack_id.strip():
            raise invalid("RackId can't be empty.")
        epoch = request.member_epoch
        if epoch == JOIN_GROUP_MEMBER_EPOCH:
            if request.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if request.active_tasks is None or len(request.active_tasks) != 0:
                raise invalid("ActiveTasks must be empty when (re-)joining.")
            if request.standby_tasks is None or len(request.standby_tasks) != 0:
                raise invalid("StandbyTasks must be empty when (re-)joining.")
            if request.warmup_tasks is None or len(request.warmup_tasks) != 0:
                raise invalid("WarmupTasks must be empty when (re-)joining.")
            if request.topology is None:
                raise invalid("Topology must be non-null when (re-)joining.")
            if request.process_id is None or not request.process_id.strip():
                raise invalid("ProcessId can't be empty.")
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if request.instance_id is None:
                raise invalid("InstanceId can't be null.")
        elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise invalid(f"MemberEpoch is {epoch}, but must be greater than or equal to -2.")
        if request.process_id is not None and not request.process_id.strip():
            raise invalid("ProcessId can't be empty.")

    def _streams_group_or_error(self, group_id: str, *, create: bool) -> tuple[StreamsGroup, list]:
        group = self.groups.get(group_id)
        if isinstance(group, StreamsGroup):
            return group, []
        if group is None:
            if not create:
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {group_id} not found.")
            return self._new_streams_group(group_id), []
        # An empty classic group (one that only stores offsets) becomes a streams group; its offsets stay.
        from .group import ClassicGroup

        if not create or not isinstance(group, ClassicGroup) or group.members \
                or getattr(group, "pending_join_members", None):
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.")
        streams = self._new_streams_group(group_id)
        return streams, self._take_over_classic(group, streams)

    def _new_streams_group(self, group_id: str) -> StreamsGroup:
        group = StreamsGroup(group_id, self.clock_ms())
        delay = self._streams_cfg(group_id, "initial.rebalance.delay.ms", 3000)
        if delay > 0:
            group.initial_assignment_at = self.clock_ms() + delay
        return group

    def _streams_group_heartbeat(self, request, client_id: str, client_host: str) -> tuple[dict, dict]:
        group_id, member_id, epoch = request.group_id, request.member_id, request.member_epoch
        joining = epoch == JOIN_GROUP_MEMBER_EPOCH
        group, records = self._streams_group_or_error(group_id, create=joining)
        member = group.members.get(member_id)
        reported_active = None if request.active_tasks is None else tasks_of(request.active_tasks)
        if member is None:
            if not joining:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                            f"Member {member_id} is not a member of group {group_id}.")
            max_size = int(self._cfg("group.streams.max.size", 2147483647))
            if len(group.members) >= max_size:
                raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                            f"The streams group has reached its maximum capacity of {max_size} "
                                            f"members.")
            member = StreamsGroupMember(member_id)
        else:
            check_member_epoch(STREAMS_GROUP_TYPE, member, epoch,
                               reported_active is not None and reported_active <= member.assigned.active)
        is_new = member_id not in group.members
        bump = is_new

        statuses: list[tuple[int, str]] = []
        if request.topology is not None:
            topology = topology_from_wire(request.topology)
            try:
                validate_topology(topology)
            except InvalidTopology as exc:
                raise HeartbeatError(ErrorCode.STREAMS_INVALID_TOPOLOGY, str(exc)) from None
            if group.topology is None or topology.epoch > group.topology.epoch:
                group.topology = topology
                records.append(self._streams_record(group, TOPOLOGY, None, topology_to_record(topology)))
                bump = True
            elif topology.epoch == group.topology.epoch and topology != group.topology:
                raise HeartbeatError(
                    ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH,
                    f"Topology updated but topology epoch not: {topology.epoch}.")
            topology_epoch = topology.epoch
        else:
            topology_epoch = member.topology_epoch
        if group.topology is not None and topology_epoch < group.topology.epoch:
            statuses.append((STALE_TOPOLOGY, f"The member's topology epoch {topology_epoch} is behind the group's "
                                             f"topology epoch {group.topology.epoch}."))

        updated = replace(
            member,
            instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            client_id=client_id, client_host=client_host,
            rebalance_timeout_ms=(request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            topology_epoch=topology_epoch,
            process_id=request.process_id if request.process_id is not None else member.process_id,
            user_endpoint=((request.user_endpoint.host, request.user_endpoint.port)
                           if request.user_endpoint is not None else member.user_endpoint),
            client_tags=(tuple((kv.key, kv.value) for kv in request.client_tags)
                         if request.client_tags is not None else member.client_tags),
            task_offsets=(tuple((o.subtopology_id, o.partition, o.offset) for o in request.task_offsets)
                          if request.task_offsets is not None else member.task_offsets),
            task_end_offsets=(tuple((o.subtopology_id, o.partition, o.offset) for o in request.task_end_offsets)
                              if request.task_end_offsets is not None else member.task_end_offsets),
        )
        if is_new or not updated.same_metadata(member):
            if not is_new and (updated.process_id, updated.rack_id, updated.client_tags, updated.topology_epoch) != \
                    (member.process_id, member.rack_id, member.client_tags, member.topology_epoch):
                bump = True
            if updated.user_endpoint != member.user_endpoint:
                group.endpoint_information_epoch += 1
            records.append(self._member_metadata_record(group, updated))
        group.members[member_id] = updated
        member = updated
        if request.shutdown_application and group.shutdown_requested is None:
            group.shutdown_requested = member_id

        configured = self._configure_streams_group(group)
        if configured is not None and configured.task_counts != group.validated_task_counts:
            group.validated_task_counts = configured.task_counts
            bump = True
        # As Kafka 4.3: the required topics' metadata changed (a topic created, deleted or given
        # partitions), or the assignment configs did.
        metadata_hash = self._streams_metadata_hash(group)
        if metadata_hash != group.metadata_hash:
            group.metadata_hash = metadata_hash
            bump = True
        assignment_configs = self._streams_assignment_configs(group_id)
        if assignment_configs != group.last_assignment_configs:
            group.last_assignment_configs = assignment_configs
            bump = True
        if bump:
            group.group_epoch += 1
            records.append(self._group_metadata_record(group))
        delayed = None
        if group.group_epoch > group.assignment_epoch:
            now = self.clock_ms()
            interval = self._streams_cfg(group_id, "assignment.interval.ms", 1000)
            if group.initial_assignment_at is not None and now < group.initial_assignment_at:
                delayed = ASSIGNMENT_DELAYED_DETAIL
            elif not group.may_compute_assignment(interval, now):
                delayed = ASSIGNMENT_INTERVAL_DETAIL  # members go on towards the last target meanwhile
            else:
                group.initial_assignment_at = None
                self._compute_streams_target(group, records)

        before = member
        target = group.target.get(member_id, EMPTY_ASSIGNMENT)
        after = next_member_assignment(member, group.assignment_epoch, target, group.owned_elsewhere(member_id),
                                       reported_active, group.active_in_process(member.process_id))
        if is_new or not after.same_assignment(member):
            group.members[member_id] = after
            records.append(self._current_assignment_record(group, after))
        try:
            if records:
                self._append(group, records)
        except AppendFailed as exc:
            raise HeartbeatError(group_metadata_append_error(exc.error)) from None
        if self.groups.get(group_id) is not group:
            self.timer.cancel(("join", group_id))
            self.timer.cancel(("sync", group_id))
            self.groups[group_id] = group
            logger.info("streams group %s created by member %s", group_id, member_id)
        member = group.members[member_id]
        self._schedule_streams_session(group, member_id)
        self._maybe_schedule_streams_revocation(group, member)

        if delayed is not None:
            statuses.append((ASSIGNMENT_DELAYED, delayed))
        if configured is not None:
            statuses.extend(configured.statuses)
        if group.shutdown_requested is not None:
            statuses.append((SHUTDOWN_APPLICATION, SHUTDOWN_DETAIL.format(member=group.shutdown_requested)))
        response = {
            "throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": member_id,
            "member_epoch": member.member_epoch,
            "heartbeat_interval_ms": self._streams_cfg(group_id, "heartbeat.interval.ms", 5000),
            "acceptable_recovery_lag": ACCEPTABLE_RECOVERY_LAG,
            "task_offset_interval_ms": TASK_OFFSET_INTERVAL_MS,
            "status": [{"status_code": c, "status_detail": d} for c, d in statuses],
            "active_tasks": None, "standby_tasks": None, "warmup_tasks": None,
            "endpoint_information_epoch": group.endpoint_information_epoch,
            "partitions_by_user_endpoint": None,
        }
        if joining or member.assigned != before.assigned or request.active_tasks is not None and \
                reported_active != member.assigned.active:
            response["active_tasks"] = task_ids(member.assigned.active)
            response["standby_tasks"] = task_ids(member.assigned.standby)
            response["warmup_tasks"] = task_ids(member.assigned.warmup)
        if member.user_endpoint is not None and request.endpoint_information_epoch != group.endpoint_information_epoch:
            response["partitions_by_user_endpoint"] = self._partitions_by_endpoint(group)
        to_create = configured.to_create if configured is not None else {}
        return response, to_create

    def _configure_streams_group(self, group: StreamsGroup):
        if group.topology is None:
            group.configured = None
            return None
        broker = self._broker()

        def partitions_of(name: str):
            meta = None if broker is None else broker.metadata.topic(name)
            return None if meta is None else meta.partitions

        def names():
            return [] if broker is None else list(broker.metadata.topics)

        group.configured = configure_topology(group.topology, partitions_of, names)
        return group.configured

    def _compute_streams_target(self, group: StreamsGroup, records: list) -> None:
        configured = group.configured
        if configured is not None and configured.ready:
            stateful = {s.subtopology_id for s in group.topology.subtopologies if s.state_changelog_topics}
            target = sticky_assign(group.members, configured.task_counts,
                                   int(group.last_assignment_configs.get("num.standby.replicas", 0)),
                                   group.target, stateful)
        else:
            target = {mid: EMPTY_ASSIGNMENT for mid in group.members}
        for mid, assignment in target.items():
            if group.target.get(mid) != assignment or mid not in group.target:
                records.append(self._streams_record(group, TARGET_MEMBER, mid, {
                    "active_tasks": task_ids(assignment.active), "standby_tasks": task_ids(assignment.standby),
                    "warmup_tasks": task_ids(assignment.warmup)}))
        group.target = target
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp = self.clock_ms()
        records.append(self._streams_record(group, TARGET_METADATA, None, {
            "assignment_epoch": group.assignment_epoch, "assignment_timestamp": group.assignment_timestamp}))

    def _streams_metadata_hash(self, group: StreamsGroup) -> int:
        """Kafka's StreamsGroup.computeMetadataHash: the group hash of the required topics that exist."""
        hashes = {}
        for name in sorted(group.required_topics()):
            meta = self._topic_metadata(name)
            if meta is not None:
                hashes[name] = topic_hash(meta.topic_id, name, self._partition_racks(name, meta.partitions))
        return group_hash(hashes)

    def _streams_assignment_configs(self, group_id: str) -> dict[str, str]:
        """What Kafka 4.3 records as the group's LastAssignmentConfigs; a change rebalances."""
        return {"num.standby.replicas": str(self._streams_cfg(group_id, "num.standby.replicas", 0))}

    def _partitions_by_endpoint(self, group: StreamsGroup) -> list[dict]:
        """Interactive Queries: the partitions each endpoint's active and standby tasks read."""
        out = []
        topology = group.topology
        if topology is None or group.configured is None:
            return out
        sources = {s.subtopology_id: list(group.configured.source_topics.get(s.subtopology_id, ()))
                   + [t.name for t in s.repartition_source_topics] for s in topology.subtopologies}

        def partitions(tasks) -> list[dict]:
            by_topic: dict[str, set[int]] = {}
            for sub, p in tasks:
                for topic in sources.get(sub, ()):
                    by_topic.setdefault(topic, set()).add(p)
            return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]

        for m in sorted(group.members.values(), key=lambda m: m.member_id):
            if m.user_endpoint is None:
                continue
            out.append({"user_endpoint": {"host": m.user_endpoint[0], "port": m.user_endpoint[1]},
                        "active_partitions": partitions(m.assigned.active),
                        "standby_partitions": partitions(m.assigned.standby)})
        return out

    def _streams_group_leave(self, request) -> dict:
        group_id, member_id = request.group_id, request.member_id
        group = self.groups.get(group_id)
        if not isinstance(group, StreamsGroup):
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {group_id} not found.")
        member = group.members.get(member_id)
        if member is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                        f"Member {member_id} is not a member of group {group_id}.")
        records = self._remove_streams_member(group, member_id)
        try:
            self._append(group, records)
        except AppendFailed as exc:
            raise HeartbeatError(group_metadata_append_error(exc.error)) from None
        self._cancel_member_timers(STREAMS_GROUP_TYPE, group_id, member_id)
        logger.info("member %s left streams group %s", member_id, group_id)
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": member_id,
                "member_epoch": request.member_epoch, "heartbeat_interval_ms": 0, "acceptable_recovery_lag": 0,
                "task_offset_interval_ms": 0, "status": [], "endpoint_information_epoch": 0}

    def _remove_streams_member(self, group: StreamsGroup, member_id: str, *, bump: bool = True) -> list:
        """Kafka's order: current assignment, target assignment, member metadata; then the epoch."""
        member = group.members.pop(member_id, None)
        group.target.pop(member_id, None)
        records = [(encode_streams_group_key(t, group.group_id, member_id), None)
                   for t in (CURRENT_ASSIGNMENT, TARGET_MEMBER, MEMBER_METADATA)]
        if member is not None and member.user_endpoint is not None:
            group.endpoint_information_epoch += 1
        if not group.members:
            group.shutdown_requested = None  # a shutdown request lasts until the application is gone
        if bump:
            group.group_epoch += 1
            records.append(self._group_metadata_record(group))
        return records

    # == timers ======================================================================================

    def _schedule_streams_session(self, group: StreamsGroup, member_id: str) -> None:
        self._schedule_member_session(group, member_id, self._streams_cfg(group.group_id, "session.timeout.ms", 45000),
                                      self._fence_streams_member)

    def _maybe_schedule_streams_revocation(self, group: StreamsGroup, member: StreamsGroupMember) -> None:
        self._maybe_schedule_member_revocation(
            group, member, revoking=member.state == MemberState.UNREVOKED_TASKS,
            unrevoked_state=MemberState.UNREVOKED_TASKS,
            fallback_timeout_ms=self._streams_cfg(group.group_id, "session.timeout.ms", 45000),
            what="tasks", fence=self._fence_streams_member)

    def _fence_streams_member(self, group: StreamsGroup, member_id: str, reason: str) -> None:
        def remove() -> None:
            self._append(group, self._remove_streams_member(group, member_id))

        self._fence_member(group, member_id, reason, remove,
                           lambda: self._cancel_member_timers(STREAMS_GROUP_TYPE, group.group_id, member_id))

    # == StreamsGroupDescribe ========================================================================

    def streams_group_describe(self, group_id: str) -> dict:
        """A StreamsGroupDescribe entry (without authorized operations)."""
        entry = {"error_code": 0, "error_message": None, "group_id": group_id, "group_state": "",
                 "group_epoch": 0, "assignment_epoch": 0, "topology": None, "members": []}
        error = self._validate_group(group_id, allow_empty=False)
        if error is not None:
            entry["error_code"] = int(error)
            return entry
        group = self.groups.get(group_id)
        if not isinstance(group, StreamsGroup) or group.dead:
            entry["error_code"] = int(ErrorCode.GROUP_ID_NOT_FOUND)
            entry["error_message"] = (f"Group {group_id} not found." if group is None
                                      else f"Group {group_id} is not a streams group.")
            return entry
        self._configure_streams_group(group)
        topology = None
        if group.topology is not None:
            # The topology as the members sent it; partition counts as configured once they are known.
            configured = group.configured
            counts = configured.task_counts if configured is not None and configured.ready else None

            def info(t, partitions):
                return {"name": t.name, "partitions": partitions, "replication_factor": t.replication_factor,
                        "topic_configs": [{"key": k, "value": v} for k, v in t.configs]}

            subtopologies = [{
                "subtopology_id": s.subtopology_id,
                "source_topics": list(configured.source_topics.get(s.subtopology_id, s.source_topics)
                                      if counts is not None else s.source_topics),
                "repartition_sink_topics": list(s.repartition_sink_topics),
                "state_changelog_topics": [info(t, counts[s.subtopology_id] if counts is not None else t.partitions)
                                           for t in s.state_changelog_topics],
                "repartition_source_topics": [info(t, self._partition_count(t.name) if counts is not None
                                                   else t.partitions) for t in s.repartition_source_topics],
            } for s in group.topology.subtopologies]
            topology = {"epoch": group.topology.epoch, "subtopologies": subtopologies}

        def described(a: Assignment) -> dict:
            return {"active_tasks": task_ids(a.active), "standby_tasks": task_ids(a.standby),
                    "warmup_tasks": task_ids(a.warmup)}

        def offsets(items) -> list[dict]:
            return [{"subtopology_id": s, "partition": p, "offset": o} for s, p, o in items]

        entry.update({
            "group_state": group.state, "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch, "topology": topology,
            "members": [{
                "member_id": m.member_id, "member_epoch": m.member_epoch, "instance_id": m.instance_id,
                "rack_id": m.rack_id, "client_id": m.client_id, "client_host": m.client_host,
                "topology_epoch": m.topology_epoch, "process_id": m.process_id,
                "user_endpoint": None if m.user_endpoint is None else {"host": m.user_endpoint[0],
                                                                       "port": m.user_endpoint[1]},
                "client_tags": [{"key": k, "value": v} for k, v in m.client_tags],
                "task_offsets": offsets(m.task_offsets), "task_end_offsets": offsets(m.task_end_offsets),
                "assignment": described(m.assigned),
                "target_assignment": described(group.target.get(m.member_id, EMPTY_ASSIGNMENT)),
                "is_classic": False,
            } for m in group.members.values()],
        })
        return entry

    def _partition_count(self, name: str) -> int:
        broker = self._broker()
        meta = None if broker is None else broker.metadata.topic(name)
        return 0 if meta is None else meta.partitions

    # == offsets =====================================================================================

    def _streams_offset_commit_error(self, group: StreamsGroup, member_epoch: int, member_id: str, *,
                                     transactional: bool) -> ErrorCode | None:
        """Kafka's StreamsGroup.validateOffsetCommit: the admin client commits to an empty group;
        a member commits with its current member epoch."""
        if member_epoch < 0 and group.is_empty():
            return None
        if transactional and member_epoch == -1 and not member_id:
            return None
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION if transactional else ErrorCode.STALE_MEMBER_EPOCH
        return None

    # == records =====================================================================================

    @staticmethod
    def _streams_record(group: StreamsGroup, record_type: int, member_id: str | None, fields: dict):
        return (encode_streams_group_key(record_type, group.group_id, member_id),
                encode_streams_group_value(record_type, fields))

    def _group_metadata_record(self, group: StreamsGroup):
        validated = group.topology.epoch if group.topology is not None and group.validated_task_counts is not None \
            else -1
        return self._streams_record(group, GROUP_METADATA, None, {
            "epoch": group.group_epoch, "metadata_hash": group.metadata_hash, "validated_topology_epoch": validated,
            "last_assignment_configs": [{"key": k, "value": v}
                                        for k, v in sorted(group.last_assignment_configs.items())]})

    def _member_metadata_record(self, group: StreamsGroup, m: StreamsGroupMember):
        return self._streams_record(group, MEMBER_METADATA, m.member_id, {
            "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "topology_epoch": m.topology_epoch, "process_id": m.process_id,
            "user_endpoint": None if m.user_endpoint is None else {"host": m.user_endpoint[0],
                                                                   "port": m.user_endpoint[1]},
            "client_tags": [{"key": k, "value": v} for k, v in m.client_tags]})

    def _current_assignment_record(self, group: StreamsGroup, m: StreamsGroupMember):
        return self._streams_record(group, CURRENT_ASSIGNMENT, m.member_id, {
            "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
            "state": int(m.state), "active_tasks": task_ids(m.assigned.active),
            "standby_tasks": task_ids(m.assigned.standby), "warmup_tasks": task_ids(m.assigned.warmup),
            "active_tasks_pending_revocation": task_ids(m.pending_revocation),
            "standby_tasks_pending_revocation": [], "warmup_tasks_pending_revocation": []})

    def streams_group_tombstones(self, group: StreamsGroup) -> list:
        """The records deleting an empty streams group (target assignment metadata, topology, group
        metadata)."""
        return [(encode_streams_group_key(t, group.group_id), None) for t in (TARGET_METADATA, TOPOLOGY, GROUP_METADATA)]

    # == replay ======================================================================================

    def _replay_streams_group_record(self, record_type: int, group_id: str, member_id: str | None, value) -> None:
        group = self._group_for_replay(group_id, StreamsGroup, value)
        if group is None:
            return
        if record_type == GROUP_METADATA:
            if value is None:
                self._drop_modern_group(group)
            else:
                group.group_epoch = value.epoch
                group.metadata_hash = value.metadata_hash
                group.last_assignment_configs = {kv.key: kv.value for kv in value.last_assignment_configs or ()}
        elif record_type == TOPOLOGY:
            group.topology = None if value is None else topology_from_wire(value)
        elif record_type == MEMBER_METADATA:
            if value is None:
                group.members.pop(member_id, None)
                return
            m = group.members.get(member_id) or StreamsGroupMember(member_id)
            group.members[member_id] = replace(
                m, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
                client_host=value.client_host, rebalance_timeout_ms=value.rebalance_timeout_ms,
                topology_epoch=value.topology_epoch, process_id=value.process_id,
                user_endpoint=None if value.user_endpoint is None else (value.user_endpoint.host,
                                                                        value.user_endpoint.port),
                client_tags=tuple((kv.key, kv.value) for kv in value.client_tags))
        elif record_type == TARGET_METADATA:
            group.assignment_epoch = -1 if value is None else value.assignment_epoch
            group.assignment_timestamp = 0 if value is None else value.assignment_timestamp
        elif record_type == TARGET_MEMBER:
            if value is None:
                group.target.pop(member_id, None)
            else:
                group.target[member_id] = _assignment_of(value)
        elif record_type == CURRENT_ASSIGNMENT:
            m = group.members.get(member_id)
            if value is None:
                if m is not None:
                    group.members[member_id] = replace(m, assigned=EMPTY_ASSIGNMENT, pending_revocation=EMPTY_TASKS)
                return
            if m is None:
                m = group.members[member_id] = StreamsGroupMember(member_id)
            assigned, pending = _assignment_of(value, pending=True)
            state = value.state if value.state in MemberState._value2member_map_ else MemberState.UNKNOWN
            group.members[member_id] = replace(m, member_epoch=value.member_epoch,
                                               previous_member_epoch=value.previous_member_epoch,
                                               state=MemberState(state), assigned=assigned,
                                               pending_revocation=pending)

    def _on_streams_groups_loaded(self) -> None:
        """Loaded members must heartbeat within the session timeout, or they are removed; the
        topology is configured against the topics as they are now."""
        for group in list(self.groups.values()):
            if isinstance(group, StreamsGroup):
                configured = self._configure_streams_group(group)
                group.validated_task_counts = configured.task_counts if configured is not None else None
                for member_id in list(group.members):
                    self._schedule_streams_session(group, member_id)


__all__ = ["StreamsGroupProtocol", "task_ids"]
