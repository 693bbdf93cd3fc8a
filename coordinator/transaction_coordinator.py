"""The transaction coordinator: transactional producers' ids, epochs and transactions (Kafka's TransactionCoordinator).

Every transactional id's state (coordinator/txn_metadata.py) lives in __transaction_state
(coordinator/txn_log.py): each transition is written there before it takes effect and before the
client hears of it, and `start` replays the topic. The requests follow Kafka 3.x:

- InitProducerId gives a transactional id its producer id and the next epoch, which fences every
  older instance; an ongoing transaction is aborted first (the client gets CONCURRENT_TRANSACTIONS
  and retries); an exhausted epoch moves to a new producer id; v3+ producers may ask to bump the
  epoch they have (KIP-360).
- AddPartitionsToTxn / AddOffsetsToTxn add partitions (AddOffsets: the group's __consumer_offsets
  partition) to the transaction; the leader verifies, before the first transactional write to a
  partition, that it was added (KIP-890 part 1, on by default since Kafka 3.6).
- EndTxn writes PrepareCommit/PrepareAbort, then a marker to every partition of the transaction
  (coordinator/txn_markers.py), then CompleteCommit/CompleteAbort. The partitions are local, so
  the markers are written before EndTxn is answered; a marker that cannot be written is retried
  in the background, and the transaction stays in Prepare* (CONCURRENT_TRANSACTIONS) until then.
  After a restart, transactions found in Prepare* are completed the same way.
- Transactions running longer than their timeout are aborted (with an epoch bump that fences
  the producer); transactional ids idle for transactional.id.expiration.ms are removed.

Transaction version 2 (KIP-890 part 2), as Kafka 4.3's coordinator: a client that sends EndTxn v5
gets the TV2 rules of `_end_transaction_v2` (every commit and abort bumps the epoch, the markers
carry the new epoch, EndTxn answers it, a used-up epoch moves to a new producer id, a retried
EndTxn is recognised by its epoch being one behind); its partitions are added by the partition
leaders when Produce v12 / TxnOffsetCommit v5 first write there (`add_partition_for_write`). The
coordinator's own aborts (timeouts, InitProducerId fencing an ongoing transaction) follow the
finalized transaction.version (`transaction_version`), which also picks the TransactionLogValue
version written.

Nothing here touches a socket; handlers call the `handle_*` methods and build responses.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kafka_wire.errors import ErrorCode
from kafka_wire.records import read_batch_header

from .offsets_store import AppendFailed
from .timer import stop_task
from .txn_log import TRANSACTION_STATE_TOPIC, TransactionStateTopic, append_transaction_log_error, transaction_record
from .txn_markers import write_txn_markers
from .txn_metadata import (
    EXPIRATION_ALLOWED,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    IllegalTransition,
    TransactionMetadata,
    TransactionState,
    TxnTransit,
    is_epoch_exhausted,
)

logger = logging.getLogger("kafka_wire.coordinator")

S = TransactionState
TopicPartition = tuple[str, int]

# Kafka's defaults, for keys a configuration may not carry.
DEFAULTS = {
    "transaction.max.timeout.ms": 900000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10000,
    "transaction.remove.expired.transaction.cleanup.interval.ms": 3600000,
    "transactional.id.expiration.ms": 604800000,
    "transaction.partition.verification.enable": True,
}
# How soon markers that could not be written are tried again.
MARKER_RETRY_MS = 500
# How long a request that wrote the transaction log (EndTxn) waits for its markers' sync and Complete*.
MARKERS_SYNC_WAIT_SECONDS = 5.0

# What a transactional write asks of the coordinator (Kafka's AddPartitionsToTxnManager
# TransactionSupportedOperation), by the version of the Produce or TxnOffsetCommit request.
DEFAULT_ERROR = 0  # verify only; a partition not added is INVALID_TXN_STATE
GENERIC_ERROR_SUPPORTED = 1  # verify only; the client understands TRANSACTION_ABORTABLE
ADD_PARTITION = 2  # transaction.version 2: add the partition to the transaction


def produce_operation(version: int) -> int:
    return ADD_PARTITION if version > 11 else GENERIC_ERROR_SUPPORTED if version > 10 else DEFAULT_ERROR


def txn_offset_commit_operation(version: int) -> int:
    return ADD_PARTITION if version > 4 else GENERIC_ERROR_SUPPORTED if version > 3 else DEFAULT_ERROR


def produce_error_of(error: ErrorCode, operation: int) -> tuple[ErrorCode, str | None]:
    """What Produce answers for the coordinator's answer to a transactional write, and the
    error_message with it (Kafka's AddPartitionsToTxnManager and ReplicaManager mappings: only
    the errors it replaces with its own exception carry a message)."""
    if error in (ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                 ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR) or (
            error == ErrorCode.CONCURRENT_TRANSACTIONS and operation != ADD_PARTITION):
        # Kafka answers these as NOT_ENOUGH_REPLICAS so that older clients retry the write;
        # TV2 clients get CONCURRENT_TRANSACTIONS itself (common while a commit completes).
        return ErrorCode.NOT_ENOUGH_REPLICAS, ("Unable to verify the partition has been added to the "
                                               f"transaction. Underlying error: {error.name}")
    if error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH, None
    if error == ErrorCode.INVALID_TXN_STATE:
        return error, "Partition was not added to the transaction"
    return error, None


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class TransactionVerificationFailed(Exception):
    """A transactional write to a partition its transaction does not hold; `error_name` is the
    Kafka error the Produce response carries (broker/log_errors.py reads it), `custom_message` the
    error_message Kafka puts beside it (None for most errors)."""

    def __init__(self, error: ErrorCode, custom_message: str | None) -> None:
        super().__init__(custom_message or f"transaction verification failed: {error.name}")
        self.error_name = error.name
        self.custom_message = custom_message


@dataclass
class EndTxnResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass
class InitProducerIdResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class TransactionCoordinator:
    """Every transactional id this broker coordinates."""

    def __init__(self, *, clock_ms: Callable[[], int] = _wall_clock_ms) -> None:
        self.clock_ms = clock_ms
        self.transactions: dict[str, TransactionMetadata] = {}
        self.config = None
        self.state_log = None  # TransactionStateTopic (or a stand-in in tests)
        # (producer id, epoch, coordinator epoch, committed, partitions, transaction version) -> errors
        self.write_markers = None
        self.next_producer_id = None  # () -> a new producer id
        # () -> the cluster's finalized transaction.version (broker/features.py).
        self.transaction_version: Callable[[], int] = lambda: 0
        self.active = False
        self.loading = False
        # Transactions in Prepare* whose markers (or Complete* record) are still to be written.
        self._incomplete: set[str] = set()
        # log.flush.on.ack: (partitions) -> their sync's errors; markers written here count (and the
        # Complete* record follows) once synced, so a power cut never keeps Complete* and loses a marker.
        self.markers_synced = None
        self._syncing: dict[str, asyncio.Task] = {}  # transactional id -> the sync of its markers
        self._tasks: list[asyncio.Task] = []
        self._retry_handle: asyncio.TimerHandle | None = None

    # == lifecycle ===================================================================================

    def attach(self, config, state_log, write_markers, next_producer_id) -> None:
        """Wire the coordinator to its storage and the partitions (start does this for a broker)."""
        self.config = config
        self.state_log = state_log
        self.write_markers = write_markers
        self.next_producer_id = next_producer_id

    async def start(self, broker) -> None:
        """Replay __transaction_state, complete prepared transactions, then serve (and abort
        timed-out transactions, expire idle transactional ids). As in Kafka, the topic itself is
        created when the first transactional producer needs it."""
        self.attach(
            broker.config,
            TransactionStateTopic(broker),
            lambda pid, epoch, coordinator_epoch, committed, partitions, transaction_version=0: write_txn_markers(
                broker, pid, epoch, coordinator_epoch, committed, partitions, transaction_version),
            broker.producer_ids.next,
        )
        self.transaction_version = lambda: broker.feature_level("transaction.version")
        if getattr(broker, "flush_on_ack", False):
            self.markers_synced = broker.await_synced
        started = time.monotonic()
        partitions = self.state_log.existing_partitions()
        self.active = True
        self.loading = True
        try:
            for partition in range(partitions):
                self.load_partition(partition)
                await asyncio.sleep(0)
        finally:
            self.loading = False
        logger.info("transaction coordinator loaded %d transactional ids from %d partitions in %.3f s",
                 len(self.transactions), partitions, time.monotonic() - started)
        self.complete_prepared_transactions()
        await self.markers_settled()  # serving with the recovered transactions completed, as before the sync
        self._tasks = [
            asyncio.create_task(self._every("transaction.abort.timed.out.transaction.cleanup.interval.ms",
                                            self.abort_timed_out_transactions)),
            asyncio.create_task(self._every("transaction.remove.expired.transaction.cleanup.interval.ms",
                                            self.expire_transactional_ids)),
        ]

    async def stop(self) -> None:
        self.active = False
        if self._retry_handle is not None:
            self._retry_handle.cancel()
            self._retry_handle = None
        await stop_task(*self._tasks, *self._syncing.values())
        self._tasks = []
        self._syncing.clear()
        self.transactions.clear()
        self._incomplete.clear()

    async def _every(self, interval_key: str, action) -> None:
        while True:
            await asyncio.sleep(max(int(self._cfg(interval_key)), 10) / 1000)
            try:
                action()
            except Exception:
                logger.exception("transaction coordinator task %s failed", getattr(action, "__name__", action))

    def _cfg(self, name: str):
        default = DEFAULTS.get(name)
        config = self.config
        if config is None:
            return default
        value = config.get(name) if hasattr(config, "get") else None
        if value is None:
            raw = getattr(config, "original", {}).get(name)
            if raw is None:
                return default
            if isinstance(default, bool):
                return str(raw).strip().lower() == "true"
            return type(default)(raw)
        return value

    def load_partition(self, partition: int) -> None:
        """Replay one partition of __transaction_state: the last record of each id wins."""
        for logged in self.state_log.read_transactions(partition):
            if logged.metadata is None or logged.metadata.state == S.DEAD:
                self.transactions.pop(logged.transactional_id, None)
            else:
                self.transactions[logged.transactional_id] = logged.metadata

    def complete_prepared_transactions(self) -> None:
        """Transactions the previous run left in PrepareCommit/PrepareAbort get their markers
        (again: a marker written twice is harmless) and their Complete* record."""
        for metadata in list(self.transactions.values()):
            if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                logger.info("completing %s of transactional id %s (producer %d, epoch %d) found on load",
                         metadata.state.display_name, metadata.transactional_id, metadata.producer_id,
                         metadata.producer_epoch)
                self._send_markers(metadata)

    # == common checks ===============================================================================

    def coordinator_error(self) -> ErrorCode | None:
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return None

    def partition_for(self, transactional_id: str) -> int:
        return self.state_log.partition_for(transactional_id)

    def state_error(self) -> ErrorCode | None:
        """coordinator_error, or NOT_COORDINATOR while __transaction_state does not exist: Kafka's
        TransactionStateManager.getTransactionState answers NOT_COORDINATOR for an id whose state
        partition it has not loaded, and on a fresh broker none is (a client's FindCoordinator or
        InitProducerId creates the topic)."""
        error = self.coordinator_error()
        if error is None and not self.state_log.num_partitions and not self.state_log.existing_partitions():
            return ErrorCode.NOT_COORDINATOR
        return error

    def _ensure_state_topic(self) -> ErrorCode | None:
        """Create __transaction_state on first use (Kafka creates it on the first lookup of a
        transaction coordinator); COORDINATOR_NOT_AVAILABLE when that fails."""
        if self.state_log.num_partitions > 0:
            return None
        try:
            self.state_log.ensure_created()
        except Exception:
            logger.exception("could not create the transaction state topic")
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return None

    def _append(self, metadata: TransactionMetadata, transit: TxnTransit) -> ErrorCode:
        """Write a prepared transition; on success it takes effect. Returns the client's error."""
        try:
            self.state_log.append(self.partition_for(metadata.transactional_id),
                                  transaction_record(metadata.transactional_id, transit,
                                                     1 if self.transaction_version() >= 1 else 0),
                                  self.clock_ms())
        except AppendFailed as exc:
            metadata.abort_transition()
            error = append_transaction_log_error(exc.error)
            logger.warning("could not write %s of transactional id %s to the transaction log: %s (answering %s)",
                        transit.state.display_name, metadata.transactional_id, exc.error.name, error.name)
            return error
        metadata.complete_transition(transit)
        return ErrorCode.NONE

    async def replicated(self, transactional_id: str | None, error: ErrorCode) -> ErrorCode:
        """The answer to a request that wrote the transaction log, once the write is as safe as an
        acknowledged produce: on a single node at once, or once synced with log.flush.on.ack (a
        cluster's coordinator also waits for the in-sync replicas)."""
        broker = getattr(self.state_log, "broker", None)
        if not transactional_id or not getattr(broker, "flush_on_ack", False):
            return error
        if error == ErrorCode.NONE:
            tp = (TRANSACTION_STATE_TOPIC, self.partition_for(transactional_id))
            result = (await broker.await_synced([tp]))[tp]
            if result != ErrorCode.NONE:
                return append_transaction_log_error(result)
        syncing = self._syncing.get(transactional_id)
        if syncing is not None:
            # EndTxn answers once its markers are synced and Complete* written, as it did when both
            # were written before it answered (a next AddPartitionsToTxn finds the transaction done;
            # so does the retry of an InitProducerId answered CONCURRENT_TRANSACTIONS as it aborted).
            await asyncio.wait([syncing], timeout=MARKERS_SYNC_WAIT_SECONDS)
        return error

    # == InitProducerId ==============================================================================

    async def init_producer_id(self, request, version: int | None = None) -> dict:
        """The InitProducerId response for a request with a transactional id (p22's delegate);
        `version` is the request's (clients before v4 learn of fencing as INVALID_PRODUCER_EPOCH)."""
        result = self.handle_init_producer_id(request.transactional_id, request.transaction_timeout_ms,
                                              getattr(request, "producer_id", NO_PRODUCER_ID),
                                              getattr(request, "producer_epoch", NO_PRODUCER_EPOCH))
        if result.error == ErrorCode.PRODUCER_FENCED and version is not None and version < 4:
            result.error = ErrorCode.INVALID_PRODUCER_EPOCH
        error = await self.replicated(request.transactional_id, result.error)
        if error != result.error:
            result = InitProducerIdResult(error)
        return {"throttle_time_ms": 0, "error_code": int(result.error), "producer_id": result.producer_id,
                "producer_epoch": result.producer_epoch}

    def handle_init_producer_id(self, transactional_id: str, txn_timeout_ms: int,
                                producer_id: int = NO_PRODUCER_ID,
                                producer_epoch: int = NO_PRODUCER_EPOCH) -> InitProducerIdResult:
        if transactional_id == "":
            return InitProducerIdResult(ErrorCode.INVALID_REQUEST)
        if producer_id == NO_PRODUCER_ID and producer_epoch == NO_PRODUCER_EPOCH:
            expected = None
        elif producer_id == NO_PRODUCER_ID or producer_epoch == NO_PRODUCER_EPOCH:
            return InitProducerIdResult(ErrorCode.INVALID_REQUEST)
        else:
            expected = (producer_id, producer_epoch)
        error = self.coordinator_error() or self._ensure_state_topic()
        if error is not None:
            return InitProducerIdResult(error)
        if not 0 < txn_timeout_ms <= int(self._cfg("transaction.max.timeout.ms")):
            return InitProducerIdResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        metadata = self.transactions.get(transactional_id)
        if metadata is None:
            metadata = TransactionMetadata(transactional_id, self.next_producer_id(), txn_timeout_ms, self.clock_ms())
            self.transactions[transactional_id] = metadata
        prepared = self._prepare_init(metadata, txn_timeout_ms, expected)
        if isinstance(prepared, ErrorCode):
            return InitProducerIdResult(prepared)
        if prepared.state == S.PREPARE_EPOCH_FENCE:
            # Abort the ongoing transaction with a bumped epoch; that epoch is never returned:
            # the client retries and gets the next one, once the abort is complete.
            error, _, _ = self._end_transaction(transactional_id, prepared.producer_id, prepared.producer_epoch,
                                                committed=False, from_client=False,
                                                client_transaction_version=self.transaction_version())
            if metadata.pending_state == S.PREPARE_EPOCH_FENCE:
                metadata.pending_state = None
            return InitProducerIdResult(ErrorCode.CONCURRENT_TRANSACTIONS if error == ErrorCode.NONE else error)
        error = self._append(metadata, prepared)
        if error != ErrorCode.NONE:
            return InitProducerIdResult(error)
        logger.info("initialized transactional id %s with producer id %d and epoch %d on partition %d",
                 transactional_id, metadata.producer_id, metadata.producer_epoch, self.partition_for(transactional_id))
        return InitProducerIdResult(ErrorCode.NONE, metadata.producer_id, metadata.producer_epoch)

    def _prepare_init(self, metadata: TransactionMetadata, txn_timeout_ms: int,
                      expected: tuple[int, int] | None) -> TxnTransit | ErrorCode:
        """Kafka's prepareInitProducerIdTransit."""
        if metadata.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if expected is not None:
            expected_id, expected_epoch = expected
            # The producer may continue when the metadata was just created, when it names the
            # current producer id, or when it retries a bump that moved to a new producer id.
            valid = (metadata.producer_epoch == NO_PRODUCER_EPOCH or expected_id == metadata.producer_id
                     or (expected_id == metadata.last_producer_id and is_epoch_exhausted(expected_epoch)))
            if not valid:
                return ErrorCode.PRODUCER_FENCED
        state = metadata.state
        if state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        now = self.clock_ms()
        if state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            if metadata.is_producer_epoch_exhausted and (expected is None or expected[1] == metadata.producer_epoch):
                return metadata.prepare_producer_id_rotation(self.next_producer_id(), txn_timeout_ms, now,
                                                             record_last_epoch=expected is not None)
            return metadata.prepare_increment_producer_epoch(txn_timeout_ms, None if expected is None else expected[1],
                                                             now)
        if state == S.ONGOING:
            return metadata.prepare_fence_producer_epoch()
        raise IllegalTransition(f"transactional id {metadata.transactional_id} is in state {state.display_name}")

    # == AddPartitionsToTxn / AddOffsetsToTxn ========================================================

    def _check_producer(self, transactional_id: str, producer_id: int, producer_epoch: int
                        ) -> tuple[ErrorCode | None, TransactionMetadata | None]:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        error = self.state_error()
        if error is not None:
            return error, None
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None
        return None, metadata

    def handle_add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                              partitions: Iterable[TopicPartition], client_transaction_version: int = 0
                              ) -> ErrorCode:
        """Add partitions to the producer's transaction (starting it when none is ongoing);
        `client_transaction_version` 2 when a partition leader adds them for Produce v12 or
        TxnOffsetCommit v5 (Kafka's TransactionVersion.transactionVersionForAddPartitionsToTxn)."""
        partitions = set(partitions)
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        error = self.state_error()
        if error is not None:
            return error
        metadata = self.transactions.get(transactional_id)
        if metadata is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        # Kafka 4's order: a pending transition first (with TV2 the producer may already use the
        # producer id a pending Complete* switches to).
        if metadata.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if metadata.state == S.ONGOING and partitions <= metadata.partitions:
            return ErrorCode.NONE
        return self._append(metadata, metadata.prepare_add_partitions(partitions, self.clock_ms(),
                                                                      client_transaction_version))

    def handle_verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                 partitions: Iterable[TopicPartition], *, abortable: bool = False
                                 ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4+ verify_only: whether each partition is in the ongoing transaction.
        One that is not answers TRANSACTION_ABORTABLE (Kafka 4) when the asker understands it
        (`abortable`: AddPartitionsToTxn v4+, Produce v11+, TxnOffsetCommit v4+), else
        INVALID_TXN_STATE, which is what Kafka's leaders turn it into for older clients."""
        partitions = list(partitions)
        error, metadata = self._check_producer(transactional_id, producer_id, producer_epoch)
        if error is None and metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        if error is not None:
            return dict.fromkeys(partitions, error)
        missing = ErrorCode.TRANSACTION_ABORTABLE if abortable else ErrorCode.INVALID_TXN_STATE
        return {tp: ErrorCode.NONE if tp in metadata.partitions else missing for tp in partitions}

    def verify_transactional_write(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                   topic: str, partition: int, plog, operation: int = DEFAULT_ERROR) -> ErrorCode:
        """Before a transaction's first write to a partition, the leader asks the coordinator
        whether the partition was added to it (Kafka 3.6+, transaction.partition.verification.enable);
        with ADD_PARTITION (Produce v12, TxnOffsetCommit v5: a transaction.version 2 client) it adds
        the partition instead, whatever that setting. Later writes (the partition has the transaction
        open for this epoch) need neither. Returns the coordinator's answer."""
        return self.start_write_verification(transactional_id, producer_id, producer_epoch, topic, partition, plog,
                                             operation)[0]

    def needs_write_verification(self, producer_id: int, producer_epoch: int, plog, operation: int) -> bool:
        if operation != ADD_PARTITION and not self._cfg("transaction.partition.verification.enable"):
            return False
        return plog is None or not plog.producer_state.has_ongoing_transaction(producer_id, producer_epoch)

    def start_write_verification(self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str,
                                 partition: int, plog, operation: int = DEFAULT_ERROR, sequence: int = -1
                                 ) -> tuple[ErrorCode, object | None]:
        """`verify_transactional_write`, and the verification's guard for the append (the partition
        keeps a verification state from now until the producer's next transactional write there,
        log/producer_state.py); (NONE, None) when no verification is needed."""
        if not self.needs_write_verification(producer_id, producer_epoch, plog, operation):
            return ErrorCode.NONE, None
        guard = None if plog is None else plog.producer_state.start_verification(
            producer_id, sequence, producer_epoch, operation == ADD_PARTITION, self.clock_ms())
        return self.coordinator_answer(transactional_id, producer_id, producer_epoch, topic, partition,
                                       operation), guard

    def coordinator_answer(self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str,
                           partition: int, operation: int) -> ErrorCode:
        """This coordinator's answer to a leader's verify (or TV2 add) of one partition."""
        if operation == ADD_PARTITION:
            return self.handle_add_partitions(transactional_id, producer_id, producer_epoch, [(topic, partition)],
                                              client_transaction_version=2)
        return self.handle_verify_partitions(transactional_id, producer_id, producer_epoch, [(topic, partition)],
                                             abortable=operation >= GENERIC_ERROR_SUPPORTED)[(topic, partition)]

    def produce_verification_error(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                   topic: str, partition: int, plog, operation: int = DEFAULT_ERROR) -> ErrorCode:
        """`verify_transactional_write` as Produce answers it (Kafka's AddPartitionsToTxnManager and
        ReplicaManager mappings)."""
        return produce_error_of(self.verify_transactional_write(transactional_id, producer_id, producer_epoch, topic,
                                                                partition, plog, operation), operation)[0]

    def verify_produce(self, topic: str, partition: int, plog, records, transactional_id: str,
                       operation: int = DEFAULT_ERROR) -> object | None:
        """The Produce-side check (or, for TV2, the implicit AddPartitionsToTxn) of a transactional
        batch; its verification guard for the append (None when none was needed). Raises
        TransactionVerificationFailed."""
        header = read_batch_header(records)
        if not header.is_transactional:
            return None
        error, guard = self.start_write_verification(transactional_id, header.producer_id, header.producer_epoch,
                                                     topic, partition, plog, operation, header.base_sequence)
        error, message = produce_error_of(error, operation)
        if error != ErrorCode.NONE:
            raise TransactionVerificationFailed(error, message)
        return guard

    # The handlers' entry points; a cluster's coordinator (cluster/transaction_failover.py) may have
    # to ask the coordinator of the transactional id on another broker, hence async.

    async def produce_write_error(self, transactional_id: str, topic: str, partition: int, records, plog,
                                  operation: int) -> tuple[ErrorCode, str | None, object | None]:
        """The check Produce makes before appending a transactional batch, when it is not made by
        the append itself (error, error_message, verification guard): here, where this broker leads
        every partition and coordinates every transactional id, `verify_produce` runs inside
        Broker.append_records."""
        return ErrorCode.NONE, None, None

    async def transactional_write_error(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                        topic: str, partition: int, plog, operation: int) -> ErrorCode:
        """`verify_transactional_write` for TxnOffsetCommit."""
        return self.verify_transactional_write(transactional_id, producer_id, producer_epoch, topic, partition, plog,
                                               operation)

    # == EndTxn ======================================================================================

    def handle_end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                               committed: bool) -> ErrorCode:
        """EndTxn v0-4 (transaction.version 0/1 rules)."""
        return self.end_transaction(transactional_id, producer_id, producer_epoch, committed).error

    def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool,
                        client_transaction_version: int = 0) -> "EndTxnResult":
        """EndTxn from a client: `client_transaction_version` 2 for EndTxn v5 (Kafka's
        TransactionVersion.transactionVersionForEndTxn), whose answer carries the producer id and
        epoch to go on with."""
        return EndTxnResult(*self._end_transaction(transactional_id, producer_id, producer_epoch, committed,
                                                   from_client=True,
                                                   client_transaction_version=client_transaction_version))

    def _end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool,
                         from_client: bool, client_transaction_version: int = 0) -> tuple[ErrorCode, int, int]:
        """Kafka's endTransaction: Prepare*, then markers, then Complete*. (error, producer id,
        epoch): the id and epoch only for a TV2 success."""
        if client_transaction_version >= 2:
            return self._end_transaction_v2(transactional_id, producer_id, producer_epoch, committed, from_client)
        return self._end_transaction_v1(transactional_id, producer_id, producer_epoch, committed, from_client), \
            NO_PRODUCER_ID, NO_PRODUCER_EPOCH

    def _end_transaction_v1(self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool,
                            from_client: bool) -> ErrorCode:
        """Kafka's endTransactionWithTV1."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        error = self.state_error()
        if error is not None:
            return error
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        # A client must name the current epoch; the coordinator's own abort carries a bumped one.
        if (from_client and producer_epoch != metadata.producer_epoch) or producer_epoch < metadata.producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if metadata.pending_transition_in_progress and metadata.pending_state != S.PREPARE_EPOCH_FENCE:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        state = metadata.state
        wanted = S.PREPARE_COMMIT if committed else S.PREPARE_ABORT
        if state == S.ONGOING:
            is_epoch_fence = False
            if wanted == S.PREPARE_ABORT and metadata.pending_state == S.PREPARE_EPOCH_FENCE:
                is_epoch_fence = True
                metadata.pending_state = None
                metadata.producer_epoch = producer_epoch
                metadata.last_producer_epoch = NO_PRODUCER_EPOCH
            elif metadata.pending_state is not None:
                return ErrorCode.CONCURRENT_TRANSACTIONS
            error = self._append(metadata, metadata.prepare_abort_or_commit(wanted, self.clock_ms()))
            if error != ErrorCode.NONE:
                if is_epoch_fence:
                    # The bumped epoch stays in memory, never returned; the next fence reuses it.
                    metadata.has_failed_epoch_fence = True
                return error
            logger.debug("transactional id %s (producer %d, epoch %d): %s of %d partitions",
                     transactional_id, metadata.producer_id, metadata.producer_epoch,
                     "committing" if committed else "aborting", len(metadata.partitions))
            self._send_markers(metadata)
            return ErrorCode.NONE
        if state == S.COMPLETE_COMMIT:
            return ErrorCode.NONE if committed else self._invalid_state(metadata, committed)
        if state == S.COMPLETE_ABORT:
            return ErrorCode.NONE if not committed else self._invalid_state(metadata, committed)
        if state == S.PREPARE_COMMIT:
            return ErrorCode.CONCURRENT_TRANSACTIONS if committed else self._invalid_state(metadata, committed)
        if state == S.PREPARE_ABORT:
            return ErrorCode.CONCURRENT_TRANSACTIONS if not committed else self._invalid_state(metadata, committed)
        if state == S.EMPTY:
            return self._invalid_state(metadata, committed)
        raise IllegalTransition(f"transactional id {transactional_id} is in state {state.display_name}")

    def _end_transaction_v2(self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool,
                            from_client: bool) -> tuple[ErrorCode, int, int]:
        """Kafka 4.3's endTransaction for transaction.version 2. Every commit and abort bumps the
        epoch (Prepare* carries it, and the markers). A retry is told apart by its epoch:

                           abort: retry / current      commit: retry / current
            Empty          PRODUCER_FENCED / bump      PRODUCER_FENCED / INVALID_TXN_STATE
            CompleteAbort  NONE / bump                 INVALID_TXN_STATE / INVALID_TXN_STATE
            CompleteCommit INVALID_TXN_STATE / bump    NONE / INVALID_TXN_STATE

        (retry: the epoch one behind the current, or the last epoch of a producer id that was used
        up). A coordinator's fence (PrepareEpochFence pending) aborts with the next epoch too."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        error = self.state_error()
        metadata = self.transactions.get(transactional_id) if error is None else None
        if error is None and metadata is None:
            error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if error is not None:
            return error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        current_id, current_epoch = metadata.producer_id, metadata.producer_epoch
        is_epoch_fence = metadata.pending_state == S.PREPARE_EPOCH_FENCE
        # A retry of an EndTxn that moved to a new producer id (the epoch was used up) ...
        retry_on_overflow = (not is_epoch_fence and metadata.last_producer_id == producer_id
                             and producer_epoch == SHORT_MAX - 1 and metadata.producer_epoch == 0)
        # ... or that bumped the epoch.
        retry_on_epoch_bump = not is_epoch_fence and metadata.producer_epoch == producer_epoch + 1
        state = metadata.state
        if is_epoch_fence:
            valid_epoch = (not from_client or producer_epoch == metadata.producer_epoch) \
                and producer_epoch >= metadata.producer_epoch
        elif state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            valid_epoch = retry_on_epoch_bump
        elif state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            valid_epoch = retry_on_epoch_bump or retry_on_overflow or producer_epoch == metadata.producer_epoch
        else:
            valid_epoch = producer_epoch == metadata.producer_epoch
        is_retry = retry_on_epoch_bump or retry_on_overflow

        if metadata.pending_transition_in_progress and not is_epoch_fence:
            return ErrorCode.CONCURRENT_TRANSACTIONS, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if metadata.producer_id != producer_id and not retry_on_overflow:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if not valid_epoch:
            return ErrorCode.PRODUCER_FENCED, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        failed = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        if state == S.ONGOING:
            wanted, nothing_added = (S.PREPARE_COMMIT if committed else S.PREPARE_ABORT), False
        elif state == S.COMPLETE_COMMIT:
            if committed:
                return (ErrorCode.NONE, current_id, current_epoch) if is_retry \
                    else (self._invalid_state(metadata, committed), *failed)
            if is_retry:
                return self._invalid_state(metadata, committed), *failed
            wanted, nothing_added = S.PREPARE_ABORT, True
        elif state == S.COMPLETE_ABORT:
            if committed:
                return self._invalid_state(metadata, committed), *failed
            if is_retry:
                return ErrorCode.NONE, current_id, current_epoch
            wanted, nothing_added = S.PREPARE_ABORT, True
        elif state == S.PREPARE_COMMIT:
            return (ErrorCode.CONCURRENT_TRANSACTIONS if committed else self._invalid_state(metadata, committed)), \
                *failed
        elif state == S.PREPARE_ABORT:
            return (ErrorCode.CONCURRENT_TRANSACTIONS if not committed else self._invalid_state(metadata, committed)), \
                *failed
        elif state == S.EMPTY:
            if committed:
                return self._invalid_state(metadata, committed), *failed
            wanted, nothing_added = S.PREPARE_ABORT, True
        else:
            raise IllegalTransition(f"transactional id {transactional_id} is in state {state.display_name}")

        # The bump uses up the epoch: Complete* moves to a new producer id (the fence too).
        next_producer_id = self.next_producer_id() if metadata.is_producer_epoch_exhausted else NO_PRODUCER_ID
        if wanted == S.PREPARE_ABORT and is_epoch_fence:
            # The fence's own bumped epoch is not used: Prepare* bumps from the current one.
            metadata.pending_state = None
        error = self._append(metadata, metadata.prepare_abort_or_commit(
            wanted, self.clock_ms(), client_transaction_version=2, next_producer_id=next_producer_id,
            no_partition_added=nothing_added))
        if error != ErrorCode.NONE:
            return error, *failed
        answer = metadata.end_txn_answer()
        logger.debug("transactional id %s (producer %d, epoch %d): %s of %d partitions (TV2)", transactional_id,
                  metadata.producer_id, metadata.producer_epoch, "committing" if committed else "aborting",
                  len(metadata.partitions))
        self._send_markers(metadata)
        return ErrorCode.NONE, *answer

    @staticmethod
    def _invalid_state(metadata: TransactionMetadata, committed: bool) -> ErrorCode:
        logger.warning("transactional id %s is in state %s, but received %s", metadata.transactional_id,
                    metadata.state.display_name, "COMMIT" if committed else "ABORT")
        return ErrorCode.INVALID_TXN_STATE

    def _send_markers(self, metadata: TransactionMetadata) -> None:
        """Write the markers still missing, then Complete* (with log.flush.on.ack once the markers
        written here are synced); what fails is retried later."""
        transactional_id = metadata.transactional_id
        if transactional_id in self._syncing:
            return  # its markers are being synced: the rest follows that
        committed = metadata.state == S.PREPARE_COMMIT
        to_sync = []
        if metadata.partitions:
            coordinator_epoch = self.state_log.coordinator_epoch(self.partition_for(transactional_id))
            results = self.write_markers(metadata.producer_id, metadata.producer_epoch, coordinator_epoch, committed,
                                         sorted(metadata.partitions), metadata.client_transaction_version)
            for tp, error in results.items():
                if error in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                    # Written, or the partition is gone (deleted topic): nothing left to close there.
                    metadata.partitions.discard(tp)
                    if error == ErrorCode.NONE and self.markers_synced is not None:
                        to_sync.append(tp)
                elif error in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                               ErrorCode.INVALID_RECORD, ErrorCode.CORRUPT_MESSAGE):
                    # Retrying cannot help (Kafka stops sending such a marker as well).
                    logger.error("giving up the marker of transactional id %s on %s-%d: %s", transactional_id,
                              tp[0], tp[1], error.name)
                    metadata.partitions.discard(tp)
        if to_sync:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None  # no event loop (unit tests): nothing to wait for
            if loop is not None:
                self._syncing[transactional_id] = loop.create_task(self._after_markers_synced(metadata, to_sync))
                return
        if metadata.partitions:
            self._retry_later(transactional_id)
            return
        error = self._append(metadata, metadata.prepare_complete(self.clock_ms()))
        if error != ErrorCode.NONE:
            self._retry_later(transactional_id)
            return
        self._incomplete.discard(transactional_id)
        logger.debug("transactional id %s (producer %d, epoch %d): %s", transactional_id, metadata.producer_id,
                 metadata.producer_epoch, metadata.state.display_name)

    async def markers_settled(self, timeout: float = MARKERS_SYNC_WAIT_SECONDS) -> None:
        """Until the markers being synced now are (and their transactions went on), or the time is up."""
        if self._syncing:
            await asyncio.wait(list(self._syncing.values()), timeout=timeout)

    async def _after_markers_synced(self, metadata: TransactionMetadata, partitions: list) -> None:
        """The markers just written are synced: go on with the transaction (Complete*, or the
        markers still missing); a marker whose sync failed is written again later."""
        transactional_id = metadata.transactional_id
        try:
            errors = await self.markers_synced(partitions)
        except Exception as exc:  # noqa: BLE001 - retried like a marker not written
            logger.warning("syncing the markers of transactional id %s failed: %s", transactional_id, exc)
            errors = dict.fromkeys(partitions, ErrorCode.KAFKA_STORAGE_ERROR)
        finally:
            self._syncing.pop(transactional_id, None)
        for tp, error in errors.items():
            if error != ErrorCode.NONE:
                metadata.partitions.add(tp)
        if self.transactions.get(transactional_id) is metadata and metadata.state in (S.PREPARE_COMMIT,
                                                                                          S.PREPARE_ABORT):
            self._guarded_send(metadata)

    def _guarded_send(self, metadata: TransactionMetadata) -> None:
        try:
            self._send_markers(metadata)
        except Exception:
            logger.exception("completing transactional id %s failed", metadata.transactional_id)
            self._retry_later(metadata.transactional_id)

    def _retry_later(self, transactional_id: str) -> None:
        self._incomplete.add(transactional_id)
        if self._retry_handle is not None or not self.active:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no event loop (unit tests): retry_incomplete() is called by hand
        self._retry_handle = loop.call_later(MARKER_RETRY_MS / 1000, self._retry_from_timer)

    def _retry_from_timer(self) -> None:
        self._retry_handle = None
        self._retry_guarded()

    def _retry_guarded(self) -> None:
        """retry_incomplete from a callback of the event loop: a failure is logged, not raised there."""
        try:
            self.retry_incomplete()
        except Exception:
            logger.exception("retrying transaction markers failed")

    def retry_incomplete(self) -> None:
        """Try again the markers (and Complete* records) that could not be written."""
        for transactional_id in sorted(self._incomplete):
            self._incomplete.discard(transactional_id)
            metadata = self.transactions.get(transactional_id)
            if metadata is not None and metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT) \
                    and not metadata.pending_transition_in_progress:
                self._send_markers(metadata)

    # == timeouts and expiration =====================================================================

    def abort_timed_out_transactions(self) -> list[str]:
        """Abort (with an epoch bump that fences the producer) every transaction running longer
        than its timeout. Returns the transactional ids aborted."""
        if self.coordinator_error() is not None:
            return []
        now = self.clock_ms()
        aborted = []
        for metadata in list(self.transactions.values()):
            if metadata.state != S.ONGOING or metadata.pending_transition_in_progress:
                continue
            if metadata.txn_start_timestamp + metadata.txn_timeout_ms >= now:
                continue
            transit = metadata.prepare_fence_producer_epoch()
            logger.info("aborting transactional id %s (producer %d, epoch %d): it ran longer than its timeout of %d ms",
                     metadata.transactional_id, metadata.producer_id, metadata.producer_epoch, metadata.txn_timeout_ms)
            error, _, _ = self._end_transaction(metadata.transactional_id, transit.producer_id,
                                                transit.producer_epoch, committed=False, from_client=False,
                                                client_transaction_version=self.transaction_version())
            if error == ErrorCode.NONE:
                aborted.append(metadata.transactional_id)
            else:
                if metadata.pending_state == S.PREPARE_EPOCH_FENCE:
                    metadata.pending_state = None
                logger.warning("could not abort timed-out transactional id %s: %s", metadata.transactional_id,
                            error.name)
        return aborted

    def expire_transactional_ids(self) -> list[str]:
        """Remove ids idle (no transaction, no InitProducerId) for transactional.id.expiration.ms."""
        if self.coordinator_error() is not None:
            return []
        now = self.clock_ms()
        expiration_ms = int(self._cfg("transactional.id.expiration.ms"))
        expired = []
        for metadata in list(self.transactions.values()):
            if metadata.state not in EXPIRATION_ALLOWED or metadata.pending_transition_in_progress:
                continue
            if metadata.txn_last_update_timestamp + expiration_ms > now:
                continue
            if self._append(metadata, metadata.prepare_dead()) == ErrorCode.NONE:
                self.transactions.pop(metadata.transactional_id, None)
                expired.append(metadata.transactional_id)
        if expired:
            logger.info("expired %d transactional ids: %s", len(expired), ", ".join(expired[:10]))
        return expired

    # == DescribeTransactions / ListTransactions =====================================================

    def describe_transaction(self, transactional_id: str) -> dict:
        """A DescribeTransactions entry."""
        entry = {"error_code": 0, "transactional_id": transactional_id, "transaction_state": "",
                 "transaction_timeout_ms": 0, "transaction_start_time_ms": -1, "producer_id": -1,
                 "producer_epoch": -1, "topics": []}
        error = self.coordinator_error()
        if error is None and not transactional_id:
            error = ErrorCode.INVALID_REQUEST
        if error is None:
            error = self.state_error()
        metadata = self.transactions.get(transactional_id) if error is None else None
        if error is None and (metadata is None or metadata.state == S.DEAD):
            error = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        if error is not None:
            entry["error_code"] = int(error)
            return entry
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(metadata.partitions):
            by_topic.setdefault(topic, []).append(partition)
        entry.update(transaction_state=metadata.state.display_name, transaction_timeout_ms=metadata.txn_timeout_ms,
                     transaction_start_time_ms=metadata.txn_start_timestamp, producer_id=metadata.producer_id,
                     producer_epoch=metadata.producer_epoch,
                     topics=[{"topic": t, "partitions": ps} for t, ps in by_topic.items()])
        return entry

    def list_transactions(self, state_filters: Iterable[str] = (), producer_id_filters: Iterable[int] = (),
                          duration_filter_ms: int = -1, transactional_id_pattern: str | None = None) -> dict:
        """A ListTransactions response body (filters empty = everything), as Kafka's
        TransactionStateManager.listTransactionStates: a duration >= 0 keeps transactions that
        started longer ago than that (one that never started, start -1, always qualifies, as in
        Kafka), a non-empty pattern keeps transactional ids it matches whole (INVALID_REGULAR_EXPRESSION
        when it does not compile)."""
        error = self.coordinator_error()
        if error is not None:
            return {"throttle_time_ms": 0, "error_code": int(error), "unknown_state_filters": [],
                    "transaction_states": []}
        pattern = None
        if transactional_id_pattern:
            try:
                pattern = re.compile(transactional_id_pattern)
            except re.error:
                return {"throttle_time_ms": 0, "error_code": int(ErrorCode.INVALID_REGULAR_EXPRESSION),
                        "unknown_state_filters": [], "transaction_states": []}
        now = self.clock_ms()
        states = set()
        unknown = []
        for name in state_filters:
            state = S.from_name(name)
            if state is None:
                unknown.append(name)
            else:
                states.add(state)
        producer_ids = set(producer_id_filters)
        listed = []
        for metadata in self.transactions.values():
            if metadata.state == S.DEAD:
                continue
            if producer_ids and metadata.producer_id not in producer_ids:
                continue
            if state_filters and metadata.state not in states:
                continue
            if duration_filter_ms >= 0 and now - metadata.txn_start_timestamp <= duration_filter_ms:
                continue
            if pattern is not None and not pattern.fullmatch(metadata.transactional_id):
                continue
            listed.append({"transactional_id": metadata.transactional_id, "producer_id": metadata.producer_id,
                           "transaction_state": metadata.state.display_name})
        return {"throttle_time_ms": 0, "error_code": 0, "unknown_state_filters": unknown,
                "transaction_states": listed}


__all__ = ["TransactionCoordinator", "TransactionVerificationFailed", "InitProducerIdResult", "EndTxnResult",
           "DEFAULT_ERROR", "GENERIC_ERROR_SUPPORTED", "ADD_PARTITION", "produce_operation",
           "txn_offset_commit_operation", "produce_error_of"]
