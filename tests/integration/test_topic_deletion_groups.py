"""Deleting topics a consumer group consumes, with a real client (confluent-kafka): the sequence of
librdkafka's own tests 0045 (subscribe_update_topic_remove) and 0113 (h_delete_topic), made quick.

What Kafka does and clients rely on: once a subscribed topic is deleted, Metadata says
UNKNOWN_TOPIC_OR_PARTITION for it, the consumer's subscription loses it and the member rejoins,
so the group rebalances after the first deletion and again after the second; the consumer then
closes promptly. The committed offsets of a deleted topic are deleted with it
(GroupCoordinator.onPartitionsDeleted), so a topic re-created under the same name gets a new topic
id and starts without the old topic's committed offsets.

librdkafka 2.0.2 (the build of compat/'s suite) hangs in rd_kafka_destroy after this sequence
whatever the broker (its bug #4187, fixed in 2.1.0); the confluent-kafka wheel here is newer.
"""

from __future__ import annotations

import time
import uuid

import pytest

from testing.broker_process import running_broker
from client import WireClient
from kafka_wire.errors import ErrorCode

confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = [pytest.mark.clients, pytest.mark.timeout(120)]

BROKER_CONFIG = {"group.initial.rebalance.delay.ms": 0, "auto.create.topics.enable": False}


@pytest.fixture
def broker(tmp_path):
    with running_broker(tmp_path / "broker", config=BROKER_CONFIG) as running:
        yield running


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topics(admin: AdminClient, topics: dict[str, int]) -> None:
    for future in admin.create_topics([NewTopic(name, n, 1) for name, n in topics.items()]).values():
        future.result(30)


def delete_topic(admin: AdminClient, topic: str) -> None:
    admin.delete_topics([topic], operation_timeout=30)[topic].result(30)


class RebalanceLog:
    """What the consumer's rebalance callbacks saw, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, frozenset[tuple[str, int]]]] = []

    def on_assign(self, consumer, partitions) -> None:
        self.events.append(("assign", frozenset((p.topic, p.partition) for p in partitions)))

    def on_revoke(self, consumer, partitions) -> None:
        self.events.append(("revoke", frozenset((p.topic, p.partition) for p in partitions)))

    def on_lost(self, consumer, partitions) -> None:
        self.events.append(("lost", frozenset((p.topic, p.partition) for p in partitions)))


def poll_until(consumer: Consumer, condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        consumer.poll(0.2)


def owned(consumer: Consumer) -> set[tuple[str, int]]:
    return {(p.topic, p.partition) for p in consumer.assignment()}


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_group_rebalances_after_each_subscribed_topic_is_deleted(broker, strategy):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic_f, topic_g = unique("deleted-first"), unique("deleted-second")
    create_topics(admin, {topic_f: 2, topic_g: 3})
    log = RebalanceLog()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique("deletions"),
                         "partition.assignment.strategy": strategy, "auto.offset.reset": "earliest",
                         "topic.metadata.refresh.interval.ms": 500, "session.timeout.ms": 6000})
    try:
        consumer.subscribe([topic_f, topic_g], on_assign=log.on_assign, on_revoke=log.on_revoke,
                           on_lost=log.on_lost)
        both = {(topic_f, p) for p in range(2)} | {(topic_g, p) for p in range(3)}
        poll_until(consumer, lambda: owned(consumer) == both, 30, "the first assignment")

        delete_topic(admin, topic_f)
        poll_until(consumer, lambda: owned(consumer) == {(topic_g, p) for p in range(3)}, 30,
                   "the rebalance after the first deletion")
        seen = len(log.events)

        delete_topic(admin, topic_g)
        poll_until(consumer, lambda: not owned(consumer) and len(log.events) > seen, 30,
                   "the rebalance after the second deletion")
        taken_back = set().union(*(parts for kind, parts in log.events[seen:] if kind in ("revoke", "lost")))
        assert {(topic_g, p) for p in range(3)} <= taken_back, log.events[seen:]
    finally:
        began = time.monotonic()
        consumer.close()
    assert time.monotonic() - began < 15, "close() hung after the subscribed topics were deleted"


def test_deleted_topic_takes_its_committed_offsets_and_a_recreated_one_is_new(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic, group = unique("recreated"), unique("offsets")
    create_topics(admin, {topic: 1})
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(5):
        producer.produce(topic, value=str(i).encode(), partition=0)
    assert producer.flush(30) == 0
    committer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    committer.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)
    assert committer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 4
    committer.close()

    with WireClient(broker.bootstrap) as client:
        before = client.call("Metadata", 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
        old_id = before.topics[0].topic_id
        delete_topic(admin, topic)
        gone = client.call("Metadata", 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
        assert gone.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # Kafka answers OffsetFetch for a partition without a committed offset with -1, no error.
        fetched = client.call("OffsetFetch", 7, {"group_id": group, "topics": [{"name": topic,
                                                                                "partition_indexes": [0]}]})
        assert fetched.topics[0].partitions[0].committed_offset == -1
        create_topics(admin, {topic: 1})
        again = client.call("Metadata", 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
        assert again.topics[0].error_code == 0 and again.topics[0].topic_id != old_id

    reader = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    assert reader.committed([TopicPartition(topic, 0)], timeout=10)[0].offset < 0, \
        "the re-created topic inherited the deleted topic's committed offset"
    reader.close()
