"""Cluster metadata kept in ZooKeeper under Kafka's ZooKeeper-mode paths, cached for the event loop.

    /cluster/id                                    {"version":"1","id":"<cluster id>"}
    /brokers/ids/<id>                              ephemeral: endpoints, host, port, rack (registration)
    /brokers/topics/<topic>                        {"version":3,"topic_id":..,"partitions":{"0":[1,2,3]},
                                                    "adding_replicas":{"0":[3]},"removing_replicas":{"0":[4]}}
    /brokers/topics/<topic>/partitions/<p>/state   {"version":1,"leader":1,"leader_epoch":0,"isr":[1,2,3],
                                                    "controller_epoch":1}
    /config/topics/<topic>                         {"version":1,"config":{"retention.ms":"1000"}}
    /config/brokers/<default>, /config/brokers/<id> dynamic broker configs (KIP-226)
    /config/users/.., /config/clients/.., /config/ips/..  client quotas (zk_entity_configs.py)
    /config/changes/config_change_<seq>            {"version":2,"entity_path":"brokers/<default>"}
    /controller, /controller_epoch                 the controller's election (controller.py)
    /latest_producer_id_block                      producer id blocks (ZkProducerIdManager)
    /feature                                       {"version":2,"status":1,"features":{"transaction.version":
                                                    {"max_version_level":2}}}: finalized features (KIP-584),
                                                    the znode's version is their epoch
    /admin/delete_topics                           created for Kafka's tools; deletions here are direct

ZkMetadata is a MetadataStore (broker/metadata.py), as the embedded store is: topic(), topics,
topic_by_id(), partition_state(), create_topic(), ... answered from a cache. kazoo's watches run on
kazoo's threads; they post every change to the event loop, so the cache only changes on the loop,
between two handlers' synchronous steps. Writes are synchronous ZooKeeper calls (loopback
milliseconds) that also update the cache at once, so a handler sees its own write. Partition
states change only through conditional (versioned) updates: the controller and the leaders race
safely, as in Kafka.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from ..config import TOPIC_KEYS, parse_topic_configs
from ..metadata import (
    META_PROPERTIES,
    PartitionState,
    QuotaEntity,
    TopicCatalog,
    TopicMeta,
    random_cluster_id,
    random_topic_id,
    read_meta_properties,
    write_atomically,
)
from .partition_reassignment import Reassignment
from .replica_assignment import InvalidReplicationFactor, assign_replicas
from .zk_entity_configs import (
    BROKER_CONFIGS_PATH,
    CHANGE_EXPIRATION_MS,
    CONFIG_CHANGE_PREFIX,
    CONFIG_CHANGES_PATH,
    GROUP_CONFIGS_PATH,
    QUOTA_ENTITY_PATHS,
    broker_config_path,
    broker_of_path,
    change_notification,
    change_sequence,
    entity_config_znode,
    group_config_path,
    group_of_path,
    notified_entity_path,
    parse_entity_config,
    parse_quotas,
    quota_entity_of_path,
    quota_entity_path,
    render_quota,
)

logger = logging.getLogger("kafka_wire.cluster")

CLUSTER_ID_PATH = "/cluster/id"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
TOPIC_CONFIGS_PATH = "/config/topics"
CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
DELETE_TOPICS_PATH = "/admin/delete_topics"
FEATURE_PATH = "/feature"
PERSISTENT_PATHS = (BROKER_IDS_PATH, TOPICS_PATH, TOPIC_CONFIGS_PATH, CONFIG_CHANGES_PATH, BROKER_CONFIGS_PATH,
                    *QUOTA_ENTITY_PATHS, DELETE_TOPICS_PATH, "/brokers/seqid", "/isr_change_notification", "/cluster")

NO_LEADER = -1


def topic_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions"


def state_path(topic: str, partition: int) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions/{partition}/state"


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


class TopicExists(Exception):
    """CreateTopics for a name ZooKeeper already has (TOPIC_ALREADY_EXISTS)."""


def feature_znode(levels: dict[str, int]) -> bytes:
    """Kafka's FeatureZNode, version 2 (max levels only), status enabled."""
    return json.dumps({"version": 2, "status": 1, "features": {
        name: {"max_version_level": level} for name, level in sorted(levels.items())}}).encode()


def parse_feature_znode(data: bytes | None) -> dict[str, int]:
    """Finalized levels from a FeatureZNode (version 1 also carries min_version_level; status 0,
    disabled, finalizes nothing)."""
    if not data:
        return {}
    node = json.loads(data)
    if int(node.get("status", 1)) != 1:
        return {}
    return {name: int(levels["max_version_level"]) for name, levels in node.get("features", {}).items()
            if int(levels.get("max_version_level", 0)) > 0}


class FeaturesChanged(Exception):
    """The finalized features changed in ZooKeeper since we read them (a conditional update lost)."""


@dataclass
class LeaderAndIsr:
    """A partition's state znode: who leads, in which epoch, who is in sync; zk_version for
    conditional updates (Kafka's LeaderIsrAndControllerEpoch with its zkVersion)."""

    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int
    zk_version: int = 0
    mzxid: int = 0

    def to_json(self) -> bytes:
        return json.dumps({"controller_epoch": self.controller_epoch, "leader": self.leader, "version": 1,
                           "leader_epoch": self.leader_epoch, "isr": self.isr}).encode()

    @classmethod
    def from_znode(cls, data: bytes, stat) -> LeaderAndIsr:
        value = json.loads(data)
        return cls(int(value["leader"]), int(value["leader_epoch"]), [int(b) for b in value["isr"]],
                   int(value.get("controller_epoch", 0)), stat.version, stat.mzxid)


@dataclass
class BrokerInfo:
    """A live broker's registration; `epoch` (the znode's czxid) changes when it re-registers."""

    node_id: int
    endpoints: list[tuple[str, str, int]]
    rack: str | None
    epoch: int

    def endpoint(self, listener: str | None) -> tuple[str, int] | None:
        for name, host, port in self.endpoints:
            if listener is None or name == listener:
                return host, port
        return None

    @classmethod
    def from_znode(cls, node_id: int, data: bytes, stat) -> BrokerInfo:
        value = json.loads(data)
        endpoints = []
        for item in value.get("endpoints", []):
            name, _, rest = item.partition("://")
            host, _, port = rest.rpartition(":")
            endpoints.append((name, host.strip("[]"), int(port)))
        return cls(node_id, endpoints, value.get("rack"), stat.czxid)


def broker_registration(endpoints: list[tuple[str, str, int]], protocols: dict[str, str], rack: str | None) -> bytes:
    """The JSON Kafka 3.x brokers write to /brokers/ids/<id> (version 5)."""
    plaintext = next(((h, p) for n, h, p in endpoints if protocols.get(n, n) == "PLAINTEXT"), (None, -1))
    return json.dumps({
        "features": {},
        "listener_security_protocol_map": {name: protocols.get(name, name) for name, _, _ in endpoints},
        "endpoints": [f"{name}://{host}:{port}" for name, host, port in endpoints],
        "rack": rack,
        "jmx_port": -1,
        "port": plaintext[1],
        "host": plaintext[0],
        "version": 5,
        "timestamp": str(int(time.time() * 1000)),
    }).encode()


def topic_znode(topic_id: uuid.UUID, assignment: dict[int, list[int]], adding: dict[int, list[int]] | None = None,
                removing: dict[int, list[int]] | None = None) -> bytes:
    """The topic znode; partitions being reassigned list their adding and removing replicas, as
    Kafka's ZooKeeper-mode controller writes them (an ongoing reassignment survives failover)."""
    def by_partition(replicas: dict[int, list[int]] | None) -> dict[str, list[int]]:
        return {str(p): r for p, r in sorted((replicas or {}).items()) if r}

    return json.dumps({"partitions": {str(p): replicas for p, replicas in sorted(assignment.items())},
                       "topic_id": kafka_uuid(topic_id), "adding_replicas": by_partition(adding),
                       "removing_replicas": by_partition(removing), "version": 3}).encode()


def config_znode(configs: dict[str, object]) -> bytes:
    """Topic overrides as Kafka stores them: every value as its string form."""
    return json.dumps({"version": 1, "config": {name: TOPIC_KEYS[name].render(value) if name in TOPIC_KEYS
                                                else str(value) for name, value in configs.items()}}).encode()


def parse_config_znode(data: bytes | None) -> dict[str, object]:
    if not data:
        return {}
    raw = json.loads(data).get("config", {})
    known = {name: value for name, value in raw.items() if name in TOPIC_KEYS}
    try:
        return parse_topic_configs(known)
    except ValueError as exc:
        logger.warning("ignoring invalid topic configs in ZooKeeper %s: %s", raw, exc)
        return {}


@dataclass
class _TopicNode:
    topic_id: uuid.UUID
    assignment: dict[int, list[int]]
    czxid: int
    mzxid: int
    zk_version: int = 0
    configs: dict[str, object] = field(default_factory=dict)
    adding: dict[int, list[int]] = field(default_factory=dict)
    removing: dict[int, list[int]] = field(default_factory=dict)

    def reassignment(self, partition: int) -> Reassignment:
        return Reassignment(list(self.assignment.get(partition, [])), list(self.adding.get(partition, [])),
                            list(self.removing.get(partition, [])))


def _parse_topic_node(data: bytes, stat) -> _TopicNode:
    value = json.loads(data)

    def by_partition(key: str) -> dict[int, list[int]]:
        return {int(p): [int(b) for b in replicas] for p, replicas in (value.get(key) or {}).items() if replicas}

    topic_id = parse_kafka_uuid(value["topic_id"]) if value.get("topic_id") else random_topic_id()
    return _TopicNode(topic_id, by_partition("partitions"), stat.czxid, stat.mzxid, stat.version,
                      adding=by_partition("adding_replicas"), removing=by_partition("removing_replicas"))


class ZkMetadata(TopicCatalog):
    """The cluster's topics, partition states and live brokers, from ZooKeeper, for one broker."""

    def __init__(self, zk, node_id: int, data_dir: str) -> None:
        super().__init__(node_id)
        self.zk = zk
        self.dir = Path(data_dir)
        self.assignments: dict[str, dict[int, list[int]]] = {}
        # Ongoing reassignments: topic -> partition -> (adding, removing) replicas.
        self._reassigning: dict[str, dict[int, tuple[list[int], list[int]]]] = {}
        self.states: dict[tuple[str, int], LeaderAndIsr] = {}
        self.brokers: dict[int, BrokerInfo] = {}
        self.controller_id = -1
        # Objects told about changes (after the cache changed), by method name: partition_changed(topic,
        # partition), topic_removed(meta), topic_configs_changed(topic), brokers_changed(old, new),
        # broker_configs_changed() (the default's or this broker's dynamic configs).
        self.observers: list[object] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._topic_generation: dict[str, int] = {}  # czxid of the topic znode we watch
        self._topic_mzxid: dict[str, int] = {}  # mzxid of the topic znode read last (older reads are stale)
        self._watched_partitions: dict[str, set[int]] = {}
        self._watched_topics: set[str] = set()
        self._config_watchers: dict[str, object] = {}
        self._watches: list[object] = []
        self._closed = False
        # broker_configs holds the default broker's ("") and this broker's own (its id) only.
        self._last_config_change = -1  # the sequence number of the last notification handled
        self._config_change_lock = threading.Lock()
        # finalized_features come from /feature (None: the znode does not exist); their epoch is its version.

    # -- start ------------------------------------------------------------------------------

    def load(self) -> None:
        """Create the persistent paths, agree on the cluster id, read everything, then watch."""
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        for path in PERSISTENT_PATHS:
            self.zk.ensure_path(path)
        self.cluster_id = self._cluster_id()
        self._check_meta_properties()
        self._watches.append(ChildrenWatch(self.zk, BROKER_IDS_PATH, self._on_broker_ids))
        self._watches.append(DataWatch(self.zk, CONTROLLER_PATH, self._on_controller))
        self._watches.append(ChildrenWatch(self.zk, TOPICS_PATH, self._on_topic_names))
        # The watches' first calls read the current state; on a running loop they are queued
        # behind us, so apply what is queued now: handlers must not see an empty cluster.
        self._drain_initial()
        self._load_entity_configs()
        self._load_features()

    def _drain_initial(self) -> None:
        """Read topics synchronously once (the watches' posted copies then change nothing)."""
        for name in self.zk.get_children(TOPICS_PATH):
            try:
                data, stat = self.zk.get(topic_path(name))
            except NoNodeError:
                continue
            self._apply_topic(name, _parse_topic_node(data, stat), self._read_configs(name))
            for partition in self.assignments.get(name, {}):
                try:
                    data, stat = self.zk.get(state_path(name, partition))
                except NoNodeError:
                    continue
                self._apply_state(name, partition, LeaderAndIsr.from_znode(data, stat), self._topic_generation[name])
        brokers = {}
        for child in self.zk.get_children(BROKER_IDS_PATH):
            try:
                data, stat = self.zk.get(f"{BROKER_IDS_PATH}/{child}")
            except NoNodeError:
                continue
            brokers[int(child)] = BrokerInfo.from_znode(int(child), data, stat)
        self._apply_brokers(brokers)

    def _cluster_id(self) -> str:
        try:
            data, _ = self.zk.get(CLUSTER_ID_PATH)
        except NoNodeError:
            proposed = json.dumps({"version": "1", "id": random_cluster_id()}).encode()
            try:
                self.zk.create(CLUSTER_ID_PATH, proposed, makepath=True)
            except NodeExistsError:
                pass
            data, _ = self.zk.get(CLUSTER_ID_PATH)
        return json.loads(data)["id"]

    def _check_meta_properties(self) -> None:
        """meta.properties ties the log dir to this node and cluster (Kafka refuses a mismatch)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / META_PROPERTIES
        props = read_meta_properties(self.dir)
        stored_node = props.get("node.id", props.get("broker.id"))
        if stored_node is not None and int(stored_node) != self.node_id:
            raise RuntimeError(f"The data directory {self.dir} belongs to node.id={stored_node}, not {self.node_id}")
        stored_cluster = props.get("cluster.id")
        if stored_cluster and stored_cluster != self.cluster_id:
            raise RuntimeError(f"The data directory {self.dir} belongs to cluster {stored_cluster}; ZooKeeper "
                               f"holds cluster {self.cluster_id} (InconsistentClusterIdException)")
        if not stored_cluster:
            write_atomically(path, f"version=0\nbroker.id={self.node_id}\nnode.id={self.node_id}\n"
                                f"cluster.id={self.cluster_id}\n")

    def close(self) -> None:
        self._closed = True

    # -- queries (MetadataStore's; TopicCatalog answers the rest) ------------------------------

    def _state_of(self, topic: str, partition: int) -> PartitionState:
        replicas = self.replicas(topic, partition)
        state = self.states.get((topic, partition))
        if state is None:
            return PartitionState(NO_LEADER, -1, replicas, [])
        return PartitionState(state.leader, state.leader_epoch, replicas, list(state.isr))

    def leader_and_isr(self, topic: str, partition: int) -> LeaderAndIsr | None:
        return self.states.get((topic, partition))

    def replicas(self, topic: str, partition: int) -> list[int]:
        return list(self.assignments.get(topic, {}).get(partition, []))

    def live_brokers(self) -> list[int]:
        return sorted(self.brokers)

    def reassignment(self, topic: str, partition: int) -> Reassignment:
        adding, removing = self._reassigning.get(topic, {}).get(partition, ([], []))
        return Reassignment(self.replicas(topic, partition), list(adding), list(removing))

    def ongoing_reassignments(self):
        """(topic, partition, Reassignment) of every partition being reassigned."""
        for topic, partitions in sorted(self._reassigning.items()):
            for partition in sorted(partitions):
                yield topic, partition, self.reassignment(topic, partition)

    def partitions(self):
        """Every (topic, partition) with its replicas."""
        for topic, assignment in self.assignments.items():
            for partition, replicas in assignment.items():
                yield topic, partition, replicas

    # -- changes (MetadataStore's) -------------------------------------------------------------

    def _controller_epoch(self) -> int:
        try:
            data, _ = self.zk.get(CONTROLLER_EPOCH_PATH)
            return int(data)
        except (NoNodeError, ValueError):
            return 0

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, object], assignment: dict[int, list[int]] | None = None) -> TopicMeta:
        """Assign replicas over the live brokers (or as the manual `assignment` says) and write the
        topic with its partitions' first states (leader: the first replica; ISR: all replicas) in
        one ZooKeeper transaction."""
        if assignment is None:
            live = self.live_brokers()
            if not live:
                raise InvalidReplicationFactor("no live brokers")
            assignment = assign_replicas(live, partitions, replication_factor)
        assignment = {partition: list(replicas) for partition, replicas in sorted(assignment.items())}
        topic_id = random_topic_id()
        controller_epoch = self._controller_epoch()
        txn = self.zk.transaction()
        txn.create(topic_path(name), topic_znode(topic_id, assignment))
        txn.create(partitions_path(name), b"")
        for partition, replicas in assignment.items():
            txn.create(f"{partitions_path(name)}/{partition}", b"")
            txn.create(state_path(name, partition),
                       LeaderAndIsr(replicas[0], 0, list(replicas), controller_epoch).to_json())
        config_path = f"{TOPIC_CONFIGS_PATH}/{name}"
        if self.zk.exists(config_path):
            txn.set_data(config_path, config_znode(configs))
        else:
            txn.create(config_path, config_znode(configs))
        self._commit(txn, f"create topic {name}")
        self._drain_topic(name)
        meta = self.topics.get(name)
        if meta is None:  # deleted again at once by someone else
            raise NoNodeError(topic_path(name))
        return meta

    def refresh_topic(self, name: str) -> None:
        """Read a topic and its partition states from ZooKeeper into the cache now."""
        self._drain_topic(name)

    def _drain_topic(self, name: str) -> None:
        """Read a topic we just changed into the cache (the watch brings the same later)."""
        try:
            data, stat = self.zk.get(topic_path(name))
        except NoNodeError:
            self._apply_topic(name, None, {})
            return
        self._apply_topic(name, _parse_topic_node(data, stat), self._read_configs(name))
        generation = self._topic_generation[name]
        for partition in self.assignments.get(name, {}):
            try:
                data, stat = self.zk.get(state_path(name, partition))
            except NoNodeError:
                continue
            self._apply_state(name, partition, LeaderAndIsr.from_znode(data, stat), generation)

    def _commit(self, txn, what: str) -> None:
        results = txn.commit()
        for result in results:
            if isinstance(result, NodeExistsError):
                raise TopicExists(what)
            if isinstance(result, Exception) and not _rolled_back(result):
                raise result

    def delete_topic(self, name: str) -> TopicMeta:
        meta = self.topics[name]
        paths = []
        for partition in self.zk.get_children(partitions_path(name)) if self.zk.exists(partitions_path(name)) else []:
            partition_path = f"{partitions_path(name)}/{partition}"
            paths += [f"{partition_path}/{child}" for child in self.zk.get_children(partition_path)]
            paths.append(partition_path)
        paths += [partitions_path(name)] if self.zk.exists(partitions_path(name)) else []
        paths.append(topic_path(name))
        txn = self.zk.transaction()
        for path in paths:
            txn.delete(path)
        if self.zk.exists(f"{TOPIC_CONFIGS_PATH}/{name}"):
            txn.delete(f"{TOPIC_CONFIGS_PATH}/{name}")
        for result in txn.commit():
            if isinstance(result, Exception) and not _rolled_back(result):
                raise result
        self._apply_topic(name, None, {})
        return meta

    def set_partition_count(self, name: str, count: int, assignment: list[list[int]] | None = None) -> None:
        """Add partitions up to `count`, placed as the manual `assignment` (one replica list per new
        partition) says, or as Kafka's automatic assignment continues the topic's."""
        data, stat = self.zk.get(topic_path(name))
        node = _parse_topic_node(data, stat)
        existing = len(node.assignment)
        if count <= existing:
            return
        if assignment is not None:
            added = {existing + i: list(replicas) for i, replicas in enumerate(assignment)}
        else:
            live = self.live_brokers()
            first = node.assignment[0][0] if node.assignment.get(0) else live[0]
            start_index = live.index(first) if first in live else -1
            # A partition 0 being reassigned counts with the replicas it is heading for.
            added = assign_replicas(live, count - existing, len(node.reassignment(0).target()),
                                    start_index=start_index, start_partition=existing)
        assignment = {**node.assignment, **added}
        controller_epoch = self._controller_epoch()
        txn = self.zk.transaction()
        txn.set_data(topic_path(name), topic_znode(node.topic_id, assignment, node.adding, node.removing),
                     version=stat.version)
        for partition, replicas in added.items():
            txn.create(f"{partitions_path(name)}/{partition}", b"")
            txn.create(state_path(name, partition),
                       LeaderAndIsr(replicas[0], 0, list(replicas), controller_epoch).to_json())
        self._commit(txn, f"add partitions to {name}")
        self._drain_topic(name)

    def set_topic_configs(self, name: str, configs: dict[str, object]) -> None:
        path = f"{TOPIC_CONFIGS_PATH}/{name}"
        try:
            self.zk.set(path, config_znode(configs))
        except NoNodeError:
            self.zk.create(path, config_znode(configs), makepath=True)
        self._apply_configs(name, dict(configs))

    # -- dynamic broker configs and client quotas (MetadataStore's) -----------------------------
    #
    # As Kafka's ZooKeeper mode: the broker that receives the request writes the entity's config
    # znode, then a sequential /config/changes/config_change_ notification naming it; every
    # broker follows the notifications (one ChildrenWatch) and reads the named znode again.

    def read_broker_configs(self, resource_name: str) -> dict[str, str]:
        """The dynamic configs of the default broker ("") or of a broker, read from ZooKeeper now."""
        return self._read_entity_config(broker_config_path(resource_name))

    def _read_entity_config(self, path: str) -> dict[str, str]:
        try:
            data, _ = self.zk.get(path)
        except NoNodeError:
            return {}
        return parse_entity_config(data)

    def set_broker_configs(self, resource_name: str, configs: dict[str, str]) -> None:
        """Replace the dynamic configs of the default broker ("") or of a broker (its id). The
        caller applies them here; the other brokers apply them when notified."""
        path = broker_config_path(resource_name)
        self._write_entity(path, lambda _current: dict(configs))
        self._notify_config_change(path[len("/config/"):])
        if resource_name in ("", str(self.node_id)):
            self._store_broker_configs(resource_name, dict(configs))

    def read_group_configs(self, group: str) -> dict[str, str]:
        """A group's config overrides, read from ZooKeeper now."""
        return self._read_entity_config(group_config_path(group))

    def set_group_configs(self, group: str, configs: dict[str, str]) -> None:
        """Replace a group's overrides (none: its znode goes, so that it is no config resource any
        more) and tell every broker."""
        path = group_config_path(group)
        if configs:
            self._write_entity(path, lambda _current: dict(configs))
        else:
            try:
                self.zk.delete(path)
            except NoNodeError:
                pass
        self._notify_config_change(path[len("/config/"):])
        self._store_group_configs(group, dict(configs))

    def metadata_quorum(self) -> None:
        """None: ZooKeeper holds the cluster's metadata; Kafka's ZooKeeper-mode brokers did not serve
        DescribeQuorum (it is absent from their ApiVersions, and a request for it closes the connection)."""
        return None

    def read_client_quotas(self, entities: Iterable[QuotaEntity]) -> dict[QuotaEntity, dict[str, float]]:
        """The stored quotas of these entities, read from ZooKeeper now (entities without a znode
        of their own, or none, are left out)."""
        found = {}
        for entity in entities:
            entity_path = quota_entity_path(entity)
            if entity_path is not None:
                values = self._read_quotas(entity_path)
                if values:
                    found[entity] = values
        return found

    def set_client_quotas(self, changes: dict[tuple, dict[str, float | None]]) -> None:
        """Apply quota changes per entity (None removes a key): each entity's znode is changed
        with a conditional update (other brokers may write it too), then notified."""
        for entity, values in changes.items():
            entity_path = quota_entity_path(entity)
            if entity_path is None:
                continue

            def changed(config: dict[str, str], values=values) -> dict[str, str]:
                for key, value in values.items():
                    if value is None:
                        config.pop(key, None)
                    else:
                        config[key] = render_quota(key, value)
                return config

            written = self._write_entity(f"/config/{entity_path}", changed)
            self._notify_config_change(entity_path)
            self._store_client_quota(entity, parse_quotas(written))

    def _write_entity(self, path: str, change) -> dict[str, str]:
        """Read-modify-write an entity's config znode (Kafka keeps a znode whose config became
        empty); what was written."""
        while True:
            try:
                data, stat = self.zk.get(path)
            except NoNodeError:
                data, stat = None, None
            config = change(parse_entity_config(data))
            try:
                if stat is None:
                    self.zk.create(path, entity_config_znode(config), makepath=True)
                else:
                    self.zk.set(path, entity_config_znode(config), version=stat.version)
                return config
            except (NodeExistsError, BadVersionError):
                continue  # someone else wrote it first: change their version

    def _notify_config_change(self, entity_path: str) -> None:
        self.zk.create(f"{CONFIG_CHANGES_PATH}/{CONFIG_CHANGE_PREFIX}", change_notification(entity_path),
                       sequence=True, makepath=True)

    # -- finalized features: /feature, read at start and watched; the controller writes it -------

    def _load_features(self) -> None:
        try:
            data, stat = self.zk.get(FEATURE_PATH)
        except NoNodeError:
            pass
        else:
            self._apply_features(parse_feature_znode(data), stat.version)
        self._watches.append(DataWatch(self.zk, FEATURE_PATH, self._on_features))

    def _on_features(self, data, stat, *event) -> bool | None:
        if self._closed:
            return False
        if stat is not None:
            try:
                self._post(self._apply_features, parse_feature_znode(data), stat.version)
            except (ValueError, KeyError, TypeError) as exc:
                logger.warning("ignoring an unreadable %s: %s", FEATURE_PATH, exc)
        return None

    def _apply_features(self, levels: dict[str, int], version: int) -> None:
        if version >= self.finalized_features_epoch:
            self.finalized_features = levels
            self.finalized_features_epoch = version

    def bootstrap_finalized_features(self, levels: dict[str, int]) -> None:
        """Create /feature with the first levels, unless another broker did already."""
        try:
            self.zk.create(FEATURE_PATH, feature_znode(levels))
        except NodeExistsError:
            pass
        data, stat = self.zk.get(FEATURE_PATH)
        self._apply_features(parse_feature_znode(data), stat.version)

    def set_finalized_features(self, levels: dict[str, int]) -> int:
        """Replace the finalized levels if nobody changed them since we read them (else
        FeaturesChanged); the new epoch."""
        try:
            stat = self.zk.set(FEATURE_PATH, feature_znode(levels), version=self.finalized_features_epoch)
        except (BadVersionError, NoNodeError) as exc:
            try:
                data, stat = self.zk.get(FEATURE_PATH)
                self._apply_features(parse_feature_znode(data), stat.version)
            except NoNodeError:
                pass
            raise FeaturesChanged(str(exc)) from exc
        self._apply_features(dict(levels), stat.version)
        return stat.version

    def _load_entity_configs(self) -> None:
        """Read the dynamic broker configs and every client quota, then follow the change
        notifications (those already there are covered by this read)."""
        sequences = [change_sequence(child) for child in self._children(CONFIG_CHANGES_PATH)]
        self._last_config_change = max((s for s in sequences if s is not None), default=-1)
        for name in ("", str(self.node_id)):
            self._store_broker_configs(name, self.read_broker_configs(name))
        for entity_path in self._quota_entity_paths():
            entity = quota_entity_of_path(entity_path)
            if entity is not None:
                self._store_client_quota(entity, self._read_quotas(entity_path))
        for child in self._children(GROUP_CONFIGS_PATH):
            group = group_of_path(f"groups/{child}")
            self._store_group_configs(group, self.read_group_configs(group))
        self._watches.append(ChildrenWatch(self.zk, CONFIG_CHANGES_PATH, self._on_config_changes))

    def _children(self, path: str) -> list[str]:
        try:
            return self.zk.get_children(path)
        except NoNodeError:
            return []

    def _quota_entity_paths(self) -> list[str]:
        paths = []
        for kind in ("users", "clients", "ips"):
            for child in self._children(f"/config/{kind}"):
                paths.append(f"{kind}/{child}")
                if kind == "users":
                    paths += [f"users/{child}/clients/{c}" for c in self._children(f"/config/users/{child}/clients")]
        return paths

    def _read_quotas(self, entity_path: str) -> dict[str, float]:
        try:
            data, _ = self.zk.get(f"/config/{entity_path}")
        except NoNodeError:
            return {}
        try:
            return parse_quotas(parse_entity_config(data))
        except ValueError as exc:
            logger.warning("ignoring unreadable quota znode %s: %s", entity_path, exc)
            return {}

    def _on_config_changes(self, children) -> bool | None:
        """kazoo's thread: read what the new notifications name; apply it on the loop. Then
        delete notifications older than 15 minutes, as Kafka's brokers do."""
        if self._closed:
            return False
        with self._config_change_lock:
            numbered = sorted((seq, child) for child in children if (seq := change_sequence(child)) is not None)
            for seq, child in numbered:
                if seq <= self._last_config_change:
                    continue
                try:
                    data, _ = self.zk.get(f"{CONFIG_CHANGES_PATH}/{child}")
                except NoNodeError:
                    continue
                self._last_config_change = seq
                entity_path = notified_entity_path(data)
                if entity_path is not None:
                    self._entity_changed(entity_path)
            self._purge_config_changes(numbered)
        return None

    def _entity_changed(self, entity_path: str) -> None:
        """kazoo's thread. Topic notifications are the topic config watches' business."""
        broker = broker_of_path(entity_path)
        if broker is not None:
            if broker in ("", str(self.node_id)):  # another broker's own configs are not ours
                self._post(self._apply_broker_configs, broker, self.read_broker_configs(broker))
            return
        group = group_of_path(entity_path)
        if group is not None:
            self._post(self._store_group_configs, group, self.read_group_configs(group))
            return
        entity = quota_entity_of_path(entity_path)
        if entity is not None:
            self._post(self._store_client_quota, entity, self._read_quotas(entity_path))

    def _purge_config_changes(self, numbered: list[tuple[int, str]]) -> None:
        expired_before = time.time() * 1000 - CHANGE_EXPIRATION_MS
        for seq, child in numbered:
            if seq > self._last_config_change:
                break
            path = f"{CONFIG_CHANGES_PATH}/{child}"
            try:
                _, stat = self.zk.get(path)
                if stat.ctime >= expired_before:
                    break  # the rest are younger
                self.zk.delete(path)
            except NoNodeError:
                continue

    def _apply_broker_configs(self, name: str, configs: dict[str, str]) -> None:
        """On the loop: a notified change of the default's or this broker's dynamic configs."""
        if self._store_broker_configs(name, configs):
            logger.info("dynamic broker configs of %s are now %s", repr(name) if name else "the default broker", configs)
            self._notify("broker_configs_changed")

    # -- partition states (controller and leaders) -------------------------------------------

    def read_partition_state(self, topic: str, partition: int) -> LeaderAndIsr | None:
        """A fresh read from ZooKeeper (after a failed conditional update), cached too."""
        try:
            data, stat = self.zk.get(state_path(topic, partition))
        except NoNodeError:
            return None
        state = LeaderAndIsr.from_znode(data, stat)
        generation = self._topic_generation.get(topic)
        if generation is not None:
            self._apply_state(topic, partition, state, generation)
        return state

    def update_partition_state(self, topic: str, partition: int, new: LeaderAndIsr, *,
                               controller_epoch_version: int | None = None) -> LeaderAndIsr | None:
        """Write `new` if the znode still has version new.zk_version (and, for the controller,
        /controller_epoch still has controller_epoch_version: a deposed controller writes nothing).
        The written state with its new version, or None when someone changed it first."""
        path = state_path(topic, partition)
        if controller_epoch_version is None:
            try:
                stat = self.zk.set(path, new.to_json(), version=new.zk_version)
            except (BadVersionError, NoNodeError):
                return None
        else:
            txn = self.zk.transaction()
            txn.check(CONTROLLER_EPOCH_PATH, controller_epoch_version)
            txn.set_data(path, new.to_json(), version=new.zk_version)
            results = txn.commit()
            if any(isinstance(result, Exception) for result in results):
                return None
            stat = results[1]
        written = replace(new, zk_version=stat.version, mzxid=stat.mzxid)
        generation = self._topic_generation.get(topic)
        if generation is not None:
            self._apply_state(topic, partition, written, generation)
        return written

    def write_reassignment(self, topic: str, partition: int, reassignment: Reassignment,
                           state: LeaderAndIsr | None, *, controller_epoch_version: int) -> bool:
        """The controller's reassignment step: the partition's replicas, adding and removing
        replicas into the topic znode and, when given, `state` into the state znode (conditional
        on state.zk_version), in one transaction that checks the controller epoch. False when
        anything changed first (the caller reads again and decides again)."""
        try:
            data, stat = self.zk.get(topic_path(topic))
        except NoNodeError:
            return False
        node = _parse_topic_node(data, stat)
        if partition not in node.assignment:
            return False
        assignment = {**node.assignment, partition: list(reassignment.replicas)}
        adding = {**node.adding, partition: list(reassignment.adding)}
        removing = {**node.removing, partition: list(reassignment.removing)}
        txn = self.zk.transaction()
        txn.check(CONTROLLER_EPOCH_PATH, controller_epoch_version)
        txn.set_data(topic_path(topic), topic_znode(node.topic_id, assignment, adding, removing), version=stat.version)
        if state is not None:
            txn.set_data(state_path(topic, partition), state.to_json(), version=state.zk_version)
        results = txn.commit()
        if any(isinstance(result, Exception) for result in results):
            return False
        # Our own write into the cache now (the watches bring the same later): topic first, so
        # that a broker that is removed stops hosting before it would follow a new leader.
        self._drain_topic(topic)
        return True

    # -- watches: kazoo threads post to the loop ---------------------------------------------

    def _post(self, fn, *args) -> None:
        if self._closed:
            return
        if self._loop is None:
            fn(*args)
        else:
            try:
                self._loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:
                pass  # the loop is closed: the broker is gone

    def _on_broker_ids(self, children) -> bool | None:
        if self._closed:
            return False
        brokers = {}
        for child in children:
            try:
                data, stat = self.zk.get(f"{BROKER_IDS_PATH}/{child}")
            except NoNodeError:
                continue
            try:
                brokers[int(child)] = BrokerInfo.from_znode(int(child), data, stat)
            except (ValueError, KeyError) as exc:
                logger.warning("ignoring unreadable broker registration %s: %s", child, exc)
        self._post(self._apply_brokers, brokers)
        return None

    def _on_controller(self, data, stat, *event) -> bool | None:
        if self._closed:
            return False
        controller = -1
        if data:
            try:
                controller = int(json.loads(data)["brokerid"])
            except (ValueError, KeyError):
                pass
        self._post(self._apply_controller, controller)
        return None

    def _on_topic_names(self, children) -> bool | None:
        if self._closed:
            return False
        self._post(self._watch_topics, set(children))
        return None

    def _watch_topics(self, names: set[str]) -> None:
        """On the loop: start watching new topics; forget deleted ones."""
        for name in names:
            if name not in self._watched_topics:
                self._watched_topics.add(name)
                self._watches.append(DataWatch(self.zk, topic_path(name), self._topic_watcher(name)))
        for name in list(self._watched_topics):
            if name not in names:
                self._watched_topics.discard(name)
                if name in self.topics:
                    self._apply_topic(name, None, {})

    def _topic_watcher(self, name: str):
        def on_topic(data, stat, *event):
            if self._closed:
                return False
            if data is None:
                self._post(self._forget_topic_watch, name)
                return False
            try:
                node = _parse_topic_node(data, stat)
            except (ValueError, KeyError) as exc:
                logger.warning("ignoring unreadable topic znode %s: %s", name, exc)
                return None
            self._post(self._apply_topic, name, node, self._read_configs(name))
            return None
        return on_topic

    def _forget_topic_watch(self, name: str) -> None:
        self._watched_topics.discard(name)
        self._apply_topic(name, None, {})

    def _read_configs(self, name: str) -> dict[str, object]:
        watcher = self._config_watchers.get(name)
        if watcher is None:
            # One watcher object per topic: kazoo keeps watchers in a set, so re-arming it does not pile up.
            watcher = self._config_watchers.setdefault(name, self._config_watcher(name))
        try:
            data, _ = self.zk.get(f"{TOPIC_CONFIGS_PATH}/{name}", watch=watcher)
        except NoNodeError:
            return {}
        return parse_config_znode(data)

    def _config_watcher(self, name: str):
        def on_change(event):
            if self._closed or event.type == "DELETED":
                return
            # One-shot watch: read again (and watch again) on a kazoo thread, apply on the loop.
            self.zk.handler.spawn(lambda: self._post(self._apply_configs, name, self._read_configs(name)))
        return on_change

    def _state_watcher(self, name: str, partition: int, generation: int):
        def on_state(data, stat, *event):
            current = self._topic_generation.get(name)
            if self._closed or (current is not None and current not in (-1, generation)):
                return False
            if data is None:
                # Not written yet (keep watching), or the topic is gone (stop).
                return None if current is not None else False
            try:
                state = LeaderAndIsr.from_znode(data, stat)
            except (ValueError, KeyError) as exc:
                logger.warning("ignoring unreadable state of %s-%d: %s", name, partition, exc)
                return None
            self._post(self._apply_state, name, partition, state, generation)
            return None
        return on_state

    # -- applying changes (on the loop) ------------------------------------------------------

    def _notify(self, method: str, *args) -> None:
        for observer in list(self.observers):
            callback = getattr(observer, method, None)
            if callback is not None:
                try:
                    callback(*args)
                except Exception:
                    logger.exception("%s.%s failed", type(observer).__name__, method)

    def _apply_topic(self, name: str, node: _TopicNode | None, configs: dict[str, object]) -> None:
        if node is None:
            meta = self._forget_topic(name)
            self._topic_generation.pop(name, None)
            self._topic_mzxid.pop(name, None)
            self._watched_partitions.pop(name, None)
            self.assignments.pop(name, None)
            self._reassigning.pop(name, None)
            for key in [k for k in self.states if k[0] == name]:
                del self.states[key]
            if meta is not None:
                self._notify("topic_removed", meta)
            return
        current = self.topics.get(name)
        if current is not None and current.topic_id != node.topic_id:
            # Deleted and created again before we saw the deletion.
            self._apply_topic(name, None, {})
            current = None
        generation = self._topic_generation.get(name, -1)
        if current is not None and generation == node.czxid and node.mzxid < self._topic_mzxid.get(name, -1):
            # An older read of the znode than the one applied: a watch's copy posted before a change
            # this broker made and read back at once (_drain_topic) reaches the loop after it.
            return
        self._topic_mzxid[name] = node.mzxid
        if generation != node.czxid:
            self._topic_generation[name] = node.czxid
            self._watched_partitions[name] = set()
        replication = len(node.reassignment(0).target()) or 1
        if current is None:
            self._index_topic(TopicMeta(name, node.topic_id, len(node.assignment), replication, dict(configs)))
        else:
            current.partitions = len(node.assignment)
            current.replication_factor = replication
            if configs:
                current.configs = dict(configs)
        self.assignments[name] = node.assignment
        reassigning = {p: (node.adding.get(p, []), node.removing.get(p, [])) for p in node.assignment
                       if node.adding.get(p) or node.removing.get(p)}
        if reassigning:
            self._reassigning[name] = reassigning
        else:
            self._reassigning.pop(name, None)
        watched = self._watched_partitions.setdefault(name, set())
        for partition in sorted(node.assignment):
            if partition not in watched:
                watched.add(partition)
                self._watches.append(DataWatch(self.zk, state_path(name, partition),
                                               self._state_watcher(name, partition, node.czxid)))
        self._notify("topic_changed", name)
        for partition in sorted(node.assignment):
            self._notify("partition_changed", name, partition)

    def _apply_configs(self, name: str, configs: dict[str, object]) -> None:
        meta = self.topics.get(name)
        if meta is None or meta.configs == configs:
            return
        meta.configs = dict(configs)
        self._notify("topic_configs_changed", name)

    def _apply_state(self, name: str, partition: int, state: LeaderAndIsr, generation: int) -> None:
        if self._topic_generation.get(name) != generation or name not in self.topics:
            return
        current = self.states.get((name, partition))
        if current is not None and state.mzxid and current.mzxid and state.mzxid < current.mzxid:
            return  # an older copy arriving late
        if current is not None and current.mzxid and not state.mzxid and state.zk_version < current.zk_version:
            return
        if current == state:
            return
        self.states[(name, partition)] = state
        self._notify("partition_changed", name, partition)

    def _apply_brokers(self, brokers: dict[int, BrokerInfo]) -> None:
        previous = self.brokers
        if previous == brokers:
            return
        self.brokers = brokers
        self._notify("brokers_changed", previous, brokers)

    def _apply_controller(self, controller: int) -> None:
        if controller != self.controller_id:
            self.controller_id = controller
            self._notify("controller_changed", controller)


def _rolled_back(result) -> bool:
    from kazoo.exceptions import RolledBackError, RuntimeInconsistency

    return isinstance(result, (RolledBackError, RuntimeInconsistency))


class ZkProducerIdManager:
    """Producer ids in blocks of 1000 claimed through /latest_producer_id_block with conditional
    updates, as Kafka's ZooKeeper-mode brokers do: no two brokers ever hand out the same id."""

    BLOCK_SIZE = 1000

    def __init__(self, zk, node_id: int) -> None:
        self.zk = zk
        self.node_id = node_id
        self.next_id = 0
        self.block_end = 0  # exclusive

    def next(self) -> int:
        if self.next_id >= self.block_end:
            self._claim_block()
        pid = self.next_id
        self.next_id += 1
        return pid

    def _claim_block(self) -> None:
        while True:
            try:
                data, stat = self.zk.get(PRODUCER_ID_BLOCK_PATH)
            except NoNodeError:
                start = 0
                try:
                    self.zk.create(PRODUCER_ID_BLOCK_PATH, self._block(start), makepath=True)
                except NodeExistsError:
                    continue
            else:
                start = int(json.loads(data)["block_end"]) + 1
                try:
                    self.zk.set(PRODUCER_ID_BLOCK_PATH, self._block(start), version=stat.version)
                except BadVersionError:
                    continue
            self.next_id, self.block_end = start, start + self.BLOCK_SIZE
            return

    def _block(self, start: int) -> bytes:
        return json.dumps({"version": 1, "broker": self.node_id, "block_start": str(start),
                           "block_end": str(start + self.BLOCK_SIZE - 1)}).encode()
