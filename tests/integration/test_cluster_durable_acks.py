"""Durable acknowledgements in a ZooKeeper cluster (log.flush.on.ack, the default): a produce with
acks=all is answered only once every in-sync replica has the records on its disk, not only in its
page cache. A follower syncs what it copied before its next fetch tells the leader its log end
offset (broker/cluster/replica_fetcher.py), so when the leader answers, each follower's recovery
point (`kafka_wire_log_recovery_point`, moved only by a finished sync) already covers the records.
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


def test_an_acks_all_answer_means_every_in_sync_replica_synced(tmp_path, zookeeper_installed):
    cluster = Cluster(tmp_path, 3, {"min.insync.replicas": 3})
    ports = {}
    for node_id, broker in cluster.brokers.items():
        ports[node_id] = broker.config["metrics.port"] = free_port()
    cluster.start()
    try:
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
    except BaseException as error:
        error.add_note(cluster.log_report())
        raise
    finally:
        cluster.stop()
