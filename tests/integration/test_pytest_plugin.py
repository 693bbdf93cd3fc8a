"""The pytest plugin as a user meets it: a test suite of their own, outside this repository, that
uses the fixtures without importing anything (the `pytest11` entry point loads the plugin), run
by pytest in a subprocess. Real clients (kafka-python) talk to the brokers the fixtures start."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(180)

USER_TESTS = '''
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def test_round_trip(kafka_wire_broker):
    producer = KafkaProducer(bootstrap_servers=kafka_wire_broker.bootstrap)
    producer.send("greetings", b"hello", partition=0).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=kafka_wire_broker.bootstrap, consumer_timeout_ms=10000)
    consumer.assign([TopicPartition("greetings", 0)])
    consumer.seek_to_beginning()
    assert [m.value for m in consumer][:1] == [b"hello"]
    consumer.close()


def test_session_broker_takes_the_ini_config(kafka_wire_broker):
    producer = KafkaProducer(bootstrap_servers=kafka_wire_broker.bootstrap)
    producer.send("auto-created", b"x").get(timeout=30)
    assert len(producer.partitions_for("auto-created")) == 2  # kafka_wire_broker_config in pytest.ini
    producer.close()


def test_factory_starts_fresh_brokers(kafka_wire_broker_factory, kafka_wire_broker):
    first = kafka_wire_broker_factory(config={"num.partitions": 4})
    second = kafka_wire_broker_factory()
    assert len({first.port, second.port, kafka_wire_broker.port}) == 3
    producer = KafkaProducer(bootstrap_servers=first.bootstrap)
    producer.send("fresh", b"x").get(timeout=30)
    assert len(producer.partitions_for("fresh")) == 4
    producer.close()


def test_a_failure_report_shows_the_broker_log(kafka_wire_broker):
    assert False, "deliberately failing"
'''


def test_users_suite_gets_working_fixtures(tmp_path):
    (tmp_path / "test_with_kafka.py").write_text(USER_TESTS)
    (tmp_path / "pytest.ini").write_text(textwrap.dedent("""\
        [pytest]
        kafka_wire_broker_config =
            num.partitions=2
            group.initial.rebalance.delay.ms=0
        """))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE",
                           "test_with_kafka.py"], cwd=tmp_path, capture_output=True, text=True, timeout=170)
    output = done.stdout + done.stderr
    assert "1 failed, 3 passed" in output, output
    assert "FAILED test_with_kafka.py::test_a_failure_report_shows_the_broker_log" in output
    # The failing test's report carries the broker's log, and no teardown errors occurred (every
    # broker stopped cleanly on SIGTERM).
    assert "kafka-wire broker log" in output and "listening on PLAINTEXT://127.0.0.1" in output
    assert "error" not in output.splitlines()[-1]
