"""ZkMetadata against a real ZooKeeper: what one broker writes, another sees; conditional updates.

No brokers here: two ZkMetadata objects (two brokers' views) on one standalone ZooKeeper.
"""

from __future__ import annotations

import json
import time

import pytest

from broker.cluster.replica_assignment import InvalidReplicationFactor
from testing.cluster import ZooKeeperProcess
from broker.cluster.zk_metadata import (
    BROKER_IDS_PATH,
    TopicExists,
    ZkMetadata,
    ZkProducerIdManager,
    broker_registration,
    state_path,
)


@pytest.fixture(scope="module")
def zookeeper(zookeeper_installed, tmp_path_factory):
    server = ZooKeeperProcess(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def client_factory(zookeeper):
    from kazoo.client import KazooClient

    clients = []

    def connect(chroot: str):
        root = KazooClient(hosts=zookeeper.connect, timeout=5)
        root.start(timeout=10)
        root.ensure_path(chroot)  # each test its own namespace, as zookeeper.connect=host:port/chroot gives
        root.stop()
        root.close()
        client = KazooClient(hosts=zookeeper.connect + chroot, timeout=5)
        client.start(timeout=10)
        clients.append(client)
        return client

    yield connect
    for client in clients:
        client.stop()
        client.close()


def until(condition, timeout: float = 5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def two_brokers(client_factory, tmp_path, chroot: str) -> tuple[ZkMetadata, ZkMetadata]:
    views = []
    for node_id in (1, 2):
        zk = client_factory(chroot)
        metadata = ZkMetadata(zk, node_id, str(tmp_path / f"broker-{node_id}"))
        metadata.load()
        zk.create(f"{BROKER_IDS_PATH}/{node_id}", broker_registration(
            [("PLAINTEXT", "127.0.0.1", 9000 + node_id)], {"PLAINTEXT": "PLAINTEXT"}, None), ephemeral=True)
        views.append(metadata)
    assert until(lambda: all(v.live_brokers() == [1, 2] for v in views))
    return views[0], views[1]


def test_a_topic_created_by_one_broker_is_seen_by_the_other(client_factory, tmp_path):
    one, two = two_brokers(client_factory, tmp_path, "/created")
    assert one.cluster_id == two.cluster_id and one.cluster_id
    meta = one.create_topic("orders", 4, 2, {"retention.ms": 1000})
    assert until(lambda: two.topic("orders") is not None and two.leader_and_isr("orders", 3) is not None)
    seen = two.topic("orders")
    assert (seen.topic_id, seen.partitions, seen.replication_factor) == (meta.topic_id, 4, 2)
    assert seen.configs == {"retention.ms": 1000}
    for partition in range(4):
        state = two.partition_state("orders", partition)
        assert state.leader == state.replicas[0] and state.isr == state.replicas and state.leader_epoch == 0
    with pytest.raises(TopicExists):
        two.create_topic("orders", 1, 1, {})
    with pytest.raises(InvalidReplicationFactor):
        two.create_topic("too-many-replicas", 1, 3, {})

    two.set_partition_count("orders", 6)
    two.set_topic_configs("orders", {"retention.ms": 5000})
    assert until(lambda: one.topic("orders").partitions == 6 and one.leader_and_isr("orders", 5) is not None)
    assert until(lambda: one.topic("orders").configs == {"retention.ms": 5000})

    one.delete_topic("orders")
    assert until(lambda: two.topic("orders") is None and two.partition_state("orders", 0) is None)
    assert not one.zk.exists("/brokers/topics/orders") and not one.zk.exists("/config/topics/orders")


def test_partition_state_updates_are_conditional(client_factory, tmp_path):
    one, two = two_brokers(client_factory, tmp_path, "/conditional")
    one.create_topic("events", 1, 2, {})
    assert until(lambda: two.leader_and_isr("events", 0) is not None)
    current = one.leader_and_isr("events", 0)
    leader, follower = current.isr
    shrunk = one.update_partition_state("events", 0, current.__class__(
        leader, current.leader_epoch, [leader], current.controller_epoch, current.zk_version))
    assert shrunk is not None and shrunk.zk_version == current.zk_version + 1
    # The other broker decided on the old version: its write is refused, not applied.
    stale = current.__class__(follower, current.leader_epoch + 1, [follower], current.controller_epoch,
                              current.zk_version)
    assert two.update_partition_state("events", 0, stale) is None
    stored = json.loads(one.zk.get(state_path("events", 0))[0])
    assert (stored["leader"], stored["isr"]) == (leader, [leader])
    assert until(lambda: two.leader_and_isr("events", 0).isr == [leader])


def test_producer_id_blocks_never_overlap(client_factory):
    first = ZkProducerIdManager(client_factory("/producer-ids"), 1)
    second = ZkProducerIdManager(client_factory("/producer-ids"), 2)
    a1, b1, a2, b2 = first.next(), second.next(), first.next(), second.next()
    # Each broker hands out its own block of 1000 ids in order; the blocks are disjoint.
    assert (a2, b2) == (a1 + 1, b1 + 1)
    assert abs(a1 - b1) >= ZkProducerIdManager.BLOCK_SIZE
