"""Share groups (KIP-932) in a ZooKeeper-mode cluster, with real share consumers (confluent-kafka's
ShareConsumer, librdkafka 2.16): three consumers of one share group share a partition replicated
on three brokers; the partition's leader is SIGKILLed mid-run, then the group's coordinator (the
leader of its __consumer_offsets partition) and the share-partition's share coordinator (the
leader of its __share_group_state partition). After recovery every record was accepted, none
twice: no record whose acceptance the broker confirmed is delivered again, and none is lost.
Three brokers and a ZooKeeper on loopback, with the fixture's workers and with two per broker."""

from __future__ import annotations

import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
if not hasattr(confluent_kafka, "ShareConsumer"):
    pytest.skip("confluent-kafka without ShareConsumer (needs 2.16+)", allow_module_level=True)

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer  # noqa: E402
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource  # noqa: E402

from broker.workers.ownership import owner_of  # noqa: E402
from client import WireClient  # noqa: E402
from coordinator.share_state import kafka_uuid_string, state_partition_for  # noqa: E402
from testing.broker_process import default_workers  # noqa: E402
from testing.cluster import Cluster, running_cluster  # noqa: E402
from tests.integration.test_share_groups import _share_fetch, poll_until  # noqa: E402

pytestmark = [pytest.mark.clients, pytest.mark.timeout(400)]

SHARE_CLUSTER_CONFIG = {
    "share.coordinator.state.topic.num.partitions": 3,
    "group.share.min.record.lock.duration.ms": 1000,
    "group.share.record.lock.duration.ms": 3000,
    "min.insync.replicas": 2,
}


# With the fixture's workers (KAFKA_WIRE_TEST_WORKERS, else the broker's default: one per core) and with two per broker: a broker's
# share groups then live at its worker 0 while another worker leads the share-partitions' partitions.
@pytest.fixture(scope="module", params=[None, 2], ids=["fixture-workers", "two-workers"])
def cluster(request, zookeeper_installed):
    workers = request.param
    if workers is not None and workers == default_workers():
        pytest.skip(f"the fixture's brokers already run {workers} workers")
    config = SHARE_CLUSTER_CONFIG if workers is None else {**SHARE_CLUSTER_CONFIG, "num.worker.processes": workers}
    # A test failing leaves the cluster running for the next ones, so running_cluster never sees it:
    # the data (broker logs, the partitions) is kept when a test of the module failed meanwhile.
    base = tempfile.mkdtemp(prefix="kafka-wire-share-cluster-")
    failed_before = request.session.testsfailed
    with running_cluster(3, config=config, tmp_dir=base) as started:
        yield started
    if request.session.testsfailed > failed_before:
        print(f"share cluster data kept in {base}", file=sys.stderr)
    else:
        shutil.rmtree(base, ignore_errors=True)


class SteadyProducer(threading.Thread):
    """Produces to partition 0 (idempotent, acks=all), `per_tick` records every 0.1 s, until told
    to stop; `produced` counts the records written (offsets 0..produced-1 of a fresh topic)."""

    def __init__(self, bootstrap: str, topic: str, per_tick: int = 20) -> None:
        super().__init__(name="producer", daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
        self.topic, self.per_tick = topic, per_tick
        self.stop = threading.Event()
        self.produced = 0
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                for _ in range(self.per_tick):
                    self.producer.produce(self.topic, value=str(self.produced).encode(), partition=0)
                    self.produced += 1
                self.producer.poll(0)
                time.sleep(0.1)
            left = self.producer.flush(60)
            if left:
                raise AssertionError(f"{left} records not acknowledged")
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.failure = exc


def new_topic(cluster: Cluster, prefix: str) -> str:
    """A fresh topic name whose partition 0 is owned by a worker other than worker 0 when the
    brokers run several: its share-partition then lives at worker 0 of the leader while another
    worker leads the partition (broker/share_groups.py)."""
    workers = int(cluster.brokers[1].config.get("num.worker.processes") or default_workers())
    while True:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        if workers <= 1 or owner_of(name, 0, workers) != 0:
            return name


def new_group(bootstrap: str) -> str:
    group = f"sg-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource("GROUP", group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    return group


def find_coordinator(cluster: Cluster, key_type: int, key: str) -> int:
    def found():
        with WireClient(cluster.running()[0].bootstrap, timeout=10) as client:
            [c] = client.call("FindCoordinator", 6, {"key_type": key_type, "coordinator_keys": [key]}).coordinators
        return c.node_id if c.error_code == 0 and c.node_id > 0 else None
    return cluster.wait_for(found, 30, f"the coordinator of {key}", interval=0.3)


def describe_offsets(cluster: Cluster, group: str, topic: str):
    """DescribeShareGroupOffsets of partition 0 from the group's coordinator: (start offset, lag)."""
    def described():
        node = find_coordinator(cluster, 0, group)
        with WireClient(cluster.brokers[node].bootstrap, timeout=10) as client:
            answer = client.call("DescribeShareGroupOffsets", 1, {"groups": [
                {"group_id": group, "topics": [{"topic_name": topic, "partitions": [0]}]}]})
        entry = answer.groups[0]
        if entry.error_code:
            return None
        [p] = entry.topics[0].partitions
        return None if p.error_code else (p.start_offset, p.lag)
    return cluster.wait_for(described, 30, f"the offsets of share group {group}", interval=0.5)


class AcceptingConsumer(threading.Thread):
    """A share consumer in explicit mode that accepts every record it gets and commits each poll's
    acknowledgements; it notes each delivery and each acceptance the broker confirmed."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str, log: "DeliveryLog") -> None:
        super().__init__(name=name, daemon=True)
        self.consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                       "share.acknowledgement.mode": "explicit"})
        self.consumer.subscribe([topic])
        self.log = log
        self.stop = threading.Event()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                messages = [m for m in self.consumer.poll(0.5) if m.error() is None]
                if not messages:
                    continue
                offsets = [m.offset() for m in messages]
                self.log.delivered(self.name, offsets)
                for m in messages:
                    self.consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                try:
                    results = self.consumer.commit_sync(15)
                except confluent_kafka.KafkaException as exc:
                    self.log.unconfirmed(offsets, str(exc))
                    continue
                failed = [tp for tp, error in (results or {}).items() if error is not None]
                if failed or not results:
                    self.log.unconfirmed(offsets, str(results))
                else:
                    self.log.accepted(self.name, offsets)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.failure = exc
        finally:
            self.consumer.close()


def wall(t: float) -> str:
    """A time.time() as the brokers' logs print it (UTC here), to the millisecond."""
    return time.strftime("%H:%M:%S", time.gmtime(t)) + f",{int(t * 1000) % 1000:03d}"


class LeadershipWatch(threading.Thread):
    """Notes, every 0.3 s, who leads the data partition and the share-partition's
    __share_group_state partition (leader, epoch, ISR), so a failure can be placed among the kills
    and the moves (with the brokers' logs, kept when the test fails)."""

    def __init__(self, cluster: Cluster, topic: str, state_partition: int | None = None) -> None:
        super().__init__(name="leadership-watch", daemon=True)
        self.cluster, self.topic, self.state_partition = cluster, topic, state_partition
        self.stop = threading.Event()
        self.changes: list[tuple[float, str]] = []
        self.events: list[tuple[float, str]] = []

    def note(self, what: str) -> None:
        self.events.append((time.time(), what))

    def _seen(self) -> str:
        seen = []
        for t in self.cluster.metadata([self.topic, "__share_group_state"]).topics:
            for p in t.partitions:
                if t.name == self.topic or p.partition_index == self.state_partition:
                    seen.append(f"{t.name}-{p.partition_index}: leader {p.leader_id} epoch {p.leader_epoch} "
                                f"isr {sorted(p.isr_nodes)}")
        return "; ".join(sorted(seen))

    def run(self) -> None:
        last = None
        while not self.stop.wait(0.3):
            try:
                seen = self._seen()
            except Exception as exc:  # noqa: BLE001 - a broker down meanwhile
                seen = f"no metadata: {exc}"
            if seen != last:
                self.changes.append((time.time(), seen))
                last = seen

    def around(self, start: float, end: float) -> str:
        """The notes from the last change before `start` to `end`, in time order."""
        before = [c for c in self.changes if c[0] <= start][-1:]
        lines = before + [c for c in self.changes + self.events if start < c[0] <= end]
        return "\n".join(f"  {wall(t)} {what}" for t, what in sorted(lines))


class DeliveryLog:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.deliveries: list[tuple[float, str, int]] = []
        self.confirmed: dict[int, tuple[float, str]] = {}
        self.accepted_twice: list[tuple[int, str, str]] = []
        self.delivered_after_acceptance: list[tuple[int, str]] = []
        self.unconfirmed_offsets: set[int] = set()
        self.errors: list[str] = []

    def delivered(self, who: str, offsets) -> None:
        with self.lock:
            now = time.time()
            for offset in offsets:
                self.deliveries.append((now, who, offset))
                if offset in self.confirmed:
                    self.delivered_after_acceptance.append((offset, who))

    def accepted(self, who: str, offsets) -> None:
        with self.lock:
            for offset in offsets:
                if offset in self.confirmed:
                    self.accepted_twice.append((offset, self.confirmed[offset][1], who))
                else:
                    self.confirmed[offset] = (time.time(), who)

    def unconfirmed(self, offsets, error: str) -> None:
        with self.lock:
            self.unconfirmed_offsets.update(offsets)
            self.errors.append(error)

    def accepted_count(self) -> int:
        with self.lock:
            return len(self.confirmed)

    def story(self, offsets, watch: LeadershipWatch) -> str:
        """When each of `offsets` was delivered, and accepted with the broker's confirmation, and
        what the leadership watch saw from the first of those to the last."""
        with self.lock:
            times = [(t, f"delivered {offset} to {who}") for t, who, offset in self.deliveries if offset in offsets]
            times += [(self.confirmed[o][0], f"acceptance of {o} by {self.confirmed[o][1]} confirmed")
                      for o in offsets if o in self.confirmed]
        if not times:
            return ""
        lines = [f"  {wall(t)} {what}" for t, what in sorted(times)]
        return "\n".join(lines) + "\n meanwhile:\n" + watch.around(min(times)[0], max(times)[0])


def test_share_consumers_survive_leader_and_coordinator_kills(cluster):
    topic = new_topic(cluster, "share-cluster")
    cluster.create_topic(topic, 1, 3)
    topic_id = cluster.metadata([topic]).topics[0].topic_id
    group = new_group(cluster.bootstrap)
    print(f"cluster in {cluster.base_dir}; topic {topic}, group {group}")
    watch = LeadershipWatch(cluster, topic, state_partition_for(
        group, topic_id, 0, SHARE_CLUSTER_CONFIG["share.coordinator.state.topic.num.partitions"]))
    watch.start()
    log = DeliveryLog()
    producer = SteadyProducer(cluster.bootstrap, topic)
    producer.start()
    consumers = [AcceptingConsumer(f"c{i}", cluster.bootstrap, group, topic, log) for i in range(3)]
    for c in consumers:
        c.start()
    killed = []
    records = None
    try:
        def progress(at_least: int, timeout: float = 90) -> None:
            cluster.wait_for(lambda: log.accepted_count() >= at_least, timeout,
                             f"{at_least} records accepted (now {log.accepted_count()})", interval=0.2)

        progress(200)
        leader = cluster.leader_of(topic, 0)
        cluster.brokers[leader].stop(signal.SIGKILL)
        watch.note(f"killed broker {leader}, the data partition leader")
        killed.append(("data partition leader", leader))
        cluster.wait_for_leader(topic, 0, not_in={leader}, timeout=30)
        progress(log.accepted_count() + 300)
        cluster.brokers[leader].start()
        watch.note(f"restarted broker {leader}")
        cluster.wait_for_brokers(set(cluster.brokers), timeout=30)
        cluster.wait_for_isr(topic, 0, set(cluster.brokers), timeout=60)

        group_coordinator = find_coordinator(cluster, 0, group)
        cluster.brokers[group_coordinator].stop(signal.SIGKILL)
        watch.note(f"killed broker {group_coordinator}, the group coordinator")
        killed.append(("group coordinator", group_coordinator))
        progress(log.accepted_count() + 300)
        cluster.brokers[group_coordinator].start()
        watch.note(f"restarted broker {group_coordinator}")
        cluster.wait_for_brokers(set(cluster.brokers), timeout=30)

        share_coordinator = find_coordinator(cluster, 2, f"{group}:{kafka_uuid_string(topic_id)}:0")
        if share_coordinator != group_coordinator:
            cluster.wait_for_isr(topic, 0, set(cluster.brokers), timeout=60)
            cluster.brokers[share_coordinator].stop(signal.SIGKILL)
            watch.note(f"killed broker {share_coordinator}, the share coordinator")
            killed.append(("share coordinator", share_coordinator))
            progress(log.accepted_count() + 300)
            cluster.brokers[share_coordinator].start()
            watch.note(f"restarted broker {share_coordinator}")
            cluster.wait_for_brokers(set(cluster.brokers), timeout=30)

        producer.stop.set()
        producer.join(90)
        assert producer.failure is None, repr(producer.failure)
        records = producer.produced
        # Every record accepted: the confirmed ones, and those whose commit's answer was lost to a
        # kill (the broker may have accepted them before it died: then the share-partition's start
        # offset is past them, and they were never delivered again).
        def all_done() -> bool:
            if len(log.confirmed) >= records:
                return True
            start, lag = describe_offsets(cluster, group, topic)
            return start >= records and lag == 0
        cluster.wait_for(all_done, 180, f"all {records} records accepted (confirmed {log.accepted_count()})",
                         interval=1)
    finally:
        producer.stop.set()
        for c in consumers:
            c.stop.set()
        for c in consumers:
            c.join(30)
        watch.stop.set()
    for c in consumers:
        assert c.failure is None, f"{c.name}: {c.failure!r}"

    delivered = {offset for _, _, offset in log.deliveries}
    assert delivered == set(range(records)), f"never delivered: {sorted(set(range(records)) - delivered)[:20]}"
    twice = sorted({offset for offset, _, _ in log.accepted_twice})
    assert not log.accepted_twice, (f"accepted twice (offset, first, second): {log.accepted_twice[:20]}; kills "
                                    f"{killed}\n{log.story(twice[:2] + twice[-1:], watch)}")
    again = sorted({offset for offset, _ in log.delivered_after_acceptance})
    assert not log.delivered_after_acceptance, (f"delivered after acceptance: {log.delivered_after_acceptance[:20]}; "
                                                f"kills {killed}\n{log.story(again[:2] + again[-1:], watch)}")
    # Not lost: each record the broker never confirmed accepting was accepted by it all the same.
    start, lag = describe_offsets(cluster, group, topic)
    assert (start, lag) == (records, 0), (start, lag, killed)
    print(f"kills: {killed}; deliveries {len(log.deliveries)}, confirmed {len(log.confirmed)}, "
          f"unconfirmed commits {len(log.unconfirmed_offsets)}: {log.errors[:5]}")


def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(count):
        producer.produce(topic, value=str(i).encode(), partition=0)
    assert producer.flush(60) == 0


def test_share_group_admin_at_its_coordinator_reaches_state_led_elsewhere(cluster):
    """The group's coordinator is not the partition's leader: DescribeShareGroupOffsets,
    AlterShareGroupOffsets and DeleteShareGroupOffsets answer there (other brokers:
    NOT_COORDINATOR) from the share coordinator's state, and a consumer of the altered group
    starts where the alter put it (the leader loads the new state)."""
    cluster.wait_for_preferred_leaders()
    topic = new_topic(cluster, "share-admin")
    cluster.create_topic(topic, 1, 3)
    produce(cluster.bootstrap, topic, 10)
    leader = cluster.leader_of(topic, 0)
    while True:  # a group whose coordinator is another broker than the partition's leader
        group = new_group(cluster.bootstrap)
        coordinator = find_coordinator(cluster, 0, group)
        if coordinator != leader:
            break
    c = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    got = poll_until(c, 10, timeout=40)
    assert sorted(m.offset() for m in got) == list(range(10))
    for m in got:
        c.acknowledge(m, AcknowledgeType.ACCEPT if m.offset() < 4 else AcknowledgeType.RELEASE)
    c.commit_sync(30)
    c.close()

    def call(node: int, api: str, version: int, body: dict):
        with WireClient(cluster.brokers[node].bootstrap, timeout=10) as client:
            return client.call(api, version, body)

    assert describe_offsets(cluster, group, topic) == (4, 6)
    elsewhere = next(n for n in cluster.brokers if n != coordinator)
    refused = call(elsewhere, "DescribeShareGroupOffsets", 1, {"groups": [
        {"group_id": group, "topics": [{"topic_name": topic, "partitions": [0]}]}]}).groups[0]
    assert refused.error_code == 16, refused  # NOT_COORDINATOR
    described = call(elsewhere, "ShareGroupDescribe", 1, {"group_ids": [group],
                                                          "include_authorized_operations": False}).groups[0]
    assert described.error_code == 16, described
    assert call(coordinator, "ShareGroupDescribe", 1, {"group_ids": [group], "include_authorized_operations": False}
                ).groups[0].group_state == "Empty"

    altered = call(coordinator, "AlterShareGroupOffsets", 0, {"group_id": group, "topics": [
        {"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": 2}]}]})
    assert altered.error_code == 0 and altered.responses[0].partitions[0].error_code == 0, altered
    assert describe_offsets(cluster, group, topic) == (2, 8)
    again = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    again.subscribe([topic])
    try:
        assert sorted(m.offset() for m in poll_until(again, 8, timeout=40)) == list(range(2, 10))
        assert poll_until(again, 1, timeout=3) == []
    finally:
        again.close()  # accepts them (implicit acknowledgement)
    assert describe_offsets(cluster, group, topic) == (10, 0)

    deleted = call(coordinator, "DeleteShareGroupOffsets", 0, {"group_id": group, "topics": [{"topic_name": topic}]})
    assert deleted.error_code == 0 and deleted.responses[0].error_code == 0, deleted
    [p] = call(coordinator, "DescribeShareGroupOffsets", 1, {"groups": [
        {"group_id": group, "topics": [{"topic_name": topic, "partitions": [0]}]}]}).groups[0].topics[0].partitions
    assert (p.error_code, p.start_offset) == (0, -1), p
    gone = call(coordinator, "DeleteGroups", 2, {"groups_names": [group]}).results[0]
    assert gone.error_code == 0, gone


def lead_from(cluster: Cluster, topic: str, replicas: list[int]) -> None:
    """Make replicas[0] the partition's leader without stopping a broker: a reassignment that only
    reorders the replicas (the preferred one first), then a preferred leader election."""
    with WireClient(cluster.bootstrap.split(",")[0], timeout=10) as client:
        controller = client.call("Metadata", 12, {"topics": [], "allow_auto_topic_creation": False}).controller_id
    with WireClient(cluster.brokers[controller].bootstrap, timeout=10) as client:
        moved = client.call("AlterPartitionReassignments", 0, {"timeout_ms": 10000, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "replicas": replicas}]}]})
        assert moved.error_code == 0 and moved.responses[0].partitions[0].error_code == 0, moved
        cluster.wait_for(lambda: cluster.partition(topic, 0).replica_nodes == replicas, 30,
                         f"replicas of {topic}-0 = {replicas}", interval=0.2)
        elected = client.call("ElectLeaders", 2, {"election_type": 0, "timeout_ms": 10000, "topic_partitions": [
            {"topic": topic, "partitions": [0]}]})
        code = elected.replica_election_results[0].partition_result[0].error_code
        assert elected.error_code == 0 and code in (0, 84), elected  # 84: ELECTION_NOT_NEEDED (done already)
    cluster.wait_for(lambda: cluster.leader_of(topic, 0) == replicas[0]
                     and cluster.serves_as_leader(replicas[0], topic, 0), 30, f"{replicas[0]} leading {topic}-0",
                     interval=0.2)


def test_share_partition_follows_its_partition_leader_away_and_back(cluster):
    """The partition's leadership moves to another broker and back while every broker runs: the
    share-partition goes with it, and the first leader, leading again in a new leader epoch, loads
    the state the other one wrote meanwhile rather than acting on what it held. With several
    workers the partition's owner is another worker than worker 0, which holds the share-partition
    and must hear of both moves. No accepted record is delivered again, none is skipped."""
    cluster.wait_for_preferred_leaders()
    topic = new_topic(cluster, "share-moves")
    cluster.create_topic(topic, 1, 3)
    replicas = list(cluster.partition(topic, 0).replica_nodes)
    first = replicas[0]
    group = new_group(cluster.bootstrap)
    c = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])

    def accept_next(count: int) -> list[int]:
        got = poll_until(c, count, timeout=60)
        for m in got:
            c.acknowledge(m, AcknowledgeType.ACCEPT)
        c.commit_sync(30)
        return sorted(m.offset() for m in got)

    try:
        produce(cluster.bootstrap, topic, 10)
        assert accept_next(10) == list(range(10))
        lead_from(cluster, topic, replicas[1:] + [first])
        produce(cluster.bootstrap, topic, 10)
        assert accept_next(10) == list(range(10, 20))
        lead_from(cluster, topic, replicas)
        produce(cluster.bootstrap, topic, 10)
        assert accept_next(10) == list(range(20, 30))
        assert poll_until(c, 1, timeout=3) == []
    finally:
        c.close()
    assert describe_offsets(cluster, group, topic) == (30, 0)


def test_a_share_fetch_of_a_partition_without_a_leader_hears_not_leader_or_follower(cluster):
    """A partition whose only replica's broker is down has no leader (no unclean election); a
    ShareFetch of it at another broker is answered NOT_LEADER_OR_FOLLOWER, as Kafka's ReplicaManager
    answers a partition it does not lead, so a share consumer refreshes its metadata and goes on.
    It was LEADER_NOT_AVAILABLE, which librdkafka's share consumer raises to the application as an
    unexpected error: under partition-random-halves and partition-bridge every share consumer of
    the faults harness stopped on it."""
    topic = new_topic(cluster, "share-leaderless")
    cluster.create_topic(topic, 1, 1)
    leader = cluster.leader_of(topic, 0)
    topic_id = cluster.metadata([topic]).topics[0].topic_id
    other = next(node for node in cluster.brokers if node != leader)
    group = new_group(cluster.bootstrap)
    cluster.brokers[leader].stop()
    try:
        cluster.wait_for(lambda: cluster.partition(topic, 0, via=other).leader_id < 0, 30,
                         f"{topic}-0 without a leader at broker {other}", interval=0.2)
        with WireClient(cluster.brokers[other].bootstrap, timeout=30) as client:
            [answer] = _share_fetch(client, group, "AAAAAAAAAAAAAAAAAAAAAQ", 0, topic_id, 0)
        assert answer.error_code == 6, answer  # NOT_LEADER_OR_FOLLOWER
    finally:
        cluster.brokers[leader].start()
        cluster.wait_for_brokers(set(cluster.brokers), timeout=30)


def test_a_share_group_member_is_answered_once_its_records_are_durable(cluster):
    """ShareGroupHeartbeat answers once the group's records are in its __consumer_offsets
    partition's in-sync replicas (and, with log.flush.on.ack, on disk), as Kafka's coordinator
    answers once its write is committed: with the partition's followers down the write cannot be
    replicated within offsets.commit.timeout.ms and a joining member hears COORDINATOR_NOT_AVAILABLE.
    It was answered at once: after a power loss of every broker (power-loss-all x share) the group
    was gone and every share consumer failed fatally with GROUP_ID_NOT_FOUND."""
    topic = new_topic(cluster, "share-durable-join")
    cluster.create_topic(topic, 1, 3)
    group = new_group(cluster.bootstrap)
    coordinator = find_coordinator(cluster, 0, group)
    others = [node for node in cluster.brokers if node != coordinator]
    for node in others:
        cluster.brokers[node].stop()
    try:
        with WireClient(cluster.brokers[coordinator].bootstrap, timeout=60) as client:
            beat = client.call("ShareGroupHeartbeat", 1, {
                "group_id": group, "member_id": "AAAAAAAAAAAAAAAAAAAAAQ", "member_epoch": 0, "rack_id": None,
                "subscribed_topic_names": [topic]})
        assert beat.error_code == 15, beat  # COORDINATOR_NOT_AVAILABLE
    finally:
        for node in others:
            cluster.brokers[node].start()
        cluster.wait_for_brokers(set(cluster.brokers), timeout=30)
