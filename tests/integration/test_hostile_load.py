"""Thousands of hostile frames from many connections against a broker process, while a real client
(confluent-kafka) keeps producing: the broker stays up, its memory stays bounded, and the client
keeps working during and after.

The frames: size prefixes that are oversized, negative or legal-but-never-delivered (a connection
that promises 100 MB and stalls), truncated frames, unknown API keys and versions, absurd array
and string lengths, random bodies and random edits of valid requests for every API and version,
and the same garbage on a SASL listener before authentication.

CI runs 1,000 frames; KW_SLOW=1 runs the full 10,000.
"""

from __future__ import annotations

import asyncio
import os
import random
import struct
import threading
import time

import pytest

from testing.broker_process import BrokerProcess, free_port
from client import WireClient
from kafka_wire.headers import encode_request_header
from kafka_wire.messages import APIS
from kafka_wire.schema import Writer

SLOW = os.environ.get("KW_SLOW") == "1"
FRAMES = 10_000 if SLOW else 1_000
CONCURRENCY = 64
# The broker may grow by this much above its idle size while under attack (buffers, connections,
# Python's allocator keeping freed arenas); unbounded buffering would blow far past it.
RSS_HEADROOM = 256 << 20

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900 if SLOW else 300)]


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def header(api_key: int, version: int, flexible: bool, correlation_id: int) -> bytes:
    w = Writer()
    encode_request_header(w, api_key, version, correlation_id, "hostile", flexible)
    return bytes(w.out)


def valid_body(rng: random.Random, api, version: int) -> bytes:
    from tests.unit.test_messages import populated

    return api.request.encode_bytes(populated(api.request, version), version)


class HostileFrames:
    """Deterministic hostile inputs: each item is (bytes to send, how to end: 'close' or 'stall')."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.apis = list(APIS.values())
        self.kinds = [self.oversized, self.negative, self.stalled_promise, self.truncated, self.unknown_key,
                      self.unknown_version, self.absurd_array, self.absurd_string, self.random_body,
                      self.edited_request, self.tiny]

    def next(self) -> tuple[bytes, str]:
        return self.rng.choice(self.kinds)()

    def _frame(self, body: bytes) -> bytes:
        return struct.pack(">i", len(body)) + body

    def _api_version(self):
        api = self.rng.choice(self.apis)
        return api, self.rng.randint(api.min_version, api.max_version)

    def oversized(self):
        return struct.pack(">i", self.rng.choice([104857601, 2**31 - 1, 500_000_000])) + b"\x00" * 32, "close"

    def negative(self):
        return struct.pack(">i", self.rng.choice([-1, -2**31, -12345])) + b"\x00" * 16, "close"

    def stalled_promise(self):
        # A legal size the client never delivers: the broker must not reserve it up front.
        return struct.pack(">i", self.rng.choice([100_000_000, 50_000_000, 10_000_000])) + b"\x00\x03" * 10, "stall"

    def truncated(self):
        api, version = self._api_version()
        body = header(api.key, version, api.is_flexible(version), 1) + valid_body(self.rng, api, version)
        cut = self.rng.randint(0, max(0, len(body) - 1))
        return struct.pack(">i", len(body)) + body[:cut], "close"

    def unknown_key(self):
        key = self.rng.choice([k for k in range(100, 32767, 97)] + [-1, -32768])
        return self._frame(struct.pack(">hhi", key, 0, 1) + b"\x00\x00"), "close"

    def unknown_version(self):
        api = self.rng.choice(self.apis)
        version = self.rng.choice([api.max_version + 1, 999, -1, 32767])
        return self._frame(struct.pack(">hhi", api.key, version, 1) + b"\x00\x00" + b"\x00" * 20), "close"

    def absurd_array(self):
        api, version = self._api_version()
        flexible = api.is_flexible(version)
        count = b"\xff\xff\xff\xff\x0f" if flexible else b"\x7f\xff\xff\xff"
        return self._frame(header(api.key, version, flexible, 1) + count + b"\x01" * 32), "close"

    def absurd_string(self):
        api, version = self._api_version()
        flexible = api.is_flexible(version)
        length = b"\xff\xff\x03" if flexible else b"\x7f\xff"
        return self._frame(header(api.key, version, flexible, 1) + b"\x00\x00\x00\x01" + length + b"x" * 8), "close"

    def random_body(self):
        api, version = self._api_version()
        body = bytes(self.rng.getrandbits(8) for _ in range(self.rng.randint(0, 200)))
        return self._frame(header(api.key, version, api.is_flexible(version), 1) + body), "close"

    def edited_request(self):
        api, version = self._api_version()
        body = bytearray(valid_body(self.rng, api, version))
        for _ in range(self.rng.randint(1, 4)):
            pos = self.rng.randint(0, len(body))
            body[pos:pos + 4] = self.rng.choice([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x80", b"\xff\xfe"])
        return self._frame(header(api.key, version, api.is_flexible(version), 1) + bytes(body)), "close"

    def tiny(self):
        return self.rng.choice([b"", b"\x00", b"\x00\x00\x00", b"\x00\x00\x00\x02\x00\x12"]), "close"


async def _attack(ports: list[int], frames: int, seed: int) -> dict[str, int]:
    source = HostileFrames(seed)
    queue: asyncio.Queue = asyncio.Queue()
    for _ in range(frames):
        queue.put_nowait(source.next())
    outcome = {"sent": 0, "refused": 0}
    stalled = []

    async def worker(index: int) -> None:
        while True:
            try:
                data, ending = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            port = ports[index % len(ports)]
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
            except (OSError, asyncio.TimeoutError):
                outcome["refused"] += 1  # connection limits may refuse us; that is fine
                continue
            try:
                writer.write(data)
                await writer.drain()
                outcome["sent"] += 1
                if ending == "stall" and len(stalled) < 200:
                    stalled.append(writer)  # keep it open: a client that promised bytes and went quiet
                    continue
                try:
                    await asyncio.wait_for(reader.read(65536), 2)
                except (OSError, asyncio.TimeoutError):
                    pass
            except OSError:
                pass
            writer.close()

    await asyncio.gather(*(worker(i) for i in range(CONCURRENCY)))
    for writer in stalled:
        writer.close()
    return outcome


class NormalClient(threading.Thread):
    """confluent-kafka producing one record every 20 ms until stopped; counts delivered records."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.delivered = 0
        self.failed: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0, "message.timeout.ms": 30000})

        def report(err, msg):
            if err is None:
                self.delivered += 1
            else:
                self.failed.append(str(err))

        n = 0
        while not self.stop.is_set():
            producer.produce(self.topic, value=b"normal-%d" % n, partition=0, on_delivery=report)
            n += 1
            producer.poll(0.02)
        producer.flush(30)
        self.sent = n


def read_back(bootstrap: str, topic: str, expected: int) -> int:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "hostile-check", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got = 0
    deadline = time.monotonic() + 30
    while got < expected and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            got += 1
    consumer.close()
    return got


def test_hostile_frames_leave_the_broker_up_bounded_and_serving(tmp_path):
    plain, sasl = free_port(), free_port()
    broker = BrokerProcess(tmp_path, port=plain, config={
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}"})
    broker.start()
    try:
        bootstrap = broker.bootstrap
        with WireClient(bootstrap) as admin:
            admin.call("CreateTopics", 7, {"topics": [{"name": "normal", "num_partitions": 1,
                                                       "replication_factor": 1}], "timeout_ms": 10000})
        pid = broker.process.pid
        time.sleep(0.5)
        idle_rss = rss_bytes(pid)
        peak = [idle_rss]
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.is_set():
                try:
                    peak[0] = max(peak[0], rss_bytes(pid))
                except (OSError, RuntimeError):
                    return
                time.sleep(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        client = NormalClient(bootstrap, "normal")
        client.start()
        time.sleep(1)
        before_attack = client.delivered
        outcome = asyncio.run(_attack([plain, sasl], FRAMES, seed=9))
        during = client.delivered - before_attack
        time.sleep(1)
        client.stop.set()
        client.join(60)
        sampling.set()
        sampler.join(5)

        print(f"hostile frames: {outcome}; normal client delivered {client.delivered} records "
              f"({during} during the attack); broker RSS {idle_rss >> 20} MiB idle, {peak[0] >> 20} MiB peak")
        assert broker.is_running(), broker.log_report()
        assert outcome["sent"] >= FRAMES * 0.9, outcome
        assert not client.failed, client.failed[:5]
        assert during > 0, "the normal client delivered nothing while the broker was under attack"
        assert client.delivered == client.sent
        assert read_back(bootstrap, "normal", client.delivered) == client.delivered
        with WireClient(bootstrap) as after:
            assert after.call("ApiVersions", 3, {"client_software_name": "after",
                                                 "client_software_version": "1"}).error_code == 0
        assert peak[0] - idle_rss < RSS_HEADROOM, (
            f"broker RSS went from {idle_rss >> 20} MiB to {peak[0] >> 20} MiB under attack")
    finally:
        problems = broker.finish()
    assert not problems, "\n".join(problems) + "\n" + broker.log_report()
