"""Fixtures of the console's tests: brokers serving the console, and HTTP calls to its /api."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.security.credentials import CredentialStore
from testing.broker_process import BrokerProcess, free_port
from kafka_wire.sasl import SCRAM_MECHANISMS

# Rates and lag are sampled this often in the tests (the default is 5 s).
SAMPLE_MS = 200
PASSWORDS = {"admin": "admin-pw", "alice": "alice-pw"}


class Console:
    """A broker process and the base URL of its console."""

    def __init__(self, process: BrokerProcess, port: int) -> None:
        self.process = process
        self.url = f"http://127.0.0.1:{port}"

    @property
    def bootstrap(self) -> str:
        return self.process.bootstrap

    def call(self, method: str, path: str, body: dict | None = None, *, cookie: str | None = None,
             headers: dict | None = None) -> tuple[int, dict, dict]:
        """(status, JSON body, response headers) of one /api request."""
        data = None if body is None else json.dumps(body).encode()
        sent = {"X-Console": "1", "Content-Type": "application/json"} if method != "GET" else {}
        sent.update(headers or {})
        if cookie:
            sent["Cookie"] = cookie
        request = urllib.request.Request(self.url + "/api/" + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read()), dict(response.headers)
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}"), dict(error.headers)

    def get(self, path: str, **kwargs) -> dict:
        status, body, _ = self.call("GET", path, **kwargs)
        assert status == 200, (path, status, body)
        return body

    def wait_until_serving(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.call("GET", "session")
                return
            except OSError:
                if time.monotonic() > deadline or not self.process.is_running():
                    raise AssertionError("the console did not come up\n" + self.process.log_report())
                time.sleep(0.05)


def start_console_broker(data_dir, config: dict, before_start=None, kafka_port: int | None = None) -> Console:
    port = free_port()
    process = BrokerProcess(data_dir, port=kafka_port, config={"console.port": port, "console.sample.interval.ms": SAMPLE_MS,
                                              "group.initial.rebalance.delay.ms": 0, **config})
    if before_start is not None:
        before_start(process)
    process.start()
    console = Console(process, port)
    console.wait_until_serving()
    return console


def console_errors(process: BrokerProcess) -> list[str]:
    """The console's logged failures (a request or a sampling that raised): none are expected."""
    return [line for line in process.log_path.read_text(errors="replace").splitlines()
            if "ERROR [kafka_wire.console]" in line]


def finish(console: Console) -> None:
    problems = console.process.finish() + console_errors(console.process)
    assert not problems, "\n".join(problems) + "\n" + console.process.log_report()


@pytest.fixture(scope="session")
def writable_console(tmp_path_factory):
    """A broker whose console allows writes (console.read.only=false)."""
    console = start_console_broker(tmp_path_factory.mktemp("console-rw"), {"console.read.only": "false"})
    yield console
    finish(console)


@pytest.fixture(scope="session")
def secure_console(tmp_path_factory):
    """A read-only console (the default) on a broker with SCRAM users and ACLs: admin is a super
    user, alice may describe and read the topic `alice-visible` only."""
    kafka_port = free_port()

    def add_users(process):
        store = CredentialStore(process.log_dir)
        for user, password in PASSWORDS.items():
            store.set_password(user, password, SCRAM_MECHANISMS["SCRAM-SHA-256"])

    console = start_console_broker(tmp_path_factory.mktemp("console-secure"), {
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{kafka_port}",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
    }, before_start=add_users, kafka_port=kafka_port)
    yield console
    finish(console)


def sasl_config(console: Console, user: str) -> dict:
    """confluent-kafka settings to log in as `user` on the secure console's broker."""
    return {"bootstrap.servers": console.bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user, "sasl.password": PASSWORDS[user]}


# -- a real Kafka client (librdkafka, confluent-kafka) making the data the console shows --------------

def create_topic(admin: AdminClient, name: str, partitions: int, config: dict | None = None) -> None:
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])
    futures[name].result(30)


def produce(bootstrap_or_config, topic: str, records: list[tuple]) -> None:
    config = bootstrap_or_config if isinstance(bootstrap_or_config, dict) else {"bootstrap.servers": bootstrap_or_config}
    producer = Producer(config)
    for partition, key, value, headers in records:
        producer.produce(topic, key=key, value=value, partition=partition, headers=headers)
    assert producer.flush(30) == 0


def commit_as_group(bootstrap: str, group: str, offsets: list[tuple[str, int, int]]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(t, p, o) for t, p, o in offsets], asynchronous=False)
    finally:
        consumer.close()


def share_group_holding_records(bootstrap: str, topic: str, group: str):
    """A share group (KIP-932) reading `topic` (one partition, six records) from the start with
    confluent-kafka's ShareConsumer: it accepts the first two records and keeps the other four
    acquired. Returns the consumer, to be closed by the caller; skips without ShareConsumer."""
    import confluent_kafka

    if not hasattr(confluent_kafka, "ShareConsumer"):
        pytest.skip("confluent-kafka without ShareConsumer (needs 2.16+)")
    from confluent_kafka import AcknowledgeType, ShareConsumer
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap})
    create_topic(admin, topic, 1)
    produce(bootstrap, topic, [(0, None, f"s{i}", None) for i in range(6)])
    reset = ConfigResource("GROUP", group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([reset]).values():
        future.result(30)
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "sharer-1",
                              "share.acknowledgement.mode": "explicit"})
    try:
        consumer.subscribe([topic])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 6 and time.monotonic() < deadline:
            got += [m for m in consumer.poll(0.5) if m.error() is None]
        assert sorted(m.offset() for m in got) == list(range(6))
        for m in got:
            if m.offset() < 2:
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        consumer.commit_sync()
    except BaseException:
        consumer.close()
        raise
    return consumer
