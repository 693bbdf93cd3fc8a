"""Metadata, DescribeCluster, FindCoordinator and ApiVersions as Apache Kafka answers them.

Sources (apache/kafka): core/.../server/KafkaApis.scala handleTopicMetadataRequest/getTopicMetadata,
core/.../server/AutoTopicCreationManager.scala, core/.../server/AuthHelper.scala
computeDescribeClusterResponse, clients/.../requests/ApiVersionsRequest.java isValid/getErrorResponse,
clients/.../requests/MetadataRequest.java getErrorResponse.
"""

from __future__ import annotations

import time
import uuid

import pytest

from broker.handlers import HANDLERS
from testing.broker_process import free_port, running_broker
from client import WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.primitives import ZERO_UUID

from wire_cases import create_topic, error_name, metadata, unique


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap) as c:
        yield c


# -- which topics ------------------------------------------------------------------------------------------


def test_v0_empty_list_means_all_topics(client):
    topic = unique("meta-all")
    create_topic(client, topic)
    response = client.call("Metadata", 0, {"topics": []})
    assert topic in {t.name for t in response.topics}


def test_v1_null_means_all_and_empty_means_none(client):
    topic = unique("meta-null")
    create_topic(client, topic)
    for version in (1, 4, 9, 12):
        assert topic in {t.name for t in metadata(client, None, version=version).topics}
        assert metadata(client, [], version=version).topics == []


@pytest.mark.parametrize("version", [12, 13])
def test_topic_answer(client, version):
    """v13 adds a top-level error code (KIP-1102); Kafka 4.3's broker answers 0 there."""
    topic = unique("meta-topic")
    create_topic(client, topic, partitions=3)
    response = metadata(client, [topic, unique("missing")], version=version)
    entry, missing = response.topics
    assert (entry.error_code, entry.name, entry.is_internal) == (0, topic, False)
    assert [(p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes)
            for p in entry.partitions] == [(i, 1, 0, [1], [1]) for i in range(3)]
    assert entry.topic_authorized_operations == -2147483648  # not asked for
    assert error_name(missing.error_code) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert response.error_code == 0


def test_authorized_operations_when_asked(client):
    """Without an authorizer Kafka grants every operation the resource supports
    (AclEntry.supportedOperations): for a topic READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
    DESCRIBE_CONFIGS, ALTER_CONFIGS."""
    topic = unique("meta-ops")
    create_topic(client, topic)
    response = client.call("Metadata", 10, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                                            "include_cluster_authorized_operations": True,
                                            "include_topic_authorized_operations": True})
    assert response.topics[0].topic_authorized_operations == sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
    assert response.cluster_authorized_operations == sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


# -- auto-creation ----------------------------------------------------------------------------------------------


def test_auto_creation_answers_unknown_first_then_the_topic(client):
    """KRaft Kafka forwards the creation to its controller and answers UNKNOWN_TOPIC_OR_PARTITION
    (DefaultAutoTopicCreationManager.sendCreateTopicRequest); the next Metadata has the topic with
    num.partitions partitions. v0-v3 have no allow_auto_topic_creation and always allow it."""
    for version, body in ((12, None), (3, None)):
        topic = unique(f"auto-v{version}")
        request = {"topics": [{"name": topic}], "allow_auto_topic_creation": True}
        first = client.call("Metadata", version, request).topics[0]
        assert (error_name(first.error_code), first.partitions) == ("UNKNOWN_TOPIC_OR_PARTITION", [])
        second = client.call("Metadata", version, request).topics[0]
        assert (second.error_code, len(second.partitions)) == (0, 1)


def test_no_auto_creation_when_the_request_says_so(client):
    topic = unique("no-auto")
    for _ in range(2):
        answer = metadata(client, [topic], auto_create=False).topics[0]
        assert error_name(answer.error_code) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert topic not in {t.name for t in metadata(client, None).topics}


def test_no_auto_creation_when_the_broker_says_so(tmp_path):
    with running_broker(tmp_path, config={"auto.create.topics.enable": False}) as broker, \
            WireClient(broker.bootstrap) as client:
        topic = unique("broker-no-auto")
        for version in (1, 12):
            request = {"topics": [{"name": topic}], "allow_auto_topic_creation": True}
            answer = client.call("Metadata", version, request).topics[0]
            assert error_name(answer.error_code) == "UNKNOWN_TOPIC_OR_PARTITION"
        assert topic not in {t.name for t in metadata(client, None).topics}


@pytest.mark.parametrize("name", ["bad name!", "x" * 250, ".", "..", "spaß"])
@pytest.mark.parametrize("auto_create", [True, False])
def test_invalid_topic_names(client, name, auto_create):
    """Topic.validate: INVALID_TOPIC_EXCEPTION, and nothing created."""
    answer = metadata(client, [name], auto_create=auto_create).topics[0]
    assert error_name(answer.error_code) == "INVALID_TOPIC_EXCEPTION"
    assert answer.name == name


# -- topic ids --------------------------------------------------------------------------------------------------


def test_topic_ids_are_stable_and_can_be_looked_up(broker):
    """A topic keeps its id (CreateTopics answers it, Metadata v10+ reports it, a restart keeps it);
    Metadata v12 can ask by id with a null name."""
    topic = unique("ids")
    with WireClient(broker.bootstrap) as client:
        created = client.call("CreateTopics", 7, {"topics": [{"name": topic, "num_partitions": 2,
                                                              "replication_factor": 1}], "timeout_ms": 5000})
        topic_id = created.topics[0].topic_id
        assert topic_id != ZERO_UUID
        assert metadata(client, [topic], version=10).topics[0].topic_id == topic_id
    broker.restart()
    with WireClient(broker.bootstrap) as client:
        assert metadata(client, [topic]).topics[0].topic_id == topic_id
        by_id = client.call("Metadata", 12, {"topics": [{"topic_id": topic_id, "name": None}],
                                             "allow_auto_topic_creation": False}).topics[0]
        assert (by_id.error_code, by_id.name, by_id.topic_id, len(by_id.partitions)) == (0, topic, topic_id, 2)
        unknown_id = uuid.uuid4()
        missing = client.call("Metadata", 12, {"topics": [{"topic_id": unknown_id, "name": None}],
                                               "allow_auto_topic_creation": False}).topics[0]
        assert (error_name(missing.error_code), missing.name, missing.topic_id) == \
            ("UNKNOWN_TOPIC_ID", None, unknown_id)


def test_topic_ids_in_v10_requests_are_invalid(client):
    """KafkaApis: "Topic IDs are not supported in requests for version 10/11"; the whole request
    fails with INVALID_REQUEST (MetadataRequest.getErrorResponse)."""
    response = client.call("Metadata", 10, {"topics": [{"topic_id": uuid.uuid4(), "name": "t"}],
                                            "allow_auto_topic_creation": False})
    assert [error_name(t.error_code) for t in response.topics] == ["INVALID_REQUEST"]
    assert response.brokers == []


def test_internal_topic_flag(broker):
    with WireClient(broker.bootstrap) as client:
        if metadata(client, ["__consumer_offsets"]).topics[0].error_code:
            create_topic(client, "__consumer_offsets")
        entry = metadata(client, ["__consumer_offsets"]).topics[0]
        assert (entry.error_code, entry.is_internal) == (0, True)
        topic = unique("not-internal")
        create_topic(client, topic)
        assert metadata(client, [topic]).topics[0].is_internal is False


# -- where clients connect ------------------------------------------------------------------------------------


def test_advertised_listeners_are_what_clients_see(tmp_path):
    """Metadata, DescribeCluster and FindCoordinator name the advertised listener, not the bound one."""
    port = free_port()
    config = {"advertised.listeners": "PLAINTEXT://kafka.example.test:19092"}
    with running_broker(tmp_path, port=port, config=config) as broker, WireClient(broker.bootstrap) as client:
        brokers = metadata(client, None).brokers
        assert [(b.node_id, b.host, b.port) for b in brokers] == [(1, "kafka.example.test", 19092)]
        cluster = client.call("DescribeCluster", 1, {"include_cluster_authorized_operations": False,
                                                     "endpoint_type": 1})
        assert [(b.broker_id, b.host, b.port) for b in cluster.brokers] == [(1, "kafka.example.test", 19092)]
        # The first lookup creates __consumer_offsets and is answered COORDINATOR_NOT_AVAILABLE, as in Kafka.
        for _ in range(100):
            coordinator = client.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": ["g"]}).coordinators[0]
            if coordinator.error_code != ErrorCode.COORDINATOR_NOT_AVAILABLE:
                break
            time.sleep(0.05)
        assert (coordinator.error_code, coordinator.host, coordinator.port) == (0, "kafka.example.test", 19092)


def test_listener_host_0_0_0_0_is_advertised_as_a_reachable_address(tmp_path):
    port = free_port()
    config = {"listeners": f"PLAINTEXT://0.0.0.0:{port}"}
    with running_broker(tmp_path, port=port, config=config) as broker, WireClient(broker.bootstrap) as client:
        [entry] = metadata(client, None).brokers
        assert (entry.host, entry.port) != ("0.0.0.0", port) and entry.port == port


# -- DescribeCluster ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("include_fenced", [False, True])
@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_cluster(client, version, include_fenced):
    """v2 (KIP-1073) may ask for fenced brokers too and says for each whether it is fenced: no
    broker here is ever fenced (a registered broker is alive), so Kafka 4.3's single node answers
    alike, with or without them."""
    response = client.call("DescribeCluster", version, {"include_cluster_authorized_operations": False,
                                                        "endpoint_type": 1, "include_fenced_brokers": include_fenced})
    assert (response.error_code, response.controller_id) == (0, 1)
    assert response.cluster_id and [(b.broker_id, b.is_fenced) for b in response.brokers] == [(1, False)]
    assert response.cluster_id == metadata(client, None).cluster_id
    assert response.cluster_authorized_operations == -2147483648


@pytest.mark.parametrize("endpoint_type,expected", [(2, "MISMATCHED_ENDPOINT_TYPE"), (7, "UNSUPPORTED_ENDPOINT_TYPE")])
def test_describe_cluster_endpoint_types(client, endpoint_type, expected):
    """AuthHelper.computeDescribeClusterResponse on a broker: the controllers' endpoint type (2) is
    MISMATCHED_ENDPOINT_TYPE, an unknown one UNSUPPORTED_ENDPOINT_TYPE."""
    response = client.call("DescribeCluster", 1, {"include_cluster_authorized_operations": False,
                                                  "endpoint_type": endpoint_type})
    assert error_name(response.error_code) == expected
    assert response.error_message and response.brokers == []


# -- ApiVersions ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_table_is_the_registered_handlers(client, version):
    response = client.call("ApiVersions", version, {"client_software_name": "wire-tests",
                                                    "client_software_version": "1.0"})
    assert response.error_code == 0
    table = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert table == {key: (h.min_version, h.max_version) for key, h in HANDLERS.items()}


@pytest.mark.parametrize("name,version", [("bad name", "1.0"), ("ok", "1.0!"), ("-lead", "1"), ("", "1")])
def test_api_versions_v3_invalid_client_software(client, name, version):
    """ApiVersionsRequest.isValid (KIP-511): name and version must match
    [a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?; otherwise INVALID_REQUEST with no API keys."""
    response = client.call("ApiVersions", 3, {"client_software_name": name, "client_software_version": version})
    assert error_name(response.error_code) == "INVALID_REQUEST"
    assert response.api_keys == []
