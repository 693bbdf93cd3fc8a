"""Durable acknowledgements in a ZooKeeper cluster (log.flush.on.ack, the default): a produce with
acks=all is answered only once every in-sync replica has the records on its disk, not only in its
page cache. A follower syncs what it copied before its next fetch tells the leader its log end
offset (broker/cluster/replica_fetcher.py), so when the leader answers, each follower's recovery
point (`kafka_wire_log_recovery_point`, moved only by a finished sync) already covers the records.
A transaction's markers are synced on every replica before its coordinator writes CompleteCommit:
a marker lost to a power cut behind a kept CompleteCommit would leave the transaction open.
"""

from __future__ import annotations

import pytest

from client import WireClient
from kafka_wire.record_codec import Record, build_batch
from testing.cluster import Cluster
from testing.processes import free_port
from test_metrics import scrape, value

pytestmark = pytest.mark.clients

TOPIC = "durable-followers"


@pytest.fixture(scope="module")
def metered(zookeeper_installed, tmp_path_factory):
    """Three brokers, each with its metrics endpoint: (cluster, {node id: metrics port})."""
    cluster = Cluster(tmp_path_factory.mktemp("durable-cluster"), 3, {"min.insync.replicas": 3})
    ports = {}
    for node_id, broker in cluster.brokers.items():
        ports[node_id] = broker.config["metrics.port"] = free_port()
    cluster.start()
    try:
        yield cluster, ports
    except BaseException as error:
        error.add_note(cluster.log_report())
        raise
    finally:
        cluster.stop()


def test_an_acks_all_answer_means_every_in_sync_replica_synced(metered):
    cluster, ports = metered
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    leader = cluster.wait_for_leader(TOPIC)
    cluster.wait_for_isr(TOPIC, 0, {1, 2, 3})
    with WireClient(cluster.brokers[leader].bootstrap) as client:
        for round_no in range(3):
            batch = build_batch([Record(i, 0, None, b"r%d-%d" % (round_no, i) * 50) for i in range(5)])
            response = client.call("Produce", 9, {"acks": -1, "timeout_ms": 15000, "topic_data": [
                {"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]})
            entry = response.responses[0].partition_responses[0]
            assert entry.error_code == 0
            acknowledged = entry.base_offset + 5
            # Scraped after the answer: every replica has synced what was acknowledged.
            for node_id, port in ports.items():
                point = value(scrape(port), "kafka_wire_log_recovery_point", topic=TOPIC, partition="0")
                assert point >= acknowledged, (node_id, "leader" if node_id == leader else "follower", point)


def test_a_completed_transactions_markers_were_synced_on_every_replica(metered):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    cluster, ports = metered
    topic, transactional_id = "durable-markers", "durable-markers-txn"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    cluster.wait_for_isr(topic, 0, {1, 2, 3})
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=b"txn-%d" % i, partition=0)
    producer.commit_transaction(30)

    def state() -> str:
        with WireClient(cluster.brokers[1].bootstrap) as client:
            found = client.call("FindCoordinator", 4, {"key_type": 1, "coordinator_keys": [transactional_id]})
            node = found.coordinators[0].node_id
        with WireClient(cluster.brokers[node].bootstrap) as client:
            described = client.call("DescribeTransactions", 0, {"transactional_ids": [transactional_id]})
            return described.transaction_states[0].transaction_state

    cluster.wait_for(lambda: state() == "CompleteCommit", timeout=30, what="the transaction complete")
    # Complete: the COMMIT marker (offset 3, after the three records) is on every replica's disk.
    for node_id, port in ports.items():
        point = value(scrape(port), "kafka_wire_log_recovery_point", topic=topic, partition="0")
        assert point >= 4, (node_id, point)
