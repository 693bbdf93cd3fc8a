"""DescribeLogDirs (35): per log directory, the partitions it holds, their sizes and the disk's space.

As Kafka's KafkaApis.handleDescribeLogDirsRequest and ReplicaManager.describeLogDirs: needs
DESCRIBE on the cluster (else an empty answer with CLUSTER_AUTHORIZATION_FAILED); null topics
means every partition this broker has; requested partitions it does not have are left out, and so
are topics left without partitions. Every configured log dir is listed, with its absolute path; one
that cannot be read, or was taken offline after an I/O failure, is KAFKA_STORAGE_ERROR. The offset lag is how far the log end offset is behind
the high watermark (0 on a leader). A partition being moved to another log dir (AlterReplicaLogDirs)
is listed there too, as its future replica: the bytes copied so far, and how far the copy's end
offset is behind the current log's.
"""

from __future__ import annotations

import logging
import os

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["DescribeLogDirs"]

logger = logging.getLogger("kafka_wire.broker")

LONG_MAX = (1 << 63) - 1


def disk_space(log_dir: str) -> tuple[int, int]:
    """(total bytes, usable bytes) of the file system holding log_dir, as Java's FileStore
    getTotalSpace/getUsableSpace (Kafka answers Long.MAX_VALUE for sizes that overflow)."""
    stat = os.statvfs(log_dir)
    total = stat.f_blocks * stat.f_frsize
    usable = stat.f_bavail * stat.f_frsize
    return min(total, LONG_MAX), min(usable, LONG_MAX)


def describe_log_dir(broker: BrokerView, log_dir: str, wanted: set[tuple[str, int]] | None) -> dict:
    path = os.path.abspath(log_dir)
    if path in broker.logs.offline_dirs:  # taken offline after an I/O failure (LogManager.mark_offline)
        return {"error_code": int(ErrorCode.KAFKA_STORAGE_ERROR), "log_dir": path, "topics": []}
    try:
        if not os.path.isdir(path) or not os.access(path, os.R_OK | os.W_OK | os.X_OK):
            raise OSError(f"log directory {path} is not accessible")
        total, usable = disk_space(path)
    except OSError as exc:
        logger.warning("DescribeLogDirs: %s is offline: %s", path, exc)
        return {"error_code": int(ErrorCode.KAFKA_STORAGE_ERROR), "log_dir": path, "topics": []}
    by_topic: dict[str, list[dict]] = {}
    for (topic, partition), plog in broker.logs.logs():
        if broker.logs.log_dir_of(topic, partition) != path:
            continue
        if wanted is not None and (topic, partition) not in wanted:
            continue
        by_topic.setdefault(topic, []).append({
            "partition_index": partition,
            "partition_size": plog.size_in_bytes,
            "offset_lag": max(plog.high_watermark - plog.log_end_offset, 0),
            "is_future_key": False,
        })
    for future in broker.logs.mover.futures():
        tp = (future.topic, future.partition)
        current = broker.logs.get(*tp)
        if future.log_dir != path or current is None or (wanted is not None and tp not in wanted):
            continue
        by_topic.setdefault(future.topic, []).append({
            "partition_index": future.partition,
            "partition_size": future.size,
            "offset_lag": current.log_end_offset - future.log_end_offset,
            "is_future_key": True,
        })
    topics = [{"name": topic, "partitions": sorted(parts, key=lambda p: (p["partition_index"], p["is_future_key"]))}
              for topic, parts in sorted(by_topic.items())]
    # v5: no log dir is ever cordoned here (KIP-1066's cordoned.log.dirs is not implemented).
    return {"error_code": 0, "log_dir": path, "topics": topics, "total_bytes": total, "usable_bytes": usable,
            "is_cordoned": False}


async def handle(broker: BrokerView, ctx, request):
    if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), "results": []}
    wanted = None
    if request.topics is not None:
        wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
    results = [describe_log_dir(broker, d, wanted) for d in dict.fromkeys(broker.config.log_dirs)]
    return {"throttle_time_ms": 0, "error_code": 0, "results": results}
