"""Online migration with real Java consumers (kafka-clients 4.3.0): the members of one group are rolled
one by one from group.protocol=classic to group.protocol=consumer and back while records flow, and
the broker restarts in the middle (the upgraded group replays from __consumer_offsets).

What users rely on: every acknowledged record is consumed (at least once), committed offsets never
go back, the group ends fully committed; the group converts each way (a consumer group once a KIP-848
member joined, classic again once the last one left), as Admin's describeConsumerGroups shows.

CI runs it against kafka-wire (about 25 s). The same test runs against the reference Apache Kafka
4.3.0 with KW_SLOW=1 (the harness proven; about 40 s with Kafka's start):
    KW_SLOW=1 .venv/bin/python -m pytest tests/integration/test_group_protocol_migration.py
"""

from __future__ import annotations

import os
import uuid

import pytest

from broker.testing import BrokerProcess
from tests.integration.test_consumer_group_protocol import CLIENTS, JavaMember, Producer, create_topic, wait_for

confluent_kafka = pytest.importorskip("confluent_kafka")
import confluent_kafka.admin  # noqa: E402

pytestmark = pytest.mark.timeout(600)

PARTITIONS = 4
KAFKA_WIRE_CONFIG = {
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.session.timeout.ms": 6000,
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.num.partitions": 5,
}
# Kafka refuses a heartbeat interval or session timeout below its minimums (5 s and 45 s by default).
REFERENCE_CONFIG = {
    "group.consumer.min.heartbeat.interval.ms": 500,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.session.timeout.ms": 6000,
    "group.consumer.session.timeout.ms": 6000,
}

TARGETS = ["kafka-wire", pytest.param("kafka-4.3.0", marks=pytest.mark.skipif(
    os.environ.get("KW_SLOW") != "1", reason="the reference Kafka run is the slow form: KW_SLOW=1"))]


@pytest.fixture(params=TARGETS)
def target(request, tmp_path):
    """The broker under test: a kafka-wire process, or the reference Kafka (both restartable)."""
    if request.param == "kafka-wire":
        broker = BrokerProcess(tmp_path / "broker", config=KAFKA_WIRE_CONFIG)
        broker.start()
        yield broker
        problems = broker.finish()
        assert not problems, "\n".join(problems) + broker.log_report()
    else:
        yield request.getfixturevalue("reference_kafka")("4.3.0", config=REFERENCE_CONFIG)


class Group:
    """What the Python admin client (librdkafka: ConsumerGroupDescribe, else DescribeGroups) says."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.committed_seen: dict[int, int] = {}

    def admin(self):
        # A new client each time: one created before a broker restart may wait long to reconnect.
        return confluent_kafka.admin.AdminClient({"bootstrap.servers": self.bootstrap})

    def type_name(self) -> str:
        admin = self.admin()  # kept referenced until the answer is in: a collected client never answers
        try:
            return admin.describe_consumer_groups([self.group])[self.group].result(20).type.name
        except (confluent_kafka.KafkaException, TimeoutError):
            return "?"  # the coordinator is loading after a restart

    def committed(self) -> dict[int, int]:
        """The committed offsets, checked never to go back from one look to the next."""
        request = confluent_kafka.ConsumerGroupTopicPartitions(
            self.group, [confluent_kafka.TopicPartition(self.topic, p) for p in range(PARTITIONS)])
        admin = self.admin()
        try:
            result = admin.list_consumer_group_offsets([request])[self.group].result(20)
        except (confluent_kafka.KafkaException, TimeoutError):
            return dict(self.committed_seen)
        now = {tp.partition: tp.offset for tp in result.topic_partitions if tp.offset >= 0}
        for partition, offset in now.items():
            assert offset >= self.committed_seen.get(partition, -1), \
                f"committed offset of partition {partition} went back: {self.committed_seen[partition]} -> {offset}"
        self.committed_seen.update(now)
        return now


def test_members_roll_between_classic_and_consumer_protocols(target, java_kafka_clients):
    topic, group = f"mig-{uuid.uuid4().hex[:8]}", f"mig-group-{uuid.uuid4().hex[:8]}"
    create_topic(target.bootstrap, topic, PARTITIONS)
    command = java_kafka_clients("4.3.0").program(CLIENTS / "ConsumerProtocolMember.java")
    producer = Producer(target.bootstrap, topic)
    producer.start()
    view = Group(target.bootstrap, group, topic)
    everyone: list[JavaMember] = []
    live: dict[str, JavaMember] = {}

    def start(name: str, protocol: str) -> None:
        member = JavaMember(["env", f"KW_GROUP_PROTOCOL={protocol}", *command], target.bootstrap, group, topic,
                            f"{name}-{protocol}")
        everyone.append(member)
        live[name] = member

    def balanced(what: str) -> None:
        """The live members share the partitions evenly, none twice."""
        members = list(live.values())

        def settled() -> bool:
            owned = [m.assigned for m in members]
            return all(len(o) == PARTITIONS // len(members) for o in owned) \
                and set().union(*owned) == set(range(PARTITIONS)) and sum(map(len, owned)) == PARTITIONS
        wait_for(settled, 90, what, members)
        view.committed()

    def group_type(expected: str) -> None:
        wait_for(lambda: view.type_name() == expected, 60, f"the group described as {expected}", live.values())

    try:
        start("a", "classic")
        start("b", "classic")
        balanced("two classic members sharing the topic")
        group_type("CLASSIC")
        # Roll A to the consumer protocol: its ConsumerGroupHeartbeat upgrades the group.
        live.pop("a").stop()
        start("a", "consumer")
        balanced("a KIP-848 member and a classic member sharing the topic")
        group_type("CONSUMER")
        # The broker restarts: the converted group (and the classic member in it) replays.
        consumed_before = sum(len(m.records) for m in everyone)
        target.restart()
        wait_for(lambda: sum(len(m.records) for m in everyone) > consumed_before + 40, 90,
                 "records consumed after the restart", live.values())
        balanced("both members back after the restart")
        group_type("CONSUMER")
        live.pop("b").stop()
        start("b", "consumer")
        balanced("two KIP-848 members")
        # And back: A classic again inside the consumer group, then B's leave downgrades it.
        live.pop("a").stop()
        start("a", "classic")
        balanced("a classic member inside the consumer group")
        live.pop("b").stop()
        group_type("CLASSIC")
        balanced("the classic member alone in the classic group")
        producer.stop()
        wait_for(lambda: producer.acked <= {v for m in everyone for _, _, v in m.records}, 90,
                 "every acknowledged record consumed", live.values())
        for member in live.values():
            member.stop()
    finally:
        producer.stop()
        for member in everyone:
            if member.process.poll() is None:
                member.kill()
    consumed = {v for m in everyone for _, _, v in m.records}
    assert len(producer.acked) > 100 and producer.acked <= consumed
    # Nothing skipped: the group ends committed at the end of every partition.
    ends = {}
    consumer = confluent_kafka.Consumer({"bootstrap.servers": target.bootstrap, "group.id": f"probe-{group}"})
    try:
        for p in range(PARTITIONS):
            ends[p] = consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p), timeout=30)[1]
    finally:
        consumer.close()
    wait_for(lambda: view.committed() == ends, 30, f"committed offsets at the ends {ends}")
