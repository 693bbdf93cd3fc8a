"""The streams group records of __consumer_offsets (KIP-1071, record types 17 and 19-23) as Apache
Kafka 4.3.0 writes them and as kafka-wire writes them: a member joins the same group with the same
topology on both; every streams record Kafka wrote decodes with kafka-wire's schemas (all bytes
consumed, so a field missing or extra fails), kafka-wire writes the same record types, and the
topology record, which depends on the request alone, is byte for byte Kafka's. The group metadata
record's metadata hash is, on each broker, coordinator/metadata_hash.py's hash of the topology's
required topics (the source and changelog topics, with that broker's topic ids; Kafka 4.3's
StreamsTopology.requiredTopics), and both record the same assignment configs."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

import uuid

from compat.reference_kafka import KAFKA_4
from coordinator.metadata_hash import group_hash, topic_hash
from kafka_wire.internal_records import (
    STREAMS_GROUP_METADATA,
    STREAMS_GROUP_TOPOLOGY,
    STREAMS_GROUP_VALUES,
    decode_streams_group_record,
)
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


def required_topics_hash(bootstrap: str) -> int:
    """The hash Kafka 4.3 records for the group: its required topics (the source topic and the
    changelog topic) by this broker's topic ids, partition counts, no racks."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient

    names = [TOPIC, f"{GROUP}-store-changelog"]
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: the futures need the client alive
    described = admin.describe_topics(TopicCollection(names))
    hashes = {}
    for name in names:
        topic = described[name].result(30)
        raw = topic.topic_id
        topic_id = uuid.UUID(bytes=(raw.get_most_significant_bits() & (2**64 - 1)).to_bytes(8, "big")
                             + (raw.get_least_significant_bits() & (2**64 - 1)).to_bytes(8, "big"))
        hashes[name] = topic_hash(topic_id, name, [[] for _ in topic.partitions])
    return group_hash(hashes)


def group_metadata(records) -> list:
    return [decode_streams_group_record(key, value)[3] for t, key, value in records
            if t == STREAMS_GROUP_METADATA and value is not None]


def joined(bootstrap: str) -> list[tuple[int, bytes, bytes | None]]:
    create_topics(bootstrap)
    member = streams_member(bootstrap, GROUP, "records-member", TOPOLOGY, timeout=60)
    member.close()
    return streams_records(bootstrap)


@pytest.mark.timeout(300)
def test_kafka_written_streams_records_decode_and_ours_match(reference_kafka, tmp_path):
    kafka = reference_kafka(KAFKA_4)
    theirs = joined(kafka.bootstrap)
    their_hash = required_topics_hash(kafka.bootstrap)
    with running_broker(tmp_path / "ours") as broker:
        ours = joined(broker.bootstrap)
        our_hash = required_topics_hash(broker.bootstrap)
    assert theirs, "Kafka wrote no streams group record"
    for record_type, key, value in theirs:
        decoded = decode_streams_group_record(key, value)  # raises on a schema mismatch
        assert decoded[0] == record_type and decoded[1] == GROUP
    assert {t for t, _, _ in ours} == {t for t, _, _ in theirs}
    topology = {t: v for t, _, v in theirs if t == STREAMS_GROUP_TOPOLOGY}
    assert [v for t, _, v in ours if t == STREAMS_GROUP_TOPOLOGY][-1] == topology[STREAMS_GROUP_TOPOLOGY]
    their_metadata, our_metadata = group_metadata(theirs), group_metadata(ours)
    assert their_hash in {m.metadata_hash for m in their_metadata}, (their_hash, their_metadata)
    assert our_hash in {m.metadata_hash for m in our_metadata}, (our_hash, our_metadata)

    def configs(m) -> list:
        return [(kv.key, kv.value) for kv in m.last_assignment_configs or ()]
    assert configs(our_metadata[-1]) == configs(their_metadata[-1]) == [("num.standby.replicas", "0")]
