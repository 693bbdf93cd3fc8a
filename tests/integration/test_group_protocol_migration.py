"""Online migration with real Java consumers (kafka-clients 4.3.0): the members of one group are rolled
one by one from group.protocol=classic to group.protocol=consumer and back while records flow, and
the broker restarts in the middle (the upgraded group replays from __consumer_offsets).

What users rely on: every acknowledged record is consumed (at least once), committed offsets never
go back, the group ends fully committed; the group converts each way (a consumer group once a KIP-848
member joined, classic again once the last one left), as ConsumerGroupDescribe and DescribeGroups show.

CI runs it against kafka-wire (about 25 s). The same test runs against the reference Apache Kafka
4.3.0 with KW_SLOW=1 (the harness proven; about 40 s with Kafka's start):
    KW_SLOW=1 .venv/bin/python -m pytest tests/integration/test_group_protocol_migration.py
"""

from __future__ import annotations

import os
import uuid

import pytest

from testing.broker_process import BrokerProcess
from client import KafkaError, WireClient
from tests.integration.test_consumer_group_protocol import CLIENTS, JavaMember, Producer, create_topic, wait_for

confluent_kafka = pytest.importorskip("confluent_kafka")

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
    """What the broker says of the group, asked with the APIs admin clients use: ConsumerGroupDescribe
    (a consumer group) and DescribeGroups (a classic one), and OffsetFetch. Through kafka-wire's own
    wire client: librdkafka's admin client, created per look (one reused keeps its first idea of the
    group's type), crashed the test process once in a few runs against the reference Kafka."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.committed_seen: dict[int, int] = {}

    def _call(self, api: str, version: int, body):
        try:
            with WireClient(self.bootstrap) as client:
                return client.call(api, version, body)
        except (OSError, KafkaError):
            return None  # the broker is restarting

    def type_name(self) -> str:
        described = self._call("ConsumerGroupDescribe", 0, {"group_ids": [self.group],
                                                            "include_authorized_operations": False})
        if described is not None and described.groups[0].error_code == 0:
            return "CONSUMER"
        classic = self._call("DescribeGroups", 5, {"groups": [self.group], "include_authorized_operations": False})
        if classic is not None and classic.groups[0].error_code == 0 and classic.groups[0].group_state != "Dead":
            return "CLASSIC"
        return "?"  # unknown yet, or the coordinator is loading after a restart

    def committed(self) -> dict[int, int]:
        """The committed offsets, checked never to go back from one look to the next."""
        answer = self._call("OffsetFetch", 8, {"groups": [{"group_id": self.group, "topics": [
            {"name": self.topic, "partition_indexes": list(range(PARTITIONS))}]}], "require_stable": False})
        if answer is None or answer.groups[0].error_code != 0:
            return dict(self.committed_seen)
        now = {p.partition_index: p.committed_offset for t in answer.groups[0].topics for p in t.partitions
               if p.error_code == 0 and p.committed_offset >= 0}
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
