"""The fetch session cache (broker/fetch_sessions.py) as Kafka's FetchManager and FetchSessionCacheShard
behave: shards taken in turn, eviction by staleness, privilege and size, epochs, topic ids."""

from __future__ import annotations

import uuid

from broker.fetch_sessions import (
    SESSION_ID_RANGE, SHARD_COUNT, ZERO_UUID, CachedPartition, FetchSessionCache, next_epoch,
)
from kafka_wire.errors import ErrorCode


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def _parts(count: int, topic: str = "t", topic_id=ZERO_UUID) -> list[CachedPartition]:
    return [CachedPartition(topic, topic_id, p, 0, 1 << 20) for p in range(count)]


def _answer(part: CachedPartition, *, records=b"", high_watermark=0, error=0) -> dict:
    return {"partition_index": part.partition, "error_code": error, "high_watermark": high_watermark,
            "last_stable_offset": high_watermark, "log_start_offset": 0, "preferred_read_replica": -1,
            "records": records}


def _create(cache: FetchSessionCache, size: int, *, follower: bool = False, version: int = 12) -> int:
    context = cache.new_context(version, 0, 0, follower, _parts(size), [])
    error, session_id, _ = cache.respond(context, [(p, _answer(p)) for p in context.partitions])
    assert error == ErrorCode.NONE
    return session_id


def _fill(cache: FetchSessionCache, size: int, *, follower: bool = False) -> list[int]:
    """One session in every shard (shards are taken in turn)."""
    return [_create(cache, size, follower=follower) for _ in range(SHARD_COUNT)]


def test_epochs_wrap_and_final_stays():
    assert (next_epoch(0), next_epoch(5), next_epoch((1 << 31) - 1), next_epoch(-1)) == (1, 6, 1, -1)


def test_sessions_go_to_the_shards_in_turn_with_ids_in_their_ranges():
    cache = FetchSessionCache(slots=16)
    ids = _fill(cache, 1)
    assert [i // SESSION_ID_RANGE for i in ids] == list(range(SHARD_COUNT))
    assert len(cache) == SHARD_COUNT and all(cache.get(i).epoch == 1 for i in ids)


def test_fewer_slots_than_shards_make_no_session():
    """Kafka 4.3 gives each of its 8 shards slots / 8 sessions: below 8 slots none at all."""
    cache = FetchSessionCache(slots=7)
    assert _fill(cache, 3) == [0] * SHARD_COUNT


def test_a_full_shard_evicts_a_stale_session_first():
    clock = Clock()
    cache = FetchSessionCache(slots=SHARD_COUNT, clock=clock)
    old = _fill(cache, 5)
    clock.now += 60_000
    assert _create(cache, 1) == 0  # nothing stale yet, and a smaller session is worth less
    clock.now += 60_001
    assert _create(cache, 1) > 0
    assert sum(cache.get(i) is None for i in old) == 1


def test_a_bigger_session_evicts_a_smaller_one_only_once_that_is_old_enough():
    """A consumer's session may evict one touched more than 120 s after its creation, when it has
    more partitions (an equal size never wins: the new key's id is 0)."""
    clock = Clock()
    cache = FetchSessionCache(slots=SHARD_COUNT, clock=clock)
    small = _fill(cache, 2)
    assert _create(cache, 3) == 0  # young sessions are not evictable by consumers
    clock.now += 121_000
    for epoch_session in small:  # a fetch in each: used after 120 s, so evictable by all
        context = cache.new_context(12, epoch_session, 1, False, [], [])
        cache.respond(context, [])
    assert [_create(cache, 2) for _ in range(SHARD_COUNT)] == [0] * SHARD_COUNT
    assert all(i > 0 for i in [_create(cache, 3) for _ in range(SHARD_COUNT)])
    assert all(cache.get(i) is None for i in small)


def test_a_follower_session_evicts_a_consumer_session_at_once():
    cache = FetchSessionCache(slots=SHARD_COUNT, clock=Clock())
    consumers = _fill(cache, 10)
    assert _create(cache, 1, follower=True) > 0
    assert sum(cache.get(i) is None for i in consumers) == 1
    followers = [_create(cache, 1, follower=True) for _ in range(SHARD_COUNT - 1)]
    assert all(followers) and all(cache.get(i) is None for i in consumers)
    assert _create(cache, 50) == 0 and _create(cache, 1, follower=True) == 0


def test_incremental_answers_move_partitions_with_records_to_the_end():
    cache = FetchSessionCache()
    session_id = _create(cache, 3)
    context = cache.new_context(12, session_id, 1, False, [], [])
    parts = context.partitions
    answers = [(parts[0], _answer(parts[0], records=b"x" * 10, high_watermark=3)), (parts[1], _answer(parts[1])),
               (parts[2], _answer(parts[2], error=int(ErrorCode.NOT_LEADER_OR_FOLLOWER), high_watermark=-1))]
    error, answered_id, kept = cache.respond(context, answers)
    assert (error, answered_id) == (ErrorCode.NONE, session_id)
    assert [p.partition for p, _ in kept] == [0, 2]
    assert [p.partition for p in cache.get(session_id).partitions.values()] == [1, 2, 0]


def test_sessions_by_topic_id_forget_by_id():
    topic_id = uuid.uuid4()
    cache = FetchSessionCache()
    context = cache.new_context(13, 0, 0, False, _parts(2, topic_id=topic_id), [])
    _, session_id, _ = cache.respond(context, [(p, _answer(p)) for p in context.partitions])
    assert cache.new_context(12, session_id, 1, False, [], []).error == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    context = cache.new_context(13, session_id, 1, False, [], [(topic_id, 0)])
    assert [(p.topic_id, p.partition) for p in context.partitions] == [(topic_id, 1)]
