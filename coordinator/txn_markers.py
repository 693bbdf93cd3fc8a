"""Transaction markers: the COMMIT or ABORT control batch written to each partition of a transaction.

Kafka's coordinator sends WriteTxnMarkers to each partition's leader; on this broker the partitions
are local, so the coordinator (and the WriteTxnMarkers handler, for completeness) append the markers
here directly, as the leader would (Kafka's ReplicaManager.appendRecords with origin COORDINATOR).

A marker closes the producer's open transaction in the partition: the last stable offset moves
past it, and an ABORT is recorded in the aborted-transaction index (the log does both). Markers
written to __consumer_offsets also settle the transaction's offsets in the group coordinator.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import build_control_batch
from kafka_wire.records import InvalidRecordBatch
from log.errors import LogError
from log.producer_state import AppendOrigin

from .offsets_store import OFFSETS_TOPIC, append_error_of

logger = logging.getLogger("kafka_wire.coordinator")

TopicPartition = tuple[str, int]


def write_txn_markers(broker, producer_id: int, producer_epoch: int, coordinator_epoch: int, committed: bool,
                      partitions: Iterable[TopicPartition], transaction_version: int = 0
                      ) -> dict[TopicPartition, ErrorCode]:
    """Append one marker to each partition; the error per partition (NONE when written).
    `transaction_version` is the transaction's (WriteTxnMarkers v2, KIP-1228): a TV2 marker carries
    an epoch one above the transaction's records."""
    results: dict[TopicPartition, ErrorCode] = {}
    offsets_partitions = []
    now_ms = time.time_ns() // 1_000_000
    for topic, partition in partitions:
        plog = broker.partition_log(topic, partition)
        if plog is None:
            results[(topic, partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        state = broker.metadata.partition_state(topic, partition)
        batch = bytearray(build_control_batch(committed, producer_id, producer_epoch, coordinator_epoch,
                                              timestamp=now_ms))
        try:
            plog.append(batch, leader_epoch=state.leader_epoch, origin=AppendOrigin.COORDINATOR,
                        transaction_version=transaction_version)
        except (LogError, InvalidRecordBatch, OSError) as exc:
            logger.warning("could not write the %s marker of producer %d (epoch %d) to %s-%d: %s",
                        "COMMIT" if committed else "ABORT", producer_id, producer_epoch, topic, partition, exc)
            results[(topic, partition)] = append_error_of(exc)
            continue
        broker.leader_appended(topic, partition, plog)
        results[(topic, partition)] = ErrorCode.NONE
        if topic == OFFSETS_TOPIC:
            offsets_partitions.append(partition)
    groups = getattr(broker, "groups", None)
    if offsets_partitions and groups is not None:
        groups.complete_transaction(producer_id, offsets_partitions, committed)
    return results
