"""The internal topic __transaction_state: which partition holds a transactional id, its records, the log under it.

Every transition of a transactional id is one record, keyed by the id, so compaction keeps the
latest state of each and a tombstone (null value) removes an expired id:

    TransactionLogKey(transactional id) -> TransactionLogValue(producer id, epoch, timeout, state,
                                           partitions (null when Empty), timestamps), or null

The partition is Kafka's `Utils.abs(transactionalId.hashCode()) % transaction.state.log.num.partitions`.
Values are written at version 0 while the finalized transaction.version is 0, as Kafka 3.x writes
them, and at the flexible version 1 from transaction.version 1 on, as Kafka 4 does: v1 adds the
previous and next producer ids and the client's transaction version (tagged fields), which a TV2
transaction needs after a restart. The last producer epoch is not stored, as in Kafka.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from kafka_wire.errors import ErrorCode
from kafka_wire.internal_records import (
    PartitionsSchema,
    TransactionLogValue,
    decode_transaction_log_key,
    decode_transaction_log_value,
    encode_transaction_log_key,
    encode_transaction_log_value,
)
from kafka_wire.primitives import DecodeError
from kafka_wire.record_codec import Record, build_batch

from .offsets_store import append_internal_batch, partition_for, read_internal_batches
from .txn_metadata import TransactionMetadata, TransactionState, TxnTransit

logger = logging.getLogger("kafka_wire.coordinator")

TRANSACTION_STATE_TOPIC = "__transaction_state"
DEFAULT_SEGMENT_BYTES = 104857600  # transaction.state.log.segment.bytes


def transaction_record(transactional_id: str, transit: TxnTransit, version: int = 0) -> tuple[bytes, bytes | None]:
    """The record of a transition (Kafka's TransactionLog.valueToBytes) at value `version` (0 or 1);
    Dead is a tombstone."""
    key = encode_transaction_log_key(transactional_id)
    if transit.state == TransactionState.DEAD:
        return key, None
    if transit.state == TransactionState.EMPTY and transit.partitions:
        raise ValueError(f"{transactional_id}: an Empty transaction cannot have partitions")
    partitions = None
    if transit.state != TransactionState.EMPTY:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(transit.partitions):
            by_topic.setdefault(topic, []).append(partition)
        partitions = [PartitionsSchema(topic=topic, partition_ids=ids) for topic, ids in by_topic.items()]
    value = TransactionLogValue(
        producer_id=transit.producer_id,
        producer_epoch=transit.producer_epoch,
        transaction_timeout_ms=transit.txn_timeout_ms,
        transaction_status=int(transit.state),
        transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=transit.txn_last_update_timestamp,
        transaction_start_timestamp_ms=transit.txn_start_timestamp,
        client_transaction_version=transit.client_transaction_version,
    )
    if version >= 1:
        value.previous_producer_id = transit.last_producer_id
        value.next_producer_id = transit.next_producer_id
    return key, encode_transaction_log_value(value, version)


@dataclass
class LoggedTransaction:
    """One decoded record: a transactional id and its metadata (None for a tombstone)."""

    transactional_id: str
    metadata: TransactionMetadata | None


def decode_transaction_record(key, value) -> LoggedTransaction:
    """Raises DecodeError/ValueError for records we cannot read."""
    transactional_id = decode_transaction_log_key(key).transactional_id
    if value is None:
        return LoggedTransaction(transactional_id, None)
    decoded = decode_transaction_log_value(value)
    partitions = set()
    for entry in decoded.transaction_partitions or []:
        partitions.update((entry.topic, p) for p in entry.partition_ids)
    metadata = TransactionMetadata(
        transactional_id=transactional_id,
        producer_id=decoded.producer_id,
        txn_timeout_ms=decoded.transaction_timeout_ms,
        txn_last_update_timestamp=decoded.transaction_last_update_timestamp_ms,
        producer_epoch=decoded.producer_epoch,
        state=TransactionState(decoded.transaction_status),
        partitions=partitions,
        txn_start_timestamp=decoded.transaction_start_timestamp_ms,
        # v0 values carry none of these: their defaults (-1, -1, 0) are what Kafka reads.
        last_producer_id=decoded.previous_producer_id,
        next_producer_id=decoded.next_producer_id,
        client_transaction_version=decoded.client_transaction_version,
    )
    return LoggedTransaction(transactional_id, metadata)


def append_transaction_log_error(error: ErrorCode) -> ErrorCode:
    """What a failed write to __transaction_state tells the client (Kafka's
    TransactionStateManager.appendTransactionToLog error mapping)."""
    if error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                 ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return error


class TransactionStateTopic:
    """__transaction_state on this broker: created when missing, appended to as leader, read back."""

    def __init__(self, broker) -> None:
        self.broker = broker
        self.num_partitions = 0

    def _config(self, name: str, default):
        config = self.broker.config
        value = config.get(name)
        if value is None:
            raw = getattr(config, "original", {}).get(name)
            value = default if raw is None else type(default)(raw)
        return value

    def existing_partitions(self) -> int:
        """The partition count of the topic, 0 when it was never created."""
        meta = self.broker.metadata.topic(TRANSACTION_STATE_TOPIC)
        self.num_partitions = meta.partitions if meta is not None else 0
        return self.num_partitions

    def ensure_created(self) -> int:
        """Create the topic when missing, with Kafka's settings for it; the partition count."""
        meta = self.broker.metadata.topic(TRANSACTION_STATE_TOPIC)
        if meta is None:
            replication = min(int(self._config("transaction.state.log.replication.factor", 3)), self._live_brokers())
            min_isr = min(int(self._config("transaction.state.log.min.isr", 2)), replication)
            meta = self.broker.create_topic(
                TRANSACTION_STATE_TOPIC,
                int(self._config("transaction.state.log.num.partitions", 50)),
                replication,
                {
                    "cleanup.policy": ["compact"],
                    "segment.bytes": int(self._config("transaction.state.log.segment.bytes", DEFAULT_SEGMENT_BYTES)),
                    "compression.type": "uncompressed",
                    "min.insync.replicas": min_isr,
                    "unclean.leader.election.enable": False,
                },
            )
        # An existing topic keeps its partition count (transactional ids must stay where they are).
        self.num_partitions = meta.partitions
        return self.num_partitions

    def _live_brokers(self) -> int:
        return max(1, len(self.broker.metadata.live_brokers()))

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def coordinator_epoch(self, partition: int) -> int:
        """The leader epoch of the partition: markers carry it so that partitions can tell a
        coordinator that lost the partition from its successor."""
        return max(0, self.broker.metadata.partition_state(TRANSACTION_STATE_TOPIC, partition).leader_epoch)

    def append(self, partition: int, record: tuple[bytes, bytes | None], now_ms: int) -> int:
        """Write one record as the partition's leader; its offset. Raises AppendFailed."""
        key, value = record
        batch = bytearray(build_batch([Record(0, 0, key, value)], base_timestamp=now_ms))
        return append_internal_batch(self.broker, TRANSACTION_STATE_TOPIC, partition, batch)

    def read_transactions(self, partition: int) -> Iterator[LoggedTransaction]:
        """Every readable record of the partition in log order."""
        for header, records in read_internal_batches(self.broker, TRANSACTION_STATE_TOPIC, partition):
            if header.is_control:
                continue
            for record in records:
                try:
                    yield decode_transaction_record(record.key, record.value)
                except (DecodeError, UnicodeDecodeError, ValueError) as exc:
                    logger.warning("skipping unreadable record at %s-%d offset %d: %s", TRANSACTION_STATE_TOPIC,
                                partition, header.base_offset + record.offset_delta, exc)
