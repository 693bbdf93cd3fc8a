"""Fixtures shared by the test suite: real broker processes, and the real clients' toolchains.

- `broker`: a fresh broker for one test (its own port and data directory).
- `shared_broker`: one broker for the whole session, for tests that only need a working broker
  and keep to their own (unique) topic names, such as the real-client tests.
- `kcat`, `kafkajs`, `java_kafka_clients`: where scripts/setup-tests.sh installed each client.
  A missing one skips the test locally, with what to run, and fails it under CI (CI=true),
  where a missing install step must not pass as green.

When a test fails, the end of each broker log it used is added to the failure report.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from testing.broker_process import BrokerFailure, BrokerProcess

REPO_ROOT = Path(__file__).resolve().parent.parent
DEPS = REPO_ROOT / ".deps"
SETUP_HINT = "run scripts/setup-tests.sh (or scripts/test.sh, which runs it)"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def missing_tool(what: str) -> None:
    """A client the test needs is not installed: fail under CI, skip elsewhere."""
    message = f"{what} is not installed; {SETUP_HINT}"
    if in_ci():
        pytest.fail(f"{message} (CI=true: scripts/setup-tests.sh must install it)", pytrace=False)
    pytest.skip(message)


# --- brokers ---------------------------------------------------------------------------------

def _start(data_dir: Path, config: dict | None = None) -> BrokerProcess:
    broker = BrokerProcess(data_dir, config=config)
    broker.start()  # BrokerFailure (with the broker's log) when it does not come up
    return broker


def _finish(broker: BrokerProcess) -> None:
    problems = broker.finish()
    if problems:
        raise BrokerFailure("\n".join(problems) + "\n" + broker.log_report())


@pytest.fixture
def broker(tmp_path):
    """A broker of its own for this test, stopped (SIGTERM) afterwards. The test may stop(),
    kill() or restart() it; dying on its own, or not exiting cleanly on SIGTERM, fails the test.
    For broker settings use `BrokerProcess`/`running_broker` from testing.broker_process directly."""
    started = _start(tmp_path / "broker")
    yield started
    _finish(started)


@pytest.fixture(scope="session")
def _shared_broker_process(tmp_path_factory):
    started = _start(tmp_path_factory.mktemp("shared-broker"))
    yield started
    _finish(started)


@pytest.fixture
def shared_broker(_shared_broker_process):
    """The session's broker. Use unique topic names; do not stop or restart it."""
    if not _shared_broker_process.is_running():
        pytest.fail(f"the shared broker is not running (exit status {_shared_broker_process.process.returncode})\n"
                    f"{_shared_broker_process.log_report()}", pytrace=False)
    return _shared_broker_process


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and report.when in ("setup", "call"):
        brokers = {id(v): v for v in getattr(item, "funcargs", {}).values() if isinstance(v, BrokerProcess)}
        for used in brokers.values():
            report.sections.append((f"broker log {used.log_path}", used.log_tail()))


# --- long commands started with the session ----------------------------------------------------

@pytest.fixture(scope="session", autouse=True)
def _conformance_beside_the_suite(request, tmp_path_factory):
    """The conformance suite's command (test_conformance.py) starts with the first test when that test
    is to run in this session: it mostly waits on the reference Kafka, so it runs beside the tests
    before it, and test_conformance.py takes it over (tests/compat_command.py's start_early)."""
    from tests.compat_command import selected

    if not selected(request.session, "test_conformance.py::test_kafka_wire_answers_as_apache_kafka_4"):
        return
    from tests.integration import test_conformance

    test_conformance.start_beside(request.session, tmp_path_factory.mktemp("conformance-beside"))


# --- the reference Apache Kafka ------------------------------------------------------------------

@pytest.fixture(scope="session")
def reference_kafka(tmp_path_factory):
    """Factory: reference_kafka("4.3.0") -> a running Apache Kafka of that version (KRaft single node,
    compat/reference_kafka.py), started once per session and version, stopped at the end.
    reference_kafka("4.3.0", config={...}) -> one with those server properties on top, started once per
    session, version and config (tests that ask for the same settings share it)."""
    from compat.reference_kafka import ReferenceKafka, ReferenceKafkaUnavailable, install

    started: dict[tuple, ReferenceKafka] = {}

    def get(version: str, config: dict | None = None) -> ReferenceKafka:
        key = (version, tuple(sorted((str(k), str(v)) for k, v in (config or {}).items())))
        if key not in started:
            try:
                install(version)
            except ReferenceKafkaUnavailable as error:
                missing_tool(f"Apache Kafka {version} ({error})")
            kafka = ReferenceKafka(version, tmp_path_factory.mktemp(f"reference-kafka-{version}"), config=config)
            kafka.start()
            started[key] = kafka
        kafka = started[key]
        if not kafka.is_running():
            pytest.fail(f"the reference Kafka {version} is not running\n{kafka.log_report()}", pytrace=False)
        return kafka

    yield get
    for kafka in started.values():
        kafka.stop()


# --- real clients ------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def kcat() -> str:
    """Path of the kcat binary (Debian package kcat)."""
    path = shutil.which("kcat")
    if not path:
        missing_tool("kcat (apt-get install kcat)")
    return path


@pytest.fixture(scope="session")
def zookeeper_installed() -> None:
    """Cluster-mode tests need ZooKeeper (Debian's zookeeper package, run by testing/cluster.py)."""
    from testing.cluster import zookeeper_available

    if not zookeeper_available():
        missing_tool("ZooKeeper (Debian package zookeeper)")


@dataclass(frozen=True)
class NodeClient:
    node: str
    node_path: Path  # for NODE_PATH: the node_modules that holds kafkajs

    def env(self) -> dict[str, str]:
        return dict(os.environ, NODE_PATH=str(self.node_path))


@pytest.fixture(scope="session")
def kafkajs() -> NodeClient:
    """node, and the node_modules under .deps/node that holds kafkajs (and kafkajs-snappy)."""
    node = shutil.which("node")
    if not node:
        missing_tool("node")
    node_modules = DEPS / "node" / "node_modules"
    if not (node_modules / "kafkajs" / "package.json").is_file():
        missing_tool(f"kafkajs (in {node_modules})")
    return NodeClient(node, node_modules)


@dataclass(frozen=True)
class JavaClients:
    version: str
    jars: tuple[Path, ...]  # kafka-clients and the compression and logging jars it loads
    java: str
    javac: str
    build_root: Path  # where programs compiled against these jars go (one folder per program)

    def classpath(self, *more: Path | str) -> str:
        return os.pathsep.join([*(str(j) for j in self.jars), *(str(m) for m in more)])

    def program(self, source: Path | str) -> list[str]:
        """The `java ...` command that runs the test program `source` (its class is named after the
        file), compiled with javac against these jars once per session. A program that does not
        compile fails the test with javac's output."""
        source = Path(source)
        classes = self.build_root / f"{source.stem}-{self.version}"
        if not (classes / f"{source.stem}.class").is_file():
            classes.mkdir(parents=True, exist_ok=True)
            done = subprocess.run([self.javac, "-nowarn", "-d", str(classes), "-cp", self.classpath(), str(source)],
                                  capture_output=True, text=True, timeout=180)
            if done.returncode != 0:
                pytest.fail(f"{source.name} does not compile against kafka-clients {self.version}:\n"
                            f"{done.stdout}{done.stderr}", pytrace=False)
        # No SLF4J provider on the classpath: the clients log nothing; keep SLF4J's own notice quiet.
        return [self.java, "-Dslf4j.internal.verbosity=ERROR", "-cp", self.classpath(classes), source.stem]


@pytest.fixture(scope="session")
def java_kafka_clients(tmp_path_factory):
    """Factory: java_kafka_clients("3.9.0") -> JavaClients (jars under .deps/java/kafka-<version>);
    its program(source) compiles and runs the Java test programs in tests/clients/java/."""
    build_root = tmp_path_factory.mktemp("java-programs")

    def locate(version: str) -> JavaClients:
        java, javac = shutil.which("java"), shutil.which("javac")
        if not java or not javac:
            missing_tool("a JDK (java and javac)")
        folder = DEPS / "java" / f"kafka-{version}"
        if not (folder / f"kafka-clients-{version}.jar").is_file():
            missing_tool(f"Java kafka-clients {version} (in {folder})")
        return JavaClients(version, tuple(sorted(folder.glob("*.jar"))), java, javac, build_root)

    return locate
