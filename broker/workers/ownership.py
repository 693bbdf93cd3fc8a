"""Which worker process owns a partition.

Every partition is owned by exactly one worker of a broker: the owner alone opens its log, appends
to it and reads it. Internal topics (`__consumer_offsets`, `__transaction_state`, any `__*` name)
belong to worker 0, which also runs the group and transaction coordinators and owns the metadata;
so does `_schemas`, the Schema Registry's topic (worker 0 serves the registry).
A user topic's partitions go round-robin over the workers from a start fixed by the topic's name
(CRC-32 of its UTF-8 bytes, the same in every process and every run), so a topic of P partitions
spreads over min(P, N) workers and two topics do not pile onto the same ones.

Ownership depends only on the topic, the partition and the number of workers: no table to keep in
step, and a worker knows the owner of a partition of a topic it has never heard of.
"""

from __future__ import annotations

import os
import zlib

PRIMARY = 0
SCHEMAS_TOPIC = "_schemas"
# The Schema Registry's exporter definitions and progress (registry/exporters.py): its own compacted
# topic, not `_schemas`, whose other readers (Karapace in strict mode) stop at a key type they do not know.
EXPORTERS_TOPIC = "_schema_exporters"


def owner_of(topic: str, partition: int, count: int) -> int:
    """The index (0..count-1) of the worker that owns `topic`-`partition`."""
    # _schemas is the Schema Registry's log (registry/), _schema_exporters its exporters': the registry
    # runs on worker 0 and reads and appends them there, as the coordinators do their internal topics.
    if count <= 1 or topic.startswith("__") or topic in (SCHEMAS_TOPIC, EXPORTERS_TOPIC):
        return PRIMARY
    return (zlib.crc32(topic.encode()) + partition) % count


class Ownership:
    """What one worker owns: `owns(topic, partition)` for its log manager and data path."""

    __slots__ = ("index", "count")

    def __init__(self, index: int, count: int) -> None:
        if not 0 <= index < count:
            raise ValueError(f"worker {index} of {count}")
        self.index = index
        self.count = count

    @property
    def is_primary(self) -> bool:
        return self.index == PRIMARY

    def owner(self, topic: str, partition: int) -> int:
        return owner_of(topic, partition, self.count)

    def owns(self, topic: str, partition: int) -> bool:
        return owner_of(topic, partition, self.count) == self.index

    def __repr__(self) -> str:
        return f"Ownership(worker {self.index} of {self.count})"


def worker_count(config) -> int:
    """num.worker.processes, 0 meaning one per core this process may run on."""
    configured = int(config["num.worker.processes"])
    if configured > 0:
        return configured
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
