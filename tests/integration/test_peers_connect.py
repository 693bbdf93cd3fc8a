"""A Kafka Connect distributed worker (connect-runtime and connect-file from Maven Central) on
kafka-wire, with exactly.once.source.support=enabled.

The worker keeps its config, offset and status topics on kafka-wire. A FileStreamSource connector
(exactly.once.support=required: a second's records and its source offsets in one transaction)
copies a file that grows in three parts to a topic; while the second part is copied the
worker is SIGKILLed, with a transaction holding lines open, and started again: the source task resumes from the offsets
committed with the last committed transaction. A FileStreamSink connector then writes the topic,
read read_committed, to a file, which must equal the source file line for line: no line lost, no
line twice. (The sink is created after the restart because Connect's sinks are at-least-once: a
killed sink task re-delivers what came after its last offset commit.)

CI runs it with Connect 4.3.0; KW_SLOW=1 adds 3.9.1.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request

import pytest

from testing.broker_process import BrokerProcess, free_port
from compat import peers
from compat.reference_kafka import KAFKA_3, KAFKA_4
from tests.integration.peers_helpers import TopicReader, require_peers, wait_for_open_transaction

SLOW = os.environ.get("KW_SLOW") == "1"
LINES = 6000 if SLOW else 3000
TOPIC = "connect-lines"


class Worker:
    """One Connect distributed worker process and its REST API."""

    def __init__(self, version: str, bootstrap: str, folder):
        self.version = version
        self.port = free_port()
        self.folder = folder
        self.properties = peers.write_properties(folder / "worker.properties", {
            "bootstrap.servers": bootstrap,
            "group.id": "kafka-wire-connect",
            "listeners": f"http://127.0.0.1:{self.port}",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "config.storage.topic": "connect-configs",
            "offset.storage.topic": "connect-offsets",
            "status.storage.topic": "connect-status",
            "config.storage.replication.factor": 1,
            "offset.storage.replication.factor": 1,
            "status.storage.replication.factor": 1,
            "offset.flush.interval.ms": 1000,
            "exactly.once.source.support": "enabled",
            # Sinks read only committed records (an aborted source transaction is never copied).
            "consumer.isolation.level": "read_committed",
            "scheduled.rebalance.max.delay.ms": 1000,
            "plugin.discovery": "service_load",  # no class-path scan: a faster start
        })
        self.starts = 0
        self.process: peers.JavaProcess | None = None

    def start(self) -> None:
        self.starts += 1
        command = peers.java_command(self.version, peers.CONNECT_DISTRIBUTED, str(self.properties))
        self.process = peers.JavaProcess(f"Connect worker {self.version} (start {self.starts})", command,
                                         self.folder / f"worker-{self.starts}.log").start()
        self.wait_for(lambda: self.request("GET", "/connectors") is not None, "the REST API answering", 180)

    def request(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return json.loads(answer.read() or b"null")
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return None

    def create(self, name: str, config: dict) -> None:
        # The worker may still be joining its group (409 until it has a leader): retry until created.
        self.wait_for(lambda: self.request("PUT", f"/connectors/{name}/config", config) is not None,
                      f"connector {name} created", 120)

    def running(self, name: str) -> bool:
        status = self.request("GET", f"/connectors/{name}/status")
        return bool(status) and status["connector"]["state"] == "RUNNING" and bool(status["tasks"]) and \
            all(task["state"] == "RUNNING" for task in status["tasks"])

    def wait_for(self, condition, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if not self.process.is_running() or time.monotonic() > deadline:
                pytest.fail(f"{what}: not within {timeout:.0f}s (worker running: {self.process.is_running()})\n"
                            f"{self.process.log_report()}", pytrace=False)
            time.sleep(0.5)


def append_lines(path, start: int, stop: int) -> None:
    with open(path, "a") as file:
        file.writelines(f"line {i:06d} {'x' * (i % 50)}\n" for i in range(start, stop))


@pytest.mark.parametrize("version", [KAFKA_4, pytest.param(KAFKA_3, marks=pytest.mark.skipif(
    not SLOW, reason="Connect 3.9: KW_SLOW=1"))])
def test_connect_exactly_once_source_survives_a_worker_kill(version, tmp_path):
    require_peers(version)
    source, sink = tmp_path / "source.txt", tmp_path / "sink.txt"
    source.write_text("")
    broker = BrokerProcess(tmp_path / "broker", config={"group.initial.rebalance.delay.ms": 0}, startup_timeout=60)
    broker.start()
    worker = Worker(version, broker.bootstrap, tmp_path)
    reader = None
    try:
        worker.start()
        worker.create("file-source", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
            "file": str(source), "topic": TOPIC, "batch.size": "100",
            # A transaction per second of lines: the kill finds one open with lines in it.
            "exactly.once.support": "required", "transaction.boundary": "interval",
            "transaction.boundary.interval.ms": "1000"})
        reader = TopicReader(broker.bootstrap, {TOPIC: 1})
        uncommitted = TopicReader(broker.bootstrap, {TOPIC: 1}, committed=False)
        append_lines(source, 0, LINES // 3)
        reader.wait_for(lambda: reader.count(TOPIC) >= LINES // 6, "the first lines on the topic", 180,
                        worker.process.log_report)
        # Killed while copying the second part, with a transaction holding lines open.
        wait_for_open_transaction(reader, uncommitted, TOPIC,
                                  lambda: append_lines(source, LINES // 3, 2 * LINES // 3),
                                  "the second part under way", 180, worker.process.log_report)
        worker.process.kill()
        killed_at = reader.count(TOPIC)
        worker.start()
        append_lines(source, 2 * LINES // 3, LINES)
        worker.create("file-sink", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
            "file": str(sink), "topics": TOPIC})
        expected = source.read_text().splitlines()

        def sink_complete() -> bool:
            return sink.is_file() and len(sink.read_text().splitlines()) >= LINES

        worker.wait_for(sink_complete, f"{LINES} lines in the sink file", 300)
        assert worker.running("file-source") and worker.running("file-sink"), \
            worker.request("GET", "/connectors?expand=status")
        worker.process.stop()  # stops both connectors; the sink's last lines are flushed
        got = sink.read_text().splitlines()
        assert killed_at < LINES, killed_at
        assert got == expected, (
            f"the sink file differs from the source: {len(got)} lines for {len(expected)}; first difference at "
            f"line {next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))}")
    except BaseException as error:
        error.add_note(worker.process.log_report() if worker.process else "(no worker)")
        error.add_note(broker.log_report())
        raise
    finally:
        if reader:
            reader.close()
            uncommitted.close()
        if worker.process:
            worker.process.kill()
        problems = broker.finish()
    assert not problems, problems
