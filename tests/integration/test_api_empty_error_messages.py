"""Answers without an error carry an empty error message, not null, where Kafka's do (found by the
conformance suite against Kafka 4.3.0: DescribeConfigs, DescribeClientQuotas, DescribeUserScramCredentials)."""

from __future__ import annotations

from broker.wire_client import WireClient


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
