"""InitProducerId without a transactional id and DescribeProducers, as Apache Kafka 4.3 answers them.

Found by the conformance suite (compat/conformance/scenarios/idempotence.py). Sources (apache/kafka):
KafkaApis.handleInitProducerIdRequest, handleDescribeProducersRequest.
"""

from __future__ import annotations

import pytest

from client import WireClient

from wire_cases import batch, create_topic, error_name, init_producer_id, produce, unique


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap) as c:
        yield c


@pytest.mark.parametrize("transactional_id", [None, "idempotence-half-id"])
def test_a_producer_id_without_its_epoch_is_invalid(client, transactional_id):
    """A producer id with epoch -1 (or an epoch with producer id -1) is INVALID_REQUEST, for an
    idempotent producer as for a transactional one; both given, an idempotent one gets a new id."""
    producer_id, epoch = init_producer_id(client)
    for given in ({"producer_id": producer_id, "producer_epoch": -1}, {"producer_id": -1, "producer_epoch": 0}):
        answer = client.call("InitProducerId", 4, {"transactional_id": transactional_id,
                                                   "transaction_timeout_ms": 60000, **given})
        assert (error_name(answer.error_code), answer.producer_id, answer.producer_epoch) == \
            ("INVALID_REQUEST", -1, -1)
    answer = client.call("InitProducerId", 4, {"transactional_id": None, "transaction_timeout_ms": 60000,
                                               "producer_id": producer_id, "producer_epoch": epoch})
    assert answer.error_code == 0 and answer.producer_id != producer_id and answer.producer_epoch == 0


def test_describe_producers_explains_an_unknown_topic_not_an_unknown_partition(client):
    topic = unique("producers")
    create_topic(client, topic)
    producer_id, epoch = init_producer_id(client)
    assert produce(client, topic, batch([b"a"], producer_id=producer_id, producer_epoch=epoch,
                                        base_sequence=0)).error_code == 0
    answer = client.call("DescribeProducers", 0, {"topics": [{"name": topic, "partition_indexes": [0, 4]},
                                                             {"name": unique("missing"), "partition_indexes": [0]}]})
    known, missing = answer.topics
    assert [(p.error_code, p.error_message) for p in known.partitions[1:]] == [(3, None)]
    assert [p.producer_id for p in known.partitions[0].active_producers] == [producer_id]
    assert [(p.error_code, p.error_message) for p in missing.partitions] == \
        [(3, "This server does not host this topic-partition.")]
