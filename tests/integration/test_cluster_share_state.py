"""The share coordinator in a ZooKeeper-mode cluster (KIP-932): a share-partition's state lives at
the leader of its __share_group_state partition, which FindCoordinator (key type 2) names; other
brokers answer NOT_COORDINATOR; what it acknowledged survives its death (the state partition is
replicated and a write is answered once the in-sync replicas have it), and the new coordinator
still fences a writer with an older leader epoch. Three brokers and a ZooKeeper on loopback."""

from __future__ import annotations

import signal
import time
import uuid

import pytest

from client import WireClient
from coordinator.share_state import kafka_uuid_string
from testing.cluster import Cluster, running_cluster

pytestmark = [pytest.mark.clients, pytest.mark.timeout(300)]

NOT_COORDINATOR, FENCED_LEADER_EPOCH = 16, 74


@pytest.fixture(scope="module")
def cluster(zookeeper_installed):
    with running_cluster(3, config={"share.coordinator.state.topic.num.partitions": 3}) as started:
        yield started


def find_share_coordinator(cluster: Cluster, key: str, not_in: set[int] = frozenset()) -> int:
    def found():
        with WireClient(cluster.running()[0].bootstrap, timeout=10) as client:
            [c] = client.call("FindCoordinator", 6, {"key_type": 2, "coordinator_keys": [key]}).coordinators
        return c.node_id if c.error_code == 0 and c.node_id not in not_in else None
    return cluster.wait_for(found, 30, f"the share coordinator of {key}", interval=0.3)


def state_call(cluster: Cluster, node: int, api: str, version: int, group: str, topic_id, retry=True, **fields):
    """One share state request for partition 0 at a broker; retried while it loads or learns it leads."""
    deadline = time.monotonic() + 30
    while True:
        with WireClient(cluster.brokers[node].bootstrap, timeout=10) as client:
            result = client.call(api, version, {"group_id": group, "topics": [
                {"topic_id": topic_id, "partitions": [{"partition": 0, **fields}]}]}).results[0].partitions[0]
        if not retry or result.error_code not in (14, 15, NOT_COORDINATOR) or time.monotonic() > deadline:
            return result
        time.sleep(0.3)


def test_share_state_survives_its_coordinators_death_and_still_fences(cluster):
    topic = f"share-state-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 1, 3)
    topic_id = cluster.metadata([topic]).topics[0].topic_id
    group = f"sg-{uuid.uuid4().hex[:8]}"
    key = f"{group}:{kafka_uuid_string(topic_id)}:0"
    coordinator = find_share_coordinator(cluster, key)

    assert state_call(cluster, coordinator, "InitializeShareGroupState", 0, group, topic_id,
                      state_epoch=0, start_offset=0).error_code == 0
    written = state_call(cluster, coordinator, "WriteShareGroupState", 1, group, topic_id, state_epoch=0,
                         leader_epoch=3, start_offset=2, delivery_complete_count=3, state_batches=[
                             {"first_offset": 2, "last_offset": 4, "delivery_state": 2, "delivery_count": 1},
                             {"first_offset": 5, "last_offset": 6, "delivery_state": 0, "delivery_count": 1}])
    assert written.error_code == 0, written
    other = next(n for n in cluster.brokers if n != coordinator)
    assert state_call(cluster, other, "ReadShareGroupState", 0, group, topic_id, retry=False,
                      leader_epoch=3).error_code == NOT_COORDINATOR

    cluster.brokers[coordinator].stop(signal.SIGKILL)
    try:
        successor = find_share_coordinator(cluster, key, not_in={coordinator})
        read = state_call(cluster, successor, "ReadShareGroupState", 0, group, topic_id, leader_epoch=3)
        assert (read.error_code, read.state_epoch, read.start_offset) == (0, 0, 2), read
        assert [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in read.state_batches] == \
            [(2, 4, 2, 1), (5, 6, 0, 1)]
        stale = state_call(cluster, successor, "WriteShareGroupState", 1, group, topic_id, state_epoch=0,
                           leader_epoch=2, start_offset=7, delivery_complete_count=0, state_batches=[])
        assert stale.error_code == FENCED_LEADER_EPOCH, stale
    finally:
        cluster.brokers[coordinator].start()
        cluster.wait_for_brokers(set(cluster.brokers), timeout=30)
