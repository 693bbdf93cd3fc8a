"""pytest plugin for your own test suites: a real kafka-wire broker on a free port, in a temporary
directory, stopped after the tests. Installed with kafka-wire (entry point `pytest11`), so the
fixtures are there without any import:

    def test_round_trip(kafka_wire_broker):
        producer = KafkaProducer(bootstrap_servers=kafka_wire_broker.bootstrap)
        ...

- `kafka_wire_broker` (session): one broker for the whole run. Its properties come from the
  `kafka_wire_broker_config` fixture, which reads the ini option of the same name (one
  `key=value` per line); override the fixture to compute them.
- `kafka_wire_broker_factory` (function): `kafka_wire_broker_factory(config={...})` starts a
  fresh broker for this test (as many as you like); all are stopped when the test ends.

A broker is a `testing.broker_process.BrokerProcess`: `.bootstrap` ("127.0.0.1:PORT"), `.port`,
`.restart()`, `.kill()`, `.log_path`. Outside pytest, `testing.broker_process.running_broker()` is the
same as a context manager. When a test fails, the end of the broker's log is added to its report;
a broker that dies on its own, or does not stop cleanly, fails the test's teardown.
"""

from __future__ import annotations

import contextlib
import itertools

import pytest

from .broker_process import BrokerProcess, running_broker

_BROKERS_KEY = pytest.StashKey[list]()


def pytest_addoption(parser) -> None:
    parser.addini("kafka_wire_broker_config", type="linelist", default=[],
                  help="kafka-wire broker properties for the kafka_wire_broker fixture, one key=value per line")


def _remember(request, broker: BrokerProcess) -> BrokerProcess:
    """Note which brokers a test used, so a failure report can show their logs."""
    request.node.stash.setdefault(_BROKERS_KEY, []).append(broker)
    return broker


@pytest.fixture(scope="session")
def kafka_wire_broker_config(pytestconfig) -> dict[str, str]:
    """Properties of the session broker (Kafka's names), from the ini option kafka_wire_broker_config."""
    config = {}
    for line in pytestconfig.getini("kafka_wire_broker_config"):
        key, sep, value = line.partition("=")
        if not sep:
            raise pytest.UsageError(f"kafka_wire_broker_config: expected key=value, got {line!r}")
        config[key.strip()] = value.strip()
    return config


@pytest.fixture(scope="session")
def _kafka_wire_session_broker(kafka_wire_broker_config, tmp_path_factory):
    with running_broker(tmp_path_factory.mktemp("kafka-wire"), config=kafka_wire_broker_config) as broker:
        yield broker


@pytest.fixture
def kafka_wire_broker(_kafka_wire_session_broker, request) -> BrokerProcess:
    """The session's kafka-wire broker (started on first use). Use your own topic names per test."""
    if not _kafka_wire_session_broker.is_running():
        pytest.fail(f"the kafka-wire broker is not running\n{_kafka_wire_session_broker.log_report()}",
                    pytrace=False)
    return _remember(request, _kafka_wire_session_broker)


@pytest.fixture
def kafka_wire_broker_factory(tmp_path, request):
    """Start fresh brokers for one test: `kafka_wire_broker_factory(config={"num.partitions": 3})`."""
    numbers = itertools.count(1)
    with contextlib.ExitStack() as brokers:
        def start(config: dict | None = None) -> BrokerProcess:
            data_dir = tmp_path / f"kafka-wire-{next(numbers)}"
            return _remember(request, brokers.enter_context(running_broker(data_dir, config=config)))

        yield start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and report.when in ("setup", "call"):
        for broker in item.stash.get(_BROKERS_KEY, []):
            report.sections.append((f"kafka-wire broker log {broker.log_path}", broker.log_tail()))
