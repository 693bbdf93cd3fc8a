"""Consumer groups in cluster mode: each group lives on the leader of its __consumer_offsets partition.

As Kafka's GroupCoordinator.onElection/onResignation: when this broker becomes the leader of an
__consumer_offsets partition it replays that partition and serves its groups; when it stops
leading it, those groups are dropped (members waiting in JoinGroup or SyncGroup hear
NOT_COORDINATOR and look the coordinator up again). Requests for a group of a partition this
broker does not lead answer NOT_COORDINATOR, and COORDINATOR_LOAD_IN_PROGRESS while it loads.
Appends go to the leader's log and the high watermark follows the ISR (replica_manager.py).
"""

from __future__ import annotations

import logging

from coordinator.classic_protocol import join_response, sync_response
from coordinator.group_coordinator import GroupCoordinator
from coordinator.offsets_store import OFFSETS_TOPIC, AppendFailed, OffsetsTopic
from kafka_wire.errors import ErrorCode

logger = logging.getLogger("kafka_wire.cluster.groups")


class ReplicatedOffsetsTopic(OffsetsTopic):
    """__consumer_offsets when its partitions have leaders elsewhere: created on first need,
    appended to only as leader (the broker's leadership moves the high watermark)."""

    def refresh_partition_count(self) -> int:
        meta = self.broker.metadata.topic(OFFSETS_TOPIC)
        self.num_partitions = meta.partitions if meta is not None else 0
        return self.num_partitions

    def append(self, partition: int, records, **kwargs) -> int:
        if not self.broker.replicas.is_leader(OFFSETS_TOPIC, partition):
            raise AppendFailed(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return super().append(partition, records, **kwargs)


class ReplicatedGroupCoordinator(GroupCoordinator):
    """The group coordinator of one broker in a cluster: serves the groups of the partitions it leads."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.owned_partitions: set[int] = set()
        self.loading_partitions: set[int] = set()
        # How many times each partition was loaded here: the share groups (broker/share_groups.py)
        # replay a partition again when this moved since they last did (leadership went and came back).
        self.load_generations: dict[int, int] = {}

    async def start(self, broker) -> None:
        """Nothing to replay yet: partitions load as this broker becomes their leader."""
        import asyncio

        self.attach(broker)
        self.offsets_topic = ReplicatedOffsetsTopic(broker)
        self.offsets_topic.refresh_partition_count()
        self.active = True
        self._expiration_task = asyncio.create_task(self._expire_offsets_periodically())

    def partition_for(self, group_id: str) -> int:
        if not self.offsets_topic.num_partitions:
            self.offsets_topic.refresh_partition_count()
        if not self.offsets_topic.num_partitions:
            return -1
        return super().partition_for(group_id)

    def _validate_group(self, group_id, *, allow_empty: bool):
        error = super()._validate_group(group_id, allow_empty=allow_empty)
        if error is not None or group_id is None:
            return error
        partition = self.partition_for(group_id)
        if partition in self.loading_partitions:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self.owned_partitions:
            return ErrorCode.NOT_COORDINATOR
        return None

    # -- failover ----------------------------------------------------------------------------------

    def load_partition(self, partition: int) -> None:
        """This broker now leads __consumer_offsets-<partition>: replay it and serve its groups."""
        if not self.active:
            return
        self.offsets_topic.refresh_partition_count()
        self.loading_partitions.add(partition)
        try:
            self._unload_groups(partition, ErrorCode.NOT_COORDINATOR)
            before = set(self.groups)
            self._replay_partition(partition)
            for group_id in set(self.groups) - before:
                group = self.groups[group_id]
                for member in group.members.values():
                    self._reschedule_heartbeat(group, member)
        finally:
            self.loading_partitions.discard(partition)
        self.owned_partitions.add(partition)
        self.load_generations[partition] = self.load_generations.get(partition, 0) + 1
        logger.info("group coordinator: loaded %s-%d (%d groups served)", OFFSETS_TOPIC, partition, len(self.groups))

    def unload_partition(self, partition: int) -> None:
        """This broker no longer leads the partition: its groups are another broker's now."""
        self.owned_partitions.discard(partition)
        dropped = self._unload_groups(partition, ErrorCode.NOT_COORDINATOR)
        if dropped:
            logger.info("group coordinator: unloaded %s-%d (%d groups)", OFFSETS_TOPIC, partition, dropped)

    def _unload_groups(self, partition: int, error: ErrorCode) -> int:
        doomed = [g for g in self.groups.values() if self.partition_for(g.group_id) == partition]
        for group in doomed:
            for member in list(group.members.values()):
                group.complete_join(member, join_response(error, member.member_id))
                group.complete_sync(member, sync_response(error))
                self.timer.cancel(("heartbeat", group.group_id, member.member_id))
            for member_id in list(getattr(group, "pending_join_members", ())):
                self.timer.cancel(("heartbeat", group.group_id, member_id))
            self.timer.cancel(("join", group.group_id))
            self.timer.cancel(("sync", group.group_id))
            self.groups.pop(group.group_id, None)
        return len(doomed)
