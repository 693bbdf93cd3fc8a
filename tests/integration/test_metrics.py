"""The Prometheus endpoint of a broker process, scraped over HTTP after producing, fetching and
committing: request counters and latency per API, bytes, connections, partitions, log sizes
(checked against the segment files on disk), and consumer lag. Also `--log-format json`."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from testing.broker_process import free_port, running_broker
from client import WireClient
from kafka_wire.record_codec import Record, build_batch

pytestmark = pytest.mark.timeout(120)

TOPIC = "metered"


def scrape(port: int, path: str = "/metrics") -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name: str, default: float | None = None, **labels) -> float:
    key = (name, tuple(sorted(labels.items())))
    if default is not None:
        return samples.get(key, default)
    return samples[key]


@pytest.fixture(scope="module")
def metered_broker(tmp_path_factory):
    port = free_port()
    with running_broker(tmp_path_factory.mktemp("metrics"),
                        config={"metrics.port": port, "group.initial.rebalance.delay.ms": 0}) as broker:
        broker.metrics_port = port
        yield broker


def _produce(client: WireClient, partition: int, values: list[bytes]) -> None:
    batch = build_batch([Record(i, 0, None, v) for i, v in enumerate(values)])
    response = client.call("Produce", 9, {"acks": -1, "timeout_ms": 10000, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": partition, "records": batch}]}]})
    assert response.responses[0].partition_responses[0].error_code == 0


def _fetch(client: WireClient, partition: int) -> int:
    response = client.call("Fetch", 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                                         "topics": [{"topic": TOPIC, "partitions": [
                                             {"partition": partition, "fetch_offset": 0,
                                              "partition_max_bytes": 1 << 20}]}]})
    return len(response.responses[0].partitions[0].records or b"")


def test_requests_bytes_connections_and_logs_are_counted(metered_broker):
    port = metered_broker.metrics_port
    before = scrape(port)
    with WireClient(metered_broker.bootstrap) as client:
        client.call("CreateTopics", 7, {"topics": [{"name": TOPIC, "num_partitions": 2, "replication_factor": 1}],
                                        "timeout_ms": 10000})
        _produce(client, 0, [b"x" * 100] * 5)
        _produce(client, 0, [b"y" * 100] * 3)
        _produce(client, 1, [b"z"])
        fetched = _fetch(client, 0)
        assert fetched > 800
        during = scrape(port)
    after = scrape(port)

    def moved(name, **labels):
        return value(after, name, 0, **labels) - value(before, name, 0, **labels)

    assert moved("kafka_wire_requests_total", api="Produce", version="9") == 3
    assert moved("kafka_wire_requests_total", api="Fetch", version="12") == 1
    assert moved("kafka_wire_requests_total", api="CreateTopics", version="7") == 1
    assert moved("kafka_wire_request_duration_seconds_count", api="Produce", version="9") == 3
    assert moved("kafka_wire_request_duration_seconds_bucket", api="Produce", version="9", le="+Inf") == 3
    assert moved("kafka_wire_request_duration_seconds_sum", api="Produce", version="9") > 0
    assert moved("kafka_wire_bytes_in_total", api="Produce") > 900  # the records' bytes and more
    assert moved("kafka_wire_bytes_out_total", api="Fetch") > fetched
    assert moved("kafka_wire_connections_created_total") >= 1
    assert value(during, "kafka_wire_connections") >= 1
    assert value(after, "kafka_wire_under_replicated_partitions") == 0

    assert value(after, "kafka_wire_topics") >= 1
    assert value(after, "kafka_wire_partitions") >= 2
    assert value(after, "kafka_wire_log_end_offset", topic=TOPIC, partition="0") == 8
    assert value(after, "kafka_wire_log_end_offset", topic=TOPIC, partition="1") == 1
    assert value(after, "kafka_wire_log_start_offset", topic=TOPIC, partition="0") == 0
    # The log size is what the segment files hold on disk.
    on_disk = sum(f.stat().st_size for f in (metered_broker.log_dir / f"{TOPIC}-0").glob("*.log"))
    assert on_disk > 800
    assert value(after, "kafka_wire_log_size_bytes", topic=TOPIC, partition="0") == on_disk
    assert value(after, "process_resident_memory_bytes") > 0


def test_consumer_group_lag(metered_broker):
    topic, group = "lagging", "metered-group"
    b = ["--bootstrap-server", metered_broker.bootstrap]
    tool = [sys.executable, "-m", "cli"]
    subprocess.run([*tool, "topics", "create", *b, "--topic", topic, "--partitions", "1"], check=True,
                   capture_output=True, timeout=60)
    subprocess.run([*tool, "produce", *b, "--topic", topic], input="".join(f"{i}\n" for i in range(12)),
                   check=True, capture_output=True, text=True, timeout=60)
    subprocess.run([*tool, "consume", *b, "--topic", topic, "--group", group, "--from-beginning",
                    "--max-messages", "5", "--timeout-ms", "10000"], check=True, capture_output=True, timeout=60)
    samples = scrape(metered_broker.metrics_port)
    labels = {"group": group, "topic": topic, "partition": "0"}
    assert value(samples, "kafka_wire_consumer_group_committed_offset", **labels) == 5
    assert value(samples, "kafka_wire_consumer_group_lag", **labels) == 7
    assert value(samples, "kafka_wire_consumer_group_lag_sum", group=group) == 7
    assert value(samples, "kafka_wire_consumer_group_members", group=group) == 0  # it left


def test_other_paths_are_not_found(metered_broker):
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(f"http://127.0.0.1:{metered_broker.metrics_port}/nope", timeout=10)
    assert error.value.code == 404
    assert value(scrape(metered_broker.metrics_port, "/"), "kafka_wire_under_replicated_partitions") == 0


def test_json_log_format_writes_one_object_per_line(tmp_path):
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "cli", "--log-format", "json", "serve",
                                "--set", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                                "--set", f"log.dirs={tmp_path}"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, "the broker did not start"
                time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0
    entries = [json.loads(line) for line in stderr.splitlines()]
    assert entries and all({"time", "level", "logger", "message"} <= set(e) for e in entries)
    assert any(e["message"].startswith("listening on PLAINTEXT://127.0.0.1") for e in entries)
    assert entries[-1]["message"] == "shut down cleanly"
