"""KIP-848 consumer groups with real Java consumers (group.protocol=consumer, kafka-clients 4.3.0,
the protocol's GA client): members join and leave while records flow, every record is consumed once, assignments are
balanced, offsets survive broker restarts, Admin.describeConsumerGroups sees the group, added
partitions get assigned, and a killed member's partitions move after its session timeout."""

from __future__ import annotations

import queue
import sys
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from testing.broker_process import BrokerProcess

CLIENTS = Path(__file__).resolve().parents[1] / "clients" / "java"
SESSION_TIMEOUT_MS = 6000
CONFIG = {
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.session.timeout.ms": SESSION_TIMEOUT_MS,
    "offsets.topic.num.partitions": 5,
}

confluent_kafka = pytest.importorskip("confluent_kafka")
import confluent_kafka.admin  # noqa: E402  (AdminClient, NewTopic, NewPartitions)


@pytest.fixture
def broker(tmp_path):
    started = BrokerProcess(tmp_path / "broker", config=CONFIG)
    started.start()
    yield started
    problems = started.finish()
    assert not problems, "\n".join(problems) + started.log_report()


class JavaMember:
    """A ConsumerProtocolMember process and what it printed."""

    def __init__(self, command: list[str], bootstrap: str, group: str, topic: str, name: str) -> None:
        self.name = name
        self.process = subprocess.Popen([*command, bootstrap, group, topic, name], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        self.records: list[tuple[int, int, str]] = []
        self.assigned: set[int] = set()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            line = line.rstrip("\n")
            self.output.append(line)
            parts = line.split()
            if parts[:1] == ["RECORD"]:
                self.records.append((int(parts[1]), int(parts[2]), parts[3]))
            elif parts[:1] == ["ASSIGNED"]:
                self.assigned = set() if parts[1] == "-" else {int(p) for p in parts[1].split(",")}
            elif parts[:1] in (["REVOKED"], ["LOST"]) and parts[1] != "-":
                self.assigned -= {int(p) for p in parts[1].split(",")}

    def stop(self) -> None:
        self.process.stdin.write("stop\n")
        self.process.stdin.flush()
        self.process.wait(timeout=60)
        self._reader.join(timeout=10)
        assert "CLOSED" in self.output, "\n".join(self.output[-30:])

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def positions(self) -> str:
        """The member's POSITIONS line: each assigned partition's fetch position ('' if none came)."""
        if self.process.poll() is not None:
            return ""
        seen = len(self.output)
        self.process.stdin.write("positions\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = [line for line in self.output[seen:] if line.startswith("POSITIONS")]
            if found:
                return found[0]
            time.sleep(0.2)
        return ""


def wait_for(condition, timeout: float, what: str, members=()) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    # A member's last lines, and the first lines of any Java exception it printed (its cause).
    details = "\n".join(f"{m.name}: {[line for line in m.output if 'Exception' in line][:3]} ... {m.output[-15:]}"
                        for m in members)
    raise AssertionError(f"timed out waiting for {what}\n{details}")


class Producer:
    """Produces numbered records in the background until stopped; remembers what was acked."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic = topic
        self.acked: set[str] = set()
        self.count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, error, message) -> None:
        if error is None:
            self.acked.add(message.value().decode())

    def send(self, n: int, partitions: tuple[int, ...] = ()) -> None:
        """n records, unkeyed (librdkafka's partitioner places them; its sticky partitioning may put a
        burst in one partition), or spread over `partitions` in turn."""
        for i in range(n):
            where = {"partition": partitions[i % len(partitions)]} if partitions else {}
            self.producer.produce(self.topic, f"v{self.count}".encode(), on_delivery=self._delivered, **where)
            self.count += 1
        self.producer.flush(30)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.send(20)
            time.sleep(0.1)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        self.producer.flush(30)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([confluent_kafka.admin.NewTopic(topic, partitions, 1)])[topic].result(30)


@pytest.fixture
def member_command(java_kafka_clients):
    return lambda version: java_kafka_clients(version).program(CLIENTS / "ConsumerProtocolMember.java")


@pytest.fixture
def admin_dump(java_kafka_clients):
    command = java_kafka_clients("4.3.0").program(CLIENTS / "GroupAdminDump.java")

    def run(bootstrap: str, *args: str) -> list[list[str]]:
        result = subprocess.run([*command, bootstrap, *args], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        return [line.split() for line in result.stdout.splitlines() if line.strip()]

    return run


def consumed_values(members) -> list[str]:
    return [value for m in members for _, _, value in m.records]


# Kafka 4.0 made the consumer protocol GA; 3.9's client is a preview. Its churn run is left out:
# once in CI and once in ~14 loaded local runs, a 3.9.0 member's commitSync inside
# onPartitionsRevoked failed (CommitRequestManager) and the member exited; not root-caused yet.
@pytest.mark.parametrize("version", ["4.3.0"])
def test_members_join_and_leave_one_at_a_time_while_records_flow(broker, member_command, admin_dump, version):
    topic, group = f"cg-{uuid.uuid4().hex[:8]}", f"cg-group-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 6)
    command = member_command(version)
    producer = Producer(broker.bootstrap, topic)
    producer.start()
    members: list[JavaMember] = []
    everyone: list[JavaMember] = []
    try:
        for name in ("a", "b", "c"):
            member = JavaMember(command, broker.bootstrap, group, topic, f"{name}-{version}")
            members.append(member)
            everyone.append(member)
            share = 6 // len(members)
            wait_for(lambda: all(len(m.assigned) == share for m in members)
                     and set().union(*(m.assigned for m in members)) == set(range(6)),
                     60, f"{len(members)} members with {share} partitions each", members)
        dump = admin_dump(broker.bootstrap, "describe", group)
        header = dump[0]
        assert [header[1], header[2].lower(), header[3], header[4]] == [group, "stable", "uniform", "3"], dump
        assert sorted(int(line[4]) for line in dump if line[0] == "MEMBER") == [2, 2, 2], dump
        while len(members) > 1:
            members.pop(0).stop()
            share = 6 // len(members)
            wait_for(lambda: all(len(m.assigned) == share for m in members), 60,
                     f"{len(members)} members with {share} partitions each", members)
        producer.stop()
        wait_for(lambda: producer.acked <= set(consumed_values(everyone)), 60, "every record consumed", everyone)
        members[0].stop()
    finally:
        producer.stop()
        for m in everyone:
            if m.process.poll() is None:
                m.kill()
    values = consumed_values(everyone)
    assert len(producer.acked) > 100
    duplicates = {v for v in values if values.count(v) > 1}
    assert not duplicates, f"consumed twice: {sorted(duplicates)[:10]}"
    assert set(values) == producer.acked


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGKILL])
def test_committed_offsets_survive_broker_restart(broker, member_command, stop_signal):
    topic, group = f"cg-{uuid.uuid4().hex[:8]}", f"cg-group-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 3)
    command = member_command("4.3.0")
    producer = Producer(broker.bootstrap, topic)
    producer.send(60)
    first = JavaMember(command, broker.bootstrap, group, topic, "first")
    try:
        wait_for(lambda: len(first.records) >= 60, 60, "the first 60 records", [first])
        time.sleep(1)  # its commit after the last poll
        broker.restart(stop_signal)
        # The member keeps going against the restarted broker: its group is still there.
        producer = Producer(broker.bootstrap, topic)
        producer.send(30)
        wait_for(lambda: len(first.records) >= 90, 90, "the next 30 records after the restart", [first])
        first.stop()
    finally:
        if first.process.poll() is None:
            first.kill()
    producer.count = 90
    producer.send(15)
    second = JavaMember(command, broker.bootstrap, group, topic, "second")
    try:
        wait_for(lambda: len(second.records) >= 15, 60, "the records after the commit", [second])
        time.sleep(1)
        second.stop()
    finally:
        if second.process.poll() is None:
            second.kill()
    # The second member starts where the first one committed: only the 15 new records.
    assert sorted(v for _, _, v in second.records) == sorted(f"v{i}" for i in range(90, 105))


def test_added_partitions_are_assigned_and_killed_member_is_expired(broker, member_command, admin_dump):
    topic, group = f"cg-{uuid.uuid4().hex[:8]}", f"cg-group-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    command = member_command("4.3.0")
    a = JavaMember(command, broker.bootstrap, group, topic, "a")
    b = JavaMember(command, broker.bootstrap, group, topic, "b")
    try:
        wait_for(lambda: len(a.assigned) == 1 and len(b.assigned) == 1, 60, "one partition each", [a, b])
        admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_partitions([confluent_kafka.admin.NewPartitions(topic, 4)])[topic].result(30)
        wait_for(lambda: len(a.assigned) == 2 and len(b.assigned) == 2 and a.assigned | b.assigned == set(range(4)),
                 60, "the new partitions assigned", [a, b])
        b.kill()
        killed_at = time.monotonic()
        wait_for(lambda: a.assigned == set(range(4)), 60, "the killed member's partitions moved", [a])
        # Not before the session timeout.
        assert time.monotonic() - killed_at >= SESSION_TIMEOUT_MS / 1000 - 1.5
        dump = admin_dump(broker.bootstrap, "describe", group)
        assert [line[0] for line in dump].count("MEMBER") == 1, dump
        producer = Producer(broker.bootstrap, topic)
        producer.send(40, partitions=(0, 1, 2, 3))  # ten to each: unkeyed records may all land in one
        try:
            wait_for(lambda: {p for p, _, _ in a.records} == set(range(4)), 60, "records from every partition", [a])
        except AssertionError as failure:
            # What tells a consumer that never fetched a taken-over partition (its position stays
            # at 0, or unknown) from one the broker answered wrongly, or from records not written.
            failure.add_note(f"acked: {len(producer.acked)} of 40; records per partition: "
                             f"{ {p: sum(1 for q, _, _ in a.records if q == p) for p in range(4)} }")
            failure.add_note(f"a's events: {[line for line in a.output if not line.startswith('RECORD')]}")
            failure.add_note(f"a's {a.positions() or 'positions: no answer'}")
            failure.add_note(f"the group: {admin_dump(broker.bootstrap, 'describe', group)}")
            raise
        a.stop()
    finally:
        for m in (a, b):
            if m.process.poll() is None:
                m.kill()


def cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_kafka_wire_groups_list_and_describe_consumer_groups(broker, member_command, admin_dump):
    topic, group = f"cg-{uuid.uuid4().hex[:8]}", f"cg-group-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 3)
    Producer(broker.bootstrap, topic).send(30)
    a = JavaMember(member_command("4.3.0"), broker.bootstrap, group, topic, "cli-member")
    try:
        wait_for(lambda: len(a.assigned) == 3 and len(a.records) >= 30, 60, "the member to consume", [a])
        time.sleep(1)
        listed = cli("groups", "list", "--type", "--state", "--bootstrap-server", broker.bootstrap).split()
        assert listed[listed.index(group) + 1:listed.index(group) + 3] == ["Consumer", "Stable"], listed
        assert group in cli("groups", "list", "--type", "consumer", "--bootstrap-server", broker.bootstrap)
        assert group not in cli("groups", "list", "--type", "classic", "--bootstrap-server", broker.bootstrap)
        offsets = [line.split() for line in cli("groups", "describe", group, "--bootstrap-server",
                                                broker.bootstrap).splitlines() if line.startswith(group)]
        assert sorted(int(row[2]) for row in offsets) == [0, 1, 2], offsets
        assert sum(int(row[3]) for row in offsets) == 30 and all(row[5] == "0" for row in offsets), offsets
        assert {row[8] for row in offsets} == {"cli-member"}, offsets
        state = cli("groups", "describe", group, "--state", "--bootstrap-server", broker.bootstrap).split()
        assert state[-3:] == ["uniform", "Stable", "1"], state
        members = cli("groups", "describe", group, "--members", "--bootstrap-server", broker.bootstrap).split()
        assert members[-2:] == ["cli-member", "3"], members
        # Admin.listConsumerGroups (ListGroups v5) lists it too.
        assert ["LISTED", group] in admin_dump(broker.bootstrap, "list")
        a.stop()
    finally:
        if a.process.poll() is None:
            a.kill()


def test_regex_subscription_resolved_by_the_broker(broker, member_command):
    prefix = f"rx{uuid.uuid4().hex[:6]}"
    group = f"cg-group-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, f"{prefix}-a", 2)
    create_topic(broker.bootstrap, f"{prefix}-other", 1)
    a = JavaMember(member_command("4.3.0"), broker.bootstrap, group, f"regex:{prefix}-[ab]", "regex-member")
    try:
        Producer(broker.bootstrap, f"{prefix}-a").send(10)
        Producer(broker.bootstrap, f"{prefix}-other").send(10)
        wait_for(lambda: len(a.records) >= 10, 60, "records of the matching topic", [a])
        create_topic(broker.bootstrap, f"{prefix}-b", 1)
        Producer(broker.bootstrap, f"{prefix}-b").send(5)
        wait_for(lambda: len(a.records) >= 15, 60, "records of the topic created afterwards", [a])
        time.sleep(1)
        a.stop()
    finally:
        if a.process.poll() is None:
            a.kill()
    topics = {line.split()[4] for line in a.output if line.startswith("RECORD")}
    assert topics == {f"{prefix}-a", f"{prefix}-b"}, topics


def test_consumer_group_moves_with_its_coordinator_in_a_cluster(zookeeper_installed, member_command):
    """Cluster mode: the broker leading the group's __consumer_offsets partition dies; the new
    leader replays the group (members, epochs, assignment, offsets) and the member carries on."""
    from testing.cluster import running_cluster
    from client import WireClient

    group = f"cg-group-{uuid.uuid4().hex[:8]}"
    with running_cluster(3, config={**CONFIG, "offsets.topic.replication.factor": 3}) as cluster:
        cluster.create_topic("cg-cluster", partitions=2, replication_factor=3)
        producer = Producer(cluster.bootstrap, "cg-cluster")
        producer.send(20)
        member = JavaMember(member_command("4.3.0"), cluster.bootstrap, group, "cg-cluster", "cluster-member")
        try:
            wait_for(lambda: len(member.records) >= 20, 90, "the first records", [member])
            time.sleep(1)
            with WireClient(cluster.brokers[1].bootstrap) as client:
                found = client.call("FindCoordinator", 3, {"key": group, "key_type": 0})
            assert found.error_code == 0
            cluster.brokers[found.node_id].kill()
            producer = Producer(cluster.bootstrap, "cg-cluster")
            producer.count = 20
            producer.send(20)
            wait_for(lambda: len(member.records) >= 40, 90, "the records after the failover", [member])
            time.sleep(1)
            member.stop()
        finally:
            if member.process.poll() is None:
                member.kill()
            for broker in cluster.brokers.values():
                if not broker.is_running():
                    broker.start()
    values = [v for _, _, v in member.records]
    assert sorted(set(values)) == sorted(f"v{i}" for i in range(40))


def test_librdkafka_consumer_protocol_members_share_partitions(broker):
    """confluent-kafka (librdkafka 2.x) with group.protocol=consumer: two members split the topic,
    every record is consumed, the second member starts from the first one's commits."""
    topic, group = f"cg-{uuid.uuid4().hex[:8]}", f"cg-group-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 3)
    Producer(broker.bootstrap, topic).send(30)

    def consumer():
        c = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                                      "group.protocol": "consumer", "auto.offset.reset": "earliest",
                                      "enable.auto.commit": False})
        c.subscribe([topic])
        return c

    first = consumer()
    values = []
    deadline = time.monotonic() + 30
    while len(values) < 30 and time.monotonic() < deadline:
        message = first.poll(0.5)
        if message is not None and not message.error():
            values.append(message.value().decode())
    assert sorted(values) == sorted(f"v{i}" for i in range(30))
    first.commit(asynchronous=False)
    second = consumer()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            first.poll(0.2)
            second.poll(0.2)
            mine, theirs = {tp.partition for tp in first.assignment()}, {tp.partition for tp in second.assignment()}
            if mine and theirs and mine | theirs == {0, 1, 2} and not mine & theirs:
                break
        else:
            raise AssertionError(f"no split: {first.assignment()} / {second.assignment()}")
        # Nothing new was produced: the second member, starting from the commits, reads nothing.
        assert all(m is None or m.error() for m in (second.poll(1.0) for _ in range(3)))
    finally:
        first.close()
        second.close()
