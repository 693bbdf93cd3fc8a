"""ElectLeaders (43) and ListPartitionReassignments (46) as Apache Kafka answers them: on the
embedded single node, under ACLs, and in a ZooKeeper cluster where the controller really moves
leadership back to the preferred replica.

Sources (apache/kafka): controller/ReplicationControlManager.java electLeaders/electLeader and
listPartitionReassignments, core/.../server/ControllerApis.scala handleElectLeaders and
handleListPartitionReassignments, ElectLeadersRequest.getErrorResponse.
"""

from __future__ import annotations


import pytest
from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient

from testing.cluster import running_cluster
from kafka_wire.acls import AclOperation as Op, ResourceType as Res
from client import WireClient
from kafka_wire.errors import ErrorCode

from tests.integration.test_security_acls import acl_broker, grant, login  # noqa: F401 (acl_broker: a fixture)
from wire_cases import create_topic, unique

pytestmark = pytest.mark.timeout(240)


def elect(client, election_type: int | None, partitions: dict[str, list[int]] | None, version: int = 2):
    body = {"topic_partitions": None if partitions is None else
            [{"topic": t, "partitions": p} for t, p in partitions.items()], "timeout_ms": 10000}
    if election_type is not None:
        body["election_type"] = election_type
    return client.call("ElectLeaders", version, body)


def results(response) -> dict[tuple[str, int], int]:
    return {(t.topic, p.partition_id): p.error_code for t in response.replica_election_results
            for p in t.partition_result}


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap) as c:
        yield c


def test_on_a_single_node_no_election_is_ever_needed(client):
    topic = unique("elect")
    create_topic(client, topic, partitions=2)
    for election_type in (0, 1):
        response = elect(client, election_type, {topic: [0, 1]})
        assert response.error_code == 0
        assert results(response) == {(topic, 0): ErrorCode.ELECTION_NOT_NEEDED, (topic, 1): ErrorCode.ELECTION_NOT_NEEDED}
    # v0 has no election type: a preferred election.
    assert results(elect(client, None, {topic: [0]}, version=0)) == {(topic, 0): ErrorCode.ELECTION_NOT_NEEDED}
    # Every partition: those that needed no election are left out.
    assert results(elect(client, 0, None)) == {}


def test_unknown_partitions_and_election_types(client):
    topic = unique("elect-unknown")
    create_topic(client, topic)
    response = elect(client, 0, {topic: [3], "no-such-topic-elect": [0]})
    partition_results = {(t.topic, p.partition_id): (p.error_code, p.error_message)
                         for t in response.replica_election_results for p in t.partition_result}
    assert partition_results == {
        (topic, 3): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-3"),
        ("no-such-topic-elect", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as no-such-topic-elect")}
    invalid = elect(client, 7, {topic: [0]})
    assert invalid.error_code == ErrorCode.INVALID_REQUEST
    assert results(invalid) == {(topic, 0): ErrorCode.INVALID_REQUEST}


def test_confluent_admin_elect_leaders(shared_broker, client):
    topic = unique("elect-confluent")
    create_topic(client, topic)
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    future = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 0)])
    answered = future.result(timeout=30)
    [(partition, error)] = answered.items()
    assert (partition.topic, partition.partition) == (topic, 0)
    assert error is not None and error.code() == ErrorCode.ELECTION_NOT_NEEDED


def list_reassignments(client, topics: dict[str, list[int]] | None = None):
    return client.call("ListPartitionReassignments", 0, {"timeout_ms": 10000, "topics": None if topics is None else
                       [{"name": t, "partition_indexes": p} for t, p in topics.items()]})


def test_no_reassignment_is_ever_in_progress(client):
    topic = unique("reassign")
    create_topic(client, topic, partitions=2)
    for asked in (None, {topic: [0, 1]}, {"no-such-topic-reassign": [0]}):
        response = list_reassignments(client, asked)
        assert (response.error_code, response.error_message, response.topics) == (0, None, [])


def test_cluster_acls_are_required(acl_broker):
    with login(acl_broker, "admin") as admin, login(acl_broker, "erin") as erin:
        topic = unique("elect-acl")
        create_topic(admin, topic)
        listing = list_reassignments(erin)
        assert listing.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and listing.topics == []
        denied = elect(erin, 0, {topic: [0]})
        assert denied.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert results(denied) == {(topic, 0): ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        assert results(elect(erin, 0, None)) == {}  # all partitions: nothing listed
        grant(admin, Res.CLUSTER, "kafka-cluster", Op.ALTER, principal="User:erin")  # ALTER implies DESCRIBE
        assert results(elect(erin, 0, {topic: [0]})) == {(topic, 0): ErrorCode.ELECTION_NOT_NEEDED}
        assert list_reassignments(erin).error_code == 0


@pytest.fixture(scope="module")
def cluster(zookeeper_installed):
    # Without the controller's own rebalancing, only ElectLeaders brings the preferred leader back.
    with running_cluster(2, config={"auto.leader.rebalance.enable": "false",
                                    "offsets.topic.replication.factor": 2, "default.replication.factor": 2}) as started:
        yield started


def test_the_controller_moves_leadership_back_to_the_preferred_replica(cluster):
    topic = "elect-preferred"
    cluster.create_topic(topic, replication_factor=2)
    preferred = cluster.wait_for_leader(topic)
    other = next(i for i in cluster.brokers if i != preferred)
    assert cluster.brokers[preferred].stop() == 0
    cluster.wait_for(lambda: cluster.leader_of(topic) == other, 20, "leadership moved to the other replica")
    cluster.brokers[preferred].start()
    cluster.wait_for_isr(topic, 0, {preferred, other}, timeout=30)
    assert cluster.leader_of(topic) == other  # nothing moves it back by itself

    controller = cluster.metadata(via=other).controller_id
    not_controller = next(i for i in cluster.brokers if i != controller)
    with WireClient(cluster.brokers[not_controller].bootstrap) as client:
        refused = elect(client, 0, {topic: [0]})
        assert refused.error_code == ErrorCode.NOT_CONTROLLER
    with WireClient(cluster.brokers[controller].bootstrap) as client:
        assert results(elect(client, 1, {topic: [0]})) == {(topic, 0): ErrorCode.ELECTION_NOT_NEEDED}  # leader is live
        assert results(elect(client, 0, {topic: [0]})) == {(topic, 0): ErrorCode.NONE}
    cluster.wait_for(lambda: cluster.leader_of(topic) == preferred, 20, "the preferred replica leads again")
    # A real client: librdkafka sends it to the controller itself.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    answered = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 0)]).result(timeout=30)
    assert [e.code() if e is not None else 0 for e in answered.values()] == [ErrorCode.ELECTION_NOT_NEEDED]
