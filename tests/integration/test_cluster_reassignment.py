"""Partition reassignment (AlterPartitionReassignments 45, ListPartitionReassignments 46; KIP-455)
in a ZooKeeper cluster as Apache Kafka does it: a partition moves to other brokers while a producer
writes with acks=all, the leaving broker deletes its copy, a move can be watched and cancelled, and
survives the controller's death. Errors per partition as Kafka 4's ReplicationControlManager
answers them; on the embedded single node the only valid target is the node itself.

Moves are held in progress deterministically by pausing (SIGSTOP) a target broker, so that it
cannot catch up, for less than its ZooKeeper session; SIGCONT lets the move complete.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from testing.cluster import running_cluster
from kafka_wire.acls import AclOperation as Op, ResourceType as Res
from client import WireClient
from kafka_wire.errors import ErrorCode

from tests.integration.test_security_acls import acl_broker, grant, login  # noqa: F401 (acl_broker: a fixture)
from wire_cases import create_topic, unique

pytestmark = pytest.mark.timeout(300)

JAVA_PROGRAM = Path(__file__).parent.parent / "clients" / "java" / "ReassignPartitions.java"


# -- requests ------------------------------------------------------------------------------------


def alter(client: WireClient, moves: dict[tuple[str, int], list[int] | None], version: int = 1,
          allow_replication_factor_change: bool = True):
    topics: dict[str, list[dict]] = {}
    for (topic, partition), replicas in moves.items():
        topics.setdefault(topic, []).append({"partition_index": partition, "replicas": replicas})
    return client.call("AlterPartitionReassignments", version, {
        "timeout_ms": 10000, "allow_replication_factor_change": allow_replication_factor_change,
        "topics": [{"name": t, "partitions": p} for t, p in topics.items()]})


def outcomes(response) -> dict[tuple[str, int], tuple[int, str | None]]:
    return {(t.name, p.partition_index): (p.error_code, p.error_message) for t in response.responses
            for p in t.partitions}


def listing(client: WireClient, topics: dict[str, list[int]] | None = None) -> dict[tuple[str, int], tuple]:
    response = client.call("ListPartitionReassignments", 0, {"timeout_ms": 10000, "topics": None if topics is None
                           else [{"name": t, "partition_indexes": p} for t, p in topics.items()]})
    assert (response.error_code, response.error_message) == (0, None)
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in response.topics for p in t.partitions}


# -- the single node -----------------------------------------------------------------------------


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap) as c:
        yield c


def test_on_a_single_node_only_the_node_itself_is_a_valid_target(client):
    topic = unique("reassign-single")
    create_topic(client, topic, partitions=2)
    node_id = client.call("Metadata", 12, {"topics": [], "allow_auto_topic_creation": False}).brokers[0].node_id
    response = alter(client, {(topic, 0): [node_id], (topic, 1): [node_id + 1], (topic, 5): [node_id],
                              ("no-such-topic-reassign", 0): [node_id]})
    assert (response.error_code, response.error_message, response.allow_replication_factor_change) == (0, None, True)
    assert outcomes(response) == {
        (topic, 0): (0, None),
        (topic, 1): (ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes broker "
                                                           f"{node_id + 1}, but no such broker is registered."),
        (topic, 5): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:5."),
        ("no-such-topic-reassign", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                        "Unable to find a topic named no-such-topic-reassign.")}
    refused = outcomes(alter(client, {(topic, 0): None, (topic, 1): []}, version=0))
    assert refused == {  # Kafka 4.3 (KRaft) cancels nothing without a message (conformance suite)
        (topic, 0): (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None),
        (topic, 1): (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                     "The manual partition assignment includes an empty replica list.")}
    rf_change = alter(client, {(topic, 0): [node_id, node_id]}, allow_replication_factor_change=False)
    assert rf_change.allow_replication_factor_change is False
    assert outcomes(rf_change)[(topic, 0)][0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT  # duplicates come first
    assert listing(client) == {} and listing(client, {topic: [0, 1]}) == {}


def test_alter_needs_alter_on_cluster(acl_broker):
    with login(acl_broker, "admin") as admin, login(acl_broker, "erin") as erin:
        topic = unique("reassign-acl")
        create_topic(admin, topic)
        denied = alter(erin, {(topic, 0): None})
        assert denied.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert [code for code, _ in outcomes(denied).values()] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
        grant(admin, Res.CLUSTER, "kafka-cluster", Op.ALTER, principal="User:erin")
        allowed = alter(erin, {(topic, 0): None})
        assert allowed.error_code == 0
        assert outcomes(allowed)[(topic, 0)][0] == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS


# -- the cluster ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(zookeeper_installed):
    with running_cluster(3, config={"auto.leader.rebalance.enable": "false"}) as started:
        yield started


def controller_of(cluster) -> int:
    return cluster.metadata().controller_id


def replicas_of(cluster, topic: str, partition: int = 0, via: int | None = None) -> list[int]:
    p = cluster.partition(topic, partition, via)
    return [] if p is None else list(p.replica_nodes)


def partition_dir(cluster, node_id: int, topic: str, partition: int = 0) -> Path:
    return cluster.brokers[node_id].log_dir / f"{topic}-{partition}"


def on_controller(cluster):
    return WireClient(cluster.brokers[controller_of(cluster)].bootstrap, timeout=10)


@contextlib.contextmanager
def paused(cluster, node_id: int):
    """The broker does nothing (SIGSTOP) for the block; keep it shorter than a ZooKeeper session and
    ask other brokers meanwhile."""
    broker = cluster.brokers[node_id]
    broker.send_signal(signal.SIGSTOP)  # (every process of it)
    try:
        yield
    finally:
        broker.send_signal(signal.SIGCONT)


def single_replica_partition(cluster, topic: str, avoid: set[int]) -> tuple[int, int]:
    """A topic of replication factor 1 with one partition per broker: (partition, broker) for a
    partition whose replica is not in `avoid`."""
    cluster.wait_for_brokers(set(cluster.brokers))  # a broker paused too long re-registers
    cluster.create_topic(topic, partitions=len(cluster.brokers), replication_factor=1)
    for partition in range(len(cluster.brokers)):
        [replica] = replicas_of(cluster, topic, partition)
        if replica not in avoid:
            return partition, replica
    raise AssertionError(f"every partition of {topic} is on {avoid}")


class AckedProducer:
    """A confluent-kafka (librdkafka) producer with acks=all writing numbered records to one
    partition in a thread; `acked` holds what the cluster acknowledged."""

    def __init__(self, cluster, topic: str, partition: int) -> None:
        self.producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5,
                                  "message.timeout.ms": 60000, "retry.backoff.ms": 100,
                                  "topic.metadata.refresh.interval.ms": 1000})
        self.topic, self.partition = topic, partition
        self.acked: list[bytes] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, error, message) -> None:
        if error is None:
            self.acked.append(message.value())
        else:
            self.errors.append(str(error))

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            self.producer.produce(self.topic, f"record-{n}".encode(), partition=self.partition,
                                  on_delivery=self._delivered)
            n += 1
            self.producer.poll(0.01)
        self.producer.flush(60)

    def __enter__(self) -> AckedProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(90)

    def wait_for_acks(self, count: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.acked) < count:
            assert time.monotonic() < deadline, f"only {len(self.acked)} records acknowledged ({self.errors[-3:]})"
            time.sleep(0.05)


def read_all(cluster, topic: str, partition: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": unique("reassign-reader"),
                         "enable.auto.commit": False})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        consumer.assign([TopicPartition(topic, partition, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while (not values or len(values) < high) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
                if message.offset() >= high - 1:
                    break
        return values
    finally:
        consumer.close()


def test_a_partition_moves_to_other_brokers_while_a_producer_writes(cluster):
    topic = "reassign-move"
    controller = controller_of(cluster)
    partition, source = single_replica_partition(cluster, topic, avoid=set())
    targets = sorted(b for b in cluster.brokers if b != source)
    with AckedProducer(cluster, topic, partition) as producer:
        producer.wait_for_acks(200)
        with on_controller(cluster) as client:
            response = alter(client, {(topic, partition): targets})
        assert (response.error_code, outcomes(response)) == (0, {(topic, partition): (0, None)})
        cluster.wait_for(lambda: replicas_of(cluster, topic, partition) == targets, 30, f"replicas {targets}")
        moved_at = len(producer.acked)
        producer.wait_for_acks(moved_at + 200)  # and the producer goes on writing to the new leader
    assert producer.errors == []  # librdkafka retried NOT_LEADER_OR_FOLLOWER on the new leader
    assert cluster.leader_of(topic, partition) in targets
    assert set(cluster.partition(topic, partition).isr_nodes) == set(targets)
    cluster.wait_for(lambda: not partition_dir(cluster, source, topic, partition).exists(), 20,
                     f"broker {source} deleting its copy of {topic}-{partition}")
    for target in targets:
        assert partition_dir(cluster, target, topic, partition).exists()
    stored = read_all(cluster, topic, partition)
    missing = set(producer.acked) - set(stored)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
    with WireClient(cluster.brokers[controller].bootstrap) as client:
        assert listing(client) == {}


def test_a_move_in_progress_is_listed_until_the_target_catches_up(cluster):
    topic = "reassign-listed"
    controller = controller_of(cluster)
    partition, source = single_replica_partition(cluster, topic, avoid={controller})
    [slow] = [b for b in cluster.brokers if b not in (source, controller)]
    targets = [slow, controller]
    with on_controller(cluster) as client:
        with paused(cluster, slow):
            assert outcomes(alter(client, {(topic, partition): targets}))[(topic, partition)] == (0, None)
            expected = {(topic, partition): (targets + [source], targets, [source])}
            assert listing(client) == expected
            assert listing(client, {topic: [partition, 99], "no-such-topic": [0]}) == expected
            assert listing(client, {topic: [p for p in range(3) if p != partition]}) == {}
            # Asked of the controller: a paused broker would not answer.
            assert replicas_of(cluster, topic, partition, via=controller) == targets + [source]
            assert cluster.partition(topic, partition, via=controller).leader_id == source
            # While moving, AllowReplicationFactorChange=false compares with the target's size.
            refused = alter(client, {(topic, partition): [slow]}, allow_replication_factor_change=False)
            assert outcomes(refused)[(topic, partition)] == (ErrorCode.INVALID_REPLICATION_FACTOR,
                                                            "The replication factor is changed from 2 to 1")
        cluster.wait_for(lambda: replicas_of(cluster, topic, partition) == targets, 30, f"replicas {targets}")
        assert listing(client) == {}
    assert cluster.leader_of(topic, partition) == slow  # the first target in the ISR leads
    cluster.wait_for(lambda: not partition_dir(cluster, source, topic, partition).exists(), 20, "the old copy gone")


def test_cancel_restores_the_original_replicas(cluster):
    topic = "reassign-cancel"
    controller = controller_of(cluster)
    partition, source = single_replica_partition(cluster, topic, avoid={controller})
    [slow] = [b for b in cluster.brokers if b not in (source, controller)]
    with on_controller(cluster) as client:
        with paused(cluster, slow):
            assert outcomes(alter(client, {(topic, partition): [slow, controller]}))[(topic, partition)] == (0, None)
            assert listing(client) == {(topic, partition): ([slow, controller, source], [slow, controller], [source])}
            # The running new replica made its copy and follows the leader.
            cluster.wait_for(lambda: partition_dir(cluster, controller, topic, partition).exists(), 5,
                             f"broker {controller} creating its copy")
            cancelled = alter(client, {(topic, partition): None})
            assert outcomes(cancelled) == {(topic, partition): (0, None)}
            assert listing(client) == {}
            assert replicas_of(cluster, topic, partition, via=controller) == [source]
            again = alter(client, {(topic, partition): None})
            assert outcomes(again)[(topic, partition)][0] == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
            cluster.wait_for(lambda: not partition_dir(cluster, controller, topic, partition).exists(), 5,
                             f"broker {controller} deleting its copy")
    assert cluster.leader_of(topic, partition) == source
    assert partition_dir(cluster, source, topic, partition).exists()
    time.sleep(1)  # the paused broker catches up with the metadata: it hosts nothing
    assert not partition_dir(cluster, slow, topic, partition).exists()


def test_the_replication_factor_grows_and_shrinks(cluster):
    topic = "reassign-factor"
    partition, source = single_replica_partition(cluster, topic, avoid=set())
    other = next(b for b in cluster.brokers if b != source)
    with on_controller(cluster) as client:
        assert outcomes(alter(client, {(topic, partition): [source, other]}))[(topic, partition)] == (0, None)
        cluster.wait_for(lambda: replicas_of(cluster, topic, partition) == [source, other], 30, "two replicas")
        cluster.wait_for_isr(topic, partition, {source, other})
        assert cluster.leader_of(topic, partition) == source  # a leader that stays keeps leading
        # Only removing (the leader, here): done at once, the remaining in-sync replica leads.
        assert outcomes(alter(client, {(topic, partition): [other]}))[(topic, partition)] == (0, None)
        assert listing(client) == {}
    cluster.wait_for(lambda: replicas_of(cluster, topic, partition) == [other]
                     and cluster.leader_of(topic, partition) == other, 10, f"{other} the only replica and leader")
    cluster.wait_for(lambda: not partition_dir(cluster, source, topic, partition).exists(), 20, "the old copy gone")


def test_bad_requests_get_kafkas_errors(cluster):
    topic = "reassign-errors"
    cluster.create_topic(topic, partitions=1, replication_factor=2)
    controller = controller_of(cluster)
    other = next(b for b in cluster.brokers if b != controller)
    with WireClient(cluster.brokers[other].bootstrap) as client:
        refused = alter(client, {(topic, 0): [1, 2]})
        assert (refused.error_code, refused.error_message, refused.responses) == (
            ErrorCode.NOT_CONTROLLER, "This is not the correct controller for this cluster.", [])
    current = replicas_of(cluster, topic)
    with on_controller(cluster) as client:
        answered = outcomes(alter(client, {(topic, 0): [], (topic, 1): [1], ("reassign-nope", 0): [1]}))
        assert answered == {
            (topic, 0): (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "The manual partition assignment includes an empty replica list."),
            (topic, 1): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:1."),
            ("reassign-nope", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named reassign-nope.")}
        assert outcomes(alter(client, {(topic, 0): [1, 99]}))[(topic, 0)] == (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 99, but no such broker is registered.")
        assert outcomes(alter(client, {(topic, 0): [2, 1, 2]}))[(topic, 0)] == (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes the broker 2 more than once.")
        assert outcomes(alter(client, {(topic, 0): None}))[(topic, 0)] == (
            ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress.")
        rf = alter(client, {(topic, 0): [1, 2, 3]}, allow_replication_factor_change=False)
        assert rf.allow_replication_factor_change is False
        assert outcomes(rf)[(topic, 0)] == (ErrorCode.INVALID_REPLICATION_FACTOR,
                                            "The replication factor is changed from 2 to 3")
        # The same target as now: nothing to do, nothing in progress.
        assert outcomes(alter(client, {(topic, 0): current}))[(topic, 0)] == (0, None)
        assert listing(client) == {}
    assert replicas_of(cluster, topic) == current


def test_java_admin_reassigns_and_lists(cluster, java_kafka_clients):
    """Admin.alterPartitionReassignments / listPartitionReassignments of kafka-clients 4.3.0, which
    sends both to the controller Metadata names."""
    topic = "reassign-java"
    controller = controller_of(cluster)
    partition, source = single_replica_partition(cluster, topic, avoid={controller})
    [slow] = [b for b in cluster.brokers if b not in (source, controller)]
    command = java_kafka_clients("4.3.0").program(JAVA_PROGRAM)

    def run(*args: str) -> dict:
        # Bootstrapped from the controller alone, the Admin has no reason to call the paused broker.
        done = subprocess.run([*command, cluster.brokers[controller].bootstrap, topic, str(partition), *args],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    with paused(cluster, slow):
        moving = run(f"{slow},{controller}")
    assert moving["altered"] == "ok"
    assert moving["ongoing"] == {"replicas": [slow, controller, source], "adding": [slow, controller],
                                 "removing": [source]}
    cluster.wait_for(lambda: replicas_of(cluster, topic, partition) == [slow, controller], 30, "the move completing")
    assert run("cancel") == {"altered": "NoReassignmentInProgressException", "ongoing": None}
    unknown = run("99")
    assert unknown["altered"] == "InvalidReplicaAssignmentException"


def test_a_move_survives_the_controller_failing(cluster):
    """Last: it kills the controller (then starts it again)."""
    topic = "reassign-failover"
    controller = controller_of(cluster)
    partition, source = single_replica_partition(cluster, topic, avoid={controller})
    [target] = [b for b in cluster.brokers if b not in (source, controller)]
    with on_controller(cluster) as client:
        with paused(cluster, target):
            assert outcomes(alter(client, {(topic, partition): [target]}))[(topic, partition)] == (0, None)
            cluster.brokers[controller].kill()
    cluster.wait_for(lambda: controller_of(cluster) not in (-1, controller), 30, "a new controller")
    cluster.wait_for(lambda: replicas_of(cluster, topic, partition) == [target], 30, "the move completing")
    assert cluster.leader_of(topic, partition) == target
    cluster.wait_for(lambda: not partition_dir(cluster, source, topic, partition).exists(), 20, "the old copy gone")
    cluster.brokers[controller].start()
    cluster.wait_for_brokers(set(cluster.brokers))
