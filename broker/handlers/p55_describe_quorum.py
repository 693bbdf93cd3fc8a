"""DescribeQuorum (55): the quorum of the metadata log, as `kafka-metadata-quorum describe` and
Admin.describeMetadataQuorum ask for it.

The embedded node is what a KRaft single node is: the one voter of its metadata and its leader. It
answers with itself as leader and only voter (leader epoch: its terms, one per start; high watermark
and log end offset: the changes its metadata has had, broker/metadata.py MetadataQuorum), its
advertised listeners as the voter's endpoints (v2), and, as the leader, now for its last fetch and
caught-up times (v1+), as Kafka's leader reports itself. A ZooKeeper cluster broker does not serve
it, as Kafka's ZooKeeper-mode brokers did not: absent from ApiVersions, a request for it closes the
connection. As Kafka's KafkaRaftClient, a request that names anything but `__cluster_metadata`
partition 0 alone gets UNKNOWN_TOPIC_OR_PARTITION for each partition it names; it needs DESCRIBE
on the cluster.
"""

from __future__ import annotations

import time
import uuid

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["DescribeQuorum"]

METADATA_TOPIC, METADATA_PARTITION = "__cluster_metadata", 0
_NOT_HOSTED = "This server does not host this topic-partition."


def served(broker: BrokerView) -> bool:
    return broker.metadata.metadata_quorum() is not None


def _not_hosted(partition: int) -> dict:
    return {"partition_index": partition, "error_code": int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            "error_message": _NOT_HOSTED, "leader_id": 0, "leader_epoch": 0, "high_watermark": 0,
            "current_voters": [], "observers": []}


async def handle(broker: BrokerView, ctx, request):
    if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return {"error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                "error_message": ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message(), "topics": [], "nodes": []}
    named = [(t.topic_name, p.partition_index) for t in request.topics for p in t.partitions]
    if named != [(METADATA_TOPIC, METADATA_PARTITION)]:
        return {"error_code": 0, "error_message": "", "nodes": [], "topics": [
            {"topic_name": t.topic_name, "partitions": [_not_hosted(p.partition_index) for p in t.partitions]}
            for t in request.topics]}
    quorum = broker.metadata.metadata_quorum()
    now = int(time.time() * 1000)
    voter = {"replica_id": quorum.leader_id, "replica_directory_id": uuid.UUID(int=0),
             "log_end_offset": quorum.high_watermark, "last_fetch_timestamp": now, "last_caught_up_timestamp": now}
    return {"error_code": 0, "error_message": "", "topics": [{"topic_name": METADATA_TOPIC, "partitions": [{
        "partition_index": METADATA_PARTITION, "error_code": 0, "error_message": "", "leader_id": quorum.leader_id,
        "leader_epoch": quorum.leader_epoch, "high_watermark": quorum.high_watermark,
        "current_voters": [voter], "observers": []}]}],
        "nodes": [{"node_id": quorum.leader_id, "listeners": [
            {"name": name, "host": host, "port": port}
            for name, host, port in ((name, *broker.advertised_endpoint(name))
                                     for name, _, _ in broker.config.advertised_listeners())]}]}
