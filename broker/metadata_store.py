"""Embedded cluster metadata: topics, topic IDs, partition counts, topic configs, dynamic broker
configs, group configs, client quotas and finalized feature levels (KIP-584, broker/features.py), on disk.

Single-node default: this broker is every partition's leader and sole in-sync replica. The state
is one JSON document rewritten atomically (temp file, fsync, rename) on every change, beside
`meta.properties` (cluster.id, node.id) in the first log directory, as Kafka keeps them there.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path

from log.config import TOPIC_CONFIGS, InvalidConfig

from .config import ConfigError
from .metadata import (
    META_PROPERTIES,
    MetadataQuorum,
    PartitionState,
    QuotaEntity,
    TopicCatalog,
    TopicMeta,
    random_cluster_id,
    random_topic_id,
    read_meta_properties,
    write_atomically,
)

METADATA_FILE = "kafka-wire-metadata.json"

logger = logging.getLogger("kafka_wire.broker")


def usable_topic_overrides(topic: str, configs: dict[str, object]) -> dict[str, object]:
    """A topic's stored overrides less those its log can no longer take: a value stored by an earlier
    version under looser rules (before Kafka 4.x's, e.g. compression.gzip.level=0) is dropped with a
    warning, so that the broker still opens the topic's logs."""
    usable = {}
    for name, value in configs.items():
        definition = TOPIC_CONFIGS.get(name)
        try:
            if definition is not None:
                definition.parse_for_log(value)
        except InvalidConfig as exc:
            logger.warning("topic %s: ignoring its stored config %s=%s: %s", topic, name, value, exc)
            continue
        usable[name] = value
    return usable


class EmbeddedMetadata(TopicCatalog):
    """Topic metadata for a single-node cluster, persisted in the first log directory."""

    def __init__(self, data_dir: str, node_id: int) -> None:
        super().__init__(node_id)
        self.dir = Path(data_dir)
        # This node is the controller and the only live broker.
        self.controller_id = node_id
        # Leader epochs only change in cluster mode; 0 is the epoch of a freshly created partition.
        self.leader_epoch = 0
        # The metadata log's quorum (DescribeQuorum): this node's terms as its one voter, and the
        # number of changes written (its end offset and high watermark).
        self.quorum_epoch = 0
        self.metadata_end_offset = 0

    # -- persistence ------------------------------------------------------------------------

    def load(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = self._load_meta_properties()
        path = self.dir / METADATA_FILE
        if path.exists():
            data = json.loads(path.read_text())
            for item in data.get("topics", []):
                meta = TopicMeta.from_json(item)
                meta.configs = usable_topic_overrides(meta.name, meta.configs)
                self._index_topic(meta)
            self.broker_configs = {name: dict(configs) for name, configs in data.get("broker_configs", {}).items()}
            self.group_configs = {name: dict(configs) for name, configs in data.get("group_configs", {}).items()}
            for item in data.get("client_quotas", []):
                entity = tuple(sorted((kind, name) for kind, name in item["entity"]))
                self.client_quotas[entity] = {k: float(v) for k, v in item["values"].items()}
            quorum = data.get("quorum", {})
            self.quorum_epoch = int(quorum.get("epoch", 0))
            self.metadata_end_offset = int(quorum.get("end_offset", 0))
            features = data.get("features")
            if features is not None:
                self.finalized_features = {name: int(level) for name, level in features["levels"].items()}
                self.finalized_features_epoch = int(features["epoch"])

    def _load_meta_properties(self) -> str:
        props = read_meta_properties(self.dir)
        path = self.dir / META_PROPERTIES
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
            write_atomically(path, f"version=1\ncluster.id={cluster_id}\nnode.id={self.node_id}\n")
        return cluster_id

    def begin_term(self) -> None:
        """This node starts leading its metadata (at each start of the broker, in the process that
        writes the metadata): a new epoch, opened by one record, as a KRaft leader's LeaderChange."""
        self.quorum_epoch += 1
        self._save()

    def metadata_quorum(self) -> MetadataQuorum:
        return MetadataQuorum(self.node_id, self.quorum_epoch, self.metadata_end_offset)

    def _save(self) -> None:
        self.metadata_end_offset += 1
        data = {"topics": [t.to_json() for t in self.topics.values()],
                "quorum": {"epoch": self.quorum_epoch, "end_offset": self.metadata_end_offset}}
        if self.broker_configs:
            data["broker_configs"] = self.broker_configs
        if self.group_configs:
            data["group_configs"] = self.group_configs
        if self.client_quotas:
            data["client_quotas"] = [{"entity": [list(part) for part in entity], "values": values}
                                     for entity, values in self.client_quotas.items()]
        if self.finalized_features is not None:
            data["features"] = {"epoch": self.finalized_features_epoch, "levels": self.finalized_features}
        write_atomically(self.dir / METADATA_FILE, json.dumps(data, indent=1, sort_keys=True))

    # -- queries (TopicCatalog answers the rest) ---------------------------------------------

    def _state_of(self, topic: str, partition: int) -> PartitionState:
        return PartitionState(self.node_id, self.leader_epoch, [self.node_id], [self.node_id])

    def live_brokers(self) -> list[int]:
        return [self.node_id]

    def read_broker_configs(self, resource_name: str) -> dict[str, str]:
        """The dynamic configs of the default broker ("") or of a broker: this file is their only copy."""
        return dict(self.broker_configs.get(resource_name, {}))

    def read_client_quotas(self, entities: Iterable[QuotaEntity]) -> dict[QuotaEntity, dict[str, float]]:
        """The stored quotas of these entities (those without any are left out)."""
        return {entity: dict(self.client_quotas[entity]) for entity in entities if entity in self.client_quotas}

    def read_group_configs(self, group: str) -> dict[str, str]:
        return dict(self.group_configs.get(group, {}))

    # -- changes -----------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, object]) -> TopicMeta:
        meta = TopicMeta(name, random_topic_id(), partitions, replication_factor, dict(configs))
        self._index_topic(meta)
        self._save()
        return meta

    def delete_topic(self, name: str) -> TopicMeta:
        meta = self.topics[name]
        self._forget_topic(name)
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
        self._store_broker_configs(resource_name, configs)
        self._save()

    def set_group_configs(self, group: str, configs: dict[str, str]) -> None:
        """Replace a group's config overrides (empty: it has none)."""
        if self._store_group_configs(group, configs):
            self._save()

    def set_client_quotas(self, changes: dict[QuotaEntity, dict[str, float | None]]) -> None:
        """Apply quota changes per entity (None removes a key) and persist them at once."""
        for entity, values in changes.items():
            current = dict(self.client_quotas.get(entity, {}))
            for key, value in values.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = float(value)
            self._store_client_quota(entity, current)
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
