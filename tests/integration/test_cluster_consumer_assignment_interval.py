"""consumer.assignment.interval.ms (Kafka 4.3, KIP-1263) in a ZooKeeper-mode cluster of three
brokers, with real consumers (confluent-kafka, librdkafka 2.16, group.protocol=consumer).

The group's coordinator (the leader of its __consumer_offsets partition) honours the group's
interval as one broker does (test_consumer_group_assignment_interval.py): a member joining within
the interval waits at the last assignment epoch, and one computation after it splits the
partitions. Then the coordinator goes away (a controlled shutdown, or SIGKILL) right after a
computation. The new coordinator replays the group from the replicated __consumer_offsets, the
last ConsumerGroupTargetAssignmentMetadata record's AssignmentTimestamp included, as Kafka 4.3's
GroupMetadataManager.replay does (nothing on load resets it), and reads the group config from
ZooKeeper: a member joining right after the move still waits for the interval counted from that
last computation, not from the move and not at all.
"""

from __future__ import annotations

import time
import uuid

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from client import WireClient  # noqa: E402
from kafka_wire.errors import ErrorCode  # noqa: E402
from testing.cluster import Cluster, running_cluster  # noqa: E402
from tests.integration.test_consumer_group_assignment_interval import (  # noqa: E402
    Member, set_group_configs, sizes, wait_for)

pytestmark = [pytest.mark.clients, pytest.mark.timeout(300)]

INTERVAL_MS = 12000
INTERVAL_S = INTERVAL_MS / 1000
# A group may heartbeat every second (Kafka's group.consumer.min.heartbeat.interval.ms is 5 s).
CONFIG = {"group.consumer.min.heartbeat.interval.ms": 1000}
# What a coordinator that is moving answers (the client looks it up again).
MOVING = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE}


@pytest.fixture(scope="module")
def cluster(zookeeper_installed):
    with running_cluster(3, config=CONFIG) as started:
        yield started


@pytest.fixture
def healthy(cluster: Cluster):
    """The shared cluster with all three brokers up and leading what they prefer (the test stops one;
    it comes back after, and the next test starts once the controller gave it its leaderships back:
    otherwise the group's coordinator could move in the middle of that test)."""
    yield cluster
    for broker in cluster.brokers.values():
        if not broker.is_running():
            broker.start()
    cluster.wait_for_brokers(set(cluster.brokers), timeout=30)
    cluster.wait_for_preferred_leaders()


def coordinator_of(cluster: Cluster, group: str) -> int | None:
    """The node FindCoordinator names for the group (asking a running broker); None while none is."""
    with WireClient(cluster.running()[0].bootstrap, timeout=5) as client:
        [found] = client.call("FindCoordinator", 6, {"key_type": 0, "coordinator_keys": [group]}).coordinators
    return found.node_id if found.error_code == 0 and found.node_id >= 0 else None


def described_at(cluster: Cluster, group: str):
    """(coordinator, ConsumerGroupDescribe of the group from it), or None while the coordinator
    moves: ZooKeeper names the new leader of the __consumer_offsets partition a moment before that
    broker has loaded it."""
    try:
        node = coordinator_of(cluster, group)
        if node is None:
            return None
        with WireClient(cluster.brokers[node].bootstrap, timeout=5) as client:
            described = client.call("ConsumerGroupDescribe", 1, {
                "group_ids": [group], "include_authorized_operations": False}).groups[0]
    except OSError:
        return None
    if described.error_code in MOVING:
        return None
    assert described.error_code == 0, described
    return node, described


def group_config_at(cluster: Cluster, node: int, group: str) -> str | None:
    """consumer.assignment.interval.ms as broker `node` describes the group's config."""
    with WireClient(cluster.brokers[node].bootstrap, timeout=5) as client:
        [result] = client.call("DescribeConfigs", 4, {"resources": [
            {"resource_type": 32, "resource_name": group, "configuration_keys": ["consumer.assignment.interval.ms"]}],
            "include_synonyms": False, "include_documentation": False}).results
    assert result.error_code == 0, result
    return next((c.value for c in result.configs if c.name == "consumer.assignment.interval.ms"), None)


class Computations:
    """Polls the group's description until the assignment epoch leaves `epoch`; `before` is when
    the last poll that still saw it was sent, so the computation happened after it."""

    def __init__(self, cluster: Cluster, group: str, epoch: int) -> None:
        self.cluster, self.group, self.epoch = cluster, group, epoch
        self.before = time.monotonic()
        self.seen_epochs: set[int] = set()

    def next(self, timeout: float):
        def changed():
            sent = time.monotonic()
            got = described_at(self.cluster, self.group)
            if got is None:
                return None
            self.seen_epochs.add(got[1].assignment_epoch)
            if got[1].assignment_epoch == self.epoch:
                self.before = sent
                return None
            return got
        return wait_for("the next target assignment", changed, timeout)


@pytest.mark.parametrize("move", ["controlled-shutdown", "sigkill"])
def test_the_interval_holds_on_the_coordinator_and_after_it_moves(healthy, move):
    cluster = healthy
    topic, group = f"cluster-interval-{uuid.uuid4().hex[:8]}", f"cluster-interval-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=4, replication_factor=3)
    set_group_configs(cluster.bootstrap, group, INTERVAL_MS)

    members = []
    try:
        # (a) On the coordinator: the first member gets everything at once; a second one joining
        # within the interval waits at the last assignment epoch; one computation after it splits.
        a = Member(cluster.bootstrap, group, topic)
        members.append(a)
        wait_for("the first member's partitions", lambda: a.owned == {0, 1, 2, 3}, 30)
        a_assigned_at = time.monotonic()
        coordinator, first = wait_for("the group described", lambda: described_at(cluster, group), 20)
        epoch = first.assignment_epoch
        assert (first.group_state, first.group_epoch, sizes(first)) == ("Stable", epoch, [4])

        b = Member(cluster.bootstrap, group, topic)
        members.append(b)
        _, waiting = wait_for("the second join",
                              lambda: (got := described_at(cluster, group)) and len(got[1].members) == 2 and got, 20)
        assert time.monotonic() - a_assigned_at < INTERVAL_S - 3, "the join came too late to test"
        assert (waiting.group_state, waiting.group_epoch, waiting.assignment_epoch) == ("Assigning", epoch + 1, epoch)
        assert sizes(waiting) == [0, 4] and b.owned == set()

        computations = Computations(cluster, group, epoch)
        node, computed = computations.next(30)
        waited = time.monotonic() - a_assigned_at
        assert node == coordinator
        assert waited >= INTERVAL_S - 1.5, f"recomputed {waited:.1f} s after the first assignment"
        assert computed.assignment_epoch == computed.group_epoch == epoch + 1
        assert computations.seen_epochs == {epoch, epoch + 1}
        # The last computation happened after this: the next one may not come before it plus the interval.
        last_computed_after = computations.before
        wait_for("the partitions split two ways",
                 lambda: sorted(len(m.owned) for m in members) == [2, 2] and a.owned | b.owned == {0, 1, 2, 3}, 20)

        # (b) The coordinator goes away right after that computation.
        if move == "sigkill":
            cluster.brokers[coordinator].kill_group()
        else:
            cluster.brokers[coordinator].stop()
        new_coordinator, loaded = wait_for(
            "the new coordinator serving the group",
            lambda: (got := described_at(cluster, group)) and got[0] != coordinator and got, 30)
        # It replayed the group as stored: both members, the last target assignment and its epoch.
        assert (loaded.group_epoch, loaded.assignment_epoch) == (epoch + 1, epoch + 1)
        assert sizes(loaded) == [2, 2] and len(loaded.members) == 2
        assert group_config_at(cluster, new_coordinator, group) == str(INTERVAL_MS)

        c = Member(cluster.bootstrap, group, topic)
        members.append(c)
        _, joined = wait_for("the join at the new coordinator",
                             lambda: (got := described_at(cluster, group)) and len(got[1].members) == 3 and got, 20)
        since_last = time.monotonic() - last_computed_after
        assert since_last < INTERVAL_S - 2, f"the join came {since_last:.1f} s after the last computation: too late"
        # Within the interval counted from the stored computation: joined, nothing assigned again.
        assert (joined.group_state, joined.group_epoch, joined.assignment_epoch) == ("Assigning", epoch + 2, epoch + 1)
        assert sizes(joined) == [0, 2, 2] and c.owned == set()

        computations = Computations(cluster, group, epoch + 1)
        node, computed = computations.next(30)
        assert node == new_coordinator
        since_last = time.monotonic() - last_computed_after
        assert since_last >= INTERVAL_S - 0.5, f"recomputed {since_last:.1f} s after the last computation"
        assert computed.assignment_epoch == computed.group_epoch == epoch + 2
        assert computations.seen_epochs == {epoch + 1, epoch + 2}
        wait_for("the partitions split three ways",
                 lambda: (got := described_at(cluster, group)) and got[1].group_state == "Stable"
                 and sizes(got[1]) == [1, 1, 2], 30)
        wait_for("the consumers holding them", lambda: sorted(len(m.owned) for m in members) == [1, 1, 2], 20)
        assert set().union(*(m.owned for m in members)) == {0, 1, 2, 3}
    finally:
        for member in members:
            member.close()
