"""The reference Apache Kafka: resolved from Maven Central, run as a KRaft single node, its tools run.

kafka-wire is judged against the real broker. This module gets Kafka the way users get it (the
`org.apache.kafka:kafka_2.13` and `kafka-tools` artifacts, resolved by Maven from
compat/reference/pom.xml into .deps/kafka-<version>/libs, the distribution's libs/ layout), and
runs it as the quickstart does: one process that is broker and controller (KRaft), storage
formatted first, `-Xmx1G -Xms1G` with G1.

    with running_reference_kafka("4.3.0") as kafka:
        WireClient(kafka.bootstrap).call("Metadata", 12, {...})
        kafka.tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", kafka.bootstrap, "--list")

`kafka-wire compat reference --kafka-version 4.3.0` starts one for people (prints its bootstrap,
runs until Ctrl-C); tests/conftest.py's `reference_kafka` fixture starts one per version for a session.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

from testing.processes import ManagedProcess, ProcessFailure, free_port, property_value, scratch_directory
# compat/tool_compare.py's ToolSession JVM runs with it (a pipe to and from it, not a log file).

REPO_ROOT = Path(__file__).resolve().parent.parent
POM = REPO_ROOT / "compat" / "reference" / "pom.xml"
LOG4J_CONFIG = REPO_ROOT / "compat" / "reference" / "log4j2.properties"
TOOLS_LOG4J_CONFIG = REPO_ROOT / "compat" / "reference" / "tools-log4j2.properties"
DEPS = REPO_ROOT / ".deps"
# The versions the project compares against: the newest 4.x, and the 3.9 line Spark 4.0's connector
# is built on. Any released version resolves; these are the ones the test set-up installs.
KAFKA_4 = "4.3.0"
KAFKA_3 = "3.9.1"
REFERENCE_VERSIONS = (KAFKA_4, KAFKA_3)
# The quickstart's JVM settings (bin/kafka-server-start.sh: KAFKA_HEAP_OPTS="-Xmx1G -Xms1G";
# kafka-run-class.sh: G1 with a 20 ms pause goal).
SERVER_JVM_OPTIONS = ("-Xmx1G", "-Xms1G", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                      "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                      "-Djava.awt.headless=true")
# The command-line tools' (kafka-run-class.sh default heap for tools).
TOOL_JVM_OPTIONS = ("-Xmx512M", "-XX:+UseG1GC", "-Djava.awt.headless=true")


class ReferenceKafkaUnavailable(RuntimeError):
    """The reference Kafka could not be resolved (no Maven, or Maven Central unreachable)."""


# The reference broker did not start, or died (the message carries the end of its log): the process
# runner's failure, under the name the compat commands catch.
ReferenceKafkaFailure = ProcessFailure


def libs_dir(version: str) -> Path:
    return DEPS / f"kafka-{version}" / "libs"


def _stamp(version: str) -> Path:
    return DEPS / f"kafka-{version}" / "RESOLVED"


def _wanted_stamp() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def is_installed(version: str) -> bool:
    stamp = _stamp(version)
    return stamp.is_file() and stamp.read_text().strip() == _wanted_stamp() and \
        (libs_dir(version) / f"kafka_2.13-{version}.jar").is_file()


def install(version: str, quiet: bool = True) -> Path:
    """Resolves Kafka `version` (broker, tools, a log4j 2 binding) into .deps/kafka-<version>/libs
    with Maven (its local repository caches the downloads). Idempotent; returns the libs folder."""
    if is_installed(version):
        return libs_dir(version)
    mvn = shutil.which("mvn")
    if not mvn:
        raise ReferenceKafkaUnavailable("Maven (mvn) is not installed; scripts/setup-tests.sh installs it")
    target = libs_dir(version)
    partial = target.with_name("libs.partial")
    shutil.rmtree(partial, ignore_errors=True)
    command = [mvn, "-B", "-q", "-f", str(POM), f"-Dkafka.version={version}",
               "dependency:copy-dependencies", f"-DoutputDirectory={partial}"]
    done = subprocess.run(command, capture_output=quiet, text=True, timeout=900)
    if done.returncode != 0:
        output = (done.stdout or "") + (done.stderr or "")
        raise ReferenceKafkaUnavailable(f"could not resolve Apache Kafka {version} from Maven Central "
                                        f"(exit {done.returncode}):\n{output[-4000:]}")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)  # a half-resolved folder never looks installed
    _stamp(version).write_text(_wanted_stamp() + "\n")
    return target


def java() -> str:
    path = shutil.which("java")
    if not path:
        raise ReferenceKafkaUnavailable("java is not installed")
    return path


def java_command(version: str, main_class: str, *args: str, jvm_options: tuple[str, ...] = TOOL_JVM_OPTIONS,
                 log_config: Path = TOOLS_LOG4J_CONFIG) -> list[str]:
    """The `java` command line that runs `main_class` of Kafka `version` as bin/kafka-run-class.sh does
    (a tool's logging by default: warnings on stderr)."""
    return [java(), *jvm_options, f"-Dlog4j2.configurationFile={log_config}",
            "-cp", str(libs_dir(version) / "*"), main_class, *args]


class ReferenceKafka(ManagedProcess):
    """One Apache Kafka process (KRaft broker+controller, node id 1) on 127.0.0.1:`port`; ready when
    it answers Metadata naming itself (KRaft: it has caught up with the metadata log and been
    unfenced), not merely when the port accepts connections."""

    NODE_ID = 1

    def __init__(self, version: str, data_dir: Path, port: int | None = None,
                 config: Mapping[str, object] | None = None, startup_timeout: float = 120.0,
                 jvm_options: tuple[str, ...] = SERVER_JVM_OPTIONS, format_args: tuple[str, ...] = (),
                 controller_port: int | None = None):
        self.version = version
        self.format_args = tuple(format_args)  # e.g. ("--add-scram", "SCRAM-SHA-256=[name=admin,password=pw]")
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.controller_port = controller_port  # given when `config` names its own listeners
        while not self.controller_port or self.controller_port == self.port:
            # The OS may hand out the port it just gave for the broker's listener again (both probes
            # closed at once): Kafka then refuses two listeners on one port.
            self.controller_port = free_port()
        self.config = dict(config or {})
        self.jvm_options = jvm_options
        self.log_dir = self.data_dir / "data"
        self.properties_path = self.data_dir / "server.properties"
        self.cluster_id = self._cluster_id()
        super().__init__(f"Apache Kafka {version} on {self.bootstrap}", None, self.data_dir / "kafka.log",
                         startup_timeout=startup_timeout, stop_timeout=60.0, poll_interval=0.25)

    @staticmethod
    def _cluster_id() -> str:
        import base64

        while True:  # as Kafka's Uuid.randomUuid: never one that begins with "-" (read as an option)
            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            if not cluster_id.startswith("-"):
                return cluster_id

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def properties(self) -> dict[str, str]:
        """server.properties: a KRaft single node (the quickstart's), then `config` on top."""
        settings = {
            "process.roles": "broker,controller",
            "node.id": str(self.NODE_ID),
            "controller.quorum.voters": f"{self.NODE_ID}@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://{self.bootstrap},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.bootstrap}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            # A single node: the internal topics' replication factors must be 1 (the quickstart's).
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
        settings.update({key: property_value(value) for key, value in self.config.items()})
        return settings

    def _write_properties(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        text = "".join(f"{key}={value}\n" for key, value in self.properties().items())
        self.properties_path.write_text(text)

    def format_storage(self) -> None:
        self._write_properties()
        command = java_command(self.version, "kafka.tools.StorageTool", "format", "-t", self.cluster_id,
                               "-c", str(self.properties_path), "--ignore-formatted", *self.format_args)
        with open(self.log_path, "ab") as log:
            log.write(f"=== {' '.join(command)}\n".encode())
            log.flush()
            done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=120)
        if done.returncode != 0:
            raise ReferenceKafkaFailure(f"kafka-storage format failed (exit {done.returncode})\n{self.log_report()}")

    @property
    def command(self) -> list[str]:
        return java_command(self.version, "kafka.Kafka", str(self.properties_path), jvm_options=self.jvm_options,
                            log_config=LOG4J_CONFIG)

    def start(self) -> ReferenceKafka:
        if not self.is_running() and not (self.log_dir / "meta.properties").is_file():
            self.format_storage()
        return super().start()

    def is_ready(self) -> bool:
        from client import WireClient

        with WireClient(self.bootstrap, timeout=5.0) as client:
            answer = client.call("Metadata", 12, {"topics": [], "allow_auto_topic_creation": False,
                                                  "include_topic_authorized_operations": False})
        return any(b.node_id == self.NODE_ID for b in answer.brokers)

    def tool(self, main_class: str, *args: str, input: str | None = None, timeout: float = 180.0,
             env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
        """Runs one of Kafka's command-line tools (its main class) of this version."""
        return run_tool(self.version, main_class, *args, input=input, timeout=timeout, env=env)


def run_tool(version: str, main_class: str, *args: str, input: str | None = None, timeout: float = 180.0,
             env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    """Runs Kafka `version`'s tool `main_class` (e.g. org.apache.kafka.tools.TopicCommand) with `args`;
    any broker's bootstrap can be among them (ours or Kafka's). Output captured as text."""
    command = java_command(version, main_class, *args)
    return subprocess.run(command, input=input, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})),
                          stdin=None if input is not None else subprocess.DEVNULL)


@contextlib.contextmanager
def running_reference_kafka(version: str = KAFKA_4, data_dir: str | os.PathLike | None = None,
                            port: int | None = None, config: Mapping[str, object] | None = None,
                            jvm_options: tuple[str, ...] = SERVER_JVM_OPTIONS,
                            format_args: tuple[str, ...] = (),
                            controller_port: int | None = None) -> Iterator[ReferenceKafka]:
    """A started reference Kafka for the block (installed first when needed); stopped after."""
    install(version)
    with scratch_directory(data_dir, f"reference-kafka-{version}-", "reference Kafka") as folder:
        kafka = ReferenceKafka(version, folder, port=port, config=config, jvm_options=jvm_options,
                               format_args=format_args, controller_port=controller_port)
        try:
            kafka.start()
            yield kafka
        except BaseException as error:
            if isinstance(error, Exception) and not isinstance(error, ReferenceKafkaFailure):
                error.add_note(kafka.log_report())
            raise
        finally:
            kafka.stop()
