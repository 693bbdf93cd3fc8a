"""Retention through a broker process: whole segments go by time (retention.ms, by record
timestamps) and by size (retention.bytes) on the log.retention.check.interval.ms schedule;
DeleteRecords moves the log start offset, and reads below it answer OFFSET_OUT_OF_RANGE, also
after a crash."""

from __future__ import annotations

import time

import pytest

from testing.broker_process import running_broker
from client import WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch, decode_batches

CHECK_INTERVAL_MS = 200


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with running_broker(tmp_path_factory.mktemp("retention"),
                        config={"log.retention.check.interval.ms": CHECK_INTERVAL_MS}) as process:
        yield process


@pytest.fixture
def client(broker):
    with WireClient(broker.bootstrap) as c:
        yield c


def create_topic(client: WireClient, name: str, configs: dict) -> None:
    response = client.call("CreateTopics", 7, {
        "topics": [{"name": name, "num_partitions": 1, "replication_factor": 1,
                    "configs": [{"name": k, "value": str(v)} for k, v in configs.items()]}],
        "timeout_ms": 10000, "validate_only": False})
    assert response.topics[0].error_code == 0, ErrorCode(response.topics[0].error_code)


def produce(client: WireClient, topic: str, values: list[bytes], timestamp: int | None = None) -> int:
    records = [Record(i, 0, b"k", v) for i, v in enumerate(values)]
    response = client.call("Produce", 9, {"acks": -1, "timeout_ms": 10000, "topic_data": [
        {"name": topic, "partition_data": [
            {"index": 0, "records": build_batch(records, base_timestamp=timestamp or now_ms())}]}]})
    answer = response.responses[0].partition_responses[0]
    assert answer.error_code == 0, ErrorCode(answer.error_code)
    return answer.base_offset


def fetch(client: WireClient, topic: str, offset: int):
    response = client.call("Fetch", 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
        "topics": [{"topic": topic, "partitions": [
            {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]})
    return response.responses[0].partitions[0]


def offsets_from(client: WireClient, topic: str, offset: int) -> list[int]:
    part = fetch(client, topic, offset)
    assert part.error_code == 0, ErrorCode(part.error_code)
    return [h.base_offset + r.offset_delta for h, rs in decode_batches(bytes(part.records or b"")) for r in rs]


def list_offset(client: WireClient, topic: str, timestamp: int) -> int:
    response = client.call("ListOffsets", 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": timestamp}]}]})
    part = response.topics[0].partitions[0]
    assert part.error_code == 0, ErrorCode(part.error_code)
    return part.offset


def wait_for(condition, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_retention_by_time_deletes_old_segments_and_keeps_recent_ones(client):
    topic = "retention-by-time"
    create_topic(client, topic, {"retention.ms": 60_000, "internal.segment.bytes": 1000})
    old = now_ms() - 3_600_000  # an hour ago: past retention.ms
    for i in range(20):
        produce(client, topic, [b"old-%02d" % i + b"." * 40], timestamp=old)
    first_recent = produce(client, topic, [b"recent-0" + b"." * 40])
    for i in range(1, 10):
        produce(client, topic, [b"recent-%d" % i + b"." * 40])
    # The segments holding only old records go; the one where recent records start stays.
    earliest = wait_for(lambda: (o := list_offset(client, topic, -2)) > 0 and o)
    assert 0 < earliest <= first_recent
    assert list_offset(client, topic, -1) == first_recent + 10
    assert fetch(client, topic, 0).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert offsets_from(client, topic, first_recent)[0] == first_recent


def test_retention_by_time_removes_everything_when_all_expired_and_appends_continue(client):
    topic = "retention-all-expired"
    create_topic(client, topic, {"retention.ms": 500, "internal.segment.bytes": 100_000})
    for i in range(10):
        produce(client, topic, [b"v%d" % i])
    wait_for(lambda: list_offset(client, topic, -2) == 10)
    assert fetch(client, topic, 3).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert produce(client, topic, [b"next"]) == 10
    assert offsets_from(client, topic, 10) == [10]


def test_retention_by_size_keeps_the_log_under_retention_bytes(client):
    topic = "retention-by-size"
    create_topic(client, topic, {"retention.bytes": 3000, "internal.segment.bytes": 1000})
    value = b"." * 50
    batch_size = len(build_batch([Record(0, 0, b"k", b"value-000" + value)]))
    for i in range(100):
        produce(client, topic, [b"value-%03d" % i + value])
    # Oldest segments go while the rest still holds retention.bytes: what is left is less than the
    # limit plus one segment.
    earliest = wait_for(lambda: (o := list_offset(client, topic, -2)) > 0
                        and (100 - o) * batch_size < 3000 + 1000 and o)
    assert (100 - earliest) * batch_size >= 3000
    assert offsets_from(client, topic, earliest)[0] == earliest
    assert fetch(client, topic, earliest - 1).error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def delete_records(client: WireClient, topic: str, offset: int):
    response = client.call("DeleteRecords", 2, {"timeout_ms": 10000, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "offset": offset}]}]})
    return response.topics[0].partitions[0]


def test_delete_records_moves_the_log_start_offset_and_survives_a_crash(tmp_path):
    topic = "delete-records"
    with running_broker(tmp_path, config={"log.flush.scheduler.interval.ms": 100}) as broker:
        with WireClient(broker.bootstrap) as client:
            create_topic(client, topic, {"internal.segment.bytes": 500})
            for i in range(30):
                produce(client, topic, [b"value-%02d" % i + b"." * 30])
            answer = delete_records(client, topic, 17)
            assert (answer.error_code, answer.low_watermark) == (0, 17)
            assert list_offset(client, topic, -2) == 17
            assert fetch(client, topic, 16).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
            assert offsets_from(client, topic, 17)[0] == 17
            time.sleep(0.5)  # the scheduled flush writes the log start offset checkpoint
        broker.kill()
        broker.start()
        with WireClient(broker.bootstrap) as client:
            assert list_offset(client, topic, -2) == 17
            assert fetch(client, topic, 5).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
            assert offsets_from(client, topic, 17)[0] == 17
            assert produce(client, topic, [b"after"]) == 30
