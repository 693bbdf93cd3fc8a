"""coordinator/share_partition.py: a share-partition's in-flight records as Kafka 4.3's SharePartition
keeps them: acquisition, acknowledgement (ACCEPT / RELEASE / REJECT / GAP / RENEW), Kafka's errors
for invalid acknowledgements, acquisition-lock expiry and redelivery, the delivery count limit,
release on session close, the start offset advancing, the record-lock limit, share.auto.offset.reset,
and the state it persists (WriteShareGroupState batches, snapshots, loading them back).
"""

from __future__ import annotations

import uuid

import pytest

from coordinator.share_partition import (
    BATCH_OPTIMIZED,
    RECORD_LIMIT,
    AcquiredRecords,
    RecordState,
    ShareAcknowledgeError,
    SharePartition,
    StateBatch,
    initial_start_offset,
    parse_duration_ms,
)
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

TOPIC = uuid.UUID(int=42)
ACCEPT, RELEASE, REJECT, GAP, RENEW = 1, 2, 3, 0, 4
LOCK_MS = 30_000


def partition(**kwargs) -> SharePartition:
    kwargs.setdefault("record_lock_duration_ms", LOCK_MS)
    kwargs.setdefault("delivery_count_limit", 3)
    return SharePartition("group", TOPIC, 0, **kwargs)


def states(sp: SharePartition, first: int, last: int):
    return [sp.record_state(o) and (sp.record_state(o)[0], sp.record_state(o)[1]) for o in range(first, last + 1)]


# -- acquisition ----------------------------------------------------------------------------------------


def test_acquire_new_records_locks_them_to_the_member():
    sp = partition()
    acquired = sp.acquire("m1", [(0, 4), (5, 9)], max_records=100, now_ms=0)
    assert acquired == [AcquiredRecords(0, 9, 1)]
    assert sp.record_state(3) == (RecordState.ACQUIRED, 1, "m1")
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (0, 9, 10)
    assert sp.next_lock_deadline() == LOCK_MS
    # Acquired records are not acquired again.
    assert sp.acquire("m2", [(0, 9)], max_records=100, now_ms=1) == []


def test_batch_optimized_takes_whole_batches_record_limit_does_not():
    sp = partition()
    assert sp.acquire("m1", [(0, 4), (5, 9)], max_records=3, now_ms=0) == [AcquiredRecords(0, 4, 1)]
    assert sp.acquire("m2", [(5, 9), (10, 14)], max_records=1, now_ms=0, acquire_mode=BATCH_OPTIMIZED) == \
        [AcquiredRecords(5, 9, 1)]
    sp2 = partition()
    assert sp2.acquire("m1", [(0, 4), (5, 9)], max_records=3, now_ms=0, acquire_mode=RECORD_LIMIT) == \
        [AcquiredRecords(0, 2, 1)]
    assert sp2.next_fetch_offset() == 3


def test_records_below_the_start_offset_are_not_acquired():
    sp = partition(start_offset=5)
    assert sp.acquire("m1", [(0, 7)], max_records=100, now_ms=0) == [AcquiredRecords(5, 7, 1)]


def test_max_record_locks_bounds_new_records():
    sp = partition(max_record_locks=4)
    assert sp.acquire("m1", [(0, 9)], 100, 0, acquire_mode=RECORD_LIMIT) == [AcquiredRecords(0, 3, 1)]
    assert sp.in_flight_count() == 4
    assert not sp.can_acquire()
    assert sp.acquire("m2", [(4, 9)], 100, 0) == []
    sp.acknowledge("m1", [(0, 0, [ACCEPT])])
    assert sp.can_acquire() and sp.in_flight_count() == 3
    # A released record makes the partition acquirable even at the limit.
    sp2 = partition(max_record_locks=2)
    sp2.acquire("m1", [(0, 1)], 100, 0)
    assert not sp2.can_acquire()
    sp2.acknowledge("m1", [(1, 1, [RELEASE])])
    assert sp2.can_acquire() and sp2.next_fetch_offset() == 1
    # At the limit only the in-flight window is acquirable: the released record, nothing new.
    assert sp2.acquire("m2", [(1, 5)], 100, 0) == [AcquiredRecords(1, 1, 2)]
    assert sp2.end_offset == 1
    # Batch-optimized acquisition rounds up to the batch even past the limit, as Kafka does.
    sp3 = partition(max_record_locks=4)
    assert sp3.acquire("m1", [(0, 9), (10, 19)], 100, 0) == [AcquiredRecords(0, 9, 1)]


# -- acknowledgement ------------------------------------------------------------------------------------


def test_accept_reject_release_per_offset():
    sp = partition()
    sp.acquire("m1", [(0, 4)], 100, 0)
    update = sp.acknowledge("m1", [(0, 4, [ACCEPT, REJECT, RELEASE, ACCEPT, GAP])])
    # 0 and 1 are done: the start offset moves to the released record.
    assert sp.start_offset == 2
    assert states(sp, 2, 4) == [(RecordState.AVAILABLE, 1), (RecordState.ACKNOWLEDGED, 1),
                                (RecordState.ARCHIVED, 1)]
    assert update.start_offset == 2
    assert update.state_batches == (StateBatch(2, 2, 0, 1), StateBatch(3, 3, 2, 1), StateBatch(4, 4, 4, 1))
    assert update.delivery_complete_count == 2
    assert sp.next_fetch_offset() == 2
    assert sp.acquire("m2", [(0, 4)], 100, 5) == [AcquiredRecords(2, 2, 2)]


def test_one_type_for_a_whole_range():
    sp = partition(start_offset=10)
    sp.acquire("m1", [(10, 19)], 100, 0)
    sp.acknowledge("m1", [(10, 19, [ACCEPT])])
    assert (sp.start_offset, sp.end_offset, sp.in_flight_count()) == (20, 20, 0)
    assert sp.next_fetch_offset() == 20


def test_gap_acknowledgement_archives_offsets_without_records():
    sp = partition()
    sp.acquire("m1", [(0, 5)], 100, 0)
    # 2 and 3 were compacted away: the client acknowledges them as GAP.
    sp.acknowledge("m1", [(0, 1, [ACCEPT]), (2, 3, [GAP]), (4, 5, [ACCEPT])])
    assert sp.start_offset == 6 and sp.in_flight_count() == 0


def test_gap_alone_moves_the_start_offset_only_when_leading():
    sp = partition()
    sp.acquire("m1", [(0, 3)], 100, 0)
    sp.acknowledge("m1", [(1, 1, [GAP])])
    assert sp.start_offset == 0
    assert sp.record_state(1)[0] == RecordState.ARCHIVED
    sp.acknowledge("m1", [(0, 0, [ACCEPT])])
    assert sp.start_offset == 2


@pytest.mark.parametrize("batches,error,message", [
    ([(5, 4, [ACCEPT])], ErrorCode.INVALID_REQUEST, "greater than last offset"),
    ([(0, 2, [ACCEPT, ACCEPT])], ErrorCode.INVALID_REQUEST, "does not match"),
    ([(0, 0, [7])], ErrorCode.INVALID_REQUEST, "Invalid acknowledge type"),
    ([(0, 1, [ACCEPT]), (1, 2, [ACCEPT])], ErrorCode.INVALID_REQUEST, "overlap"),
    ([(10, 12, [ACCEPT])], ErrorCode.INVALID_REQUEST, "first offset in request is past acquired records"),
    ([(3, 12, [ACCEPT])], ErrorCode.INVALID_REQUEST, "last offset in request is past acquired records"),
])
def test_invalid_acknowledgements_change_nothing(batches, error, message):
    sp = partition()
    sp.acquire("m1", [(0, 4)], 100, 0)
    with pytest.raises(ShareAcknowledgeError) as info:
        sp.acknowledge("m1", batches)
    assert info.value.error == error
    assert message in info.value.message
    assert all(sp.record_state(o) == (RecordState.ACQUIRED, 1, "m1") for o in range(5))


def test_acknowledging_records_of_another_member_is_invalid_record_state():
    sp = partition()
    sp.acquire("m1", [(0, 4)], 100, 0)
    with pytest.raises(ShareAcknowledgeError) as info:
        sp.acknowledge("m2", [(0, 4, [ACCEPT])])
    assert info.value.error == ErrorCode.INVALID_RECORD_STATE
    assert info.value.message == "Member is not the owner of offset"


def test_acknowledging_twice_is_invalid_record_state_and_all_or_nothing():
    sp = partition()
    sp.acquire("m1", [(0, 9)], 100, 0)
    sp.acknowledge("m1", [(5, 5, [ACCEPT])])
    with pytest.raises(ShareAcknowledgeError) as info:
        # The first batch is fine, the second touches an acknowledged record: neither applies.
        sp.acknowledge("m1", [(0, 1, [ACCEPT]), (4, 6, [ACCEPT])])
    assert info.value.error == ErrorCode.INVALID_RECORD_STATE
    assert info.value.message == "The offset cannot be acknowledged. The offset is not acquired."
    assert sp.record_state(0) == (RecordState.ACQUIRED, 1, "m1")
    assert sp.start_offset == 0


def test_acknowledging_with_nothing_in_flight():
    sp = partition()
    with pytest.raises(ShareAcknowledgeError) as info:
        sp.acknowledge("m1", [(0, 0, [ACCEPT])])
    assert info.value.error == ErrorCode.INVALID_RECORD_STATE


def test_a_batch_below_the_start_offset_is_refused_and_one_across_it_acknowledges_the_rest():
    """Kafka's SharePartition finds no cached batch for offsets below its start offset (acknowledged
    ones leave its cache) and refuses them: a member cannot have confirmed an acceptance that
    another member's delivery made (two copies of a share-partition, one loaded while the other
    still served, handed the same records to both)."""
    sp = partition()
    sp.acquire("m1", [(0, 4)], 100, 0)
    sp.acknowledge("m1", [(0, 1, [ACCEPT])])
    for member in ("m1", "m2"):
        with pytest.raises(ShareAcknowledgeError) as info:
            sp.acknowledge(member, [(0, 1, [ACCEPT])])
        assert info.value.error == ErrorCode.INVALID_RECORD_STATE
        assert info.value.message == "Batch record not found. The request batch offsets are not found in the cache."
    # A range straddling the start offset acknowledges what is still in flight.
    sp.acknowledge("m1", [(0, 3, [ACCEPT])])
    assert sp.start_offset == 4


def test_renew_restarts_the_lock():
    sp = partition()
    sp.acquire("m1", [(0, 1)], 100, 0)
    assert sp.acknowledge("m1", [(0, 1, [RENEW])], now_ms=20_000) is None
    assert sp.expire_locks(LOCK_MS) is None
    assert sp.record_state(0) == (RecordState.ACQUIRED, 1, "m1")
    assert sp.expire_locks(20_000 + LOCK_MS) is not None
    assert sp.record_state(0)[0] == RecordState.AVAILABLE


def test_renew_when_the_group_disabled_it():
    sp = partition(renew_enabled=False)  # share.renew.acknowledge.enable=false
    sp.acquire("m1", [(0, 1)], 100, 0)
    with pytest.raises(ShareAcknowledgeError) as info:
        sp.acknowledge("m1", [(0, 1, [ACCEPT, RENEW])], now_ms=1)
    assert (info.value.error, info.value.message) == (
        ErrorCode.INVALID_RECORD_STATE, "Renewing acquisition locks is not enabled for the group.")
    assert sp.record_state(0) == (RecordState.ACQUIRED, 1, "m1")


# -- lock expiry, redelivery, delivery count limit ------------------------------------------------------


def test_lock_expiry_makes_records_available_for_redelivery():
    sp = partition()
    sp.acquire("m1", [(0, 4)], 100, now_ms=1000)
    assert sp.expire_locks(1000 + LOCK_MS - 1) is None
    update = sp.expire_locks(1000 + LOCK_MS)
    assert update.state_batches == (StateBatch(0, 4, 0, 1),)
    assert sp.record_state(2) == (RecordState.AVAILABLE, 1, "AAAAAAAAAAAAAAAAAAAAAA")
    assert sp.next_fetch_offset() == 0
    # Redelivered to another member, with the delivery count up.
    assert sp.acquire("m2", [(0, 4)], 100, now_ms=40_000) == [AcquiredRecords(0, 4, 2)]
    # The first member's late acknowledgement is refused.
    with pytest.raises(ShareAcknowledgeError) as info:
        sp.acknowledge("m1", [(0, 4, [ACCEPT])])
    assert info.value.error == ErrorCode.INVALID_RECORD_STATE


def test_only_expired_locks_are_released():
    sp = partition()
    sp.acquire("m1", [(0, 1)], 100, now_ms=0)
    sp.acquire("m2", [(2, 3)], 100, now_ms=10_000)
    sp.expire_locks(LOCK_MS)
    assert [sp.record_state(o)[0] for o in range(4)] == [RecordState.AVAILABLE] * 2 + [RecordState.ACQUIRED] * 2
    assert sp.next_lock_deadline() == 10_000 + LOCK_MS


def test_delivery_count_limit_archives_on_lock_expiry():
    sp = partition(delivery_count_limit=2)
    now = 0
    for delivery in (1, 2):
        assert sp.acquire("m", [(0, 0), (1, 1)], 100, now) == [AcquiredRecords(0, 1, delivery)]
        now += LOCK_MS
        update = sp.expire_locks(now)
    # Delivered twice, the limit: archived, never delivered again, and the start offset moves on.
    assert sp.start_offset == 2 and sp.in_flight_count() == 0
    assert update.start_offset == 2
    assert sp.acquire("m", [(0, 1)], 100, now) == []


def test_delivery_count_limit_archives_on_release():
    sp = partition(delivery_count_limit=2)
    sp.acquire("m", [(0, 1)], 100, 0)
    sp.acknowledge("m", [(0, 1, [RELEASE])])
    assert states(sp, 0, 1) == [(RecordState.AVAILABLE, 1)] * 2
    sp.acquire("m", [(0, 1)], 100, 0)
    sp.acknowledge("m", [(0, 0, [RELEASE]), (1, 1, [ACCEPT])])
    assert sp.start_offset == 2 and sp.in_flight_count() == 0


def test_release_on_session_close_frees_only_that_members_records():
    sp = partition()
    sp.acquire("m1", [(0, 2)], 100, 0)
    sp.acquire("m2", [(3, 5)], 100, 0)
    update = sp.release_acquired_records("m1")
    assert update.state_batches == (StateBatch(0, 2, 0, 1),)
    assert states(sp, 0, 5) == [(RecordState.AVAILABLE, 1)] * 3 + [(RecordState.ACQUIRED, 1)] * 3
    assert sp.release_acquired_records("m1") is None
    assert sp.acquire("m3", [(0, 5)], 100, 0) == [AcquiredRecords(0, 2, 2)]


def test_redelivery_is_throttled_and_the_last_attempt_goes_alone():
    sp = partition(delivery_count_limit=5)  # throttled from 3 deliveries, last attempt the 5th
    batches = [(0, 7), (8, 15)]
    for delivery in (1, 2, 3):
        assert sp.acquire("m", batches, 100, 0) == [AcquiredRecords(0, 15, delivery)]
        sp.release_acquired_records("m")
    # Delivered 3 times: each batch of 8 gives 8 >> 1 = 4 records, and the fetch stops there.
    assert sp.acquire("m", batches, 100, 0) == [AcquiredRecords(0, 3, 4)]
    sp.release_acquired_records("m")
    # Offset 0 is on its last attempt: alone.
    assert sp.acquire("m", batches, 100, 0) == [AcquiredRecords(0, 0, 5)]
    assert sp.acquire("m2", batches, 100, 0) == [AcquiredRecords(1, 1, 5)]
    # Released after the last attempt: archived, and the start offset moves past them.
    sp.release_acquired_records("m")
    sp.release_acquired_records("m2")
    assert sp.start_offset == 2
    # 2 and 3 are on their last attempt (one each); 4-7, delivered 3 times, come 8 >> 1 = 4 at a
    # time, and the throttled fetch stops before the second batch.
    assert sp.acquire("m", batches, 100, 0) == [AcquiredRecords(2, 2, 5)]
    assert sp.acquire("m", batches, 100, 0) == [AcquiredRecords(3, 3, 5)]
    assert sp.acquire("m", batches, 100, 0) == [AcquiredRecords(4, 7, 4)]


def test_limit_two_is_not_throttled():
    sp = partition(delivery_count_limit=2)
    sp.acquire("m", [(0, 3)], 100, 0)
    sp.release_acquired_records("m")
    assert sp.acquire("m", [(0, 3)], 100, 0) == [AcquiredRecords(0, 3, 2)]


# -- start offset ----------------------------------------------------------------------------------------


def test_start_offset_waits_for_the_head():
    sp = partition()
    sp.acquire("m1", [(0, 9)], 100, 0)
    sp.acknowledge("m1", [(1, 9, [ACCEPT])])
    assert sp.start_offset == 0 and sp.in_flight_count() == 10
    sp.acknowledge("m1", [(0, 0, [REJECT])])
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (10, 10, 10)
    assert sp.acquire("m1", [(10, 12)], 100, 0) == [AcquiredRecords(10, 12, 1)]


def test_log_start_offset_moving_past_in_flight_records():
    sp = partition()
    sp.acquire("m1", [(0, 9)], 100, 0)
    update = sp.update_log_start_offset(6)
    assert update.start_offset == 6 and sp.record_state(5) is None
    assert sp.record_state(6) == (RecordState.ACQUIRED, 1, "m1")
    sp.update_log_start_offset(50)
    assert (sp.start_offset, sp.next_fetch_offset(), sp.in_flight_count()) == (50, 50, 0)


def test_reset_start_offset_bumps_the_state_epoch():
    sp = partition(state_epoch=4)
    sp.acquire("m1", [(0, 9)], 100, 0)
    update = sp.reset_start_offset(100)
    assert (update.start_offset, update.state_epoch, update.state_batches) == (100, 5, ())
    assert sp.next_fetch_offset() == 100


# -- initialisation ---------------------------------------------------------------------------------------


def test_auto_offset_reset():
    kw = dict(log_start_offset=10, log_end_offset=90, now_ms=1_000_000)
    assert initial_start_offset("earliest", **kw) == 10
    assert initial_start_offset("latest", **kw) == 90
    asked = []

    def by_time(ts):
        asked.append(ts)
        return 42

    assert initial_start_offset("by_duration:PT10M", **kw, offset_for_timestamp=by_time) == 42
    assert asked == [1_000_000 - 600_000]
    assert initial_start_offset("by_duration:P1DT1.5S", **kw, offset_for_timestamp=lambda ts: None) == 90
    with pytest.raises(ValueError):
        initial_start_offset("none", **kw)


def test_parse_duration():
    assert parse_duration_ms("PT0S") == 0
    assert parse_duration_ms("P2D") == 2 * 86_400_000
    assert parse_duration_ms("PT1H2M3.5S") == 3_723_500
    for bad in ("", "P", "PT", "1H", "PT-1S", "P1DT"):
        with pytest.raises(ValueError):
            parse_duration_ms(bad)


# -- persisted state ----------------------------------------------------------------------------------------


def test_snapshot_contents():
    sp = partition(state_epoch=2, leader_epoch=7)
    sp.acquire("m1", [(0, 9)], 100, 0)
    sp.acknowledge("m1", [(0, 1, [ACCEPT]), (2, 2, [RELEASE]), (3, 3, [REJECT]), (4, 5, [ACCEPT])])
    sp.acquire("m2", [(2, 2)], 100, 0)  # redelivered: count 2, held
    snap = sp.snapshot()
    assert (snap.state_epoch, snap.leader_epoch, snap.start_offset) == (2, 7, 2)
    # Offset 2 is held (acquisition is not persisted: stored as available after one delivery);
    # 3 archived, 4-5 acknowledged, 6-9 held after their first delivery (not persisted at all).
    assert snap.state_batches == (StateBatch(2, 2, 0, 1), StateBatch(3, 3, 4, 1), StateBatch(4, 5, 2, 1))
    assert snap.delivery_complete_count == 3
    write = APIS_BY_NAME["WriteShareGroupState"].request
    body = {"group_id": "group", "topics": [{"topic_id": TOPIC, "partitions": [snap.to_write_partition(0)]}]}
    decoded = write.decode(write.encode_bytes(body, 1), 1)
    part = decoded.topics[0].partitions[0]
    assert (part.start_offset, part.delivery_complete_count, part.leader_epoch) == (2, 3, 7)
    assert [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in part.state_batches] == \
        [(2, 2, 0, 1), (3, 3, 4, 1), (4, 5, 2, 1)]


def test_loading_a_snapshot_restores_delivery_state():
    sp = partition()
    sp.acquire("m1", [(0, 9)], 100, 0)
    sp.acknowledge("m1", [(0, 9, [ACCEPT, RELEASE, ACCEPT, REJECT, ACCEPT, ACCEPT, RELEASE, RELEASE, ACCEPT, ACCEPT])])
    snap = sp.snapshot()
    loaded = SharePartition.from_persisted("group", TOPIC, 0, start_offset=snap.start_offset,
                                           state_batches=snap.state_batches, delivery_count_limit=3,
                                           record_lock_duration_ms=LOCK_MS)
    assert loaded.start_offset == 1 and loaded.end_offset == 9
    for offset in range(1, 10):
        assert loaded.record_state(offset)[:2] == sp.record_state(offset)[:2]
    assert loaded.snapshot() == snap
    # Redelivery after recovery: the released records only, accepted ones never again.
    assert loaded.acquire("m9", [(0, 9)], 100, 0) == [AcquiredRecords(1, 1, 2), AcquiredRecords(6, 7, 2)]


def test_loading_acquired_state_and_gaps_between_batches():
    loaded = SharePartition.from_persisted("group", TOPIC, 0, start_offset=10, state_batches=[
        {"first_offset": 12, "last_offset": 13, "delivery_state": 2, "delivery_count": 1},
        {"first_offset": 15, "last_offset": 15, "delivery_state": 1, "delivery_count": 2},
    ])
    # 10, 11 and 14 were never delivered; 15 was persisted acquired and comes back available.
    assert loaded.start_offset == 10 and loaded.end_offset == 15
    assert loaded.record_state(11) == (RecordState.AVAILABLE, 0, "AAAAAAAAAAAAAAAAAAAAAA")
    assert loaded.record_state(15)[:2] == (RecordState.AVAILABLE, 2)
    assert loaded.acquire("m", [(10, 20)], 100, 0) == [
        AcquiredRecords(10, 11, 1), AcquiredRecords(14, 14, 1), AcquiredRecords(15, 15, 3), AcquiredRecords(16, 20, 1)]


def test_loading_an_empty_state():
    loaded = SharePartition.from_persisted("group", TOPIC, 0, start_offset=77, state_batches=[])
    assert (loaded.start_offset, loaded.next_fetch_offset(), loaded.in_flight_count()) == (77, 77, 0)
    assert loaded.snapshot().state_batches == ()



# -- read_committed: records of aborted transactions --------------------------------------------------


def _txn_batch(base: int, count: int, producer_id: int) -> bytes:
    from kafka_wire.record_codec import Record, build_batch

    return build_batch([Record(i, 0, None, b"v") for i in range(count)], base_offset=base, producer_id=producer_id,
                       producer_epoch=0, base_sequence=base, is_transactional=True)


def _marker(offset: int, producer_id: int, commit: bool) -> bytes:
    from kafka_wire.record_codec import build_control_batch

    return build_control_batch(commit, producer_id, 0, 0, base_offset=offset)


def test_aborted_batch_ranges_are_the_aborted_producers_data_up_to_its_marker():
    from coordinator.share_partition import aborted_batch_ranges
    from kafka_wire.record_codec import Record, build_batch

    # producer 7: 0-2 aborted (marker 3), then 5-6 committed (marker 7); producer 9: 4 aborted (marker 8);
    # a plain batch at 9.
    data = (_txn_batch(0, 3, 7) + _marker(3, 7, False) + _txn_batch(4, 1, 9) + _txn_batch(5, 2, 7)
            + _marker(7, 7, True) + _marker(8, 9, False) + build_batch([Record(0, 0, None, b"p")], base_offset=9))
    aborted = [{"producer_id": 7, "first_offset": 0}, {"producer_id": 9, "first_offset": 4}]
    assert aborted_batch_ranges(data, aborted) == [(0, 2), (4, 4)]
    assert aborted_batch_ranges(data, []) == []


def test_archive_aborted_archives_acquired_records_and_leaves_them_out():
    sp = SharePartition("g", TOPIC, 0, max_record_locks=100)
    acquired = sp.acquire("m1", [(0, 2), (3, 3), (4, 5)], 100, 0)
    assert acquired == [AcquiredRecords(0, 5, 1)]
    kept, update = sp.archive_aborted(acquired, [(0, 2)])
    assert kept == [AcquiredRecords(3, 5, 1)]
    # 0-2 are done (archived, delivered once as far as the state goes): the start offset moves past them.
    assert update is not None and update.start_offset == 3
    assert sp.record_state(3) == (RecordState.ACQUIRED, 1, "m1")
    assert sp.archive_aborted(kept, []) == (kept, None)
