"""What the Kafka Streams, Connect and MirrorMaker 2 tests (test_peers_*.py) share: the installed
peers (compat/setup-peers.sh), producing, and reading topics back read_committed."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from compat import peers
from tests.conftest import missing_tool


def require_peers(version: str) -> None:
    if not peers.is_installed(version):
        missing_tool(f"Kafka Streams/Connect/MirrorMaker {version} (compat/setup-peers.sh, into "
                     f"{peers.peers_dir(version)})")


def create_topics(bootstrap: str, topics: dict[str, int], replication_factor: int = 1,
                  config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, replication_factor, config=config or {})
                                   for name, partitions in topics.items()], operation_timeout=30)
    for name, future in futures.items():
        future.result(timeout=60)


def topic_names(bootstrap: str) -> set[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return set(admin.list_topics(timeout=30).topics)


def producer_for(bootstrap: str) -> Producer:
    # murmur2_random: keys land on the partitions Java's producers (Kafka Streams) pick for them.
    return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                     "linger.ms": 5, "partitioner": "murmur2_random"})


def produce(bootstrap: str, records: list[tuple[str, int | None, str, str, int | None]],
            producer: Producer | None = None) -> None:
    """(topic, partition or None, key, value, timestamp ms or None) each, idempotently, all acked
    (through `producer` when given, else a producer of its own)."""
    failures: list[str] = []

    def delivered(error, message):
        if error is not None:
            failures.append(f"{message.topic()}: {error}")

    producer = producer or producer_for(bootstrap)
    for topic, partition, key, value, timestamp in records:
        extra = {} if partition is None else {"partition": partition}
        if timestamp is not None:
            extra["timestamp"] = timestamp
        while True:
            try:
                producer.produce(topic, value=value.encode(), key=key.encode(), on_delivery=delivered, **extra)
                break
            except BufferError:
                producer.poll(0.1)
    remaining = producer.flush(120)
    assert remaining == 0 and not failures, f"{remaining} records not acked; failures: {failures[:5]}"


class TopicReader:
    """Reads whole topics from the start, read_committed (or, committed=False, read_uncommitted: records
    of open transactions too), accumulating (key, value) per partition."""

    def __init__(self, bootstrap: str, topics: dict[str, int], committed: bool = True):
        self.topics = topics
        self.records: dict[str, dict[int, list[tuple[str, str]]]] = {t: {p: [] for p in range(n)}
                                                                     for t, n in topics.items()}
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafka-wire-peers-reader",
                                  "enable.auto.commit": False,
                                  "isolation.level": "read_committed" if committed else "read_uncommitted",
                                  "auto.offset.reset": "earliest"})
        self.consumer.assign([TopicPartition(t, p, 0) for t, n in topics.items() for p in range(n)])

    def count(self, topic: str) -> int:
        return sum(len(r) for r in self.records[topic].values())

    def poll(self, seconds: float = 1.0) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            for message in self.consumer.consume(500, timeout=min(left, 0.5)):
                if message.error():
                    continue
                self.records[message.topic()][message.partition()].append(
                    ((message.key() or b"").decode(), (message.value() or b"").decode()))

    def wait_for(self, condition, what: str, timeout: float, on_timeout=lambda: "") -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                counts = {t: self.count(t) for t in self.topics}
                pytest.fail(f"{what}: not within {timeout:.0f}s (records read so far: {counts})\n{on_timeout()}",
                            pytrace=False)
            self.poll(1.0)

    def read_to_end(self, timeout: float = 120.0) -> None:
        """Until the position in every partition reaches its high watermark (with no transaction left
        open, read_committed reads up to there)."""
        partitions = [TopicPartition(t, p) for t, n in self.topics.items() for p in range(n)]

        def at_end() -> bool:
            positions = self.consumer.position(partitions)
            try:
                return all(tp.offset >= self.consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in positions)
            except KafkaException:  # a broker that was killed: ask again (its partitions have new leaders)
                return False

        self.wait_for(at_end, "every partition read to its end", timeout)

    def by_key(self, topic: str) -> dict[str, list[str]]:
        """The values of each key in log order (a key lives in one partition)."""
        result: dict[str, list[str]] = {}
        for records in self.records[topic].values():
            for key, value in records:
                result.setdefault(key, []).append(value)
        return result

    def close(self) -> None:
        self.consumer.close()


def wait_for_open_transaction(committed: TopicReader, uncommitted: TopicReader, topic: str, begin, what: str,
                              timeout: float, on_timeout=lambda: "") -> None:
    """Calls `begin()` (which makes the work start: more input), then waits until `topic` (most
    likely) holds records of a transaction still open: read_uncommitted sees more records beyond
    read_committed than before `begin()` (the surplus of aborted transactions stays). For timing a
    kill; not an assertion."""
    committed.poll(0.5)
    uncommitted.poll(0.5)
    before = uncommitted.count(topic) - committed.count(topic)
    begin()
    deadline = time.monotonic() + timeout
    while True:
        uncommitted.poll(0.1)
        if uncommitted.count(topic) - committed.count(topic) > before:
            return
        committed.poll(0.1)
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: no open transaction seen on {topic} within {timeout:.0f}s\n{on_timeout()}",
                        pytrace=False)
