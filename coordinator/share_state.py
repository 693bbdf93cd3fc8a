"""The share coordinator's persisted state of share-partitions (KIP-932), as Kafka keeps it in
`__share_group_state`: a ShareSnapshot record holds a share-partition's whole state, ShareUpdate
records since then hold what changed, and a reader folds them in order.

Sans-io: the caller reads and appends the records (broker/share_groups.py); this module says where
a share-partition's records live, what to write, and what the records read back amount to.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from kafka_wire import internal_records as ir

from .offsets_store import java_abs, java_string_hashcode
from .share_partition import StateBatch, StateUpdate

SHARE_STATE_TOPIC = "__share_group_state"

# Kafka 4.3's share coordinator defaults.
DEFAULT_STATE_TOPIC_NUM_PARTITIONS = 50  # share.coordinator.state.topic.num.partitions
DEFAULT_STATE_TOPIC_REPLICATION_FACTOR = 3  # share.coordinator.state.topic.replication.factor
DEFAULT_STATE_TOPIC_SEGMENT_BYTES = 100 * 1024 * 1024  # share.coordinator.state.topic.segment.bytes
DEFAULT_SNAPSHOT_UPDATE_RECORDS = 500  # share.coordinator.snapshot.update.records.per.snapshot


def kafka_uuid_string(topic_id) -> str:
    """A Uuid as Kafka prints it (Uuid.toString): URL-safe base64 of its 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def coordinator_key(group_id: str, topic_id, partition: int) -> str:
    """SharePartitionKey.asCoordinatorKey: "group:topicId:partition"."""
    return f"{group_id}:{kafka_uuid_string(topic_id)}:{partition}"


def state_partition_for(group_id: str, topic_id, partition: int, num_partitions: int) -> int:
    """The `__share_group_state` partition holding a share-partition's records, as Kafka's
    ShareCoordinatorService.partitionFor picks it."""
    return java_abs(java_string_hashcode(coordinator_key(group_id, topic_id, partition))) % num_partitions


def _batch_fields(batches) -> list[dict]:
    return [{"first_offset": b.first_offset, "last_offset": b.last_offset,
             "delivery_state": b.delivery_state, "delivery_count": b.delivery_count} for b in batches]


def snapshot_record(group_id: str, topic_id, partition: int, update: StateUpdate, snapshot_epoch: int,
                    now_ms: int, create_ms: int | None = None) -> tuple[bytes, bytes]:
    """A ShareSnapshot record of a share-partition's whole state."""
    key = ir.encode_share_state_key(ir.SHARE_SNAPSHOT, group_id, topic_id, partition)
    value = ir.encode_share_state_value(ir.SHARE_SNAPSHOT, {
        "snapshot_epoch": snapshot_epoch, "state_epoch": update.state_epoch, "leader_epoch": update.leader_epoch,
        "start_offset": update.start_offset, "delivery_complete_count": update.delivery_complete_count,
        "create_timestamp": now_ms if create_ms is None else create_ms, "write_timestamp": now_ms,
        "state_batches": _batch_fields(update.state_batches)})
    return key, value


def update_record(group_id: str, topic_id, partition: int, update: StateUpdate,
                  snapshot_epoch: int) -> tuple[bytes, bytes]:
    """A ShareUpdate record: what changed since the snapshot."""
    key = ir.encode_share_state_key(ir.SHARE_UPDATE, group_id, topic_id, partition)
    value = ir.encode_share_state_value(ir.SHARE_UPDATE, {
        "snapshot_epoch": snapshot_epoch, "leader_epoch": update.leader_epoch,
        "start_offset": update.start_offset, "delivery_complete_count": update.delivery_complete_count,
        "state_batches": _batch_fields(update.state_batches)})
    return key, value


def merge_batches(batches: list[StateBatch], new: list[StateBatch], start_offset: int) -> list[StateBatch]:
    """`batches` with `new` laid over them (a newer batch wins where they overlap), cut below
    `start_offset`, in offset order: how Kafka's share coordinator combines an update with the
    state it has."""
    out: list[StateBatch] = []
    for old in batches:
        pieces = [old]
        for b in new:
            next_pieces = []
            for p in pieces:
                if b.last_offset < p.first_offset or b.first_offset > p.last_offset:
                    next_pieces.append(p)
                    continue
                if p.first_offset < b.first_offset:
                    next_pieces.append(StateBatch(p.first_offset, b.first_offset - 1, p.delivery_state,
                                                  p.delivery_count))
                if p.last_offset > b.last_offset:
                    next_pieces.append(StateBatch(b.last_offset + 1, p.last_offset, p.delivery_state, p.delivery_count))
            pieces = next_pieces
        out.extend(pieces)
    out.extend(new)
    result = []
    for b in sorted(out, key=lambda b: b.first_offset):
        if b.last_offset < start_offset:
            continue
        if b.first_offset < start_offset:
            b = StateBatch(start_offset, b.last_offset, b.delivery_state, b.delivery_count)
        result.append(b)
    return result


@dataclass
class PersistedShareState:
    """A share-partition's state as its records in `__share_group_state` say, folded in order."""

    start_offset: int = -1
    state_epoch: int = 0
    leader_epoch: int = 0
    snapshot_epoch: int = 0
    create_timestamp: int = 0
    batches: list[StateBatch] = field(default_factory=list)
    updates_since_snapshot: int = 0
    found: bool = False

    def apply(self, record_type: int, value) -> None:
        """Fold one record (decoded value; None is a tombstone: the state is deleted)."""
        if value is None:
            self.__init__()
            return
        batches = [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                   for b in value.state_batches]
        if record_type == ir.SHARE_SNAPSHOT:
            self.found = True
            self.start_offset = value.start_offset
            self.state_epoch = value.state_epoch
            self.leader_epoch = value.leader_epoch
            self.snapshot_epoch = value.snapshot_epoch
            self.create_timestamp = value.create_timestamp
            self.batches = merge_batches([], batches, value.start_offset)
            self.updates_since_snapshot = 0
            return
        if not self.found:
            return  # an update with no snapshot before it: Kafka ignores it too
        if value.start_offset >= 0:
            self.start_offset = max(self.start_offset, value.start_offset)
        self.leader_epoch = value.leader_epoch
        self.batches = merge_batches(self.batches, batches, self.start_offset)
        self.updates_since_snapshot += 1

    def as_update(self) -> StateUpdate:
        return StateUpdate(self.state_epoch, self.leader_epoch, self.start_offset, -1, tuple(self.batches))
