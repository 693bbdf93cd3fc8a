"""One transactional id's state as the transaction coordinator keeps it (Kafka's TransactionMetadata).

A change is made in two steps, as in Kafka: `prepare_*` computes the target (a TxnTransit) and marks
it pending; once the target is written to __transaction_state, `complete_transition` applies it
(or `abort_transition` drops it when the write failed). While a transition is pending, requests
that would start another one get CONCURRENT_TRANSACTIONS.

States and their transitions:

    Empty ---------AddPartitions/AddOffsets------> Ongoing
    Ongoing -------EndTxn(commit)----------------> PrepareCommit --markers written--> CompleteCommit
    Ongoing -------EndTxn(abort), timeout--------> PrepareAbort ---markers written--> CompleteAbort
    Ongoing -------InitProducerId (fence)--------> PrepareEpochFence (never written) -> PrepareAbort
    Complete*/Empty --InitProducerId-------------> Empty (epoch bumped, or a new producer id)
    Complete*/Empty --EndTxn(abort), TV2---------> PrepareAbort (an abort with nothing added)
    Complete*/Empty --transactional.id.expiration.ms--> Dead (a tombstone)

With transaction.version 2 (KIP-890 part 2; `client_transaction_version` is the version the client
used, EndTxn v5 or AddPartitionsToTxn v4+ from a Produce v12) Prepare* bumps the epoch: the markers
carry the new epoch, which fences the producer's older writes, and EndTxn answers it. When the
epoch is used up, Prepare* also picks the next producer id, which Complete* switches to (epoch 0).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kafka_wire.errors import ErrorCode

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767

TopicPartition = tuple[str, int]


class TransactionState(enum.IntEnum):
    """The states with the ids Kafka writes in TransactionLogValue.transaction_status."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        """The name DescribeTransactions and ListTransactions use ("PrepareCommit", ...)."""
        return _NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> "TransactionState | None":
        return _BY_NAME.get(name)


_NAMES = {
    TransactionState.EMPTY: "Empty",
    TransactionState.ONGOING: "Ongoing",
    TransactionState.PREPARE_COMMIT: "PrepareCommit",
    TransactionState.PREPARE_ABORT: "PrepareAbort",
    TransactionState.COMPLETE_COMMIT: "CompleteCommit",
    TransactionState.COMPLETE_ABORT: "CompleteAbort",
    TransactionState.DEAD: "Dead",
    TransactionState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {name: state for state, name in _NAMES.items()}

S = TransactionState
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
# States in which a transactional id may expire (transactional.id.expiration.ms).
EXPIRATION_ALLOWED = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps the last epoch (Short.MaxValue) for fencing, so a producer id is used up one before."""
    return epoch >= SHORT_MAX - 1


class IllegalTransition(RuntimeError):
    """A transition the state machine never makes: a bug, not something a client can cause."""


@dataclass(frozen=True)
class TxnTransit:
    """The target of a transition, written to the log before it takes effect."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    txn_timeout_ms: int
    txn_last_update_timestamp: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    state: TransactionState = TransactionState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    pending_state: TransactionState | None = None
    # A fence whose write failed already bumped the epoch in memory (never returned to a client):
    # the next fence reuses it instead of bumping again.
    has_failed_epoch_fence: bool = False
    # TV2: the producer id that Complete* moves to when Prepare* used up the epoch.
    next_producer_id: int = NO_PRODUCER_ID
    # The transaction.version the client used for the current transaction (0 or 2).
    client_transaction_version: int = 0

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    # -- preparing transitions ----------------------------------------------------------------------

    def _prepare(self, state: TransactionState, producer_id: int, producer_epoch: int, last_producer_epoch: int,
                 txn_timeout_ms: int, partitions, txn_start_timestamp: int, update_timestamp: int, *,
                 next_producer_id: int | None = None, client_transaction_version: int | None = None) -> TxnTransit:
        if self.pending_state is not None:
            raise IllegalTransition(f"{self.transactional_id}: transition to {state.display_name} while "
                                    f"one to {self.pending_state.display_name} is pending")
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalTransition(f"{self.transactional_id}: {self.state.display_name} cannot go to "
                                    f"{state.display_name}")
        self.pending_state = state
        # As in Kafka, the last producer id is the one before this transition: after a rotation
        # it lets a retry that still names the old id get the new one.
        return TxnTransit(producer_id, self.producer_id, producer_epoch, last_producer_epoch, txn_timeout_ms,
                          state, frozenset(partitions), txn_start_timestamp, update_timestamp,
                          self.next_producer_id if next_producer_id is None else next_producer_id,
                          self.client_transaction_version if client_transaction_version is None
                          else client_transaction_version)

    def prepare_fence_producer_epoch(self) -> TxnTransit:
        """Bump the epoch to fence the current producer before aborting its transaction."""
        if self.producer_epoch == SHORT_MAX:
            raise IllegalTransition(f"{self.transactional_id}: cannot fence epoch {SHORT_MAX}")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(S.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH,
                             self.txn_timeout_ms, self.partitions, self.txn_start_timestamp,
                             self.txn_last_update_timestamp)

    def prepare_increment_producer_epoch(self, new_timeout_ms: int, expected_epoch: int | None,
                                         now_ms: int) -> TxnTransit | ErrorCode:
        """InitProducerId on a completed transaction: the next epoch (KIP-360 rules when the
        producer says which epoch it has); PRODUCER_FENCED for a producer that was fenced."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransition(f"{self.transactional_id}: no epochs left for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            # A new producer instance: bump, and forget the previous epoch so that an older
            # instance retrying with it is fenced.
            next_epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            next_epoch, last_epoch = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            # A retry of a bump whose answer was lost: the same answer again.
            next_epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            return ErrorCode.PRODUCER_FENCED
        return self._prepare(S.EMPTY, self.producer_id, next_epoch, last_epoch, new_timeout_ms, (), -1, now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, new_timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransit:
        """The epoch is used up: continue with a new producer id at epoch 0."""
        if self.has_pending_transaction:
            raise IllegalTransition(f"{self.transactional_id}: cannot rotate the producer id during a transaction")
        return self._prepare(S.EMPTY, new_producer_id, 0,
                             self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             new_timeout_ms, (), -1, now_ms)

    def prepare_add_partitions(self, partitions, now_ms: int, client_transaction_version: int = 0) -> TxnTransit:
        start = now_ms if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT) else self.txn_start_timestamp
        return self._prepare(S.ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, self.partitions | set(partitions), start, now_ms,
                             client_transaction_version=client_transaction_version)

    def prepare_abort_or_commit(self, state: TransactionState, now_ms: int, client_transaction_version: int = 0,
                                next_producer_id: int = NO_PRODUCER_ID, no_partition_added: bool = False
                                ) -> TxnTransit:
        """Prepare*; with TV2 the epoch goes up by one (not past Short.MAX_VALUE, which only an
        abort of an already broken state can be at) and `next_producer_id` is kept for Complete*."""
        if client_transaction_version >= 2:
            epoch = self.producer_epoch if self.producer_epoch == SHORT_MAX and state == S.PREPARE_ABORT \
                else self.producer_epoch + 1
            last_epoch = self.producer_epoch
        else:
            epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        # A TV2 abort with nothing added has no start time of its own: the abort's time stands in.
        start = now_ms if no_partition_added else self.txn_start_timestamp
        return self._prepare(state, self.producer_id, epoch, last_epoch, self.txn_timeout_ms, self.partitions, start,
                             now_ms, next_producer_id=next_producer_id,
                             client_transaction_version=client_transaction_version)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        state = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        self.has_failed_epoch_fence = False
        producer_id, epoch = self.producer_id, self.producer_epoch
        if self.client_transaction_version >= 2 and self.next_producer_id != NO_PRODUCER_ID:
            # The epoch was used up: continue with the next producer id (the client got it with
            # EndTxn). The last epoch stays the one the client saw last.
            producer_id, epoch = self.next_producer_id, 0
        return self._prepare(state, producer_id, epoch, self.last_producer_epoch, self.txn_timeout_ms, (),
                             self.txn_start_timestamp, now_ms, next_producer_id=NO_PRODUCER_ID)

    def end_txn_answer(self) -> tuple[int, int]:
        """The producer id and epoch a TV2 EndTxn answers once Prepare* is written."""
        if self.client_transaction_version >= 2 and self.next_producer_id != NO_PRODUCER_ID:
            return self.next_producer_id, 0
        return self.producer_id, self.producer_epoch

    def prepare_dead(self) -> TxnTransit:
        return self._prepare(S.DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, (), self.txn_start_timestamp, self.txn_last_update_timestamp)

    # -- completing them ----------------------------------------------------------------------------

    def complete_transition(self, transit: TxnTransit) -> None:
        """The target was written: it becomes the state."""
        if self.pending_state != transit.state:
            raise IllegalTransition(f"{self.transactional_id}: completing a transition to "
                                    f"{transit.state.display_name}, but the pending one is {self.pending_state}")
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.txn_timeout_ms = transit.txn_timeout_ms
        self.state = transit.state
        self.partitions = set(transit.partitions)
        self.txn_start_timestamp = transit.txn_start_timestamp
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.next_producer_id = transit.next_producer_id
        self.client_transaction_version = transit.client_transaction_version
        self.pending_state = None

    def abort_transition(self) -> None:
        """The write failed: nothing changes (a fence keeps its bumped epoch, see has_failed_epoch_fence)."""
        self.pending_state = None

