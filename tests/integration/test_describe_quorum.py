"""DescribeQuorum (55) from real clients: kafka-python's admin describe_metadata_quorum and Kafka
4.3.0's own `kafka-metadata-quorum describe --status` (MetadataQuorumCommand). The embedded node is
the one voter and leader of its metadata: its epoch counts its terms (one per start), its high
watermark the changes its metadata has had; with two worker processes worker 0 answers."""

from __future__ import annotations

import pytest

from client import WireClient
from compat import reference_kafka
from testing.broker_process import running_broker

from wire_cases import create_topic, unique

kafka_admin = pytest.importorskip("kafka.admin")


def quorum(bootstrap: str) -> dict:
    admin = kafka_admin.KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return admin.describe_metadata_quorum()
    finally:
        admin.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_the_embedded_node_is_the_one_voter_and_leader_of_its_metadata(tmp_path, workers):
    with running_broker(tmp_path, config={"num.worker.processes": workers}) as broker:
        described = quorum(broker.bootstrap)
        [topic] = described["topics"]
        [partition] = topic["partitions"]
        assert (topic["topic_name"], partition["partition_index"], partition["error"]) == ("__cluster_metadata", 0, None)
        assert (partition["leader_id"], partition["leader_epoch"]) == (1, 1)
        [voter] = partition["current_voters"]
        assert voter["replica_id"] == 1 and voter["log_end_offset"] == partition["high_watermark"] >= 1
        assert partition["observers"] == []
        [node] = described["nodes"]
        host, port = broker.bootstrap.rsplit(":", 1)
        assert node["node_id"] == 1
        assert [(lst["name"], lst["host"], lst["port"]) for lst in node["listeners"]] == [("PLAINTEXT", host, int(port))]
        with WireClient(broker.bootstrap) as client:
            create_topic(client, unique("quorum"))
        after = quorum(broker.bootstrap)["topics"][0]["partitions"][0]
        assert after["high_watermark"] == partition["high_watermark"] + 1  # one change of the metadata
        broker.restart()
        restarted = quorum(broker.bootstrap)["topics"][0]["partitions"][0]
        assert restarted["leader_epoch"] == 2  # a new term, opened by one record
        assert restarted["high_watermark"] == after["high_watermark"] + 1


def test_only_cluster_metadata_partition_0_is_described(tmp_path):
    with running_broker(tmp_path) as broker, WireClient(broker.bootstrap) as client:
        answer = client.call("DescribeQuorum", 2, {"topics": [
            {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 1}]}]})
        [partition] = answer.topics[0].partitions
        assert (partition.error_code, partition.error_message, partition.current_voters) == (
            3, "This server does not host this topic-partition.", [])


@pytest.mark.skipif(not reference_kafka.is_installed("4.3.0"), reason="the reference Kafka 4.3.0 is not installed")
def test_kafka_metadata_quorum_tool_describes_the_status(tmp_path):
    with running_broker(tmp_path) as broker:
        done = reference_kafka.run_tool("4.3.0", "org.apache.kafka.tools.MetadataQuorumCommand",
                                        "--bootstrap-server", broker.bootstrap, "describe", "--status")
    assert done.returncode == 0, done.stdout + done.stderr
    status = dict(line.split(":", 1) for line in done.stdout.splitlines() if ":" in line)
    status = {key.strip(): value.strip() for key, value in status.items()}
    assert (status["LeaderId"], status["LeaderEpoch"], status["MaxFollowerLag"]) == ("1", "1", "0")
    assert int(status["HighWatermark"]) >= 1
    assert status["CurrentVoters"] == f'[{{"id": 1, "endpoints": ["PLAINTEXT://{broker.bootstrap}"]}}]'
    assert status["CurrentObservers"] == "[]"


def test_a_zookeeper_cluster_broker_does_not_serve_it(zookeeper_installed, tmp_path):
    """As Kafka's ZooKeeper-mode brokers: DescribeQuorum is absent from ApiVersions, and a request for it
    closes the connection (the broker goes on serving others)."""
    from client import ConnectionClosed
    from testing.cluster import running_cluster

    with running_cluster(1, config={"offsets.topic.replication.factor": 1}, tmp_dir=tmp_path) as cluster:
        bootstrap = cluster.brokers[1].bootstrap
        with WireClient(bootstrap) as client:
            keys = {k.api_key for k in client.call("ApiVersions", 3, {"client_software_name": "t",
                                                                      "client_software_version": "1"}).api_keys}
            assert 55 not in keys and 60 in keys
            with pytest.raises((ConnectionClosed, ConnectionResetError)):
                client.call("DescribeQuorum", 2, {"topics": [
                    {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]})
        with WireClient(bootstrap) as client:
            assert client.call("ApiVersions", 3, {"client_software_name": "t",
                                                  "client_software_version": "1"}).error_code == 0
