"""Answers the request fuzzer (compat/request_fuzz.py --against-kafka 4.3.0) found different from Kafka's:
those now answered as Kafka does (compat/conformance/scenarios/fuzz_differences.py plays them against the
reference Kafka), and those kept on purpose (docs/security.md, "Request fuzzer differences from Kafka")."""

from __future__ import annotations

import uuid

import pytest

from client import WireClient
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
def test_a_timeout_of_zero_does_the_work_and_answers_request_timed_out(client, timeout):
    # ZooKeeper-mode Kafka's meaning of timeout_ms <= 0 (ZkAdminManager): do it, do not wait for it;
    # what succeeded answers REQUEST_TIMED_OUT (librdkafka reports that as success when its
    # operation_timeout is <= 0), what failed its own error, validate_only its result. Kafka 4.3.0's
    # KRaft controller instead fails the whole request before doing anything (docs/security.md, Timeouts of 0).
    new, bad = unique("deadline"), "bad name!"
    answer = client.call("CreateTopics", 7, {"topics": [_creatable(new), _creatable(bad)],
                                             "timeout_ms": timeout, "validate_only": False})
    assert [(t.name, t.error_code) for t in answer.topics] == [
        (new, TIMED_OUT), (bad, ErrorCode.INVALID_TOPIC_EXCEPTION)]
    assert metadata(client, [new]).topics[0].error_code == 0
    answer = client.call("CreateTopics", 7, {"topics": [_creatable(unique("validate"))], "timeout_ms": timeout,
                                             "validate_only": True})
    assert answer.topics[0].error_code == 0

    answer = client.call("CreatePartitions", 3, {"topics": [{"name": new, "count": 2, "assignments": None},
                                                            {"name": unique("missing"), "count": 2, "assignments": None}],
                                                 "timeout_ms": timeout, "validate_only": False})
    assert [r.error_code for r in answer.results] == [TIMED_OUT, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert len(metadata(client, [new]).topics[0].partitions) == 2

    answer = client.call("DeleteTopics", 6, {"topics": [{"name": new, "topic_id": ZERO_UUID},
                                                        {"name": unique("missing"), "topic_id": ZERO_UUID}],
                                             "timeout_ms": timeout})
    assert [r.error_code for r in answer.responses] == [TIMED_OUT, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert metadata(client, [new]).topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


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
    # but never sends its answer (docs/security.md, "Kafka's accidents, not copied"); kafka-wire sends it.
    resource["configs"] = [{"name": "retention.ms", "value": "1000"}]
    message = "Each resource must appear at most once."
    assert _alter(client, [resource, resource]) == [(topic, ErrorCode.INVALID_REQUEST, message)] * 2


def test_add_partitions_to_txn_with_no_transactions_is_answered(client):
    # Kafka 4.3.0 never answers AddPartitionsToTxn v4+ with an empty transaction list (it sends the
    # answer when the last transaction's result arrives); kafka-wire answers an empty list.
    for version in (4, 5):
        answer = client.call("AddPartitionsToTxn", version, {"transactions": []})
        assert (answer.error_code, answer.results_by_transaction) == (0, [])
