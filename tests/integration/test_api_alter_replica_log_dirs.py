"""AlterReplicaLogDirs (34) as Apache Kafka answers it (ReplicaManager.alterReplicaLogDirs), and the
move itself: a partition goes to another log dir while an idempotent producer writes to it, keeps
every record, and DescribeLogDirs shows the future replica until the move is done. Through the
wire client and Java's Admin.alterReplicaLogDirs / describeReplicaLogDirs (what
kafka-reassign-partitions.sh calls for log dirs); the answers were compared with Kafka 4.3.0.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire.acls import AclOperation as Op, ResourceType as Res
from testing.broker_process import running_broker
from client import WireClient

from tests.integration.test_security_acls import acl_broker, grant, login  # noqa: F401 (acl_broker: a fixture)
from wire_cases import batch, create_topic, error_name, produce, unique

JAVA_PROGRAM = Path(__file__).parent.parent / "clients" / "java" / "ReplicaLogDirs.java"
# Segments of 64 KiB, so that a move copies several: Kafka 4.x's test-only topic config (segment.bytes
# may not be below 1 MiB).
SMALL_SEGMENTS = {"internal.segment.bytes": 65536}


@pytest.fixture(scope="module")
def two_dir_broker(tmp_path_factory):
    root = tmp_path_factory.mktemp("alter-log-dirs")
    dirs = [root / "data-a", root / "data-b"]
    with running_broker(root, config={"log.dirs": ",".join(str(d) for d in dirs), "group.initial.rebalance.delay.ms": 0}) as broker:
        broker.dirs = [str(d) for d in dirs]
        yield broker


@pytest.fixture
def client(two_dir_broker):
    with WireClient(two_dir_broker.bootstrap) as c:
        yield c


def alter(client, moves: list[tuple[tuple[str, int], str]], version: int = 2) -> list[tuple[str, int, str]]:
    dirs: dict[str, dict[str, list[int]]] = {}
    for (topic, partition), path in moves:
        dirs.setdefault(path, {}).setdefault(topic, []).append(partition)
    response = client.call("AlterReplicaLogDirs", version, {"dirs": [
        {"path": path, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
        for path, topics in dirs.items()]})
    return [(t.topic_name, p.partition_index, error_name(p.error_code)) for t in response.results for p in t.partitions]


def placement(client, topic: str) -> dict[tuple[int, bool], tuple[str, int, int]]:
    """{(partition, is_future): (log dir, size, offset lag)} from DescribeLogDirs."""
    response = client.call("DescribeLogDirs", 4, {"topics": [{"topic": topic, "partitions": list(range(8))}]})
    return {(p.partition_index, p.is_future_key): (r.log_dir, p.partition_size, p.offset_lag)
            for r in response.results for t in r.topics for p in t.partitions}


def other_dir(broker, client, topic: str, partition: int = 0) -> tuple[str, str]:
    current = placement(client, topic)[(partition, False)][0]
    return current, next(d for d in broker.dirs if d != current)


def wait_moved(client, topic: str, partition: int, target: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        where = placement(client, topic)
        if where.get((partition, False), ("",))[0] == target and (partition, True) not in where:
            return
        assert time.monotonic() < deadline, f"{topic}-{partition} not moved to {target}: {where}"
        time.sleep(0.05)


def test_errors_as_kafka_answers_them(two_dir_broker, client):
    topic = unique("logdirs-errors")
    create_topic(client, topic, partitions=2, configs=SMALL_SEGMENTS)
    current, _ = other_dir(two_dir_broker, client, topic)
    assert alter(client, [((topic, 0), current)]) == [(topic, 0, "NONE")]  # already there: nothing to do
    assert alter(client, [((topic, 0), "/no/such/dir")]) == [(topic, 0, "LOG_DIR_NOT_FOUND")]
    assert alter(client, [((topic, 0), "data-a")]) == [(topic, 0, "LOG_DIR_NOT_FOUND")]  # not absolute
    assert alter(client, [((topic, 0), current + "/")]) == [(topic, 0, "LOG_DIR_NOT_FOUND")]
    assert alter(client, [(("no-such-topic", 0), current)]) == [("no-such-topic", 0, "UNKNOWN_TOPIC_OR_PARTITION")]
    assert alter(client, [((topic, 7), current)]) == [(topic, 7, "UNKNOWN_TOPIC_OR_PARTITION")]
    # v1, several dirs and topics: an answer per partition, grouped by topic.
    assert alter(client, [((topic, 0), "/x"), ((topic, 1), placement(client, topic)[(1, False)][0]),
                          (("no-such-topic", 3), current)], version=1) == [
        (topic, 0, "LOG_DIR_NOT_FOUND"), (topic, 1, "NONE"), ("no-such-topic", 3, "UNKNOWN_TOPIC_OR_PARTITION")]
    assert placement(client, topic)[(0, False)][0] == current


def test_a_partition_moves_while_an_idempotent_producer_writes(two_dir_broker, client):
    topic = unique("logdirs-move")
    create_topic(client, topic, partitions=1, configs=SMALL_SEGMENTS)
    producer = Producer({"bootstrap.servers": two_dir_broker.bootstrap, "enable.idempotence": True,
                         "linger.ms": 2, "batch.num.messages": 50})
    acked: list[bytes] = []
    errors: list[str] = []
    stop = threading.Event()

    def delivered(error, message):
        (errors.append(str(error)) if error else acked.append(message.value()))

    def write():
        n = 0
        while not stop.is_set():
            producer.produce(topic, f"record-{n:06d}".encode() * 8, partition=0, on_delivery=delivered)
            n += 1
            if n % 200 == 0:
                producer.poll(0.005)
        producer.flush(30)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        while len(acked) < 5000:  # several segments (64 KiB)  before the move
            time.sleep(0.05)
        source, target = other_dir(two_dir_broker, client, topic)
        assert alter(client, [((topic, 0), target)]) == [(topic, 0, "NONE")]
        wait_moved(client, topic, 0, target)
        moved_at = len(acked)
        while len(acked) < moved_at + 3000:  # and it keeps taking writes in its new dir
            time.sleep(0.05)
    finally:
        stop.set()
        writer.join(60)
    assert errors == []
    assert not (Path(source) / f"{topic}-0").exists() and (Path(target) / f"{topic}-0").is_dir()
    assert [p for p in Path(source).iterdir() if p.name.startswith(f"{topic}-0.")] == []

    def consume_all() -> list[bytes]:
        consumer = Consumer({"bootstrap.servers": two_dir_broker.bootstrap, "group.id": unique("logdirs-reader"),
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(values) < len(acked) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        consumer.close()
        return values

    # Every acknowledged record once, in order, with no gap (idempotence: none written twice).
    assert consume_all() == acked
    two_dir_broker.restart()
    with WireClient(two_dir_broker.bootstrap) as again:
        assert placement(again, topic)[(0, False)][0] == target
    assert consume_all() == acked


def test_describe_log_dirs_shows_the_future_replica_while_it_catches_up(two_dir_broker, client):
    """Held back by a topic whose copy takes several passes is not deterministic; instead the move
    is asked for while many partitions are queued (moves run one at a time): the last ones are
    listed as future replicas in their target dir, with their lag, until their turn comes."""
    topic = unique("logdirs-future")
    create_topic(client, topic, partitions=8, configs=SMALL_SEGMENTS)
    for partition in range(8):
        for _ in range(20):  # 1 MB in 16 segments (a batch must fit in one: 64 KiB)
            assert produce(client, topic, batch([b"z" * 1000] * 50), partition=partition).error_code == 0
    where = placement(client, topic)
    moves = [((topic, p), next(d for d in two_dir_broker.dirs if d != where[(p, False)][0])) for p in range(8)]
    assert sorted(alter(client, moves)) == [(topic, p, "NONE") for p in range(8)]
    seen_future = placement(client, topic)
    futures = {p: v for (p, is_future), v in seen_future.items() if is_future}
    assert futures, seen_future  # the last partitions are still waiting for their turn
    for partition, (log_dir, size, lag) in futures.items():
        assert log_dir == dict(moves)[(topic, partition)] and 0 <= size and 0 <= lag <= 1000
        assert seen_future[(partition, False)][0] != log_dir
    for (_, partition), target in moves:
        wait_moved(client, topic, partition, target)
    after = placement(client, topic)
    assert all(after[(p, False)][0] == dict(moves)[(topic, p)] and after[(p, False)][1] > 1_000_000 for p in range(8)), after


def test_java_admin_moves_a_replica(two_dir_broker, client, java_kafka_clients):
    topic = unique("logdirs-java")
    create_topic(client, topic, partitions=1, configs=SMALL_SEGMENTS)
    produce(client, topic, batch([b"j" * 100]))
    command = java_kafka_clients("4.3.0").program(JAVA_PROGRAM)

    def run(broker_id: int, path: str, name: str = topic) -> dict:
        done = subprocess.run([*command, two_dir_broker.bootstrap, name, "0", str(broker_id), path],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    source, target = other_dir(two_dir_broker, client, topic)
    assert run(1, target) == {"altered": "ok", "current": target, "future": None}
    assert run(1, "/no/such/dir") == {"altered": "LogDirNotFoundException", "current": target, "future": None}
    assert run(1, source, "no-such-topic")["altered"] == "UnknownTopicOrPartitionException"


def test_needs_alter_on_the_cluster(acl_broker):
    with login(acl_broker, "admin") as admin, login(acl_broker, "alice") as alice:
        topic = unique("logdirs-acl")
        assert admin.call("CreateTopics", 7, {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1}],
                                              "timeout_ms": 10000}).topics[0].error_code == 0
        path = str(acl_broker.log_dir)
        assert alter(alice, [((topic, 0), path)]) == [(topic, 0, "CLUSTER_AUTHORIZATION_FAILED")]
        grant(admin, Res.CLUSTER, "kafka-cluster", Op.ALTER)
        assert alter(alice, [((topic, 0), path)]) == [(topic, 0, "NONE")]


def test_replicas_move_between_log_dirs_in_a_cluster(zookeeper_installed, tmp_path):
    """Kafka's ZooKeeper mode served AlterReplicaLogDirs too: each broker moves its own replica.
    The leader's and a follower's replicas move while acks=all writes go on; the ISR stays whole
    and every acknowledged record is there."""
    from testing.cluster import Cluster

    cluster = Cluster(tmp_path, 3, {"auto.leader.rebalance.enable": "false"})
    for broker in cluster.brokers.values():
        broker.config["log.dirs"] = f"{broker.log_dir}-a,{broker.log_dir}-b"
    cluster.start()
    try:
        topic = "moving-replicas"
        cluster.create_topic(topic, partitions=1, replication_factor=3)
        leader = cluster.wait_for_leader(topic, 0)
        follower = next(n for n in cluster.brokers if n != leader)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 2})
        acked: list[bytes] = []
        stop = threading.Event()

        def write():
            n = 0
            while not stop.is_set():
                producer.produce(topic, f"r{n}".encode(), partition=0,
                                 on_delivery=lambda e, m: e is None and acked.append(m.value()))
                n += 1
                producer.poll(0.001)
            producer.flush(30)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        try:
            while len(acked) < 2000:
                time.sleep(0.05)
            for node_id in (follower, leader):
                broker = cluster.brokers[node_id]
                dirs = [f"{broker.log_dir}-a", f"{broker.log_dir}-b"]
                with WireClient(broker.bootstrap) as client:
                    current = placement(client, topic)[(0, False)][0]
                    target = next(d for d in dirs if d != current)
                    assert alter(client, [((topic, 0), target)]) == [(topic, 0, "NONE")]
                    wait_moved(client, topic, 0, target)
            moved_at = len(acked)
            while len(acked) < moved_at + 1000:
                time.sleep(0.05)
        finally:
            stop.set()
            writer.join(60)
        cluster.wait_for_isr(topic, 0, set(cluster.brokers))
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": unique("replica-dirs"),
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(values) < len(acked) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        consumer.close()
        assert set(acked) <= set(values)
    finally:
        cluster.stop()
