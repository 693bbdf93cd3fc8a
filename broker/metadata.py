"""The cluster metadata seam: what the broker asks of a metadata store, the shapes it answers in,
and the query code the two stores share.

Two stores stand behind `MetadataStore`: the embedded one of a single node (metadata_store.py, a
JSON file in the first log directory) and the ZooKeeper one of a cluster (cluster/zk_metadata.py).
Both keep the topics in memory (`TopicCatalog`) and answer from there; they differ in where changes
are written and who else sees them. Cluster code that needs more of ZooKeeper (partition states
with their znode versions, live broker registrations, reassignments) uses ZkMetadata itself.
"""

from __future__ import annotations

import base64
import os
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kafka_wire.properties import parse_properties

META_PROPERTIES = "meta.properties"

MAX_TOPIC_NAME = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})

# A client quota entity: sorted (entity type, name, or None for the default) pairs (KIP-546).
QuotaEntity = tuple[tuple[str, str | None], ...]


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


@dataclass
class PartitionState:
    """Who leads a partition and who is in sync."""

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


@dataclass(frozen=True)
class MetadataQuorum:
    """What DescribeQuorum (55) tells of the metadata log's quorum: here one voter, the node itself,
    which leads it (leader epoch: its terms, one per start) and whose log end is its high watermark
    (every change of the metadata is one record; each term starts with one, as a KRaft leader's
    LeaderChange record)."""

    leader_id: int
    leader_epoch: int
    high_watermark: int


class MetadataStore(Protocol):
    """What the broker, its handlers and its coordinators may ask of the cluster metadata.

    Reads come from memory and never block; changes are written through at once (file or
    ZooKeeper) and are visible to the next read on this broker."""

    cluster_id: str
    node_id: int
    controller_id: int
    topics: dict[str, TopicMeta]
    # Dynamic broker configs (KIP-226) as the strings they were set to: "" holds the cluster-wide
    # defaults, str(node id) this broker's own.
    broker_configs: dict[str, dict[str, str]]
    client_quotas: dict[QuotaEntity, dict[str, float]]
    group_configs: dict[str, dict[str, str]]
    # Finalized feature levels (KIP-584; None: never stored, the broker bootstraps them) and their
    # epoch, which every change moves.
    finalized_features: dict[str, int] | None
    finalized_features_epoch: int

    def load(self) -> None: ...

    # -- queries

    def topic(self, name: str) -> TopicMeta | None: ...

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMeta | None: ...

    def partition_state(self, topic: str, partition: int) -> PartitionState | None: ...

    def live_brokers(self) -> list[int]: ...

    def read_broker_configs(self, resource_name: str) -> dict[str, str]: ...

    def read_client_quotas(self, entities: Iterable[QuotaEntity]) -> dict[QuotaEntity, dict[str, float]]: ...

    def read_group_configs(self, group: str) -> dict[str, str]: ...

    def metadata_quorum(self) -> MetadataQuorum | None:
        """The quorum of the metadata log, or None where there is none to describe (ZooKeeper holds
        a cluster's metadata, and Kafka's ZooKeeper-mode brokers did not serve DescribeQuorum)."""
        ...

    # -- changes

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, object]) -> TopicMeta: ...

    def delete_topic(self, name: str) -> TopicMeta: ...

    def set_partition_count(self, name: str, count: int) -> None: ...

    def set_topic_configs(self, name: str, configs: dict[str, object]) -> None: ...

    def set_broker_configs(self, resource_name: str, configs: dict[str, str]) -> None: ...

    def set_client_quotas(self, changes: dict[QuotaEntity, dict[str, float | None]]) -> None: ...

    def set_group_configs(self, group: str, configs: dict[str, str]) -> None: ...


    def bootstrap_finalized_features(self, levels: dict[str, int]) -> None: ...

    def set_finalized_features(self, levels: dict[str, int]) -> int: ...


class TopicCatalog:
    """What both stores keep in memory (topics by name and by id, dynamic broker configs, client
    quotas, finalized features) and the queries answered from it. A store adds where the state
    comes from and goes to, and `_state_of`: a partition's leader and ISR."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.cluster_id = ""
        self.topics: dict[str, TopicMeta] = {}
        self._by_id: dict[uuid.UUID, TopicMeta] = {}
        self.broker_configs: dict[str, dict[str, str]] = {}
        self.client_quotas: dict[QuotaEntity, dict[str, float]] = {}
        # Group configs (broker/group_configs.py): group id -> its overrides.
        self.group_configs: dict[str, dict[str, str]] = {}
        self.finalized_features: dict[str, int] | None = None
        self.finalized_features_epoch = -1

    # -- queries

    def topic(self, name: str) -> TopicMeta | None:
        return self.topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMeta | None:
        return self._by_id.get(topic_id)

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        """None for a topic or partition that does not exist."""
        meta = self.topics.get(topic)
        if meta is None or not 0 <= partition < meta.partitions:
            return None
        return self._state_of(topic, partition)

    def _state_of(self, topic: str, partition: int) -> PartitionState:
        raise NotImplementedError

    # -- the in-memory state, as the stores change it

    def _index_topic(self, meta: TopicMeta) -> None:
        self.topics[meta.name] = meta
        self._by_id[meta.topic_id] = meta

    def _forget_topic(self, name: str) -> TopicMeta | None:
        meta = self.topics.pop(name, None)
        if meta is not None:
            self._by_id.pop(meta.topic_id, None)
        return meta

    def _store_broker_configs(self, resource_name: str, configs: dict[str, str]) -> bool:
        """Keep the dynamic configs of the default broker ("") or of a broker; whether they changed."""
        return _replace_configs(self.broker_configs, resource_name, configs)

    def _store_group_configs(self, group: str, configs: dict[str, str]) -> bool:
        """Replace a group's overrides (none: the group has no config resource); whether they changed."""
        return _replace_configs(self.group_configs, group, configs)

    def _store_client_quota(self, entity: QuotaEntity, values: dict[str, float]) -> None:
        """The quota managers read client_quotas on every request: an entity without values goes."""
        if values:
            self.client_quotas[entity] = dict(values)
        else:
            self.client_quotas.pop(entity, None)


def _replace_configs(table: dict[str, dict[str, str]], name: str, configs: dict[str, str]) -> bool:
    """An entity's configs in `table` replaced (none: the entity leaves it); whether they changed."""
    if table.get(name, {}) == configs:
        return False
    if configs:
        table[name] = dict(configs)
    else:
        table.pop(name, None)
    return True


def topic_names_of(metadata: MetadataStore, topic_ids) -> list[str | None]:
    """The names of these topic ids (requests of KIP-516 name topics by id), None for an id the
    metadata does not know: Kafka answers those UNKNOWN_TOPIC_ID."""
    names = []
    for topic_id in topic_ids:
        meta = metadata.topic_by_id(topic_id)
        names.append(meta.name if meta is not None else None)
    return names


def read_meta_properties(directory: Path) -> dict[str, str]:
    """A log directory's meta.properties (cluster.id, node.id), as Kafka reads it; {} when absent."""
    path = directory / META_PROPERTIES
    return parse_properties(path.read_text()) if path.exists() else {}


def write_atomically(path: Path, text: str) -> None:
    """Replace a file's contents so that a crash leaves the old or the new, never a torn mix."""
    # (Named for the process: a broker's workers may write the same file at once, e.g. meta.properties.)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
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
