"""Partition leadership: the component the broker's data path asks whether it may serve a
partition, and that moves a partition's high watermark after an append.

The data path (node.py: Broker.append_records, read_partition, list_offset, end_offset_for_epoch,
delete_records, write_txn_markers) is written once, for both modes; what differs between a single
node and a replicated cluster stands behind `PartitionLeadership`:
- on a single node (`SingleNodeLeadership`) this broker leads every partition and is its only
  in-sync replica, so an append is committed at once;
- in a cluster (cluster/replica_manager.py: ReplicaManager) only the partitions whose leader this
  broker is may be served, and the high watermark is where the in-sync replicas are.
"""

from __future__ import annotations

from typing import Protocol

from kafka_wire.errors import ErrorCode

TopicPartition = tuple[str, int]


class PartitionLeadership(Protocol):
    # Whether acks=all answers wait for other replicas (a single node's appends are committed).
    waits_for_replicas: bool

    def leadership_error(self, topic: str, partition: int) -> ErrorCode:
        """NONE when this broker leads the partition and may serve it; the error to answer otherwise."""
        ...

    def leader_appended(self, topic: str, partition: int, plog) -> None:
        """This broker appended to the partition as its leader: move the high watermark as far as
        the in-sync replicas allow."""
        ...

    def follower_fetched(self, topic: str, partition: int, replica_id: int, fetch_offset: int) -> None:
        """A follower fetched from `fetch_offset`, which is its log end offset (Kafka's
        Partition.updateFollowerFetchState)."""
        ...

    def high_watermark_behind_epoch_start(self, topic: str, partition: int) -> bool:
        """Whether this leader's high watermark is still below the offset its leader epoch began at
        (it took over and the in-sync replicas have not fetched from it yet)."""
        ...

    async def await_replication(self, partitions: list[TopicPartition], timeout_ms: int
                                ) -> dict[TopicPartition, ErrorCode]:
        """acks=all: wait until the in-sync replicas have what this leader appended to each
        partition so far; the error per partition."""
        ...


class SingleNodeLeadership:
    """One broker, every partition's leader and only replica."""

    waits_for_replicas = False

    def __init__(self, logs) -> None:
        self.logs = logs

    def leadership_error(self, topic: str, partition: int) -> ErrorCode:
        # A partition of a failed log dir is offline: KAFKA_STORAGE_ERROR, as Kafka's ReplicaManager answers.
        if self.logs.is_offline(topic, partition):
            return ErrorCode.KAFKA_STORAGE_ERROR
        return ErrorCode.NONE

    def leader_appended(self, topic: str, partition: int, plog) -> None:
        plog.high_watermark = plog.log_end_offset

    def follower_fetched(self, topic: str, partition: int, replica_id: int, fetch_offset: int) -> None:
        """Never called: a single node's partitions have no other replica to fetch them."""

    def high_watermark_behind_epoch_start(self, topic: str, partition: int) -> bool:
        return False

    async def await_replication(self, partitions: list[TopicPartition], timeout_ms: int
                                ) -> dict[TopicPartition, ErrorCode]:
        return dict.fromkeys(partitions, ErrorCode.NONE)
