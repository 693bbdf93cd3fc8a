"""Durability through a real broker process: kill -9 under an idempotent producer loses and
duplicates nothing; flush.messages=1 fsyncs every batch before answering; a full disk answers
KAFKA_STORAGE_ERROR, leaves nothing half-written and heals; a corrupted byte in a closed segment
is reported by a client checking CRCs and by dump-log.

The kill loop runs 3 cycles by default and 20 with KW_SLOW=1 (the slow suite):

    KW_SLOW=1 .venv/bin/python -m pytest tests/integration/test_durability.py -k sigkill
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from testing.broker_process import REPO_ROOT, BrokerProcess
from client import WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch, decode_batches

confluent_kafka = pytest.importorskip("confluent_kafka")

SLOW = os.environ.get("KW_SLOW") == "1"
KILL_CYCLES = 20 if SLOW else 3


def create_topic(client: WireClient, name: str, partitions: int = 1, configs: dict | None = None) -> None:
    response = client.call("CreateTopics", 7, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                    "configs": [{"name": k, "value": str(v)} for k, v in (configs or {}).items()]}],
        "timeout_ms": 10000, "validate_only": False})
    assert response.topics[0].error_code == 0, ErrorCode(response.topics[0].error_code)


def produce(client: WireClient, topic: str, records: bytes, partition: int = 0):
    response = client.call("Produce", 9, {"acks": -1, "timeout_ms": 10000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": records}]}]})
    return response.responses[0].partition_responses[0]


def read_partition(client: WireClient, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
    """(offset, value) of every record, following batches (empty ones included) to the end."""
    out, offset = [], 0
    while True:
        response = client.call("Fetch", 12, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 4 << 20, "isolation_level": 0,
            "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 4 << 20}]}]})
        part = response.responses[0].partitions[0]
        assert part.error_code == 0, ErrorCode(part.error_code)
        batches = list(decode_batches(bytes(part.records or b"")))
        if not batches:
            return out
        for header, records in batches:
            out += [(header.base_offset + r.offset_delta, r.value) for r in records
                    if header.base_offset + r.offset_delta >= offset]
            offset = max(offset, header.next_offset)


def values_batch(values: list[bytes]) -> bytes:
    return build_batch([Record(i, 0, b"k", v) for i, v in enumerate(values)])


@pytest.fixture
def broker_process(tmp_path):
    started: list[BrokerProcess] = []

    def start(config=None, data_dir=None) -> BrokerProcess:
        process = BrokerProcess(data_dir or tmp_path / "broker", config=config)
        started.append(process)
        process.start()
        return process

    yield start
    for process in started:
        process.stop()


# -- kill -9 under load ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(900 if SLOW else 300)
def test_sigkill_loop_under_an_idempotent_acks_all_producer_loses_and_duplicates_nothing(broker_process):
    broker = broker_process()
    topic = "sigkill-loop"
    with WireClient(broker.bootstrap) as client:
        create_topic(client, topic, partitions=3, configs={"internal.segment.bytes": 65536})
    producer = confluent_kafka.Producer({
        "bootstrap.servers": broker.bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 2,
        "message.timeout.ms": 120000,
        "retry.backoff.ms": 20,
        "reconnect.backoff.ms": 20,
        "reconnect.backoff.max.ms": 200,
        "topic.metadata.refresh.interval.ms": 1000,
    })
    acknowledged: set[bytes] = set()
    failures: list[str] = []

    def on_delivery(error, message):
        if error is None:
            acknowledged.add(message.value())
        else:
            failures.append(f"{message.value()!r}: {error}")

    stop = threading.Event()
    sent = 0

    def produce_continuously():
        nonlocal sent
        while not stop.is_set():
            value = b"value-%08d" % sent
            try:
                producer.produce(topic, value=value, key=value, on_delivery=on_delivery)
                sent += 1
            except BufferError:
                producer.poll(0.05)
                continue
            producer.poll(0)
            while len(producer) > 2000 and not stop.is_set():
                producer.poll(0.01)  # a bounded backlog: the flush at the end stays short

    thread = threading.Thread(target=produce_continuously, daemon=True)
    thread.start()
    rng = random.Random(6)

    def wait_for_progress(count: int) -> None:
        target = len(acknowledged) + count
        deadline = time.monotonic() + 60
        while len(acknowledged) < target:
            assert time.monotonic() < deadline, f"no progress: {len(acknowledged)} acknowledged, {failures[:3]}"
            time.sleep(0.02)

    try:
        for _ in range(KILL_CYCLES):
            wait_for_progress(500)  # the producer is back in business after the last restart
            time.sleep(rng.uniform(0.0, 0.5))
            broker.kill()
            broker.start()
        wait_for_progress(500)
    finally:
        stop.set()
        thread.join(10)
    remaining = producer.flush(120)
    assert remaining == 0, f"{remaining} records never delivered"
    assert failures == []
    assert len(acknowledged) == sent

    with WireClient(broker.bootstrap) as client:
        stored = [value for p in range(3) for _, value in read_partition(client, topic, p)]
    duplicates = len(stored) - len(set(stored))
    lost = acknowledged - set(stored)
    assert duplicates == 0, f"{duplicates} duplicated records"
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {sorted(lost)[:5]}"
    assert set(stored) == acknowledged


# -- flush policy ---------------------------------------------------------------------------------


def traced_fdatasyncs(trace: Path) -> int:
    return sum(1 for line in trace.read_text().splitlines() if "fdatasync(" in line)


def test_flush_messages_1_fsyncs_every_batch_before_the_acknowledgement(broker_process, tmp_path):
    """log.flush.interval.messages=1 (topic: flush.messages) fsyncs each append before answering;
    Kafka's default leaves it to the page cache (kafka-wire's too with log.flush.on.ack=false, which
    otherwise syncs before every acknowledgement: tests/integration/test_durable_acks.py). Watched
    with strace."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    broker = broker_process(config={"log.flush.interval.messages": 1, "log.flush.on.ack": False})
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "fsync-each")
        create_topic(client, "page-cache", configs={"flush.messages": 2**63 - 1})
        trace = tmp_path / "strace.out"
        # The broker's process and its workers' (num.worker.processes, broker/workers/), if any.
        pids = [broker.process.pid] + [int(child) for child in Path(
            f"/proc/{broker.process.pid}/task/{broker.process.pid}/children").read_text().split()]
        tracer = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=fdatasync", "-o", str(trace)]
                                  + [arg for pid in pids for arg in ("-p", str(pid))], stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while any("TracerPid:\t0" in Path(f"/proc/{pid}/status").read_text() for pid in pids):
                if tracer.poll() is not None or time.monotonic() > deadline:
                    pytest.skip("strace cannot attach here")
                time.sleep(0.05)
            for i in range(10):
                assert produce(client, "page-cache", values_batch([b"v%d" % i])).error_code == 0
            time.sleep(0.2)
            unflushed = traced_fdatasyncs(trace)
            for i in range(10):
                assert produce(client, "fsync-each", values_batch([b"v%d" % i])).error_code == 0
            time.sleep(0.2)
            flushed = traced_fdatasyncs(trace) - unflushed
        finally:
            tracer.terminate()
            tracer.wait(10)
    assert unflushed == 0
    assert flushed >= 10


# -- a full disk ----------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs mounted where the broker keeps its logs (needs root; skipped otherwise)."""
    mountpoint = tmp_path / "broker" / "logs"
    mountpoint.mkdir(parents=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root (the log layer's unit tests inject ENOSPC instead)")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mountpoint)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True)


def fill_disk(path: Path) -> Path:
    filler = path / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb") as f:
        while True:
            try:
                f.write(chunk)
                f.flush()
            except OSError:
                break
        try:
            # Whatever room is left in partly used pages goes too.
            while True:
                os.write(f.fileno(), b"\0" * 512)
        except OSError:
            pass
    return filler


def segment_files(log_dir: Path, topic: str) -> dict[str, int]:
    partition = log_dir / f"{topic}-0"
    return {name: os.path.getsize(partition / name) for name in os.listdir(partition) if name.endswith(".log")}


def test_a_full_disk_answers_storage_error_writes_nothing_and_heals(small_disk, broker_process):
    broker = broker_process(data_dir=small_disk.parent)
    topic = "full-disk"
    with WireClient(broker.bootstrap) as client:
        create_topic(client, topic, configs={"segment.bytes": 1 << 20})
        acked = []
        for i in range(5):
            values = [b"before-%d-%d" % (i, j) for j in range(3)]
            assert produce(client, topic, values_batch(values)).error_code == 0
            acked += values
        filler = fill_disk(small_disk)
        files_before = segment_files(small_disk, topic)
        big = [os.urandom(64) * 300 for _ in range(3)]  # ~57 KB: more than any partly used page
        for _ in range(3):
            answer = produce(client, topic, values_batch(big))
            assert answer.error_code == ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode(answer.error_code)
        assert segment_files(small_disk, topic) == files_before  # nothing half-written
        assert [v for _, v in read_partition(client, topic)] == acked  # reads still work

        filler.unlink()  # the disk has room again
        answer = produce(client, topic, values_batch([b"after"]))
        assert answer.error_code == 0 and answer.base_offset == len(acked)
        acked.append(b"after")
        assert [v for _, v in read_partition(client, topic)] == acked
    broker.kill()
    broker.start()
    with WireClient(broker.bootstrap) as client:
        assert [v for _, v in read_partition(client, topic)] == acked
    broker.stop()


# -- corruption -----------------------------------------------------------------------------------


def dump_log(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", "dump-log", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60)


def test_a_corrupted_byte_in_a_closed_segment_is_reported_never_served_as_data(broker_process):
    broker = broker_process()
    topic = "corrupted"
    values = [b"value-%03d-" % i + b"x" * 60 for i in range(40)]
    with WireClient(broker.bootstrap) as client:
        create_topic(client, topic, configs={"internal.segment.bytes": 1000})
        for i in range(0, 40, 2):
            assert produce(client, topic, values_batch(values[i:i + 2])).error_code == 0
    broker.stop()
    partition = broker.log_dir / f"{topic}-0"
    first = partition / ("0" * 20 + ".log")
    # Flip one byte inside the second batch's records (offsets 2 and 3) of the first, closed segment.
    data = bytearray(first.read_bytes())
    second_batch = int.from_bytes(data[8:12], "big") + 12
    data[second_batch + 100] ^= 0x55
    first.write_bytes(bytes(data))

    dumped = dump_log(str(first), "--print-data-log")
    assert dumped.returncode == 0
    lines = dumped.stdout.splitlines()
    assert lines[0] == f"Dumping {first}" and lines[1] == "Log starting offset: 0"
    headers = [line for line in lines if line.startswith("baseOffset:")]
    assert headers[0].endswith("isvalid: true") and headers[1].endswith("isvalid: false")
    assert "baseOffset: 2 lastOffset: 3 count: 2" in headers[1]
    assert "value-002" not in dumped.stdout and "value-000" in dumped.stdout
    assert "failed its CRC check" in dumped.stderr

    broker.start()

    def consume(start: int, wanted: int) -> tuple[list, list]:
        consumer = confluent_kafka.Consumer({
            "bootstrap.servers": broker.bootstrap, "group.id": "corruption-check", "check.crcs": True,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
        })
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, start)])
        delivered, errors = [], []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (len(delivered) >= wanted and (errors or start > 0)):
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error():
                errors.append(message.error())
            else:
                delivered.append((message.offset(), message.value()))
        consumer.close()
        return delivered, errors

    # The client checks the CRC and reports the batch; it never hands out its records. (librdkafka
    # then stalls there, as the Java client does: the application must seek past it.)
    delivered, errors = consume(0, 2)
    assert any(e.code() == confluent_kafka.KafkaError._BAD_MSG and "CRC" in e.str() for e in errors), errors
    assert [offset for offset, _ in delivered][:2] == [0, 1]
    assert not [offset for offset, _ in delivered if offset in (2, 3)]
    assert all(value == values[offset] for offset, value in delivered)
    # Past the corrupt batch, everything else is served intact.
    delivered, errors = consume(4, 36)
    assert errors == [] and delivered == [(offset, values[offset]) for offset in range(4, 40)]
