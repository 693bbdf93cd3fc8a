"""Load generators for the benchmark: librdkafka (confluent-kafka) producers and consumers, one process each.

Run by bench.run as `python -m bench.load ROLE --json PARAMS`. Each process connects, fetches
metadata, prints `ready`, waits for a line on stdin (so that several processes start together),
runs, and prints one JSON line with what it measured (times are CLOCK_MONOTONIC seconds, which
all processes on a machine share). The client is C; the Python loop around it costs about a
microsecond per message, so one process drives a few hundred thousand messages a second.
"""

from __future__ import annotations

import json
import os
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaException, Producer, TopicPartition

from kafka_wire.framing import SIZE_BYTES, decode_response_frame, encode_request_frame, read_frame_size


def _ready_then_wait_for_go() -> None:
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        sys.exit(0)


def _producer_config(params: dict) -> dict:
    config = {
        "bootstrap.servers": params["bootstrap"],
        "acks": str(params.get("acks", 1)),
        "linger.ms": params.get("linger_ms", 5),
        "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1_048_576,
        "delivery.report.only.error": True,
        "enable.idempotence": False,
        "compression.type": "none",
    }
    config.update(params.get("producer_config", {}))
    return config


def produce(params: dict) -> dict:
    """Send `count` messages of `size` bytes spread over `connections` producer instances.

    Messages go to partitions round-robin when `partitions` is given (every partition busy, as
    many independent keys would make it), else librdkafka's default partitioner decides.
    """
    connections = params.get("connections", 1)
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))

    producers = [Producer(_producer_config(params)) for _ in range(connections)]
    topic = params["topic"]
    for p in producers:
        p.list_topics(topic, timeout=30)
    count, size = params["count"], params["size"]
    partitions = params.get("partitions")
    payload = os.urandom(size)
    _ready_then_wait_for_go()
    start = time.monotonic()
    for i in range(count):
        p = producers[i % connections]
        while True:
            try:
                if partitions:
                    p.produce(topic, payload, partition=i % partitions, on_delivery=on_delivery)
                else:
                    p.produce(topic, payload, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.001)
        if i % 4096 == 0:
            p.poll(0)
    remaining = sum(p.flush(120) for p in producers)
    end = time.monotonic()
    return {"start": start, "end": end, "messages": count - remaining - len(errors),
            "bytes": (count - remaining - len(errors)) * size, "errors": errors[:5], "error_count": len(errors),
            "undelivered": remaining}


def consume(params: dict) -> dict:
    """Read `count` messages from the start of every partition of a topic (assign, no group)."""
    config = {
        "bootstrap.servers": params["bootstrap"],
        "group.id": "bench-unused",  # required by the client; assign() never joins it
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        "fetch.wait.max.ms": 100,
    }
    config.update(params.get("consumer_config", {}))
    consumer = Consumer(config)
    topic = params["topic"]
    metadata = consumer.list_topics(topic, timeout=30)
    partitions = sorted(metadata.topics[topic].partitions)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    count = params["count"]
    deadline_seconds = params.get("timeout", 300)
    _ready_then_wait_for_go()
    start = time.monotonic()
    got = 0
    nbytes = 0
    errors = []
    while got < count and time.monotonic() - start < deadline_seconds:
        for msg in consumer.consume(100_000, 0.5):
            if msg.error():
                errors.append(str(msg.error()))
                continue
            got += 1
            nbytes += len(msg)
    end = time.monotonic()
    consumer.close()
    return {"start": start, "end": end, "messages": got, "bytes": nbytes, "errors": errors[:5],
            "error_count": len(errors)}


def latency_consume(params: dict) -> dict:
    """Receive messages stamped with their send time; report end-to-end latency percentiles."""
    config = {
        "bootstrap.servers": params["bootstrap"],
        "group.id": "bench-unused",
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 100,
        "fetch.error.backoff.ms": 10,
    }
    consumer = Consumer(config)
    topic = params["topic"]
    consumer.list_topics(topic, timeout=30)
    consumer.assign([TopicPartition(topic, 0, OFFSET_END)])
    # Let the consumer resolve the end offset and start fetching before the producer starts.
    consumer.consume(1, 1.0)
    _ready_then_wait_for_go()
    count, warmup = params["count"], params.get("warmup", 0)
    latencies = []
    slow = []  # (seconds since start, latency ms) of the first messages slower than 20 ms
    start = time.monotonic()
    start_ns = time.monotonic_ns()
    seen = 0
    while seen < count and time.monotonic() - start < params.get("timeout", 60):
        # poll() returns as soon as a message is there (consume(n) would wait to fill a batch).
        msg = consumer.poll(0.1)
        if msg is None or msg.error():
            continue
        now = time.monotonic_ns()
        seen += 1
        if seen > warmup:
            latency = now - int.from_bytes(msg.value()[:8], "big")
            latencies.append(latency)
            if latency > 20_000_000 and len(slow) < 50:
                slow.append((round((now - start_ns) / 1e9, 3), round(latency / 1e6, 1)))
    consumer.close()
    latencies.sort()

    def pct(p):
        return latencies[min(len(latencies) - 1, int(len(latencies) * p))] / 1e6 if latencies else None

    return {"messages": seen, "measured": len(latencies), "p50_ms": pct(0.50), "p99_ms": pct(0.99),
            "max_ms": latencies[-1] / 1e6 if latencies else None, "slow": slow}


def latency_produce(params: dict) -> dict:
    """Send `rate` messages a second for `count` messages, each stamped with its send time."""
    # linger.ms=1: a batch closes 1 ms after its first message. With 0, librdkafka sends every
    # message as its own request (10k requests/s), which measures per-request cost, not latency.
    config = _producer_config({**params, "linger_ms": params.get("linger_ms", 1)})
    producer = Producer(config)
    topic = params["topic"]
    producer.list_topics(topic, timeout=30)
    padding = os.urandom(max(0, params.get("size", 100) - 8))
    rate, count = params["rate"], params["count"]
    _ready_then_wait_for_go()
    start = time.monotonic_ns()
    interval = 1_000_000_000 / rate
    for i in range(count):
        due = start + int(i * interval)
        while True:
            now = time.monotonic_ns()
            if now >= due:
                break
            if due - now > 200_000:
                producer.poll((due - now - 100_000) / 1e9)
        producer.produce(topic, now.to_bytes(8, "big") + padding, partition=0)
        producer.poll(0)
    producer.flush(30)
    return {"messages": count, "seconds": (time.monotonic_ns() - start) / 1e9}


class _FrameReader:
    """Reads frames into one reused buffer (replaced by a bigger one when needed) with recv_into,
    so that the client's copying does not limit what the raw rows measure of the broker; the
    size prefix is kafka_wire.framing's."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray(1 << 20)

    def _fill(self, view: memoryview, got: int, want: int) -> None:
        while got < want:
            n = self.sock.recv_into(view[got:want])
            if not n:
                raise ConnectionError("broker closed the connection")
            got += n

    def read(self) -> memoryview:
        view = memoryview(self.buf)
        self._fill(view, 0, SIZE_BYTES)
        end = SIZE_BYTES + read_frame_size(self.buf, 0)
        if end > len(self.buf):
            self.buf = bytearray(self.buf[:SIZE_BYTES]) + bytearray(end - SIZE_BYTES)
            view = memoryview(self.buf)
        self._fill(view, SIZE_BYTES, end)
        return view[SIZE_BYTES:end]


def _wire_request(api_name: str, version: int, body, correlation_id: int) -> bytes:
    from kafka_wire.messages import APIS_BY_NAME

    return encode_request_frame(APIS_BY_NAME[api_name], version, correlation_id, "bench-raw", body)


def _wire_connect(bootstrap: str):
    import socket

    host, _, port = bootstrap.rpartition(":")
    sock = socket.create_connection((host, int(port)), timeout=60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def raw_produce(params: dict) -> dict:
    """Send the same pre-built Produce request (one ~`batch_bytes` batch) `requests` times with
    `in_flight` requests outstanding: the client does no per-record work, so only the broker's
    cost shows."""
    from kafka_wire.messages import APIS_BY_NAME
    from kafka_wire.record_codec import Record, build_batch

    size, batch_bytes = params["size"], params.get("batch_bytes", 1 << 20)
    per_batch = max(1, batch_bytes // (size + 10))
    payload = os.urandom(size)
    batch = build_batch([Record(i, 0, None, payload) for i in range(per_batch)])
    acks = params.get("acks", 1)
    body = {"transactional_id": None, "acks": acks, "timeout_ms": 30000,
            "topic_data": [{"name": params["topic"], "partition_data": [{"index": 0, "records": batch}]}]}
    version = 7
    request = _wire_request("Produce", version, body, 1)  # the same request each time: every answer is to 1
    produce_api = APIS_BY_NAME["Produce"]
    sock = _wire_connect(params["bootstrap"])
    requests, in_flight = params["requests"], params.get("in_flight", 5)
    reader = _FrameReader(sock)
    _ready_then_wait_for_go()
    start = time.monotonic()
    sent = answered = 0
    errors = 0
    while answered < requests:
        while sent < requests and sent - answered < in_flight:
            sock.sendall(request)
            sent += 1
        frame = reader.read()
        response = decode_response_frame(produce_api, version, frame, 1)
        errors += sum(1 for t in response.responses for p in t.partition_responses if p.error_code)
        answered += 1
    end = time.monotonic()
    sock.close()
    return {"start": start, "end": end, "messages": requests * per_batch, "bytes": requests * per_batch * size,
            "wire_bytes": requests * len(batch), "error_count": errors}


def raw_fetch(params: dict) -> dict:
    """Fetch a partition from offset 0 to `count` records with plain Fetch v4 requests, one
    outstanding, reading each response into a reused buffer and looking only at batch headers."""
    from kafka_wire.messages import APIS_BY_NAME
    from kafka_wire.records import iter_batch_headers

    version = 4
    fetch_api = APIS_BY_NAME["Fetch"]
    sock = _wire_connect(params["bootstrap"])
    count, topic = params["count"], params["topic"]
    partition_max = params.get("partition_max_bytes", 1 << 20)
    reader = _FrameReader(sock)
    _ready_then_wait_for_go()
    start = time.monotonic()
    offset = records = wire_bytes = 0
    correlation_id = 0
    while records < count and time.monotonic() - start < params.get("timeout", 300):
        correlation_id += 1
        sock.sendall(_wire_request("Fetch", version, {
            "replica_id": -1, "max_wait_ms": 100, "min_bytes": 1, "max_bytes": 50 << 20, "isolation_level": 0,
            "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": offset, "partition_max_bytes": partition_max}]}]},
            correlation_id))
        frame = reader.read()
        response = decode_response_frame(fetch_api, version, frame, correlation_id)
        data = response.responses[0].partitions[0].records
        if not data:
            continue
        wire_bytes += len(data)
        for _, header in iter_batch_headers(data):
            if header.last_offset >= offset:
                records += header.last_offset + 1 - max(offset, header.base_offset)
                offset = header.last_offset + 1
    end = time.monotonic()
    sock.close()
    return {"start": start, "end": end, "messages": records, "bytes": records * params["size"],
            "wire_bytes": wire_bytes}


ROLES = {
    "raw-produce": raw_produce,
    "raw-fetch": raw_fetch,
    "produce": produce,
    "consume": consume,
    "latency-consume": latency_consume,
    "latency-produce": latency_produce,
}


def main() -> int:
    role, params = sys.argv[1], json.loads(sys.argv[2])
    try:
        result = ROLES[role](params)
    except KafkaException as exc:
        result = {"error": str(exc)}
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
