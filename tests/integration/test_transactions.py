"""Exactly-once with unmodified clients against a real broker process.

- Every transactional producer (aiokafka, confluent-kafka, kafka-python, Java 3.9.0 and 4.3.0)
  commits and aborts; its own read_committed consumer sees only the committed records and its
  read_uncommitted consumer sees them all.
- Every consumer client reads a topic holding committed, aborted and still-open transactions plus
  plain records behind them: read_committed stops at the last stable offset and skips the aborts.
- A zombie producer (an older epoch of the same transactional.id) is fenced.
- A consume-transform-produce loop (sendOffsetsToTransaction) SIGKILLed with a transaction open
  and restarted leaves each input record exactly once in the output.
- The broker SIGKILLed with a transaction open: after the restart the transaction either commits
  (the producer is still there) or is aborted by the coordinator's timeout, and read_committed
  consumers never see part of it.

The broker finalizes transaction.version 2, so Java 4.3.0 runs these with KIP-890 part 2 (an epoch
bump per transaction, partitions added by Produce v12 and TxnOffsetCommit v5, EndTxn v5) and
Java 3.9.0 with the protocol before it (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn v4 or older):
the Java tests count the broker's requests by API and version (its Prometheus endpoint) to show
which protocol each client used.

The Java side is tests/clients/java/TxnCheck.java, compiled at test time against each version.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from testing.broker_process import BrokerProcess, free_port, running_broker
from client import ClusterClient, LATEST_TIMESTAMP

JAVA_SOURCE = Path(__file__).resolve().parent.parent / "clients" / "java" / "TxnCheck.java"
JAVA_VERSIONS = ["3.9.0", "4.3.0"]
READ_TIMEOUT = 30.0

pytestmark = [pytest.mark.timeout(300)]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic(bootstrap: str, topic: str, partitions: int = 2) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


@dataclass
class Produced:
    committed: list[str] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)


# == which transaction protocol a client used, from the broker's request counts ====================

@pytest.fixture(scope="module")
def metered_broker(tmp_path_factory):
    """A broker with its Prometheus endpoint, for the Java clients' tests."""
    port = free_port()
    with running_broker(tmp_path_factory.mktemp("txn-metered"), config={"metrics.port": port}) as broker:
        broker.metrics_port = port
        yield broker


def requests_by_version(metrics_port: int) -> Counter:
    """{(api, version): requests handled} from kafka_wire_requests_total."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as response:
        text = response.read().decode()
    counts = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "kafka_wire_requests_total":
                counts[(sample.labels["api"], int(sample.labels["version"]))] += int(sample.value)
    return counts


def versions_of(counts: Counter, api: str) -> dict[int, int]:
    return {version: n for (name, version), n in sorted(counts.items()) if name == api and n > 0}


def assert_transaction_protocol(counts: Counter, java_version: str, *, offsets: bool = False,
                                ended: bool = True) -> None:
    """Java 4.3.0 used transaction.version 2, 3.9.0 the protocol before it (counts: the requests
    the client's run made)."""
    end_txn, produce = versions_of(counts, "EndTxn"), versions_of(counts, "Produce")
    if java_version == "4.3.0":
        assert versions_of(counts, "AddPartitionsToTxn") == {}, counts
        assert any(v >= 12 for v in produce), f"no Produce v12+ (TV2 adds partitions there): {produce}"
        if ended:
            assert set(end_txn) == {5}, f"EndTxn versions {end_txn}"
        if offsets:
            assert versions_of(counts, "AddOffsetsToTxn") == {}, counts
            assert set(versions_of(counts, "TxnOffsetCommit")) == {5}, counts
    else:
        assert versions_of(counts, "AddPartitionsToTxn"), f"no AddPartitionsToTxn: {counts}"
        assert all(v <= 11 for v in produce), f"Produce versions {produce}"
        if ended:
            assert end_txn and max(end_txn) < 5, f"EndTxn versions {end_txn}"
        if offsets:
            assert versions_of(counts, "AddOffsetsToTxn"), counts
            assert max(versions_of(counts, "TxnOffsetCommit")) < 5, counts


class RequestCounts:
    """Requests a block of a test made to a metered broker."""

    def __init__(self, broker) -> None:
        self.port = broker.metrics_port
        self.before = requests_by_version(self.port)

    def made(self) -> Counter:
        return requests_by_version(self.port) - self.before


# == Java ==========================================================================================

@pytest.fixture(scope="session")
def txn_check(java_kafka_clients):
    """Factory: the `java ... TxnCheck` command for a kafka-clients version."""

    def command(version: str) -> list[str]:
        return java_kafka_clients(version).program(JAVA_SOURCE)

    return command


def run_java(command: list[str], timeout: float = 120) -> list[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    output = done.stdout + (f"\n--- stderr ---\n{done.stderr}" if done.stderr.strip() else "")
    if done.returncode != 0 or "DONE" not in done.stdout:
        pytest.fail(f"{' '.join(command[-4:])} failed (status {done.returncode}):\n{output}", pytrace=False)
    return done.stdout.splitlines()


def java_produce(command: list[str], bootstrap: str, topic: str) -> Produced:
    lines = run_java([*command, "produce", bootstrap, topic, unique("java-txn")])
    produced = Produced()
    for line in lines:
        kind, _, value = line.partition(" ")
        if kind == "COMMITTED":
            produced.committed.append(value)
        elif kind == "ABORTED":
            produced.aborted.append(value)
    return produced


def java_read(command: list[str], bootstrap: str, topic: str, isolation: str) -> list[str]:
    return java_read_both(command, bootstrap, topic, isolation)[isolation]


def java_read_both(command: list[str], bootstrap: str, topic: str, isolation: str = "both") -> dict[str, list[str]]:
    """{isolation level: values read}; one JVM for both levels."""
    read: dict[str, list[str]] = {"read_committed": [], "read_uncommitted": []}
    for line in run_java([*command, "read", bootstrap, isolation, topic]):
        if line.startswith("VALUE "):
            _, level, _topic, _partition, _offset, value = line.split(" ", 5)
            read[level].append(value)
    return read


# == Python clients: transactional producers =========================================================

def confluent_produce(bootstrap: str, topic: str) -> Produced:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("confluent-txn"),
                         "linger.ms": 5})
    producer.init_transactions(30)
    produced = Produced()
    for prefix, commit in (("c1-", True), ("a-", False), ("c2-", True)):
        producer.begin_transaction()
        for i in range(10):
            producer.produce(topic, key=b"k%d" % i, value=f"{prefix}{i}".encode(), partition=i % 2)
        producer.flush(30)
        values = [f"{prefix}{i}" for i in range(10)]
        if commit:
            producer.commit_transaction(30)
            produced.committed += values
        else:
            producer.abort_transaction(30)
            produced.aborted += values
    return produced


def kafka_python_produce(bootstrap: str, topic: str) -> Produced:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("kafka-python-txn"))
    producer.init_transactions()
    produced = Produced()
    for prefix, commit in (("c1-", True), ("a-", False), ("c2-", True)):
        producer.begin_transaction()
        for i in range(10):
            producer.send(topic, key=b"k%d" % i, value=f"{prefix}{i}".encode(), partition=i % 2).get(30)
        values = [f"{prefix}{i}" for i in range(10)]
        if commit:
            producer.commit_transaction()
            produced.committed += values
        else:
            producer.abort_transaction()
            produced.aborted += values
    producer.close(10)
    return produced


def aiokafka_produce(bootstrap: str, topic: str) -> Produced:
    from aiokafka import AIOKafkaProducer

    async def run() -> Produced:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=unique("aiokafka-txn"),
                                    enable_idempotence=True)
        await producer.start()
        produced = Produced()
        try:
            for prefix, commit in (("c1-", True), ("a-", False), ("c2-", True)):
                await producer.begin_transaction()
                for i in range(10):
                    await producer.send_and_wait(topic, key=b"k%d" % i, value=f"{prefix}{i}".encode(),
                                                 partition=i % 2)
                values = [f"{prefix}{i}" for i in range(10)]
                if commit:
                    await producer.commit_transaction()
                    produced.committed += values
                else:
                    await producer.abort_transaction()
                    produced.aborted += values
        finally:
            await producer.stop()
        return produced

    return asyncio.run(run())


# == Python clients: consumers (assign, from the beginning, no group) =================================

def confluent_read(bootstrap: str, topic: str, isolation: str, expected: int) -> list[str]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("reader"), "isolation.level": isolation,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(2)])
    values = []
    try:
        read_until(lambda: [m.value().decode() for m in consumer.consume(100, 0.2) if not m.error()], values,
                   expected)
    finally:
        consumer.close()
    return values


def kafka_python_read(bootstrap: str, topic: str, isolation: str, expected: int) -> list[str]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                             group_id=None)
    partitions = [TopicPartition(topic, p) for p in range(2)]
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    values = []
    try:
        read_until(lambda: [r.value.decode() for batch in consumer.poll(200).values() for r in batch], values,
                   expected)
    finally:
        consumer.close()
    return values


def aiokafka_read(bootstrap: str, topic: str, isolation: str, expected: int) -> list[str]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> list[str]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                                    enable_auto_commit=False)
        await consumer.start()
        partitions = [TopicPartition(topic, p) for p in range(2)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        values: list[str] = []
        deadline = time.monotonic() + READ_TIMEOUT
        idle_until = None
        try:
            while time.monotonic() < deadline:
                got = await consumer.getmany(timeout_ms=200)
                batch = [r.value.decode() for records in got.values() for r in records]
                values += batch
                if len(values) >= expected:
                    # Linger a little: records that must not be there would show up now.
                    idle_until = idle_until or time.monotonic() + 1.0
                    if time.monotonic() >= idle_until:
                        break
        finally:
            await consumer.stop()
        return values

    return asyncio.run(run())


def read_until(poll, values: list, expected: int) -> None:
    """Poll until `expected` values arrived, then a second more (what must not come would come)."""
    deadline = time.monotonic() + READ_TIMEOUT
    idle_until = None
    while time.monotonic() < deadline:
        values += poll()
        if len(values) >= expected:
            idle_until = idle_until or time.monotonic() + 1.0
            if time.monotonic() >= idle_until:
                return


PRODUCERS = {
    "aiokafka": aiokafka_produce,
    "confluent-kafka": confluent_produce,
    "kafka-python": kafka_python_produce,
}
READERS = {
    "aiokafka": aiokafka_read,
    "confluent-kafka": confluent_read,
    "kafka-python": kafka_python_read,
}


# == transactional producers ========================================================================

@pytest.mark.parametrize("client", [*PRODUCERS, *(f"java-{v}" for v in JAVA_VERSIONS)])
def test_transactional_producer_commits_and_aborts(shared_broker, metered_broker, txn_check, client):
    bootstrap = shared_broker.bootstrap
    topic = unique(f"txn-{client}")
    if client.startswith("java-"):
        bootstrap = metered_broker.bootstrap
        command = txn_check(client.removeprefix("java-"))
        counts = RequestCounts(metered_broker)
        produced = java_produce(command, bootstrap, topic)
        assert_transaction_protocol(counts.made(), client.removeprefix("java-"))
        read = java_read_both(command, bootstrap, topic)
        committed, everything = read["read_committed"], read["read_uncommitted"]
    else:
        create_topic(bootstrap, topic)
        produced = PRODUCERS[client](bootstrap, topic)
        read = READERS[client]
        committed = read(bootstrap, topic, "read_committed", len(produced.committed))
        everything = read(bootstrap, topic, "read_uncommitted", len(produced.committed) + len(produced.aborted))
    assert len(produced.committed) == 20 and len(produced.aborted) == 10
    assert sorted(committed) == sorted(produced.committed)
    assert sorted(everything) == sorted(produced.committed + produced.aborted)


# == read_committed consumers ========================================================================

@dataclass
class MixedTopic:
    topic: str
    committed: list[str]
    uncommitted: list[str]  # everything a read_uncommitted consumer reads


@pytest.fixture(scope="module")
def mixed_topic(_shared_broker_process):
    """Committed and aborted transactions, then a transaction left open (held for the module) and
    plain records written after it: read_committed must stop at the open transaction."""
    from confluent_kafka import Producer

    bootstrap = _shared_broker_process.bootstrap
    topic = unique("txn-mixed")
    create_topic(bootstrap, topic)
    produced = confluent_produce(bootstrap, topic)
    holder = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("holder"),
                       "transaction.timeout.ms": 300000})
    holder.init_transactions(30)
    holder.begin_transaction()
    for i in range(4):
        holder.produce(topic, value=f"open-{i}".encode(), partition=i % 2)
    holder.flush(30)
    plain = Producer({"bootstrap.servers": bootstrap})
    for i in range(4):
        plain.produce(topic, value=f"plain-{i}".encode(), partition=i % 2)
    plain.flush(30)
    opened = [f"open-{i}" for i in range(4)]
    later = [f"plain-{i}" for i in range(4)]
    yield MixedTopic(topic, produced.committed, produced.committed + produced.aborted + opened + later)
    holder.abort_transaction(30)


@pytest.mark.parametrize("client", [*READERS, *(f"java-{v}" for v in JAVA_VERSIONS)])
def test_read_committed_consumer(shared_broker, txn_check, mixed_topic, client):
    bootstrap = shared_broker.bootstrap
    if client.startswith("java-"):
        command = txn_check(client.removeprefix("java-"))
        read = java_read_both(command, bootstrap, mixed_topic.topic)
        committed, everything = read["read_committed"], read["read_uncommitted"]
    else:
        read = READERS[client]
        committed = read(bootstrap, mixed_topic.topic, "read_committed", len(mixed_topic.committed))
        everything = read(bootstrap, mixed_topic.topic, "read_uncommitted", len(mixed_topic.uncommitted))
    assert sorted(committed) == sorted(mixed_topic.committed)
    assert sorted(everything) == sorted(mixed_topic.uncommitted)


def test_list_offsets_read_committed_is_the_last_stable_offset(shared_broker, txn_check, mixed_topic):
    """Admin.listOffsets(latest) with READ_COMMITTED stops at the open transaction."""
    lines = run_java([*txn_check("3.9.0"), "admin", shared_broker.bootstrap, mixed_topic.topic, unique("none")])
    latest = next(line for line in lines if line.startswith("LATEST "))
    # On partition 0 the open transaction's 2 records and the 2 plain records behind it are past
    # the last stable offset (the first offset of the open transaction).
    _, _, committed, _, uncommitted = latest.split()
    assert int(uncommitted) - int(committed) == 4, latest


# == fencing ==========================================================================================

@pytest.mark.parametrize("version", JAVA_VERSIONS)
def test_java_zombie_producer_is_fenced(metered_broker, txn_check, version):
    counts = RequestCounts(metered_broker)
    lines = run_java([*txn_check(version), "zombie", metered_broker.bootstrap, unique("zombie"), unique("ztx")])
    assert any(line.startswith("OK zombie fenced") for line in lines), lines
    assert_transaction_protocol(counts.made(), version)


def test_confluent_zombie_producer_is_fenced(shared_broker):
    from confluent_kafka import KafkaException, Producer

    bootstrap = shared_broker.bootstrap
    topic = unique("zombie")
    create_topic(bootstrap, topic, 1)
    txid = unique("confluent-zombie")
    zombie = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie-0", partition=0)
    zombie.flush(30)
    fresh = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid})
    fresh.init_transactions(30)
    fresh.begin_transaction()
    fresh.produce(topic, value=b"fresh-0", partition=0)
    fresh.commit_transaction(30)
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(30)
    error = raised.value.args[0]
    assert error.fatal() and "fenced" in error.str().lower(), error
    assert confluent_read(bootstrap, topic, "read_committed", 1) == ["fresh-0"]


# == consume-transform-produce killed mid-transaction =================================================

def read_lines_until(process: subprocess.Popen, marker: str, timeout: float) -> list[str]:
    lines = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith(marker):
            return lines
    process.kill()
    pytest.fail(f"never saw {marker!r}; output:\n" + "\n".join(lines), pytrace=False)


@pytest.mark.parametrize("version", JAVA_VERSIONS)
def test_consume_transform_produce_killed_mid_transaction(metered_broker, txn_check, version):
    from confluent_kafka import Producer

    bootstrap = metered_broker.bootstrap
    source, sink = unique("ctp-in"), unique("ctp-out")
    create_topic(bootstrap, source)
    create_topic(bootstrap, sink)
    total = 300
    plain = Producer({"bootstrap.servers": bootstrap})
    for i in range(total):
        plain.produce(source, key=b"%d" % i, value=b"v%d" % i, partition=i % 2)
    plain.flush(30)
    counts = RequestCounts(metered_broker)
    command = [*txn_check(version), "copy", bootstrap, source, sink, unique("ctp-group"), unique("ctp-txn"),
               str(total)]
    # The first run stops in transaction 3, its records sent and flushed, not committed.
    first = subprocess.Popen([*command, "3"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             stdin=subprocess.PIPE)
    try:
        killed_records = int(read_lines_until(first, "IN-TXN 3 ", 60)[-1].split()[2])
    finally:
        first.kill()  # SIGKILL
        first.wait(10)
    again = subprocess.run(command, capture_output=True, text=True, timeout=150, stdin=subprocess.DEVNULL)
    assert again.returncode == 0 and "DONE" in again.stdout, again.stdout + again.stderr
    assert_transaction_protocol(counts.made(), version, offsets=True)

    expected = sorted(f"copy-v{i}" for i in range(total))
    assert sorted(confluent_read(bootstrap, sink, "read_committed", total)) == expected
    # The killed transaction's records are in the log, aborted: the test did kill mid-transaction.
    everything = confluent_read(bootstrap, sink, "read_uncommitted", total + killed_records)
    assert len(everything) == total + killed_records and set(everything) == set(expected)


# == the broker killed mid-transaction ================================================================

@pytest.fixture
def txn_broker(tmp_path):
    """A broker of its own (these tests kill it) that looks for timed-out transactions often."""
    port = free_port()
    broker = BrokerProcess(tmp_path / "broker", config={
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 300,
        "offsets.topic.num.partitions": 5,
        "transaction.state.log.num.partitions": 5,
        "metrics.port": port,
    })
    broker.metrics_port = port
    broker.start()
    yield broker
    problems = broker.finish()
    assert not problems, "\n".join(problems) + broker.log_report()


def last_stable_and_high_watermark(bootstrap: str, topic: str) -> tuple[dict, dict]:
    with ClusterClient(bootstrap) as cluster:
        partitions = [(topic, 0), (topic, 1)]
        return (cluster.list_offsets(partitions, LATEST_TIMESTAMP, isolation_level=1),
                cluster.list_offsets(partitions, LATEST_TIMESTAMP, isolation_level=0))


def start_holder(command: list[str], bootstrap: str, topic: str, timeout_ms: int) -> subprocess.Popen:
    holder = subprocess.Popen([*command, "hold", bootstrap, topic, unique("hold-txn"), str(timeout_ms)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.PIPE, text=True)
    read_lines_until(holder, "HELD", 60)
    return holder


@pytest.mark.parametrize("version", JAVA_VERSIONS)
def test_broker_killed_mid_transaction_then_committed(txn_broker, txn_check, version):
    bootstrap = txn_broker.bootstrap
    topic = unique("held")
    command = txn_check(version)
    holder = start_holder(command, bootstrap, topic, 60000)
    try:
        # The counts go with the process: the writes before the kill, the commit after it.
        assert_transaction_protocol(requests_by_version(txn_broker.metrics_port), version, ended=False)
        txn_broker.kill()
        txn_broker.start()
        # Recovered: the open transaction still bounds what read_committed consumers see.
        before = sorted(f"before-{i}" for i in range(4))
        assert sorted(java_read(command, bootstrap, topic, "read_committed")) == before
        holder.stdin.write("commit\n")
        holder.stdin.flush()
        output, _ = holder.communicate(timeout=90)
    finally:
        holder.kill()
    assert holder.returncode == 0 and "OK committed" in output, output
    end_txn = versions_of(requests_by_version(txn_broker.metrics_port), "EndTxn")
    if version == "4.3.0":
        assert set(end_txn) == {5}, end_txn
    else:
        assert end_txn and max(end_txn) < 5, end_txn
    held = sorted(f"held-{i}" for i in range(4))
    assert sorted(java_read(command, bootstrap, topic, "read_committed")) == sorted(before + held)


def test_broker_killed_mid_transaction_then_aborted_by_timeout(txn_broker, txn_check):
    bootstrap = txn_broker.bootstrap
    topic = unique("held")
    command = txn_check("4.3.0")
    holder = start_holder(command, bootstrap, topic, 4000)
    assert_transaction_protocol(requests_by_version(txn_broker.metrics_port), "4.3.0", ended=False)
    holder.kill()  # the producer is gone for good
    holder.wait(10)
    txn_broker.kill()
    txn_broker.start()
    before = sorted(f"before-{i}" for i in range(4))
    stable, high = last_stable_and_high_watermark(bootstrap, topic)
    # Unless the timeout already passed, the open transaction still holds the last stable offset.
    deadline = time.monotonic() + 30
    while stable != high:
        assert sorted(java_read(command, bootstrap, topic, "read_committed")) == before
        assert time.monotonic() < deadline, f"the transaction was not aborted: LSO {stable}, HW {high}"
        time.sleep(0.5)
        stable, high = last_stable_and_high_watermark(bootstrap, topic)
    assert sorted(java_read(command, bootstrap, topic, "read_committed")) == before
    held = sorted(f"held-{i}" for i in range(4))
    assert sorted(java_read(command, bootstrap, topic, "read_uncommitted")) == sorted(before + held)
