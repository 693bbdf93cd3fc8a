"""Manual replica assignments: CreateTopics' `assignments` and CreatePartitions' `assignments` place
replicas where they say, as Apache Kafka does (ReplicationControlManager.createTopic /
createPartitions / validateManualPartitionAssignment), with Kafka's errors and messages.

On the embedded single node every replica list can only name the node itself; any other broker is
INVALID_REPLICA_ASSIGNMENT "... includes broker N, but no such broker is registered.", as Kafka
answers for a broker it does not know. In a ZooKeeper cluster the replicas are placed as given and
the first one leads. Checked with the wire client, confluent-kafka's admin and Java's Admin 4.3.0
(what kafka-topics.sh --replica-assignment calls); the messages were compared with Kafka 4.3.0.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from testing.cluster import running_cluster
from client import WireClient

from wire_cases import batch, error_name, metadata, produce, read_all, unique

JAVA_PROGRAM = Path(__file__).parent.parent / "clients" / "java" / "ManualAssignments.java"

NOT_REGISTERED = "The manual partition assignment includes broker {}, but no such broker is registered."
TWICE = "The manual partition assignment includes the broker {} more than once."
INCONSISTENT = ("The manual partition assignment includes a partition with {} replica(s), but this is not "
                "consistent with previous partitions, which have {} replica(s).")


def create(client: WireClient, topic: str, assignment: list[list[int]]):
    [answer] = client.call("CreateTopics", 7, {"topics": [{
        "name": topic, "num_partitions": -1, "replication_factor": -1, "configs": [],
        "assignments": [{"partition_index": i, "broker_ids": r} for i, r in enumerate(assignment)]}],
        "timeout_ms": 10000, "validate_only": False}).topics
    return answer


def grow(client: WireClient, topic: str, count: int, assignment: list[list[int]] | None):
    return client.call("CreatePartitions", 3, {"topics": [{
        "name": topic, "count": count,
        "assignments": None if assignment is None else [{"broker_ids": r} for r in assignment]}],
        "timeout_ms": 10000, "validate_only": False}).results[0]


def placement(response, topic: str) -> list[tuple[int, list[int]]]:
    """[(leader, replicas)] per partition, in partition order, from a Metadata response."""
    [t] = [t for t in response.topics if t.name == topic]
    return [(p.leader_id, list(p.replica_nodes)) for p in sorted(t.partitions, key=lambda p: p.partition_index)]


# -- the embedded single node --------------------------------------------------------------------


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap) as c:
        yield c


@pytest.mark.parametrize("assignment,message", [
    ([[9]], NOT_REGISTERED.format(9)),
    ([[1, 1]], TWICE.format(1)),
    # Kafka walks the ids sorted: the repeated 1 is found before the unknown broker.
    ([[9, 1, 1]], TWICE.format(1)),
    ([[2, 1, 1]], TWICE.format(1)),
    ([[]], "The manual partition assignment includes an empty replica list."),
])
def test_create_refuses_what_kafka_refuses(client, assignment, message):
    topic = unique("assign-refused")
    answer = create(client, topic, assignment)
    assert (error_name(answer.error_code), answer.error_message) == ("INVALID_REPLICA_ASSIGNMENT", message)
    assert metadata(client, [topic]).topics[0].error_code != 0


def test_single_node_places_every_replica_on_itself(client):
    topic = unique("assign-single")
    assert create(client, topic, [[1], [1]]).error_code == 0
    assert grow(client, topic, 3, [[1]]).error_code == 0
    assert placement(metadata(client, [topic]), topic) == [(1, [1])] * 3
    assert produce(client, topic, batch([b"in 2"]), partition=2).error_code == 0
    assert [r[3] for r in read_all(client, topic, partition=2)] == [b"in 2"]
    refused = grow(client, topic, 4, [[2]])
    assert (error_name(refused.error_code), refused.error_message) == (
        "INVALID_REPLICA_ASSIGNMENT", NOT_REGISTERED.format(2))


def test_confluent_kafka_admin(shared_broker):
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    topic = unique("assign-librdkafka")
    admin.create_topics([NewTopic(topic, num_partitions=2, replica_assignment=[[1], [1]])])[topic].result(30)
    admin.create_partitions([NewPartitions(topic, 3, replica_assignment=[[1]])])[topic].result(30)
    with pytest.raises(Exception) as refused:
        admin.create_partitions([NewPartitions(topic, 4, replica_assignment=[[7]])])[topic].result(30)
    error = refused.value.args[0]
    assert (error.name(), error.str()) == ("INVALID_REPLICA_ASSIGNMENT", NOT_REGISTERED.format(7))
    partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
    assert sorted((p.id, p.leader, p.replicas) for p in partitions.values()) == [(0, 1, [1]), (1, 1, [1]), (2, 1, [1])]


def java_admin(java_kafka_clients, bootstrap: str, topic: str, *assignments: str) -> dict:
    command = java_kafka_clients("4.3.0").program(JAVA_PROGRAM)
    done = subprocess.run([*command, bootstrap, topic, *assignments], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_java_admin_on_a_single_node(shared_broker, java_kafka_clients):
    assert java_admin(java_kafka_clients, shared_broker.bootstrap, unique("assign-java"), "1;1", "1") == {
        "created": "ok", "grown": "ok", "message": None, "partitions": [[1, [1]], [1, [1]], [1, [1]]]}
    assert java_admin(java_kafka_clients, shared_broker.bootstrap, unique("assign-java-bad"), "1;2") == {
        "created": "InvalidReplicaAssignmentException", "grown": "none", "message": NOT_REGISTERED.format(2),
        "partitions": None}


# -- a ZooKeeper cluster -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(zookeeper_installed):
    with running_cluster(3, config={"auto.leader.rebalance.enable": "false"}) as started:
        yield started


@pytest.mark.timeout(300)
def test_cluster_places_replicas_as_assigned(cluster):
    topic = "assigned"
    with WireClient(cluster.brokers[1].bootstrap, timeout=10) as client:
        answer = create(client, topic, [[3, 1], [2, 3], [1, 2]])
        assert (answer.error_code, answer.num_partitions, answer.replication_factor) == (0, 3, 2)
        assert grow(client, topic, 4, [[2, 1]]).error_code == 0
        refused = grow(client, topic, 5, [[1]])
        assert (error_name(refused.error_code), refused.error_message) == (
            "INVALID_REPLICA_ASSIGNMENT", INCONSISTENT.format(1, 2))
        inconsistent = create(client, "assigned-inconsistent", [[1, 2], [3]])
        assert (error_name(inconsistent.error_code), inconsistent.error_message) == (
            "INVALID_REPLICA_ASSIGNMENT", INCONSISTENT.format(1, 2))
    expected = [(3, [3, 1]), (2, [2, 3]), (1, [1, 2]), (2, [2, 1])]
    for via in cluster.brokers:  # every broker sees the placement
        cluster.wait_for(lambda: placement(cluster.metadata([topic], via), topic) == expected, 20,
                         f"broker {via} to see the assigned replicas")
    # The assigned leader takes writes and its follower replicates them.
    leader = cluster.wait_for_leader(topic, 0)
    assert leader == 3
    with WireClient(cluster.brokers[3].bootstrap, timeout=10) as client:
        assert produce(client, topic, batch([b"on 3 and 1"]), partition=0, acks=-1).error_code == 0
    cluster.wait_for_isr(topic, 0, {3, 1})
    assert (cluster.brokers[1].log_dir / f"{topic}-0").is_dir()
    assert not (cluster.brokers[2].log_dir / f"{topic}-0").exists()


@pytest.mark.timeout(300)
def test_cluster_java_admin(cluster, java_kafka_clients):
    answer = java_admin(java_kafka_clients, cluster.bootstrap, "assigned-java", "2,3;3,1", "1,2")
    assert answer == {"created": "ok", "grown": "ok", "message": None,
                      "partitions": [[2, [2, 3]], [3, [3, 1]], [1, [1, 2]]]}
    refused = java_admin(java_kafka_clients, cluster.bootstrap, "assigned-java-bad", "1,4")
    assert refused["created"] == "InvalidReplicaAssignmentException"
    assert refused["message"] == NOT_REGISTERED.format(4)
