"""Kafka's own command-line tools, run against kafka-wire and against Apache Kafka 4.3.0, outputs compared.

Every invocation runs twice, with the same arguments and the same topic and group names: first against
the reference Kafka (tests/conftest.py's `reference_kafka`, a KRaft single node), then against a
kafka-wire broker. Exit status, stdout and stderr, normalised by compat/tool_compare.py's declared table
(ids, ports, paths, clocks, measurements), must be equal. The tools run in one JVM one after another
(compat/reference/ToolSession.java), except the verifiable producer and consumer, which call
System.exit and print their summary from a shutdown hook, and run as processes of their own.

Both brokers run Kafka's StandardAuthorizer with User:ANONYMOUS (what the tools are on PLAINTEXT) as a
super user, so that kafka-acls.sh has an authorizer to talk to and every other tool is allowed.

Cluster-mode tools (kafka-reassign-partitions, kafka-leader-election) are compared on a single node
(--generate, --execute, --verify, --list, --cancel, elections, their errors), then run against a
kafka-wire ZooKeeper cluster of three, where they must move replicas and leaders and say so in Kafka's
words (a single reference Kafka cannot do that part).
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from contextlib import contextmanager

import pytest

from testing.broker_process import running_broker
from testing.streams_groups import leave, stateless_topology, streams_member
from compat.reference_kafka import KAFKA_4, java_command
from compat.tool_compare import (ACLS, BOOTSTRAP, CONFIGS, CONSOLE_CONSUMER, CONSOLE_PRODUCER, CONSUMER_GROUPS,
                                 DELETE_RECORDS, END_TO_END_LATENCY, FEATURES, GET_OFFSETS, LEADER_ELECTION, LOG_DIRS,
                                 PRODUCER_PERFORMANCE, REASSIGN_PARTITIONS, STREAMS_GROUPS, TOPICS, TRANSACTIONS,
                                 VERIFIABLE_CONSUMER, VERIFIABLE_PRODUCER, Comparison, ToolSession)

pytestmark = pytest.mark.timeout(300)

B = BOOTSTRAP
SERVER = ("--bootstrap-server", B)
AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS"}


# -- the two brokers and the tools ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def kafka(reference_kafka):
    return reference_kafka(KAFKA_4, config=AUTHORIZER)


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    # The reference's group.initial.rebalance.delay.ms is 0 (compat/reference_kafka.py): the same here.
    with running_broker(tmp_path_factory.mktemp("tools-broker"),
                        config={"group.initial.rebalance.delay.ms": 0, **AUTHORIZER}) as broker:
        yield broker


@pytest.fixture(scope="module")
def tools():
    with ToolSession(KAFKA_4) as session:
        yield session


class Tools:
    """Runs each invocation against Kafka, then kafka-wire; collects what differs."""

    def __init__(self, session: ToolSession, kafka, ours):
        self.session, self.kafka, self.ours = session, kafka, ours
        self.differences: list[str] = []

    def __call__(self, tool: str, *args: str, input: str | None = None) -> Comparison:
        pair = self.session.compare(self.kafka.bootstrap, self.ours.bootstrap, tool, *args, input=input)
        if not pair.same:
            self.differences.append(pair.diff())
        return pair

    def settled(self, tool: str, *args: str, timeout: float = 5.0) -> Comparison:
        """An invocation whose answer may lag behind the one before on Kafka's side (Kafka applies dynamic
        broker configs asynchronously, from its metadata log: a describe right after an alter can show
        the old value): run again, for up to `timeout` seconds, until both sides agree."""
        deadline = time.monotonic() + timeout
        while not (pair := self.session.compare(self.kafka.bootstrap, self.ours.bootstrap, tool, *args)).same \
                and time.monotonic() < deadline:
            time.sleep(0.5)
        if not pair.same:
            self.differences.append(pair.diff())
        return pair

    def assert_same(self) -> None:
        differences, self.differences = self.differences, []
        assert not differences, f"{len(differences)} invocation(s) differ:\n\n" + "\n\n".join(differences)


@pytest.fixture(scope="module")
def aligned(kafka, ours, tools):
    """Kafka 4.3's `kafka-storage format` writes min.insync.replicas=1 as a cluster-level dynamic default
    (KIP-966, eligible leader replicas), so every topic describes it as set; kafka-wire has no such
    record (docs/conformance.md: a kept difference). The same default is set on kafka-wire, with
    kafka-configs.sh, so that topic descriptions compare."""
    done = tools.run(CONFIGS, "--bootstrap-server", ours.bootstrap, "--entity-type", "brokers",
                     "--entity-default", "--alter", "--add-config", "min.insync.replicas=1")
    assert done.exit == 0, done.stdout + done.stderr
    return True


@pytest.fixture
def tool(tools, kafka, ours, aligned):
    runner = Tools(tools, kafka, ours)
    yield runner
    runner.assert_same()


def json_file(tmp_path, name: str, content) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(content))
    return str(path)


# -- kafka-topics ---------------------------------------------------------------------------------------

def test_kafka_topics(tool):
    t = (TOPICS, *SERVER)
    tool(*t, "--create", "--topic", "tools-orders", "--partitions", "3", "--replication-factor", "1",
         "--config", "retention.ms=86400000", "--config", "cleanup.policy=compact,delete")
    tool(*t, "--create", "--topic", "tools-orders", "--partitions", "3")
    tool(*t, "--create", "--topic", "tools-orders", "--partitions", "3", "--if-not-exists")
    tool(*t, "--create", "--topic", "tools-assigned", "--replica-assignment", "1,1")
    tool(*t, "--create", "--topic", "tools.dotted", "--partitions", "1")  # Kafka's period/underscore warning
    # Refusals: Kafka's messages.
    tool(*t, "--create", "--topic", "tools-rf", "--partitions", "1", "--replication-factor", "3")
    tool(*t, "--create", "--topic", "tools-zero", "--partitions", "0")
    tool(*t, "--create", "--topic", "bad/name", "--partitions", "1")
    tool(*t, "--create", "--topic", "..")
    tool(*t, "--create", "--topic", "x" * 250)
    tool(*t, "--create", "--topic", "tools-badconfig", "--config", "retention.ms=soon")
    tool(*t, "--create", "--topic", "tools-badconfig", "--config", "no.such.config=1")
    tool(*t, "--list", "--topic", "tools.*")
    tool(*t, "--list", "--exclude-internal")
    tool(*t, "--describe", "--topic", "tools-orders,tools-assigned")
    tool(*t, "--describe", "--topic", "tools.*", "--topics-with-overrides")
    tool(*t, "--describe", "--topic", "tools.*", "--under-replicated-partitions")
    tool(*t, "--describe", "--topic", "tools.*", "--unavailable-partitions")
    tool(*t, "--describe", "--topic", "tools.*", "--at-min-isr-partitions")
    tool(*t, "--describe", "--topic", "tools.*", "--under-min-isr-partitions")
    tool(*t, "--describe", "--topic", "__consumer_offsets", "--partition-size-limit-per-response", "7")
    tool(*t, "--describe", "--topic", "tools-missing")
    tool(*t, "--alter", "--topic", "tools-orders", "--partitions", "5")
    tool(*t, "--alter", "--topic", "tools-orders", "--partitions", "2")
    tool(*t, "--alter", "--topic", "tools-assigned", "--partitions", "3", "--replica-assignment", "1,1,1")
    tool(*t, "--alter", "--topic", "tools-missing", "--partitions", "3")
    tool(*t, "--alter", "--topic", "tools-missing", "--partitions", "3", "--if-exists")
    tool(*t, "--describe", "--topic", "tools-orders,tools-assigned")
    tool(*t, "--delete", "--topic", "tools-assigned")
    tool(*t, "--delete", "--topic", "tools-assigned")
    tool(*t, "--delete", "--topic", "tools-assigned", "--if-exists")
    tool(*t, "--delete", "--topic", "__consumer_offsets")
    tool(*t, "--list", "--topic", "tools.*")


# -- kafka-configs --------------------------------------------------------------------------------------

def test_kafka_configs_topics_and_brokers(tool):
    c = (CONFIGS, *SERVER)
    tool(TOPICS, *SERVER, "--create", "--topic", "tools-configs", "--partitions", "1",
         "--config", "cleanup.policy=compact")
    tool(*c, "--entity-type", "topics", "--entity-name", "tools-configs", "--describe")
    tool(*c, "--entity-type", "topics", "--entity-name", "tools-configs", "--alter",
         "--add-config", "retention.ms=5000,cleanup.policy=[compact,delete]")
    tool(*c, "--entity-type", "topics", "--entity-name", "tools-configs", "--describe")
    tool(*c, "--entity-type", "topics", "--entity-name", "tools-configs", "--describe", "--all")
    tool(*c, "--entity-type", "topics", "--entity-name", "tools-configs", "--alter", "--delete-config", "retention.ms")
    tool(*c, "--entity-type", "topics", "--entity-name", "tools-configs", "--alter", "--add-config", "no.such=1")
    tool(*c, "--entity-type", "topics", "--entity-name", "tools-configs", "--alter", "--add-config", "retention.ms=x")
    tool(*c, "--entity-type", "topics", "--entity-name", "tools-missing", "--describe")
    tool(*c, "--entity-type", "topics", "--entity-name", "tools-configs", "--describe")
    tool(*c, "--entity-type", "brokers", "--entity-default", "--describe")
    tool(*c, "--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "log.retention.ms=604800000")
    tool(*c, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config", "max.connections=1000")
    tool.settled(*c, "--entity-type", "brokers", "--entity-name", "1", "--describe")
    tool.settled(*c, "--entity-type", "brokers", "--describe")
    tool(*c, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config", "broker.id=7")
    tool(*c, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--delete-config", "max.connections")
    tool(*c, "--entity-type", "brokers", "--entity-default", "--alter", "--delete-config", "log.retention.ms")
    tool.settled(*c, "--entity-type", "brokers", "--entity-default", "--describe")


def test_kafka_configs_groups(tool):
    """Group configs (resource type 32): kafka-configs --entity-type groups, as Kafka 4.3 prints them."""
    c = (CONFIGS, *SERVER)
    g = ("--entity-type", "groups", "--entity-name", "tools-configured")
    tool(*c, *g, "--describe")
    tool(*c, *g, "--alter", "--add-config", "consumer.session.timeout.ms=50000,share.auto.offset.reset=earliest")
    tool.settled(*c, *g, "--describe")
    tool.settled(*c, *g, "--describe", "--all")
    tool(*c, "--group", "tools-configured", "--alter", "--add-config", "consumer.session.timeout.ms=1000")
    tool(*c, *g, "--alter", "--add-config", "share.isolation.level=READ_COMMITTED")
    tool(*c, *g, "--alter", "--add-config", "no.such=1")
    tool.settled(*c, "--entity-type", "groups", "--describe")
    tool(*c, *g, "--alter", "--delete-config", "consumer.session.timeout.ms")
    tool(*c, *g, "--alter", "--delete-config", "streams.session.timeout.ms")
    tool.settled(*c, *g, "--describe")
    tool(*c, *g, "--alter", "--delete-config", "share.auto.offset.reset")
    tool.settled(*c, "--entity-type", "groups", "--describe")


def test_kafka_configs_quotas(tool):
    c = (CONFIGS, *SERVER)
    tool(*c, "--entity-type", "users", "--entity-name", "alice", "--alter",
         "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048")
    tool(*c, "--entity-type", "users", "--entity-name", "alice", "--describe")
    tool(*c, "--entity-type", "clients", "--entity-name", "app", "--alter", "--add-config", "request_percentage=50")
    tool(*c, "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app",
         "--alter", "--add-config", "producer_byte_rate=4096")
    tool(*c, "--entity-type", "users", "--entity-default", "--alter", "--add-config", "consumer_byte_rate=9999")
    tool(*c, "--entity-type", "clients", "--entity-default", "--alter", "--add-config", "producer_byte_rate=8888")
    tool(*c, "--entity-type", "ips", "--entity-name", "10.0.0.1", "--alter", "--add-config",
         "connection_creation_rate=10")
    tool(*c, "--entity-type", "users", "--describe")
    tool(*c, "--entity-type", "clients", "--describe")
    tool(*c, "--entity-type", "users", "--entity-type", "clients", "--describe")
    tool(*c, "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--describe")
    tool(*c, "--entity-type", "ips", "--describe")
    tool(*c, "--entity-type", "users", "--entity-name", "alice", "--alter", "--add-config", "no_such_quota=1")
    tool(*c, "--entity-type", "users", "--entity-name", "alice", "--alter", "--delete-config", "producer_byte_rate")
    tool(*c, "--entity-type", "users", "--entity-name", "alice", "--describe")


def test_kafka_configs_a_kafka_broker_config_kafka_wire_does_not_use(tool):
    """log.cleaner.threads means nothing to kafka-wire, yet kafka-configs sets, describes (type, default
    synonym) and deletes it as on Kafka; a value of the wrong type is refused as Kafka refuses it."""
    c = (CONFIGS, *SERVER)
    tool(*c, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config", "log.cleaner.threads=2")
    tool.settled(*c, "--entity-type", "brokers", "--entity-name", "1", "--describe", timeout=1.0)
    tool(*c, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config", "log.cleaner.threads=many")
    tool(*c, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--delete-config", "log.cleaner.threads")
    tool.assert_same()


def test_kafka_configs_broker_loggers(tool):
    """kafka-configs on broker loggers: setting, refusing and unsetting levels prints what Kafka prints;
    the listing has Kafka's shape and root's level on both, though the other loggers are each broker's
    own (log4j's classes on Kafka, Python's modules on kafka-wire)."""
    c = (CONFIGS, *SERVER, "--entity-type", "broker-loggers", "--entity-name", "1")
    tool(*c, "--alter", "--add-config", "root=WARN")
    tool(*c, "--alter", "--add-config", "root=LOUD")
    tool(*c, "--alter", "--add-config", "kafka.wire.no.such.logger=INFO")
    tool(*c, "--alter", "--delete-config", "root")
    tool(*c, "--alter", "--add-config", "root=INFO")
    tool.assert_same()
    listing = tool.session.compare(tool.kafka.bootstrap, tool.ours.bootstrap, *c, "--describe")  # not recorded
    for outcome, own in ((listing.kafka, "kafka.server.KafkaApis"), (listing.ours, "kafka_wire.broker")):
        lines = outcome.stdout.splitlines()
        assert outcome.exit == 0 and lines[0] == "Dynamic configs for broker-logger 1 are:", outcome
        assert "  root=INFO sensitive=false synonyms={}" in lines, outcome.stdout
        assert any(line.startswith(f"  {own}=") for line in lines), outcome.stdout
        assert all(re.fullmatch(r"  \S+=(FATAL|ERROR|WARN|INFO|DEBUG|TRACE) sensitive=false synonyms=\{\}", line)
                   for line in lines[1:]), outcome.stdout


# -- kafka-acls -----------------------------------------------------------------------------------------

def test_kafka_acls(tool):
    a = (ACLS, *SERVER)
    tool(*a, "--list")
    tool(*a, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe",
         "--topic", "tools-acl-orders")
    tool(*a, "--add", "--allow-principal", "User:bob", "--producer", "--topic", "tools-acl-orders",
         "--transactional-id", "orders-app", "--idempotent")
    tool(*a, "--add", "--allow-principal", "User:carol", "--consumer", "--topic", "tools-acl-orders",
         "--group", "billing")
    tool(*a, "--add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.1", "--operation", "All",
         "--topic", "tools-acl-", "--resource-pattern-type", "prefixed")
    tool(*a, "--add", "--allow-principal", "User:dave", "--operation", "Alter", "--cluster")
    tool(*a, "--list")
    tool(*a, "--list", "--topic", "tools-acl-orders")
    tool(*a, "--list", "--topic", "tools-acl-orders", "--resource-pattern-type", "match")
    tool(*a, "--list", "--principal", "User:bob")
    tool(*a, "--remove", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "tools-acl-orders",
         "--force")
    tool(*a, "--remove", "--topic", "tools-acl-", "--resource-pattern-type", "prefixed", "--force")
    tool(*a, "--list", "--topic", "tools-acl-orders")
    tool(*a, "--add", "--allow-principal", "alice", "--operation", "Read", "--topic", "x")  # no principal type
    tool(*a, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--group", "g")  # not for groups
    tool(*a, "--remove", "--cluster", "--force")
    tool(*a, "--remove", "--topic", "tools-acl-orders", "--force")
    tool(*a, "--remove", "--group", "billing", "--force")
    tool(*a, "--remove", "--transactional-id", "orders-app", "--force")
    tool(*a, "--list")


# -- kafka-console-producer, kafka-console-consumer, kafka-get-offsets, kafka-delete-records, kafka-log-dirs -

def test_console_producer_and_consumer(tool):
    tool(TOPICS, *SERVER, "--create", "--topic", "tools-console", "--partitions", "2", "--replication-factor", "1")
    tool(CONSOLE_PRODUCER, *SERVER, "--topic", "tools-console", "--property", "parse.key=true",
         "--property", "key.separator=:", input="k1:a\nk2:b\nk3:c\nk4:d\nk5:e\n")
    tool(CONSOLE_PRODUCER, *SERVER, "--topic", "tools-console", "--property", "parse.key=true",
         "--property", "parse.headers=true", "--property", "key.separator=:",
         input="h1:x,h2:y\tk6:f\n")
    printed = ("--property", "print.key=true", "--property", "print.partition=true",
               "--property", "print.offset=true", "--property", "print.headers=true")
    tool(CONSOLE_CONSUMER, *SERVER, "--topic", "tools-console", "--from-beginning", "--max-messages", "6",
         "--group", "tools-console-group", *printed)
    tool(CONSOLE_CONSUMER, *SERVER, "--topic", "tools-console", "--partition", "0", "--offset", "1",
         "--max-messages", "2", *printed)
    tool(CONSOLE_CONSUMER, *SERVER, "--topic", "tools-console", "--partition", "1", "--offset", "earliest",
         "--max-messages", "1", "--property", "print.value=false", "--property", "print.key=true")
    tool(CONSOLE_CONSUMER, *SERVER, "--topic", "tools-console", "--partition", "0", "--offset", "latest",
         "--timeout-ms", "1500")
    tool(CONSOLE_CONSUMER, *SERVER, "--topic", "tools-console", "--partition", "5", "--max-messages", "1",
         "--timeout-ms", "1000")
    tool(CONSUMER_GROUPS, *SERVER, "--describe", "--group", "tools-console-group")


def test_get_offsets_delete_records_and_log_dirs(tool, tmp_path):
    tool(TOPICS, *SERVER, "--create", "--topic", "tools-offsets", "--partitions", "2", "--replication-factor", "1")
    # --sync: one record a batch, so the logs' sizes are the same on both brokers (--timeout: linger.ms,
    # 1000 by default in the console producer).
    tool(CONSOLE_PRODUCER, *SERVER, "--topic", "tools-offsets", "--sync", "--timeout", "0",
         "--property", "parse.key=true", "--property", "key.separator=:",
         input="".join(f"key-{i}:value-{i}\n" for i in range(8)))
    # The last record of each partition (murmur2: key-1 to 0, key-0 to 1) written clearly later, so that
    # the offset of the largest timestamp (--time -3) does not depend on the producer's clock ties.
    tool(CONSOLE_PRODUCER, *SERVER, "--topic", "tools-offsets", "--sync", "--timeout", "0",
         "--property", "parse.key=true", "--property", "key.separator=:", input="key-1:last\nkey-0:last\n")
    g = (GET_OFFSETS, *SERVER)
    tool(*g, "--topic", "tools-offsets")
    for spec in ("-1", "-2", "-3", "-4", "-5", "0", "99999999999999"):
        tool(*g, "--topic", "tools-offsets", "--time", spec)
    tool(*g, "--topic-partitions", "tools-offsets:0,tools-missing:1")
    tool(*g, "--topic", "tools-offsets", "--partitions", "1")
    tool(*g, "--topic", "tools-missing")
    tool(*g, "--topic", "tools-offsets", "--time", "max-timestamp-x")
    plan = json_file(tmp_path, "delete.json", {"version": 1, "partitions": [
        {"topic": "tools-offsets", "partition": 0, "offset": 2},
        {"topic": "tools-offsets", "partition": 1, "offset": -1}]})
    tool(DELETE_RECORDS, *SERVER, "--offset-json-file", plan)
    beyond = json_file(tmp_path, "beyond.json", {"version": 1, "partitions": [
        {"topic": "tools-offsets", "partition": 0, "offset": 99}]})
    tool(DELETE_RECORDS, *SERVER, "--offset-json-file", beyond)
    twice = json_file(tmp_path, "twice.json", {"version": 1, "partitions": [
        {"topic": "tools-offsets", "partition": 0, "offset": 3}, {"topic": "tools-offsets", "partition": 0,
                                                                   "offset": 4}]})
    tool(DELETE_RECORDS, *SERVER, "--offset-json-file", twice)
    tool(*g, "--topic", "tools-offsets", "--time", "-2")
    tool(LOG_DIRS, *SERVER, "--describe", "--topic-list", "tools-offsets")
    tool(LOG_DIRS, *SERVER, "--describe", "--broker-list", "1", "--topic-list", "tools-offsets,tools-missing")
    tool(LOG_DIRS, *SERVER, "--describe", "--broker-list", "2")


# -- kafka-streams-groups -------------------------------------------------------------------------------

def test_kafka_streams_groups_list_and_describe(tool, kafka, ours):
    """kafka-streams-groups.sh (StreamsGroupCommand) --list and --describe of a streams group with one
    member and of groups that are not there, against Kafka 4.3 and kafka-wire alike."""
    g = (STREAMS_GROUPS, *SERVER)
    tool(TOPICS, *SERVER, "--create", "--topic", "tools-streams-in", "--partitions", "2", "--replication-factor", "1")
    members = [streams_member(b, "tools-streams-app", "tools-streams-member", stateless_topology("tools-streams-in"))
               for b in (kafka.bootstrap, ours.bootstrap)]
    try:
        listed = tool(*g, "--list")
        assert "tools-streams-app" in listed.ours.stdout, listed.ours.stdout + listed.ours.stderr
        tool(*g, "--describe", "--group", "tools-streams-app")
        described = tool(*g, "--describe", "--group", "tools-streams-app", "--members")
        assert "tools-streams-member" in described.ours.stdout, described.ours.stdout + described.ours.stderr
        tool(*g, "--describe", "--group", "tools-streams-app", "--members", "--verbose")
        tool(*g, "--describe", "--group", "tools-streams-app", "--state")
        tool(*g, "--describe", "--group", "tools-streams-app", "--state", "--verbose")
        tool(*g, "--describe", "--group", "tools-streams-app", "--offsets")
        tool(*g, "--describe", "--group", "tools-streams-no-such-group")
        # What the tool does to the group's offsets, and to the group once it is empty.
        tool(*g, "--reset-offsets", "--group", "tools-streams-app", "--to-earliest", "--all-input-topics",
             "--dry-run")
        for client in members:
            leave(client, "tools-streams-app", "tools-streams-member")
        tool(*g, "--describe", "--group", "tools-streams-app", "--state")
        tool(*g, "--reset-offsets", "--group", "tools-streams-app", "--to-offset", "1", "--all-input-topics",
             "--dry-run")
        tool(*g, "--reset-offsets", "--group", "tools-streams-app", "--to-offset", "1", "--all-input-topics",
             "--execute")
        tool(*g, "--describe", "--group", "tools-streams-app", "--offsets")
        tool(*g, "--delete-offsets", "--group", "tools-streams-app", "--input-topic", "tools-streams-in")
        tool(*g, "--delete", "--group", "tools-streams-app")
        tool(*g, "--list")
    finally:
        for client in members:
            client.close()


# -- kafka-consumer-groups ------------------------------------------------------------------------------

class Members:
    """One consumer per broker in `group` (librdkafka, the same settings on both sides), polled in a
    thread until the block ends."""

    def __init__(self, kafka, ours, group: str, topic: str, protocol: str):
        from confluent_kafka import Consumer

        self.consumers = []
        for broker in (kafka, ours):
            settings = {"bootstrap.servers": broker.bootstrap, "group.id": group, "client.id": "tools-app",
                        "auto.offset.reset": "earliest", "enable.auto.commit": False, "group.protocol": protocol}
            if protocol == "classic":
                settings["partition.assignment.strategy"] = "range"
            consumer = Consumer(settings)
            consumer.subscribe([topic])
            self.consumers.append(consumer)
        self.stop = threading.Event()
        self.assigned = [threading.Event() for _ in self.consumers]
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        while not self.stop.is_set():
            for consumer, assigned in zip(self.consumers, self.assigned):
                consumer.poll(0.05)
                if consumer.assignment():
                    assigned.set()
        for consumer in self.consumers:
            consumer.close()

    @contextmanager
    def running(self, timeout: float = 30.0):
        self.thread.start()
        try:
            for assigned in self.assigned:
                assert assigned.wait(timeout), "a consumer got no assignment"
            yield self
        finally:
            self.stop.set()
            self.thread.join(30)


def produce_keyed(tool, topic: str, count: int) -> None:
    tool(CONSOLE_PRODUCER, *SERVER, "--topic", topic, "--sync", "--timeout", "0", "--property", "parse.key=true",
         "--property", "key.separator=:", input="".join(f"k{i}:v{i}\n" for i in range(count)))


def test_kafka_consumer_groups(tool, tmp_path):
    c = (CONSUMER_GROUPS, *SERVER)
    tool(TOPICS, *SERVER, "--create", "--topic", "tools-groups", "--partitions", "2", "--replication-factor", "1")
    tool(TOPICS, *SERVER, "--create", "--topic", "tools-groups-b", "--partitions", "1", "--replication-factor", "1")
    produce_keyed(tool, "tools-groups", 6)
    produce_keyed(tool, "tools-groups-b", 2)
    tool(CONSOLE_CONSUMER, *SERVER, "--topic", "tools-groups", "--from-beginning", "--max-messages", "6",
         "--group", "tools-g1")
    tool(CONSOLE_CONSUMER, *SERVER, "--topic", "tools-groups-b", "--from-beginning", "--max-messages", "2",
         "--group", "tools-g1")
    tool(*c, "--list")
    tool(*c, "--list", "--state")
    tool(*c, "--list", "--state", "Empty")
    tool(*c, "--list", "--type")
    tool(*c, "--describe", "--group", "tools-g1")
    tool(*c, "--describe", "--group", "tools-g1", "--members")
    tool(*c, "--describe", "--group", "tools-g1", "--members", "--verbose")
    tool(*c, "--describe", "--group", "tools-g1", "--state")
    tool(*c, "--describe", "--group", "tools-g1", "--state", "--verbose")
    tool(*c, "--describe", "--group", "tools-g1", "--offsets")
    tool(*c, "--describe", "--all-groups", "--offsets")
    tool(*c, "--describe", "--group", "tools-missing")
    # --reset-offsets: every scope and every way of choosing the offset; a dry run, then --execute.
    tool(*c, "--reset-offsets", "--group", "tools-g1", "--topic", "tools-groups", "--to-earliest")
    tool(*c, "--reset-offsets", "--group", "tools-g1", "--topic", "tools-groups", "--to-earliest", "--execute")
    tool(*c, "--reset-offsets", "--group", "tools-g1", "--all-topics", "--to-latest", "--dry-run")
    tool(*c, "--reset-offsets", "--group", "tools-g1", "--topic", "tools-groups:0", "--to-offset", "1", "--execute")
    tool(*c, "--reset-offsets", "--group", "tools-g1", "--topic", "tools-groups:0,1", "--shift-by", "2", "--execute")
    tool(*c, "--reset-offsets", "--group", "tools-g1", "--topic", "tools-groups", "--shift-by", "-1", "--execute")
    tool(*c, "--reset-offsets", "--group", "tools-g1", "--topic", "tools-groups", "--to-offset", "100", "--execute")
    tool(*c, "--reset-offsets", "--group", "tools-g1", "--topic", "tools-groups", "--to-current", "--execute")
    tool(*c, "--reset-offsets", "--group", "tools-g1", "--topic", "tools-groups",
         "--to-datetime", "2020-01-01T00:00:00.000", "--execute")
    tool(*c, "--reset-offsets", "--group", "tools-g1", "--topic", "tools-groups", "--by-duration", "PT1H",
         "--execute")
    tool(*c, "--reset-offsets", "--group", "tools-g1", "--all-topics", "--to-latest", "--execute")
    tool(*c, "--reset-offsets", "--all-groups", "--topic", "tools-groups-b", "--to-earliest", "--execute")
    tool(*c, "--reset-offsets", "--group", "tools-g1", "--topic", "tools-missing", "--to-earliest", "--execute")
    tool(*c, "--reset-offsets", "--group", "tools-g1", "--topic", "tools-groups", "--to-earliest", "--export")
    plan = tmp_path / "offsets.csv"  # what --export prints
    plan.write_text("tools-g1,tools-groups,0,1\ntools-g1,tools-groups,1,2\n")
    tool(*c, "--reset-offsets", "--group", "tools-g1", "--from-file", str(plan), "--execute")
    tool(*c, "--describe", "--group", "tools-g1", "--offsets")
    tool(*c, "--delete-offsets", "--group", "tools-g1", "--topic", "tools-groups:1")
    tool(*c, "--delete-offsets", "--group", "tools-g1", "--topic", "tools-groups-b")
    tool(*c, "--delete-offsets", "--group", "tools-missing", "--topic", "tools-groups")
    tool(*c, "--describe", "--group", "tools-g1", "--offsets")
    tool(*c, "--delete", "--group", "tools-g1")
    tool(*c, "--delete", "--group", "tools-g1")
    tool(*c, "--describe", "--group", "tools-g1")


def test_kafka_consumer_groups_with_a_live_classic_member(tool, kafka, ours):
    c = (CONSUMER_GROUPS, *SERVER)
    tool(TOPICS, *SERVER, "--create", "--topic", "tools-live", "--partitions", "3", "--replication-factor", "1")
    produce_keyed(tool, "tools-live", 9)
    with Members(kafka, ours, "tools-live-classic", "tools-live", "classic").running():
        tool(*c, "--describe", "--group", "tools-live-classic")
        tool(*c, "--describe", "--group", "tools-live-classic", "--members")
        tool(*c, "--describe", "--group", "tools-live-classic", "--members", "--verbose")
        tool(*c, "--describe", "--group", "tools-live-classic", "--state")
        tool(*c, "--describe", "--group", "tools-live-classic", "--state", "--verbose")
        tool(*c, "--list", "--state", "Stable")
        tool(*c, "--reset-offsets", "--group", "tools-live-classic", "--topic", "tools-live", "--to-earliest",
             "--execute")
        tool(*c, "--delete", "--group", "tools-live-classic")
        tool(*c, "--delete-offsets", "--group", "tools-live-classic", "--topic", "tools-live")


def test_kafka_consumer_groups_with_a_live_consumer_protocol_member(tool, kafka, ours):
    c = (CONSUMER_GROUPS, *SERVER)
    tool(TOPICS, *SERVER, "--create", "--topic", "tools-live-848", "--partitions", "3", "--replication-factor", "1")
    # Written to first: then Kafka's group coordinator knows the topic when the member joins (a heartbeat that
    # comes before the topic's metadata gets the group epoch bumped once more when the metadata arrives).
    produce_keyed(tool, "tools-live-848", 3)
    with Members(kafka, ours, "tools-live-consumer", "tools-live-848", "consumer").running():
        tool(*c, "--describe", "--group", "tools-live-consumer")
        tool(*c, "--describe", "--group", "tools-live-consumer", "--members")
        tool(*c, "--describe", "--group", "tools-live-consumer", "--members", "--verbose")  # epochs, assignments
        tool(*c, "--describe", "--group", "tools-live-consumer", "--state")
        tool(*c, "--describe", "--group", "tools-live-consumer", "--state", "--verbose")
        tool(*c, "--list", "--type")
        tool(*c, "--reset-offsets", "--group", "tools-live-consumer", "--topic", "tools-live-848", "--to-earliest",
             "--execute")
        tool(*c, "--delete", "--group", "tools-live-consumer")


# -- kafka-transactions ---------------------------------------------------------------------------------

def test_kafka_transactions(tool, kafka, ours):
    from confluent_kafka import Producer

    x = (TRANSACTIONS, *SERVER)
    tool(TOPICS, *SERVER, "--create", "--topic", "tools-txn", "--partitions", "1", "--replication-factor", "1")
    tool(*x, "list")
    open_producers = []
    for broker in (kafka, ours):  # the same transactions on both: one committed, one left open
        done = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tools-txn-done"})
        done.init_transactions(30)
        done.begin_transaction()
        done.produce("tools-txn", key=b"k", value=b"committed")
        done.commit_transaction(30)
        pending = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tools-txn-open",
                            "transaction.timeout.ms": 600000})
        pending.init_transactions(30)
        pending.begin_transaction()
        for i in range(3):
            pending.produce("tools-txn", key=b"k", value=b"pending-%d" % i)
        pending.flush(30)
        open_producers.append(pending)
    tool(*x, "list")
    tool(*x, "list", "--transactional-id-pattern", "tools-txn-o.*")
    tool(*x, "list", "--duration-filter", "1")
    tool(*x, "describe", "--transactional-id", "tools-txn-open")
    tool(*x, "describe", "--transactional-id", "tools-txn-done")
    tool(*x, "describe", "--transactional-id", "tools-txn-missing")
    tool(*x, "describe-producers", "--topic", "tools-txn", "--partition", "0")
    tool(*x, "find-hanging", "--broker-id", "1")
    tool(*x, "find-hanging", "--topic", "tools-txn", "--max-transaction-timeout", "0")
    tool(CONSOLE_CONSUMER, *SERVER, "--topic", "tools-txn", "--from-beginning", "--isolation-level",
         "read_committed", "--timeout-ms", "1000")
    tool(*x, "abort", "--topic", "tools-txn", "--partition", "0", "--start-offset", "2")
    tool(*x, "abort", "--topic", "tools-txn", "--partition", "0", "--start-offset", "0")
    tool(*x, "describe-producers", "--topic", "tools-txn", "--partition", "0")
    tool(*x, "abort", "--topic", "tools-txn", "--partition", "0", "--start-offset", "2")
    tool(CONSOLE_CONSUMER, *SERVER, "--topic", "tools-txn", "--from-beginning", "--isolation-level",
         "read_committed", "--timeout-ms", "1000")
    del open_producers


# -- kafka-features -------------------------------------------------------------------------------------

def test_kafka_features(tool):
    f = (FEATURES, *SERVER)
    tool(*f, "version-mapping")
    tool(*f, "version-mapping", "--release-version", "3.9-IV0")
    tool(*f, "feature-dependencies", "--feature", "transaction.version=2")
    tool(*f, "upgrade", "--feature", "transaction.version=9", "--dry-run")
    tool(*f, "downgrade", "--feature", "group.version=0", "--dry-run")
    tool(*f, "upgrade", "--feature", "no.such.feature=1", "--dry-run")
    shared = ("transaction.version", "group.version", "share.version", "streams.version")
    pair = tool.session.compare(tool.kafka.bootstrap, tool.ours.bootstrap, *f, "describe")

    def rows(output: str) -> list[str]:
        return [line for line in output.splitlines() if line.split()[1:2] and line.split()[1] in shared]
    # The features both brokers have (the others: test_kafka_features_describe).
    assert rows(pair.ours.stdout) == rows(pair.kafka.stdout) and len(rows(pair.kafka.stdout)) == 4, pair.diff()


@pytest.mark.xfail(strict=True, reason=(
    "kafka-features.sh describe: Kafka 4.3 also lists metadata.version and kraft.version (KRaft's metadata log) "
    "and eligible.leader.replicas.version (KIP-966), "
    "none of which kafka-wire has; kafka-wire lists transaction.version, group.version, share.version and "
    "streams.version, as Kafka does "
    "(test_kafka_features). Not fixable without those features"))
def test_kafka_features_describe(tool):
    tool(FEATURES, *SERVER, "describe")
    tool.assert_same()


# -- kafka-reassign-partitions and kafka-leader-election, on one node --------------------------------------

def test_reassign_partitions_and_leader_election_on_one_node(tool, tmp_path):
    r = (REASSIGN_PARTITIONS, *SERVER)
    tool(TOPICS, *SERVER, "--create", "--topic", "tools-moves", "--partitions", "2", "--replication-factor", "1")
    topics = json_file(tmp_path, "topics.json", {"version": 1, "topics": [{"topic": "tools-moves"}]})
    tool(*r, "--topics-to-move-json-file", topics, "--broker-list", "1", "--generate")
    plan = json_file(tmp_path, "plan.json", {"version": 1, "partitions": [
        {"topic": "tools-moves", "partition": 0, "replicas": [1], "log_dirs": ["any"]},
        {"topic": "tools-moves", "partition": 1, "replicas": [1]}]})
    tool(*r, "--reassignment-json-file", plan, "--execute")
    tool(*r, "--reassignment-json-file", plan, "--verify")
    tool(*r, "--list")
    tool(*r, "--reassignment-json-file", plan, "--cancel")
    elsewhere = json_file(tmp_path, "elsewhere.json", {"version": 1, "partitions": [
        {"topic": "tools-moves", "partition": 0, "replicas": [2]}]})
    tool(*r, "--reassignment-json-file", elsewhere, "--execute")
    missing = json_file(tmp_path, "missing.json", {"version": 1, "partitions": [
        {"topic": "tools-missing", "partition": 0, "replicas": [1]}]})
    tool(*r, "--reassignment-json-file", missing, "--execute")
    e = (LEADER_ELECTION, *SERVER)
    tool(*e, "--election-type", "preferred", "--all-topic-partitions")
    tool(*e, "--election-type", "preferred", "--topic", "tools-moves", "--partition", "0")
    tool(*e, "--election-type", "unclean", "--topic", "tools-moves", "--partition", "1")
    tool(*e, "--election-type", "preferred", "--topic", "tools-missing", "--partition", "0")
    elections = json_file(tmp_path, "elections.json", {"partitions": [
        {"topic": "tools-moves", "partition": 0}, {"topic": "tools-moves", "partition": 1}]})
    tool(*e, "--election-type", "preferred", "--path-to-json-file", elections)


# -- perf tools, verifiable clients ---------------------------------------------------------------------

def test_producer_performance_and_end_to_end_latency(tool):
    tool(TOPICS, *SERVER, "--create", "--topic", "tools-perf", "--partitions", "2", "--replication-factor", "1")
    tool(PRODUCER_PERFORMANCE, "--topic", "tools-perf", "--num-records", "1000", "--record-size", "100",
         "--throughput", "-1", "--command-property", f"bootstrap.servers={B}", "--command-property", "acks=all")
    tool(PRODUCER_PERFORMANCE, "--topic", "tools-perf", "--num-records", "300", "--record-size", "50",
         "--throughput", "-1", "--command-property", f"bootstrap.servers={B}",
         "--transactional-id", "tools-perf-txn", "--transaction-duration-ms", "100")
    tool(GET_OFFSETS, *SERVER, "--topic", "tools-perf", "--time", "-2")
    tool(END_TO_END_LATENCY, *SERVER, "--topic", "tools-e2e", "--num-records", "100", "--producer-acks", "1",
         "--record-size", "100")


def run_both(kafka, ours, tool: str, *args: str, timeout: float = 120.0) -> tuple[str, str]:
    """`tool` as a process of its own against each broker, both at once (they share nothing); stdouts."""
    processes = [subprocess.Popen(java_command(KAFKA_4, tool, *(a.replace(B, b.bootstrap) for a in args)),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
                 for b in (kafka, ours)]
    outputs = []
    for process in processes:
        out, err = process.communicate(timeout=timeout)
        assert process.returncode == 0, f"{tool} exited with {process.returncode}:\n{out[-2000:]}\n{err[-2000:]}"
        outputs.append(out)
    return outputs[0], outputs[1]


def events(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def delivery(producer_output: str) -> dict:
    """kafka-verifiable-producer's delivery summary: each acknowledged record's place, and the totals."""
    found = events(producer_output)
    [data] = [e for e in found if e["name"] == "tool_data"]
    return {"acked": sorted((e["topic"], e["partition"], e["offset"], e["key"], e["value"])
                            for e in found if e["name"] == "producer_send_success"),
            "errors": [e for e in found if e["name"] == "producer_send_error"],
            "sent": data["sent"], "acked_count": data["acked"],
            "lifecycle": [e["name"] for e in found if e["name"] in ("startup_complete", "shutdown_complete")]}


def consumption(consumer_output: str) -> dict:
    """kafka-verifiable-consumer's summary: what it was assigned, how many records it consumed per
    partition (and their offset range), what it committed last, how it started and ended."""
    found = events(consumer_output)
    consumed: dict[str, tuple[int, int, int]] = {}
    for event in found:
        if event["name"] == "records_consumed":
            for p in event["partitions"]:
                key = f"{p['topic']}-{p['partition']}"
                count, low, high = consumed.get(key, (0, p["minOffset"], p["maxOffset"]))
                consumed[key] = (count + p["count"], min(low, p["minOffset"]), max(high, p["maxOffset"]))
    committed = {}
    for event in found:
        if event["name"] == "offsets_committed":
            assert event["success"], event
            committed.update({f"{o['topic']}-{o['partition']}": o["offset"] for o in event["offsets"]})
    assigned = sorted({f"{p['topic']}-{p['partition']}" for e in found if e["name"] == "partitions_assigned"
                       for p in e["partitions"]})
    return {"assigned": assigned, "consumed": consumed, "committed": committed,
            "lifecycle": [e["name"] for e in found if e["name"] in ("startup_complete", "shutdown_complete")]}


def test_verifiable_producer_and_consumer(tool, kafka, ours):
    tool(TOPICS, *SERVER, "--create", "--topic", "tools-verifiable", "--partitions", "2", "--replication-factor", "1")
    # Keyed records (--repeating-keys): each goes to the partition murmur2 picks, the same on both sides.
    produced = run_both(kafka, ours, VERIFIABLE_PRODUCER, *SERVER, "--topic", "tools-verifiable",
                        "--max-messages", "40", "--acks", "-1", "--repeating-keys", "5")
    kafka_delivery = delivery(produced[0])
    assert kafka_delivery["sent"] == kafka_delivery["acked_count"] == 40 and not kafka_delivery["errors"]
    assert delivery(produced[1]) == kafka_delivery
    consumed = run_both(kafka, ours, VERIFIABLE_CONSUMER, *SERVER, "--topic", "tools-verifiable",
                        "--group-id", "tools-verifiable-group", "--max-messages", "40", "--reset-policy", "earliest")
    kafka_consumption = consumption(consumed[0])
    assert sum(count for count, _, _ in kafka_consumption["consumed"].values()) == 40
    assert consumption(consumed[1]) == kafka_consumption
    tool(CONSUMER_GROUPS, *SERVER, "--describe", "--group", "tools-verifiable-group", "--offsets")


# -- kafka-reassign-partitions and kafka-leader-election on a kafka-wire cluster --------------------------

@pytest.fixture(scope="module")
def cluster(zookeeper_installed):
    from testing.cluster import running_cluster

    with running_cluster(3, config={"auto.leader.rebalance.enable": "false"}) as started:
        yield started


def test_reassign_partitions_and_leader_election_on_a_cluster(cluster, tools, tmp_path):
    """Against a kafka-wire ZooKeeper cluster of three (a single reference Kafka cannot host this): the
    tools must succeed and print what Kafka's tools print when a move and an election succeed."""
    bootstrap = cluster.bootstrap

    def run(tool: str, *args: str) -> str:
        done = tools.run(tool, "--bootstrap-server", bootstrap, *args)
        assert done.exit == 0, f"{tool} {' '.join(args)}: exit {done.exit}\n{done.stdout}\n{done.stderr}"
        return done.stdout

    assert run(TOPICS, "--create", "--topic", "tools-cluster", "--replica-assignment", "1:2") == \
        "Created topic tools-cluster.\n"
    cluster.wait_for_isr("tools-cluster", 0, {1, 2})
    # Replicas [1, 2] -> [2, 3]: a real move (3 copies the log, 1 leaves).
    plan = json_file(tmp_path, "move.json", {"version": 1, "partitions": [
        {"topic": "tools-cluster", "partition": 0, "replicas": [2, 3]}]})
    out = run(REASSIGN_PARTITIONS, "--reassignment-json-file", plan, "--execute")
    assert "Successfully started partition reassignment for tools-cluster-0" in out, out
    deadline = time.monotonic() + 60
    while "Reassignment of partition tools-cluster-0 is completed." not in \
            (out := run(REASSIGN_PARTITIONS, "--reassignment-json-file", plan, "--verify")):
        assert "is still in progress" in out, out
        assert time.monotonic() < deadline, out
        time.sleep(0.5)
    assert run(REASSIGN_PARTITIONS, "--list") == "No partition reassignments found.\n"
    described = run(TOPICS, "--describe", "--topic", "tools-cluster")
    assert "\tReplicas: 2,3\tIsr: " in described, described
    # Replicas [2, 3] -> [3, 2]: the preferred leader becomes 3; the leader stays where it is until an election.
    leader = cluster.leader_of("tools-cluster")
    swap = json_file(tmp_path, "swap.json", {"version": 1, "partitions": [
        {"topic": "tools-cluster", "partition": 0, "replicas": [3, 2] if leader == 2 else [2, 3]}]})
    run(REASSIGN_PARTITIONS, "--reassignment-json-file", swap, "--execute")
    cluster.wait_for(lambda: "is completed" in run(REASSIGN_PARTITIONS, "--reassignment-json-file", swap, "--verify"),
                     30, "the swap")
    cluster.wait_for_isr("tools-cluster", 0, {2, 3})
    assert cluster.leader_of("tools-cluster") == leader
    out = run(LEADER_ELECTION, "--election-type", "preferred", "--topic", "tools-cluster", "--partition", "0")
    assert out == "Successfully completed leader election (PREFERRED) for partitions tools-cluster-0\n", out
    cluster.wait_for(lambda: cluster.leader_of("tools-cluster") != leader, 20, "the preferred leader")
    out = run(LEADER_ELECTION, "--election-type", "preferred", "--all-topic-partitions")
    assert "tools-cluster-0" not in out, out  # already the preferred leader: nothing to elect
