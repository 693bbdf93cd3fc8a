"""Cluster mode with several worker processes per broker (num.worker.processes=2, broker/workers/):
three brokers and ZooKeeper on loopback, real clients.

Each worker of a broker has its own ZooKeeper session and leads and follows the partitions it
owns; worker 0 registers the broker and stands for controller. What a user of the cluster relies
on holds across the workers:
- records produced with acks=all reach every replica, whichever worker of each broker owns the
  partition, and the ISRs are full;
- a controlled shutdown (SIGTERM) moves the leadership of every worker's partitions away before
  the broker stops: nothing acknowledged is lost;
- kill -9 of one worker of a leader under idempotent acks=all load loses nothing acknowledged and
  duplicates nothing (the supervisor restarts the broker's workers; the cluster fails over).
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from broker.workers.ownership import owner_of
from testing.cluster import running_cluster
from test_workers import _children  # the broker's worker processes, worker 0 first

pytestmark = pytest.mark.clients

WORKERS = 2
PARTITIONS = 6


@pytest.fixture(scope="module")
def cluster(zookeeper_installed):
    with running_cluster(3, config={"num.worker.processes": WORKERS, "min.insync.replicas": 2}) as started:
        yield started


@pytest.fixture
def healthy(cluster):
    yield cluster
    for broker in cluster.brokers.values():
        if not broker.is_running():
            broker.start()
    cluster.wait_for_brokers(set(cluster.brokers), timeout=30)


def _produce(confluent_kafka, cluster, topic: str, values: list[bytes], kill=None) -> list[bytes]:
    """Idempotent acks=all, every value to partition i % PARTITIONS; the values acknowledged.
    `kill` runs once, after the first third was acknowledged. Records never acknowledged fail the
    test with what every broker's tasks were waiting for."""
    bootstrap = cluster.bootstrap
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                         "linger.ms": 2, "message.timeout.ms": 120000, "retry.backoff.ms": 50})
    acked: list[bytes] = []
    failed: list = []

    def delivered(error, message):
        if error is None:
            acked.append(message.value())
        else:
            failed.append(error)

    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % PARTITIONS, on_delivery=delivered)
        producer.poll(0)
        if kill is not None and i == len(values) // 3:
            assert producer.flush(60) == 0, cluster.task_report()
            kill()
    assert producer.flush(120) == 0, cluster.task_report()
    assert failed == []
    return acked


def _consume(confluent_kafka, bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-check",
                                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen: list[bytes] = []
    deadline = time.monotonic() + 90
    while len(seen) < expected and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.append(message.value())
    time.sleep(1)
    while (message := consumer.poll(0.5)) is not None:
        if message.error() is None:
            seen.append(message.value())
    consumer.close()
    return seen


def test_every_workers_partitions_replicate(healthy):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    topic = "cw-replicate"
    assert {owner_of(topic, p, WORKERS) for p in range(PARTITIONS)} == set(range(WORKERS))
    healthy.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    for broker in healthy.brokers.values():
        assert len(_children(broker.process.pid)) == WORKERS
    values = [b"%06d" % i for i in range(3000)]
    assert len(_produce(confluent_kafka, healthy, topic, values)) == len(values)
    for partition in range(PARTITIONS):
        healthy.wait_for_isr(topic, partition, {1, 2, 3})
    # Every replica holds the leader's bytes: the follower workers copied the batches from the
    # workers owning them at the leaders.
    for partition in range(PARTITIONS):
        sizes = {(broker.log_dir / f"{topic}-{partition}" / "00000000000000000000.log").stat().st_size
                 for broker in healthy.brokers.values()}
        assert len(sizes) == 1 and sizes.pop() > 0, (partition, sizes)
    seen = _consume(confluent_kafka, healthy.bootstrap, topic, len(values))
    assert sorted(seen) == values


def test_controlled_shutdown_moves_every_workers_leadership(healthy):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    topic = "cw-controlled"
    healthy.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    values = [b"%06d" % i for i in range(1200)]
    acked = _produce(confluent_kafka, healthy, topic, values)
    for partition in range(PARTITIONS):
        healthy.wait_for_isr(topic, partition, {1, 2, 3})
    leaders = {p: healthy.leader_of(topic, p) for p in range(PARTITIONS)}
    # The broker leading partitions of both of its workers.
    node = next(n for n in healthy.brokers
                if {owner_of(topic, p, WORKERS) for p, leader in leaders.items() if leader == n} == {0, 1})
    healthy.brokers[node].stop()  # SIGTERM: a controlled shutdown
    # Moved before it exited, for the partitions of both workers.
    survivor = next(n for n in healthy.brokers if n != node)
    for partition in range(PARTITIONS):  # (the survivor's copy of ZooKeeper's states may lag by a watch)
        healthy.wait_for(lambda: healthy.partition(topic, partition, via=survivor).leader_id not in (node, -1),
                         timeout=5, what=f"{topic}-{partition} led by a broker still running")
    assert (healthy.brokers[node].log_dir / ".kafka_cleanshutdown").exists()
    more = [b"%06d" % i for i in range(1200, 1800)]
    acked += _produce(confluent_kafka, healthy, topic, more)
    seen = _consume(confluent_kafka, healthy.bootstrap, topic, len(acked))
    assert sorted(seen) == sorted(acked)


def test_killed_worker_of_a_leader_loses_nothing_acknowledged(healthy):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    topic = "cw-kill"
    healthy.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    leaders = {p: healthy.leader_of(topic, p) for p in range(PARTITIONS)}
    # A broker leading a partition its worker 1 owns: that worker is killed, not the broker.
    node = next(leader for p, leader in leaders.items() if owner_of(topic, p, WORKERS) == 1)
    broker = healthy.brokers[node]
    workers = _children(broker.process.pid)
    assert len(workers) == WORKERS

    def kill():
        os.kill(workers[1], signal.SIGKILL)

    values = [b"%06d" % i for i in range(15000)]
    acked = _produce(confluent_kafka, healthy, topic, values, kill=kill)
    assert len(acked) == len(values)
    seen = _consume(confluent_kafka, healthy.bootstrap, topic, len(acked))
    assert len(seen) == len(set(seen)), "duplicates"
    assert set(acked) <= set(seen), "acknowledged records lost"
    assert "was killed by signal 9" in broker.log_path.read_text()
    # The supervisor started the broker's workers again; it rejoins the cluster.
    healthy.wait_for(lambda: len(_children(broker.process.pid)) == WORKERS, what="workers restarted")
    healthy.wait_for_brokers(set(healthy.brokers), timeout=30)
