"""Embedded cluster metadata: topics, topic IDs, partition counts, topic configs, dynamic broker
configs, client quotas and finalized feature levels (KIP-584, broker/features.py), on disk.

Single-node default: this broker is every partition's leader and sole in-sync replica. The state
is one JSON document rewritten atomically (temp file, fsync, rename) on every change, beside
`meta.properties` (cluster.id, node.id) in the first log directory, as Kafka keeps them there.
"""

from __future__ import annotations

import base64
import json
import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .config import ConfigError

METADATA_FILE = "kafka-wire-metadata.json"
META_PROPERTIES = "meta.properties"

MAX_TOPIC_NAME = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def validate_topic_name(name: str) -> str | None:
    """Kafka 4.3's Topic.validate: None when legal, else the reason (INVALID_TOPIC_EXCEPTION),
    worded as Kafka's brokers word it ("Topic name is invalid: ...", Topic.detectInvalidTopic)."""
    reason = None
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name.encode("utf-16-le")) // 2 > MAX_TOPIC_NAME:  # Java's String.length()
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME}"
    elif not _LEGAL_TOPIC.match(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None if reason is None else f"Topic name is invalid: {reason}"


def random_cluster_id() -> str:
    """Kafka's cluster ids: a random UUID as 22 chars of URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def random_topic_id() -> uuid.UUID:
    # Kafka never hands out the zero UUID nor ids whose base64 form starts with '-'.
    while True:
        value = uuid.uuid4()
        if not base64.urlsafe_b64encode(value.bytes).startswith(b"-"):
            return value


def topic_names_of(metadata, topic_ids) -> list[str | None]:
    """The names of these topic ids (requests of KIP-516 name topics by id), None for an id the
    metadata (this store or the ZooKeeper one) does not know: Kafka answers those UNKNOWN_TOPIC_ID."""
    names = []
    for topic_id in topic_ids:
        meta = metadata.topic_by_id(topic_id)
        names.append(meta.name if meta is not None else None)
    return names


@dataclass
class PartitionState:
    """Who leads a partition and who is in sync; fixed on a single node."""

    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]


@dataclass
class TopicMeta:
    name: str
    topic_id: uuid.UUID
    partitions: int
    replication_factor: int
    configs: dict[str, object] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "topic_id": str(self.topic_id),
            "partitions": self.partitions,
            "replication_factor": self.replication_factor,
            "configs": self.configs,
        }

    @classmethod
    def from_json(cls, data: dict) -> TopicMeta:
        return cls(
            name=data["name"],
            topic_id=uuid.UUID(data["topic_id"]),
            partitions=int(data["partitions"]),
            replication_factor=int(data.get("replication_factor", 1)),
            configs=dict(data.get("configs", {})),
        )


class EmbeddedMetadata:
    """Topic metadata for a single-node cluster, persisted in the first log directory."""

    def __init__(self, data_dir: str, node_id: int) -> None:
        self.dir = Path(data_dir)
        self.node_id = node_id
        self.cluster_id = ""
        self.topics: dict[str, TopicMeta] = {}
        self._by_id: dict[uuid.UUID, TopicMeta] = {}
        # Dynamic broker configs (KIP-226) as the strings they were set to: "" holds the
        # cluster-wide defaults, str(node id) this broker's own.
        self.broker_configs: dict[str, dict[str, str]] = {}
        # Client quotas (KIP-546): entity, a sorted tuple of (entity type, name or None for the
        # default), -> {quota key: value}.
        self.client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = {}
        # Leader epochs only change in cluster mode; 0 is the epoch of a freshly created partition.
        self.leader_epoch = 0
        # Finalized feature levels (None: never stored, the broker bootstraps them) and their
        # epoch, which every change moves by one.
        self.finalized_features: dict[str, int] | None = None
        self.finalized_features_epoch = -1

    # -- persistence ------------------------------------------------------------------------

    def load(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = self._load_meta_properties()
        path = self.dir / METADATA_FILE
        if path.exists():
            data = json.loads(path.read_text())
            for item in data.get("topics", []):
                meta = TopicMeta.from_json(item)
                self.topics[meta.name] = meta
                self._by_id[meta.topic_id] = meta
            self.broker_configs = {name: dict(configs) for name, configs in data.get("broker_configs", {}).items()}
            for item in data.get("client_quotas", []):
                entity = tuple(sorted((kind, name) for kind, name in item["entity"]))
                self.client_quotas[entity] = {k: float(v) for k, v in item["values"].items()}
            features = data.get("features")
            if features is not None:
                self.finalized_features = {name: int(level) for name, level in features["levels"].items()}
                self.finalized_features_epoch = int(features["epoch"])

    def _load_meta_properties(self) -> str:
        path = self.dir / META_PROPERTIES
        props: dict[str, str] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                if "=" in line and not line.startswith("#"):
                    k, v = line.split("=", 1)
                    props[k.strip()] = v.strip()
        stored_node = props.get("node.id")
        if stored_node is not None and int(stored_node) != self.node_id:
            # Kafka's MetaPropertiesEnsemble.verify wording; a configuration error, refused at start.
            raise ConfigError(
                f"Stored node id {stored_node} doesn't match previous node id {self.node_id} in {path}. If you "
                "moved your data, make sure your configured node id matches. If you intend to create a new "
                "node, you should remove all data in your data directories."
            )
        cluster_id = props.get("cluster.id") or random_cluster_id()
        if not path.exists():
            _atomic_write(path, f"version=1\ncluster.id={cluster_id}\nnode.id={self.node_id}\n")
        return cluster_id

    def _save(self) -> None:
        data = {"topics": [t.to_json() for t in self.topics.values()]}
        if self.broker_configs:
            data["broker_configs"] = self.broker_configs
        if self.client_quotas:
            data["client_quotas"] = [{"entity": [list(part) for part in entity], "values": values}
                                     for entity, values in self.client_quotas.items()]
        if self.finalized_features is not None:
            data["features"] = {"epoch": self.finalized_features_epoch, "levels": self.finalized_features}
        _atomic_write(self.dir / METADATA_FILE, json.dumps(data, indent=1, sort_keys=True))

    # -- queries -----------------------------------------------------------------------------

    def topic(self, name: str) -> TopicMeta | None:
        return self.topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMeta | None:
        return self._by_id.get(topic_id)

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        meta = self.topics.get(topic)
        if meta is None or not 0 <= partition < meta.partitions:
            return None
        return PartitionState(self.node_id, self.leader_epoch, [self.node_id], [self.node_id])

    # -- changes -----------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, object]) -> TopicMeta:
        meta = TopicMeta(name, random_topic_id(), partitions, replication_factor, dict(configs))
        self.topics[name] = meta
        self._by_id[meta.topic_id] = meta
        self._save()
        return meta

    def delete_topic(self, name: str) -> TopicMeta:
        meta = self.topics.pop(name)
        self._by_id.pop(meta.topic_id, None)
        self._save()
        return meta

    def set_partition_count(self, name: str, count: int) -> None:
        self.topics[name].partitions = count
        self._save()

    def set_topic_configs(self, name: str, configs: dict[str, object]) -> None:
        self.topics[name].configs = dict(configs)
        self._save()

    def set_broker_configs(self, resource_name: str, configs: dict[str, str]) -> None:
        """Replace the dynamic configs of the default broker ("") or of a broker (its id)."""
        if configs:
            self.broker_configs[resource_name] = dict(configs)
        else:
            self.broker_configs.pop(resource_name, None)
        self._save()

    def set_client_quotas(self, changes: dict[tuple, dict[str, float | None]]) -> None:
        """Apply quota changes per entity (None removes a key) and persist them at once."""
        for entity, values in changes.items():
            current = self.client_quotas.setdefault(entity, {})
            for key, value in values.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = float(value)
            if not current:
                del self.client_quotas[entity]
        self._save()


    def bootstrap_finalized_features(self, levels: dict[str, int]) -> None:
        """The first finalized levels, epoch 0."""
        self.set_finalized_features(levels)

    def set_finalized_features(self, levels: dict[str, int]) -> int:
        """Replace the finalized levels (level 0 features absent); the new epoch."""
        self.finalized_features = dict(levels)
        self.finalized_features_epoch += 1
        self._save()
        return self.finalized_features_epoch


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
