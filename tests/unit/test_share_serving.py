"""The sans-io parts of serving share groups: share sessions (coordinator/share_sessions.py), the
persisted share-partition state (coordinator/share_state.py), share group replay from
__consumer_offsets (ShareGroupCoordinator.replay) and batch ranges of fetched bytes."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from broker.share_groups import batch_ranges
from coordinator.offsets_store import java_string_hashcode
from coordinator.share_group import ShareGroupCoordinator
from coordinator.share_partition import AcknowledgeType, RecordState, SharePartition, StateBatch
from coordinator.share_sessions import MAX_EPOCH, ShareSessionCache, ShareSessionError, next_epoch
from coordinator.share_state import (
    PersistedShareState,
    coordinator_key,
    merge_batches,
    snapshot_record,
    state_partition_for,
    update_record,
)
from kafka_wire import internal_records as ir
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch

T1 = uuid.UUID("6f1d2c3b-0000-4000-8000-000000000001")

# -- share sessions -------------------------------------------------------------------------------------


def test_session_opens_at_epoch_0_and_then_wants_each_next_epoch():
    cache = ShareSessionCache()
    ctx = cache.fetch_context("g", "m", 0, [(T1, 0)], [], False)
    assert ctx.full and ctx.partitions == [(T1, 0)]
    ctx = cache.fetch_context("g", "m", 1, [(T1, 1)], [], True)
    assert not ctx.full and ctx.partitions == [(T1, 0), (T1, 1)]
    with pytest.raises(ShareSessionError) as e:
        cache.fetch_context("g", "m", 1, [], [], False)
    assert e.value.error == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    ctx = cache.fetch_context("g", "m", 2, [], [(T1, 0)], False)
    assert ctx.partitions == [(T1, 1)]
    assert not cache.acknowledge_context("g", "m", 3)
    assert cache.fetch_context("g", "m", 4, [], [], False).partitions == [(T1, 1)]


def test_session_errors():
    cache = ShareSessionCache(max_sessions=1)
    with pytest.raises(ShareSessionError) as e:
        cache.fetch_context("g", "m", 3, [], [], False)
    assert e.value.error == ErrorCode.SHARE_SESSION_NOT_FOUND
    with pytest.raises(ShareSessionError) as e:
        cache.fetch_context("g", "m", 0, [(T1, 0)], [], True)  # acknowledgements cannot open a session
    assert e.value.error == ErrorCode.INVALID_REQUEST
    cache.fetch_context("g", "m", 0, [(T1, 0)], [], False)
    with pytest.raises(ShareSessionError) as e:
        cache.fetch_context("g", "other", 0, [(T1, 0)], [], False)
    assert e.value.error == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    with pytest.raises(ShareSessionError) as e:
        cache.acknowledge_context("g", "m", 0)
    assert e.value.error == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    with pytest.raises(ShareSessionError) as e:
        cache.fetch_context("g", "m", -1, [(T1, 0)], [], False)  # a final fetch names no partitions
    assert e.value.error == ErrorCode.INVALID_REQUEST


def test_final_epoch_closes_the_session():
    cache = ShareSessionCache()
    cache.fetch_context("g", "m", 0, [(T1, 0)], [], False)
    ctx = cache.fetch_context("g", "m", -1, [], [], True)
    assert ctx.final
    with pytest.raises(ShareSessionError) as e:
        cache.fetch_context("g", "m", -1, [], [], False)
    assert e.value.error == ErrorCode.SHARE_SESSION_NOT_FOUND
    cache.fetch_context("g", "m", 0, [(T1, 0)], [], False)
    assert cache.acknowledge_context("g", "m", -1)
    assert ("g", "m") not in cache.sessions


def test_epochs_wrap_to_1():
    assert next_epoch(0) == 1 and next_epoch(MAX_EPOCH) == 1 and next_epoch(-1) == -1


# -- persisted state ------------------------------------------------------------------------------------


def test_state_partition_is_kafkas_hash_of_the_coordinator_key():
    key = coordinator_key("g", T1, 3)
    assert key == "g:bx0sOwAAQACAAAAAAAAAAQ:3"
    assert state_partition_for("g", T1, 3, 50) == abs(java_string_hashcode(key)) % 50


def test_merge_lays_new_batches_over_old_and_cuts_below_the_start():
    old = [StateBatch(0, 9, 0, 1)]
    merged = merge_batches(old, [StateBatch(3, 5, 2, 1)], 2)
    assert merged == [StateBatch(2, 2, 0, 1), StateBatch(3, 5, 2, 1), StateBatch(6, 9, 0, 1)]


def _decoded(record):
    return ir.decode_share_state_record(*record)


def test_snapshot_then_updates_fold_to_the_partition_state():
    sp = SharePartition("g", T1, 0, start_offset=0)
    sp.acquire("m", [(0, 9)], 100, now_ms=0)
    state = PersistedShareState()
    state.apply(*_decoded(snapshot_record("g", T1, 0, sp.snapshot(), 0, 5))[0::2])
    update = sp.acknowledge("m", [(0, 3, [AcknowledgeType.ACCEPT]), (5, 5, [AcknowledgeType.REJECT])])
    record_type, key, value = _decoded(update_record("g", T1, 0, update, 0))
    assert (key.group_id, key.topic_id, key.partition) == ("g", T1, 0)
    state.apply(record_type, value)
    assert state.found and state.start_offset == 4 and state.updates_since_snapshot == 1
    assert state.batches == [StateBatch(5, 5, int(RecordState.ARCHIVED), 1)]
    # Loaded again: 4 and 6..9 were delivered once and are available again; 0..3 never come back.
    loaded = SharePartition.from_persisted("g", T1, 0, start_offset=state.start_offset, state_batches=state.batches)
    assert loaded.start_offset == 4
    got = loaded.acquire("m2", [(0, 9)], 100, now_ms=0)
    assert [(a.first_offset, a.last_offset) for a in got] == [(4, 4), (6, 9)]


def test_an_update_before_any_snapshot_is_ignored_and_a_tombstone_clears():
    state = PersistedShareState()
    update = SharePartition("g", T1, 0).snapshot()
    state.apply(*_decoded(update_record("g", T1, 0, update, 0))[0::2])
    assert not state.found
    state.apply(*_decoded(snapshot_record("g", T1, 0, update, 0, 1))[0::2])
    assert state.found
    state.apply(ir.SHARE_SNAPSHOT, None)
    assert not state.found


# -- share group replay -----------------------------------------------------------------------------------


def test_share_group_membership_replays_from_its_records():
    topics = {"t": (T1, 2)}
    live = ShareGroupCoordinator(lambda name: topics.get(name), assignment_interval_ms=0)
    request = SimpleNamespace(group_id="g", member_id="m1", member_epoch=0, rack_id=None,
                              subscribed_topic_names=["t"])
    records = live.heartbeat(request, 1000, client_id="c", client_host="/h").records
    records += live.heartbeat(SimpleNamespace(**{**vars(request), "member_id": "m2"}), 1001).records
    replayed = ShareGroupCoordinator(lambda name: topics.get(name), assignment_interval_ms=0)
    for key, value in records:
        replayed.replay(*ir.decode_share_group_record(key, value), 5000)
    replayed.loaded()
    before, after = live.groups["g"], replayed.groups["g"]
    assert (after.group_epoch, after.assignment_epoch) == (before.group_epoch, before.assignment_epoch)
    assert after.target_assignment == before.target_assignment
    assert {m: (v.member_epoch, v.assigned_partitions, v.client_id) for m, v in after.members.items()} == \
        {m: (v.member_epoch, v.assigned_partitions, v.client_id) for m, v in before.members.items()}
    # A replayed member's heartbeat is answered as the coordinator that wrote the records answers it.
    beat = SimpleNamespace(group_id="g", member_id="m1", member_epoch=before.members["m1"].member_epoch,
                           rack_id=None, subscribed_topic_names=None)
    again = replayed.heartbeat(beat, 6000, client_id="c", client_host="/h")
    assert again.response["error_code"] == 0
    assert again.response == live.heartbeat(beat, 6000, client_id="c", client_host="/h").response
    # Tombstones of a member that left remove it.
    leave = live.heartbeat(SimpleNamespace(group_id="g", member_id="m2", member_epoch=-1, rack_id=None,
                                           subscribed_topic_names=None), 7000).records
    for key, value in leave:
        replayed.replay(*ir.decode_share_group_record(key, value), 7000)
    assert set(replayed.groups["g"].members) == {"m1"}


# -- fetched bytes ----------------------------------------------------------------------------------------


def test_batch_ranges_of_fetched_bytes():
    one = bytearray(build_batch([Record(i, 0, None, b"x") for i in range(3)], base_timestamp=0))
    two = bytearray(build_batch([Record(0, 0, None, b"y")], base_timestamp=0))
    two[0:8] = (3).to_bytes(8, "big")
    data = bytes(one) + bytes(two)
    assert batch_ranges(data) == [(0, 2), (3, 3)]
    assert batch_ranges(data[:-1]) == [(0, 2)]  # a partial batch at the end is left out


def test_share_version_is_supported_by_every_broker():
    # Single nodes and cluster brokers, of one worker process or several (broker/share_groups.py).
    from broker.features import SHARE_VERSION, bootstrap_levels, supported_features

    assert supported_features()[SHARE_VERSION] == (0, 1)
    assert bootstrap_levels(supported_features())[SHARE_VERSION] == 1


# -- a state write that fails ----------------------------------------------------------------------------


def test_a_failed_state_write_drops_the_share_partition_so_a_retried_acknowledgement_is_not_accepted():
    """An acknowledgement whose write fails (its share coordinator killed, 5 s of retries) is
    answered with the error; kept in memory, the records would stay ACKNOWLEDGED there and the
    client's retry would be answered NONE with nothing stored (seen in the cluster kill test: 20
    records confirmed, then delivered again by the next leader)."""
    import asyncio

    from broker.share_coordinator import ShareStateError
    from broker.share_groups import ShareGroups
    from coordinator.share_partition import ShareAcknowledgeError

    class FailingPersister:
        def __init__(self):
            self.writes = 0

        async def write(self, *args, **kwargs):
            self.writes += 1
            raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE)

    service = ShareGroups.__new__(ShareGroups)
    service.persister = FailingPersister()
    service._state_turns = {}
    sp = SharePartition("g", T1, 0)
    key = ("g", T1, 0)
    service.partitions = {key: sp}
    sp.acquire("m", [(0, 9)], max_records=100, now_ms=0)
    update = sp.acknowledge("m", [(0, 9, [int(AcknowledgeType.ACCEPT)])], 1)
    with pytest.raises(ShareStateError):
        asyncio.run(service.persist(sp, update))
    assert key not in service.partitions and sp.discarded
    # A request still holding the dropped copy writes nothing.
    with pytest.raises(ShareStateError):
        asyncio.run(service.persist(sp, sp.snapshot()))
    assert service.persister.writes == 1
    # Loaded again from what is stored (nothing acknowledged), the retried acknowledgement is refused.
    fresh = SharePartition("g", T1, 0)
    with pytest.raises(ShareAcknowledgeError) as refused:
        fresh.acknowledge("m", [(0, 9, [int(AcknowledgeType.ACCEPT)])], 2)
    assert refused.value.error == ErrorCode.INVALID_RECORD_STATE


def test_an_acknowledgement_finding_its_records_done_by_a_write_in_flight_is_refused():
    """The same acknowledgement sent twice (a client's retry while the first still waits on its
    share coordinator): the second finds its records done in memory (the start offset moved past
    them) and is refused at once, INVALID_RECORD_STATE, as Kafka refuses a batch no longer in its
    cache. Answered NONE, the records would count as accepted with nothing stored when the
    first's write failed, and the next leader would deliver them again."""
    import asyncio

    from broker.share_coordinator import ShareStateError
    from broker.share_groups import ShareGroups, now_ms

    class SlowFailingPersister:
        def __init__(self):
            self.release = None
            self.writes = 0

        async def write(self, *args, **kwargs):
            self.writes += 1
            await self.release.wait()
            raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE)

    async def leading(parts):
        return [(ErrorCode.NONE, 0) for _ in parts]

    async def scenario():
        service = ShareGroups.__new__(ShareGroups)
        service.persister = SlowFailingPersister()
        service._state_turns = {}
        service.persister.release = asyncio.Event()
        service._leaderships = leading
        service.records_released = lambda: None
        sp = SharePartition("g", T1, 0)
        sp.loaded_leader_epoch = 0
        service.partitions = {("g", T1, 0): sp}
        sp.acquire("m", [(0, 9)], max_records=100, now_ms=now_ms())  # locked for the next 30 s
        batch = SimpleNamespace(first_offset=0, last_offset=9, acknowledge_types=[int(AcknowledgeType.ACCEPT)])
        first = asyncio.ensure_future(service.acknowledge("g", "m", "t", T1, 0, [batch]))
        for _ in range(100):
            if service.persister.writes:
                break
            await asyncio.sleep(0)
        assert service.persister.writes == 1 and sp.start_offset == 10  # done in memory, not yet stored
        second = await service.acknowledge("g", "m", "t", T1, 0, [batch])
        service.persister.release.set()
        return await first, second

    (first_error, _), (second_error, _) = asyncio.run(scenario())
    assert first_error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert second_error == ErrorCode.INVALID_RECORD_STATE


def _service_over(write_once, read=None):
    """ShareGroups leading partition 0 of T1 in leader epoch 0 (as far as it asks), with a real
    SharePersister whose requests to the share coordinator are `write_once` (and `read`)."""
    from broker.share_coordinator import SharePersister
    from broker.share_groups import ShareGroups

    async def leading(parts):
        return [(ErrorCode.NONE, 0) for _ in parts]

    persister = SharePersister.__new__(SharePersister)
    persister._write_once = write_once
    if read is not None:
        persister._read_once = read
    service = ShareGroups.__new__(ShareGroups)
    service.persister = persister
    service._state_turns = {}
    service._leaderships = leading
    service.records_released = lambda: None
    service.partitions = {}
    return service


def test_state_writes_reach_the_share_coordinator_in_the_order_they_were_made():
    """A lock timeout's write (records 5-9 AVAILABLE again) meets a share coordinator that is
    moving and is retried; meanwhile the records go to another member, which accepts them, and
    that write meets the share coordinator back. Each write holds only the records it changed: the
    timeout's, stored after the acceptance, put 5-9 back to AVAILABLE under an acceptance answered
    NONE, and the next leader to load the state delivered them again (the cluster kill test's
    'accepted twice', c2's confirmed acceptance of one producer tick delivered to c0 after a kill
    of the share coordinator). Stored in the order made, the acceptance stands."""
    import asyncio

    from broker.share_coordinator import ShareStateError, _as_value
    from broker.share_groups import now_ms

    stored = PersistedShareState(found=True, start_offset=0)
    landed = []
    coordinator_up = asyncio.Event()
    attempts = []

    async def write_once(group_id, topic_id, partition, update, *, snapshot=False):
        attempts.append(update)
        if not coordinator_up.is_set():
            raise ShareStateError(ErrorCode.NOT_COORDINATOR)  # its state partition's leader moved
        landed.append(update)
        stored.apply(ir.SHARE_UPDATE, _as_value(update, stored.snapshot_epoch))

    async def scenario():
        service = _service_over(write_once)
        sp = SharePartition("g", T1, 0)
        sp.loaded_leader_epoch = 0
        service.partitions[("g", T1, 0)] = sp
        now = now_ms()
        sp.acquire("m0", [(0, 4)], max_records=5, now_ms=now)  # locked for the next 30 s
        sp.acquire("m1", [(5, 9)], max_records=5, now_ms=now - 60_000)  # its lock ran out
        timeout = asyncio.ensure_future(service.persist(sp, sp.expire_locks(now)))
        while not attempts:
            await asyncio.sleep(0)
        coordinator_up.set()  # the timeout's write waits for its retry (0.1 s)
        again = sp.acquire("m2", [(5, 9)], max_records=5, now_ms=now)
        assert [(a.first_offset, a.last_offset) for a in again] == [(5, 9)]
        batch = SimpleNamespace(first_offset=5, last_offset=9, acknowledge_types=[int(AcknowledgeType.ACCEPT)])
        accepted = await service.acknowledge("g", "m2", "t", T1, 0, [batch])
        await timeout
        return accepted

    error, _ = asyncio.run(scenario())
    assert error == ErrorCode.NONE
    assert len(landed) == 2
    # What the next leader loads: 5-9 done, not delivered again.
    loaded = SharePartition.from_persisted("g", T1, 0, start_offset=stored.start_offset, state_batches=stored.batches)
    assert [loaded.record_state(o)[0] for o in range(5, 10)] == [RecordState.ACKNOWLEDGED] * 5


def test_a_share_partition_loaded_again_reads_its_state_after_the_writes_made_before():
    """An acceptance's write is retried while the share coordinator moves; meanwhile the copy that
    made it is dropped (the group's last share session at this broker closed) and the next fetch
    loads the share-partition again. Read before that write landed, the new copy would hold 0-9
    available while the acceptance is answered NONE, and deliver them again: the load waits for
    the writes made before it."""
    import asyncio

    from broker.share_coordinator import ShareStateError, _as_value
    from broker.share_groups import now_ms
    from coordinator.share_sessions import ShareSessionCache

    stored = PersistedShareState(found=True, start_offset=0)
    coordinator_up = asyncio.Event()
    attempts = []

    async def write_once(group_id, topic_id, partition, update, *, snapshot=False):
        attempts.append(update)
        if not coordinator_up.is_set():
            raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        stored.apply(ir.SHARE_UPDATE, _as_value(update, stored.snapshot_epoch))

    async def read_once(group_id, topic_id, partition, leader_epoch=-1):
        return PersistedShareState(**{**stored.__dict__, "batches": list(stored.batches)})

    settings = {"share.record.lock.duration.ms": 30000, "share.delivery.count.limit": 5,
                "share.partition.max.record.locks": 2000, "share.renew.acknowledge.enable": True}

    async def scenario():
        service = _service_over(write_once, read_once)
        service.group_config = lambda group_id, name: settings[name]
        service.in_cluster = lambda: True
        service.sessions = ShareSessionCache()
        sp = SharePartition("g", T1, 0)
        sp.loaded_leader_epoch = 0
        service.partitions[("g", T1, 0)] = sp
        sp.acquire("m", [(0, 9)], max_records=10, now_ms=now_ms())  # locked for the next 30 s
        batch = SimpleNamespace(first_offset=0, last_offset=9, acknowledge_types=[int(AcknowledgeType.ACCEPT)])
        accepted = asyncio.ensure_future(service.acknowledge("g", "m", "t", T1, 0, [batch]))
        while not attempts:
            await asyncio.sleep(0)
        service.forget_idle_group("g")  # nothing locked any more: dropped
        assert ("g", T1, 0) not in service.partitions
        loading = asyncio.ensure_future(service.share_partition("g", "t", T1, 0))
        coordinator_up.set()  # the acceptance's write lands at its retry (0.1 s)
        return await accepted, await loading

    (error, _), loaded = asyncio.run(scenario())
    assert error == ErrorCode.NONE
    assert loaded.start_offset == 10 and loaded.next_fetch_offset() == 10


def test_a_share_partition_loaded_while_its_leader_epoch_moved_on_is_not_served():
    """A fetch loads the share-partition in leader epoch 2; its share coordinator is away, and
    before the read answers the partition's leader epoch becomes 3 (the controller took a dead
    broker out of the ISR) and another member's fetch asks for it. Served, the epoch-2 copy and the
    epoch-3 copy, both read from the same state, handed the same records to two members (the
    cluster kill test: 780 records delivered to c1 and c2 at once, both acceptances confirmed).
    Both requests get the one copy of epoch 3."""
    import asyncio

    from coordinator.share_sessions import ShareSessionCache

    epoch = {"now": 2}
    reads = []
    coordinator_back = asyncio.Event()

    async def leading(parts):
        return [(ErrorCode.NONE, epoch["now"]) for _ in parts]

    async def read_once(group_id, topic_id, partition, leader_epoch=-1):
        reads.append(leader_epoch)
        await coordinator_back.wait()
        return PersistedShareState(found=True, start_offset=2700, leader_epoch=leader_epoch)

    async def write_once(*args, **kwargs):
        raise AssertionError("nothing is written")

    settings = {"share.record.lock.duration.ms": 30000, "share.delivery.count.limit": 5,
                "share.partition.max.record.locks": 2000, "share.renew.acknowledge.enable": True}

    async def scenario():
        service = _service_over(write_once, read_once)
        service._leaderships = leading
        service.group_config = lambda group_id, name: settings[name]
        service.sessions = ShareSessionCache()
        first = asyncio.ensure_future(service.share_partition("g", "t", T1, 0))
        while not reads:
            await asyncio.sleep(0)
        epoch["now"] = 3
        second = asyncio.ensure_future(service.share_partition("g", "t", T1, 0))
        await asyncio.sleep(0.01)
        coordinator_back.set()
        return await first, await second

    first, second = asyncio.run(scenario())
    assert first is second and first.loaded_leader_epoch == 3 and not first.discarded
    assert reads == [2, 3]


@pytest.mark.parametrize("stored_error, heard", [
    (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.FENCED_STATE_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_NOT_AVAILABLE),
])
def test_an_acknowledgement_whose_state_write_fails_is_answered_with_kafkas_error(stored_error, heard):
    """A share coordinator that moved away answers NOT_COORDINATOR; a share consumer hears what
    Kafka's SharePartition makes of it (COORDINATOR_NOT_AVAILABLE; a fenced write:
    NOT_LEADER_OR_FOLLOWER). librdkafka's share consumer surfaces NOT_COORDINATOR in a ShareFetch
    partition as an unexpected error (seen under partition-zk-minority x share: every consumer of
    the faults harness stopped on it)."""
    import asyncio

    from broker.share_coordinator import ShareStateError
    from broker.share_groups import ShareGroups

    class RefusingPersister:
        async def write(self, *args, **kwargs):
            raise ShareStateError(stored_error)

    service = ShareGroups.__new__(ShareGroups)
    service.persister = RefusingPersister()
    service._state_turns = {}

    async def leading(parts):  # this broker leads the partition, in leader epoch 0
        return [(ErrorCode.NONE, 0) for _ in parts]

    service._leaderships = leading
    sp = SharePartition("g", T1, 0)
    sp.loaded_leader_epoch = 0
    service.partitions = {("g", T1, 0): sp}
    sp.acquire("m", [(0, 9)], max_records=100, now_ms=0)
    batch = SimpleNamespace(first_offset=0, last_offset=9, acknowledge_types=[int(AcknowledgeType.ACCEPT)])
    error, _ = asyncio.run(service.acknowledge("g", "m", "t", T1, 0, [batch]))
    assert error == heard
    assert ("g", T1, 0) not in service.partitions  # loaded again from the stored state next time


def test_a_share_fetch_of_a_partition_without_a_leader_hears_not_leader_or_follower():
    """A cluster broker's replica manager answers LEADER_NOT_AVAILABLE for a partition with no
    leader (its leader cut from ZooKeeper); a share-partition's leadership check passes on what
    Kafka's ReplicaManager answers a share fetch there, NOT_LEADER_OR_FOLLOWER (librdkafka's share
    consumer raised LEADER_NOT_AVAILABLE to the application under partition-random-halves x share)."""
    from broker.share_groups import local_leadership

    for found, heard in ((ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_LEADER_OR_FOLLOWER),
                         (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_LEADER_OR_FOLLOWER),
                         (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                         (ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.KAFKA_STORAGE_ERROR)):
        broker = SimpleNamespace(leadership=SimpleNamespace(leadership_error=lambda topic, partition, e=found: e))
        assert local_leadership(broker, "t", 0) == (int(heard), -1)
