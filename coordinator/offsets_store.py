"""The internal topic __consumer_offsets: which partition holds a group, its records, and the log under it.

A group's offset commits and metadata all go to one partition, chosen as Kafka chooses it:
`Utils.abs(groupId.hashCode()) % partitions` with Java's String.hashCode. The records are keyed
as Kafka keys them (kafka_wire.internal_records), so compaction keeps the latest per key and a
tombstone (null value) deletes one:

    OffsetCommitKey(group, topic, partition)  -> OffsetCommitValue, or null when deleted/expired
    GroupMetadataKey(group)                    -> GroupMetadataValue, or null when the group is gone

The coordinator appends as the partition's leader and replays every partition on start.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from kafka_wire.errors import ErrorCode
from kafka_wire.internal_records import (
    GROUP_METADATA_VALUE_VERSION,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitValue,
    decode_group_metadata_value,
    decode_internal_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from kafka_wire.primitives import DecodeError
from kafka_wire.record_codec import Record, build_batch, decode_batches
from kafka_wire.records import BatchHeader, InvalidRecordBatch
from log.errors import LogError
from log.producer_state import AppendOrigin

from .group import ClassicGroup, CommittedOffset

logger = logging.getLogger("kafka_wire.coordinator")

OFFSETS_TOPIC = "__consumer_offsets"
# How much of a partition replay reads at once (whole batches; at least one however large).
REPLAY_READ_BYTES = 1 << 20


def java_string_hashcode(text: str) -> int:
    """Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, as an int32."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_abs(n: int) -> int:
    """Kafka's Utils.abs: Math.abs, except Integer.MIN_VALUE maps to 0."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(group_id: str, num_partitions: int) -> int:
    return java_abs(java_string_hashcode(group_id)) % num_partitions


# -- records --------------------------------------------------------------------------------------


def offset_commit_record(group_id: str, topic: str, partition: int, committed: CommittedOffset) -> tuple[bytes, bytes]:
    value = OffsetCommitValue(
        offset=committed.offset,
        leader_epoch=committed.leader_epoch,
        metadata=committed.metadata,
        commit_timestamp=committed.commit_timestamp,
        expire_timestamp=committed.expire_timestamp,
        **({"topic_id": committed.topic_id} if committed.topic_id is not None else {}),
    )
    return encode_offset_commit_key(group_id, topic, partition), encode_offset_commit_value(value)


def offset_tombstone(group_id: str, topic: str, partition: int) -> tuple[bytes, None]:
    return encode_offset_commit_key(group_id, topic, partition), None


def group_metadata_record(group: ClassicGroup, assignment: dict[str, bytes]) -> tuple[bytes, bytes]:
    """The group's generation and members with their assignments (Kafka writes this on every
    completed rebalance, so a restarted coordinator knows the group as Stable)."""
    members = [
        MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.metadata(group.protocol_name) if group.protocol_name is not None else b"",
            assignment=bytes(assignment.get(m.member_id, b"")),
        )
        for m in group.members.values()
    ]
    value = GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=group.protocol_name,
        leader=group.leader_id,
        current_state_timestamp=group.state_timestamp,
        members=members,
    )
    return (encode_group_metadata_key(group.group_id),
            encode_group_metadata_value(value, GROUP_METADATA_VALUE_VERSION))


def group_tombstone(group_id: str) -> tuple[bytes, None]:
    return encode_group_metadata_key(group_id), None


@dataclass
class OffsetsRecord:
    """One decoded record of __consumer_offsets: an offset commit or group metadata (value None
    for a tombstone)."""

    group_id: str
    topic: str | None  # None for group metadata
    partition: int
    value: object


def decode_offsets_record(key, value) -> OffsetsRecord | None:
    """Decode a record; None for keys we do not serve (KIP-848 and share group records)."""
    if key is None:
        return None
    try:
        decoded = decode_internal_key(key)
    except DecodeError:
        return None
    if hasattr(decoded, "topic"):
        return OffsetsRecord(decoded.group, decoded.topic, decoded.partition,
                             decode_offset_commit_value(value) if value is not None else None)
    return OffsetsRecord(decoded.group, None, -1,
                         decode_group_metadata_value(value) if value is not None else None)


# -- errors ---------------------------------------------------------------------------------------


class AppendFailed(Exception):
    """Writing to __consumer_offsets failed; `error` is what the log's failure means to Kafka."""

    def __init__(self, error: ErrorCode, message: str = "") -> None:
        super().__init__(message or error.name)
        self.error = error


def append_error_of(exc: BaseException) -> ErrorCode:
    name = getattr(exc, "error_name", None)
    if name in ("RECORD_TOO_LARGE", "MESSAGE_TOO_LARGE"):
        return ErrorCode.MESSAGE_TOO_LARGE
    if name in ("RECORD_BATCH_TOO_LARGE", "RECORD_LIST_TOO_LARGE"):
        return ErrorCode.RECORD_LIST_TOO_LARGE
    if name is not None and name in ErrorCode.__members__:
        return ErrorCode[name]
    if isinstance(exc, OSError):
        return ErrorCode.KAFKA_STORAGE_ERROR
    return ErrorCode.UNKNOWN_SERVER_ERROR


def append_internal_batch(broker, topic: str, partition: int, batch: bytearray) -> int:
    """Append a coordinator's batch to an internal topic partition as its leader; the offset of
    the first record. Raises AppendFailed. Shared by __consumer_offsets and __transaction_state."""
    plog = broker.partition_log(topic, partition)
    if plog is None:
        raise AppendFailed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    state = broker.metadata.partition_state(topic, partition)
    try:
        # As Kafka's coordinators do: producer epochs are checked, sequences are not.
        info = plog.append(batch, leader_epoch=state.leader_epoch, origin=AppendOrigin.COORDINATOR)
    except (LogError, InvalidRecordBatch, OSError) as exc:
        logger.error("append to %s-%d failed: %s", topic, partition, exc)
        raise AppendFailed(append_error_of(exc), str(exc)) from exc
    broker.leader_appended(topic, partition, plog)
    return info.base_offset


def read_internal_batches(broker, topic: str, partition: int,
                          start: int | None = None) -> Iterator[tuple[BatchHeader, list]]:
    """Every batch of an internal topic partition (control batches included), from the log start
    offset (or from `start`, when it is above) to the log end offset: what a coordinator replays
    when it loads the partition."""
    plog = broker.partition_log(topic, partition)
    if plog is None:
        return
    offset = plog.log_start_offset if start is None else max(start, plog.log_start_offset)
    # Everything appended counts, up to the log end offset: a single node acknowledged it.
    while offset < plog.log_end_offset:
        found = plog.read_slice(offset, REPLAY_READ_BYTES, None, True)
        if found is None:
            return
        try:
            data = found.read_bytes()
        finally:
            found.close()
        advanced = offset
        for header, records in decode_batches(data):
            if header.next_offset <= offset:
                continue
            yield header, records
            advanced = header.next_offset
        if advanced == offset:
            return  # nothing whole could be read: a torn tail recovery will cut
        offset = advanced


def group_metadata_append_error(error: ErrorCode) -> ErrorCode:
    """What a failed group metadata write tells the member (Kafka's
    appendGroupMetadataErrorToResponseError)."""
    if error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                 ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return error


def offset_commit_append_error(error: ErrorCode) -> ErrorCode:
    """What a failed offset commit write tells the client (Kafka's OffsetCommit error mapping)."""
    if error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                 ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return error


# -- the topic on this broker -----------------------------------------------------------------------


class OffsetsTopic:
    """__consumer_offsets on this broker: created when missing, appended to as leader, read back."""

    def __init__(self, broker) -> None:
        self.broker = broker
        self.num_partitions = 0

    def ensure_created(self) -> int:
        """Create the topic when missing (Kafka's internal topic settings); the partition count."""
        config = self.broker.config
        meta = self.broker.metadata.topic(OFFSETS_TOPIC)
        if meta is None:
            replication = min(int(config["offsets.topic.replication.factor"]), self._live_brokers())
            meta = self.broker.create_topic(
                OFFSETS_TOPIC,
                int(config["offsets.topic.num.partitions"]),
                replication,
                {
                    "cleanup.policy": ["compact"],
                    "segment.bytes": int(config["offsets.topic.segment.bytes"]),
                    "compression.type": "producer",
                },
            )
        # An existing topic keeps its partition count (groups must stay where they are).
        self.num_partitions = meta.partitions
        return self.num_partitions

    def _live_brokers(self) -> int:
        return max(1, len(self.broker.metadata.live_brokers()))

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def append(self, partition: int, records: list[tuple[bytes, bytes | None]], *, now_ms: int,
               producer_id: int = -1, producer_epoch: int = -1, transactional: bool = False) -> int:
        """Write the records as one batch (atomically) as the partition's leader; the offset of
        the first. Raises AppendFailed."""
        batch = bytearray(build_batch(
            [Record(i, 0, key, value) for i, (key, value) in enumerate(records)],
            base_timestamp=now_ms,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=0,  # as Kafka's coordinator runtime builds its batches, whoever the producer
            is_transactional=transactional,
        ))
        return append_internal_batch(self.broker, OFFSETS_TOPIC, partition, batch)

    def read_batches(self, partition: int) -> Iterator[tuple[BatchHeader, list]]:
        """Every batch of the partition, from the log start offset to the log end offset."""
        return read_internal_batches(self.broker, OFFSETS_TOPIC, partition)
