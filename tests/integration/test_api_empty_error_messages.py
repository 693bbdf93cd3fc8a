"""Answers without an error carry an empty error message, not null, where Kafka's do (found by the
conformance suite against Kafka 4.3.0: DescribeConfigs, DescribeClientQuotas, DescribeUserScramCredentials)."""

from __future__ import annotations

import time

from client import WireClient


def test_describe_answers_carry_an_empty_error_message(shared_broker):
    with WireClient(shared_broker.bootstrap) as client:
        configs = client.call("DescribeConfigs", 4, {"resources": [
            {"resource_type": 4, "resource_name": "1", "configuration_keys": ["num.partitions"]},
            {"resource_type": 2, "resource_name": "empty-error-message-missing-topic", "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False})
        assert [(r.error_code, r.error_message) for r in configs.results] == [(0, ""), (3, "")]
        quotas = client.call("DescribeClientQuotas", 1, {"strict": False, "components": []})
        assert (quotas.error_code, quotas.error_message) == (0, "")
        scram = client.call("DescribeUserScramCredentials", 0, {"users": None})
        assert (scram.error_code, scram.error_message) == (0, "")


def test_describe_groups_error_entries_omit_authorized_operations(shared_broker):
    """DescribeGroups v6: a group that does not exist is GROUP_ID_NOT_FOUND and, as Kafka 4.3 answers,
    its authorized operations keep the schema's default (omitted), even when asked for."""
    with WireClient(shared_broker.bootstrap) as client:
        client.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": ["described-nowhere"]})
        answer = None
        for _ in range(50):
            answer = client.call("DescribeGroups", 6, {"groups": ["described-nowhere"], "include_authorized_operations": True})
            if answer.groups[0].error_code not in (14, 15):  # the coordinator is being created or loaded
                break
            time.sleep(0.1)
        assert (answer.groups[0].error_code, answer.groups[0].authorized_operations) == (69, -2147483648)


def test_create_partitions_answers_a_duplicated_topic_once(shared_broker):
    """Kafka collects CreatePartitions by topic name: a topic named twice gets one INVALID_REQUEST answer."""
    with WireClient(shared_broker.bootstrap) as client:
        client.call("CreateTopics", 5, {"topics": [{"name": "grown-twice", "num_partitions": 1, "replication_factor": 1,
                                                    "assignments": [], "configs": []}],
                                        "timeout_ms": 30000, "validate_only": False})
        answer = client.call("CreatePartitions", 3, {"topics": [{"name": "grown-twice", "count": 2, "assignments": None},
                                                               {"name": "grown-twice", "count": 3, "assignments": None}],
                                                    "timeout_ms": 30000, "validate_only": False})
        assert [(r.name, r.error_code) for r in answer.results] == [("grown-twice", 42)]


def test_cancelling_no_reassignment_has_no_message(shared_broker):
    """AlterPartitionReassignments cancelling nothing: NO_REASSIGNMENT_IN_PROGRESS without a message,
    as Kafka 4.3 answers."""
    with WireClient(shared_broker.bootstrap) as client:
        client.call("CreateTopics", 5, {"topics": [{"name": "not-moving", "num_partitions": 1, "replication_factor": 1,
                                                    "assignments": [], "configs": []}],
                                        "timeout_ms": 30000, "validate_only": False})
        answer = client.call("AlterPartitionReassignments", 0, {"timeout_ms": 30000, "topics": [
            {"name": "not-moving", "partitions": [{"partition_index": 0, "replicas": None}]}]})
        partition = answer.responses[0].partitions[0]
        assert (partition.error_code, partition.error_message) == (85, None)
