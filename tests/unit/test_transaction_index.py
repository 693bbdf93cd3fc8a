"""Transactions in the partition log: the last stable offset, the aborted-transaction index
(`.txnindex` per segment, Kafka's format), what a read_committed fetch is told, and how the
index survives restarts, crashes, truncation and retention."""

from __future__ import annotations

import os

import pytest

from kafka_wire.record_codec import Record, build_batch, build_control_batch
from log.errors import InvalidProducerEpoch
from log.partition_log import PartitionLog
from log.producer_state import AppendOrigin
from log.transaction_index import ENTRY_SIZE, AbortedTxn, PartitionTransactionIndex, TransactionIndex

A, B, C = 1000, 2000, 3000  # producer ids


def open_log(tmp_path, config=None, **kwargs) -> PartitionLog:
    return PartitionLog(str(tmp_path / "topic-0"), config, **kwargs)


class Producer:
    """Batches of one producer id with consecutive sequence numbers."""

    def __init__(self, producer_id: int, epoch: int = 0):
        self.producer_id, self.epoch, self.sequence = producer_id, epoch, 0

    def batch(self, count: int = 1, transactional: bool = True, value: bytes = b"v") -> bytearray:
        records = [Record(i, 0, b"k", value) for i in range(count)]
        data = build_batch(records, producer_id=self.producer_id, producer_epoch=self.epoch,
                           base_sequence=self.sequence, is_transactional=transactional, base_timestamp=1000)
        self.sequence += count
        return bytearray(data)


def write(log: PartitionLog, data) -> int:
    info = log.append(data, leader_epoch=0)
    log.high_watermark = log.log_end_offset
    return info.base_offset


def marker(log: PartitionLog, producer_id: int, commit: bool, epoch: int = 0, coordinator_epoch: int = 0) -> int:
    info = log.append(bytearray(build_control_batch(commit, producer_id, epoch, coordinator_epoch, timestamp=1000)),
                      leader_epoch=0, origin=AppendOrigin.COORDINATOR)
    log.high_watermark = log.log_end_offset
    return info.base_offset


def plain(log: PartitionLog, count: int = 1) -> int:
    return write(log, bytearray(build_batch([Record(i, 0, b"k", b"p") for i in range(count)], base_timestamp=1000)))


def test_last_stable_offset_follows_open_transactions(tmp_path):
    log = open_log(tmp_path)
    a, b = Producer(A), Producer(B)
    plain(log)                                   # 0
    assert log.last_stable_offset == 1
    first_a = write(log, a.batch(2))             # 1-2
    plain(log)                                   # 3
    first_b = write(log, b.batch())              # 4
    assert (first_a, first_b) == (1, 4)
    assert log.last_stable_offset == 1 and log.high_watermark == 5
    marker(log, A, commit=True)                  # 5
    assert log.last_stable_offset == first_b
    marker(log, B, commit=False)                 # 6
    assert log.last_stable_offset == log.high_watermark == 7


def test_an_abort_is_indexed_with_the_lso_at_its_completion(tmp_path):
    log = open_log(tmp_path)
    a, b = Producer(A), Producer(B)
    write(log, a.batch(2))                       # 0-1 (A)
    write(log, b.batch())                        # 2   (B)
    abort_a = marker(log, A, commit=False)       # 3
    commit_b = marker(log, B, commit=True)       # 4
    write(log, a.batch())                        # 5   (A's next transaction)
    abort_a2 = marker(log, A, commit=False)      # 6
    # B was still open when A aborted: the search for what overlaps [x, 3) may stop there.
    assert log.transaction_index.all_entries() == [AbortedTxn(A, 0, abort_a, 2), AbortedTxn(A, 5, abort_a2, 7)]
    assert commit_b == 4
    path = tmp_path / "topic-0" / "00000000000000000000.txnindex"
    assert path.stat().st_size == 2 * ENTRY_SIZE


def test_aborts_in_one_follower_append_are_indexed_with_the_lso_at_each_marker(tmp_path):
    """A follower appends what it fetched in one piece, often many transactions (a replica catching
    up copies up to a MiB at once). Each abort must be indexed with the last stable offset as it
    stood at its marker, not after the whole append: the search for aborted transactions stops at
    an entry whose LSO is past the range, so an LSO too high hides later aborts from read_committed
    consumers, which then read aborted records (the faults harness's power-loss-leader x txn run:
    a leader rebuilt by replication answered 226 aborted records to a read_committed reader)."""
    leader = open_log(tmp_path / "leader")
    a, b, c = Producer(A), Producer(B), Producer(C)
    write(leader, b.batch())                     # 0   B opens
    write(leader, a.batch())                     # 1   A opens
    abort_a = marker(leader, A, commit=False)    # 2   B still open: LSO 0
    write(leader, b.batch())                     # 3
    abort_b = marker(leader, B, commit=False)    # 4   LSO 5
    write(leader, c.batch())                     # 5   C opens and stays open
    segment = tmp_path / "leader" / "topic-0" / "00000000000000000000.log"
    follower = open_log(tmp_path / "follower")
    follower.append(bytearray(segment.read_bytes()), leader_epoch=-1, assign_offsets=False)
    follower.high_watermark = follower.log_end_offset
    assert follower.last_stable_offset == 5
    expected = [AbortedTxn(A, 1, abort_a, 0), AbortedTxn(B, 0, abort_b, 5)]
    assert leader.transaction_index.all_entries() == expected
    assert follower.transaction_index.all_entries() == expected
    # A read_committed fetch of [3, 5) must learn that B's records there are aborted.
    assert [t.producer_id for t in follower.collect_aborted_transactions(3, 5)] == [B]


def test_an_index_written_with_too_high_last_stable_offsets_is_repaired_when_loaded(tmp_path):
    """Indexes written before the fix above may hold an LSO past a later entry's first offset,
    which no correct index does (a transaction open at a marker bounds that marker's LSO; one
    opened after it starts past it): loading lowers each LSO to the first offsets after it."""
    log = open_log(tmp_path)
    a, b, c = Producer(A), Producer(B), Producer(C)
    write(log, b.batch())                        # 0   B opens
    write(log, a.batch())                        # 1   A opens
    marker(log, A, commit=False)                 # 2
    write(log, b.batch())                        # 3
    marker(log, B, commit=False)                 # 4
    write(log, c.batch())                        # 5
    log.close()
    path = tmp_path / "topic-0" / "00000000000000000000.txnindex"
    path.write_bytes(b"".join(e.encode() for e in [AbortedTxn(A, 1, 2, 5), AbortedTxn(B, 0, 4, 5)]))
    reloaded = open_log(tmp_path)
    assert reloaded.transaction_index.all_entries() == [AbortedTxn(A, 1, 2, 0), AbortedTxn(B, 0, 4, 5)]
    assert [t.producer_id for t in reloaded.collect_aborted_transactions(3, 5)] == [B]


def test_collect_aborted_transactions_by_range(tmp_path):
    log = open_log(tmp_path)
    a, b = Producer(A), Producer(B)
    write(log, a.batch(3))                       # 0-2
    marker(log, A, commit=False)                 # 3
    plain(log, 2)                                # 4-5
    write(log, b.batch(2))                       # 6-7
    marker(log, B, commit=False)                 # 8
    collect = log.collect_aborted_transactions
    assert [t.producer_id for t in collect(0, 4)] == [A]
    assert [t.producer_id for t in collect(0, 9)] == [A, B]
    assert [t.producer_id for t in collect(3, 9)] == [A, B]  # the marker offset still overlaps
    assert [t.producer_id for t in collect(4, 9)] == [B]
    assert collect(4, 6) == []
    assert [t.producer_id for t in collect(7, 9)] == [B]


def test_a_marker_alone_is_indexed_as_a_one_offset_transaction(tmp_path):
    """A partition added to a transaction that never wrote to it still gets the marker (Kafka
    indexes such an abort from the marker's own offset)."""
    log = open_log(tmp_path)
    plain(log)
    offset = marker(log, C, commit=False)
    assert log.transaction_index.all_entries() == [AbortedTxn(C, offset, offset, offset + 1)]


def test_commit_markers_are_not_indexed(tmp_path):
    log = open_log(tmp_path)
    write(log, Producer(A).batch())
    marker(log, A, commit=True)
    assert log.transaction_index.all_entries() == []
    assert not any(name.endswith(".txnindex") for name in os.listdir(tmp_path / "topic-0"))


def test_read_committed_fetch_gets_the_aborts_overlapping_what_it_read(tmp_path):
    log = open_log(tmp_path)
    a, b = Producer(A), Producer(B)
    write(log, a.batch(2, value=b"x" * 200))    # 0-1
    marker(log, A, commit=False)                 # 2
    write(log, b.batch(2, value=b"x" * 200))    # 3-4
    marker(log, B, commit=False)                 # 5
    everything = log.read_slice(0, 1 << 20, max_offset=log.last_stable_offset)
    assert [(t.producer_id, t.first_offset) for t in log.aborted_transactions_for_read(0, everything)] == \
        [(A, 0), (B, 3)]
    # A small read holds only A's first batch: the bound is the next batch (the marker at 2).
    first_batch = log.read_slice(0, 10, max_offset=log.last_stable_offset)
    assert [t.producer_id for t in log.aborted_transactions_for_read(0, first_batch)] == [A]
    later = log.read_slice(3, 1 << 20, max_offset=log.last_stable_offset)
    assert [t.producer_id for t in log.aborted_transactions_for_read(3, later)] == [B]
    assert log.aborted_transactions_for_read(6, None) == []


def test_aborts_in_a_later_segment_are_found(tmp_path):
    """The data is in one segment and its ABORT marker in the next one: a fetch of the first
    segment must still learn that the data was aborted."""
    log = open_log(tmp_path)
    a = Producer(A)
    write(log, a.batch(3))                       # 0-2
    log.roll()
    offset = marker(log, A, commit=False)        # 3, in the segment based at 3
    assert os.path.exists(tmp_path / "topic-0" / f"{offset:020d}.txnindex")
    data = log.read_slice(0, 1 << 20, max_offset=log.last_stable_offset)
    assert [t.producer_id for t in log.aborted_transactions_for_read(0, data)] == [A]


def test_the_index_survives_a_clean_restart(tmp_path):
    log = open_log(tmp_path)
    write(log, Producer(A).batch(2))
    marker(log, A, commit=False)
    write(log, Producer(B).batch())  # left open
    entries = log.transaction_index.all_entries()
    log.close()
    reopened = open_log(tmp_path, recovery_point=log.log_end_offset, high_watermark=log.log_end_offset,
                        clean_shutdown=True)
    assert reopened.transaction_index.all_entries() == entries
    assert reopened.last_stable_offset == 3  # B's transaction is still open after the restart


def test_a_lost_index_is_rebuilt_after_a_crash(tmp_path):
    log = open_log(tmp_path)
    a, b = Producer(A), Producer(B)
    write(log, a.batch(2))
    write(log, b.batch())
    marker(log, A, commit=False)
    write(log, a.batch())
    marker(log, A, commit=False)
    entries = log.transaction_index.all_entries()
    assert len(entries) == 2
    log.close_without_flush()  # a crash: no producer snapshot, no clean shutdown
    os.unlink(tmp_path / "topic-0" / "00000000000000000000.txnindex")
    reopened = open_log(tmp_path, high_watermark=6)
    assert reopened.transaction_index.all_entries() == entries
    assert reopened.last_stable_offset == 2  # B is still open


def test_a_producer_keeps_the_coordinator_epoch_of_its_last_marker(tmp_path):
    """DescribeProducers' coordinator epoch (kafka-transactions.sh describe-producers' LatestCoordinatorEpoch)
    is the last marker's, as Kafka's ProducerAppendInfo keeps it; -1 before any marker; rebuilt after a crash."""
    log = open_log(tmp_path)
    a = Producer(A)
    write(log, a.batch())
    assert log.producer_state.last_entry(A).coordinator_epoch == -1
    marker(log, A, commit=True, coordinator_epoch=3)
    write(log, a.batch())
    marker(log, A, commit=False, coordinator_epoch=5)
    assert log.producer_state.last_entry(A).coordinator_epoch == 5
    log.close_without_flush()  # no producer snapshot: the state is replayed from the log
    reopened = open_log(tmp_path, high_watermark=4)
    assert reopened.producer_state.last_entry(A).coordinator_epoch == 5


def test_a_torn_index_entry_is_cut_and_the_rest_rebuilt(tmp_path):
    log = open_log(tmp_path)
    write(log, Producer(A).batch())
    marker(log, A, commit=False)
    write(log, Producer(B).batch())
    marker(log, B, commit=False)
    entries = log.transaction_index.all_entries()
    log.close_without_flush()
    path = tmp_path / "topic-0" / "00000000000000000000.txnindex"
    os.truncate(path, ENTRY_SIZE + 10)
    reopened = open_log(tmp_path, high_watermark=4)
    assert reopened.transaction_index.all_entries() == entries
    assert path.stat().st_size == 2 * ENTRY_SIZE


def test_truncation_drops_aborts_past_the_new_end(tmp_path):
    log = open_log(tmp_path)
    write(log, Producer(A).batch(2))            # 0-1
    abort = marker(log, A, commit=False)        # 2
    assert log.transaction_index.all_entries()
    log.truncate_to(abort)
    assert log.transaction_index.all_entries() == []
    assert log.last_stable_offset == 0  # A's transaction is open again
    assert not os.path.exists(tmp_path / "topic-0" / "00000000000000000000.txnindex")


def test_deleted_segments_take_their_index_along(tmp_path):
    log = open_log(tmp_path)
    write(log, Producer(A).batch())
    marker(log, A, commit=False)
    log.roll()
    write(log, Producer(B).batch())
    marker(log, B, commit=False)
    log.roll()
    plain(log)
    assert len(log.transaction_index.all_entries()) == 2
    log.delete_records_before(2)  # the first segment goes
    assert [t.producer_id for t in log.transaction_index.all_entries()] == [B]
    assert not os.path.exists(tmp_path / "topic-0" / "00000000000000000000.txnindex")


def test_an_older_epoch_cannot_end_a_newer_transaction(tmp_path):
    log = open_log(tmp_path)
    write(log, Producer(A, epoch=3).batch())
    with pytest.raises(InvalidProducerEpoch):
        marker(log, A, commit=False, epoch=2)
    assert log.transaction_index.all_entries() == []


def test_index_file_format_and_idempotent_append(tmp_path):
    index = TransactionIndex(str(tmp_path), 100)
    assert index.append(AbortedTxn(7, 100, 105, 106))
    assert not index.append(AbortedTxn(7, 100, 105, 106))  # replayed: already there
    data = (tmp_path / "00000000000000000100.txnindex").read_bytes()
    # version, producer id, first offset, last offset, last stable offset (Kafka's AbortedTxn).
    assert data == (b"\x00\x00" + (7).to_bytes(8, "big") + (100).to_bytes(8, "big") + (105).to_bytes(8, "big")
                    + (106).to_bytes(8, "big"))
    assert TransactionIndex.load(str(tmp_path), 100).entries == [AbortedTxn(7, 100, 105, 106)]
    # An entry missing from the middle (a damaged file, rebuilt) goes back in marker order.
    index.append(AbortedTxn(9, 110, 112, 113))
    assert index.append(AbortedTxn(8, 101, 108, 109))
    assert [e.producer_id for e in TransactionIndex.load(str(tmp_path), 100).entries] == [7, 8, 9]


def test_merging_indexes_after_compaction(tmp_path):
    indexes = PartitionTransactionIndex(str(tmp_path))
    indexes.append(0, AbortedTxn(1, 0, 5, 6))
    indexes.append(10, AbortedTxn(2, 10, 12, 13))
    indexes.append(20, AbortedTxn(3, 20, 21, 22))
    indexes.merge_into(0, [10])
    assert sorted(os.listdir(tmp_path)) == ["00000000000000000000.txnindex", "00000000000000000020.txnindex"]
    reloaded = PartitionTransactionIndex(str(tmp_path))
    assert [t.producer_id for t in reloaded.all_entries()] == [1, 2, 3]
    reloaded.retain([20])
    assert [t.producer_id for t in reloaded.all_entries()] == [3]
