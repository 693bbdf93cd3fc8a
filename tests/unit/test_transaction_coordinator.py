"""The transaction coordinator's state machine, without a server: an in-memory transaction log
that encodes and decodes records as __transaction_state holds them, and a marker writer that
records (or refuses) what it is asked to write."""

from __future__ import annotations

import pytest

from coordinator.offsets_store import AppendFailed
from coordinator.transaction_coordinator import TransactionCoordinator
from coordinator.txn_log import decode_transaction_record, partition_for, transaction_record
from coordinator.txn_metadata import IllegalTransition, TransactionMetadata, TransactionState, TxnTransit
from kafka_wire.errors import ErrorCode

S = TransactionState
TXID = "my-txn"


class MemoryStateLog:
    """__transaction_state as lists of encoded (key, value) records per partition."""

    def __init__(self, partitions: int = 5):
        self.partitions = {p: [] for p in range(partitions)}
        self.num_partitions = partitions
        self.fail_with: ErrorCode | None = None

    def existing_partitions(self) -> int:
        return self.num_partitions

    def ensure_created(self) -> int:
        return self.num_partitions

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def coordinator_epoch(self, partition: int) -> int:
        return 7

    def append(self, partition: int, record, now_ms: int) -> int:
        if self.fail_with is not None:
            raise AppendFailed(self.fail_with)
        self.partitions[partition].append(record)
        return len(self.partitions[partition]) - 1

    def read_transactions(self, partition: int):
        for key, value in self.partitions[partition]:
            yield decode_transaction_record(key, value)

    def states(self, transactional_id: str) -> list[str]:
        """The states written for an id, in order (tombstones as 'tombstone')."""
        found = []
        for key, value in self.partitions[self.partition_for(transactional_id)]:
            logged = decode_transaction_record(key, value)
            if logged.transactional_id == transactional_id:
                found.append("tombstone" if logged.metadata is None else logged.metadata.state.display_name)
        return found


class Markers:
    """Records marker writes; partitions in `failing` answer `error`."""

    def __init__(self):
        self.written: list[tuple] = []
        self.versions: list[int] = []  # the transaction version of each marker written
        self.failing: set = set()
        self.error = ErrorCode.KAFKA_STORAGE_ERROR

    def __call__(self, producer_id, producer_epoch, coordinator_epoch, committed, partitions, transaction_version=0):
        results = {}
        for tp in partitions:
            if tp in self.failing:
                results[tp] = self.error
            else:
                self.written.append((producer_id, producer_epoch, coordinator_epoch, committed, tp))
                self.versions.append(transaction_version)
                results[tp] = ErrorCode.NONE
        return results


class Clock:
    def __init__(self):
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def make_coordinator(state_log=None, markers=None, clock=None, config=None, next_id=None):
    clock = clock or Clock()
    coordinator = TransactionCoordinator(clock_ms=clock)
    ids = iter(range(1000, 2000))
    coordinator.attach(config or {}, state_log or MemoryStateLog(), markers or Markers(),
                       next_id or (lambda: next(ids)))
    coordinator.active = True
    for partition in range(coordinator.state_log.num_partitions):
        coordinator.load_partition(partition)
    return coordinator


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def log():
    return MemoryStateLog()


@pytest.fixture
def markers():
    return Markers()


@pytest.fixture
def coordinator(log, markers, clock):
    return make_coordinator(log, markers, clock)


def init(coordinator, txid=TXID, timeout=60000, producer_id=-1, producer_epoch=-1):
    return coordinator.handle_init_producer_id(txid, timeout, producer_id, producer_epoch)


def start_transaction(coordinator, partitions=(("t", 0), ("t", 1)), txid=TXID):
    result = init(coordinator, txid)
    assert result.error == ErrorCode.NONE
    assert coordinator.handle_add_partitions(txid, result.producer_id, result.producer_epoch,
                                             partitions) == ErrorCode.NONE
    return result


# -- InitProducerId ---------------------------------------------------------------------------------

def test_init_gives_a_new_id_then_bumps_the_epoch(coordinator, log):
    first = init(coordinator)
    assert (first.error, first.producer_id, first.producer_epoch) == (ErrorCode.NONE, 1000, 0)
    second = init(coordinator)
    assert (second.error, second.producer_id, second.producer_epoch) == (ErrorCode.NONE, 1000, 1)
    assert log.states(TXID) == ["Empty", "Empty"]


def test_init_checks_the_request(coordinator):
    assert init(coordinator, txid="").error == ErrorCode.INVALID_REQUEST
    assert init(coordinator, timeout=900001).error == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert init(coordinator, timeout=0).error == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert init(coordinator, producer_id=5).error == ErrorCode.INVALID_REQUEST  # an id without its epoch
    assert TXID not in coordinator.transactions


def test_transaction_max_timeout_comes_from_the_config(log, markers, clock):
    coordinator = make_coordinator(log, markers, clock, config={"transaction.max.timeout.ms": 5000})
    assert init(coordinator, timeout=5001).error == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert init(coordinator, timeout=5000).error == ErrorCode.NONE


def test_coordinator_not_serving(coordinator):
    coordinator.active = False
    assert init(coordinator).error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    coordinator.active, coordinator.loading = True, True
    assert init(coordinator).error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def test_init_during_a_transaction_aborts_it_with_a_bumped_epoch(coordinator, markers, log):
    started = start_transaction(coordinator)
    retry = init(coordinator)
    assert retry.error == ErrorCode.CONCURRENT_TRANSACTIONS
    # The abort markers carry epoch 1, which fences the old producer on every partition.
    assert markers.written == [(1000, 1, 7, False, ("t", 0)), (1000, 1, 7, False, ("t", 1))]
    assert coordinator.transactions[TXID].state == S.COMPLETE_ABORT
    again = init(coordinator)
    assert (again.error, again.producer_id, again.producer_epoch) == (ErrorCode.NONE, 1000, 2)
    # The fenced producer cannot end (or extend) its transaction.
    assert coordinator.handle_end_transaction(TXID, 1000, started.producer_epoch, True) == ErrorCode.PRODUCER_FENCED
    assert coordinator.handle_add_partitions(TXID, 1000, 0, [("t", 2)]) == ErrorCode.PRODUCER_FENCED
    assert log.states(TXID) == ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort", "Empty"]


def test_kip360_epoch_bump_by_the_same_producer(coordinator):
    first = init(coordinator)
    bumped = init(coordinator, producer_id=first.producer_id, producer_epoch=first.producer_epoch)
    assert (bumped.error, bumped.producer_id, bumped.producer_epoch) == (ErrorCode.NONE, 1000, 1)
    # A retry of that bump (its answer was lost) gets the same answer, not another bump.
    retried = init(coordinator, producer_id=first.producer_id, producer_epoch=first.producer_epoch)
    assert (retried.error, retried.producer_epoch) == (ErrorCode.NONE, 1)
    # A producer id the coordinator does not know for this transactional id is fenced.
    assert init(coordinator, producer_id=999, producer_epoch=0).error == ErrorCode.PRODUCER_FENCED


def test_kip360_an_older_epoch_is_fenced_after_a_new_instance(coordinator):
    first = init(coordinator)
    init(coordinator)  # another instance: epoch 1, the previous epoch forgotten
    assert init(coordinator, producer_id=first.producer_id, producer_epoch=0).error == ErrorCode.PRODUCER_FENCED


def test_exhausted_epoch_moves_to_a_new_producer_id(coordinator):
    init(coordinator)
    metadata = coordinator.transactions[TXID]
    metadata.producer_epoch = 32766  # Short.MaxValue - 1: exhausted
    rotated = init(coordinator, producer_id=1000, producer_epoch=32766)
    assert (rotated.error, rotated.producer_id, rotated.producer_epoch) == (ErrorCode.NONE, 1001, 0)
    # The retry of that call, still naming the old id and epoch, gets the new id again.
    retried = init(coordinator, producer_id=1000, producer_epoch=32766)
    assert (retried.error, retried.producer_id, retried.producer_epoch) == (ErrorCode.NONE, 1001, 0)


def test_fencing_an_ongoing_transaction_at_the_last_epoch_then_rotating(coordinator, markers):
    start_transaction(coordinator)
    coordinator.transactions[TXID].producer_epoch = 32766
    assert init(coordinator).error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert markers.written[-1][1] == 32767  # the abort used the last epoch
    fresh = init(coordinator)
    assert (fresh.error, fresh.producer_id, fresh.producer_epoch) == (ErrorCode.NONE, 1001, 0)


# -- AddPartitionsToTxn ----------------------------------------------------------------------------

def test_add_partitions_checks_the_producer(coordinator, log):
    result = init(coordinator)
    pid, epoch = result.producer_id, result.producer_epoch
    assert coordinator.handle_add_partitions("other", pid, epoch, [("t", 0)]) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert coordinator.handle_add_partitions(TXID, pid + 1, epoch, [("t", 0)]) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert coordinator.handle_add_partitions(TXID, pid, epoch + 1, [("t", 0)]) == ErrorCode.PRODUCER_FENCED
    assert coordinator.handle_add_partitions("", pid, epoch, [("t", 0)]) == ErrorCode.INVALID_REQUEST
    assert coordinator.handle_add_partitions(TXID, pid, epoch, [("t", 0)]) == ErrorCode.NONE
    metadata = coordinator.transactions[TXID]
    assert metadata.state == S.ONGOING and metadata.partitions == {("t", 0)}
    assert metadata.txn_start_timestamp == coordinator.clock_ms()
    # Partitions already in the transaction: answered without a write.
    written = len(log.states(TXID))
    assert coordinator.handle_add_partitions(TXID, pid, epoch, [("t", 0)]) == ErrorCode.NONE
    assert len(log.states(TXID)) == written
    assert coordinator.handle_add_partitions(TXID, pid, epoch, [("u", 3)]) == ErrorCode.NONE
    assert metadata.partitions == {("t", 0), ("u", 3)}


def test_a_failed_write_changes_nothing(coordinator, log):
    result = init(coordinator)
    log.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    error = coordinator.handle_add_partitions(TXID, result.producer_id, result.producer_epoch, [("t", 0)])
    assert error == ErrorCode.NOT_COORDINATOR
    metadata = coordinator.transactions[TXID]
    assert metadata.state == S.EMPTY and not metadata.partitions and metadata.pending_state is None
    log.fail_with = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert init(coordinator).error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert metadata.producer_epoch == 0


def test_verify_partitions(coordinator):
    result = start_transaction(coordinator, [("t", 0)])
    pid, epoch = result.producer_id, result.producer_epoch
    assert coordinator.handle_verify_partitions(TXID, pid, epoch, [("t", 0), ("t", 1)]) == {
        ("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.INVALID_TXN_STATE}
    assert coordinator.handle_verify_partitions(TXID, pid, epoch + 1, [("t", 0)]) == {
        ("t", 0): ErrorCode.PRODUCER_FENCED}
    assert coordinator.handle_verify_partitions("nope", pid, epoch, [("t", 0)]) == {
        ("t", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING}


def test_transactional_write_verification(coordinator):
    result = start_transaction(coordinator, [("t", 0)])
    pid, epoch = result.producer_id, result.producer_epoch
    verify = coordinator.produce_verification_error
    assert verify(TXID, pid, epoch, "t", 0, None) == ErrorCode.NONE
    assert verify(TXID, pid, epoch, "t", 1, None) == ErrorCode.INVALID_TXN_STATE
    assert verify(TXID, pid, epoch - 1, "t", 0, None) == ErrorCode.INVALID_PRODUCER_EPOCH
    # The coordinator's own answer (TxnOffsetCommit then says INVALID_PRODUCER_EPOCH, as Produce does).
    assert coordinator.verify_transactional_write(TXID, pid, epoch - 1, "t", 0, None) == ErrorCode.PRODUCER_FENCED
    # While markers are pending, Produce says NOT_ENOUGH_REPLICAS (older clients retry it).
    coordinator.write_markers = lambda *args: dict.fromkeys(args[4], ErrorCode.KAFKA_STORAGE_ERROR)
    assert coordinator.handle_end_transaction(TXID, pid, epoch, True) == ErrorCode.NONE
    assert coordinator.verify_transactional_write(TXID, pid, epoch, "t", 0, None) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert verify(TXID, pid, epoch, "t", 0, None) == ErrorCode.NOT_ENOUGH_REPLICAS
    coordinator.config = {"transaction.partition.verification.enable": False}
    assert verify(TXID, pid, epoch, "t", 1, None) == ErrorCode.NONE


# -- EndTxn ----------------------------------------------------------------------------------------

def test_commit_writes_markers_then_completes(coordinator, markers, log):
    result = start_transaction(coordinator)
    assert coordinator.handle_end_transaction(TXID, result.producer_id, result.producer_epoch, True) == ErrorCode.NONE
    assert markers.written == [(1000, 0, 7, True, ("t", 0)), (1000, 0, 7, True, ("t", 1))]
    metadata = coordinator.transactions[TXID]
    assert metadata.state == S.COMPLETE_COMMIT and not metadata.partitions
    assert log.states(TXID) == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
    # A retried commit is answered as done; an abort now is not allowed.
    assert coordinator.handle_end_transaction(TXID, 1000, 0, True) == ErrorCode.NONE
    assert coordinator.handle_end_transaction(TXID, 1000, 0, False) == ErrorCode.INVALID_TXN_STATE
    # The next transaction starts from CompleteCommit.
    assert coordinator.handle_add_partitions(TXID, 1000, 0, [("t", 5)]) == ErrorCode.NONE
    assert coordinator.handle_end_transaction(TXID, 1000, 0, False) == ErrorCode.NONE
    assert markers.written[-1] == (1000, 0, 7, False, ("t", 5))


def test_end_transaction_errors(coordinator):
    result = init(coordinator)
    pid, epoch = result.producer_id, result.producer_epoch
    assert coordinator.handle_end_transaction(TXID, pid, epoch, True) == ErrorCode.INVALID_TXN_STATE  # Empty
    assert coordinator.handle_end_transaction("nope", pid, epoch, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert coordinator.handle_end_transaction(TXID, pid, epoch + 1, True) == ErrorCode.PRODUCER_FENCED
    assert coordinator.handle_end_transaction("", pid, epoch, True) == ErrorCode.INVALID_REQUEST


def test_markers_that_fail_are_retried_and_block_the_next_transaction(coordinator, markers, log):
    result = start_transaction(coordinator)
    pid, epoch = result.producer_id, result.producer_epoch
    markers.failing = {("t", 1)}
    assert coordinator.handle_end_transaction(TXID, pid, epoch, True) == ErrorCode.NONE
    metadata = coordinator.transactions[TXID]
    assert metadata.state == S.PREPARE_COMMIT and metadata.partitions == {("t", 1)}
    assert coordinator.handle_add_partitions(TXID, pid, epoch, [("t", 0)]) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert coordinator.handle_end_transaction(TXID, pid, epoch, True) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert coordinator.handle_end_transaction(TXID, pid, epoch, False) == ErrorCode.INVALID_TXN_STATE
    assert init(coordinator).error == ErrorCode.CONCURRENT_TRANSACTIONS
    coordinator.retry_incomplete()
    assert metadata.state == S.PREPARE_COMMIT
    markers.failing = set()
    coordinator.retry_incomplete()
    assert metadata.state == S.COMPLETE_COMMIT
    assert [w[4] for w in markers.written] == [("t", 0), ("t", 1)]  # each partition once
    assert log.states(TXID)[-2:] == ["PrepareCommit", "CompleteCommit"]


def test_a_deleted_partition_needs_no_marker(coordinator, markers):
    result = start_transaction(coordinator)
    markers.failing, markers.error = {("t", 1)}, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert coordinator.handle_end_transaction(TXID, result.producer_id, result.producer_epoch, True) == ErrorCode.NONE
    assert coordinator.transactions[TXID].state == S.COMPLETE_COMMIT


# -- timeouts and expiration -------------------------------------------------------------------------

def test_timed_out_transaction_is_aborted_and_its_producer_fenced(coordinator, markers, clock, log):
    result = start_transaction(coordinator)
    clock.now += 60000
    assert coordinator.abort_timed_out_transactions() == []  # not longer than its timeout yet
    clock.now += 1
    assert coordinator.abort_timed_out_transactions() == [TXID]
    metadata = coordinator.transactions[TXID]
    assert metadata.state == S.COMPLETE_ABORT and metadata.producer_epoch == 1
    assert markers.written == [(1000, 1, 7, False, ("t", 0)), (1000, 1, 7, False, ("t", 1))]
    assert coordinator.handle_end_transaction(TXID, 1000, result.producer_epoch, True) == ErrorCode.PRODUCER_FENCED
    assert log.states(TXID)[-2:] == ["PrepareAbort", "CompleteAbort"]


def test_failed_fence_write_keeps_the_bumped_epoch_without_bumping_again(coordinator, log, clock, markers):
    start_transaction(coordinator)
    clock.now += 60001
    log.fail_with = ErrorCode.KAFKA_STORAGE_ERROR
    assert coordinator.abort_timed_out_transactions() == []
    metadata = coordinator.transactions[TXID]
    assert metadata.state == S.ONGOING and metadata.producer_epoch == 1 and metadata.has_failed_epoch_fence
    log.fail_with = None
    assert coordinator.abort_timed_out_transactions() == [TXID]
    assert metadata.producer_epoch == 1 and metadata.state == S.COMPLETE_ABORT


def test_idle_transactional_ids_expire(log, markers, clock):
    coordinator = make_coordinator(log, markers, clock, config={"transactional.id.expiration.ms": 1000})
    init(coordinator, "idle")
    start_transaction(coordinator, txid="busy")
    clock.now += 1000
    assert coordinator.expire_transactional_ids() == ["idle"]  # an ongoing transaction does not expire
    assert "idle" not in coordinator.transactions and "busy" in coordinator.transactions
    assert log.states("idle") == ["Empty", "tombstone"]
    # Expired and replayed: the id is gone; a new InitProducerId starts over with a new producer id.
    reloaded = make_coordinator(log, markers, clock)
    assert "idle" not in reloaded.transactions
    assert init(reloaded, "idle").producer_epoch == 0


# -- replay ----------------------------------------------------------------------------------------

def test_replay_restores_state_and_completes_prepared_transactions(log, markers, clock):
    first = make_coordinator(log, markers, clock)
    start_transaction(first, txid="ongoing")
    done = start_transaction(first, txid="committed")
    assert first.handle_end_transaction("committed", done.producer_id, done.producer_epoch, True) == ErrorCode.NONE
    prepared = start_transaction(first, txid="prepared", partitions=[("t", 0), ("u", 1)])
    markers.failing = {("t", 0), ("u", 1)}  # the broker "dies" before any marker is written
    assert first.handle_end_transaction("prepared", prepared.producer_id, prepared.producer_epoch,
                                        False) == ErrorCode.NONE
    assert first.transactions["prepared"].state == S.PREPARE_ABORT

    markers.failing = set()
    written_before = len(markers.written)
    second = make_coordinator(log, markers, clock)
    assert second.transactions["ongoing"].state == S.ONGOING
    assert second.transactions["ongoing"].partitions == {("t", 0), ("t", 1)}
    assert second.transactions["committed"].state == S.COMPLETE_COMMIT
    assert second.transactions["prepared"].state == S.PREPARE_ABORT
    second.complete_prepared_transactions()
    assert second.transactions["prepared"].state == S.COMPLETE_ABORT
    assert sorted(w[4] for w in markers.written[written_before:]) == [("t", 0), ("u", 1)]
    assert all(w[3] is False for w in markers.written[written_before:])
    # The ongoing one aborts once its timeout passed (measured from its start in the log).
    clock.now += 60001
    assert second.abort_timed_out_transactions() == ["ongoing"]


def test_records_round_trip():
    transit = TxnTransit(producer_id=42, last_producer_id=41, producer_epoch=3, last_producer_epoch=2,
                         txn_timeout_ms=15000, state=S.PREPARE_COMMIT,
                         partitions=frozenset({("a", 1), ("a", 0), ("b", 7)}), txn_start_timestamp=10,
                         txn_last_update_timestamp=20)
    key, value = transaction_record("tx", transit)
    logged = decode_transaction_record(key, value)
    md = logged.metadata
    assert logged.transactional_id == "tx"
    assert (md.producer_id, md.producer_epoch, md.txn_timeout_ms, md.state) == (42, 3, 15000, S.PREPARE_COMMIT)
    assert md.partitions == {("a", 0), ("a", 1), ("b", 7)}
    assert (md.txn_start_timestamp, md.txn_last_update_timestamp) == (10, 20)
    # Kafka's bytes: key version 0 + string; value version 0 (not flexible).
    assert key == b"\x00\x00\x00\x02tx"
    assert value[:2] == b"\x00\x00"
    empty = TxnTransit(42, -1, 4, -1, 15000, S.EMPTY, frozenset(), -1, 30)
    assert decode_transaction_record(*transaction_record("tx", empty)).metadata.partitions == set()
    dead = TxnTransit(42, -1, 4, -1, 15000, S.DEAD, frozenset(), -1, 30)
    assert transaction_record("tx", dead)[1] is None


# -- DescribeTransactions / ListTransactions --------------------------------------------------------

def test_describe_and_list(coordinator):
    started = start_transaction(coordinator, [("t", 1), ("t", 0), ("u", 2)])
    init(coordinator, "idle")
    described = coordinator.describe_transaction(TXID)
    assert described["error_code"] == 0 and described["transaction_state"] == "Ongoing"
    assert described["producer_id"] == started.producer_id and described["transaction_timeout_ms"] == 60000
    assert described["topics"] == [{"topic": "t", "partitions": [0, 1]}, {"topic": "u", "partitions": [2]}]
    assert coordinator.describe_transaction("nope")["error_code"] == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    assert coordinator.describe_transaction("")["error_code"] == ErrorCode.INVALID_REQUEST

    everything = coordinator.list_transactions()
    assert {t["transactional_id"] for t in everything["transaction_states"]} == {TXID, "idle"}
    ongoing = coordinator.list_transactions(["Ongoing", "Bogus"])
    assert [t["transactional_id"] for t in ongoing["transaction_states"]] == [TXID]
    assert ongoing["unknown_state_filters"] == ["Bogus"]
    by_producer = coordinator.list_transactions([], [coordinator.transactions["idle"].producer_id])
    assert [t["transactional_id"] for t in by_producer["transaction_states"]] == ["idle"]


def test_list_transactions_by_duration_and_pattern(coordinator, clock):
    """ListTransactions v1 keeps transactions running longer than the duration (one that never
    started, start -1, always qualifies, as Kafka 4.3 answers); v2 keeps the ids the pattern
    matches whole, and a pattern that does not compile is INVALID_REGULAR_EXPRESSION."""
    start_transaction(coordinator)
    init(coordinator, "idle")
    clock.now += 1000

    def listed(**filters):
        return sorted(t["transactional_id"] for t in coordinator.list_transactions(**filters)["transaction_states"])

    assert listed(duration_filter_ms=-1) == listed(duration_filter_ms=999) == sorted([TXID, "idle"])
    assert listed(duration_filter_ms=1000) == ["idle"]
    assert listed(transactional_id_pattern="id.*") == ["idle"]
    assert listed(transactional_id_pattern="id") == []
    assert listed(transactional_id_pattern="") == sorted([TXID, "idle"])
    bad = coordinator.list_transactions(["Bogus"], transactional_id_pattern="id[")
    assert (bad["error_code"], bad["unknown_state_filters"], bad["transaction_states"]) == \
        (ErrorCode.INVALID_REGULAR_EXPRESSION, [], [])


# -- the state machine itself -------------------------------------------------------------------------

def test_illegal_transitions_are_refused():
    metadata = TransactionMetadata("x", 1, 1000, 0, producer_epoch=0)
    with pytest.raises(IllegalTransition):
        metadata.prepare_abort_or_commit(S.PREPARE_COMMIT, 1)  # Empty -> PrepareCommit
    transit = metadata.prepare_add_partitions([("t", 0)], 5)
    with pytest.raises(IllegalTransition):
        metadata.prepare_add_partitions([("t", 1)], 6)  # one transition at a time
    metadata.complete_transition(transit)
    assert metadata.state == S.ONGOING and metadata.txn_start_timestamp == 5
    with pytest.raises(IllegalTransition):
        metadata.complete_transition(transit)  # nothing pending


# -- transaction.version 2 (KIP-890 part 2), as Kafka 4.3's coordinator ------------------------------

def tv2_transaction(coordinator, partitions=(("t", 0), ("t", 1)), txid=TXID):
    """A producer's TV2 transaction: InitProducerId, then its partitions added by the leaders
    (Produce v12 / TxnOffsetCommit v5 send AddPartitionsToTxn v5, client transaction version 2)."""
    result = init(coordinator, txid)
    assert coordinator.handle_add_partitions(txid, result.producer_id, result.producer_epoch, partitions,
                                             client_transaction_version=2) == ErrorCode.NONE
    assert coordinator.transactions[txid].client_transaction_version == 2
    return result


def end_v2(coordinator, producer_id, epoch, committed, txid=TXID):
    result = coordinator.end_transaction(txid, producer_id, epoch, committed, client_transaction_version=2)
    return result.error, result.producer_id, result.producer_epoch


def test_tv2_commit_bumps_the_epoch_and_answers_it(coordinator, markers, log):
    tv2_transaction(coordinator)
    assert end_v2(coordinator, 1000, 0, True) == (ErrorCode.NONE, 1000, 1)
    # The markers carry the new epoch (which fences the producer's older writes) and say TV2.
    assert markers.written == [(1000, 1, 7, True, ("t", 0)), (1000, 1, 7, True, ("t", 1))]
    assert markers.versions == [2, 2]
    metadata = coordinator.transactions[TXID]
    assert (metadata.state, metadata.producer_epoch, metadata.last_producer_epoch) == (S.COMPLETE_COMMIT, 1, 0)
    assert log.states(TXID) == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
    # The next transaction runs at epoch 1 with no InitProducerId in between.
    assert coordinator.handle_add_partitions(TXID, 1000, 1, [("t", 2)], client_transaction_version=2) == ErrorCode.NONE
    assert end_v2(coordinator, 1000, 1, False) == (ErrorCode.NONE, 1000, 2)
    assert markers.written[-1] == (1000, 2, 7, False, ("t", 2))


def test_tv2_retries_are_told_apart_by_the_epoch(coordinator, markers):
    tv2_transaction(coordinator)
    assert end_v2(coordinator, 1000, 0, True) == (ErrorCode.NONE, 1000, 1)
    written = len(markers.written)
    # The same commit again (its answer was lost): done, with the epoch to go on with.
    assert end_v2(coordinator, 1000, 0, True) == (ErrorCode.NONE, 1000, 1)
    assert end_v2(coordinator, 1000, 0, False) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
    # At the current epoch a commit with nothing in the transaction is invalid ...
    assert end_v2(coordinator, 1000, 1, True) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
    # ... while an abort is allowed and bumps again (no partitions: no markers).
    assert end_v2(coordinator, 1000, 1, False) == (ErrorCode.NONE, 1000, 2)
    assert len(markers.written) == written
    assert coordinator.transactions[TXID].state == S.COMPLETE_ABORT
    assert end_v2(coordinator, 1000, 1, False) == (ErrorCode.NONE, 1000, 2)  # a retry of that abort
    assert end_v2(coordinator, 1000, 0, False) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    assert end_v2(coordinator, 1000, 3, False) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    assert end_v2(coordinator, 999, 2, False) == (ErrorCode.INVALID_PRODUCER_ID_MAPPING, -1, -1)


def test_tv2_empty_abort_and_commit(coordinator):
    init(coordinator)
    assert end_v2(coordinator, 1000, 0, True) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
    assert end_v2(coordinator, 1000, 0, False) == (ErrorCode.NONE, 1000, 1)


def test_tv2_used_up_epoch_moves_to_the_next_producer_id(coordinator, markers, log):
    tv2_transaction(coordinator)
    coordinator.transactions[TXID].producer_epoch = 32766  # Short.MaxValue - 1: the last usable epoch
    assert end_v2(coordinator, 1000, 32766, True) == (ErrorCode.NONE, 1001, 0)
    # The markers still close producer 1000's records, at the last epoch.
    assert markers.written[-1] == (1000, 32767, 7, True, ("t", 1))
    metadata = coordinator.transactions[TXID]
    assert (metadata.producer_id, metadata.producer_epoch, metadata.last_producer_id) == (1001, 0, 1000)
    assert metadata.next_producer_id == -1
    # A retry naming the old id and its last epoch gets the new id.
    assert end_v2(coordinator, 1000, 32766, True) == (ErrorCode.NONE, 1001, 0)
    assert coordinator.handle_add_partitions(TXID, 1001, 0, [("t", 0)], client_transaction_version=2) == ErrorCode.NONE


def test_tv2_fence_and_timeout_follow_the_finalized_version(coordinator, markers, clock):
    coordinator.transaction_version = lambda: 2
    tv2_transaction(coordinator)
    # InitProducerId of a new instance aborts the ongoing transaction with the next epoch ...
    assert init(coordinator).error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert markers.written == [(1000, 1, 7, False, ("t", 0)), (1000, 1, 7, False, ("t", 1))]
    assert markers.versions == [2, 2]
    # ... and the instance's retry gets the one after.
    again = init(coordinator)
    assert (again.error, again.producer_id, again.producer_epoch) == (ErrorCode.NONE, 1000, 2)
    assert coordinator.handle_add_partitions(TXID, 1000, 2, [("t", 0)], client_transaction_version=2) == ErrorCode.NONE
    clock.now += 60001
    assert coordinator.abort_timed_out_transactions() == [TXID]
    assert markers.written[-1] == (1000, 3, 7, False, ("t", 0))
    assert coordinator.transactions[TXID].producer_epoch == 3


def test_tv1_clients_keep_their_rules_when_tv2_is_finalized(coordinator, markers):
    coordinator.transaction_version = lambda: 2
    result = start_transaction(coordinator)
    assert coordinator.handle_end_transaction(TXID, result.producer_id, result.producer_epoch, True) == ErrorCode.NONE
    assert markers.written == [(1000, 0, 7, True, ("t", 0)), (1000, 0, 7, True, ("t", 1))]
    assert markers.versions == [0, 0]
    assert coordinator.transactions[TXID].producer_epoch == 0


def test_log_value_version_follows_the_finalized_version_and_replays_tv2_state(log, markers, clock):
    coordinator = make_coordinator(log, markers, clock)
    coordinator.transaction_version = lambda: 2
    tv2_transaction(coordinator)
    coordinator.transactions[TXID].producer_epoch = 32766
    markers.failing = {("t", 1)}  # the commit stays prepared
    assert end_v2(coordinator, 1000, 32766, True) == (ErrorCode.NONE, 1001, 0)
    key, value = log.partitions[coordinator.partition_for(TXID)][-1]
    assert int.from_bytes(value[:2], "big") == 1  # TransactionLogValue v1
    # A new coordinator (a restart) replays PrepareCommit with its next producer id and TV2 ...
    again = make_coordinator(log, Markers(), clock)
    metadata = again.transactions[TXID]
    assert (metadata.state, metadata.producer_epoch, metadata.next_producer_id,
            metadata.client_transaction_version) == (S.PREPARE_COMMIT, 32767, 1001, 2)
    # ... and completes it onto the next producer id.
    again.complete_prepared_transactions()
    assert again.write_markers.versions == [2, 2]
    assert (metadata.state, metadata.producer_id, metadata.producer_epoch) == (S.COMPLETE_COMMIT, 1001, 0)
    # With transaction.version 0, values stay at v0.
    v0 = make_coordinator(MemoryStateLog(), Markers(), clock)
    init(v0)
    value = next(iter(p for p in v0.state_log.partitions.values() if p))[-1][1]
    assert int.from_bytes(value[:2], "big") == 0


def test_leaders_add_partitions_for_tv2_writes(coordinator):
    from coordinator.transaction_coordinator import (
        ADD_PARTITION,
        GENERIC_ERROR_SUPPORTED,
        produce_operation,
        txn_offset_commit_operation,
    )

    assert [produce_operation(v) for v in (9, 10, 11, 12, 13)] == [0, 0, 1, 2, 2]
    assert [txn_offset_commit_operation(v) for v in (3, 4, 5)] == [0, 1, 2]
    result = init(coordinator)
    pid, epoch = result.producer_id, result.producer_epoch
    verify = coordinator.produce_verification_error
    # Verification (Produce v11) says TRANSACTION_ABORTABLE for a partition not added ...
    assert verify(TXID, pid, epoch, "t", 0, None, GENERIC_ERROR_SUPPORTED) == ErrorCode.TRANSACTION_ABORTABLE
    # ... Produce v12 adds it, as a TV2 transaction, even with verification turned off.
    coordinator.config = {"transaction.partition.verification.enable": False}
    assert verify(TXID, pid, epoch, "t", 0, None, ADD_PARTITION) == ErrorCode.NONE
    metadata = coordinator.transactions[TXID]
    assert (metadata.state, metadata.partitions, metadata.client_transaction_version) == (
        S.ONGOING, {("t", 0)}, 2)
    assert verify(TXID, pid, epoch + 1, "t", 1, None, ADD_PARTITION) == ErrorCode.INVALID_PRODUCER_EPOCH
    # While the commit completes, a TV2 producer hears CONCURRENT_TRANSACTIONS itself.
    coordinator.write_markers = Markers()
    coordinator.write_markers.failing = {("t", 0)}
    assert end_v2(coordinator, pid, epoch, True) == (ErrorCode.NONE, pid, epoch + 1)
    assert verify(TXID, pid, epoch + 1, "t", 0, None, ADD_PARTITION) == ErrorCode.CONCURRENT_TRANSACTIONS


def test_requests_before_the_state_topic_exists_answer_not_coordinator():
    """On a fresh broker (no __transaction_state yet) Kafka 4.3.0 answers EndTxn, AddOffsetsToTxn,
    AddPartitionsToTxn and DescribeTransactions NOT_COORDINATOR (getTransactionState finds no
    loaded partition), not INVALID_PRODUCER_ID_MAPPING / TRANSACTIONAL_ID_NOT_FOUND; an empty id
    is still INVALID_REQUEST first."""
    coordinator = make_coordinator(state_log=MemoryStateLog(partitions=0))
    assert coordinator.handle_end_transaction(TXID, 5, 0, True) == ErrorCode.NOT_COORDINATOR
    assert coordinator.end_transaction(TXID, 5, 0, False, client_transaction_version=2).error == ErrorCode.NOT_COORDINATOR
    assert coordinator.handle_add_partitions(TXID, 5, 0, [("t", 0)]) == ErrorCode.NOT_COORDINATOR
    assert coordinator.handle_verify_partitions(TXID, 5, 0, [("t", 0)]) == {("t", 0): ErrorCode.NOT_COORDINATOR}
    assert coordinator.describe_transaction(TXID)["error_code"] == ErrorCode.NOT_COORDINATOR
    assert coordinator.handle_end_transaction("", 5, 0, True) == ErrorCode.INVALID_REQUEST
    assert coordinator.describe_transaction("")["error_code"] == ErrorCode.INVALID_REQUEST
    assert coordinator.list_transactions()["transaction_states"] == []
