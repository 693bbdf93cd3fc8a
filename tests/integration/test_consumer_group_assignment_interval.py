"""consumer.assignment.interval.ms (Kafka 4.3, KIP-1263) with real consumers: confluent-kafka
(librdkafka 2.16) with group.protocol=consumer against kafka-wire and, in the same test, against the
reference Apache Kafka 4.3.0.

A group whose interval is 8 s (set with IncrementalAlterConfigs before its first member): the first
member gets every partition at once; two members joining right after wait, at the last assignment
epoch with nothing, while ConsumerGroupDescribe shows the group Assigning; once the interval is over
one target assignment covers both joins (the assignment epoch goes straight to the group epoch) and
the partitions are split three ways.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import Consumer  # noqa: E402
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic  # noqa: E402

from client import WireClient  # noqa: E402
from testing.broker_process import BrokerProcess  # noqa: E402

pytestmark = pytest.mark.timeout(300)

INTERVAL_MS = 8000
# Both brokers: a group may heartbeat every second (Kafka's group.consumer.min.heartbeat.interval.ms is 5 s).
CONFIG = {"group.consumer.min.heartbeat.interval.ms": 1000}


@pytest.fixture(scope="module")
def wire(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("interval-broker"), config=CONFIG)
    broker.start()
    yield broker
    problems = broker.finish()
    assert not problems, "\n".join(problems) + broker.log_report()


@pytest.fixture(params=["kafka-wire", "kafka-4.3.0"])
def bootstrap(request, wire):
    if request.param == "kafka-wire":
        return wire.bootstrap
    return request.getfixturevalue("reference_kafka")("4.3.0", CONFIG).bootstrap


class Member:
    """A consumer polling on its own thread (librdkafka applies assignments from poll); `owned` is
    what it holds now."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                                  "auto.offset.reset": "earliest"})
        self.consumer.subscribe([topic])
        self.owned: set[int] = set()
        self.errors: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            message = self.consumer.poll(0.2)
            if message is not None and message.error() is not None and not message.error().retriable():
                self.errors.append(message.error())
            self.owned = {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.consumer.close()


def describe(bootstrap: str, group: str):
    with WireClient(bootstrap) as client:
        described = client.call("ConsumerGroupDescribe", 1, {"group_ids": [group],
                                                             "include_authorized_operations": False}).groups[0]
    assert described.error_code == 0, described
    return described


def sizes(described) -> list[int]:
    return sorted(sum(len(t.partitions) for t in m.assignment.topic_partitions) for m in described.members)


def wait_for(what, check, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def set_group_configs(bootstrap: str, group: str, interval_ms: int) -> None:
    """The group's assignment interval, and a heartbeat every second (IncrementalAlterConfigs, before
    its first member)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource("GROUP", group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in (("consumer.assignment.interval.ms", str(interval_ms)),
                            ("consumer.heartbeat.interval.ms", "1000"))])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def test_members_joining_within_the_interval_get_their_partitions_from_one_assignment(bootstrap):
    topic, group = f"interval-{uuid.uuid4().hex[:8]}", f"interval-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(30)
    set_group_configs(bootstrap, group, INTERVAL_MS)

    members = []
    try:
        a = Member(bootstrap, group, topic)
        members.append(a)
        wait_for("the first member's partitions", lambda: a.owned == {0, 1, 2, 3}, 30)
        a_assigned_at = time.monotonic()
        first = describe(bootstrap, group)
        epoch = first.assignment_epoch
        assert (first.group_state, first.group_epoch) == ("Stable", epoch)

        b, c = Member(bootstrap, group, topic), Member(bootstrap, group, topic)
        members += [b, c]
        waiting = wait_for("both joins", lambda: (d := describe(bootstrap, group)) and len(d.members) == 3 and d, 20)
        # Within the interval: both joined (group epoch +2), nothing assigned again.
        assert time.monotonic() - a_assigned_at < INTERVAL_MS / 1000 - 3, "the joins came too late to test"
        assert (waiting.group_state, waiting.group_epoch, waiting.assignment_epoch) == ("Assigning", epoch + 2, epoch)
        assert sizes(waiting) == [0, 0, 4]
        assert sorted(m.member_epoch for m in waiting.members) == [epoch] * 3
        assert b.owned == c.owned == set() and a.owned == {0, 1, 2, 3}
        # Heartbeats go on (every second) until shortly before the interval ends: still waiting.
        time.sleep(max(0.0, a_assigned_at + INTERVAL_MS / 1000 - 2.5 - time.monotonic()))
        assert describe(bootstrap, group).assignment_epoch == epoch and b.owned == c.owned == set()

        seen_epochs = set()

        def recomputed():
            d = describe(bootstrap, group)
            seen_epochs.add(d.assignment_epoch)
            return d.assignment_epoch != epoch and d

        computed = wait_for("the next target assignment", recomputed, 30)
        waited = time.monotonic() - a_assigned_at
        assert waited >= INTERVAL_MS / 1000 - 1.5, f"recomputed {waited:.1f} s after the first assignment"
        # One computation for both joins: straight to the group epoch.
        assert computed.assignment_epoch == computed.group_epoch == epoch + 2 and seen_epochs == {epoch, epoch + 2}
        settled = wait_for("the partitions split three ways",
                           lambda: (d := describe(bootstrap, group)).group_state == "Stable" and d, 30)
        assert sizes(settled) == [1, 1, 2] and settled.assignment_epoch == epoch + 2
        wait_for("the consumers holding them", lambda: sorted(len(m.owned) for m in members) == [1, 1, 2], 20)
        assert set().union(*(m.owned for m in members)) == {0, 1, 2, 3}
        assert all(not m.errors for m in members), [m.errors for m in members]
    finally:
        for member in members:
            member.close()
