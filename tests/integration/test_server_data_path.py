"""The server's data path as a client sees it: large frames, pipelining split at any byte,
fetched log bytes (sent with sendfile) arriving intact and in order, slow readers, backpressure,
acks=0, half-closed clients, and the same answers with sendfile turned off."""

from __future__ import annotations

import os
import socket
import struct
import time

import pytest

from testing.broker_process import running_broker
from client import WireClient
from kafka_wire.record_codec import Record, build_batch
from kafka_wire.records import iter_batch_headers

FETCH_VERSION = 4
PRODUCE_VERSION = 7


def _batch(count: int, size: int, seed: int = 0) -> bytes:
    payload = bytes((seed + i) % 251 for i in range(size))
    return build_batch([Record(i, 0, None, payload) for i in range(count)])


def _produce_body(topic: str, batch: bytes, acks: int = 1) -> dict:
    return {"transactional_id": None, "acks": acks, "timeout_ms": 30000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}


def _fetch_body(topic: str, offset: int, partition_max: int = 1 << 20, partition: int = 0) -> dict:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 50 << 20,
            "isolation_level": 0, "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "fetch_offset": offset, "partition_max_bytes": partition_max}]}]}


def _create_topic(client: WireClient, topic: str, partitions: int = 1) -> None:
    response = client.call("CreateTopics", 4, {"topics": [
        {"name": topic, "num_partitions": partitions, "replication_factor": 1, "assignments": [], "configs": []}],
        "timeout_ms": 10000, "validate_only": False})
    assert response.topics[0].error_code == 0


def _produce(client: WireClient, topic: str, batch: bytes) -> int:
    response = client.call("Produce", PRODUCE_VERSION, _produce_body(topic, batch))
    partition = response.responses[0].partition_responses[0]
    assert partition.error_code == 0
    return partition.base_offset


def _fetch_all(client: WireClient, topic: str, end_offset: int, partition_max: int = 1 << 20,
               partition: int = 0) -> bytes:
    """Every batch from offset 0 up to end_offset, as the bytes the broker sent."""
    data = bytearray()
    offset = 0
    while offset < end_offset:
        response = client.call("Fetch", FETCH_VERSION, _fetch_body(topic, offset, partition_max, partition))
        answer = response.responses[0].partitions[0]
        assert answer.error_code == 0
        records = bytes(answer.records)
        assert records, f"no data at offset {offset} of {end_offset}"
        data += records
        *_, (_, last) = iter_batch_headers(records)
        offset = last.last_offset + 1
    return bytes(data)


def _without_offsets(data: bytes) -> list[bytes]:
    """The batches in `data` with the broker-assigned fields (base offset, leader epoch) blanked."""
    out = []
    for pos, header in iter_batch_headers(data):
        batch = bytearray(data[pos : pos + header.size])
        batch[0:8] = bytes(8)
        batch[12:16] = bytes(4)
        out.append(bytes(batch))
    return out


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap, timeout=30) as c:
        yield c


def test_large_produce_frames_and_fetched_log_bytes_round_trip(client):
    """Produce requests of several MB (read straight into their own buffer) and fetches that send
    the log file's bytes: what comes back is exactly what was sent, batch for batch."""
    topic = "server-roundtrip"
    _create_topic(client, topic, partitions=3)
    sent = [_batch(count, size, seed) for seed, (count, size) in
            enumerate([(1, 10), (900, 1000), (5, 70_000), (200, 100), (1, 1_000_000)])]
    offsets = [_produce(client, topic, batch) for batch in sent]
    assert offsets == [0, 1, 901, 906, 1106]
    # One request of ~2.7 MB carrying a batch for each partition.
    big = [_batch(900, 1000, 10 + p) for p in range(3)]
    response = client.call("Produce", PRODUCE_VERSION, {
        "transactional_id": None, "acks": 1, "timeout_ms": 30000, "topic_data": [{"name": topic, "partition_data": [
            {"index": p, "records": big[p]} for p in range(3)]}]})
    assert [(p.error_code, p.base_offset) for p in response.responses[0].partition_responses] == \
        [(0, 1107), (0, 0), (0, 0)]
    sent.append(big[0])
    for partition_max in (1 << 20, 64 << 10, 8 << 20):
        fetched = _fetch_all(client, topic, 2007, partition_max)
        assert _without_offsets(fetched) == [_without_offsets(b)[0] for b in sent]
    for p in (1, 2):
        assert _without_offsets(_fetch_all(client, topic, 900, partition=p)) == _without_offsets(big[p])


def test_pipelined_requests_split_at_every_byte_boundary_are_answered_in_order(client):
    """Frames arriving in arbitrary pieces (a large frame's size prefix alone, a small frame split
    in two, several frames in one segment) are framed correctly and answered in order."""
    topic = "server-split"
    _create_topic(client, topic)
    frames = []
    for i, (count, size) in enumerate([(1, 5), (50, 1000), (1, 40_000), (10, 3), (1, 300_000), (2, 2)]):
        frames.append(client.frame("Produce", PRODUCE_VERSION, _produce_body(topic, _batch(count, size, i))))
        frames.append(client.frame("Metadata", 9, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}))
    first_id = client.correlation_id - len(frames) + 1
    stream = b"".join(frames)
    pieces = [1, 3, 4, 7, 2, 100, 5000, 1, 65536, 3, 99_999]
    pos = 0
    for piece in pieces * 100:
        if pos >= len(stream):
            break
        client.send_raw(stream[pos : pos + piece])
        pos += piece
        if piece < 10:
            time.sleep(0.001)  # let the broker see the short pieces on their own
    client.send_raw(stream[pos:])
    seen = []
    base_offsets = []
    for i in range(len(frames)):
        frame = client.read_frame()
        correlation_id = struct.unpack(">i", frame[:4])[0]
        seen.append(correlation_id)
        if i % 2 == 0:
            client.correlation_id = correlation_id
            response = client.decode_response("Produce", PRODUCE_VERSION, frame)
            base_offsets.append(response.responses[0].partition_responses[0].base_offset)
    assert seen == list(range(first_id, first_id + len(frames)))
    assert base_offsets == [0, 1, 51, 52, 62, 63]


def test_pipelined_large_frames_each_keep_their_own_bytes(client):
    """Large frames back to back (each read into a buffer that the next one may reuse once the
    previous request is done with it): every batch is stored as sent."""
    topic = "server-pipelined-large"
    _create_topic(client, topic)
    batches = [_batch(count, size, seed) for seed, (count, size) in
               enumerate([(900, 1000), (400, 1000), (1, 20_000), (700, 1000), (3, 300_000)])]
    client.send_raw(b"".join(client.frame("Produce", PRODUCE_VERSION, _produce_body(topic, b)) for b in batches))
    first_id = client.correlation_id - len(batches) + 1
    for i in range(len(batches)):
        frame = client.read_frame()
        client.correlation_id = first_id + i
        response = client.decode_response("Produce", PRODUCE_VERSION, frame)
        assert response.responses[0].partition_responses[0].error_code == 0
    fetched = _fetch_all(client, topic, 2004)
    assert _without_offsets(fetched) == [_without_offsets(b)[0] for b in batches]


def test_slow_reader_gets_every_byte_and_holds_back_its_next_request(shared_broker, client):
    """A consumer that stops reading: its fetch response stays unsent (the socket is full), the
    broker handles none of its next requests meanwhile (Kafka's one-request-at-a-time), other
    connections are served, and once it reads it gets everything intact and in order."""
    topic = "server-slow-reader"
    _create_topic(client, topic)
    batches = [_batch(1000, 1000, seed) for seed in range(12)]  # ~12 MB
    for batch in batches:
        _produce(client, topic, batch)
    with WireClient(shared_broker.bootstrap, timeout=30) as slow:
        slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        fetch = slow.frame("Fetch", FETCH_VERSION, _fetch_body(topic, 0, partition_max=50 << 20))
        fetch_id = slow.correlation_id
        produce = slow.frame("Produce", PRODUCE_VERSION, _produce_body(topic, _batch(1, 10, 99)))
        slow.send_raw(fetch + produce)
        time.sleep(1.0)
        # The pipelined produce waits behind the unsent fetch response: the log did not grow.
        response = client.call("ListOffsets", 1, {"replica_id": -1, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
        assert response.topics[0].partitions[0].offset == 12_000
        frame = slow.read_frame()
        assert struct.unpack(">i", frame[:4])[0] == fetch_id
        slow.correlation_id = fetch_id
        records = bytes(slow.decode_response("Fetch", FETCH_VERSION, frame).responses[0].partitions[0].records)
        assert _without_offsets(records) == [_without_offsets(b)[0] for b in batches]
        frame = slow.read_frame()
        assert struct.unpack(">i", frame[:4])[0] == fetch_id + 1
    response = client.call("ListOffsets", 1, {"replica_id": -1, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    assert response.topics[0].partitions[0].offset == 12_001


def test_acks_zero_gets_no_answer_and_the_next_request_does(client):
    topic = "server-acks0"
    _create_topic(client, topic)
    client.send_raw(client.frame("Produce", PRODUCE_VERSION, _produce_body(topic, _batch(3, 10), acks=0)))
    response = client.call("ListOffsets", 1, {"replica_id": -1, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    assert response.topics[0].partitions[0].offset == 3


def test_half_closed_client_still_gets_its_answers(shared_broker):
    """A client that sends its requests and then shuts its sending side down is answered, then closed."""
    with WireClient(shared_broker.bootstrap, timeout=30) as c:
        frames = b"".join(c.frame("ApiVersions", 2, {}) for _ in range(5))
        c.send_raw(frames)
        c.sock.shutdown(socket.SHUT_WR)
        ids = [struct.unpack(">i", c.read_frame()[:4])[0] for _ in range(5)]
        assert ids == [1, 2, 3, 4, 5]
        assert c.sock.recv(1) == b""


def test_fetch_answers_are_the_same_without_sendfile(tmp_path, monkeypatch):
    """KAFKA_WIRE_SENDFILE=0 (used by the benchmark to measure sendfile's effect) reads the slices
    into memory instead; clients see the same bytes."""
    monkeypatch.setenv("KAFKA_WIRE_SENDFILE", "0")
    with running_broker(tmp_path / "nosendfile") as broker, WireClient(broker.bootstrap, timeout=30) as c:
        topic = "server-nosendfile"
        _create_topic(c, topic)
        batches = [_batch(500, 1000, seed) for seed in range(5)]
        for batch in batches:
            _produce(c, topic, batch)
        fetched = _fetch_all(c, topic, 2500, partition_max=1 << 20)
        assert _without_offsets(fetched) == [_without_offsets(b)[0] for b in batches]
    assert os.environ["KAFKA_WIRE_SENDFILE"] == "0"
