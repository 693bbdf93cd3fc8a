"""One broker: configuration, cluster metadata, partition logs and the state handlers share.

Handlers receive this object. It owns the topic lifecycle (create, delete, add partitions, alter
configs) so that metadata and logs change together, and it wakes long-polling fetches when an
append lands. Its data path (append, read, list offsets, delete records, markers) is written once
for both modes: whether this broker may serve a partition and where its high watermark is are
asked of `self.leadership` (broker/leadership.py), a single node's or a cluster's replica manager.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafka_wire.errors import ErrorCode
from log.checkpoints import LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT
from log.errors import KafkaStorageError, OffsetOutOfRange
from log.flusher import LogFlusher
from log.group_commit import GroupCommit
from log.log_manager import LogManager
from log.open_files import OPEN_FILES

from .config import BrokerConfig
from coordinator.group_coordinator import GroupCoordinator
from coordinator.offsets_store import OFFSETS_TOPIC, OffsetsTopic
from coordinator.timer import stop_task
from coordinator.transaction_coordinator import DEFAULT_ERROR, TransactionCoordinator
from coordinator.txn_log import TRANSACTION_STATE_TOPIC
from coordinator.txn_markers import write_txn_markers

from .dynamic_broker_config import apply_dynamic_broker_configs
from .fetch_sessions import FetchSessionCache
from . import group_configs
from .features import (
    FeatureUpdate,
    bootstrap_levels,
    effective_levels,
    plan_feature_updates,
    supported_features,
)
from .leader_election import elect_leaders
from .leadership import PartitionLeadership, SingleNodeLeadership
from .cluster.partition_reassignment import single_node_outcomes
from .metadata import MetadataStore, TopicMeta
from .metadata_store import EmbeddedMetadata
from .security import attach as attach_security
from .workers.ownership import SCHEMAS_TOPIC

logger = logging.getLogger("kafka_wire.broker")

PRODUCER_ID_BLOCK = 1000
PRODUCER_ID_FILE = "kafka-wire-producer-ids"
# Schema id validation at a worker not owning `_schemas`: how long the owner's answer is kept.
SCHEMA_LOOKUP_CACHE_SECONDS = 2.0
SCHEMA_LOOKUP_CACHE_SIZE = 10_000


def _owns_every_partition(topic: str, partition: int) -> bool:
    return True


def _end_wait(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(False)


class DataWaiters:
    """Long-polling fetches wait here; an append to a partition wakes the fetches watching it."""

    def __init__(self) -> None:
        self._waiters: dict[tuple[str, int], set[asyncio.Future]] = {}

    def notify(self, topic: str, partition: int) -> None:
        waiters = self._waiters.pop((topic, partition), None)
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(True)

    async def wait(self, partitions: list[tuple[str, int]], timeout: float) -> bool:
        """Wait until any of the partitions gets data or the timeout passes; True if woken.

        The waiting Fetch awaits the future itself, with a timer that ends it with False: a wake-up
        resumes the Fetch in the next loop iteration (asyncio.wait_for relays it through a second
        future and two more callbacks, each a loop iteration later, on every append)."""
        if timeout <= 0:
            return False
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        for tp in partitions:
            self._waiters.setdefault(tp, set()).add(fut)
        timer = loop.call_later(timeout, _end_wait, fut)
        try:
            return await fut
        finally:
            timer.cancel()
            for tp in partitions:
                waiters = self._waiters.get(tp)
                if waiters is not None:
                    waiters.discard(fut)
                    if not waiters:
                        del self._waiters[tp]


class ProducerIdManager:
    """Hands out producer ids in blocks; the block's end is persisted before any id is used, so
    a restarted broker never gives an id twice (Kafka's controller allocates blocks the same way)."""

    def __init__(self, data_dir: str) -> None:
        self.path = Path(data_dir) / PRODUCER_ID_FILE
        self.next_id = 0
        self.block_end = 0
        if self.path.exists():
            text = self.path.read_text().strip()
            if text:
                self.next_id = self.block_end = int(text)

    def next(self) -> int:
        if self.next_id >= self.block_end:
            self.block_end = self.next_id + PRODUCER_ID_BLOCK
            tmp = self.path.with_name(self.path.name + ".tmp")
            with open(tmp, "w") as f:
                f.write(str(self.block_end))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        pid = self.next_id
        self.next_id += 1
        return pid


@dataclass
class AppendResult:
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int


@dataclass
class PartitionRead:
    """One partition's answer to a fetch."""

    error: ErrorCode
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: object = None
    aborted_transactions: list = field(default_factory=list)


class Broker:
    """The single-node broker's shared state."""

    # With several workers: whether each starts its own group and transaction coordinators (a
    # cluster broker's serve only the internal partitions they lead, all of them worker 0's) or
    # worker 0 alone does.
    coordinators_on_every_worker = False
    # What reads the Schema Registry's `_schemas` for schema id validation on produce
    # (broker/schema_validation.py): `factory(broker)` has `subjects_of(schema_id)`. Set by
    # `kafka-wire serve` (registry/validation.py, a room above this one); None: no id is registered.
    schema_lookup_factory = None
    # The Schema Registry this process serves (registry/server.py's RegistryServer, whose `read`
    # the console calls), set when it starts; None: none here.
    schema_registry = None

    def __init__(self, config: BrokerConfig, workers=None) -> None:
        self.config = config
        self.node_id = config.node_id
        data_dir = config.log_dirs[0]
        self.metadata: MetadataStore = EmbeddedMetadata(data_dir, self.node_id)
        # One of several worker processes (broker/workers/): this process opens only the logs of the
        # partitions it owns, and only worker 0 (the primary) changes the metadata and coordinates.
        self.workers = workers
        self.owns = workers.owns if workers is not None else _owns_every_partition
        self._schema_lookup = None  # (schema_subjects)
        self._schema_subjects_cache: dict[int, tuple[float, list]] = {}
        # The fsyncs of rolls, flush.ms and checkpoints run on this thread, off the event loop (one
        # worker: the jobs of a log finish in the order they were started).
        # Path syncs (a new partition's names) coalesce there, with one syncfs when the logs are synced
        # on acknowledgement anyway (log/flusher.py).
        self.log_flusher = LogFlusher(whole_file_system=bool(config.get("log.flush.on.ack")))
        if workers is None:
            self.logs = LogManager(config.log_dirs, config.topic_defaults(), flusher=self.log_flusher)
        else:
            self.logs = LogManager(config.log_dirs, config.topic_defaults(), flusher=self.log_flusher,
                                   owns=workers.owns, worker=workers.index, shared_dir_counts=workers.dir_counts)
        # log.flush.on.ack: produce answers wait for one of its syncs (made on first use, on the loop).
        self.flush_on_ack = bool(config.get("log.flush.on.ack"))
        self.group_commit: GroupCommit | None = None
        if config.get("log.max.open.files") is not None:
            OPEN_FILES.set_limit(config.get("log.max.open.files"))
        # Before anything reads or writes in them: an unusable log dir stops the broker here.
        self.logs.create_and_validate_log_dirs()
        self.waiters = DataWaiters()
        # Whether this broker may serve a partition, and how its high watermark moves: here every
        # partition is led by this node alone; a cluster broker is given its replica manager.
        self.leadership: PartitionLeadership = SingleNodeLeadership(self.logs)
        self.fetch_sessions = FetchSessionCache.from_config(config)
        self.producer_ids = ProducerIdManager(data_dir)
        self.started_at = time.time()
        self.server = None
        self.client_quota_managers = None  # client_quotas.managers makes them on first use
        # Transactional producers; started by `start_coordinators` after the groups (replays
        # __transaction_state).
        self.transactions = TransactionCoordinator()
        if workers is not None:
            from .workers.transactions import PrimaryTransactionCoordinator, RemoteTransactionChecks

            self.transactions = PrimaryTransactionCoordinator() if workers.is_primary else RemoteTransactionChecks(self)
        # Consumer groups; started by `start_coordinators` after the logs are loaded (replays
        # __consumer_offsets), or by the first FindCoordinator when that topic does not exist yet.
        self.groups = GroupCoordinator()
        self._groups_on_demand = False
        self._groups_starting: asyncio.Task | None = None
        # SCRAM credentials and the ACL authorizer (self.credentials, self.authorizer): handlers check
        # requests with self.authorizer even when no server runs (tests that call handlers directly).
        attach_security(self)
        self._background: list[asyncio.Task] = []
        self._supported_features: dict[str, tuple[int, int]] | None = None
        # A worker's partitions whose logs could not be opened at its last reload: why.
        self._open_failures: dict[tuple[str, int], str] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    def load(self) -> None:
        self.metadata.load()
        if self.workers is None or self.workers.is_primary:  # worker 0 alone writes the metadata
            self.metadata.begin_term()
            self.bootstrap_features()
        apply_dynamic_broker_configs(self)  # KIP-226 configs from the metadata, before the logs open
        self.logs.load()
        owns = self.owns
        for meta in self.metadata.topics.values():
            for partition in range(meta.partitions):
                if owns(meta.name, partition):
                    plog = self.logs.get_or_create(meta.name, partition, self.topic_config(meta))
                    self._become_leader(meta.name, partition, plog)
        # Directories of topics deleted while the broker was down (or half deleted) go away (a
        # worker's log manager holds only the partitions it owns).
        stale = []
        for topic, partition in self.logs.partitions():
            meta = self.metadata.topic(topic)
            if meta is None or partition >= meta.partitions:
                stale.append((topic, partition))
        self.logs.delete_partitions(stale)
        self.logs.mover.recover()  # moves between log dirs a restart interrupted

    async def start_coordinators(self) -> None:
        """Replay the internal topics that exist, before the listeners open (clients then never
        see COORDINATOR_LOAD_IN_PROGRESS after a restart). As in Kafka, a broker does not create
        __consumer_offsets or __transaction_state when it starts: the first FindCoordinator for a
        group (or a transactional id) does (`coordinator_for`), so a fresh broker's Metadata
        lists no internal topics. A cluster's group coordinator loads partitions as this broker
        becomes their leader, and its FindCoordinator creates the topic (cluster/cluster_broker.py)."""
        if self.workers is not None and not self.workers.is_primary and not self.coordinators_on_every_worker:
            return  # worker 0 coordinates; the other workers forward group and transaction requests
        if type(self.groups) is GroupCoordinator and self.metadata.topic(OFFSETS_TOPIC) is None:
            self._groups_on_demand = True
        else:
            await self.groups.start(self)
        # After the groups: completing transactions left prepared settles offsets in __consumer_offsets.
        await self.transactions.start(self)

    def _ensure_coordinator(self, key_type: int) -> ErrorCode | None:
        """None when the coordinator for this key type serves; otherwise the error to answer now.
        The lookup that finds its internal topic missing creates it and is answered
        COORDINATOR_NOT_AVAILABLE, as Kafka's KafkaApis.getCoordinator does (clients look up
        again); the group coordinator then loads the new topic in the background."""
        if key_type == 1:  # a transactional id
            state_log = getattr(self.transactions, "state_log", None)
            if state_log is None or self.metadata.topic(TRANSACTION_STATE_TOPIC) is not None:
                return None  # (InitProducerId answers for a coordinator that was not started)
            try:
                state_log.ensure_created()
            except Exception:
                logger.exception("could not create %s", TRANSACTION_STATE_TOPIC)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if not self._groups_on_demand:
            return None
        starting = self._groups_starting
        if starting is None:
            try:
                # The topic exists when this answer goes out; the replay (of nothing) follows.
                OffsetsTopic(self).ensure_created()
            except Exception:
                logger.exception("could not create %s", OFFSETS_TOPIC)
                return ErrorCode.COORDINATOR_NOT_AVAILABLE
            self._groups_starting = asyncio.get_running_loop().create_task(self.groups.start(self))
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if not starting.done():
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if starting.cancelled() or starting.exception() is not None:
            if not starting.cancelled():
                logger.error("starting the group coordinator failed", exc_info=starting.exception())
            self._groups_starting = None  # the next lookup tries again
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        self._groups_on_demand = False
        return None

    async def stop_coordinators(self) -> None:
        if self._groups_starting is not None and not self._groups_starting.done():
            await stop_task(self._groups_starting)
        await self.transactions.stop()
        await self.groups.stop()

    def start_background_tasks(self) -> None:
        """Kafka's scheduled log work: time-based flushes, retention, offset checkpoints."""
        cfg = self.config
        flush_interval = min(int(cfg["log.flush.scheduler.interval.ms"]), 1000)
        self._background = [
            asyncio.create_task(self._every(flush_interval, self._flush_dirty_logs, "log flush")),
            asyncio.create_task(self._every(int(cfg["log.retention.check.interval.ms"]),
                                            self._delete_old_segments, "log retention")),
            # Kafka checkpoints high watermarks every 5 s and recovery points every 60 s.
            asyncio.create_task(self._every(5000, lambda: self._checkpoint(REPLICATION_OFFSET_CHECKPOINT),
                                            "checkpoint")),
            asyncio.create_task(self._every(60000, self._checkpoint_recovery_points, "checkpoint")),
            asyncio.create_task(self.logs.cleaner.run(cfg["log.cleaner.enable"], int(cfg["log.cleaner.backoff.ms"]))),
            asyncio.create_task(self.logs.mover.run()),  # AlterReplicaLogDirs
            asyncio.create_task(self._every(int(cfg["delegation.token.expiry.check.interval.ms"]),
                                            self._sweep_expired_tokens, "delegation token expiry")),
        ]

    @staticmethod
    async def _every(interval_ms: int, action, what: str) -> None:
        while True:
            await asyncio.sleep(max(interval_ms, 10) / 1000)
            try:
                await action()
            except Exception:
                logger.exception("scheduled %s failed", what)

    # Kafka's scheduler threads do this work; here the fsyncs run on the log flusher thread and
    # the event loop only takes the offsets and waits.

    async def _checkpoint(self, file_name: str) -> None:
        await asyncio.wrap_future(self.logs.checkpoint_later(file_name))

    async def _checkpoint_recovery_points(self) -> None:
        # Flushes under way (rolls) first: the checkpoint then records where they got to.
        pending = [f for _, plog in self.logs.logs() for f in plog.pending_flushes()]
        if pending:
            await asyncio.wait([asyncio.wrap_future(f) for f in pending])
        await self._checkpoint(RECOVERY_POINT_CHECKPOINT)

    async def _sweep_expired_tokens(self) -> None:
        if self.workers is not None and not self.workers.is_primary:
            return  # the primary keeps the tokens
        self.tokens.sweep_expired()

    async def _flush_dirty_logs(self) -> None:
        """flush.ms, and the log start offset checkpoint when DeleteRecords or retention moved one."""
        pending = self.logs.start_dirty_flushes()
        if pending:
            await asyncio.wait([asyncio.wrap_future(f) for f in pending])
            await self._checkpoint(RECOVERY_POINT_CHECKPOINT)
        if self.logs.start_offsets_moved():
            await self._checkpoint(LOG_START_OFFSET_CHECKPOINT)

    async def _delete_old_segments(self) -> None:
        if self.logs.delete_old_segments(checkpoint=False):
            await self._checkpoint(LOG_START_OFFSET_CHECKPOINT)

    def close(self) -> None:
        for task in self._background:
            task.cancel()
        self.logs.close()
        self.log_flusher.shutdown(wait=True)
        if self.group_commit is not None:
            self.group_commit.close()

    def advertised_endpoint(self, listener: str) -> tuple[str, int]:
        """The host and port clients should use for this broker on the given listener."""
        bound = {name: (host, port) for name, host, port in (self.server.bound if self.server else [])}
        for name, host, port in self.config.advertised_listeners():
            if name == listener:
                if port == 0 and name in bound:
                    port = bound[name][1]
                if not host or host in ("0.0.0.0", "::"):
                    host = "127.0.0.1" if not host or host == "0.0.0.0" else "::1"
                return host, port
        name, host, port = self.server.bound[0]
        return host, port

    # -- the cluster (cluster/cluster_broker.py answers these for a ZooKeeper cluster) ----------

    @property
    def waits_for_replicas(self) -> bool:
        """Whether acks=all writes wait for other replicas; on a single node an append is committed."""
        return self.leadership.waits_for_replicas

    def live_brokers(self, listener: str) -> list[tuple[int, str, int, str | None]]:
        """(node id, host, port, rack) of every live broker: here, this one."""
        host, port = self.advertised_endpoint(listener)
        return [(self.node_id, host, port, self.config["broker.rack"])]

    def live_broker_ids(self) -> list[int]:
        return self.metadata.live_brokers()

    def controller_id(self) -> int:
        return self.metadata.controller_id

    # -- feature flags (KIP-584, broker/features.py) -------------------------------------------

    def supported_features(self) -> dict[str, tuple[int, int]]:
        if self._supported_features is None:
            self._supported_features = supported_features()
        return self._supported_features

    def finalized_features(self) -> tuple[dict[str, int], int]:
        """({feature: finalized level}, epoch) as ApiVersions reports them."""
        stored = self.metadata.finalized_features or {}
        return effective_levels(stored, self.supported_features()), self.metadata.finalized_features_epoch

    def feature_level(self, name: str) -> int:
        """The finalized level of a feature (0 when not finalized)."""
        return self.finalized_features()[0].get(name, 0)

    def bootstrap_features(self) -> None:
        """A cluster that never stored finalized features starts at the highest supported levels."""
        if self.metadata.finalized_features is None:
            levels = bootstrap_levels(self.supported_features())
            self.metadata.bootstrap_finalized_features(levels)
            logger.info("finalized features bootstrapped: %s", ", ".join(f"{k}={v}" for k, v in sorted(levels.items())))

    def update_features(self, updates: list[FeatureUpdate], validate_only: bool) -> ErrorCode:
        """UpdateFeatures: apply all updates or none (raises features.InvalidFeatureUpdate)."""
        current, _ = self.finalized_features()
        proposed = plan_feature_updates(current, self.supported_features(), updates, self.node_id)
        if not validate_only and proposed != current:
            epoch = self.metadata.set_finalized_features(proposed)
            logger.info("finalized features changed to %s (epoch %d)",
                     ", ".join(f"{k}={v}" for k, v in sorted(proposed.items())) or "none", epoch)
        return ErrorCode.NONE

    def elect_leaders(self, election_type: int, requested):
        """ElectLeaders: on a single node each partition's only replica leads already."""
        return elect_leaders(self.metadata, election_type, requested, set(self.live_broker_ids()))

    def alter_partition_reassignments(self, requested, allow_replication_factor_change):
        """AlterPartitionReassignments: on a single node every partition is already on its only
        valid target, this node (cluster/partition_reassignment.py)."""
        return single_node_outcomes(self.metadata, self.node_id, requested, allow_replication_factor_change)

    def list_partition_reassignments(self, requested):
        """Ongoing reassignments, {(topic, partition): Reassignment}: never any on a single node."""
        return {}

    def leadership_error(self, topic: str, partition: int) -> ErrorCode:
        """NONE when this broker leads the partition; what to answer otherwise (broker/leadership.py)."""
        return self.leadership.leadership_error(topic, partition)

    def coordinator_for(self, key_type: int, key: str, listener: str) -> tuple[ErrorCode, int, str, int]:
        """(error, node id, host, port) of the group or transaction coordinator for a key: this
        node, once the internal topic exists (see `start_coordinators`)."""
        error = self._ensure_coordinator(key_type)
        if error is not None:
            return error, -1, "", -1
        host, port = self.advertised_endpoint(listener)
        return ErrorCode.NONE, self.node_id, host, port

    async def await_replication(self, partitions: list[tuple[str, int]], timeout_ms: int
                                ) -> dict[tuple[str, int], ErrorCode]:
        """acks=all: wait until the in-sync replicas have what this leader appended to each
        partition so far; the error per partition."""
        workers = self.workers
        if workers is None or not self.leadership.waits_for_replicas:
            return await self.leadership.await_replication(partitions, timeout_ms)
        # A cluster broker's workers: each partition's owner knows its in-sync replicas
        # (broker/workers/calls.py, `replicated`).
        return await self._wait_at_owners(
            partitions, lambda owned: self.leadership.await_replication(owned, timeout_ms), "replicated",
            lambda owned: (owned, timeout_ms), ErrorCode.NOT_LEADER_OR_FOLLOWER)

    async def _wait_at_owners(self, partitions: list[tuple[str, int]], here, op: str, meta_of,
                              unanswered: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
        """A wait per partition run by each partition's owner among the workers: `here(owned)` for
        this worker's, the `op` call (meta `meta_of(owned)`) for another's; `unanswered` for those of
        an owner that could not answer. The error per partition, in the order given."""
        workers = self.workers
        by_owner: dict[int, list[tuple[str, int]]] = {}
        for tp in partitions:
            by_owner.setdefault(workers.owner(*tp), []).append(tp)
        calls = {owner: asyncio.ensure_future(here(owned) if owner == workers.index
                                              else workers.links[owner].call(op, meta_of(owned)))
                 for owner, owned in by_owner.items()}
        await asyncio.wait(calls.values())
        errors: dict[tuple[str, int], ErrorCode] = {}
        for owner, call in calls.items():
            owned = by_owner[owner]
            if call.exception() is not None:
                errors.update(dict.fromkeys(owned, unanswered))
            elif owner == workers.index:
                errors.update(call.result())
            else:
                errors.update(zip(owned, (ErrorCode(e) for e in call.result()[0])))
        return {tp: errors[tp] for tp in partitions}

    async def schema_subjects(self, schema_id: int, fresh: bool = False) -> list[tuple[str, list[str]]]:
        """(subject, the schema's record names) for each live subject version registered with the
        id in `_schemas`; with several workers asked of the worker owning `_schemas` and cached for
        SCHEMA_LOOKUP_CACHE_SECONDS unless `fresh` (what a record failed against is asked again, so
        only a subject deleted meanwhile is seen that much later)."""
        workers = self.workers
        if workers is not None and not workers.owns(SCHEMAS_TOPIC, 0):
            now = time.monotonic()
            cached = self._schema_subjects_cache.get(schema_id)
            if cached is not None and cached[0] > now and not fresh:
                return cached[1]
            if len(self._schema_subjects_cache) > SCHEMA_LOOKUP_CACHE_SIZE:
                self._schema_subjects_cache.clear()
            found, _, _ = await workers.links[workers.owner(SCHEMAS_TOPIC, 0)].call("schema_subjects", schema_id)
            found = [(subject, list(records)) for subject, records in found]
            self._schema_subjects_cache[schema_id] = (now + SCHEMA_LOOKUP_CACHE_SECONDS, found)
            return found
        if self._schema_lookup is None:
            factory = type(self).schema_lookup_factory
            if factory is None:
                return []
            self._schema_lookup = factory(self)
        return self._schema_lookup.subjects_of(schema_id)

    async def await_durable(self, partitions: list[tuple[str, int]], timeout_ms: int
                            ) -> dict[tuple[str, int], ErrorCode]:
        """A coordinator's write (committed offsets, the transaction log) counts once it is as safe
        as an acknowledged produce: in a cluster the in-sync replicas have it (Kafka's acks=-1), and
        with log.flush.on.ack it is on this broker's disk, both waited for at once; the first error
        per partition (NONE when it is safe)."""
        waits = []
        if self.leadership.waits_for_replicas:
            waits.append(self.await_replication(partitions, timeout_ms))
        if self.flush_on_ack:
            waits.append(self.await_synced(partitions))
        errors = dict.fromkeys(partitions, ErrorCode.NONE)
        for result in await asyncio.gather(*waits):
            for tp, error in result.items():
                if error != ErrorCode.NONE and errors.get(tp) == ErrorCode.NONE:
                    errors[tp] = error
        return errors

    async def await_synced(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        """log.flush.on.ack: wait until what was appended to each partition so far is on stable
        storage; with several workers each partition's owner syncs it (broker/workers/calls.py,
        `synced`: a marker written through WriteTxnMarkers at another worker, say)."""
        workers = self.workers
        if workers is None or all(workers.owns(*tp) for tp in partitions):
            return await self.synced_here(partitions)
        return await self._wait_at_owners(partitions, self.synced_here, "synced", lambda owned: owned,
                                          ErrorCode.KAFKA_STORAGE_ERROR)

    async def synced_here(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        """log.flush.on.ack: wait until what this process appended to each partition so far is on
        stable storage (log/group_commit.py); KAFKA_STORAGE_ERROR for those whose sync failed
        (their log dir goes offline when the error says the disk failed), NONE otherwise."""
        logs = {}
        for tp in partitions:
            plog = self.logs.get(*tp)
            if plog is not None:
                logs[tp] = plog
        errors = dict.fromkeys(partitions, ErrorCode.NONE)
        if not logs:
            return errors
        loop = asyncio.get_running_loop()
        if self.group_commit is None:
            self.group_commit = GroupCommit(self.log_flusher, loop.call_soon_threadsafe)
        answer = loop.create_future()

        def synced(failed) -> None:
            if not answer.done():  # not cancelled (the connection closed meanwhile)
                answer.set_result(failed)

        self.group_commit.when_synced(logs.values(), synced)
        failed = await answer
        for tp, plog in logs.items():
            error = failed.get(plog)
            if error is not None:
                logger.error("Error while syncing %s-%d before acknowledging it: %s", *tp, error)
                self.logs.handle_storage_error(*tp, error)
                errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
        return errors

    async def controlled_shutdown(self) -> None:
        """Before the listeners close: move leadership away (nothing to move on a single node)."""

    def write_txn_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, committed: bool,
                          partitions, transaction_version: int = 0) -> dict[tuple[str, int], ErrorCode]:
        """WriteTxnMarkers: append a COMMIT or ABORT marker to each partition this broker leads;
        the others answer their leadership error. The error per partition, in the order given."""
        refused = {}
        leading = []
        for topic, partition in partitions:
            error = self.leadership.leadership_error(topic, partition)
            if error == ErrorCode.NONE:
                leading.append((topic, partition))
            else:
                refused[(topic, partition)] = error
        written = write_txn_markers(self, producer_id, producer_epoch, coordinator_epoch, committed, leading,
                                    transaction_version)
        return {tp: refused[tp] if tp in refused else written[tp] for tp in partitions}

    # -- topics ------------------------------------------------------------------------------

    def group_config(self, group_id: str, name: str):
        """What the coordinators use for group config `name` in this group: its override clamped to
        the broker's bounds, or the broker's value (broker/group_configs.py)."""
        return group_configs.effective(self.config, self.metadata.group_configs.get(group_id, {}), name)

    def topic_config(self, meta: TopicMeta) -> dict:
        """Effective topic config: broker defaults overlaid with the topic's overrides."""
        config = self.config.topic_defaults()
        config.update(meta.configs)
        return config

    def _become_leader(self, topic: str, partition: int, plog) -> None:
        """What Kafka's Partition.makeLeader does to the local log: the leader epoch starts at the
        log end offset, and, this node being the only in-sync replica, everything in the log is
        committed (the high watermark moves to the log end offset)."""
        state = self.metadata.partition_state(topic, partition)
        if state.leader_epoch >= 0 and (plog.latest_epoch() is None or plog.latest_epoch() < state.leader_epoch):
            plog.leader_epoch_cache.assign(state.leader_epoch, plog.log_end_offset)
        plog.high_watermark = plog.log_end_offset

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, object], assignment: dict[int, list[int]] | None = None) -> TopicMeta:
        """Create a topic; a manual `assignment` (partition -> replicas, checked by CreateTopics)
        can only name this node here, where every partition is placed anyway."""
        meta = self.metadata.create_topic(name, partitions, replication_factor, configs)
        effective = self.topic_config(meta)
        owns = self.owns
        try:
            for partition in range(partitions):
                if owns(name, partition):  # the other workers open theirs when they see the topic
                    self._become_leader(name, partition, self.logs.get_or_create(name, partition, effective))
        except (OSError, KafkaStorageError) as exc:
            # A log that cannot be created fails the topic (KAFKA_STORAGE_ERROR): what was made of
            # it goes, so a retry once the disk is back starts afresh.
            logger.error("creating topic %s failed: %s", name, exc)
            self._undo_topic_creation(name)
            raise KafkaStorageError(str(exc)) from exc
        logger.info("created topic %s with %d partitions (id %s)", name, partitions, meta.topic_id)
        return meta

    def _undo_topic_creation(self, name: str) -> None:
        try:
            self.delete_topic(name)
        except Exception:  # noqa: BLE001 - the disk that failed the creation may fail this too
            logger.exception("could not remove topic %s after its creation failed", name)

    def delete_topic(self, name: str) -> TopicMeta:
        meta = self.metadata.delete_topic(name)
        self.logs.delete_partitions([(name, partition) for partition in range(meta.partitions)
                                     if self.owns(name, partition)])
        logger.info("deleted topic %s", name)
        return meta

    def add_partitions(self, name: str, total: int, assignment: list[list[int]] | None = None) -> None:
        """Grow a topic to `total` partitions; a manual `assignment` (the new partitions' replicas)
        can only name this node here."""
        meta = self.metadata.topic(name)
        effective = self.topic_config(meta)
        first_new = meta.partitions
        # The logs first: when one cannot be created (KAFKA_STORAGE_ERROR), the topic stays as it was.
        added = [partition for partition in range(first_new, total) if self.owns(name, partition)]
        try:
            logs = [self.logs.get_or_create(name, partition, effective) for partition in added]
        except (OSError, KafkaStorageError) as exc:
            logger.error("adding partitions to %s failed: %s", name, exc)
            for partition in added:
                try:
                    self.logs.delete_partition(name, partition)
                except OSError:
                    pass
            raise KafkaStorageError(str(exc)) from exc
        self.metadata.set_partition_count(name, total)
        for partition, plog in zip(added, logs):
            self._become_leader(name, partition, plog)

    def set_topic_configs(self, name: str, configs: dict[str, object]) -> None:
        self.metadata.set_topic_configs(name, configs)
        meta = self.metadata.topic(name)
        effective = self.topic_config(meta)
        for partition in range(meta.partitions):
            plog = self.logs.get(name, partition)
            if plog is not None:  # (another worker's partition)
                plog.update_config(effective)

    def reload_shared_state(self) -> None:
        """A worker other than the primary: re-read what the primary changed (broker/workers/runtime.py):
        the metadata, ACLs, SCRAM credentials, delegation tokens and dynamic broker configs; then open
        the logs of partitions it now owns, delete those of topics gone (or re-created under their
        name) and apply the topics' configs."""
        old = self.metadata
        self._open_failures = {}
        fresh = EmbeddedMetadata(self.config.log_dirs[0], self.node_id)
        fresh.load()
        self.metadata = fresh
        self.authorizer = self.credentials = self.tokens = None
        attach_security(self)
        apply_dynamic_broker_configs(self)
        gone = []
        for topic, partition in self.logs.partitions():
            meta = fresh.topic(topic)
            before = old.topic(topic)
            if (meta is None or partition >= meta.partitions
                    or (before is not None and before.topic_id != meta.topic_id)):
                gone.append((topic, partition))
        if gone:
            self.logs.delete_partitions(gone)
        owns = self.owns
        for meta in fresh.topics.values():
            effective = self.topic_config(meta)
            for partition in range(meta.partitions):
                if not owns(meta.name, partition):
                    continue
                plog = self.logs.get(meta.name, partition)
                if plog is None:
                    try:
                        plog = self.logs.get_or_create(meta.name, partition, effective)
                    except (OSError, KafkaStorageError) as exc:
                        logger.error("worker %d could not open %s-%d: %s", self.workers.index, meta.name, partition,
                                     exc)
                        if isinstance(exc, OSError):
                            self.logs.handle_storage_error(meta.name, partition, exc)  # (the dir goes offline)
                        self._open_failures[(meta.name, partition)] = str(exc)
                        continue
                    self._become_leader(meta.name, partition, plog)
                else:
                    plog.update_config(effective)

    def unopened_partitions(self, topic: str) -> list[str]:
        """Why each partition of `topic` this worker owns has no log (it could not be created): what
        the primary's CreateTopics or CreatePartitions answers (broker/workers/)."""
        meta = self.metadata.topic(topic)
        if meta is None:
            return []
        return [self._open_failures.get((topic, partition), f"the log of {topic}-{partition} could not be created")
                for partition in range(meta.partitions)
                if self.owns(topic, partition) and self.logs.get(topic, partition) is None]

    async def logs_everywhere(self, topic: str) -> str | None:
        """With several workers, after a topic was created or grew here (worker 0): every other
        worker opens its partitions' logs now; why one could not (KAFKA_STORAGE_ERROR), or None.
        On one process the logs were created with the topic."""
        workers = self.workers
        if workers is None:
            return None
        calls = [asyncio.ensure_future(link.call("open", topic)) for link in workers.links.values()]
        if not calls:
            return None
        await asyncio.wait(calls)
        for call in calls:
            if call.exception() is not None:
                return f"a worker could not open the logs of {topic}: {call.exception()}"
            failures = call.result()[0]
            if failures:
                return failures[0]
        return None

    def undo_added_partitions(self, name: str, count: int) -> None:
        """Back to `count` partitions after CreatePartitions failed at another worker: the added
        partitions' logs here go too (the other workers drop theirs when they see the count)."""
        meta = self.metadata.topic(name)
        added = [(name, partition) for partition in range(count, meta.partitions) if self.owns(name, partition)]
        self.metadata.set_partition_count(name, count)
        self.logs.delete_partitions([tp for tp in added if self.logs.get(*tp) is not None])

    def auto_create_topic(self, name: str) -> TopicMeta:
        return self.create_topic(name, int(self.config["num.partitions"]),
                                 int(self.config["default.replication.factor"]), {})

    def partition_log(self, topic: str, partition: int):
        """The log of a partition this broker leads, or None when there is no such partition."""
        meta = self.metadata.topic(topic)
        if meta is None or not 0 <= partition < meta.partitions:
            return None
        return self.logs.get(topic, partition)

    # -- the data path -----------------------------------------------------------------------

    def leader_epoch_error(self, topic: str, partition: int, requested: int, *,
                           any_negative_is_absent: bool = True) -> ErrorCode:
        """Kafka's check of a client's current_leader_epoch against the partition's. Fetch takes
        every negative epoch for "not given" (FetchRequest.optionalEpoch); ListOffsets and
        OffsetForLeaderEpoch only -1, so there -5 is older than any leader's: fenced."""
        if requested is None or requested == -1 or (requested < 0 and any_negative_is_absent):
            return ErrorCode.NONE
        state = self.metadata.partition_state(topic, partition)
        if requested > state.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        if requested < state.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        return ErrorCode.NONE

    def append_records(self, topic: str, partition: int, records, *, transactional_id=None,
                       transaction_operation: int = DEFAULT_ERROR, verification_guard=None) -> AppendResult:
        """Append a client's batch as the partition's leader. The caller asked `leadership_error`
        first (Produce does, before its min.insync.replicas check), so leadership is not asked again.

        The log validates the batch (log/validator.py: timestamp bounds, keys on compacted topics,
        the topic's codec raise log.errors.RecordValidationError). `transaction_operation`
        follows the Produce version (transaction_coordinator.produce_operation);
        `verification_guard` is that of a verification made before (in a cluster, at another
        broker's coordinator), None to verify here."""
        plog = self.logs.get(topic, partition)
        state = self.metadata.partition_state(topic, partition)
        if transactional_id is not None and self.transactions is not None and verification_guard is None:
            # KIP-890: a transaction's first write to a partition must follow AddPartitionsToTxn
            # (part 1), or adds the partition itself (part 2, Produce v12).
            verification_guard = self.transactions.verify_produce(topic, partition, plog, records, transactional_id,
                                                                  transaction_operation)
        try:
            info = plog.append(records, leader_epoch=state.leader_epoch, verification_guard=verification_guard)
        except (OSError, KafkaStorageError) as exc:
            self.logs.handle_storage_error(topic, partition, exc)
            raise
        self.leader_appended(topic, partition, plog)
        return AppendResult(info.base_offset, info.log_append_time, plog.log_start_offset)

    def leader_appended(self, topic: str, partition: int, plog) -> None:
        """After every append as leader (a client's batch, a transaction marker, a coordinator's
        records): the high watermark moves as far as the in-sync replicas allow, and the fetches
        waiting on the partition wake (a follower's too: it has something to replicate)."""
        self.leadership.leader_appended(topic, partition, plog)
        self.waiters.notify(topic, partition)

    def read_partition(self, topic: str, partition: int, offset: int, *, max_bytes: int, min_one: bool,
                       read_committed: bool, current_leader_epoch: int = -1, replica_id: int = -1) -> PartitionRead:
        """One partition's part of a Fetch, a consumer's or a follower's (replica_id >= 0). Errors
        carry -1 for the offsets, as Kafka's ReplicaManager.readFromLog answers them
        (createLogReadResult)."""
        error = self.leadership.leadership_error(topic, partition)
        if error != ErrorCode.NONE:
            return PartitionRead(error)
        plog = self.partition_log(topic, partition)
        if plog is None:
            return PartitionRead(ErrorCode.KAFKA_STORAGE_ERROR if self.logs.is_offline(topic, partition)
                                 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        epoch_error = self.leader_epoch_error(topic, partition, current_leader_epoch)
        if epoch_error != ErrorCode.NONE:
            return PartitionRead(epoch_error)
        follower = replica_id >= 0
        if follower:
            state = self.metadata.partition_state(topic, partition)
            if replica_id == self.node_id or replica_id not in state.replicas:
                # Kafka's Partition.followerReplicaOrThrow: a replica the leader does not know (on
                # a single node, every replica but this one).
                known_epoch = current_leader_epoch is not None and current_leader_epoch >= 0
                return PartitionRead(ErrorCode.UNKNOWN_LEADER_EPOCH if known_epoch
                                     else ErrorCode.NOT_LEADER_OR_FOLLOWER)
        high_watermark = plog.high_watermark
        last_stable = plog.last_stable_offset
        # A follower reads up to the log end offset: what it copies is what moves the high watermark.
        max_offset = None if follower else last_stable if read_committed else high_watermark
        try:
            records = plog.read_slice(offset, max_bytes, max_offset=max_offset, min_one_batch=min_one)
        except OffsetOutOfRange:
            return PartitionRead(ErrorCode.OFFSET_OUT_OF_RANGE)
        except OSError as exc:  # Kafka's readFromLog answers a failed read KAFKA_STORAGE_ERROR
            logger.warning("reading %s-%d failed: %s", topic, partition, exc)
            self.logs.handle_storage_error(topic, partition, exc)
            return PartitionRead(ErrorCode.KAFKA_STORAGE_ERROR)
        if follower:
            # Its fetch offset is its progress; the high watermark it is told may have moved with it.
            self.leadership.follower_fetched(topic, partition, replica_id, offset)
            return PartitionRead(ErrorCode.NONE, plog.high_watermark, plog.last_stable_offset, plog.log_start_offset,
                                 records, [])
        aborted = []
        if read_committed:
            aborted = [{"producer_id": txn.producer_id, "first_offset": txn.first_offset}
                       for txn in plog.aborted_transactions_for_read(offset, records)]
        return PartitionRead(ErrorCode.NONE, high_watermark, last_stable, plog.log_start_offset, records, aborted)

    def list_offset(self, topic: str, partition: int, timestamp: int, *, read_committed: bool,
                    current_leader_epoch: int = -1, from_consumer: bool = True) -> tuple[ErrorCode, int, int, int]:
        """(error, offset, timestamp, leader epoch) for ListOffsets; -1s when nothing matches.

        As Kafka's Partition.fetchOffsetForTimestamp: latest is the high watermark (the last
        stable offset for read_committed; the log end offset for a replica) with the current
        leader epoch; earliest is the log start offset with the epoch of the first leader-epoch
        entry when it starts there; a timestamp finds the first record at or after it.

        A leader that just took over knows the high watermark it had as a follower until the
        in-sync replicas fetch from it; answering that would move a consumer's latest offset back,
        so latest (and a timestamp found at or past it) is OFFSET_NOT_AVAILABLE, retriable, until
        the high watermark reaches the epoch's start (KAFKA-2334)."""
        error = self.leadership.leadership_error(topic, partition)
        if error != ErrorCode.NONE:
            return error, -1, -1, -1
        plog = self.partition_log(topic, partition)
        if plog is None:
            return (ErrorCode.KAFKA_STORAGE_ERROR if self.logs.is_offline(topic, partition)
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), -1, -1, -1
        epoch_error = self.leader_epoch_error(topic, partition, current_leader_epoch,
                                              any_negative_is_absent=False)
        if epoch_error != ErrorCode.NONE:
            return epoch_error, -1, -1, -1
        if not from_consumer:
            fetchable = plog.log_end_offset
        else:
            fetchable = plog.last_stable_offset if read_committed else plog.high_watermark
        not_available = from_consumer and self.leadership.high_watermark_behind_epoch_start(topic, partition)
        if timestamp == -1:  # LATEST_TIMESTAMP
            if not_available:
                return ErrorCode.OFFSET_NOT_AVAILABLE, -1, -1, -1
            return ErrorCode.NONE, fetchable, -1, self.metadata.partition_state(topic, partition).leader_epoch
        if timestamp in (-2, -4):  # EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP (no tiered storage here)
            first = plog.leader_epoch_cache.earliest_entry
            epoch = first.epoch if first is not None and first.start_offset <= plog.log_start_offset else -1
            return ErrorCode.NONE, plog.log_start_offset, -1, epoch
        if timestamp in (-5, -6):  # LATEST_TIERED, EARLIEST_PENDING_UPLOAD: no tiered storage here
            return ErrorCode.NONE, -1, -1, -1
        if timestamp == -3:  # MAX_TIMESTAMP
            found = plog.max_timestamp_offset()
        elif timestamp < 0:
            return ErrorCode.UNSUPPORTED_VERSION, -1, -1, -1
        else:
            found = plog.fetch_offset_by_timestamp(timestamp)
        if found is None or found[0] >= fetchable:
            if not_available and timestamp >= 0:
                return ErrorCode.OFFSET_NOT_AVAILABLE, -1, -1, -1
            return ErrorCode.NONE, -1, -1, -1
        offset, ts = found
        epoch = plog.epoch_for_offset(offset)
        return ErrorCode.NONE, offset, ts, -1 if epoch is None else epoch

    def delete_records(self, topic: str, partition: int, offset: int) -> tuple[ErrorCode, int]:
        """DeleteRecords: (error, new low watermark), as Kafka's ReplicaManager.deleteRecordsOnLocalLog
        and Partition.deleteRecordsOnLeader: internal topics and topics without the delete
        cleanup policy refuse; -1 means the high watermark; nothing beyond it can go."""
        meta = self.metadata.topic(topic)
        if meta is not None and meta.internal:
            return ErrorCode.INVALID_TOPIC_EXCEPTION, -1
        error = self.leadership.leadership_error(topic, partition)
        if error != ErrorCode.NONE:
            return error, -1
        plog = self.partition_log(topic, partition)
        if plog is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
        if "delete" not in plog.config.cleanup_policy:
            return ErrorCode.POLICY_VIOLATION, -1
        if offset == -1:  # HIGH_WATERMARK
            offset = plog.high_watermark
        if offset < 0 or offset > plog.high_watermark:
            return ErrorCode.OFFSET_OUT_OF_RANGE, -1
        if offset > plog.log_start_offset:
            plog.delete_records_before(offset)
            # A restart must not bring the deleted records back.
            self.logs.checkpoint_log_start_offsets()
        return ErrorCode.NONE, plog.log_start_offset

    def end_offset_for_epoch(self, topic: str, partition: int, epoch: int, *,
                             current_leader_epoch: int = -1) -> tuple[ErrorCode, int, int]:
        error = self.leadership.leadership_error(topic, partition)
        if error != ErrorCode.NONE:
            return error, -1, -1
        plog = self.partition_log(topic, partition)
        if plog is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1
        epoch_error = self.leader_epoch_error(topic, partition, current_leader_epoch,
                                              any_negative_is_absent=False)
        if epoch_error != ErrorCode.NONE:
            return epoch_error, -1, -1
        found_epoch, end_offset = plog.end_offset_for_epoch(epoch)
        return ErrorCode.NONE, found_epoch, end_offset
