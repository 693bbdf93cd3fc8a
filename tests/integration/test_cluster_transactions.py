"""Transactions in cluster mode with both transaction protocols, against three broker processes.

A transaction's coordinator is the leader of its __transaction_state partition; its data
partitions (replication factor 1, three partitions) are led by all three brokers, so most first
writes are checked at a coordinator on another broker: partition leaders send it AddPartitionsToTxn
v5, to verify the partition (transaction.version 0/1 clients) or to add it (transaction.version 2:
Java 4.3.0's Produce v12+ and TxnOffsetCommit v5). The requests are counted at every broker
(Prometheus endpoints) to show which protocol ran.
"""

from __future__ import annotations

import subprocess
import uuid
from collections import Counter

import pytest

from testing.cluster import Cluster
from testing.broker_process import free_port

from test_transactions import (
    JAVA_SOURCE,
    create_topic,
    java_produce,
    java_read_both,
    read_lines_until,
    requests_by_version,
    versions_of,
)

pytestmark = [pytest.mark.timeout(600)]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def cluster(zookeeper_installed, tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("txn-cluster"), 3, {"default.replication.factor": 1})
    for broker in cluster.brokers.values():
        broker.config["metrics.port"] = broker.metrics_port = free_port()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def requests(cluster) -> Counter:
    """Requests handled by all brokers, by (API, version)."""
    total = Counter()
    for broker in cluster.brokers.values():
        total += requests_by_version(broker.metrics_port)
    return total


@pytest.fixture(scope="module")
def txn_check(java_kafka_clients):
    return lambda version: java_kafka_clients(version).program(JAVA_SOURCE)


def test_cluster_finalizes_transaction_version_2(cluster):
    from test_api_features import features

    for broker in cluster.brokers.values():
        assert features(broker.bootstrap)[1]["transaction.version"] == 2


@pytest.mark.parametrize("version", ["3.9.0", "4.3.0"])
def test_java_transactions_across_brokers(cluster, txn_check, version):
    command = txn_check(version)
    topic = unique(f"ctxn-{version}")
    before = requests(cluster)
    produced = java_produce(command, cluster.bootstrap, topic)
    made = requests(cluster) - before
    # The leaders checked first writes at the coordinator (AddPartitionsToTxn v5 between brokers).
    assert versions_of(made, "AddPartitionsToTxn").get(5), made
    if version == "4.3.0":
        assert set(versions_of(made, "EndTxn")) == {5} and not any(
            v < 4 for v in versions_of(made, "AddPartitionsToTxn")), made
    else:
        assert max(versions_of(made, "EndTxn")) == 4 and versions_of(made, "AddPartitionsToTxn").get(3), made
    read = java_read_both(command, cluster.bootstrap, topic)
    assert len(produced.committed) == 20 and len(produced.aborted) == 10
    assert sorted(read["read_committed"]) == sorted(produced.committed)
    assert sorted(read["read_uncommitted"]) == sorted(produced.committed + produced.aborted)


@pytest.mark.parametrize("version", ["3.9.0", "4.3.0"])
def test_consume_transform_produce_across_brokers(cluster, txn_check, version):
    from confluent_kafka import Producer

    bootstrap = cluster.bootstrap
    source, sink = unique("cctp-in"), unique("cctp-out")
    create_topic(bootstrap, source, 3)
    create_topic(bootstrap, sink, 3)
    total = 300
    plain = Producer({"bootstrap.servers": bootstrap})
    for i in range(total):
        plain.produce(source, key=b"%d" % i, value=b"v%d" % i, partition=i % 3)
    plain.flush(30)
    before = requests(cluster)
    command = [*txn_check(version), "copy", bootstrap, source, sink, unique("cctp-group"), unique("cctp-txn"),
               str(total)]
    first = subprocess.Popen([*command, "3"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             stdin=subprocess.PIPE)
    try:
        read_lines_until(first, "IN-TXN 3 ", 90)
    finally:
        first.kill()  # SIGKILL with a transaction open
        first.wait(10)
    again = subprocess.run(command, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert again.returncode == 0 and "DONE" in again.stdout, again.stdout + again.stderr
    made = requests(cluster) - before
    offsets = versions_of(made, "TxnOffsetCommit")
    if version == "4.3.0":
        assert set(offsets) == {5} and not versions_of(made, "AddOffsetsToTxn"), made
    else:
        assert max(offsets) < 5 and versions_of(made, "AddOffsetsToTxn"), made
    expected = sorted(f"copy-v{i}" for i in range(total))
    committed = confluent_read_all(bootstrap, sink, total)
    assert sorted(committed) == expected


def confluent_read_all(bootstrap: str, topic: str, expected: int) -> list[str]:
    """read_committed values of a three-partition topic."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    from test_transactions import read_until

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("reader"),
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(3)])
    values: list[str] = []
    try:
        read_until(lambda: [m.value().decode() for m in consumer.consume(100, 0.2) if not m.error()], values,
                   expected)
    finally:
        consumer.close()
    return values
