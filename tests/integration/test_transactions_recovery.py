"""A broker that dies in the middle of ending a transaction finishes it after the restart.

The windows are too small to hit with a SIGKILL from outside (the markers are written right after
PrepareCommit/PrepareAbort), so these tests run the broker's objects in this process on real log
directories: the markers are made to fail, the process "dies" (nothing is closed or flushed, no
clean-shutdown marker), and a second broker starts from the same directories.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from broker.config import BrokerConfig
from broker.node import Broker
from coordinator.offsets_store import OFFSETS_TOPIC
from coordinator.transaction_coordinator import ADD_PARTITION
from coordinator.txn_metadata import TransactionState
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch

TXID = "recovering"
TOPIC = "orders"


def config(tmp_path) -> BrokerConfig:
    return BrokerConfig({"log.dirs": str(tmp_path / "logs"), "listeners": "PLAINTEXT://127.0.0.1:0",
                         "offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3"})


async def started_broker(tmp_path) -> Broker:
    broker = Broker(config(tmp_path))
    broker.load()
    await broker.groups.start(broker)
    await broker.transactions.start(broker)
    return broker


async def crash(broker: Broker) -> None:
    """Stop the coordinators' timers; leave every file as a killed process would."""
    await broker.transactions.stop()
    await broker.groups.stop()


def transactional_batch(producer_id: int, epoch: int, sequence: int, values: list[bytes]) -> bytearray:
    records = [Record(i, 0, b"k", v) for i, v in enumerate(values)]
    return bytearray(build_batch(records, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence,
                                 is_transactional=True))


def open_transaction(broker: Broker, transaction_version: int = 0) -> tuple[int, int]:
    """A transaction with data in orders-0 and orders-1 and an offset commit of group g; with
    transaction_version 2 its partitions are added as Produce v12 / TxnOffsetCommit v5 add them."""
    coordinator = broker.transactions
    result = coordinator.handle_init_producer_id(TXID, 60000)
    assert result.error == ErrorCode.NONE
    pid, epoch = result.producer_id, result.producer_epoch
    offsets_partition = broker.groups.partition_for("g")
    partitions = [(TOPIC, 0), (TOPIC, 1), (OFFSETS_TOPIC, offsets_partition)]
    assert coordinator.handle_add_partitions(TXID, pid, epoch, partitions,
                                             client_transaction_version=transaction_version) == ErrorCode.NONE
    for partition in (0, 1):
        broker.append_records(TOPIC, partition, transactional_batch(pid, epoch, 0, [b"a", b"b"]), transactional_id=TXID)
    errors = broker.groups.commit_transactional_offsets(
        group_id="g", producer_id=pid, producer_epoch=epoch, generation_id=-1, member_id="",
        group_instance_id=None, offsets=[(TOPIC, 0, 2, -1, None)])
    assert errors == {(TOPIC, 0): ErrorCode.NONE}
    return pid, epoch


def committed_offset(broker: Broker) -> int:
    error, offsets = broker.groups.fetch_offsets(group_id="g", partitions=[(TOPIC, 0)])
    assert error == ErrorCode.NONE
    return offsets[0][2]


def fail_markers(broker: Broker) -> None:
    broker.transactions.write_markers = lambda pid, epoch, ce, committed, partitions, tv=0: dict.fromkeys(
        partitions, ErrorCode.KAFKA_STORAGE_ERROR)


def read_committed(broker: Broker, partition: int):
    return broker.read_partition(TOPIC, partition, 0, max_bytes=1 << 20, min_one=True, read_committed=True)


@pytest.mark.parametrize("transaction_version", [0, 2], ids=["tv0", "tv2"])
@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_prepared_transaction_is_completed_after_a_crash(tmp_path, commit, transaction_version):
    async def scenario():
        broker = await started_broker(tmp_path)
        broker.create_topic(TOPIC, 2, 1, {})
        pid, epoch = open_transaction(broker, transaction_version)
        fail_markers(broker)
        ended = broker.transactions.end_transaction(TXID, pid, epoch, commit,
                                                    client_transaction_version=transaction_version)
        # TV2 (EndTxn v5) answers the bumped epoch the producer goes on with.
        assert (ended.error, ended.producer_id, ended.producer_epoch) == (
            (ErrorCode.NONE, pid, epoch + 1) if transaction_version == 2 else (ErrorCode.NONE, -1, -1))
        prepared = TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT
        assert broker.transactions.transactions[TXID].state == prepared
        # Nothing of the transaction is visible yet, on either partition, nor its offsets.
        assert [read_committed(broker, p).records for p in (0, 1)] == [None, None]
        assert committed_offset(broker) == -1
        await crash(broker)

        restarted = await started_broker(tmp_path)
        try:
            done = TransactionState.COMPLETE_COMMIT if commit else TransactionState.COMPLETE_ABORT
            assert restarted.transactions.transactions[TXID].state == done
            for partition in (0, 1):
                read = read_committed(restarted, partition)
                assert read.last_stable_offset == read.high_watermark == 3  # two records and a marker
                assert read.records is not None
                assert read.aborted_transactions == ([] if commit else [{"producer_id": pid, "first_offset": 0}])
            assert committed_offset(restarted) == (2 if commit else -1)
            if transaction_version == 2:
                # The markers carried the bumped epoch: the producer's old epoch is fenced, and it
                # carries on at the new one with no InitProducerId.
                with pytest.raises(Exception) as refused:
                    restarted.append_records(TOPIC, 0, transactional_batch(pid, epoch, 2, [b"late"]),
                                             transactional_id=TXID)
                assert getattr(refused.value, "error_name", None) == "INVALID_PRODUCER_EPOCH"
                restarted.append_records(TOPIC, 0, transactional_batch(pid, epoch + 1, 0, [b"next"]),
                                         transactional_id=TXID, transaction_operation=ADD_PARTITION)
                assert restarted.transactions.transactions[TXID].partitions == {(TOPIC, 0)}
                assert restarted.transactions.end_transaction(TXID, pid, epoch + 1, True, 2).producer_epoch == \
                    epoch + 2
                assert read_committed(restarted, 0).last_stable_offset == 5
            else:
                # The producer carries on with its next epoch.
                assert restarted.transactions.handle_init_producer_id(TXID, 60000).producer_epoch == epoch + 1
        finally:
            await crash(restarted)
            restarted.close()

    asyncio.run(scenario())


def test_ongoing_transaction_after_a_crash_is_aborted_by_its_timeout(tmp_path):
    async def scenario():
        broker = await started_broker(tmp_path)
        broker.create_topic(TOPIC, 2, 1, {})
        pid, epoch = open_transaction(broker)
        await crash(broker)

        restarted = await started_broker(tmp_path)
        try:
            coordinator = restarted.transactions
            assert coordinator.transactions[TXID].state == TransactionState.ONGOING
            # Recovered producer state still holds the last stable offset at the transaction.
            assert read_committed(restarted, 0).last_stable_offset == 0
            assert coordinator.abort_timed_out_transactions() == []
            coordinator.clock_ms = lambda: time.time_ns() // 1_000_000 + 60001
            assert coordinator.abort_timed_out_transactions() == [TXID]
            await coordinator.markers_settled()  # (log.flush.on.ack: COMPLETE_ABORT once the markers are synced)
            assert coordinator.transactions[TXID].state == TransactionState.COMPLETE_ABORT
            for partition in (0, 1):
                read = read_committed(restarted, partition)
                assert read.last_stable_offset == read.high_watermark == 3
                assert read.aborted_transactions == [{"producer_id": pid, "first_offset": 0}]
            assert committed_offset(restarted) == -1
            # The aborting epoch fenced the producer: its next write is refused.
            with pytest.raises(Exception) as refused:
                restarted.append_records(TOPIC, 0, transactional_batch(pid, epoch, 1, [b"late"]),
                                         transactional_id=TXID)
            assert getattr(refused.value, "error_name", None) == "INVALID_PRODUCER_EPOCH"
        finally:
            await crash(restarted)
            restarted.close()

    asyncio.run(scenario())
