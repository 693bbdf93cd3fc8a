"""The streams group records of __consumer_offsets (KIP-1071, record types 17 and 19-23) as Apache
Kafka 4.3.0 writes them and as kafka-wire writes them: a member joins the same group with the same
topology on both; every streams record Kafka wrote decodes with kafka-wire's schemas (all bytes
consumed, so a field missing or extra fails), kafka-wire writes the same record types, and the
topology record, which depends on the request alone, is byte for byte Kafka's."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from compat.reference_kafka import KAFKA_4
from kafka_wire.internal_records import STREAMS_GROUP_TOPOLOGY, STREAMS_GROUP_VALUES, decode_streams_group_record
from testing.broker_process import running_broker
from testing.streams_groups import streams_member

GROUP = "records-streams-app"
TOPIC = "records-streams-in"
TOPOLOGY = {"epoch": 0, "subtopologies": [{
    "subtopology_id": "0", "source_topics": [TOPIC], "source_topic_regex": [],
    "state_changelog_topics": [{"name": f"{GROUP}-store-changelog", "partitions": 0, "replication_factor": 1,
                                "topic_configs": [{"key": "cleanup.policy", "value": "compact"}]}],
    "repartition_sink_topics": [], "repartition_source_topics": [], "copartition_groups": []}]}


def streams_records(bootstrap: str) -> list[tuple[int, bytes, bytes | None]]:
    """(record type, key, value) of every streams group record in __consumer_offsets."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "records-reader", "enable.auto.commit": False,
                         "enable.partition.eof": True, "isolation.level": "read_uncommitted"})
    try:
        metadata = consumer.list_topics("__consumer_offsets", timeout=30)
        partitions = list(metadata.topics["__consumer_offsets"].partitions)
        consumer.assign([TopicPartition("__consumer_offsets", p, 0) for p in partitions])
        at_end: set[int] = set()
        found = []
        while len(at_end) < len(partitions):
            message = consumer.poll(10)
            assert message is not None, "no end of __consumer_offsets within 10 s"
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                at_end.add(message.partition())
                continue
            key = message.key()
            if key and len(key) >= 2 and int.from_bytes(key[:2], "big") in STREAMS_GROUP_VALUES:
                found.append((int.from_bytes(key[:2], "big"), key, message.value()))
        return found
    finally:
        consumer.close()


def create_topics(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
        future.result(30)


def joined(bootstrap: str) -> list[tuple[int, bytes, bytes | None]]:
    create_topics(bootstrap)
    member = streams_member(bootstrap, GROUP, "records-member", TOPOLOGY, timeout=60)
    member.close()
    return streams_records(bootstrap)


@pytest.mark.timeout(300)
def test_kafka_written_streams_records_decode_and_ours_match(reference_kafka, tmp_path):
    kafka = reference_kafka(KAFKA_4)
    theirs = joined(kafka.bootstrap)
    with running_broker(tmp_path / "ours") as broker:
        ours = joined(broker.bootstrap)
    assert theirs, "Kafka wrote no streams group record"
    for record_type, key, value in theirs:
        decoded = decode_streams_group_record(key, value)  # raises on a schema mismatch
        assert decoded[0] == record_type and decoded[1] == GROUP
    assert {t for t, _, _ in ours} == {t for t, _, _ in theirs}
    topology = {t: v for t, _, v in theirs if t == STREAMS_GROUP_TOPOLOGY}
    assert [v for t, _, v in ours if t == STREAMS_GROUP_TOPOLOGY][-1] == topology[STREAMS_GROUP_TOPOLOGY]
