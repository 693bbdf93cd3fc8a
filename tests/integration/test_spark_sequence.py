"""The broker behaviour Spark's Kafka connector relies on, replayed call by call with kafka-clients 3.9.0.

Spark 4.0's connector (spark-sql-kafka-0-10) is built on Java kafka-clients 3.9.0. Its jar is
not in the registries this project installs from, so tests/clients/java/SparkCallSequence.java
replays what it does with the same client library: on the driver Admin.listTopics + regex
(subscribePattern), describeTopics, listOffsets earliest/latest/by timestamp; on executors a
KafkaConsumer with assign/seek/poll, read_committed, auto.offset.reset=none, offsetsForTimes,
OffsetOutOfRangeException after DeleteRecords; for the sink a default (idempotent, acks=all)
KafkaProducer; partitions and topics added while running. See the program's comment for the
exact calls and which connector class makes each.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from client import WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import decode_batches

JAVA_SOURCE = Path(__file__).resolve().parent.parent / "clients" / "java" / "SparkCallSequence.java"
CONNECTOR_KAFKA_CLIENTS = "3.9.0"  # what Spark 4.0.0's spark-sql-kafka-0-10 is built on
STEP_TIMEOUT = 20  # seconds any one call may take (--timeout)
PROGRAM_TIMEOUT = 180

pytestmark = [pytest.mark.clients, pytest.mark.timeout(PROGRAM_TIMEOUT + 60)]


@pytest.fixture(scope="module")
def spark_call_sequence(java_kafka_clients):
    """The `java ... SparkCallSequence` command, compiled against kafka-clients 3.9.0."""
    return java_kafka_clients(CONNECTOR_KAFKA_CLIENTS).program(JAVA_SOURCE)


def run_sequence(command: list[str], bootstrap: str, *options: str) -> str:
    try:
        done = subprocess.run([*command, bootstrap, "--timeout", str(STEP_TIMEOUT), *options],
                              capture_output=True, text=True, timeout=PROGRAM_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as expired:
        output = expired.stdout or ""
        if isinstance(output, bytes):
            output = output.decode(errors="replace")
        pytest.fail(f"SparkCallSequence did not finish in {PROGRAM_TIMEOUT}s; its output so far:\n{output}",
                    pytrace=False)
    output = done.stdout + (f"\n--- stderr ---\n{done.stderr}" if done.stderr.strip() else "")
    print(output)
    if done.returncode != 0:
        pytest.fail(f"SparkCallSequence exited with status {done.returncode}:\n{output}", pytrace=False)
    assert "ALL CHECKS PASSED" in done.stdout, f"exited 0 without passing every check:\n{output}"
    return done.stdout


def sink_batches(bootstrap: str, topic: str, partition: int):
    """Every batch header in one partition of the sink topic, read raw with our own wire client."""
    headers, offset = [], 0
    with WireClient(bootstrap) as client:
        while True:
            response = client.call("Fetch", 12, {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
                "topics": [{"topic": topic, "partitions": [
                    {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]})
            part = response.responses[0].partitions[0]
            assert part.error_code == 0, ErrorCode(part.error_code)
            batches = [header for header, _ in decode_batches(bytes(part.records or b""))]
            if not batches:
                return headers
            headers += batches
            offset = batches[-1].next_offset


def test_spark_connector_call_sequence(shared_broker, spark_call_sequence):
    output = run_sequence(spark_call_sequence, shared_broker.bootstrap)

    # The sink's producer was left at its defaults: it must have been idempotent, i.e. it got a
    # producer id from InitProducerId and numbered its batches, which only shows in the batches.
    found = re.search(r"SINK TOPIC (\S+) \{(.*)\}", output)
    assert found, f"the program did not name its sink topic:\n{output}"
    topic = found.group(1)
    expected_counts = {int(p): int(n) for p, n in re.findall(r"(\d+)=(\d+)", found.group(2))}
    producer_ids = set()
    for partition, count in expected_counts.items():
        headers = sink_batches(shared_broker.bootstrap, topic, partition)
        assert sum(h.records_count for h in headers) == count
        next_sequence = 0
        for header in headers:
            assert header.producer_id >= 0 and header.producer_epoch >= 0, \
                f"sink batch at offset {header.base_offset} has no producer id: the default producer was not idempotent"
            assert header.base_sequence == next_sequence, (f"sink batch at offset {header.base_offset}: base "
                                                           f"sequence {header.base_sequence}, expected {next_sequence}")
            next_sequence += header.records_count
            producer_ids.add(header.producer_id)
    assert len(producer_ids) == 1, f"one producer wrote the sink, yet batches carry producer ids {producer_ids}"


def test_compacted_sink_topic_refuses_records_without_key(shared_broker, spark_call_sequence):
    """Spark's sink writing a null key column to the compacted changelog topic gets INVALID_RECORD,
    as from Kafka, instead of a record that compaction could never keep."""
    run_sequence(spark_call_sequence, shared_broker.bootstrap, "--compacted-null-key")


def test_legacy_pattern_subscription_through_a_consumer_group(shared_broker, spark_call_sequence):
    """spark.sql.streaming.kafka.useDeprecatedOffsetFetching=true: the driver subscribes a
    KafkaConsumer to the pattern in a group instead of listing topics with Admin."""
    run_sequence(spark_call_sequence, shared_broker.bootstrap, "--legacy-pattern-subscription")
