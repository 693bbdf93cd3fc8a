"""Unmodified Kafka clients against a kafka-wire broker: each runs the acceptance sequence.

The programs live in tests/clients/ (one per client, see acceptance.py for the sequence and the
plan they check against): create a topic through the client's admin API, produce with every
codec the client supports, read back with assign + seek to the beginning and no consumer group,
check every key/value/header/timestamp/offset, list offsets, delete the topic. Each is also a
command-line program (`python tests/clients/kafka_python_check.py HOST:PORT`) to run by hand.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from testing.broker_process import free_port, running_broker

CLIENTS = Path(__file__).resolve().parent.parent / "clients"
STEP_TIMEOUT = 30  # seconds any one step of a program may take (passed as --timeout)
PROGRAM_TIMEOUT = 240

pytestmark = [pytest.mark.clients, pytest.mark.timeout(PROGRAM_TIMEOUT + 60)]


def run_check(name: str, command: list[str], **kwargs) -> str:
    """Runs one client program; the test fails with the program's whole output unless it exits 0."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PROGRAM_TIMEOUT,
                              stdin=subprocess.DEVNULL, **kwargs)
    except subprocess.TimeoutExpired as expired:
        output = (expired.stdout or b"").decode(errors="replace") if isinstance(expired.stdout, bytes) \
            else (expired.stdout or "")
        pytest.fail(f"{name} did not finish in {PROGRAM_TIMEOUT}s; its output so far:\n{output}", pytrace=False)
    output = done.stdout
    if done.stderr.strip():
        output += f"\n--- {name} stderr ---\n{done.stderr}"
    print(output)  # shown for passing tests too with `pytest -rA` or `-s`
    if done.returncode != 0:
        pytest.fail(f"{name} exited with status {done.returncode}:\n{output}", pytrace=False)
    assert "ALL CHECKS PASSED" in done.stdout, f"{name} exited 0 without passing every check:\n{output}"
    return output


@pytest.mark.parametrize("program", ["kafka_python_check.py", "aiokafka_check.py", "confluent_check.py"],
                         ids=["kafka-python", "aiokafka", "confluent-kafka"])
def test_python_client(shared_broker, program):
    run_check(program, [sys.executable, str(CLIENTS / program), shared_broker.bootstrap,
                        "--timeout", str(STEP_TIMEOUT)])


def test_confluent_kafka_idempotent_producer(shared_broker):
    run_check("confluent_check.py --idempotent",
              [sys.executable, str(CLIENTS / "confluent_check.py"), shared_broker.bootstrap, "--idempotent",
               "--codecs", "none,zstd", "--timeout", str(STEP_TIMEOUT)])


def test_kcat(shared_broker, kcat):
    run_check("kcat_check.py", [sys.executable, str(CLIENTS / "kcat_check.py"), shared_broker.bootstrap,
                                "--kcat", kcat, "--timeout", str(STEP_TIMEOUT)])


@pytest.fixture(scope="session")
def java_client_check(java_kafka_clients):
    """Factory: the `java ... ClientCheck` command for a kafka-clients version (the one source
    must compile against each version's jars)."""

    def command(version: str) -> list[str]:
        return java_kafka_clients(version).program(CLIENTS / "java" / "ClientCheck.java")

    return command


@pytest.mark.parametrize("version", ["3.9.0", "4.3.0"])
def test_java_kafka_clients(shared_broker, java_client_check, version):
    run_check(f"Java kafka-clients {version}",
              [*java_client_check(version), shared_broker.bootstrap, "--timeout", str(STEP_TIMEOUT)])


def test_java_consumer_fetches_in_a_session(tmp_path, java_client_check):
    """Java 4.3.0's consumer keeps a fetch session (KIP-227): after its first full fetch the broker
    serves its fetches incrementally, as Kafka does (kafka_wire_incremental_fetches counts them)."""
    port = free_port()
    with running_broker(tmp_path, config={"metrics.port": port}) as broker:
        run_check("Java kafka-clients 4.3.0",
                  [*java_client_check("4.3.0"), broker.bootstrap, "--timeout", str(STEP_TIMEOUT)])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
    served = {sample.name: sample.value for family in text_string_to_metric_families(text)
              for sample in family.samples}
    print("incremental fetches:", served["kafka_wire_incremental_fetches_total"])
    assert served["kafka_wire_incremental_fetches_total"] > 0, served


def test_kafkajs(shared_broker, kafkajs):
    run_check("kafkajs check.js", [kafkajs.node, str(CLIENTS / "node" / "check.js"), shared_broker.bootstrap,
                                   "--timeout", str(STEP_TIMEOUT)], env=kafkajs.env())


def test_kafkajs_group_consumer(shared_broker, kafkajs):
    run_check("kafkajs check.js --group-consume",
              [kafkajs.node, str(CLIENTS / "node" / "check.js"), shared_broker.bootstrap, "--group-consume",
               "--codecs", "none,gzip", "--timeout", "20"], env=kafkajs.env())
