"""Consumer groups with real clients against a broker process: members join and leave while records
flow, every record is consumed, a killed member's partitions move after its session timeout, and
committed offsets survive broker restarts (SIGTERM and SIGKILL).

Members commit synchronously after each record they process, so a record may be consumed twice
only when its commit failed (at-least-once), or after a member was killed.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path
import threading
import time

import pytest

from testing.broker_process import running_broker

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = [pytest.mark.clients, pytest.mark.timeout(240)]

GROUP_BROKER_CONFIG = {
    # Tests start members one by one; waiting 3 s for more to come only slows them down.
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 1000,
}


@pytest.fixture
def group_broker(tmp_path):
    with running_broker(tmp_path / "broker", config=GROUP_BROKER_CONFIG) as broker:
        yield broker


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def produce(bootstrap: str, topic: str, values, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value=str(value).encode(), partition=value % partitions)
    assert producer.flush(30) == 0


class SteadyProducer(threading.Thread):
    """Produces 0, 1, 2, ... round-robin over the partitions until stopped."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, interval: float = 0.005):
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.partitions, self.interval = bootstrap, topic, partitions, interval
        self.stopped = threading.Event()
        self.count = 0

    def run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 1})
        while not self.stopped.is_set():
            producer.produce(self.topic, value=str(self.count).encode(), partition=self.count % self.partitions)
            producer.poll(0)
            self.count += 1
            time.sleep(self.interval)
        assert producer.flush(30) == 0

    def stop(self) -> int:
        self.stopped.set()
        self.join(40)
        return self.count


class Ledger:
    """What every member consumed, and which records' commits failed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.consumed: dict[int, list[str]] = {}
        self.uncommitted: set[int] = set()

    def record(self, value: int, member: str, committed: bool) -> None:
        with self.lock:
            self.consumed.setdefault(value, []).append(member)
            if not committed:
                self.uncommitted.add(value)

    def check(self, expected: int) -> None:
        missing = sorted(set(range(expected)) - set(self.consumed))
        assert not missing, f"{len(missing)} records never consumed, first {missing[:10]}"
        twice = {v: who for v, who in self.consumed.items() if len(who) > 1 and v not in self.uncommitted}
        assert not twice, f"records consumed twice although their commit succeeded: {dict(list(twice.items())[:10])}"


class ConfluentMember(threading.Thread):
    """A librdkafka consumer in a group: commits each record after processing, leaves on stop()."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str, ledger: Ledger, **settings):
        super().__init__(daemon=True, name=name)
        self.ledger = ledger
        self.topic = topic
        self.config = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                       "auto.offset.reset": "earliest", "enable.auto.commit": False,
                       "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, **settings}
        self.stopped = threading.Event()
        self.assignment: set[int] = set()
        self.assign_calls = 0
        self.error: BaseException | None = None

    def _on_assign(self, consumer, partitions) -> None:
        self.assign_calls += 1
        if self.config.get("partition.assignment.strategy") == "cooperative-sticky":
            self.assignment |= {p.partition for p in partitions}
        else:
            self.assignment = {p.partition for p in partitions}

    def _on_revoke(self, consumer, partitions) -> None:
        self.assignment -= {p.partition for p in partitions}

    def run(self) -> None:
        try:
            consumer = Consumer(self.config)
            consumer.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                               on_lost=self._on_revoke)
            while not self.stopped.is_set():
                message = consumer.poll(0.1)
                if message is None or message.error():
                    continue
                try:
                    consumer.commit(message, asynchronous=False)
                    committed = True
                except KafkaException:
                    committed = False
                self.ledger.record(int(message.value()), self.name, committed)
            consumer.close()
        except BaseException as exc:  # surfaced by stop()
            self.error = exc

    def stop(self) -> None:
        self.stopped.set()
        self.join(30)
        assert not self.is_alive(), f"{self.name} did not stop"
        if self.error:
            raise self.error


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_confluent_members_join_and_leave_while_records_flow(group_broker, strategy):
    bootstrap, topic, group = group_broker.bootstrap, f"flow-{strategy}", f"flow-{strategy}"
    create_topic(bootstrap, topic, 4)
    ledger = Ledger()
    producer = SteadyProducer(bootstrap, topic, 4)
    producer.start()
    members = [ConfluentMember(bootstrap, group, topic, f"m{i}", ledger, **{"partition.assignment.strategy": strategy})
               for i in range(3)]
    members[0].start()
    wait_until(lambda: len(members[0].assignment) == 4, 20, "the first member to own all 4 partitions")
    members[1].start()
    members[2].start()
    wait_until(lambda: all(m.assignment for m in members)
               and sum(len(m.assignment) for m in members) == 4, 30, "three members to share the partitions")
    assert {p for m in members for p in m.assignment} == {0, 1, 2, 3}
    members[1].stop()
    wait_until(lambda: sum(len(m.assignment) for m in (members[0], members[2])) == 4, 30,
               "the remaining two members to take over")
    members[2].stop()
    wait_until(lambda: len(members[0].assignment) == 4, 30, "the last member to own everything again")
    produced = producer.stop()
    wait_until(lambda: len(ledger.consumed) >= produced, 30, f"all {produced} records to be consumed")
    members[0].stop()
    ledger.check(produced)


def test_kafka_python_members_share_partitions(group_broker):
    from kafka import KafkaConsumer
    from kafka.errors import CommitFailedError, KafkaError

    bootstrap, topic, group = group_broker.bootstrap, "kp-flow", "kp-flow"
    create_topic(bootstrap, topic, 3)
    ledger = Ledger()
    producer = SteadyProducer(bootstrap, topic, 3)
    producer.start()
    assignments: dict[str, set[int]] = {}
    stops = {name: threading.Event() for name in ("a", "b")}

    def member(name: str) -> None:
        consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id=name,
                                 auto_offset_reset="earliest", enable_auto_commit=False,
                                 session_timeout_ms=6000, heartbeat_interval_ms=500)
        while not stops[name].is_set():
            batches = consumer.poll(timeout_ms=100)
            for records in batches.values():
                for record in records:
                    try:
                        consumer.commit({tp: kafka.OffsetAndMetadata(record.offset + 1, "", -1)
                                         for tp in [kafka.TopicPartition(record.topic, record.partition)]})
                        committed = True
                    except (CommitFailedError, KafkaError):
                        committed = False
                    ledger.record(int(record.value), name, committed)
            assignments[name] = {tp.partition for tp in consumer.assignment()}
        consumer.close()

    threads = {name: threading.Thread(target=member, args=(name,), daemon=True) for name in stops}
    threads["a"].start()
    wait_until(lambda: assignments.get("a") == {0, 1, 2}, 30, "member a to own all partitions")
    threads["b"].start()
    wait_until(lambda: assignments.get("b") and len(assignments["a"]) + len(assignments["b"]) == 3, 30,
               "members a and b to share the partitions")
    stops["b"].set()
    threads["b"].join(30)
    wait_until(lambda: assignments.get("a") == {0, 1, 2}, 30, "member a to take everything back")
    produced = producer.stop()
    wait_until(lambda: len(ledger.consumed) >= produced, 30, f"all {produced} records to be consumed")
    stops["a"].set()
    threads["a"].join(30)
    ledger.check(produced)


KILLABLE_MEMBER = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer
    bootstrap, group, topic = sys.argv[1:4]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "doomed",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": 3000, "heartbeat.interval.ms": 300})
    def on_assign(c, partitions):
        print("ASSIGNED", len(partitions), flush=True)
    consumer.subscribe([topic], on_assign=on_assign)
    while True:
        consumer.poll(0.1)
""")


def test_killed_member_is_expired_and_its_partitions_move(group_broker):
    bootstrap, topic, group = group_broker.bootstrap, "kill-me", "kill-me"
    create_topic(bootstrap, topic, 4)
    ledger = Ledger()
    survivor = ConfluentMember(bootstrap, group, topic, "survivor", ledger)
    survivor.start()
    wait_until(lambda: len(survivor.assignment) == 4, 20, "the survivor to own all partitions")
    doomed = subprocess.Popen([sys.executable, "-c", KILLABLE_MEMBER, bootstrap, group, topic],
                              stdout=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: len(survivor.assignment) == 2, 30, "the second member to get half the partitions")
        doomed.send_signal(signal.SIGKILL)  # no LeaveGroup: only its session timeout tells
        doomed.wait(10)
        killed_at = time.monotonic()
        wait_until(lambda: len(survivor.assignment) == 4, 20, "the dead member's partitions to move")
        # Session timeout 3 s, then one rebalance.
        assert time.monotonic() - killed_at < 15
        produce(bootstrap, topic, range(200), 4)
        wait_until(lambda: len(ledger.consumed) >= 200, 30, "the survivor to consume everything")
    finally:
        doomed.kill()
        doomed.wait(10)
        survivor.stop()
    ledger.check(200)


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_committed_offsets_survive_broker_restart(group_broker, stop_signal):
    bootstrap, topic, group = group_broker.bootstrap, "restart-offsets", "restart-offsets"
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, range(100), 2)
    config = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
              "enable.auto.commit": False}
    consumer = Consumer(config)
    consumer.subscribe([topic])
    first: list[int] = []
    deadline = time.monotonic() + 30
    while len(first) < 60 and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            first.append(int(message.value()))
            consumer.commit(message, asynchronous=False)
    consumer.close()
    assert len(first) == 60
    partitions = [TopicPartition(topic, p) for p in range(2)]
    before = {tp.partition: tp.offset for tp in Consumer(config).committed(partitions, timeout=10)}

    group_broker.restart(stop_signal)

    after = {tp.partition: tp.offset for tp in Consumer(config).committed(partitions, timeout=30)}
    assert after == before and sum(after.values()) == 60
    consumer = Consumer(config)
    consumer.subscribe([topic])
    rest: list[int] = []
    deadline = time.monotonic() + 30
    while len(rest) < 40 and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            rest.append(int(message.value()))
    consumer.close()
    assert sorted(first + rest) == list(range(100)), "consumers must resume exactly at the committed offsets"


def test_static_member_restart_does_not_rebalance(group_broker):
    bootstrap, topic, group = group_broker.bootstrap, "static", "static"
    create_topic(bootstrap, topic, 2)
    ledger = Ledger()
    static = {"group.instance.id": "", "session.timeout.ms": 10000}
    a = ConfluentMember(bootstrap, group, topic, "a", ledger, **{**static, "group.instance.id": "inst-a"})
    b = ConfluentMember(bootstrap, group, topic, "b", ledger, **{**static, "group.instance.id": "inst-b"})
    a.start()
    wait_until(lambda: len(a.assignment) == 2, 20, "a to own both partitions")
    b.start()
    wait_until(lambda: len(a.assignment) == 1 and len(b.assignment) == 1, 30, "a and b to share")
    calls = a.assign_calls
    b_partition = set(b.assignment)
    b.stop()  # a static member does not send LeaveGroup on close
    b2 = ConfluentMember(bootstrap, group, topic, "b2", ledger, **{**static, "group.instance.id": "inst-b"})
    b2.start()
    wait_until(lambda: b2.assignment, 20, "the restarted static member to get its partition back")
    assert b2.assignment == b_partition
    time.sleep(1)
    assert a.assign_calls == calls, "the other member saw a rebalance"
    a.stop()
    b2.stop()


def test_admin_clients_see_groups_and_offsets(group_broker):
    from kafka import KafkaAdminClient

    bootstrap, topic, group = group_broker.bootstrap, "admin-groups", "admin-groups"
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, range(10), 2)
    ledger = Ledger()
    member = ConfluentMember(bootstrap, group, topic, "solo", ledger)
    member.start()
    wait_until(lambda: len(ledger.consumed) == 10, 30, "the member to consume everything")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        described = admin.describe_groups([group])[group]
        assert described["group_state"] == "Stable" and described["protocol_type"] == "consumer"
        assert len(described["members"]) == 1
        offsets = admin.list_group_offsets(group)[group]
        assert {tp.partition: meta.offset for tp, meta in offsets.items()} == {0: 5, 1: 5}
        deleted = admin.delete_groups([group])
        assert deleted[group] != "OK"  # NON_EMPTY_GROUP while the member is in it
        member.stop()
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed[group]["group_state"] == "Empty"
        assert admin.delete_groups([group])[group] == "OK"
        assert group not in {g["group_id"] for g in admin.list_groups()}
        assert admin.list_group_offsets(group)[group] == {}
    finally:
        admin.close()
        if member.is_alive():
            member.stop()


# -- the other clients: Java kafka-clients, kafkajs, kcat, aiokafka ---------------------------------

GROUP_CLIENTS = Path(__file__).resolve().parent / "group_clients"


def run_program(name: str, command: list[str], timeout: float = 180, **kwargs) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          **kwargs)
    output = done.stdout + (f"\n--- stderr ---\n{done.stderr}" if done.stderr.strip() else "")
    assert done.returncode == 0 and "ALL CHECKS PASSED" in done.stdout, f"{name} failed:\n{output}"
    return output


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
@pytest.mark.parametrize("version", ["3.9.0", "4.3.0"])
def test_java_consumer_group(group_broker, java_kafka_clients, version, assignor):
    run_program(f"Java kafka-clients {version} GroupCheck",
                [*java_kafka_clients(version).program(GROUP_CLIENTS / "GroupCheck.java"),
                 group_broker.bootstrap, assignor, "60"])


def test_kafkajs_consumer_group(group_broker, kafkajs):
    run_program("kafkajs group_check.js", [kafkajs.node, str(GROUP_CLIENTS / "group_check.js"),
                                           group_broker.bootstrap, "60"], env=kafkajs.env())


def test_kcat_balanced_consumer_resumes_at_committed_offsets(group_broker, kcat):
    bootstrap, topic, group = group_broker.bootstrap, "kcat-group", "kcat-group"
    create_topic(bootstrap, topic, 3)
    produce(bootstrap, topic, range(90), 3)
    consume = [kcat, "-b", bootstrap, "-G", group, "-X", "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\\n", topic]

    def values() -> list[int]:
        done = subprocess.run(consume, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return sorted(int(v) for v in done.stdout.split())

    assert values() == list(range(90))
    assert values() == []  # the group committed everything
    produce(bootstrap, topic, range(90, 100), 3)
    group_broker.restart()
    assert values() == list(range(90, 100))


def test_aiokafka_members_share_partitions(group_broker):
    aiokafka = pytest.importorskip("aiokafka")
    import asyncio

    bootstrap, topic, group = group_broker.bootstrap, "aio-group", "aio-group"
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, range(100), 2)

    async def scenario():
        consumed: dict[int, list[str]] = {}

        async def member(name, stop):
            consumer = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id=name,
                                                 auto_offset_reset="earliest", enable_auto_commit=False)
            await consumer.start()
            try:
                while not stop.is_set():
                    batches = await consumer.getmany(timeout_ms=100)
                    for records in batches.values():
                        for record in records:
                            consumed.setdefault(int(record.value), []).append(name)
                    if batches:
                        await consumer.commit()
                    yield_assignment[name] = {tp.partition for tp in consumer.assignment()}
            finally:
                await consumer.stop()

        yield_assignment: dict[str, set[int]] = {}
        stops = {"a": asyncio.Event(), "b": asyncio.Event()}
        a = asyncio.create_task(member("a", stops["a"]))
        b = asyncio.create_task(member("b", stops["b"]))
        deadline = time.monotonic() + 30
        while not (yield_assignment.get("a") and yield_assignment.get("b")
                   and len(yield_assignment["a"]) + len(yield_assignment["b"]) == 2):
            assert time.monotonic() < deadline, f"members never shared the partitions: {yield_assignment}"
            await asyncio.sleep(0.05)
        while len(consumed) < 100:
            assert time.monotonic() < deadline, f"only {len(consumed)} records consumed"
            await asyncio.sleep(0.05)
        for stop in stops.values():
            stop.set()
        await asyncio.gather(a, b)
        assert sorted(consumed) == list(range(100))
        assert all(len(who) == 1 for who in consumed.values())

    asyncio.run(scenario())
