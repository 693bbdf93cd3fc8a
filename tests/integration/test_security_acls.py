"""ACLs against a broker process, as Kafka answers them: produce, fetch, group join, offset commit,
topic create and delete are each denied (with the *_AUTHORIZATION_FAILED code Kafka uses for that
API) and then allowed once the ACL exists; deny wins; Metadata hides what a principal may not
describe; super users may do anything; a real client sees the denial.

Principals log in over SASL_PLAINTEXT with SCRAM (alice, bob; admin is a super user).
"""

from __future__ import annotations

import time

import pytest

from kafka_wire.acls import AclOperation as Op, AclPermissionType as Perm, PatternType, ResourceType as Res
from broker.security.credentials import CredentialStore
from testing.broker_process import BrokerProcess, free_port
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch
from kafka_wire.sasl import SCRAM_MECHANISMS

from tests.integration.test_security import connect, sasl_login

pytestmark = pytest.mark.timeout(300)

PASSWORDS = {"admin": "admin-pw", "alice": "alice-pw", "bob": "bob-pw", "erin": "erin-pw"}
TOPIC_AUTH, GROUP_AUTH, CLUSTER_AUTH = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                        ErrorCode.CLUSTER_AUTHORIZATION_FAILED)


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory):
    port = free_port()
    process = BrokerProcess(tmp_path_factory.mktemp("acl-broker"), port=port, config={
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{port}",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,PLAIN",
        "group.initial.rebalance.delay.ms": 0,
    })
    store = CredentialStore(process.log_dir)
    for user, password in PASSWORDS.items():
        store.set_password(user, password, SCRAM_MECHANISMS["SCRAM-SHA-256"])
    process.start()
    with login(process, "admin") as admin:
        # Clients look the group coordinator up first; the first lookup creates __consumer_offsets
        # (answered COORDINATOR_NOT_AVAILABLE, as in Kafka). The tests below send group requests directly.
        for _ in range(100):
            if admin.call("FindCoordinator", 3, {"key": "any", "key_type": 0}).error_code == 0:
                break
            time.sleep(0.05)
    yield process
    problems = process.finish()
    assert not problems, "\n".join(problems) + "\n" + process.log_report()


def login(broker, user):
    return sasl_login(connect(broker.bootstrap), user, PASSWORDS[user])


@pytest.fixture
def admin(acl_broker):
    with login(acl_broker, "admin") as client:
        yield client


@pytest.fixture
def alice(acl_broker):
    with login(acl_broker, "alice") as client:
        yield client


def grant(admin, rtype: Res, name: str, op: Op, principal="User:alice", perm=Perm.ALLOW,
          pattern=PatternType.LITERAL) -> None:
    response = admin.call("CreateAcls", 3, {"creations": [{
        "resource_type": int(rtype), "resource_name": name, "resource_pattern_type": int(pattern),
        "principal": principal, "host": "*", "operation": int(op), "permission_type": int(perm)}]})
    assert [r.error_code for r in response.results] == [0]


def create_topic(admin, name: str, partitions: int = 1) -> None:
    response = admin.call("CreateTopics", 7, {"topics": [{"name": name, "num_partitions": partitions,
                                                          "replication_factor": 1}], "timeout_ms": 10000})
    assert response.topics[0].error_code == 0, response


def produce(client, topic: str) -> int:
    batch = build_batch([Record(0, 0, b"k", b"v")])
    response = client.call("Produce", 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})
    return response.responses[0].partition_responses[0].error_code


def fetch(client, topic: str):
    response = client.call("Fetch", 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                                         "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                                         "topics": [{"topic": topic, "partitions": [{
                                             "partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
    return response.responses[0].partitions[0]


def join(client, group: str) -> int:
    response = client.call("JoinGroup", 9, {
        "group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
        "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]}, wait=5)
    return response.error_code


def commit(client, group: str, topic: str) -> int:
    response = client.call("OffsetCommit", 8, {"group_id": group, "generation_id_or_member_epoch": -1,
                                               "member_id": "", "topics": [{"name": topic, "partitions": [{
                                                   "partition_index": 0, "committed_offset": 1}]}]})
    return response.topics[0].partitions[0].error_code


def test_produce_needs_write_on_the_topic(admin, alice):
    create_topic(admin, "acl-produce")
    assert produce(alice, "acl-produce") == TOPIC_AUTH
    grant(admin, Res.TOPIC, "acl-produce", Op.WRITE)
    assert produce(alice, "acl-produce") == 0


def test_fetch_needs_read_on_the_topic(admin, alice):
    create_topic(admin, "acl-fetch")
    assert produce(admin, "acl-fetch") == 0
    assert fetch(alice, "acl-fetch").error_code == TOPIC_AUTH
    grant(admin, Res.TOPIC, "acl-fetch", Op.READ)
    fetched = fetch(alice, "acl-fetch")
    assert fetched.error_code == 0 and fetched.high_watermark == 1 and len(bytes(fetched.records)) > 0


def test_group_join_needs_read_on_the_group(admin, alice):
    assert join(alice, "acl-group") == GROUP_AUTH
    grant(admin, Res.GROUP, "acl-", Op.READ, pattern=PatternType.PREFIXED)
    assert join(alice, "acl-group") in (0, ErrorCode.MEMBER_ID_REQUIRED)


def test_offset_commit_needs_read_on_group_and_topic(admin, alice):
    create_topic(admin, "acl-commit")
    assert commit(alice, "commit-group", "acl-commit") == GROUP_AUTH
    grant(admin, Res.GROUP, "commit-group", Op.READ)
    assert commit(alice, "commit-group", "acl-commit") == TOPIC_AUTH
    grant(admin, Res.TOPIC, "acl-commit", Op.READ)
    assert commit(alice, "commit-group", "acl-commit") == 0


def test_create_topics_needs_create_on_cluster_or_topic(admin, alice):
    body = {"topics": [{"name": "made-by-alice", "num_partitions": 1, "replication_factor": 1}], "timeout_ms": 5000}
    assert alice.call("CreateTopics", 7, body).topics[0].error_code == TOPIC_AUTH
    grant(admin, Res.TOPIC, "made-by-", Op.CREATE, pattern=PatternType.PREFIXED)
    assert alice.call("CreateTopics", 7, body).topics[0].error_code == 0


def test_create_topics_answer_hides_configs_without_describe_configs(admin, alice):
    """CreateTopics v5+: a principal that may create the topic but not describe its configs gets the topic
    created with topic_config_error_code TOPIC_AUTHORIZATION_FAILED, -1 partitions and replication factor
    and no configs, as Kafka 4.3's controller answers (ReplicationControlManager's describable topics)."""
    body = {"topics": [{"name": "alice-creates-blind", "num_partitions": 2, "replication_factor": 1}],
            "timeout_ms": 5000}
    grant(admin, Res.TOPIC, "alice-creates-", Op.CREATE, pattern=PatternType.PREFIXED)
    created = alice.call("CreateTopics", 7, body).topics[0]
    assert (created.error_code, created.topic_config_error_code, created.num_partitions,
            created.replication_factor, list(created.configs)) == (0, TOPIC_AUTH, -1, -1, [])
    assert created.topic_id.int != 0  # created all the same
    grant(admin, Res.TOPIC, "alice-creates-", Op.DESCRIBE_CONFIGS, pattern=PatternType.PREFIXED)
    body["topics"][0]["name"] = "alice-creates-seen"
    seen = alice.call("CreateTopics", 7, body).topics[0]
    assert (seen.error_code, seen.topic_config_error_code, seen.num_partitions, seen.replication_factor) == \
        (0, 0, 2, 1)
    assert any(c.name == "retention.ms" for c in seen.configs)


def test_delete_topics_needs_delete_on_the_topic(admin, alice):
    create_topic(admin, "acl-delete")
    body = {"topic_names": ["acl-delete"], "topics": [{"name": "acl-delete"}], "timeout_ms": 5000}
    assert alice.call("DeleteTopics", 6, body).responses[0].error_code == TOPIC_AUTH
    grant(admin, Res.TOPIC, "acl-delete", Op.DELETE)
    assert alice.call("DeleteTopics", 6, body).responses[0].error_code == 0


def test_deny_wins_over_allow(admin, acl_broker):
    create_topic(admin, "acl-deny")
    assert produce(admin, "acl-deny") == 0
    grant(admin, Res.TOPIC, "*", Op.ALL, principal="User:bob")
    grant(admin, Res.TOPIC, "acl-deny", Op.READ, principal="User:bob", perm=Perm.DENY)
    with login(acl_broker, "bob") as bob:
        assert fetch(bob, "acl-deny").error_code == TOPIC_AUTH
        assert produce(bob, "acl-deny") == 0  # the deny is for READ only


def test_metadata_hides_topics_the_principal_may_not_describe(admin, acl_broker):
    for name in ("visible-topic", "hidden-topic"):
        create_topic(admin, name)
    grant(admin, Res.TOPIC, "visible-", Op.DESCRIBE, principal="User:carol", pattern=PatternType.PREFIXED)
    CredentialStore(acl_broker.log_dir).set_password("carol", "carol-pw", SCRAM_MECHANISMS["SCRAM-SHA-256"])
    with sasl_login(connect(acl_broker.bootstrap), "carol", "carol-pw") as carol:
        everything = carol.call("Metadata", 12, {"topics": None, "allow_auto_topic_creation": False})
        assert [t.name for t in everything.topics] == ["visible-topic"]
        asked = carol.call("Metadata", 12, {"topics": [{"name": "hidden-topic"}, {"name": "visible-topic"}],
                                            "allow_auto_topic_creation": False})
        assert {t.name: t.error_code for t in asked.topics} == {"hidden-topic": TOPIC_AUTH, "visible-topic": 0}
        # Auto-creation needs CREATE: describing is not enough.
        auto = carol.call("Metadata", 12, {"topics": [{"name": "visible-new"}], "allow_auto_topic_creation": True})
        assert auto.topics[0].error_code == TOPIC_AUTH
    assert "hidden-topic" in [t.name for t in admin.call("Metadata", 12, {"topics": None}).topics]


def test_acl_apis_need_alter_on_the_cluster(alice):
    response = alice.call("CreateAcls", 3, {"creations": [{
        "resource_type": int(Res.TOPIC), "resource_name": "x", "resource_pattern_type": 3,
        "principal": "User:alice", "host": "*", "operation": int(Op.ALL), "permission_type": int(Perm.ALLOW)}]})
    assert [r.error_code for r in response.results] == [CLUSTER_AUTH]
    described = alice.call("DescribeAcls", 3, {"resource_type_filter": 1, "resource_name_filter": None,
                                                "pattern_type_filter": 1, "principal_filter": None,
                                                "host_filter": None, "operation": 1, "permission_type": 1})
    assert described.error_code == CLUSTER_AUTH


def test_acls_survive_a_restart(admin, acl_broker):
    grant(admin, Res.TOPIC, "durable", Op.READ, principal="User:dave")
    acl_broker.restart()
    with login(acl_broker, "admin") as client:
        described = client.call("DescribeAcls", 3, {"resource_type_filter": 2, "resource_name_filter": "durable",
                                                    "pattern_type_filter": 3, "principal_filter": None,
                                                    "host_filter": None, "operation": 1, "permission_type": 1})
        assert [(r.resource_name, [a.principal for a in r.acls]) for r in described.resources] == \
            [("durable", ["User:dave"])]


def test_a_real_client_sees_topic_authorization_failed(admin, acl_broker):
    from confluent_kafka import KafkaError, Producer

    create_topic(admin, "acl-real-client")
    reports = []
    producer = Producer({"bootstrap.servers": acl_broker.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "erin", "sasl.password": "erin-pw",
                         "message.timeout.ms": 10000})
    producer.produce("acl-real-client", b"denied", partition=0, on_delivery=lambda err, msg: reports.append(err))
    producer.flush(20)
    assert len(reports) == 1 and reports[0] is not None
    assert reports[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, reports[0]


def test_idempotent_producer_needs_idempotent_write_or_write_on_some_topic(admin, acl_broker):
    CredentialStore(acl_broker.log_dir).set_password("frank", "frank-pw", SCRAM_MECHANISMS["SCRAM-SHA-256"])
    body = {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1}
    with sasl_login(connect(acl_broker.bootstrap), "frank", "frank-pw") as frank:
        assert frank.call("InitProducerId", 4, body).error_code == CLUSTER_AUTH
        grant(admin, Res.TOPIC, "frank-", Op.WRITE, principal="User:frank", pattern=PatternType.PREFIXED)
        answer = frank.call("InitProducerId", 4, body)
        assert answer.error_code == 0 and answer.producer_id >= 0
        transactional = frank.call("InitProducerId", 4, {**body, "transactional_id": "frank-txn"})
        assert transactional.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_configs_and_coordinators_need_their_permissions(admin, alice):
    create_topic(admin, "acl-configs")
    describe = {"resources": [{"resource_type": 2, "resource_name": "acl-configs", "configuration_keys": None},
                              {"resource_type": 4, "resource_name": "", "configuration_keys": None}],
                "include_synonyms": False, "include_documentation": False}
    results = alice.call("DescribeConfigs", 4, describe).results
    assert [r.error_code for r in results] == [TOPIC_AUTH, CLUSTER_AUTH]
    grant(admin, Res.TOPIC, "acl-configs", Op.ALTER_CONFIGS)  # implies DESCRIBE_CONFIGS
    assert alice.call("DescribeConfigs", 4, describe).results[0].error_code == 0
    found = alice.call("FindCoordinator", 3, {"key": "coordinated-group", "key_type": 0})
    assert found.error_code == GROUP_AUTH
    grant(admin, Res.GROUP, "coordinated-group", Op.DESCRIBE)
    assert alice.call("FindCoordinator", 3, {"key": "coordinated-group", "key_type": 0}).error_code == 0


def test_group_configs_need_their_permissions_on_the_group(admin, alice):
    """A group's configs (resource type 32) need DESCRIBE_CONFIGS / ALTER_CONFIGS on the group, as in
    Kafka 4.3 (GROUP_AUTHORIZATION_FAILED otherwise)."""
    group = "acl-group-configs"
    describe = {"resources": [{"resource_type": 32, "resource_name": group, "configuration_keys": None}],
                "include_synonyms": False, "include_documentation": False}
    alter = {"resources": [{"resource_type": 32, "resource_name": group, "configs": [
        {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "50000"}]}], "validate_only": False}
    assert alice.call("DescribeConfigs", 4, describe).results[0].error_code == GROUP_AUTH
    assert alice.call("IncrementalAlterConfigs", 1, alter).responses[0].error_code == GROUP_AUTH
    grant(admin, Res.GROUP, group, Op.ALTER_CONFIGS)  # implies DESCRIBE_CONFIGS
    assert alice.call("IncrementalAlterConfigs", 1, alter).responses[0].error_code == 0
    described = alice.call("DescribeConfigs", 4, describe).results[0]
    assert described.error_code == 0 and len(described.configs) == 17


def test_cluster_authorized_operations_need_describe_on_the_cluster(admin, acl_broker):
    """Metadata v8-10 and DescribeCluster reveal the cluster's authorized operations only to a principal that
    may DESCRIBE the cluster (0 to the others, whatever else they may do), as Kafka 4.3 answers."""
    def cluster_operations(client):
        metadata = client.call("Metadata", 10, {"topics": [], "allow_auto_topic_creation": False,
                                                "include_cluster_authorized_operations": True,
                                                "include_topic_authorized_operations": False})
        described = client.call("DescribeCluster", 1, {"include_cluster_authorized_operations": True})
        return metadata.cluster_authorized_operations, described.cluster_authorized_operations

    grant(admin, Res.CLUSTER, "kafka-cluster", Op.ALTER_CONFIGS, principal="User:erin")
    with login(acl_broker, "erin") as erin:
        assert cluster_operations(erin) == (0, 0)
        grant(admin, Res.CLUSTER, "kafka-cluster", Op.DESCRIBE, principal="User:erin")
        bits = (1 << Op.DESCRIBE) | (1 << Op.DESCRIBE_CONFIGS) | (1 << Op.ALTER_CONFIGS)
        assert cluster_operations(erin) == (bits, bits)


def test_describe_groups_refused_group_has_no_authorized_operations(admin, alice):
    """A group alice may not describe: GROUP_AUTHORIZATION_FAILED with the authorized operations left at the
    schema's default (-2147483648), as Kafka 4.3 answers, not 0."""
    described = alice.call("DescribeGroups", 5, {"groups": ["nobody-describes-this"],
                                                 "include_authorized_operations": True}).groups[0]
    assert (described.error_code, described.authorized_operations) == (GROUP_AUTH, -2147483648)
