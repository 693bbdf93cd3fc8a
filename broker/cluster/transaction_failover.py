"""Transactions in cluster mode: each transactional id lives on the leader of its __transaction_state partition.

As Kafka's TransactionCoordinator.onElection/onResignation: becoming the leader of a
__transaction_state partition replays it (and finishes the transactions it left in
PrepareCommit/PrepareAbort); losing it forgets its transactional ids. Requests for an id of a
partition this broker does not lead answer NOT_COORDINATOR, so clients look the coordinator up
again. Markers go to each partition's leader (TransactionMarkerChannel): appended here when this
broker leads the partition (and, with several workers, this worker owns it), otherwise sent with
WriteTxnMarkers in the background (to this broker itself for another worker's partition); the
coordinator's marker retry collects the answers.

A transaction's first write to a partition (Produce, TxnOffsetCommit) is checked at its
coordinator by the partition's leader before the append, as Kafka's AddPartitionsToTxnManager does:
verified (KIP-890 part 1) or, for a transaction.version 2 producer (Produce v12, TxnOffsetCommit
v5), the partition added to the transaction (part 2). Here when this broker coordinates the
transactional id; otherwise with AddPartitionsToTxn v5 to the broker that does.
"""

from __future__ import annotations

import asyncio
import itertools
import logging

from coordinator.transaction_coordinator import (
    ADD_PARTITION,
    DEFAULT_ERROR,
    EndTxnResult,
    InitProducerIdResult,
    TransactionCoordinator,
    produce_error_of,
)
from coordinator.offsets_store import AppendFailed
from coordinator.txn_log import TRANSACTION_STATE_TOPIC, TransactionStateTopic, append_transaction_log_error
from coordinator.txn_metadata import TransactionState
from kafka_wire.errors import ErrorCode
from kafka_wire.records import read_batch_header

from .replica_fetcher import BrokerConnection

logger = logging.getLogger("kafka_wire.cluster.transactions")

WRITE_TXN_MARKERS_VERSION = 2  # v2 carries the transaction version (KIP-1228)
ADD_PARTITIONS_TO_TXN_VERSION = 5  # a leader's verify-or-add batch (KIP-890), TRANSACTION_ABORTABLE known
_PREPARED_STATES = (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)
# How long a marker or a transaction log write may wait for the in-sync replicas (Kafka's
# request.timeout.ms default, which its coordinator uses for both).
MARKER_REPLICATION_TIMEOUT_MS = 30000


class ReplicatedTransactionStateTopic(TransactionStateTopic):
    """__transaction_state appended to only as a partition's leader; replication moves the high
    watermark (the broker's leadership)."""

    def append(self, partition: int, record, now_ms: int) -> int:
        if not self.broker.replicas.is_leader(TRANSACTION_STATE_TOPIC, partition):
            raise AppendFailed(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return super().append(partition, record, now_ms)


class TransactionMarkerChannel:
    """Writes a transaction's markers at each partition's leader (Kafka's TransactionMarkerChannelManager).

    A marker counts as written once the partition's in-sync replicas have it (Kafka appends markers
    with acks=-1): a marker only the leader had is gone when another replica takes over, and the
    partition would keep the transaction open. Both ways of writing one are therefore asynchronous:
    appended here and awaited (this broker leads the partition) or sent with WriteTxnMarkers, whose
    handler awaits the same. `write` answers REQUEST_TIMED_OUT while either is under way; the answer
    waits in `answers` for the coordinator's next try, which `on_answer` brings forward.

    Every marker under way has its own number. An answer is kept only while its marker is still the
    one wanted for that key: transactions of one producer (same id and, before transaction.version
    2, same epoch) have equal keys, and an answer left over from an earlier transaction (its marker
    written another way meanwhile, or its coordinator gone and back) would otherwise be taken for
    the next one's, leaving that transaction open in the partition.
    """

    def __init__(self, broker) -> None:
        self.broker = broker
        self.answers: dict[tuple, ErrorCode] = {}
        self.in_flight: dict[tuple, int] = {}  # key -> the number of the marker under way
        self._numbers = itertools.count(1)
        self.on_answer = None  # called (no arguments) when an answer arrives

    def write(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, committed: bool,
              partitions, transaction_version: int = 0) -> dict[tuple[str, int], ErrorCode]:
        results: dict[tuple[str, int], ErrorCode] = {}
        local: list[tuple[tuple, int]] = []
        remote: dict[int, list[tuple[tuple, int]]] = {}
        for topic, partition in partitions:
            key = (producer_id, producer_epoch, committed, topic, partition)
            if key in self.answers:
                results[(topic, partition)] = self.answers.pop(key)
                continue
            if self.broker.metadata.topic(topic) is None:
                results[(topic, partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            if key in self.in_flight:
                results[(topic, partition)] = ErrorCode.REQUEST_TIMED_OUT  # answered by a later try
                continue
            state = self.broker.metadata.leader_and_isr(topic, partition)
            if state is None or state.leader < 0:
                results[(topic, partition)] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                continue
            number = next(self._numbers)
            self.in_flight[key] = number
            results[(topic, partition)] = ErrorCode.REQUEST_TIMED_OUT
            if state.leader == self.broker.node_id and self.broker.owns(topic, partition):
                local.append((key, number))
            else:
                remote.setdefault(state.leader, []).append((key, number))
        loop = asyncio.get_running_loop()
        if local:
            written = {}
            for key, number in local:
                _, _, _, topic, partition = key
                written.update(self.broker.write_txn_markers(producer_id, producer_epoch, coordinator_epoch,
                                                             committed, [(topic, partition)], transaction_version))
            loop.create_task(self._await_local(local, written))
        for leader, markers in remote.items():
            loop.create_task(self._send(leader, producer_id, producer_epoch, coordinator_epoch, committed, markers,
                                        transaction_version))
        return results

    def forget(self, producer_ids) -> None:
        """A coordinator gave these producers' transactions up: answers still to come are not wanted."""
        producer_ids = set(producer_ids)
        for table in (self.answers, self.in_flight):
            for key in [k for k in table if k[0] in producer_ids]:
                del table[key]

    def _answer(self, key: tuple, number: int, error: ErrorCode) -> None:
        if self.in_flight.get(key) != number:
            return  # given up, or superseded by a later marker for the same key
        del self.in_flight[key]
        self.answers[key] = error
        if self.on_answer is not None:
            try:
                self.on_answer()
            except Exception:
                logger.exception("completing transactions after a marker answer failed")

    async def _await_local(self, markers: list[tuple[tuple, int]], written: dict) -> None:
        appended = [key[3:] for key, _ in markers if written.get(key[3:]) == ErrorCode.NONE]
        # The in-sync replicas, and with log.flush.on.ack this broker's disk: a marker lost to a power
        # cut after the transaction's Complete record was kept would leave the transaction open there.
        replicated = await self.broker.await_durable(appended, MARKER_REPLICATION_TIMEOUT_MS) if appended else {}
        for key, number in markers:
            tp = key[3:]
            error = written.get(tp, ErrorCode.NOT_LEADER_OR_FOLLOWER)
            self._answer(key, number, replicated.get(tp, error) if error == ErrorCode.NONE else error)

    async def _send(self, leader: int, producer_id, producer_epoch, coordinator_epoch, committed,
                    markers: list[tuple[tuple, int]], transaction_version: int = 0) -> None:
        errors = {key: ErrorCode.NOT_LEADER_OR_FOLLOWER for key, _ in markers}
        info = self.broker.metadata.brokers.get(leader)
        endpoint = info.endpoint(self.broker.inter_broker_listener()) if info is not None else None
        try:
            if endpoint is not None:
                connection = BrokerConnection(endpoint[0], endpoint[1], f"broker-{self.broker.node_id}-txn-markers")
                await connection.connect(10)
                try:
                    topics: dict[str, list[int]] = {}
                    for key, _ in markers:
                        topics.setdefault(key[3], []).append(key[4])
                    response = await connection.call("WriteTxnMarkers", WRITE_TXN_MARKERS_VERSION, {"markers": [{
                        "producer_id": producer_id, "producer_epoch": producer_epoch, "transaction_result": committed,
                        "coordinator_epoch": coordinator_epoch, "transaction_version": transaction_version,
                        "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}]},
                        MARKER_REPLICATION_TIMEOUT_MS / 1000 + 10)
                finally:
                    connection.close()
                for marker in response.markers:
                    for topic in marker.topics:
                        for result in topic.partitions:
                            key = (producer_id, producer_epoch, committed, topic.name, result.partition_index)
                            errors[key] = ErrorCode.from_code(result.error_code)
        except (OSError, ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError) as exc:
            logger.info("sending transaction markers to broker %d failed: %s", leader, exc)
        finally:
            for key, number in markers:
                self._answer(key, number, errors[key])


class ReplicatedTransactionCoordinator(TransactionCoordinator):
    """The transaction coordinator of one broker in a cluster: serves the ids of the partitions it leads."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.owned_partitions: set[int] = set()
        self.channel: TransactionMarkerChannel | None = None
        self._retry_soon: asyncio.Handle | None = None
        # Transactional id -> the offset __transaction_state's high watermark must reach (its
        # PrepareCommit/PrepareAbort record replicated) before the transaction's markers go out.
        self._markers_after: dict[str, int] = {}
        self._replication_waits: set[str] = set()

    def attach(self, config, state_log, write_markers, *rest, **kwargs) -> None:
        # The same wiring with this module's state topic and marker channel in place of the single node's.
        broker = state_log.broker
        self.channel = TransactionMarkerChannel(broker)
        self.channel.on_answer = self._marker_answered
        super().attach(config, ReplicatedTransactionStateTopic(broker), self.channel.write, *rest, **kwargs)

    def _marker_answered(self) -> None:
        """A marker's answer arrived: finish the transactions waiting for it now, not at the next retry."""
        if self._retry_soon is None:
            self._retry_soon = asyncio.get_running_loop().call_soon(self._retry_answered)

    def _retry_answered(self) -> None:
        self._retry_soon = None
        self._retry_guarded()

    async def replicated(self, transactional_id: str | None, error: ErrorCode) -> ErrorCode:
        """Kafka answers a write to the transaction log once the in-sync replicas have it
        (TransactionStateManager.appendTransactionToLog, acks=-1): what only this leader had is gone
        when another replica takes the partition over, and with it, say, a partition added to the
        transaction, whose records would then get no marker. The write's error, or the one Kafka
        answers when the replicas do not follow (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR)."""
        if error != ErrorCode.NONE or not transactional_id or self._not_coordinator(transactional_id):
            return error
        tp = (TRANSACTION_STATE_TOPIC, self.partition_for(transactional_id))
        # The in-sync replicas, and with log.flush.on.ack this broker's disk.
        result = (await self.channel.broker.await_durable([tp], MARKER_REPLICATION_TIMEOUT_MS))[tp]
        if result == ErrorCode.NONE:
            return error
        answer = append_transaction_log_error(result)
        logger.warning("the transaction log write of transactional id %s did not reach the in-sync replicas: %s "
                    "(answering %s)", transactional_id, result.name, answer.name)
        return answer

    # -- markers only for a replicated PrepareCommit/PrepareAbort --------------------------------

    def _append(self, metadata, transit) -> ErrorCode:
        error = super()._append(metadata, transit)
        if error == ErrorCode.NONE and metadata.state in _PREPARED_STATES:
            plog = self._state_partition_log(self.partition_for(metadata.transactional_id))
            self._markers_after[metadata.transactional_id] = plog.log_end_offset if plog is not None else 0
        return error

    def _state_partition_log(self, partition: int):
        """This broker's replica of __transaction_state-`partition`, or None."""
        return self.state_log.broker.logs.get(TRANSACTION_STATE_TOPIC, partition)

    def _send_markers(self, metadata) -> None:
        """Kafka sends a transaction's markers once its PrepareCommit or PrepareAbort record is in
        the in-sync replicas of __transaction_state (the callback of appendTransactionToLog, acks=-1).
        Sent before, the markers outlive a record that a failover can still truncate, and the next
        coordinator, which never sees it, may end the transaction the other way: found by the faults
        harness (pause-coordinator x txn): a coordinator aborted a timed-out transaction, its
        PrepareAbort was lost with its leadership, its ABORT markers reached two of three
        partitions, and the next coordinator committed the client's EndTxn into the third."""
        transactional_id = metadata.transactional_id
        required = self._markers_after.get(transactional_id)
        if required is not None:
            partition = self.partition_for(transactional_id)
            plog = self._state_partition_log(partition)
            if plog is None or plog.high_watermark < required:
                self._markers_once_replicated(metadata, partition, required)
                return
            del self._markers_after[transactional_id]
        super()._send_markers(metadata)

    def _markers_once_replicated(self, metadata, partition: int, required: int) -> None:
        if metadata.transactional_id in self._replication_waits:
            return
        self._replication_waits.add(metadata.transactional_id)
        asyncio.get_running_loop().create_task(self._await_prepared_record(metadata, partition, required))

    async def _await_prepared_record(self, metadata, partition: int, required: int) -> None:
        transactional_id = metadata.transactional_id
        try:
            error = await self.state_log.broker.replicas.wait_for_replication(
                TRANSACTION_STATE_TOPIC, partition, required, MARKER_REPLICATION_TIMEOUT_MS)
        finally:
            self._replication_waits.discard(transactional_id)
        if error == ErrorCode.NOT_LEADER_OR_FOLLOWER or partition not in self.owned_partitions \
                or self.transactions.get(transactional_id) is not metadata \
                or metadata.state not in _PREPARED_STATES or metadata.pending_transition_in_progress:
            return  # the partition's next coordinator reads the record, or not, and goes on from there
        try:
            self._send_markers(metadata)  # or wait again: the replicas have not caught up yet
        except Exception:
            logger.exception("sending the markers of transactional id %s failed", transactional_id)
            self._retry_later(transactional_id)

    # -- failover -----------------------------------------------------------------------------

    def load_partition(self, partition: int) -> None:
        # `start` replays every partition on a single node; here only the ones this broker leads.
        if partition in self.owned_partitions:
            super().load_partition(partition)

    def become_leader(self, partition: int) -> None:
        if self.state_log is None:
            return
        self.state_log.existing_partitions()
        self._forget(partition)
        self.owned_partitions.add(partition)
        super().load_partition(partition)
        plog = self._state_partition_log(partition)
        for metadata in list(self.transactions.values()):
            if self.partition_for(metadata.transactional_id) == partition and metadata.state in _PREPARED_STATES:
                # Read from this leader's log, perhaps past its high watermark: replicated first.
                if plog is not None:
                    self._markers_after[metadata.transactional_id] = plog.log_end_offset
                self._send_markers(metadata)
        logger.info("transaction coordinator: loaded %s-%d", TRANSACTION_STATE_TOPIC, partition)

    def resign(self, partition: int) -> None:
        self.owned_partitions.discard(partition)
        self._forget(partition)

    def _forget(self, partition: int) -> None:
        if not self.state_log or not self.state_log.num_partitions:
            return
        forgotten = set()
        for transactional_id in list(self.transactions):
            if self.partition_for(transactional_id) == partition:
                forgotten.add(self.transactions.pop(transactional_id).producer_id)
                self._incomplete.discard(transactional_id)
                self._markers_after.pop(transactional_id, None)
        if self.channel is not None and forgotten:
            self.channel.forget(forgotten)

    def _not_coordinator(self, transactional_id: str | None) -> bool:
        if not transactional_id or self.state_log is None:
            return False
        if not self.state_log.num_partitions and not self.state_log.existing_partitions():
            return False  # not created yet: InitProducerId creates it (and this broker leads some of it)
        return self.partition_for(transactional_id) not in self.owned_partitions

    # -- requests for ids led elsewhere -------------------------------------------------------

    def handle_init_producer_id(self, transactional_id, txn_timeout_ms, *args, **kwargs):
        if self._not_coordinator(transactional_id):
            return InitProducerIdResult(ErrorCode.NOT_COORDINATOR)
        return super().handle_init_producer_id(transactional_id, txn_timeout_ms, *args, **kwargs)

    def handle_add_partitions(self, transactional_id, producer_id, producer_epoch, partitions, *args, **kwargs):
        if self._not_coordinator(transactional_id):
            return ErrorCode.NOT_COORDINATOR
        return super().handle_add_partitions(transactional_id, producer_id, producer_epoch, partitions,
                                             *args, **kwargs)

    def handle_verify_partitions(self, transactional_id, producer_id, producer_epoch, partitions, **kwargs):
        if self._not_coordinator(transactional_id):
            return dict.fromkeys(list(partitions), ErrorCode.NOT_COORDINATOR)
        return super().handle_verify_partitions(transactional_id, producer_id, producer_epoch, partitions,
                                                **kwargs)

    def end_transaction(self, transactional_id, producer_id, producer_epoch, committed, *args, **kwargs):
        if self._not_coordinator(transactional_id):
            return EndTxnResult(ErrorCode.NOT_COORDINATOR)
        return super().end_transaction(transactional_id, producer_id, producer_epoch, committed, *args, **kwargs)

    # -- a transaction's first write to a partition, checked at its coordinator (KIP-890) --------

    def verify_transactional_write(self, *args, **kwargs) -> ErrorCode:
        return ErrorCode.NONE  # made before the append (produce_write_error / transactional_write_error)

    def verify_produce(self, *args, **kwargs) -> None:
        return None

    async def produce_write_error(self, transactional_id: str, topic: str, partition: int, records, plog,
                                  operation: int) -> tuple[ErrorCode, str | None, object | None]:
        header = read_batch_header(records)
        if not header.is_transactional or plog is None or not self.channel.broker.replicas.is_leader(topic, partition):
            return ErrorCode.NONE, None, None  # (the append answers NOT_LEADER_OR_FOLLOWER)
        error, guard = await self._check_write(transactional_id, header.producer_id, header.producer_epoch, topic,
                                               partition, plog, operation, header.base_sequence)
        return (*produce_error_of(error, operation), guard)

    async def transactional_write_error(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                        topic: str, partition: int, plog, operation: int) -> ErrorCode:
        return (await self._check_write(transactional_id, producer_id, producer_epoch, topic, partition, plog,
                                        operation))[0]

    async def _check_write(self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str,
                           partition: int, plog, operation: int, sequence: int = -1) -> tuple[ErrorCode, object | None]:
        """(the coordinator's answer, the verification guard for the append)."""
        if not self._not_coordinator(transactional_id):
            error, guard = TransactionCoordinator.start_write_verification(
                self, transactional_id, producer_id, producer_epoch, topic, partition, plog, operation, sequence)
            if operation == ADD_PARTITION:  # a transaction.version 2 write adds the partition: a log write
                error = await self.replicated(transactional_id, error)
            return error, guard
        if not self.needs_write_verification(producer_id, producer_epoch, plog, operation):
            return ErrorCode.NONE, None  # the transaction is open here at this epoch: checked before
        guard = None if plog is None else plog.producer_state.start_verification(
            producer_id, sequence, producer_epoch, operation == ADD_PARTITION, self.clock_ms())
        return await self._ask_coordinator(transactional_id, producer_id, producer_epoch, topic, partition,
                                           operation), guard

    async def _ask_coordinator(self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str,
                               partition: int, operation: int) -> ErrorCode:
        """AddPartitionsToTxn v5 to the coordinator's broker, its answer as Kafka's
        AddPartitionsToTxnManager passes it on."""
        broker = self.channel.broker
        state = broker.metadata.leader_and_isr(TRANSACTION_STATE_TOPIC, self.partition_for(transactional_id))
        info = broker.metadata.brokers.get(state.leader) if state is not None and state.leader >= 0 else None
        endpoint = info.endpoint(broker.inter_broker_listener()) if info is not None else None
        if endpoint is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        connection = BrokerConnection(endpoint[0], endpoint[1], f"broker-{broker.node_id}-add-partitions")
        try:
            await connection.connect(10)
            response = await connection.call("AddPartitionsToTxn", ADD_PARTITIONS_TO_TXN_VERSION, {"transactions": [{
                "transactional_id": transactional_id, "producer_id": producer_id, "producer_epoch": producer_epoch,
                "verify_only": operation != ADD_PARTITION,
                "topics": [{"name": topic, "partitions": [partition]}]}]}, 30)
        except (OSError, ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError) as exc:
            logger.info("asking the transaction coordinator (broker %d) about %s failed: %s", state.leader,
                     transactional_id, exc)
            return ErrorCode.NETWORK_EXCEPTION
        finally:
            connection.close()
        if response.error_code != 0:
            # The client is not told of CLUSTER_AUTHORIZATION_FAILED between brokers.
            error = ErrorCode.from_code(response.error_code)
            return ErrorCode.INVALID_TXN_STATE if error == ErrorCode.CLUSTER_AUTHORIZATION_FAILED else error
        for result in response.results_by_transaction:
            for topic_result in result.topic_results:
                for partition_result in topic_result.results_by_partition:
                    error = ErrorCode.from_code(partition_result.partition_error_code)
                    if error == ErrorCode.PRODUCER_FENCED:
                        return ErrorCode.INVALID_PRODUCER_EPOCH  # what producers expect here
                    if error == ErrorCode.TRANSACTION_ABORTABLE and operation == DEFAULT_ERROR:
                        return ErrorCode.INVALID_TXN_STATE  # older clients do not know it
                    return error
        return ErrorCode.NONE
