"""One broker: configuration, cluster metadata, partition logs and the state handlers share.

Handlers receive this object. It owns the topic lifecycle (create, delete, add partitions, alter
configs) so that metadata and logs change together, and it wakes long-polling fetches when an
append lands.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path

from log.log_manager import LogManager

from .config import BrokerConfig
from .metadata_store import EmbeddedMetadata, TopicMeta

log = logging.getLogger("kafka_wire.broker")

PRODUCER_ID_BLOCK = 1000
PRODUCER_ID_FILE = "kafka-wire-producer-ids"


class DataWaiters:
    """Long-polling fetches wait here; an append to a partition wakes the fetches watching it."""

    def __init__(self) -> None:
        self._waiters: dict[tuple[str, int], set[asyncio.Future]] = {}

    def notify(self, topic: str, partition: int) -> None:
        waiters = self._waiters.pop((topic, partition), None)
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    async def wait(self, partitions: list[tuple[str, int]], timeout: float) -> bool:
        """Wait until any of the partitions gets data or the timeout passes; True if woken."""
        if timeout <= 0:
            return False
        fut = asyncio.get_running_loop().create_future()
        for tp in partitions:
            self._waiters.setdefault(tp, set()).add(fut)
        try:
            await asyncio.wait_for(fut, timeout)
            return True
        except asyncio.TimeoutError:
            return False
        finally:
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


class Broker:
    """The single-node broker's shared state."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.node_id = config.node_id
        data_dir = config.log_dirs[0]
        self.metadata = EmbeddedMetadata(data_dir, self.node_id)
        self.logs = LogManager(config.log_dirs, config.topic_defaults())
        self.waiters = DataWaiters()
        self.producer_ids = ProducerIdManager(data_dir)
        self.started_at = time.time()
        self.server = None
        self._background: list[asyncio.Task] = []

    # -- lifecycle ---------------------------------------------------------------------------

    def load(self) -> None:
        self.metadata.load()
        self.logs.load()
        for meta in self.metadata.topics.values():
            for partition in range(meta.partitions):
                self.logs.get_or_create(meta.name, partition, self.topic_config(meta))
        # Directories of topics deleted while the broker was down (or half deleted) go away.
        for topic, partition in list(self.logs.partitions()):
            meta = self.metadata.topic(topic)
            if meta is None or partition >= meta.partitions:
                self.logs.delete_partition(topic, partition)

    def close(self) -> None:
        for task in self._background:
            task.cancel()
        self.logs.close()

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

    # -- topics ------------------------------------------------------------------------------

    def topic_config(self, meta: TopicMeta) -> dict:
        """Effective topic config: broker defaults overlaid with the topic's overrides."""
        config = self.config.topic_defaults()
        config.update(meta.configs)
        return config

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, object]) -> TopicMeta:
        meta = self.metadata.create_topic(name, partitions, replication_factor, configs)
        effective = self.topic_config(meta)
        for partition in range(partitions):
            self.logs.get_or_create(name, partition, effective)
        log.info("created topic %s with %d partitions (id %s)", name, partitions, meta.topic_id)
        return meta

    def delete_topic(self, name: str) -> TopicMeta:
        meta = self.metadata.delete_topic(name)
        for partition in range(meta.partitions):
            self.logs.delete_partition(name, partition)
        log.info("deleted topic %s", name)
        return meta

    def add_partitions(self, name: str, total: int) -> None:
        meta = self.metadata.topic(name)
        effective = self.topic_config(meta)
        for partition in range(meta.partitions, total):
            self.logs.get_or_create(name, partition, effective)
        self.metadata.set_partition_count(name, total)

    def set_topic_configs(self, name: str, configs: dict[str, object]) -> None:
        self.metadata.set_topic_configs(name, configs)
        meta = self.metadata.topic(name)
        effective = self.topic_config(meta)
        for partition in range(meta.partitions):
            self.logs.get(name, partition).update_config(effective)

    def auto_create_topic(self, name: str) -> TopicMeta:
        return self.create_topic(name, int(self.config["num.partitions"]),
                                 int(self.config["default.replication.factor"]), {})

    def partition_log(self, topic: str, partition: int):
        """The log of a partition this broker leads, or None when there is no such partition."""
        meta = self.metadata.topic(topic)
        if meta is None or not 0 <= partition < meta.partitions:
            return None
        return self.logs.get(topic, partition)
