"""Kafka Streams, Kafka Connect and MirrorMaker 2 as real processes, for tests/integration/test_peers_*.py.

compat/setup-peers.sh resolves them from Maven Central (compat/peers/pom.xml) into
.deps/peers-<version>/libs, at each reference version, and compiles the Streams application of
compat/peers/src/ into .deps/peers-<version>/app. This module builds their `java` command lines and
runs them as `JavaProcess`es (own session, log file, SIGKILL-able, killed with the test process).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from compat.reference_kafka import REPO_ROOT, java

DEPS = REPO_ROOT / ".deps"
LOG4J_CONFIG = REPO_ROOT / "compat" / "peers" / "log4j2.properties"
# Small heaps, and the C1 compiler only: these JVMs run for a minute on a busy 2-core machine, where
# C2 compiling in the background costs more than it gains.
JVM_OPTIONS = ("-Xmx512M", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
STREAMS_APP = "EosStreamsApp"
CONNECT_DISTRIBUTED = "org.apache.kafka.connect.cli.ConnectDistributed"
MIRROR_MAKER = "org.apache.kafka.connect.mirror.MirrorMaker"
STREAMS_RESETTER = "org.apache.kafka.tools.StreamsResetter"


def peers_dir(version: str) -> Path:
    return DEPS / f"peers-{version}"


def is_installed(version: str) -> bool:
    return (peers_dir(version) / "BUILT").is_file() and (peers_dir(version) / "app" / f"{STREAMS_APP}.class").is_file()


def classpath(version: str) -> str:
    folder = peers_dir(version)
    return f"{folder / 'libs' / '*'}{os.pathsep}{folder / 'app'}"


def java_command(version: str, main_class: str, *args: str) -> list[str]:
    return [java(), *JVM_OPTIONS, f"-Dlog4j2.configurationFile={LOG4J_CONFIG}", "-cp", classpath(version),
            main_class, *args]


def write_properties(path: Path, settings: Mapping[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    return path


class JavaProcess:
    """One JVM (a Streams instance, a Connect worker, MirrorMaker) with its output in `log_path`."""

    def __init__(self, name: str, command: list[str], log_path: Path):
        self.name = name
        self.command = command
        self.log_path = Path(log_path)
        self.process: subprocess.Popen | None = None

    def start(self) -> JavaProcess:
        from testing.broker_process import _die_with_parent

        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(f"=== {' '.join(self.command)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True, cwd=REPO_ROOT,
                                            preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        return self

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int | None:
        from testing.broker_process import signal_and_wait

        if self.process is not None and self.process.poll() is None:
            signal_and_wait(self.process, sig, timeout)
        return None if self.process is None else self.process.returncode

    def kill(self) -> int | None:
        return self.stop(signal.SIGKILL)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.is_file() else ""

    def log_report(self, lines: int = 80) -> str:
        from testing.broker_process import log_tail

        return f"--- last lines of {self.name} ({self.log_path}) ---\n{log_tail(self.log_path, lines)}\n--- end ---"


# compat/RESULTS.md's section on these peers is written by hand from measured runs (the tests are
# pytest tests, not part of `kafka-wire compat`'s run); `kafka-wire compat` keeps it when it rewrites
# the rest of the file.
SECTION_BEGIN = "<!-- peers: begin (Kafka Streams, Connect, MirrorMaker 2: tests/integration/test_peers_*.py) -->"
SECTION_END = "<!-- peers: end -->"


def kept_section(path: Path) -> str:
    """The peers section of the results file at `path` ("" when there is none)."""
    try:
        text = path.read_text()
    except OSError:
        return ""
    start, end = text.find(SECTION_BEGIN), text.find(SECTION_END)
    return "\n" + text[start:end + len(SECTION_END)] + "\n" if start >= 0 and end > start else ""
