"""Answers the request fuzzer (compat/request_fuzz.py --against-kafka 4.3.0) found different from Kafka's,
now as Kafka answers them (compat/conformance/scenarios/controller_deadline.py plays the same against
the reference Kafka), and the cases where Kafka's answer is an accident that kafka-wire does not copy."""

from __future__ import annotations

import uuid

import pytest

from broker.wire_client import WireClient
from kafka_wire.errors import ErrorCode

from wire_cases import TOPIC_RESOURCE, create_topic, metadata, unique

TIMED_OUT = ErrorCode.REQUEST_TIMED_OUT
ZERO_UUID = uuid.UUID(int=0)


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap) as c:
        yield c


def _creatable(name: str) -> dict:
    return {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}


@pytest.mark.parametrize("timeout", [0, -1])
def test_controller_operations_whose_deadline_has_passed_time_out(client, timeout):
    # Kafka's controller queues CreateTopics, DeleteTopics, CreatePartitions and ElectLeaders with
    # the deadline now + timeout_ms; one already past fails them before they run.
    new = unique("deadline")
    answer = client.call("CreateTopics", 7, {"topics": [_creatable(new), _creatable("bad name!")],
                                             "timeout_ms": timeout, "validate_only": False})
    assert [(t.name, t.error_code) for t in answer.topics] == [(new, TIMED_OUT), ("bad name!", TIMED_OUT)]
    assert metadata(client, [new]).topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert client.call("CreateTopics", 7, {"topics": [], "timeout_ms": timeout, "validate_only": False}).topics == []

    existing = unique("deadline-existing")
    create_topic(client, existing)
    answer = client.call("DeleteTopics", 6, {"topics": [{"name": existing, "topic_id": ZERO_UUID},
                                                        {"name": unique("missing"), "topic_id": ZERO_UUID}],
                                             "timeout_ms": timeout})
    assert [r.error_code for r in answer.responses] == [TIMED_OUT, TIMED_OUT]
    answer = client.call("CreatePartitions", 3, {"topics": [{"name": existing, "count": 2, "assignments": None}],
                                                 "timeout_ms": timeout, "validate_only": False})
    assert [r.error_code for r in answer.results] == [TIMED_OUT]
    assert len(metadata(client, [existing]).topics[0].partitions) == 1  # not deleted, not grown

    answer = client.call("ElectLeaders", 2, {"election_type": 0, "timeout_ms": timeout, "topic_partitions": [
        {"topic": existing, "partitions": [0]}]})
    assert answer.error_code == TIMED_OUT
    assert [(p.partition_id, p.error_code) for r in answer.replica_election_results for p in r.partition_result] == \
        [(0, TIMED_OUT)]
    answer = client.call("ElectLeaders", 2, {"election_type": 0, "timeout_ms": timeout, "topic_partitions": []})
    assert (answer.error_code, answer.replica_election_results) == (0, [])


def test_a_short_timeout_that_has_not_passed_is_served(client):
    new = unique("deadline-short")
    answer = client.call("CreateTopics", 7, {"topics": [_creatable(new)], "timeout_ms": 20, "validate_only": False})
    assert answer.topics[0].error_code == 0


def _alter(client, resources, version: int = 2):
    answer = client.call("AlterConfigs", version, {"resources": resources, "validate_only": False})
    return [(r.resource_name, r.error_code, r.error_message) for r in answer.responses]


def test_alter_configs_refuses_duplicates_and_nulls_first(client):
    topic = unique("alter-dups")
    create_topic(client, topic)
    resource = {"resource_type": TOPIC_RESOURCE, "resource_name": topic,
                "configs": [{"name": "retention.ms", "value": "1000"}, {"name": "retention.ms", "value": "2000"}]}
    assert _alter(client, [resource]) == [(topic, ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")]
    resource["configs"] = [{"name": "retention.ms", "value": None}, {"name": "segment.ms", "value": None}]
    assert _alter(client, [resource], version=0) == [
        (topic, ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms, segment.ms")]
    # A resource named twice: Kafka 4.3.0 computes INVALID_REQUEST for both (ConfigAdminManager.preprocess)
    # but never sends its answer (README, "Where Kafka's answer is an accident"); kafka-wire sends it.
    resource["configs"] = [{"name": "retention.ms", "value": "1000"}]
    message = "Each resource must appear at most once."
    assert _alter(client, [resource, resource]) == [(topic, ErrorCode.INVALID_REQUEST, message)] * 2


def test_add_partitions_to_txn_with_no_transactions_is_answered(client):
    # Kafka 4.3.0 never answers AddPartitionsToTxn v4+ with an empty transaction list (it sends the
    # answer when the last transaction's result arrives); kafka-wire answers an empty list.
    for version in (4, 5):
        answer = client.call("AddPartitionsToTxn", version, {"transactions": []})
        assert (answer.error_code, answer.results_by_transaction) == (0, [])
