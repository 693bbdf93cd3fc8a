"""The broker in cluster mode: node.py's Broker over ZooKeeper metadata and replicated partitions.

`kafka-wire serve` runs this class when `zookeeper.connect` is set. What changes from the single
node:
- metadata (topics, partition leaders, ISRs, live brokers) lives in ZooKeeper (ZkMetadata); topic
  changes are ZooKeeper writes every broker sees through its watches;
- a partition's log is here when this broker holds one of its replicas; only its leader appends,
  answers consumers, ListOffsets, OffsetForLeaderEpoch and DeleteRecords; the others answer
  NOT_LEADER_OR_FOLLOWER (or LEADER_NOT_AVAILABLE while it has none) and fetch from the leader;
- the high watermark is the ISR's, not the log end offset: the data path is node.py's, and the
  ReplicaManager is its PartitionLeadership (broker/leadership.py), which answers both;
- producer ids come in blocks claimed in ZooKeeper, so no two brokers hand out the same;
- dynamic broker configs and client quotas live in ZooKeeper (/config/brokers, /config/users, ...):
  the broker that receives the request writes them, every broker applies them when notified;
- groups are served by the leader of their __consumer_offsets partition (group_failover.py);
- on SIGTERM, controlled shutdown moves leadership away before the broker stops.
"""

from __future__ import annotations

import asyncio
import json
import logging

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NoNodeError, NodeExistsError

from coordinator.offsets_store import OFFSETS_TOPIC
from coordinator.txn_log import TRANSACTION_STATE_TOPIC
from kafka_wire.errors import ErrorCode

from ..dynamic_broker_config import apply_dynamic_broker_configs
from ..node import Broker
from ..security.delegation_tokens import DelegationTokenManager
from .controller import Controller, controlled_shutdown_moves
from .group_failover import ReplicatedGroupCoordinator
from .replica_assignment import InvalidReplicationFactor
from .replica_manager import ReplicaManager
from .transaction_failover import ReplicatedTransactionCoordinator
from .zk_delegation_tokens import ZkTokenStore
from .zk_metadata import (
    BROKER_IDS_PATH,
    FeaturesChanged,
    TopicExists,
    ZkMetadata,
    ZkProducerIdManager,
    broker_registration,
)

logger = logging.getLogger("kafka_wire.cluster")

# Where each broker's Schema Registry listens (registry/cluster.py): an ephemeral znode per broker
# holding {"url": ...}, gone with the broker's session, as /brokers/ids/<id> is. Confluent's
# registries find each other through a Kafka group instead; here the brokers already share ZooKeeper.
REGISTRY_URLS_PATH = "/kafka-wire/schema-registry"


class ClusterBroker(Broker):
    """One broker of a ZooKeeper-coordinated cluster."""

    # A worker other than 0 leads no internal partition; its transaction coordinator asks the
    # coordinator's broker (this one: worker 0) about transactional writes, as another broker would.
    coordinators_on_every_worker = True

    def __init__(self, config, workers=None) -> None:
        super().__init__(config, workers)
        session_timeout = int(config["zookeeper.session.timeout.ms"]) / 1000
        # Reconnect at most ~1.4 s apart, however long ZooKeeper was away, as ZooKeeper's Java
        # client does (it sleeps under a second after trying every host): kazoo's default backoff
        # doubles up to 60 s, and a broker leads nothing while disconnected, so after a long
        # outage the cluster stayed down for up to a minute after ZooKeeper was back.
        self.zk = KazooClient(hosts=config["zookeeper.connect"], timeout=session_timeout,
                              connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_jitter": 0.4,
                                                "max_delay": 1.0})
        self.metadata: ZkMetadata = ZkMetadata(self.zk, self.node_id, config.log_dirs[0])
        self.producer_ids = ZkProducerIdManager(self.zk, self.node_id)
        self.groups = ReplicatedGroupCoordinator()
        self.transactions = ReplicatedTransactionCoordinator()
        self.replicas: ReplicaManager | None = None
        self.controller: Controller | None = None
        self._registered = False
        self._session_lost = False
        self.registry_url: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def load(self) -> None:
        self._loop = asyncio.get_running_loop()
        connect_timeout = int(self.config["zookeeper.connection.timeout.ms"]
                             or self.config["zookeeper.session.timeout.ms"]) / 1000
        self.zk.start(timeout=connect_timeout)
        self.zk.add_listener(self._on_zk_state)
        # Delegation tokens are the cluster's: in ZooKeeper, as Kafka's ZooKeeper mode kept them.
        self.tokens = DelegationTokenManager.from_config(self.config, ZkTokenStore(self.zk, self._loop))
        if self.tokens.enabled:
            self.tokens.store.load()
        self.logs.load()
        self.metadata.load()
        if self.is_primary:
            self.bootstrap_features()
        # KIP-226 configs from ZooKeeper before any partition log opens; changes arrive through
        # the metadata's config change notifications (broker_configs_changed).
        apply_dynamic_broker_configs(self)
        self.metadata.observers.append(self)
        # Logs of topics deleted (or partitions moved away) while this broker was down go.
        for topic, partition in list(self.logs.partitions()):
            meta = self.metadata.topic(topic)
            if meta is None or partition >= meta.partitions or self.node_id not in self.metadata.replicas(topic, partition):
                self.logs.delete_partition(topic, partition)
        self.logs.mover.recover()  # moves between log dirs a restart interrupted
        self.replicas = ReplicaManager(self)
        # The data path (node.py) asks the replica manager who leads and where the high watermark is.
        self.leadership = self.replicas
        if self.is_primary:
            self.controller = Controller(self.zk, self.metadata, self.node_id, self.config)

    @property
    def is_primary(self) -> bool:
        """This process registers the broker and stands for controller: the only one, or worker 0 of
        several (broker/workers/; each worker has its own ZooKeeper session and leads and follows
        the partitions it owns)."""
        return self.workers is None or self.workers.is_primary

    def start_background_tasks(self) -> None:
        """After the listeners are bound: register, then lead and follow, then stand for controller."""
        super().start_background_tasks()
        if self.is_primary:
            self.register()
        self.replicas.start()
        if self.controller is not None:
            self.controller.start()

    def reload_shared_state(self) -> None:
        """A worker other than the primary, after worker 0 saved shared state: the ACLs and SCRAM
        credentials are this broker's files (re-read); topics, configs, quotas and delegation tokens
        are ZooKeeper's, which this worker watches itself."""
        from ..security import attach as attach_security

        self.authorizer = self.credentials = None
        attach_security(self)

    def register(self) -> None:
        """The ephemeral /brokers/ids/<id> znode (Kafka's broker registration)."""
        path = f"{BROKER_IDS_PATH}/{self.node_id}"
        endpoints = [(name, *self.advertised_endpoint(name)) for name, _, _ in self.config.advertised_listeners()]
        protocols = {name: self.config.security_protocol(name) for name, _, _ in endpoints}
        data = broker_registration(endpoints, protocols, self.config["broker.rack"])
        while True:
            try:
                self.zk.create(path, data, ephemeral=True, makepath=True)
                break
            except NodeExistsError:
                _, stat = self.zk.get(path)
                if stat.ephemeralOwner == self.zk.client_id[0]:
                    self.zk.set(path, data)
                    break
                # Left by this broker's previous life, whose session has not expired yet.
                logger.info("replacing the registration of a previous session of broker %d", self.node_id)
                try:
                    self.zk.delete(path)
                except Exception:
                    pass
        self._registered = True
        logger.info("registered broker %d at %s", self.node_id, endpoints)
        if self.registry_url is not None:
            self._write_registry_url()

    def advertise_registry(self, url: str) -> None:
        """This broker serves the Schema Registry at `url`: say so in ZooKeeper (again after a lost
        session, with the broker's registration)."""
        self.registry_url = url
        self._write_registry_url()

    def _write_registry_url(self) -> None:
        path = f"{REGISTRY_URLS_PATH}/{self.node_id}"
        data = json.dumps({"url": self.registry_url}).encode()
        for _ in range(3):
            try:
                self.zk.create(path, data, ephemeral=True, makepath=True)
                return
            except NodeExistsError:
                try:
                    _, stat = self.zk.get(path)
                    if stat.ephemeralOwner == self.zk.client_id[0]:
                        self.zk.set(path, data)
                        return
                    self.zk.delete(path)  # left by this broker's previous session
                except NoNodeError:
                    pass

    def registry_url_of(self, node_id: int) -> str | None:
        """The Schema Registry URL broker `node_id` advertises; None when it serves none (or is
        gone). A ZooKeeper read: call it off the event loop."""
        try:
            data, _ = self.zk.get(f"{REGISTRY_URLS_PATH}/{node_id}")
            return str(json.loads(data)["url"])
        except (NoNodeError, ValueError, KeyError, TypeError):
            return None

    def _on_zk_state(self, state) -> None:
        """kazoo's thread: connection lost (SUSPENDED), session lost, or back; act on the loop."""
        if state == KazooState.SUSPENDED:
            self._post(self._connection_lost_on_loop)
        elif state == KazooState.LOST:
            self._session_lost = True
            self._post(self._connection_lost_on_loop)
            self._post(self._session_lost_on_loop)
        elif state == KazooState.CONNECTED:
            if self._session_lost:
                self._session_lost = False
                self._post(self._session_restored_on_loop)
            self._post(self._connection_back_on_loop)

    def _post(self, fn) -> None:
        if self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(fn)
            except RuntimeError:
                pass

    def _connection_lost_on_loop(self) -> None:
        if self.replicas is not None and self.replicas.started:
            self.replicas.fence()

    def _connection_back_on_loop(self) -> None:
        if self.replicas is not None and self.replicas.started:
            self.replicas.unfence()

    def _session_lost_on_loop(self) -> None:
        logger.warning("ZooKeeper session lost")
        if self.controller is not None:
            self.controller.session_lost()

    def _session_restored_on_loop(self) -> None:
        if not self._registered:
            return
        logger.info("ZooKeeper session re-established: registering again")
        try:
            self.register()
        except Exception:
            logger.exception("registration after session loss failed")
        if self.controller is not None:
            self.controller.session_restored()

    async def controlled_shutdown(self) -> None:
        """Move leadership away (controlled.shutdown.enable), stop replicating, leave ZooKeeper."""
        if self.replicas is None:
            return
        try:
            if self.is_primary:
                await self._move_leadership_away()
            else:
                await self._await_leadership_moved()
        except Exception:
            # ZooKeeper gone, say: the partitions fail over when our session expires instead.
            logger.exception("controlled shutdown failed; stopping anyway")
        if self.controller is not None:
            self.controller.stop()
        await self.replicas.stop()
        self._registered = False
        self.metadata.close()
        await asyncio.get_running_loop().run_in_executor(None, self._close_zk)

    async def _move_leadership_away(self) -> None:
        await self.replicas.stop_fetching()
        if self.config["controlled.shutdown.enable"] and self._registered:
            retries = int(self.config["controlled.shutdown.max.retries"])
            backoff = int(self.config["controlled.shutdown.retry.backoff.ms"]) / 1000
            for attempt in range(retries):
                remaining = controlled_shutdown_moves(self.metadata, self.node_id)
                # Our own writes are in the cache; let the replica manager step down (yield once).
                await asyncio.sleep(0)
                if not remaining:
                    break
                logger.info("controlled shutdown: still leading %d partitions (no other ISR member alive)",
                         len(remaining))
                if attempt + 1 < retries:
                    await asyncio.sleep(min(backoff, 1.0))

    async def _await_leadership_moved(self) -> None:
        """A worker other than the primary: worker 0 moves the whole broker's leadership away (it is
        registered); this worker keeps serving its partitions until their states name another leader,
        or none can take them (no other in-sync replica alive), or worker 0's retries are over."""
        await self.replicas.stop_fetching()
        if not self.config["controlled.shutdown.enable"]:
            return
        retries = int(self.config["controlled.shutdown.max.retries"])
        backoff = int(self.config["controlled.shutdown.retry.backoff.ms"]) / 1000
        deadline = asyncio.get_running_loop().time() + retries * min(backoff, 1.0) + 2.0
        while asyncio.get_running_loop().time() < deadline:
            others = set(self.metadata.brokers) - {self.node_id}
            states = [self.metadata.leader_and_isr(*tp) for tp, hosted in self.replicas.partitions.items()
                      if hosted.is_leader]
            if not any(state is not None and others.intersection(state.isr) for state in states):
                return
            await asyncio.sleep(0.05)

    def _close_zk(self) -> None:
        try:
            self.zk.stop()
            self.zk.close()
        except Exception:
            logger.exception("closing the ZooKeeper session failed")

    def close(self) -> None:
        if self.zk.connected:
            self.metadata.close()
            self.tokens.store.close()
            self._close_zk()
        super().close()

    def broker_configs_changed(self) -> None:
        """Another broker changed the default broker's dynamic configs, or this broker's own."""
        apply_dynamic_broker_configs(self)

    # -- cluster questions the handlers ask ------------------------------------------------------

    def inter_broker_listener(self) -> str:
        name = self.config["inter.broker.listener.name"]
        return name or self.config.listeners()[0][0]

    def live_brokers(self, listener: str) -> list[tuple[int, str, int, str | None]]:
        """(node id, host, port, rack) of every live broker, on the listener the client used."""
        brokers = []
        for node_id, info in sorted(self.metadata.brokers.items()):
            endpoint = info.endpoint(listener)
            if endpoint is not None:
                brokers.append((node_id, endpoint[0], endpoint[1], info.rack))
        return brokers

    def elect_leaders(self, election_type: int, requested):
        """ElectLeaders: the controller decides; None on any other broker (NOT_CONTROLLER)."""
        if self.controller is None or not self.controller.active:
            return None
        return self.controller.elect_leaders(election_type, requested)

    def update_features(self, updates, validate_only: bool) -> ErrorCode:
        """UpdateFeatures: the controller writes /feature (conditionally: a write that lost a race
        is planned again on the new levels); NOT_CONTROLLER on any other broker, as Kafka's
        ZooKeeper mode answers."""
        if self.controller is None or not self.controller.active:
            return ErrorCode.NOT_CONTROLLER
        for _ in range(3):
            try:
                return super().update_features(updates, validate_only)
            except FeaturesChanged:
                continue
        return ErrorCode.NOT_CONTROLLER

    def alter_partition_reassignments(self, requested, allow_replication_factor_change):
        """AlterPartitionReassignments: the controller moves partitions; None on any other broker
        (NOT_CONTROLLER)."""
        if self.controller is None or not self.controller.active:
            return None
        return self.controller.alter_partition_reassignments(requested, allow_replication_factor_change)

    def list_partition_reassignments(self, requested):
        """{(topic, partition): Reassignment} of the ongoing reassignments among `requested`
        (None: all), from the topic znodes every broker watches."""
        ongoing = {(topic, partition): r for topic, partition, r in self.metadata.ongoing_reassignments()}
        if requested is None:
            return ongoing
        return {tp: ongoing[tp] for tp in requested if tp in ongoing}

    def leadership_changed(self, topic: str, partition: int, is_leader: bool) -> None:
        """The replica manager made this broker leader of a partition, or took it away."""
        if topic == OFFSETS_TOPIC:
            if is_leader:
                self.groups.load_partition(partition)
            else:
                self.groups.unload_partition(partition)
        elif topic == TRANSACTION_STATE_TOPIC:
            if is_leader:
                self.transactions.become_leader(partition)
            else:
                self.transactions.resign(partition)

    def coordinator_for(self, key_type: int, key: str, listener: str) -> tuple[ErrorCode, int, str, int]:
        """FindCoordinator: the leader of the key's partition of __consumer_offsets (groups) or
        __transaction_state (transactional ids), creating the topic on first use as Kafka does."""
        if key_type == 0:
            topic, store, coordinator = OFFSETS_TOPIC, self.groups.offsets_topic, self.groups
        else:
            topic, store, coordinator = TRANSACTION_STATE_TOPIC, self.transactions.state_log, self.transactions
        if store is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
        if self.metadata.topic(topic) is None:
            try:
                store.ensure_created()
            except (InvalidReplicationFactor, TopicExists):
                pass
            except Exception:
                logger.exception("creating %s failed", topic)
            if self.metadata.topic(topic) is None:
                return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
        if not store.num_partitions:
            store.num_partitions = self.metadata.topic(topic).partitions
        partition = coordinator.partition_for(key)
        state = self.metadata.leader_and_isr(topic, partition)
        if state is None or state.leader < 0:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
        info = self.metadata.brokers.get(state.leader)
        endpoint = info.endpoint(listener) if info is not None else None
        if endpoint is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
        return ErrorCode.NONE, state.leader, endpoint[0], endpoint[1]

    # -- topics (ZooKeeper writes; every broker applies them from its watches) -----------------

    def create_topic(self, name, partitions, replication_factor, configs, assignment=None):
        meta = self.metadata.create_topic(name, partitions, replication_factor, configs, assignment=assignment)
        logger.info("created topic %s with %d partitions, replication factor %d (id %s)", name, partitions,
                 replication_factor, meta.topic_id)
        return meta

    def delete_topic(self, name):
        meta = self.metadata.delete_topic(name)
        logger.info("deleted topic %s", name)
        return meta

    def add_partitions(self, name, total, assignment=None):
        self.metadata.set_partition_count(name, total, assignment=assignment)

    async def logs_everywhere(self, topic: str) -> str | None:
        """Nothing to wait for: each replica's log is created when its broker (its owning worker)
        sees the partition's state in ZooKeeper, as on other brokers of the cluster."""
        return None

    def set_topic_configs(self, name, configs):
        self.metadata.set_topic_configs(name, configs)

    def auto_create_topic(self, name):
        try:
            return super().auto_create_topic(name)
        except TopicExists:
            return self.metadata.topic(name)
        except InvalidReplicationFactor as exc:
            logger.warning("auto-creating topic %s failed: %s", name, exc)
            return None
