"""Transaction version 2 (KIP-890 part 2) request by request, against a broker process.

Each sequence below was sent with client/wire_client.py to Apache Kafka 4.3.0 (KRaft single node,
transaction.version 2 finalized) and to kafka-wire; the expected answers are Kafka's. Kafka writes
markers after answering EndTxn, so both runs wait after each EndTxn until DescribeTransactions
no longer says Prepare* (kafka-wire writes them before answering).
"""

from __future__ import annotations

import time
import uuid

import pytest

from client import ClusterClient
from kafka_wire.errors import ErrorCode as E
from kafka_wire.record_codec import Record, build_batch

pytestmark = pytest.mark.timeout(120)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def batch(producer_id: int, epoch: int, sequence: int) -> bytearray:
    return bytearray(build_batch([Record(0, 0, b"k", b"v")], producer_id=producer_id, producer_epoch=epoch,
                                 base_sequence=sequence, is_transactional=True))


class Transactor:
    """One transactional id's requests, as a producer (or a test) sends them."""

    def __init__(self, cluster: ClusterClient, topic: str) -> None:
        self.cluster, self.topic = cluster, topic
        self.txid, self.group = unique("tv2"), unique("tv2-group")
        cluster.any_broker().call("CreateTopics", 7, {"topics": [{
            "name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout_ms": 30000})
        self.coordinator = cluster.coordinator(self.txid, 1, timeout=30)
        answer = self.coordinator.call("InitProducerId", 5, {"transactional_id": self.txid,
                                                              "transaction_timeout_ms": 60000})
        assert answer.error_code == 0
        self.producer_id, self.epoch = answer.producer_id, answer.producer_epoch
        self.groups = cluster.coordinator(self.group, 0, timeout=30)

    def state(self) -> str:
        return self.coordinator.call("DescribeTransactions", 0, {"transactional_ids": [self.txid]}) \
            .transaction_states[0].transaction_state

    def end(self, epoch: int, committed: bool, version: int = 5, producer_id: int | None = None):
        answer = self.coordinator.call("EndTxn", version, {
            "transactional_id": self.txid, "producer_id": self.producer_id if producer_id is None else producer_id,
            "producer_epoch": epoch, "committed": committed})
        for _ in range(50):
            if not self.state().startswith("Prepare"):
                break
            time.sleep(0.1)
        if version < 5:
            return answer.error_code
        # The producer id is the same one here unless told otherwise.
        return answer.error_code, answer.producer_epoch, answer.producer_id in (self.producer_id, -1)

    def produce(self, epoch: int, sequence: int, version: int = 12) -> int:
        answer = self.cluster.leader(self.topic, 0).call("Produce", version, {
            "transactional_id": self.txid, "acks": -1, "timeout_ms": 10000,
            "topic_data": [{"name": self.topic, "partition_data": [
                {"index": 0, "records": batch(self.producer_id, epoch, sequence)}]}]})
        return answer.responses[0].partition_responses[0].error_code

    def commit_offset(self, version: int, epoch: int, offset: int) -> int:
        answer = self.groups.call("TxnOffsetCommit", version, {
            "transactional_id": self.txid, "group_id": self.group, "producer_id": self.producer_id,
            "producer_epoch": epoch, "generation_id": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"name": self.topic, "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                             "committed_leader_epoch": -1,
                                                             "committed_metadata": ""}]}]})
        return answer.topics[0].partitions[0].error_code

    def committed_offset(self) -> tuple[int, int]:
        group = self.groups.call("OffsetFetch", 8, {"groups": [{"group_id": self.group, "topics": [
            {"name": self.topic, "partition_indexes": [0]}]}], "require_stable": True}).groups[0]
        partition = group.topics[0].partitions[0]
        return partition.committed_offset, partition.error_code


@pytest.fixture
def transactor(shared_broker):
    with ClusterClient(shared_broker.bootstrap) as cluster:
        yield Transactor(cluster, unique("tv2-topic"))


def test_end_txn_v5_bumps_the_epoch_and_tells_retries_apart(transactor):
    t = transactor
    assert t.epoch == 0
    steps = [
        ("commit with nothing added", t.end(0, True), (E.INVALID_TXN_STATE, -1, True)),
        ("Produce v11 to a partition not added", t.produce(0, 0, 11), E.TRANSACTION_ABORTABLE),
        ("Produce v10 to a partition not added", t.produce(0, 0, 10), E.INVALID_TXN_STATE),
        ("Produce v12 adds the partition", t.produce(0, 0), E.NONE),
        ("commit", t.end(0, True), (E.NONE, 1, True)),
        ("the commit retried", t.end(0, True), (E.NONE, 1, True)),
        ("an abort at the retried epoch", t.end(0, False), (E.INVALID_TXN_STATE, -1, True)),
        ("a commit of nothing at the new epoch", t.end(1, True), (E.INVALID_TXN_STATE, -1, True)),
        ("an abort of nothing at the new epoch", t.end(1, False), (E.NONE, 2, True)),
        ("that abort retried", t.end(1, False), (E.NONE, 2, True)),
        ("an abort two epochs behind", t.end(0, False), (E.PRODUCER_FENCED, -1, True)),
        ("EndTxn v4 (TV1 rules) at the current epoch", t.end(2, False, 4), E.NONE),
        ("a write at an epoch the markers fenced", t.produce(0, 1), E.INVALID_PRODUCER_EPOCH),
        ("Produce v12 at the current epoch", t.produce(2, 0), E.NONE),
        ("EndTxn v4 commits a TV2-started transaction without a bump", t.end(2, True, 4), E.NONE),
        ("EndTxn v5 after it: nothing to commit", t.end(2, True), (E.INVALID_TXN_STATE, -1, True)),
        ("Produce v12 again at that epoch", t.produce(2, 1), E.NONE),
        ("abort", t.end(2, False), (E.NONE, 3, True)),
        ("another producer id", t.end(3, False, 5, t.producer_id + 1000), (E.INVALID_PRODUCER_ID_MAPPING, -1, True)),
    ]
    for what, got, kafka in steps:
        assert got == kafka, f"{what}: got {got}, Kafka 4.3.0 answers {kafka}"
    assert t.state() == "CompleteAbort"


def test_txn_offset_commit_v5_adds_the_offsets_partition(transactor):
    t = transactor
    steps = [
        ("TxnOffsetCommit v3 without AddOffsetsToTxn", t.commit_offset(3, 0, 5), E.INVALID_TXN_STATE),
        ("TxnOffsetCommit v4 without AddOffsetsToTxn", t.commit_offset(4, 0, 5), E.TRANSACTION_ABORTABLE),
        ("TxnOffsetCommit v5 adds the partition", t.commit_offset(5, 0, 7), E.NONE),
        ("pending until the commit", t.committed_offset(), (-1, E.UNSTABLE_OFFSET_COMMIT)),
        ("commit", t.end(0, True), (E.NONE, 1, True)),
        ("committed", t.committed_offset(), (7, E.NONE)),
        ("TxnOffsetCommit v5 at the fenced epoch", t.commit_offset(5, 0, 9), E.INVALID_PRODUCER_EPOCH),
        ("TxnOffsetCommit v5 at the new epoch", t.commit_offset(5, 1, 9), E.NONE),
        ("abort", t.end(1, False), (E.NONE, 2, True)),
        ("the aborted offset is gone", t.committed_offset(), (7, E.NONE)),
        # transaction.version 1 rules on the same transactional id.
        ("AddOffsetsToTxn v4", t.coordinator.call("AddOffsetsToTxn", 4, {
            "transactional_id": t.txid, "producer_id": t.producer_id, "producer_epoch": 2,
            "group_id": t.group}).error_code, E.NONE),
        ("TxnOffsetCommit v3", t.commit_offset(3, 2, 11), E.NONE),
        ("TxnOffsetCommit v3 at a fenced epoch", t.commit_offset(3, 1, 12), E.INVALID_PRODUCER_EPOCH),
        ("TxnOffsetCommit v2 at a fenced epoch", t.commit_offset(2, 1, 12), E.INVALID_PRODUCER_EPOCH),
        ("EndTxn v4 commit", t.end(2, True, 4), E.NONE),
        ("committed", t.committed_offset(), (11, E.NONE)),
    ]
    for what, got, kafka in steps:
        assert got == kafka, f"{what}: got {got}, Kafka 4.3.0 answers {kafka}"
