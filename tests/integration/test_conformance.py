"""The differential conformance suite against the real Apache Kafka, as CI runs it.

Runs `kafka-wire compat --against-kafka 4.3.0 --quick` (the command people run, see
compat/conformance/) into a scratch report and fails on any unexplained difference between Kafka's
answers and ours, naming each. The full run, 3.9 too, is `kafka-wire compat --against-kafka 3.9.1`
(docs/conformance.md); compat/CONFORMANCE.md is the committed report of the full runs.

When this test is to run in a session, tests/conftest.py starts its command with the session's first
test (start_early), so that it runs beside the tests before this one (it mostly waits on the
reference Kafka); this test then judges it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compat.reference_kafka import KAFKA_4, ReferenceKafkaUnavailable, install
from tests.compat_command import CompatCommand, selected, start_early, started_early
from tests.conftest import missing_tool

pytestmark = [pytest.mark.clients, pytest.mark.timeout(1500)]

COMMAND_TIMEOUT = 1400
EARLY = "conformance-quick-4"  # start_early's name for this test's command


def command_args(report: Path) -> list[str]:
    return ["--against-kafka", KAFKA_4, "--quick", "--results", str(report)]


def start_beside(session: pytest.Session, folder: Path) -> None:
    """Starts this test's command now, its report in `folder`, when this test is to run in `session`
    and Kafka 4 is installed (else the test itself says what is missing)."""
    if not selected(session, "test_conformance.py::test_kafka_wire_answers_as_apache_kafka_4"):
        return
    try:
        install(KAFKA_4)
    except ReferenceKafkaUnavailable:
        return
    folder.mkdir(parents=True, exist_ok=True)
    start_early(EARLY, command_args(folder / "CONFORMANCE.md"), COMMAND_TIMEOUT)


def test_kafka_wire_answers_as_apache_kafka_4(tmp_path):
    try:
        install(KAFKA_4)
    except ReferenceKafkaUnavailable as error:
        missing_tool(f"Apache Kafka {KAFKA_4} ({error})")
    running = started_early(EARLY) or CompatCommand(command_args(tmp_path / "CONFORMANCE.md"), COMMAND_TIMEOUT)
    report = Path(running.args[running.args.index("--results") + 1])
    done, output = running.result()
    summary = json.loads(report.with_suffix(".json").read_text())[KAFKA_4] if report.with_suffix(".json").exists() else None
    assert summary is not None, f"no report written (exit {done.returncode}):\n{output[-6000:]}"
    assert summary["cases"] > 0
    assert done.returncode == 0 and summary["unexplained"] == 0, \
        f"{summary['unexplained']} cases differ from Apache Kafka {KAFKA_4} without explanation:\n{output[-8000:]}"
