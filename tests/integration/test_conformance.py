"""The differential conformance suite against the real Apache Kafka, as CI runs it.

Runs `kafka-wire compat --against-kafka 4.3.0 --quick` (the command people run, see
compat/conformance/) into a scratch report and fails on any unexplained difference between Kafka's
answers and ours, naming each. The full run, 3.9 too, is `kafka-wire compat --against-kafka 3.9.1`
(docs/conformance.md); compat/CONFORMANCE.md is the committed report of the full runs.
"""

from __future__ import annotations

import json

import pytest

from compat.reference_kafka import KAFKA_4, ReferenceKafkaUnavailable, install
from tests.compat_command import run_compat
from tests.conftest import missing_tool

pytestmark = [pytest.mark.clients, pytest.mark.timeout(1500)]


def test_kafka_wire_answers_as_apache_kafka_4(tmp_path):
    try:
        install(KAFKA_4)
    except ReferenceKafkaUnavailable as error:
        missing_tool(f"Apache Kafka {KAFKA_4} ({error})")
    report = tmp_path / "CONFORMANCE.md"
    done, output = run_compat(["--against-kafka", KAFKA_4, "--quick", "--results", str(report)], 1400)
    summary = json.loads(report.with_suffix(".json").read_text())[KAFKA_4] if report.with_suffix(".json").exists() else None
    assert summary is not None, f"no report written (exit {done.returncode}):\n{output[-6000:]}"
    assert summary["cases"] > 0
    assert done.returncode == 0 and summary["unexplained"] == 0, \
        f"{summary['unexplained']} cases differ from Apache Kafka {KAFKA_4} without explanation:\n{output[-8000:]}"
