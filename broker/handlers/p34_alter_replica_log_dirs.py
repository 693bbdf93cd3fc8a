"""AlterReplicaLogDirs (34): move partitions of this broker to another of its log dirs (KIP-113).

As Kafka's KafkaApis.handleAlterReplicaLogDirsRequest and ReplicaManager.alterReplicaLogDirs:
ALTER on the cluster is needed (else every partition answers CLUSTER_AUTHORIZATION_FAILED); a
partition named under two dirs goes to the last one. Per partition: a path that is not one of
the configured log dirs (absolute, as DescribeLogDirs lists them) is LOG_DIR_NOT_FOUND, one that
cannot be used KAFKA_STORAGE_ERROR, a partition of no known topic UNKNOWN_TOPIC_OR_PARTITION and
one of a known topic that this broker holds no replica of REPLICA_NOT_AVAILABLE. Otherwise the
answer is NONE at once and the move happens in the background (log/future_log.py): the partition
serves from its current dir until the copy in the new one has caught up, and DescribeLogDirs
shows that copy as the future replica meanwhile. Asking for the dir the partition is in already
stops a move under way.
"""

from __future__ import annotations

import os

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["AlterReplicaLogDirs"]

# Kafka refuses topics whose future directory name (`<topic>-<partition>.<32 hex>-future`) would
# not fit in a file name (KAFKA-4893).
MAX_FILE_NAME = 255
FUTURE_NAME_EXTRA = len(".") + 32 + len("-future")


def _usable(path: str) -> bool:
    return os.path.isdir(path) and os.access(path, os.R_OK | os.W_OK | os.X_OK)


def alter_one(broker: BrokerView, topic: str, partition: int, path: str) -> ErrorCode:
    if len(f"{topic}-{partition}") + FUTURE_NAME_EXTRA > MAX_FILE_NAME:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    if path not in broker.logs.log_dirs:
        return ErrorCode.LOG_DIR_NOT_FOUND
    if not _usable(path):
        return ErrorCode.KAFKA_STORAGE_ERROR
    if broker.logs.get(topic, partition) is None:
        meta = broker.metadata.topic(topic)
        if meta is None or not 0 <= partition < meta.partitions:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return ErrorCode.REPLICA_NOT_AVAILABLE
    broker.logs.mover.alter_log_dir(topic, partition, path)
    return ErrorCode.NONE


async def handle(broker: BrokerView, ctx, request):
    if not broker.authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "results": [
            {"topic_name": t.name, "partitions": [
                {"partition_index": p, "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)}
                for p in t.partitions]}
            for d in request.dirs for t in d.topics]}
    destinations: dict[tuple[str, int], str] = {}
    for d in request.dirs:
        for t in d.topics:
            for p in t.partitions:
                destinations.pop((t.name, p), None)  # the last one named wins, in its place
                destinations[(t.name, p)] = d.path
    by_topic: dict[str, list[dict]] = {}
    for (topic, partition), path in destinations.items():
        error = alter_one(broker, topic, partition, path)
        by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": int(error)})
    return {"throttle_time_ms": 0, "results": [{"topic_name": topic, "partitions": partitions}
                                                for topic, partitions in by_topic.items()]}
