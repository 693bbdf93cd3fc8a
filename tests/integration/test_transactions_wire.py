"""The transaction APIs as Apache Kafka 3.x answers them, request by request (WireClient sends the
exact bytes): InitProducerId, AddPartitionsToTxn (v0-4), AddOffsetsToTxn, TxnOffsetCommit, EndTxn,
WriteTxnMarkers, DescribeTransactions, ListTransactions, DescribeProducers, and what Produce, Fetch
and ListOffsets do with transactions.

Sources (apache/kafka): core/.../coordinator/transaction/TransactionCoordinator.scala, KafkaApis.scala
(handleAddPartitionsToTxnRequest, handleEndTxnRequest, ...), ReplicaManager.scala (transaction
verification, KIP-890), UnifiedLog.scala (collectAbortedTransactions).
"""

from __future__ import annotations

import time

import pytest

from client import WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import decode_control_key

from wire_cases import batch, batches_of, create_topic, fetch, list_offset, produce, unique


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap) as c:
        # Clients look the group coordinator up before AddOffsetsToTxn/TxnOffsetCommit; the first
        # lookup creates __consumer_offsets (answered COORDINATOR_NOT_AVAILABLE, as in Kafka).
        for _ in range(100):
            if c.call("FindCoordinator", 3, {"key": "any", "key_type": 0}).error_code == 0:
                break
            time.sleep(0.05)
        yield c


def init(client, txid: str, timeout_ms: int = 60000, version: int = 4, producer_id: int = -1,
         producer_epoch: int = -1):
    return client.call("InitProducerId", version, {"transactional_id": txid, "transaction_timeout_ms": timeout_ms,
                                                   "producer_id": producer_id, "producer_epoch": producer_epoch})


def add_partitions(client, txid, pid, epoch, topics: dict[str, list[int]], version: int = 3) -> dict:
    answer = client.call("AddPartitionsToTxn", version, {
        "v3_and_below_transactional_id": txid, "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
    return {(t.name, p.partition_index): ErrorCode.from_code(p.partition_error_code)
            for t in answer.results_by_topic_v3_and_below for p in t.results_by_partition}


def add_partitions_after_end(client, txid, pid, epoch, topics: dict[str, list[int]]) -> dict:
    """AddPartitionsToTxn right after an EndTxn: while the ended transaction's markers are still
    being written (PrepareAbort/PrepareCommit; with worker processes they go to the partition's
    owner) the coordinator answers CONCURRENT_TRANSACTIONS, as Kafka's does, and a client retries."""
    deadline = time.monotonic() + 15
    while True:
        errors = add_partitions(client, txid, pid, epoch, topics)
        if set(errors.values()) != {ErrorCode.CONCURRENT_TRANSACTIONS} or time.monotonic() > deadline:
            return errors
        time.sleep(0.02)


def end_txn(client, txid, pid, epoch, committed: bool, version: int = 3) -> ErrorCode:
    answer = client.call("EndTxn", version, {"transactional_id": txid, "producer_id": pid, "producer_epoch": epoch,
                                             "committed": committed})
    return ErrorCode.from_code(answer.error_code)


def polled(call, again, seconds: float = 10.0):
    """call() until again(its answer) is false or `seconds` have passed; the last answer (for what
    the broker does after it answered, as a client retrying would see it)."""
    deadline = time.monotonic() + seconds
    while again(answer := call()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return answer


def txn_batch(values, pid, epoch, sequence=0):
    return batch(values, producer_id=pid, producer_epoch=epoch, base_sequence=sequence, is_transactional=True)


def begin(client, topic: str, partitions=(0,)) -> tuple[str, int, int]:
    txid = unique("wire-txn")
    answer = init(client, txid)
    assert answer.error_code == 0
    assert set(add_partitions(client, txid, answer.producer_id, answer.producer_epoch,
                              {topic: list(partitions)}).values()) == {ErrorCode.NONE}
    return txid, answer.producer_id, answer.producer_epoch


# -- InitProducerId ----------------------------------------------------------------------------------

def test_init_producer_id_checks(client):
    too_long = init(client, unique("tx"), timeout_ms=900001)
    assert (too_long.error_code, too_long.producer_id) == (ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1)
    assert init(client, "").error_code == ErrorCode.INVALID_REQUEST
    txid = unique("tx")
    first = init(client, txid)
    second = init(client, txid)
    assert first.error_code == second.error_code == 0
    assert (second.producer_id, second.producer_epoch) == (first.producer_id, first.producer_epoch + 1)
    # v3+: the first instance asking to bump its (fenced) epoch is told it is fenced.
    assert init(client, txid, producer_id=first.producer_id, producer_epoch=0).error_code == ErrorCode.PRODUCER_FENCED


def test_init_producer_id_v3_says_fenced_with_invalid_producer_epoch(client):
    """Clients older than InitProducerId v4 do not know PRODUCER_FENCED (KIP-588)."""
    txid = unique("tx")
    first = init(client, txid)
    init(client, txid)
    assert init(client, txid, version=3, producer_id=first.producer_id,
                producer_epoch=0).error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_init_producer_id_during_a_transaction_aborts_it(client):
    topic = unique("txn")
    create_topic(client, topic)
    txid, pid, epoch = begin(client, topic)
    assert produce(client, topic, txn_batch([b"doomed"], pid, epoch), transactional_id=txid).error_code == 0
    assert init(client, txid).error_code == ErrorCode.CONCURRENT_TRANSACTIONS
    # The abort's markers take a moment (more with several workers): a client retries
    # CONCURRENT_TRANSACTIONS until they are written.
    retried = polled(lambda: init(client, txid), lambda a: a.error_code == ErrorCode.CONCURRENT_TRANSACTIONS)
    assert (retried.error_code, retried.producer_id, retried.producer_epoch) == (0, pid, epoch + 2)
    # The abort marker went to the partition with the bumped epoch.
    markers = [h for h, _ in batches_of(fetch(client, topic).records) if h.is_control]
    assert [(m.producer_id, m.producer_epoch) for m in markers] == [(pid, epoch + 1)]
    # The old epoch can no longer write.
    late = produce(client, topic, txn_batch([b"late"], pid, epoch, 1), transactional_id=txid)
    assert late.error_code == ErrorCode.INVALID_PRODUCER_EPOCH


# -- AddPartitionsToTxn / verification of transactional writes ------------------------------------

def test_add_partitions_with_an_unknown_topic(client):
    topic = unique("txn")
    create_topic(client, topic)
    txid = unique("tx")
    answer = init(client, txid)
    errors = add_partitions(client, txid, answer.producer_id, answer.producer_epoch,
                            {topic: [0], unique("missing"): [0]})
    assert sorted(errors.values()) == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.OPERATION_NOT_ATTEMPTED]
    assert errors[(topic, 0)] == ErrorCode.OPERATION_NOT_ATTEMPTED


def test_add_partitions_errors_by_version(client):
    topic = unique("txn")
    create_topic(client, topic)
    txid = unique("tx")
    answer = init(client, txid)
    pid, epoch = answer.producer_id, answer.producer_epoch
    assert add_partitions(client, txid, pid + 1, epoch, {topic: [0]}) == {
        (topic, 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    assert add_partitions(client, txid, pid, epoch + 1, {topic: [0]}) == {(topic, 0): ErrorCode.PRODUCER_FENCED}
    assert add_partitions(client, txid, pid, epoch + 1, {topic: [0]}, version=1) == {
        (topic, 0): ErrorCode.INVALID_PRODUCER_EPOCH}


def test_transactional_write_to_a_partition_not_in_the_transaction(client):
    """Kafka 3.6+ verifies a transaction's first write to a partition (KIP-890 part 1):
    Produce v9 answers INVALID_TXN_STATE until AddPartitionsToTxn names the partition."""
    topic = unique("txn")
    create_topic(client, topic, partitions=2)
    txid, pid, epoch = begin(client, topic, partitions=(0,))
    refused = produce(client, topic, txn_batch([b"x"], pid, epoch), partition=1, transactional_id=txid)
    assert refused.error_code == ErrorCode.INVALID_TXN_STATE
    assert add_partitions(client, txid, pid, epoch, {topic: [1]}) == {(topic, 1): ErrorCode.NONE}
    accepted = produce(client, topic, txn_batch([b"x"], pid, epoch), partition=1, transactional_id=txid)
    assert accepted.error_code == 0
    assert end_txn(client, txid, pid, epoch, True) == ErrorCode.NONE


def test_add_partitions_v4_verify_only(client):
    topic = unique("txn")
    create_topic(client, topic, partitions=2)
    txid, pid, epoch = begin(client, topic, partitions=(0,))
    answer = client.call("AddPartitionsToTxn", 4, {"transactions": [
        {"transactional_id": txid, "producer_id": pid, "producer_epoch": epoch, "verify_only": True,
         "topics": [{"name": topic, "partitions": [0, 1]}]}]})
    assert answer.error_code == 0
    result = answer.results_by_transaction[0]
    assert result.transactional_id == txid
    errors = {p.partition_index: p.partition_error_code for t in result.topic_results for p in t.results_by_partition}
    # Kafka 4.3's coordinator answers TRANSACTION_ABORTABLE (its leaders turn it into
    # INVALID_TXN_STATE for producers older than Produce v11).
    assert errors == {0: 0, 1: ErrorCode.TRANSACTION_ABORTABLE}


# -- EndTxn, Fetch read_committed, ListOffsets -----------------------------------------------------

def test_abort_then_read_committed_fetch(client):
    topic = unique("txn")
    create_topic(client, topic)
    produce(client, topic, batch([b"before"]))                                               # offset 0
    txid, pid, epoch = begin(client, topic)
    assert produce(client, topic, txn_batch([b"t1", b"t2"], pid, epoch), transactional_id=txid).error_code == 0  # 1-2
    produce(client, topic, batch([b"plain"]))                                                # 3
    # Open transaction: read_committed stops at its first offset; read_uncommitted at the HW.
    committed_view = fetch(client, topic, isolation_level=1)
    assert (committed_view.last_stable_offset, committed_view.high_watermark) == (1, 4)
    assert [h.base_offset for h, _ in batches_of(committed_view.records)] == [0]
    assert committed_view.aborted_transactions == []
    assert list_offset(client, topic, -1, isolation_level=1).offset == 1
    assert list_offset(client, topic, -1, isolation_level=0).offset == 4

    assert end_txn(client, txid, pid, epoch, False) == ErrorCode.NONE                      # marker at 4
    after = fetch(client, topic, isolation_level=1)
    assert after.last_stable_offset == after.high_watermark == 5
    assert [(a.producer_id, a.first_offset) for a in after.aborted_transactions] == [(pid, 1)]
    control = [records for h, records in batches_of(after.records) if h.is_control]
    assert [decode_control_key(r[0].key)[1].name for r in control] == ["ABORT"]
    # read_uncommitted: no aborted transactions list at all (null), as Kafka answers.
    assert fetch(client, topic, isolation_level=0).aborted_transactions is None
    # Kafka's test is on the marker's offset: a fetch from 3 still reaches the marker at 4 ...
    assert [a.producer_id for a in fetch(client, topic, 3, isolation_level=1).aborted_transactions] == [pid]
    # ... while one starting past the marker is not told about the transaction.
    produce(client, topic, batch([b"after"]))                                                # 5
    past = fetch(client, topic, 5, isolation_level=1)
    assert past.aborted_transactions == [] and len(batches_of(past.records)) == 1
    assert list_offset(client, topic, -1, isolation_level=1).offset == 6

    assert end_txn(client, txid, pid, epoch, False) == ErrorCode.NONE  # a retried abort
    assert end_txn(client, txid, pid, epoch, True) == ErrorCode.INVALID_TXN_STATE
    assert end_txn(client, txid, pid, epoch + 1, False) == ErrorCode.PRODUCER_FENCED
    assert end_txn(client, txid, pid, epoch + 1, False, version=1) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_end_txn_without_a_transaction(client):
    txid = unique("tx")
    answer = init(client, txid)
    assert end_txn(client, txid, answer.producer_id, answer.producer_epoch, True) == ErrorCode.INVALID_TXN_STATE
    assert end_txn(client, unique("nope"), answer.producer_id, 0, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING


# -- offsets in transactions -------------------------------------------------------------------------

def txn_offset_commit(client, txid, group, pid, epoch, topic, offset, version=3):
    answer = client.call("TxnOffsetCommit", version, {
        "transactional_id": txid, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                   "committed_leader_epoch": -1, "committed_metadata": "m"}]}]})
    return ErrorCode.from_code(answer.topics[0].partitions[0].error_code)


def fetch_offset(client, group, topic, require_stable: bool):
    answer = client.call("OffsetFetch", 7, {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}],
                                            "require_stable": require_stable})
    part = answer.topics[0].partitions[0]
    return ErrorCode.from_code(part.error_code), part.committed_offset


def test_transactional_offsets_become_visible_on_commit(client):
    topic = unique("txn")
    create_topic(client, topic)
    group = unique("group")
    txid, pid, epoch = begin(client, topic)
    # Not added with AddOffsetsToTxn: the group's __consumer_offsets partition is not in the transaction.
    assert txn_offset_commit(client, txid, group, pid, epoch, topic, 7) == ErrorCode.INVALID_TXN_STATE
    added = client.call("AddOffsetsToTxn", 3, {"transactional_id": txid, "producer_id": pid, "producer_epoch": epoch,
                                               "group_id": group})
    assert added.error_code == 0
    assert txn_offset_commit(client, txid, group, pid, epoch, topic, 7) == ErrorCode.NONE
    assert fetch_offset(client, group, topic, require_stable=True) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
    assert fetch_offset(client, group, topic, require_stable=False) == (ErrorCode.NONE, -1)
    assert end_txn(client, txid, pid, epoch, True) == ErrorCode.NONE
    assert fetch_offset(client, group, topic, require_stable=True) == (ErrorCode.NONE, 7)


def test_aborted_transactional_offsets_vanish(client):
    topic = unique("txn")
    create_topic(client, topic)
    group = unique("group")
    txid, pid, epoch = begin(client, topic)
    client.call("AddOffsetsToTxn", 3, {"transactional_id": txid, "producer_id": pid, "producer_epoch": epoch,
                                       "group_id": group})
    assert txn_offset_commit(client, txid, group, pid, epoch, topic, 9) == ErrorCode.NONE
    assert end_txn(client, txid, pid, epoch, False) == ErrorCode.NONE
    assert fetch_offset(client, group, topic, require_stable=True) == (ErrorCode.NONE, -1)


# -- admin: DescribeTransactions, ListTransactions, DescribeProducers ----------------------------------

def test_describe_list_transactions_and_producers(client):
    topic = unique("txn")
    create_topic(client, topic, partitions=2)
    txid, pid, epoch = begin(client, topic, partitions=(1, 0))
    produce(client, topic, txn_batch([b"a", b"b"], pid, epoch), transactional_id=txid)

    described = client.call("DescribeTransactions", 0, {"transactional_ids": [txid, unique("unknown")]})
    ongoing, unknown = described.transaction_states
    assert (ongoing.error_code, ongoing.transaction_state, ongoing.producer_id, ongoing.producer_epoch) == \
        (0, "Ongoing", pid, epoch)
    assert ongoing.transaction_timeout_ms == 60000 and ongoing.transaction_start_time_ms > 0
    assert [(t.topic, sorted(t.partitions)) for t in ongoing.topics] == [(topic, [0, 1])]
    assert unknown.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND

    listed = client.call("ListTransactions", 0, {"state_filters": ["Ongoing", "NoSuchState"],
                                                 "producer_id_filters": [pid]})
    assert listed.error_code == 0 and listed.unknown_state_filters == ["NoSuchState"]
    assert [(t.transactional_id, t.producer_id, t.transaction_state) for t in listed.transaction_states] == \
        [(txid, pid, "Ongoing")]

    producers = client.call("DescribeProducers", 0, {"topics": [{"name": topic, "partition_indexes": [0, 1]}]})
    by_partition = {p.partition_index: p for p in producers.topics[0].partitions}
    mine = [s for s in by_partition[0].active_producers if s.producer_id == pid]
    assert len(mine) == 1
    assert (mine[0].producer_epoch, mine[0].last_sequence, mine[0].current_txn_start_offset) == (epoch, 1, 0)
    assert [s for s in by_partition[1].active_producers if s.producer_id == pid] == []

    assert end_txn(client, txid, pid, epoch, True) == ErrorCode.NONE
    # EndTxn is answered once PrepareCommit is written; the markers, then CompleteCommit, follow (on
    # Kafka too): PrepareCommit may show for a moment (with several workers, while the markers go to
    # the partitions' workers).
    def states():
        described = client.call("DescribeTransactions", 0, {"transactional_ids": [txid]}).transaction_states[0]
        after = client.call("DescribeProducers", 0, {"topics": [{"name": topic, "partition_indexes": [0]}]})
        return described, [s for s in after.topics[0].partitions[0].active_producers if s.producer_id == pid]

    described, mine = polled(states, lambda a: a[0].transaction_state == "PrepareCommit"
                             or a[1][0].current_txn_start_offset != -1)
    assert described.transaction_state == "CompleteCommit" and described.topics == []
    assert mine[0].current_txn_start_offset == -1


# -- WriteTxnMarkers ---------------------------------------------------------------------------------


def test_list_transactions_by_duration_and_pattern(client):
    """v1 (KIP-994) keeps transactions running longer than duration_filter ms; an id that never
    started one (Empty, start -1) always qualifies, as Kafka 4.3 answers. v2 (KIP-1152) keeps the
    ids a regular expression matches whole; one that does not compile is INVALID_REGULAR_EXPRESSION."""
    topic = unique("txn")
    create_topic(client, topic)
    txid, pid, epoch = begin(client, topic)
    idle = f"{txid}-idle"
    assert init(client, idle).error_code == 0
    time.sleep(0.3)

    def listed(version, **filters):
        body = {"state_filters": [], "producer_id_filters": [], "duration_filter": -1,
                "transactional_id_pattern": None, **filters}
        answer = client.call("ListTransactions", version, body)
        return answer.error_code, sorted((t.transactional_id, t.transaction_state) for t in answer.transaction_states
                                         if t.transactional_id.startswith(txid))

    both = (0, [(txid, "Ongoing"), (idle, "Empty")])
    assert listed(0) == listed(1, duration_filter=100) == both
    assert listed(1, duration_filter=600_000) == (0, [(idle, "Empty")])
    assert listed(2, transactional_id_pattern=f"{txid}-i.*") == (0, [(idle, "Empty")])
    assert listed(2, transactional_id_pattern="idle") == (0, [])
    assert listed(2, transactional_id_pattern="") == both
    assert listed(2, transactional_id_pattern="txn[") == (ErrorCode.INVALID_REGULAR_EXPRESSION, [])
    assert end_txn(client, txid, pid, epoch, False) == ErrorCode.NONE

def test_write_txn_markers_closes_a_transaction_on_the_partition(client):
    topic = unique("txn")
    create_topic(client, topic)
    txid, pid, epoch = begin(client, topic)
    produce(client, topic, txn_batch([b"x"], pid, epoch), transactional_id=txid)
    assert list_offset(client, topic, -1, isolation_level=1).offset == 0
    answer = client.call("WriteTxnMarkers", 1, {"markers": [
        {"producer_id": pid, "producer_epoch": epoch, "transaction_result": True, "coordinator_epoch": 0,
         "topics": [{"name": topic, "partition_indexes": [0]},
                    {"name": unique("missing"), "partition_indexes": [0]}]}]})
    errors = {t.name: t.partitions[0].error_code for t in answer.markers[0].topics}
    assert errors[topic] == 0
    assert sorted(errors.values()) == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert list_offset(client, topic, -1, isolation_level=1).offset == 2


def test_add_offsets_to_txn_on_a_fresh_broker_needs_no_group_lookup_first(broker):
    """Kafka's AddOffsetsToTxn computes the group's __consumer_offsets partition from the group id
    (GroupCoordinator.partitionFor): it does not need the group coordinator loaded. On a fresh
    broker (no internal topics yet) it succeeds, and the offsets commit with the transaction."""
    with WireClient(broker.bootstrap) as fresh:
        topic, group = unique("txn-fresh"), unique("group-fresh")
        create_topic(fresh, topic)
        txid = unique("wire-txn-fresh")
        for _ in range(100):  # the first lookup creates __transaction_state
            answer = init(fresh, txid)
            if answer.error_code == 0:
                break
            time.sleep(0.05)
        assert answer.error_code == 0
        pid, epoch = answer.producer_id, answer.producer_epoch
        added = fresh.call("AddOffsetsToTxn", 3, {"transactional_id": txid, "producer_id": pid,
                                                  "producer_epoch": epoch, "group_id": group})
        assert added.error_code == 0
        for _ in range(100):  # the client's own lookup before TxnOffsetCommit
            if fresh.call("FindCoordinator", 3, {"key": group, "key_type": 0}).error_code == 0:
                break
            time.sleep(0.05)
        assert txn_offset_commit(fresh, txid, group, pid, epoch, topic, 5) == ErrorCode.NONE
        assert end_txn(fresh, txid, pid, epoch, True) == ErrorCode.NONE
        assert fetch_offset(fresh, group, topic, require_stable=True) == (ErrorCode.NONE, 5)


def test_a_new_transaction_reusing_an_aborted_batchs_sequences_is_refused(client):
    """The fault harness's power-loss-all-fsync x txn anomaly, request by request: a batch of an
    aborted transaction is in the log (written before a power loss, never acknowledged), and the
    producer's next transaction sends other records with the same producer id, epoch and
    sequences (librdkafka rewinds them when told the batch was not written). Answered as a
    duplicate of the aborted batch, they were never written while the transaction committed.
    Apache Kafka answers this batch as a duplicate too (its transaction.version 2 avoids the case by
    bumping the epoch at every transaction end); kafka-wire refuses it (docs/faults.md)."""
    topic = unique("txn-reuse")
    create_topic(client, topic)
    txid, pid, epoch = begin(client, topic)
    first = produce(client, topic, txn_batch([b"a1", b"a2", b"a3"], pid, epoch), transactional_id=txid)
    assert first.error_code == 0 and first.base_offset == 0
    assert end_txn(client, txid, pid, epoch, False) == ErrorCode.NONE                      # ABORT at 3
    assert set(add_partitions_after_end(client, txid, pid, epoch, {topic: [0]}).values()) == {ErrorCode.NONE}
    reused = produce(client, topic, txn_batch([b"b1", b"b2", b"b3"], pid, epoch), transactional_id=txid)
    assert reused.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, (ErrorCode(reused.error_code),
                                                                          reused.base_offset)
    assert end_txn(client, txid, pid, epoch, False) == ErrorCode.NONE
    values = [r.value for h, rs in batches_of(fetch(client, topic, isolation_level=0).records)
              if not h.is_control for r in rs]
    assert values == [b"a1", b"a2", b"a3"]
