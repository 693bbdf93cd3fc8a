"""DescribeTransactions and DescribeProducers answers where kafka-wire differed from Apache Kafka 4.3.0
(found by the conformance suite's transaction scenarios, compat/conformance/scenarios/transactions.py)."""

from __future__ import annotations

import time

import pytest

from client import WireClient
from kafka_wire.errors import ErrorCode

from wire_cases import create_topic, unique


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap) as c:
        yield c


def test_describe_transactions_of_an_unknown_id_leaves_the_fields_at_zero(client):
    # Kafka answers an error entry with the message's defaults: 0 for the producer id, epoch and start
    # time (not -1, which would read as "no producer" / "no transaction started").
    txid = unique("unknown")
    for _ in range(100):
        if client.call("FindCoordinator", 3, {"key": txid, "key_type": 1}).error_code == 0:
            break
        time.sleep(0.05)
    state = client.call("DescribeTransactions", 0, {"transactional_ids": [txid]}).transaction_states[0]
    assert state.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    assert (state.transaction_state, state.transaction_timeout_ms, state.transaction_start_time_ms,
            state.producer_id, state.producer_epoch, state.topics) == ("", 0, 0, 0, 0, [])


def test_describe_producers_of_an_unknown_partition_says_why(client):
    topic = unique("producers")
    create_topic(client, topic)
    answer = client.call("DescribeProducers", 0, {"topics": [{"name": topic, "partition_indexes": [3]},
                                                             {"name": unique("missing"), "partition_indexes": [0]}]})
    existing, missing = answer.topics
    assert [p.error_code for p in existing.partitions + missing.partitions] == \
        [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION] * 2
    # Kafka explains a topic it does not have ("This server does not host this topic-partition."),
    # not a partition past the end of a topic it has.
    assert missing.partitions[0].error_message == "This server does not host this topic-partition."
    assert existing.partitions[0].error_message is None
