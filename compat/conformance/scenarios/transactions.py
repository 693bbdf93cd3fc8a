"""Transactions (TV1 flows): InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn,
transactional Produce and read_committed Fetch, DescribeTransactions, ListTransactions, DescribeProducers,
WriteTxnMarkers from a client.

Kafka 4.3 finalizes transaction.version=2, but a client below EndTxn v5 / Produce v12 gets TV1 semantics
(the coordinator picks them by the request's version), which is what kafka-wire serves: these scenarios
stay below those versions unless they say otherwise. EndTxn answers once the coordinator has logged
PrepareCommit/PrepareAbort; the markers are written after, so a case that reads the partitions waits for
CompleteCommit/CompleteAbort (DescribeTransactions) first.
"""

from __future__ import annotations

import time

from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch

from ..scenario import ALL, T0, CaseFailed, Session, plain, scenario

TIMEOUT_MS = 60000
# Answers a client retries (Kafka gives them while a coordinator partition loads, or while a transaction
# completes): set-up steps and InitProducerId retry them unrecorded and record the answer that follows.
RETRIED = {ErrorCode.CONCURRENT_TRANSACTIONS.value, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS.value,
           ErrorCode.COORDINATOR_NOT_AVAILABLE.value, ErrorCode.NOT_COORDINATOR.value}
LOADING = RETRIED - {ErrorCode.CONCURRENT_TRANSACTIONS.value}


# -- helpers -------------------------------------------------------------------------------------------


def _init(s: Session, tid: str | None, v: int = 4, *, timeout_ms: int = TIMEOUT_MS, producer_id: int = -1,
          producer_epoch: int = -1, label: str | None = None, record: bool = True, retry: bool = True):
    """InitProducerId; with `retry`, retried (unrecorded) while the answer is one a client retries (RETRIED).
    Returns (producer_id, epoch, answer)."""
    body = {"transactional_id": tid, "transaction_timeout_ms": timeout_ms, "producer_id": producer_id,
            "producer_epoch": producer_epoch}
    answer = s.call("InitProducerId", v, body, record=False) if retry else None
    if retry:
        deadline = time.monotonic() + 15
        while answer is not None and answer.error_code in RETRIED and time.monotonic() < deadline:
            time.sleep(0.1)
            answer = s.call("InitProducerId", v, body, record=False)
        if record:
            s.record(label or f"InitProducerId v{v}", answer)
    else:
        answer = s.call("InitProducerId", v, body, label=label, record=record)
    return answer.producer_id, answer.producer_epoch, answer


def _ready(s: Session, tid: str) -> None:
    """Waits until the coordinator of `tid` has loaded its partition (DescribeTransactions answers
    something else than a coordinator error), so the recorded requests meet a ready coordinator."""
    s.find_coordinator(tid, key_type=1)

    def loaded():
        answer = _describe(s, [tid], record=False)
        return answer is not None and answer.transaction_states[0].error_code not in LOADING

    s.wait_until(loaded, timeout=30, what=f"the coordinator of {tid}")


def _ready_group(s: Session, group: str) -> None:
    s.find_coordinator(group)

    def loaded():
        answer = s.call("OffsetFetch", 7, {"group_id": group, "topics": None, "require_stable": False}, record=False)
        return answer is not None and answer.error_code not in LOADING

    s.wait_until(loaded, timeout=30, what=f"the coordinator of {group}")


def _setup_init(s: Session, tid: str | None, v: int = 4, timeout_ms: int = TIMEOUT_MS):
    if tid is not None:
        _ready(s, tid)
    pid, epoch, answer = _init(s, tid, v, timeout_ms=timeout_ms, record=False)
    if answer.error_code:
        raise CaseFailed(f"InitProducerId: {ErrorCode.from_code(answer.error_code).name}")
    return pid, epoch


def _add_partitions(s: Session, v: int, tid: str, pid: int, epoch: int, topics: dict[str, list[int]], *,
                    label: str | None = None, record: bool = True, verify_only: bool = False):
    topic_list = [{"name": name, "partitions": parts} for name, parts in topics.items()]
    if v >= 4:
        body = {"transactions": [{"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                  "verify_only": verify_only, "topics": topic_list}]}
    else:
        body = {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": topic_list}
    if record:
        return s.call("AddPartitionsToTxn", v, body, label=label)
    return s.setup("AddPartitionsToTxn", v, body)


def _txn_produce(s: Session, topic: str, partition: int, tid: str | None, pid: int, epoch: int, sequence: int,
                 values: list[str], *, v: int = 9, label: str | None = None, record: bool = True,
                 transactional: bool = True):
    batch = build_batch([Record(i, 0, None, value.encode()) for i, value in enumerate(values)],
                        base_timestamp=T0, producer_id=pid, producer_epoch=epoch,
                        base_sequence=sequence, is_transactional=transactional)
    body = {"transactional_id": tid, "acks": -1, "timeout_ms": 30000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
    if record:
        return s.call("Produce", v, body, label=label)
    return s.setup("Produce", v, body)


def _end(s: Session, v: int, tid: str, pid: int, epoch: int, commit: bool, *, label: str | None = None,
         record: bool = True):
    body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": commit}
    if record:
        return s.call("EndTxn", v, body, label=label)
    return s.setup("EndTxn", v, body)


def _after_end(answer, pid: int, epoch: int) -> tuple[int, int]:
    """The producer id and epoch to go on with after EndTxn: v5+ (transaction version 2) answers the
    bumped epoch the next transaction must use; before, the epoch stays."""
    if answer is not None and answer.error_code == 0 and getattr(answer, "producer_epoch", -1) >= 0:
        return answer.producer_id, answer.producer_epoch
    return pid, epoch


def _describe(s: Session, tids: list[str], *, label: str | None = None, record: bool = True):
    """DescribeTransactions; each topic's partitions are recorded sorted (Kafka sends them from a hash set)."""
    answer = s.call("DescribeTransactions", 0, {"transactional_ids": tids}, record=False)
    if record:
        for state in answer.transaction_states:
            for topic in state.topics:
                topic.partitions = sorted(topic.partitions)
        s._record(label or "DescribeTransactions v0", "DescribeTransactions", 0, plain(answer))
    return answer


def _wait_state(s: Session, tid: str, states: tuple[str, ...]) -> None:
    def reached():
        answer = _describe(s, [tid], record=False)
        return answer is not None and answer.transaction_states[0].transaction_state in states

    s.wait_until(reached, timeout=15, what=f"{tid} in {states}")


def _fetch(s: Session, topic: str, partition: int, offset: int, *, isolation: int, v: int = 11,
           label: str | None = None):
    """One Fetch, recorded with its records decoded and the timestamps of control batches (transaction
    markers) replaced: a marker carries the broker's clock when it was written, not a client's."""
    from ..normalize import decode_records_field

    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": isolation,
            "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{"partition": partition, "fetch_offset": offset,
                                                        "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}
    answer = s.call("Fetch", v, body, record=False)
    data = plain(answer)
    next_offset, end = None, None
    for response in data["responses"]:
        for part in response["partitions"]:
            part["records"] = decode_records_field(part["records"])
            end = part["last_stable_offset"] if isolation else part["high_watermark"]
            for batch in (part["records"] or {}).get("batches", []):
                if batch["attributes"] & 0x20:
                    batch["base_timestamp"] = batch["max_timestamp"] = "<broker clock>"
                next_offset = batch["base_offset"] + batch["last_offset_delta"] + 1
    s._record(label or f"Fetch v{v}", "Fetch", v, data)
    return next_offset, end


def _fetch_all(s: Session, topic: str, partition: int, offset: int, *, isolation: int, v: int = 11,
               label: str = "fetch"):
    """Fetches from `offset` to the end (HW, or LSO when read_committed), as a consumer does: a Fetch
    returns the batches of one log segment, and a segment may roll between batches (log.roll.ms
    counts from a segment's first timestamp), so the partition may take several Fetches."""
    for i in range(8):
        next_offset, end = _fetch(s, topic, partition, offset, isolation=isolation, v=v, label=f"{label} #{i + 1}")
        if next_offset is None or end is None or next_offset >= end:
            return
        offset = next_offset


def _list_offsets(s: Session, topic: str, partition: int, isolation: int, *, label: str):
    return s.call("ListOffsets", 5, {"replica_id": -1, "isolation_level": isolation, "topics": [
        {"name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                        "timestamp": -1}]}]}, label=label)


def _open_transaction(s: Session, topic: str, tid: str, values=("a", "b")) -> tuple[int, int]:
    """A transaction with one batch on topic-0 (AddPartitionsToTxn v3, Produce v9): (pid, epoch)."""
    pid, epoch = _setup_init(s, tid)
    _add_partitions(s, 3, tid, pid, epoch, {topic: [0]}, record=False)
    _txn_produce(s, topic, 0, tid, pid, epoch, 0, list(values), record=False)
    return pid, epoch


# -- InitProducerId ------------------------------------------------------------------------------------------


@scenario("InitProducerId", versions=ALL, covers=["PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"])
def txn_init_producer_id(s: Session, v: int):
    """A transactional id initialised, again (epoch bump), with the previous session's id/epoch (v3+),
    with an old epoch and with an id that is not its own (v3+: Kafka answers the epoch error, not
    INVALID_PRODUCER_ID_MAPPING)."""
    tid = s.transactional_id()
    _ready(s, tid)
    pid, epoch, _ = _init(s, tid, v, label="first")
    pid2, epoch2, _ = _init(s, tid, v, label="again")
    if v >= 3:
        pid3, epoch3, _ = _init(s, tid, v, producer_id=pid2, producer_epoch=epoch2, label="with previous session")
        _init(s, tid, v, producer_id=pid3, producer_epoch=epoch, label="old epoch", retry=False)
        _init(s, tid, v, producer_id=pid3 + 1, producer_epoch=epoch3, label="other producer id", retry=False)


@scenario("InitProducerId", versions=ALL)
def txn_init_idempotent(s: Session, v: int):
    """No transactional id: an idempotent producer's id, epoch 0."""
    _init(s, None, v, label="idempotent")


@scenario("InitProducerId", versions=ALL, covers=["INVALID_TRANSACTION_TIMEOUT"])
def txn_init_invalid_timeout(s: Session, v: int):
    """Transaction timeouts above transaction.max.timeout.ms (900000), zero and negative."""
    for name, timeout in (("above max", 900001), ("zero", 0), ("negative", -5), ("max", 900000)):
        tid = s.transactional_id(name.replace(" ", "-"))
        _ready(s, tid)
        _init(s, tid, v, timeout_ms=timeout, label=name, retry=False)


@scenario("InitProducerId", versions=ALL, covers=["CONCURRENT_TRANSACTIONS"])
def txn_init_aborts_ongoing(s: Session, v: int):
    """InitProducerId while a transaction is ongoing: Kafka aborts it (fencing the epoch) and answers
    CONCURRENT_TRANSACTIONS until the abort completes; then the data reads as aborted."""
    topic, tid = s.topic(), s.transactional_id()
    s.create_topic(topic)
    pid, epoch = _open_transaction(s, topic, tid)
    s.call("InitProducerId", v, {"transactional_id": tid, "transaction_timeout_ms": TIMEOUT_MS,
                                 "producer_id": -1, "producer_epoch": -1}, label="while ongoing")
    _init(s, tid, v, label="after the abort")
    _wait_state(s, tid, ("Empty", "CompleteAbort"))
    _fetch_all(s, topic, 0, 0, isolation=1, label="read_committed")
    _txn_produce(s, topic, 0, tid, pid, epoch, 2, ["zombie"], label="zombie produce")


# -- AddPartitionsToTxn -------------------------------------------------------------------------------------


@scenario("AddPartitionsToTxn", versions=ALL, covers=["UNKNOWN_TOPIC_OR_PARTITION", "OPERATION_NOT_ATTEMPTED"])
def txn_add_partitions(s: Session, v: int):
    """Partitions added (twice: idempotent), with an unknown topic and partition (the others not attempted)."""
    topic, tid = s.topic(), s.transactional_id()
    s.create_topic(topic, partitions=3)
    pid, epoch = _setup_init(s, tid)
    _add_partitions(s, v, tid, pid, epoch, {topic: [0, 1, 7], s.topic("missing"): [0]}, label="unknown")
    _add_partitions(s, v, tid, pid, epoch, {topic: [0, 1]}, label="add")
    _add_partitions(s, v, tid, pid, epoch, {topic: [1, 2]}, label="again")
    _describe(s, [tid], label="described")


@scenario("AddPartitionsToTxn", versions=ALL, covers=["PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH",
                                                      "INVALID_PRODUCER_ID_MAPPING"])
def txn_add_partitions_fenced(s: Session, v: int):
    """An old epoch after re-initialisation (zombie), a producer id that is not the id's, an unknown id."""
    topic, tid = s.topic(), s.transactional_id()
    s.create_topic(topic)
    pid, epoch = _setup_init(s, tid)
    _init(s, tid, 3, record=False)
    _add_partitions(s, v, tid, pid, epoch, {topic: [0]}, label="old epoch")
    _add_partitions(s, v, tid, pid + 1, epoch + 1, {topic: [0]}, label="other producer id")
    other = s.transactional_id("unknown")
    _ready(s, other)
    _add_partitions(s, v, other, pid, epoch, {topic: [0]}, label="unknown transactional id")


@scenario("AddPartitionsToTxn", versions=ALL)
def txn_add_partitions_after_end(s: Session, v: int):
    """After EndTxn completed (CompleteCommit) adding partitions starts the next transaction (no error).
    Kafka answers CONCURRENT_TRANSACTIONS only while the markers of the previous one are being written
    (PrepareCommit), a window no scenario can hit deterministically; InitProducerId during a transaction
    (txn_init_aborts_ongoing) provokes it instead."""
    topic, tid = s.topic(), s.transactional_id()
    s.create_topic(topic)
    pid, epoch = _open_transaction(s, topic, tid)
    _end(s, 3, tid, pid, epoch, True, record=False)
    _wait_state(s, tid, ("CompleteCommit",))
    _add_partitions(s, v, tid, pid, epoch, {topic: [0]}, label="after commit")
    _describe(s, [tid], label="described")


@scenario("AddPartitionsToTxn", versions=(4,), covers=["TRANSACTION_ABORTABLE", "INVALID_PRODUCER_ID_MAPPING"])
def txn_add_partitions_batched(s: Session, v: int):
    """v4's batched form: two transactions in one request, one verify_only for partitions in the
    transaction and for ones not in it, and a verify_only for an unknown id (Kafka: INVALID_PRODUCER_ID_MAPPING;
    TRANSACTIONAL_ID_NOT_FOUND is DescribeTransactions' answer only)."""
    topic, tid, tid2 = s.topic(), s.transactional_id("a"), s.transactional_id("b")
    s.create_topic(topic, partitions=2)
    pid, epoch = _setup_init(s, tid)
    pid2, epoch2 = _setup_init(s, tid2)
    unknown = s.transactional_id("unknown")
    _ready(s, unknown)
    s.call("AddPartitionsToTxn", 4, {"transactions": [
        {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "verify_only": False,
         "topics": [{"name": topic, "partitions": [0]}]},
        {"transactional_id": tid2, "producer_id": pid2, "producer_epoch": epoch2, "verify_only": False,
         "topics": [{"name": topic, "partitions": [1]}]}]}, label="two transactions")
    s.call("AddPartitionsToTxn", 4, {"transactions": [
        {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "verify_only": True,
         "topics": [{"name": topic, "partitions": [0, 1]}]}]}, label="verify")
    s.call("AddPartitionsToTxn", 4, {"transactions": [
        {"transactional_id": unknown, "producer_id": pid, "producer_epoch": epoch, "verify_only": True,
         "topics": [{"name": topic, "partitions": [0]}]}]}, label="verify unknown id")
    _describe(s, [tid, tid2], label="described")


# -- Produce and Fetch ---------------------------------------------------------------------------------------


@scenario("Produce", versions=(3, 9, 11, 12), covers=["INVALID_TXN_STATE", "INVALID_PRODUCER_EPOCH"])
def txn_produce(s: Session, v: int):
    """A transactional batch to a partition added to the transaction, to one not added (v12: Kafka 4.3 with
    transaction.version 2 adds it implicitly), and with a wrong epoch."""
    topic, tid = s.topic(), s.transactional_id()
    s.create_topic(topic, partitions=2)
    pid, epoch = _setup_init(s, tid)
    _add_partitions(s, 3, tid, pid, epoch, {topic: [0]}, record=False)
    _txn_produce(s, topic, 0, tid, pid, epoch, 0, ["a"], v=v, label="added partition")
    _txn_produce(s, topic, 1, tid, pid, epoch, 0, ["b"], v=v, label="partition not added")
    _txn_produce(s, topic, 0, tid, pid, epoch, 1, ["c"], v=v, label="next sequence")
    _txn_produce(s, topic, 0, tid, pid, epoch + 1, 0, ["d"], v=v, label="higher epoch")
    _txn_produce(s, topic, 0, tid, pid, epoch, 2, ["e"], v=v, label="next sequence after the higher epoch")
    _describe(s, [tid], label="described")


@scenario("EndTxn", versions=ALL, covers=["INVALID_TXN_STATE", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"])
def txn_commit(s: Session, v: int):
    """A committed transaction: read_committed Fetch and ListOffsets before (LSO held) and after; commit
    twice, abort after the commit, a wrong epoch, no transaction at all."""
    topic, tid = s.topic(), s.transactional_id()
    s.create_topic(topic)
    s.produce(topic, 0, [(None, b"plain")])
    pid, epoch = _open_transaction(s, topic, tid)
    _fetch(s, topic, 0, 0, isolation=1, label="read_committed before")
    _fetch(s, topic, 0, 0, isolation=0, label="read_uncommitted before")
    _list_offsets(s, topic, 0, 1, label="latest read_committed before")
    _end(s, v, tid, pid, epoch + 1, True, label="wrong epoch")
    _end(s, v, tid, pid, epoch, True, label="commit")
    _wait_state(s, tid, ("CompleteCommit",))
    _end(s, v, tid, pid, epoch, True, label="commit again")
    _end(s, v, tid, pid, epoch, False, label="abort after commit")
    _fetch_all(s, topic, 0, 0, isolation=1, label="read_committed after")
    _list_offsets(s, topic, 0, 1, label="latest read_committed after")
    _describe(s, [tid], label="described")
    other = s.transactional_id("idle")
    pid2, epoch2 = _setup_init(s, other)
    _end(s, v, other, pid2, epoch2, True, label="commit without transaction")
    _end(s, v, other, pid2, epoch2, False, label="abort without transaction")
    unknown = s.transactional_id("unknown")
    _ready(s, unknown)
    _end(s, v, unknown, pid2, epoch2, True, label="unknown transactional id")


@scenario("EndTxn", versions=ALL)
def txn_abort(s: Session, v: int):
    """An aborted transaction between plain records: read_committed Fetch lists it in aborted_transactions,
    read_uncommitted shows its records and the abort marker; a second transaction committed after."""
    topic, tid = s.topic(), s.transactional_id()
    s.create_topic(topic)
    s.produce(topic, 0, [(None, b"before")])
    pid, epoch = _open_transaction(s, topic, tid, values=("x", "y"))
    next_pid, next_epoch = _after_end(_end(s, v, tid, pid, epoch, False, label="abort"), pid, epoch)
    _wait_state(s, tid, ("CompleteAbort",))
    _end(s, v, tid, pid, epoch, False, label="abort again")
    s.produce(topic, 0, [(None, b"after")])
    if v >= 5:  # transaction version 2: a new epoch (sequence from 0), partitions added by Produce v12
        _txn_produce(s, topic, 0, tid, next_pid, next_epoch, 0, ["z"], v=12, record=False)
    else:
        _add_partitions(s, 3, tid, pid, epoch, {topic: [0]}, record=False)
        _txn_produce(s, topic, 0, tid, pid, epoch, 2, ["z"], record=False)
    _end(s, v, tid, next_pid, next_epoch, True, label="commit")
    _wait_state(s, tid, ("CompleteCommit",))
    for fv in (4, 11):
        _fetch_all(s, topic, 0, 0, isolation=1, v=fv, label=f"read_committed v{fv}")
        _fetch_all(s, topic, 0, 0, isolation=0, v=fv, label=f"read_uncommitted v{fv}")
    _fetch(s, topic, 0, 2, isolation=1, label="read_committed from inside the aborted transaction")


# -- offsets in a transaction -------------------------------------------------------------------------------------


def _offset_fetch(s: Session, group: str, topic: str, stable: bool, label: str):
    return s.call("OffsetFetch", 7, {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}],
                                     "require_stable": stable}, label=label)


@scenario("AddOffsetsToTxn", versions=ALL, covers=["INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED",
                                                   "INVALID_PRODUCER_ID_MAPPING"])
def txn_add_offsets(s: Session, v: int):
    """A group added to a transaction (twice), with an old epoch, with an unknown transactional id."""
    tid, group = s.transactional_id(), s.group()
    pid, epoch = _setup_init(s, tid)
    s.call("AddOffsetsToTxn", v, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                  "group_id": group}, label="add")
    s.call("AddOffsetsToTxn", v, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                  "group_id": group}, label="again")
    _describe(s, [tid], label="described")
    s.call("AddOffsetsToTxn", v, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch + 1,
                                  "group_id": group}, label="higher epoch")
    unknown = s.transactional_id("unknown")
    _ready(s, unknown)
    s.call("AddOffsetsToTxn", v, {"transactional_id": unknown, "producer_id": pid, "producer_epoch": epoch,
                                  "group_id": group}, label="unknown transactional id")


@scenario("TxnOffsetCommit", versions=ALL, covers=["UNSTABLE_OFFSET_COMMIT"])
def txn_offset_commit(s: Session, v: int):
    """Offsets committed in a transaction (simple: generation -1): pending offsets read with and without
    require_stable, then after the commit; an abort drops them."""
    topic, tid, group = s.topic(), s.transactional_id(), s.group()
    s.create_topic(topic)
    pid, epoch = _setup_init(s, tid)
    s.setup("AddOffsetsToTxn", 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                   "group_id": group})
    _ready_group(s, group)
    commit = {"transactional_id": tid, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
              "generation_id": -1, "member_id": "", "group_instance_id": None,
              "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 5,
                                                         "committed_leader_epoch": -1,
                                                         "committed_metadata": "m"}]}]}
    s.call("TxnOffsetCommit", v, commit, label="commit offsets")
    _offset_fetch(s, group, topic, True, "require_stable while pending")
    _offset_fetch(s, group, topic, False, "not require_stable while pending")
    _end(s, 3, tid, pid, epoch, True, label="commit")
    _wait_state(s, tid, ("CompleteCommit",))
    _offset_fetch(s, group, topic, True, "require_stable after commit")
    # A second transaction, aborted: the offsets stay.
    s.setup("AddOffsetsToTxn", 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                   "group_id": group})
    commit["topics"][0]["partitions"][0]["committed_offset"] = 9
    s.call("TxnOffsetCommit", v, commit, label="commit offsets again")
    _end(s, 3, tid, pid, epoch, False, label="abort")
    _wait_state(s, tid, ("CompleteAbort",))
    _offset_fetch(s, group, topic, True, "require_stable after abort")


@scenario("TxnOffsetCommit", versions=(3,), covers=["UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"])
def txn_offset_commit_member_checks(s: Session, v: int):
    """v3's member checks against a real group (one member, generation 1): unknown member, wrong
    generation, the right ones; an old producer epoch."""
    topic, tid, group = s.topic(), s.transactional_id(), s.group()
    s.create_topic(topic)
    _ready_group(s, group)
    protocols = [{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"}]
    join = {"group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
            "group_instance_id": None, "protocol_type": "consumer", "protocols": protocols, "reason": None}
    first = s.call("JoinGroup", 7, join, record=False)
    join["member_id"] = first.member_id
    joined = s.setup("JoinGroup", 7, join)
    s.setup("SyncGroup", 5, {"group_id": group, "generation_id": joined.generation_id, "member_id": joined.member_id,
                             "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
                             "assignments": [{"member_id": joined.member_id, "assignment": b""}]})
    pid, epoch = _setup_init(s, tid)
    s.setup("AddOffsetsToTxn", 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                   "group_id": group})

    def commit(label, member, generation, producer_epoch=epoch, offset=3):
        s.call("TxnOffsetCommit", v, {
            "transactional_id": tid, "group_id": group, "producer_id": pid, "producer_epoch": producer_epoch,
            "generation_id": generation, "member_id": member, "group_instance_id": None,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                       "committed_leader_epoch": -1, "committed_metadata": ""}]}]},
            label=label)

    commit("unknown member", "someone-else", joined.generation_id)
    commit("wrong generation", joined.member_id, joined.generation_id + 1)
    commit("simple (-1) on a live group", "", -1)
    commit("member", joined.member_id, joined.generation_id)
    commit("higher producer epoch", joined.member_id, joined.generation_id, producer_epoch=epoch + 1)
    s.setup("LeaveGroup", 3, {"group_id": group, "members": [{"member_id": joined.member_id,
                                                                "group_instance_id": None}]})


# -- admin: DescribeTransactions, ListTransactions, DescribeProducers ---------------------------------------------


@scenario("DescribeTransactions", covers=["TRANSACTIONAL_ID_NOT_FOUND"])
def txn_describe_transactions(s: Session):
    """An unknown id, an initialised one (Empty), one in a transaction (Ongoing: partitions, timeout), after
    the commit (CompleteCommit) and after an abort (CompleteAbort)."""
    topic, tid = s.topic(), s.transactional_id()
    s.create_topic(topic, partitions=2)
    unknown = s.transactional_id("unknown")
    _ready(s, unknown)
    _describe(s, [unknown], label="unknown")
    pid, epoch = _setup_init(s, tid)
    _describe(s, [tid], label="empty")
    _add_partitions(s, 3, tid, pid, epoch, {topic: [0, 1]}, record=False)
    _describe(s, [tid], label="ongoing")
    _end(s, 3, tid, pid, epoch, True, record=False)
    _wait_state(s, tid, ("CompleteCommit",))
    _describe(s, [tid, unknown], label="committed, and the unknown")
    _add_partitions(s, 3, tid, pid, epoch, {topic: [1]}, record=False)
    _end(s, 3, tid, pid, epoch, False, record=False)
    _wait_state(s, tid, ("CompleteAbort",))
    _describe(s, [tid], label="aborted")


@scenario("ListTransactions")
def txn_list_transactions(s: Session):
    """State filters (one, two, an unknown state name), a producer id filter; only this case's ids are
    compared (the coordinator lists every case's)."""
    topic = s.topic()
    s.create_topic(topic)
    empty, ongoing, done = s.transactional_id("empty"), s.transactional_id("ongoing"), s.transactional_id("done")
    _setup_init(s, empty)
    pid, epoch = _open_transaction(s, topic, ongoing)
    pid3, epoch3 = _setup_init(s, done)
    _add_partitions(s, 3, done, pid3, epoch3, {topic: [0]}, record=False)
    _end(s, 3, done, pid3, epoch3, True, record=False)
    _wait_state(s, done, ("CompleteCommit",))
    mine = s.transactional_id("")

    def listed(label, states, pids):
        answer = s.call("ListTransactions", 0, {"state_filters": states, "producer_id_filters": pids}, record=False)
        s.record(label, {"error_code": answer.error_code, "unknown_state_filters": answer.unknown_state_filters,
                         "transaction_states": sorted(
                             ({"transactional_id": t.transactional_id, "producer_id": t.producer_id,
                               "transaction_state": t.transaction_state}
                              for t in answer.transaction_states if t.transactional_id.startswith(mine)),
                             key=lambda t: t["transactional_id"])})

    listed("all", [], [])
    listed("Ongoing", ["Ongoing"], [])
    listed("Empty and CompleteCommit", ["Empty", "CompleteCommit"], [])
    listed("unknown state", ["Bogus", "Ongoing"], [])
    listed("producer id", [], [pid])
    listed("producer id and other state", ["Empty"], [pid])
    _end(s, 3, ongoing, pid, epoch, False, record=False)


@scenario("DescribeProducers", covers=["UNKNOWN_TOPIC_OR_PARTITION"])
def txn_describe_producers(s: Session):
    """A transactional producer during its transaction (current_txn_start_offset), after the commit, an
    idempotent producer, and an unknown partition."""
    topic, tid = s.topic(), s.transactional_id()
    s.create_topic(topic, partitions=2)
    s.produce(topic, 0, [(None, b"plain")])
    pid, epoch = _open_transaction(s, topic, tid)
    _txn_produce(s, topic, 0, tid, pid, epoch, 2, ["c"], record=False)
    ipid, iepoch = _setup_init(s, None)
    _txn_produce(s, topic, 1, None, ipid, iepoch, 0, ["i", "j", "k"], record=False, transactional=False)
    body = {"topics": [{"name": topic, "partition_indexes": [0, 1, 5]}, {"name": s.topic("missing"),
                                                                         "partition_indexes": [0]}]}
    s.call("DescribeProducers", 0, body, label="during")
    _end(s, 3, tid, pid, epoch, True, record=False)
    _wait_state(s, tid, ("CompleteCommit",))
    s.call("DescribeProducers", 0, body, label="after commit")


# -- WriteTxnMarkers -----------------------------------------------------------------------------------------------


@scenario("WriteTxnMarkers", versions=ALL)
def txn_write_markers_from_client(s: Session, v: int):
    """A client sends WriteTxnMarkers (an inter-broker API) without an authorizer configured: a commit
    marker for a producer with no transaction on the partition, and for an unknown partition."""
    topic = s.topic()
    s.create_topic(topic)
    pid, epoch = _setup_init(s, None)
    s.call("WriteTxnMarkers", v, {"markers": [{"producer_id": pid, "producer_epoch": epoch, "transaction_result": True,
                                               "topics": [{"name": topic, "partition_indexes": [0]},
                                                          {"name": s.topic("missing"), "partition_indexes": [0]}],
                                               "coordinator_epoch": 0}]}, label="markers")
    _fetch_all(s, topic, 0, 0, isolation=0, label="read_uncommitted")
