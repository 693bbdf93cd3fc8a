"""Share groups (KIP-932) served by this broker: membership, share sessions, the share-partitions'
record locks and their durable state.

Where it runs: at the group coordinator's worker, worker 0 (with one worker, the broker itself).
Requests for share groups (ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge and
the share group offset APIs) are handed there whole, as every group request is
(broker/workers/routing.py); that worker holds every share group's members, share sessions and
share-partitions (coordinator/share_partition.py), and reads a partition another worker owns
through the `read`/`wait` calls Fetch uses (broker/workers/fetch.py). This is the simplest design
that is correct with several workers: all share state lives in one event loop, so acquiring,
acknowledging and lock expiry never race; the cost is that share consumption of other workers'
partitions passes its record bytes through worker 0.

Persistence, as Kafka's group and share coordinators keep it:
- membership: the share group records (types 10-15) in `__consumer_offsets`, replayed on first use
  after a restart (members then have a fresh session timeout to heartbeat again);
- share-partition state: through the share coordinator (broker/share_coordinator.py, which also
  serves Kafka's inter-broker state APIs 83-87), as ShareSnapshot / ShareUpdate records in
  `__share_group_state` (created with Kafka's settings on first use,
  share.coordinator.state.topic.num.partitions partitions), written before an acknowledgement is
  answered and read back when the share-partition is first used, so an accepted record is never
  delivered again and an unacknowledged one is redelivered.

In a ZooKeeper-mode cluster, as Kafka 4.3 splits the work: a share group is served by its group
coordinator, the leader of its __consumer_offsets partition, which replays that partition's share
group records when it becomes its leader and drops them when it stops (`_sync_cluster_groups`,
`group_error`: NOT_COORDINATOR elsewhere); a share-partition lives at its data partition's leader
(`share_partition`: NOT_LEADER_OR_FOLLOWER elsewhere), loaded from its share coordinator in the
leader epoch it serves and loaded again in a new one, so a leader that lost the partition and got
it back does not act on stale state; the group coordinator reaches share-partition state only
through the share coordinators (`share_group_summaries`, `reset_start_offset`).

A cluster's broker of several workers keeps the same split inside: worker 0 leads the internal
partitions, so it is the group coordinator and the share coordinator, and it holds the
share-partitions of every partition this broker leads, whichever worker owns it. Whether this
broker leads a partition, and in which leader epoch, is the owner's replica manager's answer
(`share_leadership` call, `_leaderships`), asked whenever a share-partition is used and on every
tick for those loaded, so a leadership change at another worker unloads or reloads the
share-partition here as one at worker 0 does.

Lock expiry runs on a timer of the event loop (`_tick`), as do share group session timeouts.
"""

from __future__ import annotations

import asyncio
import logging
import time
from types import SimpleNamespace

from coordinator.offsets_store import OFFSETS_TOPIC, AppendFailed
from coordinator.share_group import ShareGroupCoordinator
from coordinator.share_partition import (
    SharePartition,
    ShareAcknowledgeError,
    StateUpdate,
    initial_start_offset,
    parse_duration_ms,
)
from coordinator.share_sessions import ShareSessionCache
from coordinator.share_state import PersistedShareState
from kafka_wire import internal_records as ir
from kafka_wire.errors import ErrorCode
from kafka_wire.records import iter_batch_headers

from . import group_configs
from .features import SHARE_VERSION
from .security.authorizer import ResourceType
from .share_coordinator import SharePersister, ShareStateError, decoded_records, share_coordinator_of

logger = logging.getLogger("kafka_wire.share_groups")

TICK_SECONDS = 0.1
# How many times a share-partition is loaded while its leader epoch keeps moving under the load.
LOAD_ATTEMPTS = 3


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def batch_ranges(data: bytes) -> list[tuple[int, int]]:
    """(base offset, last offset) of each whole record batch in `data` (fetched log bytes)."""
    return [(header.base_offset, header.base_offset + header.last_offset_delta)
            for _, header in iter_batch_headers(data)]


def local_log_offsets(broker, topic: str, partition: int, timestamp: int | None) -> tuple:
    """`ShareGroups.log_offsets` at the partition's owner."""
    plog = broker.partition_log(topic, partition)
    if plog is None:
        return 0, 0, None
    at_time = None
    if timestamp is not None:
        found = plog.fetch_offset_by_timestamp(timestamp)
        at_time = None if found is None or found.offset >= plog.high_watermark else found.offset
    return plog.log_start_offset, plog.high_watermark, at_time


def local_leadership(broker, topic: str, partition: int) -> tuple[int, int]:
    """(error code, leader epoch) of a partition at the worker owning it: NONE and the epoch this
    broker leads it in, else the error a client hears (NOT_LEADER_OR_FOLLOWER, ...)."""
    error = broker.leadership.leadership_error(topic, partition)
    if error == ErrorCode.LEADER_NOT_AVAILABLE:
        # A partition without a leader right now (its leader cut from ZooKeeper or gone): Kafka's
        # ReplicaManager answers a share fetch of a partition it does not lead NOT_LEADER_OR_FOLLOWER,
        # which share consumers retry after a metadata refresh; librdkafka's raises LEADER_NOT_AVAILABLE
        # to the application as an unexpected error.
        error = ErrorCode.NOT_LEADER_OR_FOLLOWER
    if error != ErrorCode.NONE:
        return int(error), -1
    in_cluster = broker.metadata.metadata_quorum() is None
    replicas = getattr(broker, "replicas", None) if in_cluster else None
    hosted = replicas.partitions.get((topic, partition)) if replicas is not None else None
    if hosted is not None:
        return int(ErrorCode.NONE), hosted.leader_epoch
    current = broker.metadata.partition_state(topic, partition)
    return int(ErrorCode.NONE), current.leader_epoch if current is not None else -1


# What a share consumer hears when its share-partition's state could not be read or written, as
# Kafka's SharePartition turns its persister's answer into an exception (fetchPersisterError): a
# share coordinator that moved or is away is COORDINATOR_NOT_AVAILABLE, a fenced write means the
# share-partition is led elsewhere now. librdkafka's share consumer has no handling for
# NOT_COORDINATOR in a ShareFetch partition and hands it to the application as an unexpected error.
_PERSISTER_ERRORS_FOR_CLIENTS = {
    ErrorCode.NOT_COORDINATOR: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.FENCED_LEADER_EPOCH: ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.FENCED_STATE_EPOCH: ErrorCode.NOT_LEADER_OR_FOLLOWER,
}


def share_partition_error(error: ErrorCode) -> ErrorCode:
    """The ShareFetch/ShareAcknowledge partition error for a share-partition whose state request
    failed with `error` (the others, e.g. NOT_LEADER_OR_FOLLOWER from the leadership check, as they are)."""
    return _PERSISTER_ERRORS_FOR_CLIENTS.get(error, error)


def _writes_in_flight(sp: SharePartition) -> set:
    """The futures of a share-partition's state writes under way (each done when its write ends)."""
    writes = getattr(sp, "writes_in_flight", None)
    if writes is None:
        writes = sp.writes_in_flight = set()
    return writes


def service_of(broker) -> "ShareGroups":
    """The broker's share groups, made on first use (at the worker the requests reach)."""
    service = getattr(broker, "_share_groups", None)
    if service is None:
        service = broker._share_groups = ShareGroups(broker)
    return service


class ShareGroups:
    def __init__(self, broker) -> None:
        self.broker = broker
        cfg = broker.config
        self.coordinator = ShareGroupCoordinator(
            self._describe_topic,
            session_timeout_ms=int(cfg["group.share.session.timeout.ms"]),
            heartbeat_interval_ms=int(cfg["group.share.heartbeat.interval.ms"]),
            max_size=int(cfg["group.share.max.size"]),
            assignment_interval_ms=int(cfg["group.share.assignment.interval.ms"]),
            await_state_initialization=True)
        # Kafka uses offsets.commit.timeout.ms when it is the larger.
        self.coordinator.initialize_retry_interval_ms = max(int(cfg.get("group.share.initialize.retry.interval.ms", 30000)),
                                                            int(cfg["offsets.commit.timeout.ms"]))
        self.coordinator.other_groups = self.is_other_group_type
        self.sessions = ShareSessionCache(int(cfg["group.share.max.share.sessions"]))
        self.partitions: dict[tuple, SharePartition] = {}
        # One lock per share-partition key: its state writes and loads, one at a time (`_state_turn`).
        self._state_turns: dict[tuple, asyncio.Lock] = {}
        self.share_coordinator = share_coordinator_of(broker)
        self.persister = SharePersister(broker)
        self._loaded = False
        # Cluster mode: the __consumer_offsets partitions whose share groups are loaded here, with
        # the group coordinator's load generation of each when they were.
        self._synced: dict[int, int] = {}
        self._timer: asyncio.Task | None = None
        self._initializing: set[asyncio.Task] = set()  # share state initializations under way
        # Set (and replaced) whenever records become available again or acquisition locks free up:
        # a share fetch that found nothing to acquire waits on the one current when it looked.
        self.released = asyncio.Event()

    # -- helpers -----------------------------------------------------------------------------------

    def _describe_topic(self, name: str):
        meta = self.broker.metadata.topic(name)
        return None if meta is None else (meta.topic_id, meta.partitions)

    def is_other_group_type(self, group_id: str) -> bool:
        """Whether the group id names a group of another type (a classic or consumer group)."""
        groups = getattr(self.broker, "groups", None)
        return groups is not None and group_id in getattr(groups, "groups", {})

    def group_config(self, group_id: str, name: str):
        overrides = self.broker.metadata.group_configs.get(group_id, {})
        return group_configs.effective(self.broker.config, overrides, name)

    def use_group_settings(self, group_id: str) -> None:
        """Put the group's own share.session.timeout.ms, share.heartbeat.interval.ms and
        share.assignment.interval.ms (group configs, else the broker's group.share.* keys) in force
        for the heartbeat about to be handled: the coordinator reads them during that one call."""
        coordinator = self.coordinator
        coordinator.session_timeout_ms = int(self.group_config(group_id, "share.session.timeout.ms"))
        coordinator.heartbeat_interval_ms = int(self.group_config(group_id, "share.heartbeat.interval.ms"))
        coordinator.assignment_interval_ms = int(self.group_config(group_id, "share.assignment.interval.ms"))

    def _offsets_partition(self, group_id: str) -> int:
        return self.broker.groups.partition_for(group_id)

    def in_cluster(self) -> bool:
        """A ZooKeeper-mode cluster: groups live at the leader of their __consumer_offsets
        partition, share-partitions at the leader of their data partition."""
        return self.broker.metadata.metadata_quorum() is None

    def ready(self) -> ErrorCode | None:
        """None once the group coordinator serves and the share groups are loaded (in a cluster,
        those of the __consumer_offsets partitions this broker leads)."""
        groups = self.broker.groups
        error = groups.coordinator_error() if hasattr(groups, "coordinator_error") else None
        if error is not None:
            return error
        if getattr(groups, "offsets_topic", None) is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.in_cluster():
            self._sync_cluster_groups()
        elif not self._loaded:
            self._load_groups()
        if self._timer is None or self._timer.done():
            self._timer = asyncio.get_running_loop().create_task(self._tick())
        return None

    def _load_groups(self) -> None:
        """Replay the share group records of __consumer_offsets."""
        topic = self.broker.metadata.topic(OFFSETS_TOPIC)
        now = now_ms()
        for partition in range(topic.partitions if topic is not None else 0):
            for decoded in decoded_records(self.broker, OFFSETS_TOPIC, partition, ir.decode_share_group_record):
                self.coordinator.replay(*decoded, now)
        self.coordinator.loaded()
        self._loaded = True
        if self.coordinator.groups:
            logger.info("loaded %d share groups", len(self.coordinator.groups))

    def _sync_cluster_groups(self) -> None:
        """Cluster mode, as Kafka's group coordinator loads and unloads a __consumer_offsets
        partition with its leadership: the share groups of partitions this broker no longer leads
        (or lost and led again since) are dropped, those of partitions it leads now are replayed."""
        groups = self.broker.groups
        generations = getattr(groups, "load_generations", {})
        owned = {p: generations.get(p, 0) for p in getattr(groups, "owned_partitions", ())}
        if owned == self._synced and self._loaded:
            return
        for partition, generation in list(self._synced.items()):
            if owned.get(partition) != generation:
                for group_id in [g for g in self.coordinator.groups if self._offsets_partition(g) == partition]:
                    del self.coordinator.groups[group_id]
                del self._synced[partition]
        now = now_ms()
        for partition, generation in owned.items():
            if partition not in self._synced:
                for decoded in decoded_records(self.broker, OFFSETS_TOPIC, partition, ir.decode_share_group_record):
                    self.coordinator.replay(*decoded, now)
                self._synced[partition] = generation
        self.coordinator.loaded()
        self._loaded = True

    def group_error(self, group_id: str) -> ErrorCode | None:
        """Whether this broker coordinates the group now: in a cluster, NOT_COORDINATOR unless it
        leads the group's __consumer_offsets partition (COORDINATOR_LOAD_IN_PROGRESS while it loads
        it), as Kafka's GroupCoordinatorService answers share group requests."""
        if not self.in_cluster() or not group_id:
            return None
        groups = self.broker.groups
        partition = self._offsets_partition(group_id)
        if partition in getattr(groups, "loading_partitions", ()):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition < 0 or partition not in getattr(groups, "owned_partitions", ()):
            return ErrorCode.NOT_COORDINATOR
        return None

    def append_group_records(self, group_id: str, records) -> None:
        if records:
            self.broker.groups.offsets_topic.append(self._offsets_partition(group_id), records, now_ms=now_ms())

    # -- share state initialization ----------------------------------------------------------------

    def initialize_state_later(self, group_id: str, partitions: dict, state_epoch: int) -> None:
        """After a heartbeat's answer, where Kafka's GroupCoordinatorService sends the
        InitializeShareGroupState a heartbeat asked for: the share-partitions' share coordinators
        are asked for their state, and once they answered the group coordinator is told (a later
        heartbeat assigns them)."""
        task = asyncio.get_running_loop().create_task(self._initialize_state(group_id, partitions, state_epoch))
        self._initializing.add(task)
        task.add_done_callback(self._initializing.discard)

    async def _initialize_state(self, group_id: str, partitions: dict, state_epoch: int) -> None:
        done: dict = {}
        failed: dict = {}
        for topic_id, parts in partitions.items():
            for partition in sorted(parts):
                try:
                    # The share-partition's share coordinator answers for it. Its state itself is
                    # written when the share-partition is first used (share_partition): writing it
                    # here too would race with a leader loading it (Kafka writes start offset -1
                    # here; the first use then applies share.auto.offset.reset, as here).
                    await self.persister.read(group_id, topic_id, partition)
                    done.setdefault(topic_id, set()).add(partition)
                except AppendFailed as e:
                    logger.warning("share group %s: initializing the state of %s-%d failed: %s", group_id, topic_id,
                                   partition, e.error.name)
                    failed.setdefault(topic_id, set()).add(partition)
                except Exception:  # noqa: BLE001 - a later heartbeat asks again
                    logger.exception("share group %s: initializing the state of %s-%d failed", group_id, topic_id,
                                     partition)
                    failed.setdefault(topic_id, set()).add(partition)
        records = []
        if done:
            records += self.coordinator.state_initialized(group_id, done)
        if failed:
            records += self.coordinator.state_initialization_failed(group_id, failed)
        try:
            self.append_group_records(group_id, records[-1:])  # the last says it all
        except AppendFailed as e:
            logger.warning("share group %s: could not record its initialized share-partitions: %s", group_id,
                           e.error.name)

    # -- the timer ---------------------------------------------------------------------------------

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            try:
                await self.expire(now_ms())
            except Exception:  # noqa: BLE001 - the timer must keep running
                logger.exception("share group timer")

    async def expire(self, now: int) -> None:
        """Acquisition locks that ran out, and members whose session timed out."""
        if self.in_cluster():
            await self._drop_moved_partitions()
            self._sync_cluster_groups()
        for sp in list(self.partitions.values()):
            deadline = sp.next_lock_deadline()
            if deadline is not None and deadline <= now:
                update = sp.expire_locks(now)
                self.records_released()
                await self._persist_or_log(sp, update, "lock timeout")
        before = {(g.group_id, m) for g in self.coordinator.groups.values() for m in g.members}
        records = self.coordinator.expire_sessions(now)
        if records:
            after = {(g.group_id, m) for g in self.coordinator.groups.values() for m in g.members}
            for group_id, member_id in before - after:
                await self.member_gone(group_id, member_id)
            by_group: dict[str, list] = {}
            for group_id, _ in before - after:
                by_group.setdefault(group_id, [])
            # expire_sessions returns the records of every group together; write each group's own.
            for key, value in records:
                record_type = int.from_bytes(key[:2], "big")
                group_id = (ir.CONSUMER_GROUP_MEMBER_KEY.decode(key, 0, 2).group_id
                            if record_type in ir.SHARE_GROUP_MEMBER_KEYED_RECORDS
                            else ir.CONSUMER_GROUP_KEY.decode(key, 0, 2).group_id)
                by_group.setdefault(group_id, []).append((key, value))
            for group_id, group_records in by_group.items():
                try:
                    self.append_group_records(group_id, group_records)
                except AppendFailed:
                    logger.warning("could not write the expiry of share group %s's members", group_id)

    async def member_gone(self, group_id: str, member_id: str) -> None:
        """A member left or was fenced: its share session goes and its records are released."""
        self.sessions.remove_member(group_id, member_id)
        await self.release_member(group_id, member_id)

    def forget_idle_group(self, group_id: str) -> None:
        """Cluster mode, as Kafka's SharePartitionManager when a group has no share session left
        at a broker: the group's share-partitions holding no acquisition lock are dropped from
        memory (their state is all in their share coordinator), so the next member to fetch loads
        what the group coordinator may have written meanwhile (AlterShareGroupOffsets,
        DeleteShareGroupOffsets on the empty group)."""
        if not self.in_cluster() or any(g == group_id for g, _ in self.sessions.sessions):
            return
        for key, sp in list(self.partitions.items()):
            if key[0] == group_id and sp.next_lock_deadline() is None:
                del self.partitions[key]

    async def release_member(self, group_id: str, member_id: str) -> None:
        for key, sp in list(self.partitions.items()):
            if key[0] == group_id:
                update = sp.release_acquired_records(member_id)
                if update is not None:
                    self.records_released()
                    await self._persist_or_log(sp, update, "release")

    # -- share-partitions --------------------------------------------------------------------------

    async def _leader_epoch(self, topic: str, partition: int) -> int:
        """This broker's leader epoch of a partition it leads; raises ShareStateError
        (NOT_LEADER_OR_FOLLOWER, ...) when it does not lead it: a share-partition lives at its
        partition's leader, as Kafka's SharePartitionManager. With several workers the partition's
        owner, whose replica manager leads it, is asked (`share_leadership` call)."""
        error, epoch = (await self._leaderships([(topic, partition)]))[0]
        if error != ErrorCode.NONE:
            raise ShareStateError(error)
        return epoch

    async def _leaderships(self, parts: list[tuple[str, int]]) -> list[tuple[ErrorCode, int]]:
        """(error, leader epoch) of each (topic, partition), `local_leadership` at its owner: one
        call per other worker in a cluster (on a single node this broker leads every partition,
        and worker 0 knows which are offline). A worker that is gone leads nothing (the broker
        restarts)."""
        from .workers.link import WorkerGone

        in_cluster = self.in_cluster()
        answers: list = [None] * len(parts)
        remote: dict[int, list[int]] = {}
        for i, (topic, partition) in enumerate(parts):
            owner = self._owner(topic, partition) if in_cluster else None
            if owner is None:
                answers[i] = local_leadership(self.broker, topic, partition)
            else:
                remote.setdefault(owner, []).append(i)
        for owner, indexes in remote.items():
            try:
                found, _, _ = await self.broker.workers.links[owner].call(
                    "share_leadership", [parts[i] for i in indexes])
            except WorkerGone:
                found = [(int(ErrorCode.NOT_LEADER_OR_FOLLOWER), -1)] * len(indexes)
            for i, answer in zip(indexes, found):
                answers[i] = answer
        return [(ErrorCode.from_code(error), epoch) for error, epoch in answers]

    async def leads(self, topic: str, partition: int) -> bool:
        """Whether this broker (whichever of its workers owns the partition) leads it."""
        return (await self._leaderships([(topic, partition)]))[0][0] == ErrorCode.NONE

    async def _drop_moved_partitions(self) -> None:
        """Cluster mode: forget the share-partitions of partitions this broker no longer leads, or
        leads in another leader epoch than when it loaded them (it loads them again, from their
        share coordinator, when next asked). With several workers this asks the partitions'
        owners on every tick, so a leadership change at another worker reaches the share-partitions
        here within a tick (and any request on one checks its epoch first)."""
        keyed = [(key, sp, self.broker.metadata.topic_by_id(key[1])) for key, sp in list(self.partitions.items())]
        known = [(key, meta) for key, _, meta in keyed if meta is not None]
        leaderships = await self._leaderships([(meta.name, key[2]) for key, meta in known]) if known else []
        current_epochs = {key: (epoch if error == ErrorCode.NONE else None)
                          for (key, _), (error, epoch) in zip(known, leaderships)}
        for key, sp, meta in keyed:
            if self.partitions.get(key) is not sp:  # replaced (loaded again) while the owners answered
                continue
            current = current_epochs.get(key)
            if current is None or current != getattr(sp, "loaded_leader_epoch", current):
                del self.partitions[key]
                logger.info("share-partition %s %s-%d: no longer led here in epoch %s, unloaded", key[0],
                            meta.name if meta is not None else key[1], key[2], getattr(sp, "loaded_leader_epoch", "?"))

    async def share_partition(self, group_id: str, topic: str, topic_id, partition: int) -> SharePartition:
        """The share-partition, loaded from __share_group_state or started by share.auto.offset.reset.
        Only at the partition's leader (ShareStateError NOT_LEADER_OR_FOLLOWER elsewhere); a
        share-partition loaded in an earlier leader epoch is loaded again (its state may have
        moved on at another leader meanwhile)."""
        key = (group_id, topic_id, partition)
        current_epoch = await self._leader_epoch(topic, partition)
        sp = self.partitions.get(key)
        if sp is not None and getattr(sp, "loaded_leader_epoch", current_epoch) == current_epoch:
            return sp
        # After the writes made before (of a copy dropped or loaded in an earlier epoch), so that
        # what is read has them: one landing after the read would lay its change, answered as
        # stored, under a copy that does not know it.
        async with self._state_turn(key):
            sp = self.partitions.get(key)
            if sp is not None and getattr(sp, "loaded_leader_epoch", current_epoch) == current_epoch:
                return sp
            for _ in range(LOAD_ATTEMPTS):
                if sp is not None:
                    self.discard(sp)  # requests still holding it neither write nor acquire through it
                sp = await self._load_share_partition(group_id, topic, topic_id, partition, current_epoch)
                # The leader epoch may have moved on while the state was read (a share coordinator
                # away for seconds): a copy of the earlier epoch served beside the next epoch's would
                # hand the same records to two members (seen in the cluster kill test).
                try:
                    current_epoch = await self._leader_epoch(topic, partition)
                except AppendFailed:
                    self.discard(sp)
                    raise
                if sp.loaded_leader_epoch == current_epoch:
                    return sp
            self.discard(sp)
            raise ShareStateError(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    async def _load_share_partition(self, group_id: str, topic: str, topic_id, partition: int,
                                    leader_epoch: int) -> SharePartition:
        """`share_partition`'s load, in the share-partition's state turn."""
        key = (group_id, topic_id, partition)
        limits = {
            "record_lock_duration_ms": int(self.group_config(group_id, "share.record.lock.duration.ms")),
            "delivery_count_limit": int(self.group_config(group_id, "share.delivery.count.limit")),
            "max_record_locks": int(self.group_config(group_id, "share.partition.max.record.locks")),
        }
        # The partition's leader epoch goes with every read and write, as Kafka's SharePartition
        # sends it: the share coordinator then fences a leader that was deposed (FENCED_LEADER_EPOCH).
        state = await self.persister.read(group_id, topic_id, partition, leader_epoch)
        if state.found and state.start_offset >= 0:
            sp = SharePartition.from_persisted(group_id, topic_id, partition, start_offset=state.start_offset,
                                               state_batches=state.batches, state_epoch=state.state_epoch,
                                               leader_epoch=max(leader_epoch, state.leader_epoch), **limits)
        else:
            reset = str(self.group_config(group_id, "share.auto.offset.reset"))
            since = None
            if reset.startswith("by_duration:"):
                since = now_ms() - parse_duration_ms(reset[len("by_duration:"):])
            log_start, log_end, at_time = await self.log_offsets(topic, partition, since)
            start = initial_start_offset(reset, log_start_offset=max(0, log_start), log_end_offset=max(0, log_end),
                                         now_ms=now_ms(), offset_for_timestamp=lambda ts: at_time)
            # State initialized by the group coordinator (start offset -1) keeps its state epoch.
            sp = SharePartition(group_id, topic_id, partition, start_offset=start, leader_epoch=max(leader_epoch, 0),
                                state_epoch=state.state_epoch if state.found else 0, **limits)
        sp.renew_enabled = bool(self.group_config(group_id, "share.renew.acknowledge.enable"))
        sp.loaded_leader_epoch = leader_epoch
        self.partitions[key] = sp
        if not state.found or state.start_offset < 0:
            await self.persister.initialize(group_id, topic_id, partition, sp.state_epoch, sp.start_offset)
        return sp

    async def persist(self, sp: SharePartition, update: StateUpdate | None, *, snapshot: bool = False) -> None:
        """Write a share-partition's change through its share coordinator (broker/share_coordinator.py,
        here or at the broker leading the state partition), durable when it returns; raises
        AppendFailed (ShareStateError) when it is refused or cannot be written."""
        if update is None:
            return
        key = (sp.group_id, sp.topic_id, sp.partition)
        written = asyncio.get_running_loop().create_future()
        in_flight = _writes_in_flight(sp)
        in_flight.add(written)
        try:
            # In the order the changes were made: an update holds only the records it changed, so
            # one stored after a later one would put back what the later one changed (a lock
            # timeout's AVAILABLE over the acceptance of the records' next delivery). The
            # persister's retries while the share coordinator moves would reorder them otherwise.
            async with self._state_turn(key):
                current = self.partitions.get(key)
                if sp.discarded or (current is not None and current is not sp):
                    # Dropped after a failed write while this request waited, or loaded again
                    # since: its change would be written over a state memory no longer matches (a
                    # start offset moved past records that were never stored as done).
                    raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                          "the share-partition was loaded again after this change was made")
                await self.persister.write(sp.group_id, sp.topic_id, sp.partition, update, snapshot=snapshot)
        except AppendFailed:
            # Fenced (another leader or AlterShareGroupOffsets wrote since this one loaded), or not
            # written at all (refused by the share coordinator, or this broker's own append of it):
            # memory is ahead of, or beside, the stored state. Kept, an acknowledgement retried after
            # this failure would find its records done and be answered as accepted with nothing
            # stored, and the next leader would deliver them again (Kafka rolls its transitions
            # back; here the next request loads the stored state again).
            self.discard(sp)
            raise
        finally:
            in_flight.discard(written)
            written.set_result(None)

    def _state_turn(self, key: tuple) -> asyncio.Lock:
        """The share-partition's turn to read or write its state: its writes reach the share
        coordinator one at a time in the order they were made (asyncio.Lock serves its waiters
        in order), and a load reads the state once the writes before it ended."""
        turn = self._state_turns.get(key)
        if turn is None:
            turn = self._state_turns[key] = asyncio.Lock()
        return turn

    async def writes_settled(self, sp: SharePartition, writes: list) -> bool:
        """Wait for `writes` (futures of `_writes_in_flight(sp)` taken earlier) to end; whether the
        share-partition's memory is still what its share coordinator stores (none of them failed).
        An acknowledgement that finds its records already done in memory (a start offset moved past
        them by a write still in flight, say the same acknowledgement sent again) is answered only
        once what made them done is stored."""
        if writes:
            await asyncio.wait(writes)
        return not sp.discarded

    def discard(self, sp: SharePartition) -> None:
        """Forget a share-partition held in memory: the next request loads the stored state."""
        sp.discarded = True
        key = (sp.group_id, sp.topic_id, sp.partition)
        if self.partitions.get(key) is sp:
            del self.partitions[key]

    async def _persist_or_log(self, sp: SharePartition, update: StateUpdate, what: str) -> None:
        """Persist a change nobody waits on (a timer's, a leaving member's); a failure is logged (the
        change holds in memory; the state persisted keeps the records as they were)."""
        try:
            await self.persist(sp, update)
        except AppendFailed as e:
            logger.warning("share-partition %s %s-%d: persisting a %s failed: %s", sp.group_id, sp.topic_id,
                           sp.partition, what, e.error.name)

    async def reset_start_offset(self, group_id: str, topic: str, topic_id, partition: int, start_offset: int) -> None:
        """AlterShareGroupOffsets of one share-partition: its state starts over at `start_offset`
        in a new state epoch. Where this broker does not hold the share-partition (a cluster's
        partition led elsewhere), straight at its share coordinator, as Kafka's group coordinator
        does; the leader's next write is then fenced (FENCED_STATE_EPOCH) and it loads the new
        state. Raises AppendFailed."""
        key = (group_id, topic_id, partition)
        if not self.in_cluster() or (key in self.partitions and await self.leads(topic, partition)):
            sp = await self.share_partition(group_id, topic, topic_id, partition)
            sp.reset_start_offset(start_offset)
            await self.persist(sp, sp.snapshot(), snapshot=True)
            return
        state = await self.persister.read(group_id, topic_id, partition)
        if not state.found:
            await self.persister.initialize(group_id, topic_id, partition, 0, start_offset)
            return
        await self.persister.write(group_id, topic_id, partition,
                                   StateUpdate(state.state_epoch + 1, -1, start_offset, 0, ()), snapshot=True)

    async def delete_state(self, key: tuple) -> None:
        """Forget a share-partition and delete its state at its share coordinator."""
        self.partitions.pop(key, None)
        self._state_turns.pop(key, None)
        await self.persister.delete(*key)

    # -- reading partitions ------------------------------------------------------------------------

    def _owner(self, topic: str, partition: int) -> int | None:
        workers = self.broker.workers
        if workers is None:
            return None
        owner = workers.owner(topic, partition)
        return None if owner == workers.index else owner

    async def log_offsets(self, topic: str, partition: int, timestamp: int | None = None) -> tuple:
        """(log start offset, high watermark, the first offset at or after `timestamp` or None) of a
        partition, here or at its owner; in a cluster, where this broker does not lead it, the
        leader's (ListOffsets, as Kafka's group coordinator asks for a share group's lag).
        Raises AppendFailed (ShareStateError) when the leader cannot be asked."""
        if self.in_cluster() and not await self.leads(topic, partition):
            return await self._leader_log_offsets(topic, partition)
        owner = self._owner(topic, partition)
        if owner is None:
            return local_log_offsets(self.broker, topic, partition, timestamp)
        answer, _, _ = await self.broker.workers.links[owner].call("log_offsets", [(topic, partition, timestamp)])
        return tuple(answer[0])

    async def _leader_log_offsets(self, topic: str, partition: int) -> tuple:
        """(log start offset, high watermark, None) of a partition, from its leader."""
        state = self.broker.metadata.leader_and_isr(topic, partition)
        if state is None or state.leader < 0:
            raise ShareStateError(ErrorCode.LEADER_NOT_AVAILABLE)
        offsets = []
        for timestamp in (-2, -1):  # earliest, latest (the high watermark)
            response = await self.persister._request(state.leader, "ListOffsets", 7, {
                "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
                    {"partition_index": partition, "current_leader_epoch": -1, "timestamp": timestamp}]}]})
            answer = response.topics[0].partitions[0]
            if answer.error_code:
                raise ShareStateError(ErrorCode.from_code(answer.error_code))
            offsets.append(answer.offset)
        return offsets[0], offsets[1], None

    async def read(self, topic: str, topic_id, partition: int, offset: int, max_bytes: int,
                   read_committed: bool) -> tuple:
        """Read a partition for a share fetch (at least one batch), here or at its owner: (the
        PartitionRead, without its records, and the records read as bytes)."""
        owner = self._owner(topic, partition)
        if owner is None:
            read = self.broker.read_partition(topic, partition, offset, max_bytes=max_bytes, min_one=True,
                                              read_committed=read_committed)
        else:
            from .workers.fetch import read_remote

            part = SimpleNamespace(topic=topic, topic_id=topic_id, partition=partition, fetch_offset=offset,
                                   partition_max_bytes=max_bytes, current_leader_epoch=-1)
            read = (await read_remote(self.broker, [part], {owner: [0]}, max_bytes=max_bytes,
                                      read_committed=read_committed, replica_id=-1))[0]
        data = b""
        if read.records is not None:
            if len(read.records):
                data = read.records.read_bytes()
            read.records.close()
            read.records = None
        return read, data

    def records_released(self) -> None:
        """Records became available again or acquisition locks were freed (released, acknowledged,
        timed out): wake the share fetches waiting for that, as Kafka completes its delayed share
        fetches."""
        self.released.set()
        self.released = asyncio.Event()

    def _has_data(self, parts, read_committed: bool) -> bool:
        """Whether a partition here already has data past its offset (up to the last stable offset
        for read_committed): an append the wait would not see again came before it."""
        for topic, partition, offset in parts:
            if self._owner(topic, partition) is not None:
                continue
            plog = self.broker.partition_log(topic, partition)
            if plog is not None and (plog.last_stable_offset if read_committed else plog.high_watermark) > offset:
                return True
        return False

    async def wait_for_data(self, parts: list[tuple[str, int, int]], timeout: float, *, read_committed: bool,
                            released: asyncio.Event) -> None:
        """Until an append brings data past one of the (topic, partition, offset) (past the last
        stable offset for read_committed), `released` (the `released` event current when the caller
        looked) is set, or the time is up. Nothing but those wakes it: no polling."""
        if timeout <= 0 or released.is_set() or self._has_data(parts, read_committed):
            return
        from .workers.fetch import wait_across

        waits = [asyncio.ensure_future(released.wait())]
        if parts and self.broker.workers is None:
            waits.append(asyncio.ensure_future(self.broker.waiters.wait([(t, p) for t, p, _ in parts], timeout)))
        elif parts:
            objs = [SimpleNamespace(topic=t, partition=p, fetch_offset=o) for t, p, o in parts]
            waits.append(asyncio.ensure_future(wait_across(self.broker, objs, range(len(objs)),
                                                           read_committed=read_committed, timeout=timeout)))
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                if not w.done():
                    w.cancel()
                elif not w.cancelled():
                    w.exception()

    # -- acknowledgements --------------------------------------------------------------------------

    async def acknowledge(self, group_id: str, member_id: str, topic: str, topic_id, partition: int, batches,
                          is_renew: bool = False) -> tuple[ErrorCode, str | None]:
        """Apply a partition's acknowledgement batches; durable before it returns."""
        try:
            sp = await self.share_partition(group_id, topic, topic_id, partition)
            await self.persist(sp, sp.expire_locks(now_ms()))
        except AppendFailed as e:
            return share_partition_error(e.error), getattr(e, "message", None)
        earlier_writes = list(_writes_in_flight(sp))
        try:
            update = sp.acknowledge(member_id, [(b.first_offset, b.last_offset, b.acknowledge_types) for b in batches],
                                    now_ms())
        except ShareAcknowledgeError as e:
            return e.error, e.message
        if update is not None:
            try:
                await self.persist(sp, update)
            except AppendFailed as e:
                return share_partition_error(e.error), None
            # RELEASE makes records available; any completed delivery may move the start offset and
            # free acquisition locks under group.share.partition.max.record.locks.
            self.records_released()
        if not await self.writes_settled(sp, earlier_writes):
            return share_partition_error(ErrorCode.COORDINATOR_NOT_AVAILABLE), None
        return ErrorCode.NONE, None

    def lock_duration_ms(self, group_id: str) -> int:
        return int(self.group_config(group_id, "share.record.lock.duration.ms"))

    def read_committed(self, group_id: str) -> bool:
        return str(self.group_config(group_id, "share.isolation.level")) == "read_committed"



# -- the group APIs that span group types (ListGroups, DeleteGroups) ---------------------------------------


def list_share_groups(broker, states_filter=None, types_filter=None) -> list[dict]:
    """ListGroups' entries for the share groups (type and protocol type "share")."""
    if broker.feature_level("share.version") < 1:
        return []
    service = service_of(broker)
    if service.ready() is not None:
        return []
    wanted = {s.lower() for s in states_filter} if states_filter else None
    wanted_types = {t.lower() for t in types_filter} if types_filter else None
    if wanted_types is not None and "share" not in wanted_types:
        return []
    return [{"group_id": g.group_id, "protocol_type": "share", "group_state": g.state, "group_type": "share"}
            for g in service.coordinator.groups.values()
            if not g.dead and (wanted is None or g.state.lower() in wanted)]


def share_group_ids(broker, group_ids) -> set[str]:
    """Which of the group ids name share groups."""
    if broker.feature_level("share.version") < 1:
        return set()
    service = service_of(broker)
    if service.ready() is not None:
        return set()
    return {g for g in group_ids if g in service.coordinator.groups}


async def delete_share_group(broker, group_id: str) -> ErrorCode:
    """DeleteGroups on a share group: only an empty one; its records and its share-partitions'
    state (those this coordinator has loaded) are tombstoned."""
    from coordinator.share_group import ShareGroupError

    service = service_of(broker)
    try:
        records = service.coordinator.delete_group(group_id)
    except ShareGroupError as e:
        return e.error
    try:
        service.append_group_records(group_id, records)
        if service.in_cluster():  # the share-partitions' state is at their share coordinators
            keys = [k for k, summary in (await share_group_summaries(service, group_id)).items()
                    if not isinstance(summary, ErrorCode)]
        else:
            keys = [k for k in service.partitions if k[0] == group_id]
        for key in keys:
            await service.delete_state(key)
    except AppendFailed as e:
        return e.error
    return ErrorCode.NONE


# -- share group offsets (DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets) -------


def group_state_keys(service: ShareGroups, group_id: str) -> dict[tuple, PersistedShareState]:
    """Every share-partition of the group with state in __share_group_state, folded, by key."""
    return dict(service.share_coordinator.group_states(group_id))


def share_partition_summary(service: ShareGroups, key: tuple, persisted: dict) -> tuple[int, int, int] | None:
    """(start offset, leader epoch, delivery complete count) of a share-partition, from memory when
    loaded, else from its persisted state; None when it has none."""
    sp = service.partitions.get(key)
    if sp is not None:
        return sp.start_offset, sp.leader_epoch, sp.delivery_complete_count()
    state = persisted.get(key)
    if state is None or state.start_offset < 0:  # none, or initialized and never used
        return None
    return state.start_offset, state.leader_epoch, state.delivery_complete_count()


async def share_group_summaries(service: ShareGroups, group_id: str, topic_names=None) -> dict:
    """{(group, topic id, partition): (start offset, leader epoch, delivery complete count), or
    the ErrorCode its share coordinator answered} of the group's share-partitions with state (of
    the named topics, else of every topic). On a single node from the state here; in a cluster
    from each share coordinator (ReadShareGroupStateSummary, as Kafka's group coordinator asks
    them), what this broker holds in memory of partitions it leads laid over it."""
    if not service.in_cluster():
        persisted = group_state_keys(service, group_id)
        keys = set(persisted) | {k for k in service.partitions if k[0] == group_id}
        return {k: summary for k in keys if (summary := share_partition_summary(service, k, persisted)) is not None}
    metadata = service.broker.metadata
    if topic_names is None:
        metas = [m for m in list(metadata.topics.values()) if not m.internal]
    else:
        metas = [m for name in topic_names if (m := metadata.topic(name)) is not None]
    keys = [(m.topic_id, p) for m in metas for p in range(m.partitions)]
    found = await service.persister.summaries(group_id, keys) if keys else {}
    summaries = {}
    for (topic_id, partition), summary in found.items():
        key = (group_id, topic_id, partition)
        sp = service.partitions.get(key)
        if sp is not None and not isinstance(summary, ErrorCode):
            summary = (sp.start_offset, sp.leader_epoch, sp.delivery_complete_count())
        summaries[key] = summary
    return summaries


class ShareRequestRefused(Exception):
    """A share group request answered with an error before any work: its error code and message."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message


def open_share_request(broker, ctx, group_id: str, operation, invalid: tuple | None = None, *,
                       at_coordinator: bool = True) -> ShareGroups:
    """The checks every request on one share group passes first, in Kafka's order: share.version
    finalized at 1 or more (else UNSUPPORTED_VERSION), the principal allowed `operation` on the
    group (else GROUP_AUTHORIZATION_FAILED), the request's own `invalid` (error, message) if the
    handler found one, and the coordinator ready. The share groups, or ShareRequestRefused."""
    if broker.feature_level(SHARE_VERSION) < 1:
        raise ShareRequestRefused(ErrorCode.UNSUPPORTED_VERSION)
    if not broker.authorizer.authorize(ctx, operation, ResourceType.GROUP, group_id or ""):
        raise ShareRequestRefused(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if invalid is not None:
        raise ShareRequestRefused(*invalid)
    service = service_of(broker)
    error = service.ready() or (service.group_error(group_id) if at_coordinator else None)
    if error is not None:
        raise ShareRequestRefused(error)
    return service


def loaded_service(broker) -> "ShareGroups | None":
    """The share groups of this process once a request has loaded them, else None (nothing is
    started for an observer such as the web console's sampler)."""
    service = getattr(broker, "_share_groups", None)
    return service if service is not None and service._loaded else None


def share_records_in_flight(broker, group_id: str) -> dict[tuple[str, int], int]:
    """Records in flight per share-partition of a group loaded here (the web console): Kafka's
    count, from the first offset not yet delivered-and-acknowledged to the last fetched."""
    service = loaded_service(broker)
    if service is None:
        return {}
    counts = {}
    for (group, topic_id, partition), sp in list(service.partitions.items()):
        if group == group_id:
            meta = broker.metadata.topic_by_id(topic_id)
            if meta is not None:
                counts[(meta.name, partition)] = sp.in_flight_count()
    return counts
