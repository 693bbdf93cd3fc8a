"""A cluster's transaction coordinator sends a transaction's markers only once its PrepareCommit or
PrepareAbort record is in the in-sync replicas of __transaction_state, as Kafka does (its
appendTransactionToLog callback runs after the acks=-1 append). Found by the faults harness
(pause-coordinator x txn, partial-txn 1): a coordinator aborted a timed-out transaction, its
PrepareAbort was truncated when it lost the partition, its ABORT markers had reached two of the
three partitions, and the next coordinator, which read the transaction as still open, committed the
client's EndTxn into the third."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from broker.cluster.transaction_failover import ReplicatedTransactionCoordinator
from coordinator.transaction_coordinator import TransactionCoordinator
from coordinator.txn_metadata import TransactionState
from kafka_wire.errors import ErrorCode
from test_transaction_coordinator import Clock, Markers, MemoryStateLog

TXID = "replicated-txn"
PARTITIONS = [("t", 0), ("t", 1), ("t", 2)]


class StateLogPartition:
    """__transaction_state's partition as the coordinator sees it: an end offset that follows the
    appends and a high watermark that moves when the test says the followers fetched."""

    def __init__(self) -> None:
        self.log_end_offset = 0
        self.high_watermark = 0
        self.waiters: list[tuple[int, asyncio.Future]] = []

    async def wait_for_replication(self, topic, partition, required_offset, timeout_ms):
        if self.high_watermark >= required_offset:
            return ErrorCode.NONE
        future = asyncio.get_running_loop().create_future()
        self.waiters.append((required_offset, future))
        return await future

    def replicate(self, error: ErrorCode = ErrorCode.NONE) -> None:
        if error == ErrorCode.NONE:
            self.high_watermark = self.log_end_offset
        for required, future in self.waiters:
            if not future.done() and (error != ErrorCode.NONE or self.high_watermark >= required):
                future.set_result(error)
        self.waiters = [(r, f) for r, f in self.waiters if not f.done()]


class ReplicatedStateLog(MemoryStateLog):
    def __init__(self) -> None:
        super().__init__(partitions=1)
        self.partition = StateLogPartition()
        self.broker = SimpleNamespace(logs=SimpleNamespace(get=lambda topic, p: self.partition),
                                      replicas=self.partition)

    def append(self, partition: int, record, now_ms: int) -> int:
        offset = super().append(partition, record, now_ms)
        self.partition.log_end_offset = offset + 1
        return offset


def coordinator_with(markers: Markers, state_log: ReplicatedStateLog, clock: Clock) -> ReplicatedTransactionCoordinator:
    coordinator = ReplicatedTransactionCoordinator(clock_ms=clock)
    ids = iter(range(1000, 2000))
    TransactionCoordinator.attach(coordinator, {}, state_log, markers, lambda: next(ids))
    coordinator.active = True
    coordinator.owned_partitions = {0}
    return coordinator


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def open_transaction(coordinator, state_log):
    started = coordinator.handle_init_producer_id(TXID, 30000, -1, -1)
    assert coordinator.handle_add_partitions(TXID, started.producer_id, started.producer_epoch,
                                             PARTITIONS) == ErrorCode.NONE
    state_log.partition.replicate()
    return started


def test_commit_markers_wait_for_the_prepare_commit_record_to_be_replicated():
    async def scenario():
        markers, state_log, clock = Markers(), ReplicatedStateLog(), Clock()
        coordinator = coordinator_with(markers, state_log, clock)
        started = open_transaction(coordinator, state_log)
        assert coordinator.handle_end_transaction(TXID, started.producer_id, started.producer_epoch,
                                                  True) == ErrorCode.NONE
        await settle()
        assert coordinator.transactions[TXID].state == TransactionState.PREPARE_COMMIT
        assert markers.written == []  # PrepareCommit only in the leader's log so far
        state_log.partition.replicate()
        await settle()
        assert [m[3:] for m in markers.written] == [(True, tp) for tp in PARTITIONS]
        assert coordinator.transactions[TXID].state == TransactionState.COMPLETE_COMMIT

    asyncio.run(scenario())


def test_a_timed_out_transaction_whose_prepare_abort_is_lost_writes_no_marker():
    async def scenario():
        markers, state_log, clock = Markers(), ReplicatedStateLog(), Clock()
        coordinator = coordinator_with(markers, state_log, clock)
        open_transaction(coordinator, state_log)
        clock.now += 31000
        assert coordinator.abort_timed_out_transactions() == [TXID]
        await settle()
        assert markers.written == []
        # The partition moves to another broker before the followers fetched the PrepareAbort.
        coordinator.resign(0)
        state_log.partition.replicate(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        await settle()
        assert markers.written == []

    asyncio.run(scenario())


def test_a_prepared_transaction_loaded_by_a_new_leader_waits_for_its_record_too():
    async def scenario():
        markers, state_log, clock = Markers(), ReplicatedStateLog(), Clock()
        first = coordinator_with(markers, state_log, clock)
        started = open_transaction(first, state_log)
        first.handle_end_transaction(TXID, started.producer_id, started.producer_epoch, False)
        await settle()
        first.resign(0)
        # Another broker's coordinator takes the partition with the PrepareAbort past its high watermark.
        second = coordinator_with(markers, state_log, clock)
        second.owned_partitions = set()
        second.become_leader(0)
        await settle()
        assert markers.written == []
        state_log.partition.replicate()
        await settle()
        assert [m[3:] for m in markers.written] == [(False, tp) for tp in PARTITIONS]

    asyncio.run(scenario())
