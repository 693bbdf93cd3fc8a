"""The real-client checks of the compatibility suite: run each client's program, read its features.

The programs are the ones the integration tests run (tests/clients/, see acceptance.py there):
each drives an unmodified client against a broker and ends its output with a line
`FEATURES-JSON: {"client": ..., "passed": ..., "features": {"fetch": "pass", ...}}`.
A client can have several runs (confluent-kafka plain and idempotent, kafkajs with and without a
consumer group); its row in the matrix merges them, a failure winning over a pass.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CLIENTS_DIR = REPO_ROOT / "tests" / "clients"
GROUP_CLIENTS_DIR = REPO_ROOT / "tests" / "integration" / "group_clients"
DEPS = REPO_ROOT / ".deps"
FEATURES_LINE_PREFIX = "FEATURES-JSON: "
PASS, FAIL, NOT_RUN = "pass", "fail", "not-run"


class Unavailable(Exception):
    """The client (or its runtime) is not installed here; scripts/setup-tests.sh installs it."""


@dataclass(frozen=True)
class ClientRun:
    """One program run: `command(bootstrap, quick)` builds its argv and environment."""

    client: str  # the matrix row it fills
    label: str  # what this run is, for the log
    command: Callable[[str, bool], tuple[list[str], dict[str, str] | None]]
    quick: bool = True  # part of the quick (CI) form too
    # For a program that prints no FEATURES-JSON line: the features its overall verdict stands for.
    implied: tuple[str, ...] = ()


@dataclass
class RunOutcome:
    run: ClientRun
    passed: bool = False
    features: dict[str, str] = field(default_factory=dict)
    detail: str = ""  # why it failed or did not run
    available: bool = True
    elapsed: float = 0.0
    output: str = ""


@dataclass
class ClientRow:
    client: str
    features: dict[str, str] = field(default_factory=dict)
    passed: bool | None = None  # None: no run of this client could start
    details: list[str] = field(default_factory=list)


def _python(program: str, *extra: str):
    def command(bootstrap: str, quick: bool):
        return [sys.executable, str(CLIENTS_DIR / program), bootstrap, *extra, *_sizes(quick)], None
    return command


def _sizes(quick: bool) -> list[str]:
    return ["--records", "10", "--timeout", "30"] if quick else ["--timeout", "30"]


def _kcat(bootstrap: str, quick: bool):
    kcat = shutil.which("kcat")
    if not kcat:
        raise Unavailable("kcat is not installed (apt-get install kcat)")
    return [sys.executable, str(CLIENTS_DIR / "kcat_check.py"), bootstrap, "--kcat", kcat, *_sizes(quick)], None


def _kafkajs(*extra: str, script: Path = CLIENTS_DIR / "node" / "check.js", sized: bool = True):
    def command(bootstrap: str, quick: bool):
        node = shutil.which("node")
        node_modules = DEPS / "node" / "node_modules"
        if not node or not (node_modules / "kafkajs" / "package.json").is_file():
            raise Unavailable(f"node or kafkajs (in {node_modules}) is not installed")
        return ([node, str(script), bootstrap, *extra, *(_sizes(quick) if sized else [])],
                dict(os.environ, NODE_PATH=str(node_modules)))
    return command


class JavaPrograms:
    """Compiles the Java client programs once per kafka-clients version (into a temporary folder)."""

    def __init__(self):
        self.classes: dict[tuple[str, str], Path] = {}
        self.scratch = Path(tempfile.mkdtemp(prefix="kafka-wire-compat-java-"))

    def jars(self, version: str) -> list[Path]:
        folder = DEPS / "java" / f"kafka-{version}"
        if not (folder / f"kafka-clients-{version}.jar").is_file():
            raise Unavailable(f"Java kafka-clients {version} is not installed (in {folder})")
        return sorted(folder.glob("*.jar"))

    def command(self, version: str, main_class: str, *extra: str, folder: Path = CLIENTS_DIR / "java",
                sized: bool = True):
        def command(bootstrap: str, quick: bool):
            java, javac = shutil.which("java"), shutil.which("javac")
            if not java or not javac:
                raise Unavailable("no JDK (java and javac)")
            source = folder / f"{main_class}.java"
            if not source.is_file():
                raise Unavailable(f"{source.relative_to(REPO_ROOT)} does not exist")
            classpath = os.pathsep.join(str(j) for j in self.jars(version))
            key = (version, main_class)
            if key not in self.classes:
                out = self.scratch / f"{main_class}-{version}"
                out.mkdir(parents=True, exist_ok=True)
                done = subprocess.run([javac, "-nowarn", "-d", str(out), "-cp", classpath, str(source)],
                                      capture_output=True, text=True, timeout=180)
                if done.returncode != 0:
                    raise CompileFailed(f"{source.name} does not compile against kafka-clients {version}:\n"
                                        f"{done.stdout}{done.stderr}")
                self.classes[key] = out
            sizes = (_sizes(quick) if main_class == "ClientCheck" else ["--timeout", "30"]) if sized else []
            return ([java, "-Dslf4j.internal.verbosity=ERROR", "-cp", f"{classpath}{os.pathsep}{self.classes[key]}",
                     main_class, bootstrap, *extra, *sizes], None)
        return command

    def cleanup(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)


class CompileFailed(Exception):
    """A Java program does not compile: reported as a failed run, not as a missing client."""


def client_runs(java: JavaPrograms) -> list[ClientRun]:
    """Every run, in matrix order."""
    return [
        ClientRun("kafka-python", "kafka_python_check.py", _python("kafka_python_check.py")),
        ClientRun("aiokafka", "aiokafka_check.py", _python("aiokafka_check.py")),
        ClientRun("confluent-kafka", "confluent_check.py", _python("confluent_check.py")),
        ClientRun("confluent-kafka", "confluent_check.py --idempotent",
                  _python("confluent_check.py", "--idempotent", "--codecs", "none,zstd")),
        ClientRun("kcat", "kcat_check.py", _kcat),
        ClientRun("kafkajs", "check.js", _kafkajs()),
        ClientRun("kafkajs", "check.js --group-consume", _kafkajs("--group-consume", "--codecs", "none")),
        ClientRun("kafkajs", "group_check.js", _kafkajs("60", script=GROUP_CLIENTS_DIR / "group_check.js", sized=False),
                  quick=False, implied=("groups",)),
        ClientRun("java 3.9.0", "ClientCheck (kafka-clients 3.9.0)", java.command("3.9.0", "ClientCheck")),
        ClientRun("java 3.9.0", "GroupCheck (kafka-clients 3.9.0, cooperative-sticky)",
                  java.command("3.9.0", "GroupCheck", "cooperative-sticky", "60", folder=GROUP_CLIENTS_DIR,
                               sized=False), quick=False, implied=("groups",)),
        ClientRun("java 4.3.0", "ClientCheck (kafka-clients 4.3.0)", java.command("4.3.0", "ClientCheck")),
        ClientRun("java 4.3.0", "GroupCheck (kafka-clients 4.3.0, range)",
                  java.command("4.3.0", "GroupCheck", "range", "60", folder=GROUP_CLIENTS_DIR, sized=False),
                  quick=False, implied=("groups",)),
        # Spark's connector on kafka-clients 3.9.0: Admin describeTopics/listOffsets on the driver,
        # assign + seek + poll with read_committed on the executors.
        ClientRun("spark call sequence", "SparkCallSequence (kafka-clients 3.9.0)",
                  java.command("3.9.0", "SparkCallSequence"), implied=("metadata", "list-offsets", "fetch")),
    ]


def parse_features(output: str) -> tuple[dict[str, str], bool] | None:
    """The FEATURES-JSON line of a program's output: (features, passed), or None when absent."""
    for line in reversed(output.splitlines()):
        if line.startswith(FEATURES_LINE_PREFIX):
            summary = json.loads(line[len(FEATURES_LINE_PREFIX):])
            return dict(summary.get("features", {})), bool(summary.get("passed"))
    return None


def run_client(run: ClientRun, bootstrap: str, quick: bool, timeout: float = 300.0) -> RunOutcome:
    outcome = RunOutcome(run)
    began = time.monotonic()
    try:
        argv, env = run.command(bootstrap, quick)
    except Unavailable as missing:
        outcome.available = False
        outcome.detail = str(missing)
        return outcome
    except CompileFailed as failure:
        outcome.detail = str(failure)
        return outcome
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                              env=env, cwd=REPO_ROOT)
        outcome.output = done.stdout + (f"\n--- stderr ---\n{done.stderr}" if done.stderr.strip() else "")
        returncode = done.returncode
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout.decode(errors="replace") if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        outcome.output = out
        returncode = None
    outcome.elapsed = time.monotonic() - began
    parsed = parse_features(outcome.output)
    outcome.passed = returncode == 0 and ("ALL CHECKS PASSED" in outcome.output or bool(parsed and parsed[1]))
    if parsed is not None:
        outcome.features, _ = parsed
    else:
        outcome.features = {feature: PASS if outcome.passed else FAIL for feature in run.implied}
    if returncode is None:
        outcome.detail = f"did not finish in {timeout:.0f}s"
    elif not outcome.passed:
        failed_lines = [line for line in outcome.output.splitlines() if "FAILED" in line]
        outcome.detail = failed_lines[0].strip() if failed_lines else f"exit status {returncode}"
    return outcome


def merge_rows(outcomes: list[RunOutcome]) -> list[ClientRow]:
    rows: dict[str, ClientRow] = {}
    for outcome in outcomes:
        row = rows.setdefault(outcome.run.client, ClientRow(outcome.run.client))
        if not outcome.available:
            row.details.append(f"{outcome.run.label}: not run ({outcome.detail})")
            continue
        row.passed = (row.passed is not False) and outcome.passed
        for feature, verdict in outcome.features.items():
            if verdict == FAIL or row.features.get(feature) != FAIL:
                row.features[feature] = verdict
        if not outcome.passed:
            row.details.append(f"{outcome.run.label}: {outcome.detail}")
    return list(rows.values())
