"""Transactions across workers: the coordinator runs on worker 0 (it owns `__transaction_state`),
the partitions a transaction writes may be owned by any worker.

Markers: the primary's coordinator writes the markers of its own partitions at once and sends the
others to their owners (`markers` call), as Kafka's coordinator sends WriteTxnMarkers to each
partition's leader; until an owner answers, the marker counts as REQUEST_TIMED_OUT and the
coordinator's retry picks the answer up, brought forward to the moment it arrives.

Verification (KIP-890): a transactional batch appended on a worker other than the primary is checked
(or, for a transaction.version 2 producer, its partition added) at the coordinator first, as a
partition leader in a cluster asks the coordinator's broker with AddPartitionsToTxn v5: here with
a `verify` call to worker 0, answered as that request would be.
"""

from __future__ import annotations

import asyncio
import logging

from coordinator.transaction_coordinator import ADD_PARTITION, DEFAULT_ERROR, TransactionCoordinator, produce_error_of
from kafka_wire.errors import ErrorCode
from kafka_wire.records import read_batch_header

from ..cluster.transaction_failover import ReplicatedTransactionCoordinator, TransactionMarkerChannel
from .link import RemoteFailure, WorkerGone
from .ownership import PRIMARY

logger = logging.getLogger("kafka_wire.workers")

# How long EndTxn waits for another worker's markers before answering anyway.
MARKERS_SETTLE_SECONDS = 5.0


class WorkerMarkerChannel(TransactionMarkerChannel):
    """The primary's marker writer: its own partitions now, the others' through their owners (the
    cluster's channel keeps the answers and markers under way the same way; `forget` is its)."""

    def __init__(self, broker, coordinator) -> None:
        super().__init__(broker)
        self.coordinator = coordinator
        self._retry_soon: asyncio.Handle | None = None
        # EndTxn answers waiting for their transaction's markers: transactional id -> futures.
        self._settling: dict[str, list[asyncio.Future]] = {}

    def write(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, committed: bool,
              partitions, transaction_version: int = 0) -> dict[tuple[str, int], ErrorCode]:
        workers = self.broker.workers
        results: dict[tuple[str, int], ErrorCode] = {}
        local = []
        remote: dict[int, list[tuple[tuple, int]]] = {}
        for topic, partition in partitions:
            key = (producer_id, producer_epoch, committed, topic, partition)
            if key in self.answers:
                results[(topic, partition)] = self.answers.pop(key)
                continue
            owner = workers.owner(topic, partition)
            if owner == workers.index:
                local.append((topic, partition))
                continue
            if key not in self.in_flight:
                number = next(self._numbers)
                self.in_flight[key] = number
                remote.setdefault(owner, []).append((key, number))
            results[(topic, partition)] = ErrorCode.REQUEST_TIMED_OUT  # answered at a later try
        if local:
            results.update(self.broker.write_txn_markers(producer_id, producer_epoch, coordinator_epoch, committed,
                                                         local, transaction_version))
        loop = asyncio.get_running_loop() if remote else None
        for owner, markers in remote.items():
            loop.create_task(self._send(owner, producer_id, producer_epoch, coordinator_epoch, committed, markers,
                                        transaction_version))
        return {tp: results[tp] for tp in partitions}

    async def _send(self, owner: int, producer_id, producer_epoch, coordinator_epoch, committed, markers,
                    transaction_version) -> None:
        errors = {key: ErrorCode.KAFKA_STORAGE_ERROR for key, _ in markers}
        try:
            answer, _, _ = await self.broker.workers.links[owner].call(
                "markers", (producer_id, producer_epoch, coordinator_epoch, committed,
                            [key[3:] for key, _ in markers], transaction_version))
            for (key, _), error in zip(markers, answer):
                errors[key] = ErrorCode(error)
        except (WorkerGone, RemoteFailure) as exc:
            logger.info("writing transaction markers at worker %d failed: %s", owner, exc)
        for key, number in markers:
            if self.in_flight.get(key) == number:
                del self.in_flight[key]
                self.answers[key] = errors[key]
        if self._retry_soon is None:
            self._retry_soon = asyncio.get_running_loop().call_soon(self._retry)

    def _retry(self) -> None:
        self._retry_soon = None
        self.coordinator._retry_guarded()
        for transactional_id in [t for t in self._settling if t not in self.coordinator._incomplete]:
            for fut in self._settling.pop(transactional_id):
                if not fut.done():
                    fut.set_result(None)

    async def settled(self, transactional_id: str, timeout: float) -> None:
        """Until the transaction's markers are all written (its Complete* record appended), or the
        time is up: EndTxn answers then, as on one process, where markers are written before it
        answers (a next AddPartitionsToTxn or EndTxn finds the transaction complete, not
        CONCURRENT_TRANSACTIONS or, for an EndTxn at the bumped epoch of a transaction.version 2
        producer, PRODUCER_FENCED). The markers may take several rounds: those written here are
        synced (a sync task of the coordinator's), another worker's answers arrive (a retry this
        channel brings forward), and with log.flush.on.ack those are synced in turn before Complete*."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        coordinator = self.coordinator
        while (remaining := deadline - loop.time()) > 0:
            syncing = coordinator._syncing.get(transactional_id)
            if syncing is not None:
                await asyncio.wait([syncing], timeout=remaining)
                continue
            if transactional_id not in coordinator._incomplete:
                return
            fut = loop.create_future()
            self._settling.setdefault(transactional_id, []).append(fut)
            try:
                await asyncio.wait_for(fut, remaining)
            except asyncio.TimeoutError:
                return  # answered anyway: the coordinator's retries finish the transaction


class PrimaryTransactionCoordinator(TransactionCoordinator):
    """Worker 0's coordinator: the single node's, writing markers through WorkerMarkerChannel."""

    def attach(self, config, state_log, write_markers, next_producer_id) -> None:
        self.channel = WorkerMarkerChannel(state_log.broker, self)
        super().attach(config, state_log, self.channel.write, next_producer_id)

    async def replicated(self, transactional_id: str | None, error: ErrorCode) -> ErrorCode:
        error = await super().replicated(transactional_id, error)
        if transactional_id is not None:
            # (Also after CONCURRENT_TRANSACTIONS from an InitProducerId that started an abort: the
            # client's retry then finds it done, as on one process.)
            await self.channel.settled(transactional_id, MARKERS_SETTLE_SECONDS)
        return error


async def serve_markers(broker, meta) -> tuple:
    """The `markers` call, at the partitions' owner: append each marker (with log.flush.on.ack
    answered once synced); the error per partition."""
    producer_id, producer_epoch, coordinator_epoch, committed, partitions, transaction_version = meta
    partitions = [tuple(tp) for tp in partitions]
    written = broker.write_txn_markers(producer_id, producer_epoch, coordinator_epoch, committed, partitions,
                                       transaction_version)
    appended = [tp for tp in partitions if written[tp] == ErrorCode.NONE]
    if appended and broker.flush_on_ack:
        written.update((tp, error) for tp, error in (await broker.synced_here(appended)).items()
                       if error != ErrorCode.NONE)
    return [int(written[tp]) for tp in partitions], b"", ()


async def serve_verify(broker, meta) -> tuple:
    """The `verify` call, at the primary: AddPartitionsToTxn v5's answer for one partition."""
    transactional_id, producer_id, producer_epoch, topic, partition, operation = meta
    transactions = broker.transactions
    if operation != ADD_PARTITION:
        errors = transactions.handle_verify_partitions(transactional_id, producer_id, producer_epoch,
                                                       [(topic, partition)], abortable=True)
        error = errors[(topic, partition)]
    else:
        known = broker.metadata.topic(topic)
        if known is None or not 0 <= partition < known.partitions:
            error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            error = transactions.handle_add_partitions(transactional_id, producer_id, producer_epoch,
                                                       [(topic, partition)], client_transaction_version=2)
            if error == ErrorCode.NONE:
                error = await transactions.replicated(transactional_id, ErrorCode.NONE)
    if error == ErrorCode.PRODUCER_FENCED:
        error = ErrorCode.INVALID_PRODUCER_EPOCH  # what producers expect here
    elif error == ErrorCode.TRANSACTION_ABORTABLE and operation == DEFAULT_ERROR:
        error = ErrorCode.INVALID_TXN_STATE  # older clients do not know it
    return int(error), b"", ()


class RemoteTransactionChecks(ReplicatedTransactionCoordinator):
    """A worker other than the primary coordinates no transactional id: a transactional write to one
    of its partitions is checked at the primary first (the cluster coordinator's leader-side path,
    with a `verify` call to worker 0 in place of AddPartitionsToTxn to another broker)."""

    def __init__(self, broker) -> None:
        super().__init__()
        self.broker = broker
        self.config = broker.config

    def _not_coordinator(self, transactional_id) -> bool:
        return True

    async def produce_write_error(self, transactional_id: str, topic: str, partition: int, records, plog,
                                  operation: int) -> tuple[ErrorCode, str | None, object | None]:
        header = read_batch_header(records)
        if not header.is_transactional or plog is None:
            return ErrorCode.NONE, None, None
        error, guard = await self._check_write(transactional_id, header.producer_id, header.producer_epoch, topic,
                                               partition, plog, operation, header.base_sequence)
        return (*produce_error_of(error, operation), guard)

    async def _ask_coordinator(self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str,
                               partition: int, operation: int) -> ErrorCode:
        try:
            error, _, _ = await self.broker.workers.links[PRIMARY].call(
                "verify", (transactional_id, producer_id, producer_epoch, topic, partition, operation))
        except (WorkerGone, RemoteFailure) as exc:
            logger.info("asking the transaction coordinator (worker 0) about %s failed: %s", transactional_id, exc)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode(error)
