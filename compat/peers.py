"""Kafka Streams, Kafka Connect and MirrorMaker 2 as real processes, for tests/integration/test_peers_*.py.

compat/setup-peers.sh resolves them from Maven Central (compat/peers/pom.xml) into
.deps/peers-<version>/libs, at each reference version, and compiles the programs of compat/peers/src/
(the Streams application, a KafkaShareConsumer member) into .deps/peers-<version>/app. This module
builds their `java` command lines and runs them as `JavaProcess`es (testing/processes.py's runner:
own session, log file, SIGKILL-able, killed with the test process).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from compat.reference_kafka import REPO_ROOT, java
from testing.processes import ManagedProcess

DEPS = REPO_ROOT / ".deps"
LOG4J_CONFIG = REPO_ROOT / "compat" / "peers" / "log4j2.properties"
# Small heaps, and the C1 compiler only: these JVMs run for a minute on a busy 2-core machine, where
# C2 compiling in the background costs more than it gains.
JVM_OPTIONS = ("-Xmx512M", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
STREAMS_APP = "EosStreamsApp"
SHARE_CONSUMER_APP = "ShareConsumerApp"  # KafkaShareConsumer (KIP-932), tests/integration/test_share_java.py
CONNECT_DISTRIBUTED = "org.apache.kafka.connect.cli.ConnectDistributed"
MIRROR_MAKER = "org.apache.kafka.connect.mirror.MirrorMaker"
STREAMS_RESETTER = "org.apache.kafka.tools.StreamsResetter"


def peers_dir(version: str) -> Path:
    return DEPS / f"peers-{version}"


def is_installed(version: str) -> bool:
    return (peers_dir(version) / "BUILT").is_file() and all(
        (peers_dir(version) / "app" / f"{app}.class").is_file() for app in (STREAMS_APP, SHARE_CONSUMER_APP))


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


class JavaProcess(ManagedProcess):
    """One JVM (a Streams instance, a Connect worker, MirrorMaker) with its output in `log_path`; its
    users wait for what they need from it (a log line, a topic), so it is "ready" once spawned."""

    def __init__(self, name: str, command: list[str], log_path: Path):
        self.name = name
        super().__init__(name, command, log_path, cwd=REPO_ROOT, stop_timeout=60.0)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.is_file() else ""


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
