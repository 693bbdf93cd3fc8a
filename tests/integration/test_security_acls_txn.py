"""ACLs on the transaction admin APIs, as Kafka's KafkaApis checks them: DescribeProducers needs
READ on the topic, DescribeTransactions DESCRIBE on the transactional id (and shows only topics the
principal may describe), ListTransactions lists only describable ids, and AddPartitionsToTxn v4
(the broker-to-broker verification batch) needs CLUSTER_ACTION on the cluster.

Principals log in over SASL_PLAINTEXT with SCRAM (admin is a super user; alice gets ACLs one by one).
"""

from __future__ import annotations

import pytest

from kafka_wire.acls import AclOperation as Op, PatternType, ResourceType as Res
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch

# The SASL broker with ACLs and the admin (super user) and alice logins of the ACL tests.
from tests.integration.test_security_acls import acl_broker, admin, alice, create_topic, grant  # noqa: F401

pytestmark = pytest.mark.timeout(300)

def open_transaction(admin, txid: str, topics: dict[str, list[int]]) -> tuple[int, int]:
    """An ongoing transaction over these partitions, with one record written to each."""
    init = admin.call("InitProducerId", 4, {"transactional_id": txid, "transaction_timeout_ms": 60000,
                                            "producer_id": -1, "producer_epoch": -1})
    assert init.error_code == 0
    pid, epoch = init.producer_id, init.producer_epoch
    added = admin.call("AddPartitionsToTxn", 3, {
        "v3_and_below_transactional_id": txid, "v3_and_below_producer_id": pid, "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
    assert {p.partition_error_code for t in added.results_by_topic_v3_and_below for p in t.results_by_partition} == {0}
    for topic, partitions in topics.items():
        for partition in partitions:
            records = build_batch([Record(0, 0, b"k", b"v")], producer_id=pid, producer_epoch=epoch,
                                  base_sequence=0, is_transactional=True)
            answer = admin.call("Produce", 9, {"transactional_id": txid, "acks": -1, "timeout_ms": 5000, "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": records}]}]})
            assert answer.responses[0].partition_responses[0].error_code == 0
    return pid, epoch


def describe_producers(client, topic: str, partitions: list[int]):
    response = client.call("DescribeProducers", 0, {"topics": [{"name": topic, "partition_indexes": partitions}]})
    return {p.partition_index: p for p in response.topics[0].partitions}


def test_describe_producers_needs_read_on_the_topic(admin, alice):
    create_topic(admin, "txn-acl-producers", partitions=2)
    pid, _ = open_transaction(admin, "txn-acl-producers-id", {"txn-acl-producers": [0]})
    denied = describe_producers(alice, "txn-acl-producers", [0, 1])
    assert {p: (r.error_code, r.active_producers) for p, r in denied.items()} == \
        {0: (ErrorCode.TOPIC_AUTHORIZATION_FAILED, []), 1: (ErrorCode.TOPIC_AUTHORIZATION_FAILED, [])}
    assert denied[0].error_message == "Topic authorization failed."
    # A topic that does not exist is refused the same way: the answer does not reveal it.
    assert describe_producers(alice, "no-such-topic", [0])[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED

    grant(admin, Res.TOPIC, "txn-acl-producers", Op.DESCRIBE)  # DESCRIBE is not READ
    assert describe_producers(alice, "txn-acl-producers", [0])[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    grant(admin, Res.TOPIC, "txn-acl-producers", Op.READ)
    allowed = describe_producers(alice, "txn-acl-producers", [0, 1])
    assert allowed[0].error_code == allowed[1].error_code == 0
    assert [s.producer_id for s in allowed[0].active_producers] == [pid]


def test_describe_transactions_needs_describe_on_the_transactional_id(admin, alice):
    create_topic(admin, "txn-acl-described")
    create_topic(admin, "txn-acl-hidden")
    pid, epoch = open_transaction(admin, "txn-acl-described-id", {"txn-acl-described": [0], "txn-acl-hidden": [0]})
    body = {"transactional_ids": ["txn-acl-described-id", "txn-acl-unknown-id"]}
    denied = alice.call("DescribeTransactions", 0, body).transaction_states
    assert [(s.transactional_id, s.error_code, s.producer_id, s.topics) for s in denied] == [
        ("txn-acl-described-id", ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 0, []),
        ("txn-acl-unknown-id", ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 0, [])]

    grant(admin, Res.TRANSACTIONAL_ID, "txn-acl-", Op.DESCRIBE, pattern=PatternType.PREFIXED)
    grant(admin, Res.TOPIC, "txn-acl-described", Op.DESCRIBE)
    described, unknown = alice.call("DescribeTransactions", 0, body).transaction_states
    assert (described.error_code, described.transaction_state, described.producer_id, described.producer_epoch) == \
        (0, "Ongoing", pid, epoch)
    # Only the topics alice may describe are shown.
    assert [t.topic for t in described.topics] == ["txn-acl-described"]
    assert unknown.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    everything = admin.call("DescribeTransactions", 0, body).transaction_states[0]
    assert sorted(t.topic for t in everything.topics) == ["txn-acl-described", "txn-acl-hidden"]


def test_list_transactions_lists_only_describable_ids(admin, alice):
    create_topic(admin, "txn-acl-listed")
    open_transaction(admin, "listed-visible", {"txn-acl-listed": [0]})
    open_transaction(admin, "listed-secret", {"txn-acl-listed": [0]})

    def listed(client) -> set[str]:
        response = client.call("ListTransactions", 0, {"state_filters": [], "producer_id_filters": []})
        assert response.error_code == 0
        return {s.transactional_id for s in response.transaction_states}

    assert {"listed-visible", "listed-secret"} <= listed(admin)
    assert not {"listed-visible", "listed-secret"} & listed(alice)
    grant(admin, Res.TRANSACTIONAL_ID, "listed-visible", Op.WRITE)  # WRITE implies DESCRIBE
    assert {"listed-visible", "listed-secret"} & listed(alice) == {"listed-visible"}


def test_add_partitions_v4_needs_cluster_action(admin, alice):
    create_topic(admin, "txn-acl-verify")
    pid, epoch = open_transaction(admin, "txn-acl-verify-id", {"txn-acl-verify": [0]})
    body = {"transactions": [{"transactional_id": "txn-acl-verify-id", "producer_id": pid, "producer_epoch": epoch,
                              "verify_only": True, "topics": [{"name": "txn-acl-verify", "partitions": [0]}]}]}
    # WRITE on the transactional id and the topic is what a client needs (v3), not what a broker needs.
    grant(admin, Res.TRANSACTIONAL_ID, "txn-acl-verify-id", Op.WRITE)
    grant(admin, Res.TOPIC, "txn-acl-verify", Op.WRITE)
    denied = alice.call("AddPartitionsToTxn", 4, body)
    assert (denied.error_code, denied.results_by_transaction) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])

    verified = admin.call("AddPartitionsToTxn", 4, body)
    assert verified.error_code == 0
    assert [p.partition_error_code for p in verified.results_by_transaction[0].topic_results[0].results_by_partition] \
        == [0]
    grant(admin, Res.CLUSTER, "kafka-cluster", Op.CLUSTER_ACTION)
    assert alice.call("AddPartitionsToTxn", 4, body).error_code == 0
