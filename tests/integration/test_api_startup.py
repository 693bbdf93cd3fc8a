"""`kafka-wire serve`: the address it logs, clean exits on SIGTERM and SIGINT, refused configs, and
server.properties read as Kafka (java.util.Properties) reads it."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testing.broker_process import REPO_ROOT, free_port
from client import WireClient

from wire_cases import BROKER_RESOURCE, metadata, unique

SERVE = [sys.executable, "-m", "cli", "serve"]
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


# `kafka-wire serve`'s own log lines; anything else on stderr is the one line of a refused start.
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO) \[")


def refused(args: list[str], status: int, *, prefix: list[str] = ()) -> str:
    """Run `kafka-wire serve` that must stop at start: no traceback anywhere, the exit status, and
    one line on stderr besides the INFO log; that line, without its `kafka-wire: `."""
    result = subprocess.run([*prefix, *SERVE, *args], cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=60)
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.returncode == status, output
    lines = [line for line in result.stderr.splitlines() if not LOG_LINE.match(line)]
    assert len(lines) == 1 and lines[0].startswith("kafka-wire: "), output
    return lines[0].removeprefix("kafka-wire: ")


def test_unknown_keys_are_accepted_with_a_warning(tmp_path):
    """Kafka accepts keys it does not know (4.3.0 logs nothing of them); we start too and warn of
    each, a Kafka setting we do without told from a typo. listener.name.* overrides are known keys.
    The file is read as java.util.Properties reads it (ISO 8859-1 when not UTF-8), and missing
    parents of log.dirs are created, as Kafka creates them."""
    data = tmp_path / "missing" / "parents" / "data"
    properties = tmp_path / "server.properties"
    properties.write_bytes(b"# caf\xe9 (ISO 8859-1)\n"
                           b"process.roles=broker,controller\n"
                           b"listener.name.plaintext.ssl.client.auth=none\n"
                           b"listeners=PLAINTEXT://127.0.0.1:0\n" + f"log.dirs={data}\n".encode())
    served = Served(["--config", str(properties), "--set", "log.retention.hour=1"])
    host, port = served.wait_for(LISTENING).groups()
    served.wait_for(STARTED)
    try:
        with WireClient(f"{host}:{port}") as client:
            assert metadata(client, None).brokers[0].port == int(port)
        assert data.is_dir()
    finally:
        assert served.stop(signal.SIGTERM) == 0
    warnings = [line.split("] ", 1)[1].strip() for line in served.lines if " WARNING [" in line]
    assert warnings == [
        "The configuration 'log.retention.hour' was supplied but isn't a known config.",
        "The configuration 'process.roles' is a Kafka broker config that kafka-wire does not use; ignored.",
    ], "".join(served.lines)


@pytest.mark.parametrize("setting,line", [
    # Kafka 4.3.0's ConfigException messages, word for word.
    ("num.partitions=abc", "Invalid value abc for configuration num.partitions: Not a number of type INT"),
    ("num.partitions=0", "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
    ("message.max.bytes=99999999999",
     "Invalid value 99999999999 for configuration message.max.bytes: Not a number of type INT"),
    ("auto.create.topics.enable=maybe",
     "Invalid value maybe for configuration auto.create.topics.enable: Expected value to be either true or false"),
    ("log.cleanup.policy=foo",
     "Invalid value foo for configuration log.cleanup.policy: String must be one of: compact, delete"),
    ("compression.type=brotli", "Invalid value brotli for configuration compression.type: String must be one "
                                "of: uncompressed, zstd, lz4, snappy, gzip, producer"),
    # Kafka's reasons (its listener parser's), under the ConfigException form naming key and value.
    ("listeners=localhost:9092", "Invalid value localhost:9092 for configuration listeners: Unable to parse "
                                 "localhost:9092 to a broker endpoint (expected NAME://host:port)"),
    ("listeners=PLAINTEXT://127.0.0.1:abc", "Invalid value PLAINTEXT://127.0.0.1:abc for configuration listeners: "
                                            "Unable to parse PLAINTEXT://127.0.0.1:abc to a broker endpoint "
                                            "(expected NAME://host:port)"),
    ("listeners=PLAINTEXT://127.0.0.1:99999", "Invalid value PLAINTEXT://127.0.0.1:99999 for configuration "
                                              "listeners: invalid port number 99999 in PLAINTEXT://127.0.0.1:99999 "
                                              "(0-65535; 0 picks a free port)"),
    ("listeners=PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
     "Invalid value PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0 for configuration listeners: "
     "Each listener must have a different name"),
    ("listeners=FOO://127.0.0.1:0", "No security protocol defined for listener FOO (listener.security.protocol.map)"),
    ("log.retention.ms", "--set expects key=value, got 'log.retention.ms'"),
])
def test_bad_config_values_are_refused_with_status_2(tmp_path, setting, line):
    assert refused(["--set", f"log.dirs={tmp_path}", "--set", setting], 2) == line


def test_config_file_that_cannot_be_read_is_refused_with_status_2(tmp_path):
    missing = tmp_path / "nowhere.properties"
    assert refused(["--config", str(missing)], 2) == \
        f"Cannot read the configuration file {missing}: No such file or directory"
    assert refused(["--config", str(tmp_path)], 2) == f"Cannot read the configuration file {tmp_path}: Is a directory"


def test_data_of_another_node_id_is_refused_with_status_2(tmp_path):
    (tmp_path / "meta.properties").write_text("version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\nnode.id=1\n")
    assert refused(["--set", f"log.dirs={tmp_path}", "--set", "node.id=7"], 2) == (
        f"Stored node id 1 doesn't match previous node id 7 in {tmp_path / 'meta.properties'}. If you moved your "
        "data, make sure your configured node id matches. If you intend to create a new node, you should remove "
        "all data in your data directories.")


def _unusable(log_dir: str) -> list[str]:
    return ["--set", "listeners=PLAINTEXT://127.0.0.1:0", "--set", f"log.dirs={log_dir}"]


@pytest.mark.parametrize("log_dir,reason", [
    ("/proc/nope", "cannot create it: No such file or directory"),
    ("/proc", "cannot write in it: No such file or directory"),
    ("/sys/nope", "cannot create it: "),  # Operation not permitted, or Read-only file system in a container
])
def test_log_dir_on_a_virtual_file_system_is_refused_with_status_1(log_dir, reason):
    if not Path(log_dir).parent.is_dir():
        pytest.skip(f"no {Path(log_dir).parent} here")
    line = refused(_unusable(log_dir), 1)
    assert line.startswith(f"Failed to create or validate data directory {log_dir}: {reason}"), line


def test_log_dir_where_a_file_is_is_refused_with_status_1(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    assert refused(_unusable(str(a_file)), 1) == \
        f"Failed to create or validate data directory {a_file}: it exists and is not a directory"
    assert refused(_unusable(str(a_file / "data")), 1) == \
        f"Failed to create or validate data directory {a_file / 'data'}: cannot create it: Not a directory"


def test_log_dir_on_a_read_only_mount_is_refused_with_status_1(tmp_path):
    """Root writes through any permission bits: a read-only mount (tmpfs, in a mount namespace of
    the broker's own) is what stops it."""
    mount_point = tmp_path / "ro"
    mount_point.mkdir()
    in_namespace = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                    'mount -t tmpfs -o ro,size=1m tmpfs "$0" && exec "$@"', str(mount_point)]
    probe = subprocess.run([*in_namespace, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {probe.stderr.strip()}")
    assert refused(_unusable(str(mount_point)), 1, prefix=in_namespace) == \
        f"Failed to create or validate data directory {mount_point}: cannot write in it: Read-only file system"
    assert refused(_unusable(str(mount_point / "data")), 1, prefix=in_namespace) == \
        f"Failed to create or validate data directory {mount_point / 'data'}: cannot create it: Read-only file system"


@pytest.mark.parametrize("unreadable", [
    "recovery-point-offset-checkpoint",   # a checkpoint file
    "orders-0/00000000000000000000.log",  # a partition's segment
    "meta.properties",
])
@pytest.mark.parametrize("workers", [1, 2])
def test_log_dir_with_a_file_that_cannot_be_read_is_refused_with_status_1(tmp_path, unreadable, workers):
    """What root cannot read: a directory where a file must be (Kafka: "Error while loading log
    dir ..." with the file and the reason, then shutdown as every log dir failed); the supervisor
    of several workers finds it before it forks them (meta.properties, the checkpoint files)."""
    (tmp_path / unreadable).mkdir(parents=True)
    assert refused([*_unusable(str(tmp_path)), "--set", f"num.worker.processes={workers}"], 1) == \
        f"Error while loading log dir {tmp_path}: {tmp_path / unreadable}: Is a directory"


@pytest.mark.parametrize("workers", [1, 2])
def test_port_in_use_is_refused_with_status_1(tmp_path, workers):
    """Kafka: "Socket server failed to bind to 127.0.0.1:9092: Address already in use." The
    listener bound before the failing one closes. One process has opened its logs by then and
    closes them cleanly (the clean-shutdown marker); the supervisor of several workers binds
    before any worker opens a log, so the data directory is left as it was (a marker stays)."""
    workers_setting = ["--set", f"num.worker.processes={workers}"]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        bind_twice = ["--set", f"listeners=PLAINTEXT://127.0.0.1:0,SECOND://127.0.0.1:{port}",
                      "--set", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SECOND:PLAINTEXT",
                      "--set", f"log.dirs={tmp_path}", *workers_setting]
        assert refused(bind_twice, 1) == f"Socket server failed to bind to 127.0.0.1:{port}: Address already in use."
        marker = tmp_path / ".kafka_cleanshutdown"
        if workers == 1:
            assert marker.exists()
        else:
            assert not marker.exists()
            marker.touch()
            refused(bind_twice, 1)
            assert marker.exists()
        assert refused(["--set", "listeners=PLAINTEXT://127.0.0.1:0", "--set", f"metrics.port={port}",
                        "--set", f"log.dirs={tmp_path}", *workers_setting], 1) == \
            f"Metrics endpoint (metrics.host, metrics.port) failed to bind to 127.0.0.1:{port}: Address already in use."


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
