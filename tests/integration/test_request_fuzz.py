"""Requests the broker fails to handle, and a structured request fuzzer against a real broker process.

A handler that raises is answered as Kafka answers it (KafkaApis.handle -> getErrorResponse:
UNKNOWN_SERVER_ERROR for every entry of the request), logged once with its traceback, and the
connection stays open; only a Produce with acks=0 (no answer to send) closes it, as in Kafka.

The fuzzer (compat/request_fuzz.py) sends random well-typed requests of every API and version
the broker advertises, over real sockets, and checks that every answer parses with the API's
response schema, that the connection is closed only where Kafka closes it, that no handler
failed (the broker log has no "error handling"), that the broker is still running, and that
librdkafka still produces and consumes afterwards. Seeded and deterministic: a failure names
the seed, API, version and case, and `request_case(seed, api, version, case, known)` rebuilds it.

Quick form in CI: KW_FUZZ_CASES (default 10) cases per API version with the seeds of
REGRESSION_SEEDS and seed 1. Longer form: KW_FUZZ_CASES=200 KW_FUZZ_SEEDS=1-20 (or KW_SLOW=1,
which means 100 cases for seeds 1-10).
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest

from testing.broker_process import BrokerProcess
from client import ConnectionClosed, WireClient
from compat.request_fuzz import fuzz_broker, prepare_broker

FUZZ_BROKER_CONFIG = {"group.initial.rebalance.delay.ms": 0, "num.partitions": 1}
# Seeds whose cases found a handler bug; each stays in the quick form (the bug is fixed).
#   1: DeleteTopics of a topic named with 249 characters (ENAMETOOLONG renaming its log dir to
#      *-delete); DescribeAcls/CreateAcls/DeleteAcls with enum codes Kafka does not know, closed
#      where Kafka 4.3.0 answers SECURITY_DISABLED (tests/unit/test_authorizer.py has both).
REGRESSION_SEEDS = [1]


def _fuzz_plan() -> tuple[list[int], int]:
    slow = os.environ.get("KW_SLOW") == "1"
    cases = int(os.environ.get("KW_FUZZ_CASES", "100" if slow else "10"))
    spec = os.environ.get("KW_FUZZ_SEEDS", "1-10" if slow else "")
    seeds = list(REGRESSION_SEEDS)
    for part in filter(None, spec.split(",")):
        low, _, high = part.partition("-")
        seeds += range(int(low), int(high or low) + 1)
    return sorted(set(seeds)), cases


def _handler_errors(broker: BrokerProcess) -> list[str]:
    return re.findall(r"ERROR \[kafka_wire\.server\] (error handling .*)", broker.log_path.read_text(errors="replace"))


def _produce_and_consume_with_librdkafka(bootstrap: str, topic: str) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(10):
        producer.produce(topic, key=b"k%d" % i, value=b"after the fuzz %d" % i)
    assert producer.flush(60) == 0
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"after-fuzz-{topic}",
                                         "auto.offset.reset": "earliest", "enable.auto.commit": True})
    consumer.subscribe([topic])
    got = []
    deadline = time.monotonic() + 120  # a bound for a hang, not a timed assertion
    try:
        while len(got) < 10 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            assert message.error() is None, message.error()
            got.append(message.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert got == [b"after the fuzz %d" % i for i in range(10)]


@pytest.mark.slow
@pytest.mark.parametrize("seed", _fuzz_plan()[0])
def test_random_requests_of_every_api_and_version_are_answered(tmp_path, seed):
    _, cases = _fuzz_plan()
    broker = BrokerProcess(tmp_path / "broker", config=FUZZ_BROKER_CONFIG, startup_timeout=60)
    broker.start()
    try:
        advertised, known = prepare_broker(broker.bootstrap)
        report = fuzz_broker(broker.bootstrap, advertised, seed, cases, known)
        assert broker.is_running(), "the broker died during the fuzz run"
        problems = [str(finding) for finding in report.findings]
        problems += [f"handler failed: {line}" for line in _handler_errors(broker)]
        assert not problems, (f"seed {seed}, {cases} cases per API version: {len(problems)} problems\n"
                              + "\n".join(problems[:60]))
        assert report.answered > 0 and report.sent == report.answered + report.unanswered_by_design + report.closed_as_kafka
        _produce_and_consume_with_librdkafka(broker.bootstrap, f"after-fuzz-{seed}")
        assert broker.is_running()
    except BaseException as error:
        error.add_note(broker.log_report())
        raise
    finally:
        problems = broker.finish()
    assert not problems, problems


# -- a handler that fails -------------------------------------------------------------------------------


class _BrokerWithFailingHandlers(BrokerProcess):
    @property
    def command(self) -> list[str]:
        command = super().command
        script = str(Path(__file__).with_name("broker_with_failing_handlers.py"))
        return [sys.executable, script, *command[command.index("serve"):]]


@pytest.fixture(scope="module")
def failing_broker(tmp_path_factory):
    broker = _BrokerWithFailingHandlers(tmp_path_factory.mktemp("failing-handlers"), startup_timeout=60)
    broker.start()
    yield broker
    problems = broker.finish()
    assert not problems, problems


def test_a_failing_handler_is_answered_unknown_server_error_and_the_connection_stays_open(failing_broker):
    with WireClient(failing_broker.bootstrap, client_id="failing") as client:
        # Inline failure (before any wait).
        beat = client.call("Heartbeat", 4, {"group_id": "boom", "generation_id": 1, "member_id": "m"})
        assert beat.error_code == -1
        # Failure inside a task (after a wait), every partition asked for echoed.
        fetched = client.call("Fetch", 12, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1000, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": "boom", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 100},
                                                        {"partition": 5, "fetch_offset": 0, "partition_max_bytes": 100}]}]})
        assert fetched.error_code == -1
        assert [(t.topic, [(p.partition_index, p.error_code, p.high_watermark) for p in t.partitions])
                for t in fetched.responses] == [("boom", [(0, -1, -1), (5, -1, -1)])]
        produced = client.call("Produce", 9, {"acks": 1, "timeout_ms": 1000, "topic_data": [
            {"name": "boom", "partition_data": [{"index": 0, "records": None}]}]})
        assert [(p.index, p.error_code, p.error_message) for t in produced.responses for p in t.partition_responses] \
            == [(0, -1, None)]
        # The same connection still serves.
        assert client.call("ApiVersions", 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0
        assert client.call("Heartbeat", 4, {"group_id": "other", "generation_id": 1, "member_id": "m"}).error_code != -1
    log = failing_broker.log_path.read_text(errors="replace")
    failures = [line.split(" (")[0] for line in _handler_errors(failing_broker)]
    assert [line for line in failures if "Produce" not in line] == [
        "error handling Heartbeat v4", "error handling Fetch v12"]
    assert "error handling Produce v9" in failures
    # Each logged once, with its traceback; nothing of it went to the client.
    assert log.count("RuntimeError: deliberate failure of Heartbeat for the test") == 1
    assert log.count("RuntimeError: deliberate failure of Fetch for the test") == 1


def test_a_failing_acks_0_produce_closes_the_connection_as_kafka_does(failing_broker):
    """ProduceRequest.getErrorResponse is null for acks=0, and Kafka then closes the connection."""
    with WireClient(failing_broker.bootstrap, client_id="failing") as client:
        client.call("Produce", 9, {"acks": 0, "timeout_ms": 1000, "topic_data": [
            {"name": "boom", "partition_data": [{"index": 0, "records": None}]}]}, expect_response=False)
        with pytest.raises((ConnectionClosed, ConnectionResetError, BrokenPipeError)):
            client.call("ApiVersions", 3, {"client_software_name": "t", "client_software_version": "1"})
    with WireClient(failing_broker.bootstrap) as client:
        assert client.call("ApiVersions", 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0
