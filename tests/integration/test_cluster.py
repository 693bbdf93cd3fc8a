"""Cluster mode against real processes: one ZooKeeper and three brokers on loopback.

What users of a replicated Kafka cluster rely on: acknowledged (acks=all) records survive the
leader's death, an idempotent producer leaves no duplicates across the failover, a new leader
serves within seconds; fewer in-sync replicas than min.insync.replicas refuses acks=all writes;
lagging followers leave the ISR and come back; consumer groups keep their committed offsets
when their coordinator dies. The cluster is shared by the module; each test uses its own topic
and leaves all three brokers running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest

from testing.cluster import Cluster, running_cluster
from client import WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch, decode_batches

pytestmark = pytest.mark.clients

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JAVA_SOURCE = os.path.join(REPO_ROOT, "tests", "clients", "java", "ClusterProducer.java")
NEW_LEADER_WITHIN_S = 10


@pytest.fixture(scope="module")
def cluster(zookeeper_installed):
    with running_cluster(3) as started:
        yield started


@pytest.fixture
def healthy(cluster: Cluster):
    """The shared cluster with all three brokers up (a test may kill some; they come back after)."""
    yield cluster
    for broker in cluster.brokers.values():
        broker.send_signal(signal.SIGCONT)
        if not broker.is_running():
            broker.start()
    cluster.wait_for_brokers(set(cluster.brokers), timeout=30)


# -- helpers --------------------------------------------------------------------------------------


def produce(address: str, topic: str, values: list[bytes], acks: int = -1, timeout_ms: int = 10000) -> tuple[int, int]:
    """One batch to partition 0 with our own client: (error code, base offset)."""
    with WireClient(address, timeout=timeout_ms / 1000 + 5) as client:
        response = client.call("Produce", 9, {
            "acks": acks, "timeout_ms": timeout_ms, "transactional_id": None,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": 0, "records": build_batch([Record(i, 0, None, v) for i, v in enumerate(values)])}]}]})
    partition = response.responses[0].partition_responses[0]
    return partition.error_code, partition.base_offset


def read_partition(address: str, topic: str) -> tuple[int, list[bytes], int]:
    """Everything a consumer can read from partition 0 on this broker: (error, values, high watermark)."""
    values: list[bytes] = []
    offset = 0
    with WireClient(address, timeout=10) as client:
        while True:
            response = client.call("Fetch", 12, {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 22, "isolation_level": 0,
                "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
                "topics": [{"topic": topic, "partitions": [
                    {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 22}]}]})
            data = response.responses[0].partitions[0]
            if data.error_code:
                return data.error_code, values, -1
            progressed = False
            for header, records in decode_batches(bytes(data.records or b"")):
                if header.is_control:
                    offset = header.next_offset
                    continue
                values += [r.value for r in records if header.base_offset + r.offset_delta >= offset]
                offset = header.next_offset
                progressed = True
            if not progressed:
                return 0, values, data.high_watermark


def leader_address(cluster: Cluster, topic: str) -> str:
    return cluster.brokers[cluster.wait_for_leader(topic)].bootstrap


# Leadership may move between asking where it is and writing there (the preferred replica
# taking it back): what clients do is look again and retry.
_MOVED = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.FENCED_LEADER_EPOCH}


def produce_to_leader(cluster: Cluster, topic: str, values: list[bytes], acks: int = -1) -> int:
    """Produce to whoever leads partition 0, retrying while leadership moves; the error code."""
    deadline = time.monotonic() + 20
    while True:
        error, _ = produce(leader_address(cluster, topic), topic, values, acks)
        if error not in _MOVED or time.monotonic() > deadline:
            return error
        time.sleep(0.2)


def high_watermark(cluster: Cluster, topic: str) -> int:
    """Partition 0's high watermark as its leader answers ListOffsets latest; -1 while it moves."""
    try:
        with WireClient(leader_address(cluster, topic), timeout=5) as client:
            response = client.call("ListOffsets", 7, {"replica_id": -1, "isolation_level": 0, "topics": [
                {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
    except OSError:
        return -1
    answer = response.topics[0].partitions[0]
    return answer.offset if answer.error_code == 0 else -1


def read_from_leader(cluster: Cluster, topic: str) -> tuple[int, list[bytes], int]:
    deadline = time.monotonic() + 20
    while True:
        result = read_partition(leader_address(cluster, topic), topic)
        if result[0] not in _MOVED or time.monotonic() > deadline:
            return result
        time.sleep(0.2)


# -- tests ------------------------------------------------------------------------------------------


def test_metadata_from_every_broker_lists_the_whole_cluster(healthy):
    healthy.create_topic("cluster-metadata", partitions=3, replication_factor=3)
    views = []
    for node_id in healthy.brokers:
        response = healthy.metadata(["cluster-metadata"], via=node_id)
        assert {b.node_id for b in response.brokers} == {1, 2, 3}
        assert {(b.node_id, b.port) for b in response.brokers} == {(i, b.port) for i, b in healthy.brokers.items()}
        assert response.controller_id in (1, 2, 3)
        partitions = sorted((p.partition_index, p.leader_id, tuple(p.replica_nodes)) for p in response.topics[0].partitions)
        views.append(partitions)
    assert views[0] == views[1] == views[2]
    # Kafka's assignment spreads leadership: three partitions, three different first replicas.
    assert {leader for _, leader, _ in views[0]} == {1, 2, 3}
    for _, leader, replicas in views[0]:
        assert leader == replicas[0] and sorted(replicas) == [1, 2, 3]


def test_non_leader_refuses_writes_and_reads(healthy):
    healthy.create_topic("cluster-not-leader", replication_factor=3)
    leader = healthy.wait_for_leader("cluster-not-leader")
    follower = next(i for i in healthy.brokers if i != leader)
    assert produce(healthy.brokers[follower].bootstrap, "cluster-not-leader", [b"x"])[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert read_partition(healthy.brokers[follower].bootstrap, "cluster-not-leader")[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert produce(healthy.brokers[leader].bootstrap, "cluster-not-leader", [b"x"]) == (0, 0)


def test_not_leader_answers_name_the_current_leader(healthy):
    """KIP-951: from Produce v10 and Fetch v16 a NOT_LEADER_OR_FOLLOWER partition carries the current
    leader and epoch, and the response that leader's endpoint, so clients go there without a
    Metadata call."""
    healthy.create_topic("cluster-leader-hint", replication_factor=3)
    leader = healthy.wait_for_leader("cluster-leader-hint")
    follower = next(i for i in healthy.brokers if i != leader)
    healthy.wait_for(lambda: getattr(healthy.partition("cluster-leader-hint", 0, via=follower), "leader_id", -1) == leader,
                     what="the follower to know the leader")
    topic_id = healthy.metadata(["cluster-leader-hint"]).topics[0].topic_id
    answers = {}
    with WireClient(healthy.brokers[follower].bootstrap, timeout=10) as client:
        for version in (9, 10, 13):
            topic = {"topic_id": topic_id} if version >= 13 else {"name": "cluster-leader-hint"}
            response = client.call("Produce", version, {
                "acks": -1, "timeout_ms": 5000, "transactional_id": None,
                "topic_data": [{**topic, "partition_data": [{"index": 0, "records": build_batch([Record(0, 0, None, b"x")])}]}]})
            answer = response.responses[0].partition_responses[0]
            answers[version] = (ErrorCode.from_code(answer.error_code),
                                (answer.current_leader.leader_id, answer.current_leader.leader_epoch),
                                [(n.node_id, n.host, n.port, n.rack) for n in response.node_endpoints])
        for version in (15, 16, 18):
            response = client.call("Fetch", version, {
                "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
                "topics": [{"topic_id": topic_id, "partitions": [
                    {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
            answer = response.responses[0].partitions[0]
            answers[f"fetch v{version}"] = (ErrorCode.from_code(answer.error_code),
                                            (answer.current_leader.leader_id, answer.current_leader.leader_epoch),
                                            [(n.node_id, n.host, n.port, n.rack) for n in response.node_endpoints])
    state = healthy.partition("cluster-leader-hint", 0, via=follower)
    assert state.leader_id == leader and state.leader_epoch >= 0
    endpoint = (leader, "127.0.0.1", healthy.brokers[leader].port, None)
    assert answers == {  # not on the wire before v10
        9: (ErrorCode.NOT_LEADER_OR_FOLLOWER, (-1, -1), []),
        10: (ErrorCode.NOT_LEADER_OR_FOLLOWER, (leader, state.leader_epoch), [endpoint]),
        13: (ErrorCode.NOT_LEADER_OR_FOLLOWER, (leader, state.leader_epoch), [endpoint]),
        "fetch v15": (ErrorCode.NOT_LEADER_OR_FOLLOWER, (-1, -1), []),
        "fetch v16": (ErrorCode.NOT_LEADER_OR_FOLLOWER, (leader, state.leader_epoch), [endpoint]),
        "fetch v18": (ErrorCode.NOT_LEADER_OR_FOLLOWER, (leader, state.leader_epoch), [endpoint]),
    }


@pytest.fixture(scope="module")
def cluster_producer(java_kafka_clients):
    return java_kafka_clients("3.9.0").program(JAVA_SOURCE)


class ConfluentProducer(threading.Thread):
    """confluent-kafka (librdkafka) writing with acks=all from a thread; remembers what was acked."""

    def __init__(self, bootstrap: str, topic: str, count: int, pause: float) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.count, self.pause = bootstrap, topic, count, pause
        self.acked: list[bytes] = []
        self.failed: list[str] = []

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": False,
                             "message.timeout.ms": 60000, "request.timeout.ms": 10000, "retry.backoff.ms": 100,
                             "topic.metadata.refresh.interval.ms": 1000, "linger.ms": 5})

        def delivered(error, message):
            if error is None:
                self.acked.append(message.value())
            else:
                self.failed.append(str(error))

        for i in range(self.count):
            producer.produce(self.topic, value=b"confluent-%d" % i, partition=0, on_delivery=delivered)
            producer.poll(0)
            time.sleep(self.pause)
        producer.flush(90)


def test_leader_killed_under_acks_all_load_loses_no_acknowledged_record(healthy, cluster_producer):
    topic = "cluster-failover"
    healthy.create_topic(topic, replication_factor=3, configs={"min.insync.replicas": 2})
    leader = healthy.wait_for_leader(topic)
    java = subprocess.Popen(cluster_producer + [healthy.bootstrap, topic, "java", "1500", "4"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    confluent = ConfluentProducer(healthy.bootstrap, topic, 1500, 0.004)
    confluent.start()
    try:
        time.sleep(2.5)
        healthy.brokers[leader].kill()
        killed_at = time.monotonic()
        new_leader = healthy.wait_for_leader(topic, not_in={leader}, timeout=NEW_LEADER_WITHIN_S)
        # The new leader serves: an acks=all write succeeds within the bound.
        healthy.wait_for(lambda: produce(healthy.brokers[new_leader].bootstrap, topic, [b"probe"])[0] == 0,
                         NEW_LEADER_WITHIN_S - (time.monotonic() - killed_at), "an acks=all write to the new leader")
        out, err = java.communicate(timeout=120)
        confluent.join(120)
    finally:
        if java.poll() is None:
            java.kill()
    java_acked = [line.split()[1].encode() for line in out.splitlines() if line.startswith("ACK ")]
    assert java.returncode == 0, err[-3000:]
    assert "DONE failed=0" in out, out[-3000:]
    assert len(java_acked) == 1500
    assert not confluent.is_alive()
    assert confluent.acked, confluent.failed[:5]

    error, values, _ = read_partition(healthy.brokers[new_leader].bootstrap, topic)
    assert error == 0
    present = set(values)
    assert not set(java_acked) - present, "acknowledged Java records lost"
    assert not set(confluent.acked) - present, "acknowledged confluent-kafka records lost"
    java_values = [v for v in values if v.startswith(b"java-")]
    assert len(java_values) == len(set(java_values)), "the idempotent producer's records are duplicated"

    # The killed broker comes back, catches up and rejoins the ISR.
    healthy.brokers[leader].start()
    healthy.wait_for_isr(topic, 0, {1, 2, 3}, timeout=30)


def test_two_brokers_down_refuses_acks_all_and_restarted_brokers_rejoin(healthy):
    topic = "cluster-min-isr"
    healthy.create_topic(topic, replication_factor=3, configs={"min.insync.replicas": 2})
    leader = healthy.wait_for_leader(topic)
    for i in range(10):
        assert produce(healthy.brokers[leader].bootstrap, topic, [b"committed-%d" % i])[0] == 0
    survivor = next(i for i in healthy.brokers if i != leader)
    down = [i for i in healthy.brokers if i != survivor]
    for node_id in down:
        healthy.brokers[node_id].kill()
    healthy.wait_for_isr(topic, 0, {survivor}, timeout=20)
    assert healthy.wait_for_leader(topic) == survivor
    address = healthy.brokers[survivor].bootstrap

    assert produce(address, topic, [b"refused"])[0] == ErrorCode.NOT_ENOUGH_REPLICAS
    assert produce(address, topic, [b"acks-1"], acks=1)[0] == 0  # acks=1 does not ask for replicas
    error, values, _ = read_partition(address, topic)
    assert error == 0
    assert values[:10] == [b"committed-%d" % i for i in range(10)]
    assert b"refused" not in values

    for node_id in down:
        healthy.brokers[node_id].start()
    healthy.wait_for_isr(topic, 0, {1, 2, 3}, timeout=30)
    assert produce_to_leader(healthy, topic, [b"after"]) == 0
    error, values, _ = read_from_leader(healthy, topic)
    assert error == 0
    assert values == [b"committed-%d" % i for i in range(10)] + [b"acks-1", b"after"]


def test_paused_follower_leaves_the_isr_and_rejoins_after_resuming(healthy):
    topic = "cluster-paused-follower"
    healthy.create_topic(topic, replication_factor=3, configs={"min.insync.replicas": 2})
    leader = healthy.wait_for_leader(topic)
    follower = next(i for i in healthy.brokers if i != leader)
    address = healthy.brokers[leader].bootstrap
    assert produce(address, topic, [b"before"])[0] == 0
    healthy.brokers[follower].send_signal(signal.SIGSTOP)  # (every process of it)
    try:
        started = time.monotonic()
        # Writes continue: the first waits until the leader drops the paused follower from the ISR.
        assert produce(address, topic, [b"while-paused-0"])[0] == 0
        healthy.wait_for_isr(topic, 0, {1, 2, 3} - {follower}, timeout=10)
        assert time.monotonic() - started < 10
        for i in range(1, 5):
            assert produce(address, topic, [b"while-paused-%d" % i])[0] == 0
    finally:
        healthy.brokers[follower].send_signal(signal.SIGCONT)
    healthy.wait_for_isr(topic, 0, {1, 2, 3}, timeout=30)
    assert produce_to_leader(healthy, topic, [b"after"]) == 0
    # The resumed follower has everything: it can take over with nothing lost.
    def follower_leads():  # controlled shutdowns of the others until the resumed follower leads
        current = healthy.leader_of(topic)
        if current not in (follower, -1) and healthy.brokers[current].is_running():
            assert healthy.brokers[current].stop() == 0
        return current == follower
    healthy.wait_for(follower_leads, 20, "the resumed follower leading")
    # A new leader serves up to the high watermark it had as a follower until the rest of its ISR
    # fetches from it (as Kafka's does): "after" shows a moment later. Failed the fresh-clone CI run
    # of 942a911 with "after" missing from a read made at once.
    expected = [b"before"] + [b"while-paused-%d" % i for i in range(5)] + [b"after"]
    reads = []

    def everything() -> bool:
        reads.append(read_partition(healthy.brokers[follower].bootstrap, topic))
        return reads[-1][:2] == (0, expected)

    try:
        healthy.wait_for(everything, 10, "every acknowledged record from the resumed follower")
    except AssertionError as failure:
        failure.add_note(f"last read (error, values, high watermark): {reads[-1] if reads else None}")
        raise


def test_controlled_shutdown_moves_leadership_and_preferred_leader_returns(healthy):
    topic = "cluster-controlled-shutdown"
    healthy.create_topic(topic, replication_factor=3, configs={"min.insync.replicas": 2})
    leader = healthy.wait_for_leader(topic)
    assert produce(healthy.brokers[leader].bootstrap, topic, [b"one"])[0] == 0
    assert healthy.brokers[leader].stop() == 0
    # Leadership moved as the broker stopped: no wait for its ZooKeeper session to expire.
    partition = healthy.wait_for(
        lambda: (p := healthy.partition(topic, 0)) is not None and p.leader_id not in (leader, -1)
        and leader not in p.isr_nodes and p, 1.0, "leadership moved away")
    assert produce(healthy.brokers[partition.leader_id].bootstrap, topic, [b"two"])[0] == 0
    healthy.brokers[leader].start()
    # auto.leader.rebalance.enable: the preferred replica (the first of the assignment) leads again.
    healthy.wait_for(lambda: healthy.leader_of(topic) == leader, 20, "the preferred leader back")
    # ZooKeeper names it leader a moment before it acts as one, and a new leader serves up to the
    # high watermark it had as a follower until the ISR fetches from it: a consumer retries
    # (NOT_LEADER_OR_FOLLOWER, or nothing yet) and then reads both records. Failed the fresh-clone
    # CI run of b63817a with [] read at once.
    reads = []

    def both_records() -> bool:
        reads.append(read_partition(healthy.brokers[leader].bootstrap, topic))
        return reads[-1][:2] == (0, [b"one", b"two"])

    try:
        healthy.wait_for(both_records, 10, "both records from the preferred leader")
    except AssertionError as failure:
        failure.add_note(f"last read (error, values, high watermark): {reads[-1] if reads else None}")
        raise


def test_consumer_group_keeps_committed_offsets_across_coordinator_failover(healthy):
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    topic, group = "cluster-group", "cluster-group-1"
    healthy.create_topic(topic, replication_factor=3)
    address = leader_address(healthy, topic)
    for i in range(20):
        assert produce(address, topic, [b"m-%d" % i])[0] == 0

    def consumer():
        return Consumer({"bootstrap.servers": healthy.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                         "topic.metadata.refresh.interval.ms": 1000})

    first = consumer()
    first.subscribe([topic])
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < 10 and time.monotonic() < deadline:
        message = first.poll(0.5)
        if message is not None and not message.error():
            seen.append(message)
    assert len(seen) >= 10
    first.commit(offsets=[TopicPartition(topic, 0, seen[9].offset() + 1)], asynchronous=False)
    first.close()

    with WireClient(healthy.brokers[1].bootstrap) as client:
        found = client.call("FindCoordinator", 3, {"key": group, "key_type": 0})
    assert found.error_code == 0
    coordinator = found.node_id
    healthy.brokers[coordinator].kill()

    second = consumer()

    def committed_offset():
        try:
            return second.committed([TopicPartition(topic, 0)], timeout=5)[0].offset
        except KafkaException as exc:  # the coordinator is still moving
            return exc

    try:
        healthy.wait_for(lambda: committed_offset() == 10, 40, "the committed offset from the new coordinator")
        second.subscribe([topic])
        message = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = second.poll(0.5)
            if message is not None and not message.error():
                break
        assert message is not None and message.value() == b"m-10"
    finally:
        second.close()


def test_deleting_a_topic_deletes_its_offsets_on_every_group_coordinator(healthy):
    """Kafka's onPartitionsDeleted runs on every broker: the group's coordinator drops the
    committed offsets even when DeleteTopics went to another broker."""
    topic, group = "cluster-deleted-offsets", "cluster-deleted-offsets-group"
    healthy.create_topic(topic, replication_factor=3)

    def committed(client) -> int:
        fetched = client.call("OffsetFetch", 7, {"group_id": group, "require_stable": False,
                                                 "topics": [{"name": topic, "partition_indexes": [0]}]})
        return fetched.topics[0].partitions[0].committed_offset

    def commit_at_coordinator():
        """The coordinator's node id once it took the commit. As a Kafka client does, a retriable
        coordinator error means looking the coordinator up again: ZooKeeper names the leader of
        the group's __consumer_offsets partition (FindCoordinator's answer) a moment before that
        broker has made itself leader and loaded the partition, and until then it answers
        NOT_COORDINATOR, as Kafka's does before its LeaderAndIsr arrives."""
        with WireClient(healthy.brokers[1].bootstrap) as client:
            found = client.call("FindCoordinator", 3, {"key": group, "key_type": 0})
        if found.error_code != 0:
            return None
        with WireClient(healthy.brokers[found.node_id].bootstrap) as client:
            answer = client.call("OffsetCommit", 8, {
                "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
                "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 7,
                                                           "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
        error = answer.topics[0].partitions[0].error_code
        if error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                     ErrorCode.COORDINATOR_NOT_AVAILABLE):
            return None
        assert error == 0
        return found.node_id

    coordinator = healthy.wait_for(commit_at_coordinator, 20, "the group coordinator taking the commit")
    with WireClient(healthy.brokers[coordinator].bootstrap) as client:
        assert committed(client) == 7
    other = next(i for i in healthy.brokers if i != coordinator)
    with WireClient(healthy.brokers[other].bootstrap) as client:
        deleted = client.call("DeleteTopics", 6, {"topics": [{"name": topic, "topic_id": None}], "timeout_ms": 10000})
        assert deleted.responses[0].error_code == 0
    with WireClient(healthy.brokers[coordinator].bootstrap) as client:
        healthy.wait_for(lambda: committed(client) == -1, 20, "the deleted topic's offset gone")


class LatestOffsetWatcher(threading.Thread):
    """Asks every broker for partition 0's latest offset (ListOffsets, as a consumer) again and again,
    keeping the answers of those that answer as its leader: (node, leader epoch, offset) in order."""

    def __init__(self, cluster: Cluster, topic: str) -> None:
        super().__init__(daemon=True)
        self.cluster, self.topic = cluster, topic
        self.answers: list[tuple[int, int, int]] = []
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            for node_id, broker in self.cluster.brokers.items():
                try:
                    with WireClient(broker.bootstrap, timeout=5) as client:
                        response = client.call("ListOffsets", 7, {
                            "replica_id": -1, "isolation_level": 0, "topics": [{"name": self.topic, "partitions": [
                                {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
                except OSError:
                    continue  # killed, or starting
                answer = response.topics[0].partitions[0]
                if answer.error_code == 0:
                    self.answers.append((node_id, answer.leader_epoch, answer.offset))
            time.sleep(0.02)

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=30)

    def went_back(self) -> list[tuple]:
        """Each answer lower than one before it, with the highest before it."""
        highest, lower = -1, []
        for node_id, epoch, offset in self.answers:
            if offset < highest:
                lower.append((node_id, epoch, offset, highest))
            highest = max(highest, offset)
        return lower


@pytest.mark.slow
def test_repeated_leader_failures_under_idempotent_load(healthy, cluster_producer):
    """Soak: the leader dies again and again (each time after the last victim caught up) while an
    idempotent producer writes; short form 2 rounds, KW_SLOW=1 for 6."""
    rounds = 6 if os.environ.get("KW_SLOW") == "1" else 2
    topic = "cluster-soak"
    healthy.create_topic(topic, replication_factor=3, configs={"min.insync.replicas": 2})
    count = rounds * 1500
    latest = LatestOffsetWatcher(healthy, topic)
    latest.start()
    java = subprocess.Popen(cluster_producer + [healthy.bootstrap, topic, "soak", str(count), "3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for round_ in range(rounds):
            # Each leader dies while the producer writes: on a loaded machine the JVM may start
            # after fixed sleeps have run every round out.
            share = count * (round_ + 1) // (rounds + 1)
            healthy.wait_for(lambda: java.poll() is not None or high_watermark(healthy, topic) >= share, 120,
                             f"{share} records written")
            leader = healthy.wait_for_leader(topic)
            healthy.brokers[leader].kill()
            healthy.wait_for_leader(topic, not_in={leader}, timeout=NEW_LEADER_WITHIN_S)
            healthy.brokers[leader].start()
            healthy.wait_for_isr(topic, 0, {1, 2, 3}, timeout=30)
        out, err = java.communicate(timeout=180)
    finally:
        latest.stop()
        if java.poll() is None:
            java.kill()
    assert java.returncode == 0 and "DONE failed=0" in out, (out[-2000:], err[-2000:])
    acked = {line.split()[1].encode() for line in out.splitlines() if line.startswith("ACK ")}
    assert len(acked) == count
    # Across the leader changes, the latest offset consumers are told never went back (a new leader
    # answers OFFSET_NOT_AVAILABLE until its high watermark reaches the start of its epoch).
    assert latest.answers and not latest.went_back(), latest.went_back()[:10]
    # A leader that took over since the last ack (the preferred replica back) answers with the high
    # watermark it knew as a follower until the others fetch from it: read once it covers every
    # acknowledged offset (a lost record keeps it short, or leaves a value missing).
    last_acked = max(int(line.split()[2]) for line in out.splitlines() if line.startswith("ACK "))

    def read_past_last_ack():
        read = read_from_leader(healthy, topic)
        return read if read[0] != 0 or read[2] > last_acked else None

    error, values, hw = healthy.wait_for(read_past_last_ack, 30, f"the high watermark past offset {last_acked}")
    assert error == 0
    assert len(values) == len(set(values)) == count, (len(values), len(set(values)), hw)
    assert set(values) == acked


def test_transactions_span_brokers_and_survive_coordinator_failover(healthy):
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic, transactional_id = "cluster-transactions", "cluster-txn-1"
    healthy.create_topic(topic, partitions=3, replication_factor=3)

    def transaction(producer, tag: bytes, commit: bool) -> None:
        producer.begin_transaction()
        for i in range(9):  # every partition, so markers go to all three leaders
            producer.produce(topic, value=b"%s-%d" % (tag, i), partition=i % 3)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)

    def committed_values() -> set[bytes]:
        consumer = Consumer({"bootstrap.servers": healthy.bootstrap, "group.id": "cluster-txn-reader",
                             "isolation.level": "read_committed", "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
        values: set[bytes] = set()
        idle_until = time.monotonic() + 3
        while time.monotonic() < idle_until:
            message = consumer.poll(0.3)
            if message is not None and not message.error():
                values.add(message.value())
                idle_until = time.monotonic() + 2
        consumer.close()
        return values

    config = {"bootstrap.servers": healthy.bootstrap, "transactional.id": transactional_id, "acks": "all"}
    producer = Producer(config)
    producer.init_transactions(30)
    transaction(producer, b"committed", True)
    transaction(producer, b"aborted", False)
    del producer  # closed while its coordinator lives (librdkafka's destroy would wait for it)
    assert committed_values() == {b"committed-%d" % i for i in range(9)}

    with WireClient(healthy.brokers[1].bootstrap) as client:
        found = client.call("FindCoordinator", 3, {"key": transactional_id, "key_type": 1})
    assert found.error_code == 0
    healthy.brokers[found.node_id].kill()
    # A new producer instance with the same id: the new coordinator knows the id (replicated
    # __transaction_state) and fences the old instance.
    successor = Producer(config)
    successor.init_transactions(60)
    transaction(successor, b"after-failover", True)
    del successor
    assert committed_values() == {b"%s-%d" % (tag, i) for tag in (b"committed", b"after-failover") for i in range(9)}


def test_a_broker_leads_again_within_seconds_of_zookeeper_returning_after_a_long_outage(zookeeper_installed, tmp_path):
    """A broker leads nothing while it cannot reach ZooKeeper; when ZooKeeper is back it must
    reconnect at once, as ZooKeeper's Java client does (it sleeps under a second after trying
    every host). kazoo's default reconnect backoff doubles up to 60 s: after a 30 s outage the
    broker tried again about 20 s after ZooKeeper answered, and under the faults harness's
    repeated ZooKeeper-majority cuts the cluster stayed leaderless for minutes."""
    with running_cluster(1, tmp_dir=tmp_path) as cluster:
        cluster.create_topic("zk-outage", replication_factor=1)
        cluster.zookeeper.stop()
        cluster.wait_for(lambda: not cluster.serves_as_leader(1, "zk-outage"), 20, "the broker stepping down")
        time.sleep(30)
        cluster.zookeeper.start()
        back = time.monotonic()
        cluster.wait_for(lambda: cluster.serves_as_leader(1, "zk-outage"), 60, "the broker leading again")
        assert time.monotonic() - back < 10, f"led again {time.monotonic() - back:.1f} s after ZooKeeper was back"
