"""Idempotent producer state: duplicates, sequence gaps, epochs, transactions, snapshots and recovery."""

from __future__ import annotations

import os

import pytest

from kafka_wire.record_codec import Record, build_batch, build_control_batch
from kafka_wire.records import read_batch_header
from log.errors import InvalidProducerEpoch, InvalidTxnState, OutOfOrderSequence
from log.partition_log import PartitionLog
from log.producer_state import (
    INT32_MAX,
    AppendOrigin,
    BatchMetadata,
    CorruptSnapshot,
    ProducerStateEntry,
    ProducerStateManager,
    decode_snapshot,
    encode_snapshot,
)

PID = 4000


def batch(seq: int, count: int = 1, *, pid: int = PID, epoch: int = 0, transactional: bool = False,
          timestamp: int = 1000, base_offset: int = 0) -> bytearray:
    records = [Record(i, 0, None, b"value-%d" % (seq + i)) for i in range(count)]
    return bytearray(build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                 is_transactional=transactional, base_timestamp=timestamp,
                                 base_offset=base_offset))


def open_log(tmp_path, config=None, **kwargs) -> PartitionLog:
    return PartitionLog(str(tmp_path / "idem-0"), config or {"segment.bytes": 600}, **kwargs)


def append(log, buf, **kwargs):
    return log.append(buf, leader_epoch=0, **kwargs)


# -- the rules ------------------------------------------------------------------------------------


def test_in_sequence_batches_append(tmp_path):
    log = open_log(tmp_path)
    assert append(log, batch(0, 2)).base_offset == 0
    assert append(log, batch(2, 3)).base_offset == 2
    assert append(log, batch(5)).base_offset == 5
    entry = log.producer_state.last_entry(PID)
    assert entry.producer_epoch == 0 and entry.last_seq == 5 and entry.last_data_offset == 5


def test_a_retry_of_any_of_the_last_five_batches_gets_its_original_offsets(tmp_path):
    log = open_log(tmp_path)
    # Unrelated appends in between so that offsets and sequences differ.
    originals = []
    for i in range(7):
        append(log, bytearray(build_batch([Record(0, 0, None, b"other")], base_timestamp=1)))
        info = append(log, batch(i * 2, 2, timestamp=5000 + i))
        originals.append((i * 2, info.base_offset, info.last_offset))
    end = log.log_end_offset
    for seq, base, last in originals[-5:]:
        info = append(log, batch(seq, 2, timestamp=5000 + seq // 2))
        assert info.duplicate
        assert (info.base_offset, info.last_offset) == (base, last)
        assert info.log_append_time == 5000 + seq // 2  # Kafka answers with the cached timestamp
        assert log.log_end_offset == end  # nothing appended
    # The sixth batch back is no longer cached: Kafka sees an out-of-order sequence.
    with pytest.raises(OutOfOrderSequence):
        append(log, batch(originals[1][0], 2))
    assert log.log_end_offset == end


def test_a_duplicate_needs_the_same_epoch_and_sequence_range(tmp_path):
    log = open_log(tmp_path)
    append(log, batch(0, 3))
    with pytest.raises(OutOfOrderSequence):
        append(log, batch(0, 2))  # same first sequence, different range: not a retry
    assert append(log, batch(3, 1)).base_offset == 3


def test_a_sequence_gap_is_out_of_order_and_appends_nothing(tmp_path):
    log = open_log(tmp_path)
    append(log, batch(0, 2))
    with pytest.raises(OutOfOrderSequence):
        append(log, batch(3))
    assert log.log_end_offset == 2
    assert log.producer_state.last_entry(PID).last_seq == 1
    assert append(log, batch(2)).base_offset == 2


def test_an_older_epoch_is_fenced(tmp_path):
    log = open_log(tmp_path)
    append(log, batch(0, epoch=3))
    with pytest.raises(InvalidProducerEpoch):
        append(log, batch(1, epoch=2))
    assert log.log_end_offset == 1


def test_a_new_epoch_restarts_at_sequence_zero(tmp_path):
    log = open_log(tmp_path)
    append(log, batch(0, 5, epoch=0))
    with pytest.raises(OutOfOrderSequence):
        append(log, batch(5, epoch=1))
    assert append(log, batch(0, epoch=1)).base_offset == 5
    entry = log.producer_state.last_entry(PID)
    assert entry.producer_epoch == 1 and len(entry.batches) == 1  # older epoch's batches dropped
    # A retry from the old epoch is now fenced rather than treated as a duplicate.
    with pytest.raises(InvalidProducerEpoch):
        append(log, batch(0, 5, epoch=0))


def test_an_unknown_producer_may_start_at_any_sequence(tmp_path):
    # Kafka >= 2.5 (KIP-360): no UNKNOWN_PRODUCER_ID when the producer's state is gone.
    log = open_log(tmp_path)
    assert append(log, batch(42, pid=77)).base_offset == 0
    assert append(log, batch(43, pid=77)).base_offset == 1


def test_sequences_wrap_after_int32_max(tmp_path):
    log = open_log(tmp_path)
    append(log, batch(INT32_MAX - 2, 2))  # sequences MAX-2, MAX-1
    info = append(log, batch(INT32_MAX - 0, 3))  # MAX, 0, 1
    assert info.base_offset == 2
    assert log.producer_state.last_entry(PID).last_seq == 1
    assert append(log, batch(2)).base_offset == 5
    # And the wrapped batch is recognised when retried.
    assert append(log, batch(INT32_MAX, 3)).duplicate
    # A batch ending exactly at int32 max is followed by sequence 0.
    other = 99
    append(log, batch(INT32_MAX - 1, 2, pid=other))
    assert log.producer_state.last_entry(other).last_seq == INT32_MAX
    assert not append(log, batch(0, pid=other)).duplicate
    with pytest.raises(OutOfOrderSequence):
        append(log, batch(5, pid=other))


def test_a_rejected_batch_leaves_no_state_from_earlier_batches_of_the_same_append(tmp_path):
    log = open_log(tmp_path, {"segment.bytes": 10_000})
    state = log.producer_state
    header_ok = read_batch_header(batch(0, pid=1))
    header_bad = read_batch_header(batch(5, pid=2, epoch=0))
    append(log, batch(0, pid=2, epoch=1))
    pending = state.begin_append(AppendOrigin.CLIENT)
    assert pending.check_and_record(header_ok) is None
    with pytest.raises(InvalidProducerEpoch):
        pending.check_and_record(header_bad)
    assert state.last_entry(1) is None


def test_manager_check_and_record_directly(tmp_path):
    state = ProducerStateManager(str(tmp_path))
    first = bytearray(batch(0, 2))
    assert state.check_and_record(read_batch_header(first)) is None
    duplicate = state.check_and_record(read_batch_header(first))
    assert duplicate == BatchMetadata(0, 1, 0, 1, 1000)
    with pytest.raises(OutOfOrderSequence):
        state.check_and_record(read_batch_header(batch(9)))
    # Followers are trusted: no sequence or epoch checks.
    assert state.check_and_record(read_batch_header(batch(9, epoch=0, base_offset=2)), AppendOrigin.REPLICATION) is None
    assert state.last_entry(PID).last_seq == 9


# -- transactions ---------------------------------------------------------------------------------


def test_transactions_open_and_close(tmp_path):
    log = open_log(tmp_path)
    log.high_watermark = 0
    append(log, batch(0, 2, transactional=True))
    log.high_watermark = log.log_end_offset
    assert log.producer_state.first_unstable_offset() == 0
    assert log.last_stable_offset == 0
    with pytest.raises(InvalidTxnState):
        append(log, batch(2))
    marker = bytearray(build_control_batch(True, PID, 0, coordinator_epoch=1, timestamp=2000))
    append(log, marker, origin=AppendOrigin.COORDINATOR)
    log.high_watermark = log.log_end_offset
    assert log.producer_state.first_unstable_offset() is None
    assert log.last_stable_offset == 3
    assert append(log, batch(2)).base_offset == 3


# -- persistence ----------------------------------------------------------------------------------


def five_batches(log):
    return [append(log, batch(i * 3, 3, timestamp=9000 + i)).base_offset for i in range(5)]


def assert_all_five_recognised(log, bases):
    for i, base in enumerate(bases):
        info = append(log, batch(i * 3, 3))
        assert info.duplicate and info.base_offset == base
    with pytest.raises(OutOfOrderSequence):
        append(log, batch(16))
    assert append(log, batch(15)).base_offset == bases[-1] + 3


def test_state_survives_a_clean_reopen(tmp_path):
    log = open_log(tmp_path)
    bases = five_batches(log)
    log.close()
    snapshots = sorted(n for n in os.listdir(log.dir) if n.endswith(".snapshot"))
    assert snapshots[-1] == f"{log.log_end_offset:020d}.snapshot"
    assert_all_five_recognised(open_log(tmp_path, clean_shutdown=True), bases)


def test_state_survives_a_crash_by_replaying_headers(tmp_path):
    config = {"segment.bytes": 250}
    log = open_log(tmp_path, config)
    bases = five_batches(log)
    assert len(log.segments) > 2  # snapshots were taken at rolls, the tail is replayed
    log.close_without_flush()
    assert_all_five_recognised(open_log(tmp_path, config), bases)


def test_state_survives_a_crash_without_any_snapshot(tmp_path):
    log = open_log(tmp_path, {"segment.bytes": 10_000})
    bases = five_batches(log)
    log.close_without_flush()
    assert not [n for n in os.listdir(log.dir) if n.endswith(".snapshot")]
    assert_all_five_recognised(open_log(tmp_path), bases)


def test_state_is_rebuilt_from_the_log_when_snapshots_are_unreadable(tmp_path):
    log = open_log(tmp_path)
    bases = five_batches(log)
    log.close()
    for name in os.listdir(log.dir):
        if name.endswith(".snapshot"):
            with open(os.path.join(log.dir, name), "r+b") as f:
                f.seek(12)
                f.write(b"\xff\xff")
    reopened = open_log(tmp_path, clean_shutdown=True)
    assert not [n for n in os.listdir(log.dir) if n.endswith(".snapshot")]
    assert_all_five_recognised(reopened, bases)


def test_truncation_rewinds_producer_state(tmp_path):
    log = open_log(tmp_path, {"segment.bytes": 10_000})
    append(log, batch(0, 2))
    append(log, batch(2, 2))
    log.high_watermark = 2
    log.truncate_to(2)
    # The truncated batch is gone, so its resend is appended anew rather than deduplicated.
    info = append(log, batch(2, 2))
    assert not info.duplicate and info.base_offset == 2
    assert append(log, batch(0, 2)).duplicate


def test_snapshot_round_trip_and_corruption():
    entry = ProducerStateEntry(9, 2, coordinator_epoch=4, last_timestamp=77, current_txn_first_offset=12)
    for i in range(6):
        entry.batches.append(BatchMetadata(i, i, 10 + i, 10 + i, 70 + i))
    data = encode_snapshot([entry])
    (decoded,) = decode_snapshot(data)
    assert decoded == entry and len(decoded.batches) == 5
    with pytest.raises(CorruptSnapshot):
        decode_snapshot(data[:-1])
    damaged = bytearray(data)
    damaged[-1] ^= 1
    with pytest.raises(CorruptSnapshot):
        decode_snapshot(bytes(damaged))


def test_expired_producers_are_forgotten(tmp_path):
    state = ProducerStateManager(str(tmp_path))
    state.check_and_record(read_batch_header(batch(0, timestamp=1000)))
    state.check_and_record(read_batch_header(batch(0, pid=5, timestamp=5000)))
    assert state.remove_expired_producers(now_ms=7000, expiration_ms=3000) == [PID]
    assert state.last_entry(PID) is None and state.last_entry(5) is not None


def marker(committed: bool, *, epoch: int, pid: int = PID) -> bytearray:
    return bytearray(build_control_batch(committed, pid, epoch, 0, timestamp=1000))


def test_tv2_markers_must_be_above_the_epoch_of_the_open_transaction(tmp_path):
    """KIP-1228: a transaction.version 2 marker carries the bumped epoch; one at the epoch of the
    producer's open transaction is a late marker of an earlier transaction and must not end it."""
    log = open_log(tmp_path)
    append(log, batch(0, epoch=3, transactional=True))
    with pytest.raises(InvalidProducerEpoch):
        append(log, marker(True, epoch=3), origin=AppendOrigin.COORDINATOR, transaction_version=2)
    # TV0/1 markers at the transaction's own epoch are how those transactions end.
    append(log, marker(False, epoch=3), origin=AppendOrigin.COORDINATOR, transaction_version=0)
    assert log.producer_state.last_entry(PID).current_txn_first_offset is None
    append(log, batch(1, epoch=3, transactional=True))
    append(log, marker(True, epoch=4), origin=AppendOrigin.COORDINATOR, transaction_version=2)
    entry = log.producer_state.last_entry(PID)
    assert (entry.producer_epoch, entry.current_txn_first_offset) == (4, None)
    # The same marker again (a coordinator retrying after a restart): harmless, no transaction is open.
    append(log, marker(True, epoch=4), origin=AppendOrigin.COORDINATOR, transaction_version=2)
    # The producer goes on at epoch 4 from sequence 0; an older marker is fenced.
    append(log, batch(0, epoch=4, transactional=True))
    with pytest.raises(InvalidProducerEpoch):
        append(log, marker(True, epoch=3), origin=AppendOrigin.COORDINATOR, transaction_version=2)
    with pytest.raises(InvalidProducerEpoch):
        append(log, marker(True, epoch=4), origin=AppendOrigin.COORDINATOR, transaction_version=2)
    append(log, marker(False, epoch=5), origin=AppendOrigin.COORDINATOR, transaction_version=2)
    log.close()


def test_transaction_verification_state(tmp_path):
    """Kafka's VerificationStateEntry (KIP-890): started before the coordinator is asked, ended
    by the producer's next transactional write; its guard must still be current at the append."""
    log = open_log(tmp_path)
    state = log.producer_state
    # A first write at epoch 1 (verification starts, then the write opens the transaction).
    guard = state.start_verification(PID, 0, 1, False, now_ms=1000)
    append(log, batch(0, 2, epoch=1, transactional=True), verification_guard=guard)
    assert state.verification_guard(PID) is None and state.has_ongoing_transaction(PID, 1)
    append(log, marker(False, epoch=1), origin=AppendOrigin.COORDINATOR)
    # A batch at a higher epoch was refused by the coordinator, but its verification stays: the
    # producer's next batch above that lowest sequence is out of order, as Kafka answers.
    state.start_verification(PID, 0, 2, False, now_ms=2000)
    with pytest.raises(OutOfOrderSequence):
        append(log, batch(2, epoch=1, transactional=True))
    # A verification overtaken by a marker: the late batch holds a guard no longer current.
    stale = state.start_verification(PID, 0, 3, False, now_ms=3000)
    append(log, marker(False, epoch=3), origin=AppendOrigin.COORDINATOR)
    with pytest.raises(InvalidTxnState):
        append(log, batch(0, epoch=3, transactional=True), verification_guard=stale)
    assert not state.has_ongoing_transaction(PID, 3)
    # TV2: a producer with no state here starts at sequence 0.
    other = PID + 1
    state.start_verification(other, 3, 0, True, now_ms=4000)
    with pytest.raises(OutOfOrderSequence):
        append(log, batch(3, pid=other, transactional=True))
    # Old verifications expire with the producers.
    state.remove_expired_producers(now_ms=10**9, expiration_ms=1000)
    assert state.verification_guard(other) is None
    log.close()


def test_a_batch_reusing_the_sequences_of_an_ended_transaction_is_refused_not_swallowed(tmp_path):
    """The fault harness's power-loss-all-fsync x txn anomaly: a transaction's batch (sequences
    0..2) reached the leader's log but was never acknowledged; the transaction was aborted, and
    librdkafka, told the batch was not written, sent its next transaction's batch with the same
    producer id, epoch and sequences. Answered as a duplicate of the aborted batch, its records
    were never written while the transaction committed: partly visible."""
    log = open_log(tmp_path)
    first = append(log, batch(0, 3, transactional=True))
    append(log, marker(False, epoch=0), origin=AppendOrigin.COORDINATOR)
    end = log.log_end_offset
    with pytest.raises(OutOfOrderSequence):
        append(log, batch(0, 3, transactional=True, timestamp=5000))
    assert log.log_end_offset == end
    assert log.producer_state.first_unstable_offset() is None
    # A retry within the open transaction is still answered with the original's offsets.
    opened = append(log, batch(3, 2, transactional=True))
    retry = append(log, batch(3, 2, transactional=True))
    assert retry.duplicate and retry.base_offset == opened.base_offset != first.base_offset
    # After a commit the same holds for the batches of the committed transaction.
    append(log, marker(True, epoch=0), origin=AppendOrigin.COORDINATOR)
    with pytest.raises(OutOfOrderSequence):
        append(log, batch(3, 2, transactional=True))
