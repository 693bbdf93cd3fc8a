"""Restart: acknowledged records survive SIGTERM and SIGKILL at the same offsets, appends continue,
and an idempotent producer's retried batch is recognised after the restart."""

from __future__ import annotations

import signal

import pytest

from client import WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch, decode_batches

TOPIC = "restart-topic"


def _produce(client: WireClient, batch: bytes, partition: int = 0, acks: int = -1):
    response = client.call("Produce", 9, {
        "acks": acks, "timeout_ms": 10000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": partition, "records": batch}]}]})
    return response.responses[0].partition_responses[0]


def _fetch_all(client: WireClient, partition: int = 0) -> list[tuple[int, bytes]]:
    out = []
    offset = 0
    while True:
        response = client.call("Fetch", 12, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "topics": [{"topic": TOPIC, "partitions": [
                {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]})
        part = response.responses[0].partitions[0]
        assert part.error_code == 0, ErrorCode(part.error_code)
        batches = list(decode_batches(bytes(part.records or b"")))
        if not batches:
            return out
        for header, records in batches:
            for record in records:
                absolute = header.base_offset + record.offset_delta
                if absolute >= offset:
                    out.append((absolute, record.value))
            offset = header.next_offset


def _batch(values: list[bytes], **kwargs) -> bytes:
    return build_batch([Record(i, 0, b"key", v) for i, v in enumerate(values)], **kwargs)


def _create_topic(client: WireClient, partitions: int = 1) -> None:
    response = client.call("CreateTopics", 7, {"topics": [
        {"name": TOPIC, "num_partitions": partitions, "replication_factor": 1}], "timeout_ms": 5000})
    assert response.topics[0].error_code == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_acknowledged_records_survive_restart(broker, sig):
    with WireClient(broker.bootstrap) as client:
        _create_topic(client)
        acked = []
        for i in range(50):
            values = [b"v%d-%d" % (i, j) for j in range(3)]
            result = _produce(client, _batch(values, compression=i % 5))
            assert result.error_code == 0
            acked += [(result.base_offset + j, v) for j, v in enumerate(values)]
    broker.restart(sig)
    with WireClient(broker.bootstrap) as client:
        assert _fetch_all(client) == acked
        result = _produce(client, _batch([b"after"]))
        assert result.error_code == 0 and result.base_offset == len(acked)
        listed = client.call("ListOffsets", 7, {"replica_id": -1, "topics": [
            {"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
        assert listed.topics[0].partitions[0].offset == len(acked) + 1


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_idempotent_retry_after_restart_is_not_duplicated(broker, sig):
    with WireClient(broker.bootstrap) as client:
        _create_topic(client)
        init = client.call("InitProducerId", 4, {"transactional_id": None, "transaction_timeout_ms": 60000,
                                                  "producer_id": -1, "producer_epoch": -1})
        assert init.error_code == 0
        pid, epoch = init.producer_id, init.producer_epoch
        first = _batch([b"a", b"b"], producer_id=pid, producer_epoch=epoch, base_sequence=0)
        second = _batch([b"c"], producer_id=pid, producer_epoch=epoch, base_sequence=2)
        assert _produce(client, first).base_offset == 0
        assert _produce(client, second).base_offset == 2
    broker.restart(sig)
    with WireClient(broker.bootstrap) as client:
        # The producer never saw the acks and retries both batches: same offsets, nothing appended.
        retried = _produce(client, first)
        assert (retried.error_code, retried.base_offset) == (0, 0)
        retried = _produce(client, second)
        assert (retried.error_code, retried.base_offset) == (0, 2)
        assert [v for _, v in _fetch_all(client)] == [b"a", b"b", b"c"]
        # The next sequence continues; a gap is refused.
        nxt = _produce(client, _batch([b"d"], producer_id=pid, producer_epoch=epoch, base_sequence=3))
        assert (nxt.error_code, nxt.base_offset) == (0, 3)
        gap = _produce(client, _batch([b"x"], producer_id=pid, producer_epoch=epoch, base_sequence=7))
        assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        # A new id after restart never repeats one handed out before it.
        again = client.call("InitProducerId", 4, {"transactional_id": None, "transaction_timeout_ms": 60000,
                                                   "producer_id": -1, "producer_epoch": -1})
        assert again.producer_id != pid


def test_topic_metadata_and_ids_survive_restart(broker):
    with WireClient(broker.bootstrap) as client:
        _create_topic(client, partitions=4)
        before = client.call("Metadata", 12, {"topics": None, "allow_auto_topic_creation": False})
    broker.restart(signal.SIGKILL)
    with WireClient(broker.bootstrap) as client:
        after = client.call("Metadata", 12, {"topics": None, "allow_auto_topic_creation": False})
    assert after.cluster_id == before.cluster_id
    assert [(t.name, t.topic_id, len(t.partitions)) for t in after.topics] == \
           [(t.name, t.topic_id, len(t.partitions)) for t in before.topics]


def test_timestamp_lookup_in_a_corrupt_segment_answers_corrupt_message(broker):
    """A ListOffsets by timestamp that must read a batch whose CRC fails answers that partition
    with CORRUPT_MESSAGE; the connection and the rest of the log stay usable."""
    with WireClient(broker.bootstrap) as client:
        response = client.call("CreateTopics", 7, {"topics": [
            {"name": TOPIC, "num_partitions": 1, "replication_factor": 1,
             "configs": [{"name": "internal.segment.bytes", "value": "200"}]}], "timeout_ms": 5000})
        assert response.topics[0].error_code == 0
        for i in range(4):
            batch = build_batch([Record(0, 0, b"k", b"x" * 120)], base_timestamp=1_000_000 + i * 1000)
            assert _produce(client, batch).error_code == 0
    broker.stop()
    first_segment = broker.data_dir / "logs" / f"{TOPIC}-0" / ("0" * 20 + ".log")
    data = bytearray(first_segment.read_bytes())
    data[-10] ^= 0xFF  # inside the first batch's record, covered by its CRC
    first_segment.write_bytes(bytes(data))
    broker.start()
    with WireClient(broker.bootstrap) as client:
        listed = client.call("ListOffsets", 7, {"replica_id": -1, "topics": [
            {"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": 1_000_000}]}]})
        assert listed.topics[0].partitions[0].error_code == ErrorCode.CORRUPT_MESSAGE
        later = client.call("ListOffsets", 7, {"replica_id": -1, "topics": [
            {"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": 1_002_000}]}]})
        assert (later.topics[0].partitions[0].error_code, later.topics[0].partitions[0].offset) == (0, 2)
