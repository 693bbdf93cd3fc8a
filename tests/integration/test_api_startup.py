"""`kafka-wire serve`: the address it logs, clean exits on SIGTERM and SIGINT, refused configs, and
server.properties read as Kafka (java.util.Properties) reads it."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from broker.testing import REPO_ROOT, free_port
from broker.wire_client import WireClient

from wire_cases import BROKER_RESOURCE, metadata, unique

SERVE = [sys.executable, "-m", "broker.cli", "serve"]
STARTED = re.compile(r"kafka-wire started in ([0-9.]+) s")
LISTENING = re.compile(r"listening on PLAINTEXT://([0-9.]+):(\d+)")


class Served:
    """A `kafka-wire serve` process whose log we read as it comes."""

    def __init__(self, args: list[str]) -> None:
        self.process = subprocess.Popen(SERVE + args, cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []

    def wait_for(self, pattern: re.Pattern, timeout: float = 20) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            found = pattern.search(line)
            if found:
                return found
        raise AssertionError(f"no {pattern.pattern!r} in the broker's output:\n{''.join(self.lines)}")

    def stop(self, sig: int) -> int:
        self.process.send_signal(sig)
        try:
            status = self.process.wait(timeout=15)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        self.lines += self.process.stdout.readlines()
        return status


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_logs_the_bound_address_and_exits_cleanly(tmp_path, sig):
    """Port 0 binds a free port; the log says which, clients can use it, and the signal ends the
    broker with status 0 after "shut down cleanly"."""
    served = Served(["--set", "listeners=PLAINTEXT://127.0.0.1:0", "--set", f"log.dirs={tmp_path / 'data'}"])
    host, port = served.wait_for(LISTENING).groups()
    assert int(port) > 0
    assert float(served.wait_for(STARTED).group(1)) < 5
    with WireClient(f"{host}:{port}") as client:
        assert metadata(client, None).brokers[0].port == int(port)
    assert served.stop(sig) == 0
    assert any("shut down cleanly" in line for line in served.lines), "".join(served.lines)


@pytest.mark.parametrize("setting,mentions", [
    ("num.partitions=abc", "num.partitions"),
    ("num.partitions=0", "num.partitions"),
    ("auto.create.topics.enable=maybe", "auto.create.topics.enable"),
    ("compression.type=brotli", "compression.type"),
    ("listeners=localhost:9092", "localhost:9092"),
    ("log.retention.ms", "log.retention.ms"),  # no '='
])
def test_bad_config_values_are_refused_with_status_2(tmp_path, setting, mentions):
    result = subprocess.run(SERVE + ["--set", f"log.dirs={tmp_path}", "--set", setting], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2, result.stderr
    assert mentions in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_config_file_is_refused_with_status_2(tmp_path):
    result = subprocess.run(SERVE + ["--config", str(tmp_path / "nowhere.properties")], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "nowhere.properties" in result.stderr


def test_config_file_is_read_as_java_properties(tmp_path):
    """Comments (# and !), `key=value`, `key: value`, `key value`, a value continued over lines with a
    trailing backslash, and --set overriding the file."""
    port = free_port()
    properties = Path(tmp_path / "server.properties")
    properties.write_text(
        "# a comment\n"
        "! another comment\n"
        f"listeners = PLAINTEXT://127.0.0.1:{port}\n"
        f"log.dirs: {tmp_path / 'data'}\n"
        "num.partitions 4\n"
        "log.retention.ms=\\\n"
        "    86400\\\n"
        "    000\n"
        "message.max.bytes=1000\n"
        "\n"
        "   # an indented comment\n"
    )
    served = Served(["--config", str(properties), "--set", "message.max.bytes=2000000"])
    served.wait_for(STARTED)
    try:
        with WireClient(f"127.0.0.1:{port}") as client:
            response = client.call("DescribeConfigs", 4, {"resources": [
                {"resource_type": BROKER_RESOURCE, "resource_name": "1",
                 "configuration_keys": ["num.partitions", "log.retention.ms", "message.max.bytes"]}],
                "include_synonyms": False, "include_documentation": False})
            values = {c.name: c.value for c in response.results[0].configs}
            assert values == {"num.partitions": "4", "log.retention.ms": "86400000", "message.max.bytes": "2000000"}
            topic = unique("from-file")
            created = client.call("CreateTopics", 7, {"topics": [{"name": topic, "num_partitions": -1,
                                                                  "replication_factor": -1}], "timeout_ms": 5000})
            assert created.topics[0].num_partitions == 4
    finally:
        assert served.stop(signal.SIGTERM) == 0
