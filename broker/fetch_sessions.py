"""Fetch sessions (KIP-227): the broker remembers a fetcher's partitions, so later fetches name only what changed.

Kafka's FetchManager, FetchSessionCache and FetchContext (server/.../FetchSession*.java), in their
order and with their numbers:

- A full fetch (epoch 0 or -1) closes the session it names. Epoch 0 then creates a session from
  the answer (`FullFetchContext`), when a cache shard has room or can evict; epoch -1 creates none
  (`SessionlessFetchContext`). Sessions start at epoch 1.
- An incremental fetch (any other epoch) must name a session (FETCH_SESSION_ID_NOT_FOUND) at its
  current epoch (INVALID_FETCH_SESSION_EPOCH), with topic ids from v13 exactly when the session was
  made with them (FETCH_SESSION_TOPIC_ID_ERROR). Its partitions add to or update the session's,
  forgotten_topics_data removes some; a session left empty is closed and the fetch answered
  sessionless. The answer carries only partitions with records, a changed high watermark or log
  start offset, or an error; partitions that returned records move to the end of the session.
- The cache: `max.incremental.fetch.session.cache.slots` split over 8 shards, a new session taking
  the next shard in turn. A full shard evicts its least recently used session when that has been
  idle over 120 s, else its least valuable evictable one when the new session is worth more:
  follower sessions (privileged) over consumers', then more partitions. A session is evictable by
  a consumer's once it was used more than 120 s after its creation; a consumer's session is
  evictable by a follower's at once.

Session ids are random and positive, in the id range of the shard that holds the session.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from dataclasses import dataclass, field

from kafka_wire.errors import ErrorCode

logger = logging.getLogger(__name__)

INVALID_SESSION_ID = 0
INITIAL_EPOCH, FINAL_EPOCH = 0, -1
TOPIC_IDS_VERSION = 13
SHARD_COUNT = 8  # KafkaBroker.NumFetchSessionCacheShards
MIN_EVICTION_MS = 120_000  # KafkaBroker.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
_INT32_MAX = (1 << 31) - 1
SESSION_ID_RANGE = _INT32_MAX // SHARD_COUNT
ZERO_UUID = uuid.UUID(int=0)
SLOTS_CONFIG, DEFAULT_SLOTS = "max.incremental.fetch.session.cache.slots", 1000


def next_epoch(epoch: int) -> int:
    """FetchMetadata.nextEpoch: -1 stays, the largest int wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _INT32_MAX else epoch + 1


def _has_records(answer: dict) -> bool:
    records = answer["records"]
    return records is not None and len(records) > 0


@dataclass(eq=False)
class CachedPartition:
    """One partition of a fetch: what the fetcher asked, and (in a session) what it was last told."""

    topic: str | None  # None: a topic id this broker does not know (v13+)
    topic_id: uuid.UUID  # ZERO_UUID in a session by names (before v13)
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1  # the fetcher's (a follower's) log start offset
    last_fetched_epoch: int = -1
    high_watermark: int = -1  # last answered
    local_log_start_offset: int = -1  # last answered

    @property
    def key(self) -> tuple:
        """Kafka's CachedPartition equality: by topic id when the session uses ids, else by name."""
        return (self.topic_id if self.topic_id != ZERO_UUID else self.topic, self.partition)

    def update_request(self, asked: CachedPartition) -> None:
        self.partition_max_bytes = asked.partition_max_bytes
        self.fetch_offset = asked.fetch_offset
        self.log_start_offset = asked.log_start_offset
        self.current_leader_epoch = asked.current_leader_epoch
        self.last_fetched_epoch = asked.last_fetched_epoch

    def must_respond(self, answer: dict, update: bool) -> bool:
        """CachedPartition.maybeUpdateResponseData: records, a changed high watermark or log start
        offset, a preferred read replica or an error put the partition in an incremental answer."""
        respond = _has_records(answer)
        if self.high_watermark != answer["high_watermark"]:
            respond = True
            if update:
                self.high_watermark = answer["high_watermark"]
        if self.local_log_start_offset != answer["log_start_offset"]:
            respond = True
            if update:
                self.local_log_start_offset = answer["log_start_offset"]
        if answer.get("preferred_read_replica", -1) >= 0:
            respond = True
        if answer["error_code"] != 0:
            # Cached as -1 so that the partition is answered again once the error is gone.
            if update:
                self.high_watermark = -1
            respond = True
        return respond


@dataclass(eq=False)
class FetchSession:
    id: int
    privileged: bool  # made by a follower
    partitions: dict  # CachedPartition.key -> CachedPartition, in answering order
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int
    # What the cache knew at the last touch (Kafka's cachedSize and evictable trees).
    cached_size: int = -1
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False

    def update(self, asked: list[CachedPartition], forgotten: list[tuple]) -> None:
        for part in asked:
            cached = self.partitions.get(part.key)
            if cached is None:
                self.partitions[part.key] = part
            else:
                cached.update_request(part)
        for key in forgotten:
            self.partitions.pop(key, None)


class FetchSessionCacheShard:
    """FetchSessionCacheShard: up to max_entries sessions, ids in [max(1, n * range), (n + 1) * range)."""

    def __init__(self, max_entries: int, eviction_ms: int, shard_num: int) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.shard_num = shard_num
        self.sessions: dict[int, FetchSession] = {}
        self.evictions = 0

    def new_session_id(self) -> int:
        low, high = max(1, self.shard_num * SESSION_ID_RANGE), (self.shard_num + 1) * SESSION_ID_RANGE
        while True:
            session_id = random.randrange(low, high)
            if session_id not in self.sessions and session_id != INVALID_SESSION_ID:
                return session_id

    def maybe_create_session(self, now: int, privileged: bool, partitions: dict, uses_topic_ids: bool) -> int:
        if len(self.sessions) < self.max_entries or self._try_evict(privileged, len(partitions), now):
            session = FetchSession(self.new_session_id(), privileged, partitions, uses_topic_ids,
                                   now, now, next_epoch(INITIAL_EPOCH))
            self.sessions[session.id] = session
            self.touch(session, now)
            logger.debug("Created fetch session %d (privileged=%s, %d partitions)", session.id, privileged, len(partitions))
            return session.id
        logger.debug("No fetch session created for privileged=%s, size=%d", privileged, len(partitions))
        return INVALID_SESSION_ID

    def _try_evict(self, privileged: bool, size: int, now: int) -> bool:
        if not self.sessions:
            return False
        stalest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now - stalest.last_used_ms > self.eviction_ms:
            self.remove(stalest.id)
            self.evictions += 1
            return True
        candidates = [s for s in self.sessions.values()
                      if (s.evictable_by_privileged if privileged else s.evictable_by_all)]
        if not candidates:
            return False
        weakest = min(candidates, key=lambda s: (s.privileged, s.cached_size, s.id))
        if (privileged, size, 0) < (weakest.privileged, weakest.cached_size, weakest.id):
            return False
        self.remove(weakest.id)
        self.evictions += 1
        return True

    def remove(self, session_id: int) -> FetchSession | None:
        return self.sessions.pop(session_id, None)

    def touch(self, session: FetchSession, now: int) -> None:
        session.last_used_ms = now
        session.cached_size = len(session.partitions)
        old = now - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = not session.privileged or old
        session.evictable_by_all = old


@dataclass
class FetchContext:
    """What FetchManager.newContext decided for one fetch: its partitions, and how to answer."""

    kind: str  # "error", "sessionless", "full" (may create a session) or "incremental"
    partitions: list[CachedPartition] = field(default_factory=list)
    error: ErrorCode = ErrorCode.NONE
    session: FetchSession | None = None
    request_epoch: int = 0
    privileged: bool = False
    uses_topic_ids: bool = False


class FetchSessionCache:
    """The broker's fetch sessions (FetchManager over FetchSessionCache's shards)."""

    def __init__(self, slots: int = DEFAULT_SLOTS, eviction_ms: int = MIN_EVICTION_MS, clock=None) -> None:
        self.shards = [FetchSessionCacheShard(slots // SHARD_COUNT, eviction_ms, n) for n in range(SHARD_COUNT)]
        self._next_shard = 0
        self._clock = clock or (lambda: int(time.monotonic() * 1000))
        self.incremental_fetches = 0  # served in a session: what the broker's metrics show

    @classmethod
    def from_config(cls, config) -> FetchSessionCache:
        """The cache a broker's properties ask for. Read from the properties as given: the setting
        is static in Kafka, and broker/config.py does not describe it (yet)."""
        return cls(int(config.original.get(SLOTS_CONFIG, DEFAULT_SLOTS)))

    def __len__(self) -> int:
        return sum(len(shard.sessions) for shard in self.shards)

    def partitions_cached(self) -> int:
        return sum(len(session.partitions) for shard in self.shards for session in shard.sessions.values())

    def _shard_of(self, session_id: int) -> FetchSessionCacheShard | None:
        index = int(session_id / SESSION_ID_RANGE)  # Java's division truncates toward zero
        return self.shards[index] if 0 <= index < SHARD_COUNT else None

    def get(self, session_id: int) -> FetchSession | None:
        shard = self._shard_of(session_id)
        return shard.sessions.get(session_id) if shard is not None else None

    def new_context(self, version: int, session_id: int, epoch: int, from_follower: bool,
                    asked: list[CachedPartition], forgotten: list[tuple]) -> FetchContext:
        """FetchManager.newContext."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                shard = self._shard_of(session_id)
                if shard is not None and shard.remove(session_id) is not None:
                    logger.debug("Removed fetch session %d (a full fetch named it)", session_id)
            if epoch == FINAL_EPOCH:
                return FetchContext("sessionless", asked)
            return FetchContext("full", asked, privileged=from_follower, uses_topic_ids=version >= TOPIC_IDS_VERSION)
        shard = self._shard_of(session_id)
        session = shard.sessions.get(session_id) if shard is not None else None
        if session is None:
            return FetchContext("error", error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            logger.debug("Fetch session %d expected epoch %d, got %d", session_id, session.epoch, epoch)
            return FetchContext("error", error=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != (version >= TOPIC_IDS_VERSION):
            return FetchContext("error", error=ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(asked, forgotten)
        if not session.partitions:
            shard.remove(session.id)
            return FetchContext("sessionless", asked)
        shard.touch(session, self._clock())
        session.epoch = next_epoch(session.epoch)
        self.incremental_fetches += 1
        return FetchContext("incremental", list(session.partitions.values()), session=session, request_epoch=epoch)

    def respond(self, context: FetchContext, answers: list[tuple[CachedPartition, dict]]):
        """(error, session id, the answered partitions) for the answers read for context.partitions
        (FetchContext.updateAndGenerateResponseData)."""
        if context.kind == "error":
            return context.error, INVALID_SESSION_ID, []
        if context.kind == "sessionless":
            return ErrorCode.NONE, INVALID_SESSION_ID, answers
        if context.kind == "full":
            shard = self.shards[self._next_shard % SHARD_COUNT]
            self._next_shard += 1
            partitions = {}
            for part, answer in answers:
                part.high_watermark = answer["high_watermark"]
                part.local_log_start_offset = answer["log_start_offset"]
                partitions[part.key] = part
            session_id = shard.maybe_create_session(self._clock(), context.privileged, partitions,
                                                    context.uses_topic_ids)
            return ErrorCode.NONE, session_id, answers
        session = context.session
        if session.epoch != next_epoch(context.request_epoch):
            # Another fetch in this session went first (a duplicate request).
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id, []
        kept = []
        for part, answer in answers:
            cached = session.partitions.get(part.key)
            if cached is not None and cached.must_respond(answer, True):
                kept.append((part, answer))
                if _has_records(answer):
                    # Round robin: a partition that returned data goes behind the others.
                    session.partitions[part.key] = session.partitions.pop(part.key)
        return ErrorCode.NONE, session.id, kept

    def throttled(self, context: FetchContext) -> tuple[ErrorCode, int]:
        """(error, session id) of an empty throttled answer (FetchContext.getThrottledResponse):
        a full fetch creates no session then."""
        if context.kind != "incremental":
            return ErrorCode.NONE, INVALID_SESSION_ID
        session = context.session
        if session.epoch != next_epoch(context.request_epoch):
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id
        return ErrorCode.NONE, session.id
