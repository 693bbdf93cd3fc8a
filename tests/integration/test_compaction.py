"""Compaction through a broker process: the background cleaner turns a compacted topic into a
table (a consumer from offset 0 rebuilds the same table as one that read everything), drops
tombstones after delete.retention.ms, and keeps __consumer_offsets small under constant commits."""

from __future__ import annotations

import os
import time

import pytest

from testing.broker_process import running_broker
from client import WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch

confluent_kafka = pytest.importorskip("confluent_kafka")

OFFSETS_SEGMENT_BYTES = 8192


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with running_broker(tmp_path_factory.mktemp("compaction"), config={
        "log.cleaner.backoff.ms": 100,
        "offsets.topic.segment.bytes": OFFSETS_SEGMENT_BYTES,
        "offsets.topic.num.partitions": 1,
    }) as process:
        yield process


def create_topic(bootstrap: str, name: str, configs: dict) -> None:
    with WireClient(bootstrap) as client:
        response = client.call("CreateTopics", 7, {
            "topics": [{"name": name, "num_partitions": 1, "replication_factor": 1,
                        "configs": [{"name": k, "value": str(v)} for k, v in configs.items()]}],
            "timeout_ms": 10000, "validate_only": False})
    assert response.topics[0].error_code == 0, ErrorCode(response.topics[0].error_code)


def read_from_start(bootstrap: str, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    """(offset, key, value) of every record a consumer gets from offset 0 to the end."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
        "enable.auto.commit": False, "enable.partition.eof": True, "check.crcs": True,
    })
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error():
            if message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                break
            raise AssertionError(message.error())
        out.append((message.offset(), message.key(), message.value()))
    consumer.close()
    return out


def table_of(records) -> dict:
    table = {}
    for _, key, value in records:
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
    return table


def wait_for(condition, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_a_compacted_topic_becomes_a_table_and_tombstones_go(broker):
    topic = "table-topic"
    create_topic(broker.bootstrap, topic, {
        "cleanup.policy": "compact", "internal.segment.bytes": 32768, "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": 1000, "segment.ms": 300,
    })
    # Batches smaller than the segments (a larger one is refused with RECORD_LIST_TOO_LARGE).
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True,
                                         "compression.type": "lz4", "linger.ms": 5, "batch.size": 8192})
    failures = []
    keys = [b"key-%03d" % i for i in range(100)]
    for i in range(10_000):
        producer.produce(topic, key=keys[i * 7 % 100], value=b"value-%05d" % i,
                         on_delivery=lambda error, _: error and failures.append(error))
        if i % 1000 == 0:
            producer.poll(0)
    for key in keys[:10]:
        producer.produce(topic, key=key, value=None)  # tombstones
    assert producer.flush(30) == 0 and failures == []
    everything = read_from_start(broker.bootstrap, topic)
    expected = table_of(everything)
    assert len(expected) == 90 and all(key not in expected for key in keys[:10])
    time.sleep(0.4)
    producer.produce(topic, key=b"roll", value=b"closes the segment")  # segment.ms passed: a new segment
    assert producer.flush(30) == 0

    def cleaned():
        records = read_from_start(broker.bootstrap, topic)
        keys_seen = [key for _, key, _ in records if key != b"roll"]
        return records if len(keys_seen) == len(set(keys_seen)) else None

    records = wait_for(cleaned, what="one record per key")
    assert table_of(records) == {**expected, b"roll": b"closes the segment"}
    # Offsets are preserved: every record is where it was produced.
    by_offset = {offset: (key, value) for offset, key, value in everything}
    assert all(by_offset[offset] == (key, value) for offset, key, value in records if key != b"roll")

    # After delete.retention.ms the tombstones go too.
    records = wait_for(lambda: (r := read_from_start(broker.bootstrap, topic))
                       and all(value is not None for _, _, value in r) and r, what="tombstones to go")
    assert table_of(records) == {**expected, b"roll": b"closes the segment"}
    assert {key for _, key, _ in records} == set(expected) | {b"roll"}


def test_records_without_a_key_are_refused_by_a_compacted_topic(broker):
    topic = "keyless-refused"
    create_topic(broker.bootstrap, topic, {"cleanup.policy": "compact"})
    with WireClient(broker.bootstrap) as client:
        response = client.call("Produce", 9, {"acks": -1, "timeout_ms": 10000, "topic_data": [
            {"name": topic, "partition_data": [
                {"index": 0, "records": build_batch([Record(0, 0, None, b"no key")])}]}]})
    answer = response.responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.INVALID_RECORD
    assert "Compacted topic cannot accept message without key" in answer.error_message


def offsets_topic_bytes(broker) -> int:
    total = 0
    for name in os.listdir(broker.log_dir):
        if name.startswith("__consumer_offsets-"):
            folder = broker.log_dir / name
            total += sum(os.path.getsize(folder / f) for f in os.listdir(folder) if f.endswith(".log"))
    return total


def test_consumer_offsets_stays_small_under_constant_commits(broker):
    topic = "committed-often"
    create_topic(broker.bootstrap, topic, {})
    consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "committer",
                                         "enable.auto.commit": False})
    partition = confluent_kafka.TopicPartition(topic, 0)
    for i in range(2000):
        consumer.commit(offsets=[confluent_kafka.TopicPartition(topic, 0, i)], asynchronous=False)
    # 2000 commits are ~250 KB of records; the cleaner keeps a few segments' worth.
    wait_for(lambda: offsets_topic_bytes(broker) < 4 * OFFSETS_SEGMENT_BYTES, what="__consumer_offsets to shrink")
    assert "cleaned __consumer_offsets-0" in broker.log_path.read_text()
    assert consumer.committed([partition], timeout=10)[0].offset == 1999
    consumer.close()
