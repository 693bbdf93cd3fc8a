"""DescribeShareGroupOffsets (90): each share-partition's start offset and (v1) lag, as
kafka-share-groups.sh --describe --offsets shows them (KIP-932).

A partition the group has no state for answers start offset -1 (and lag -1); topics null asks for
every share-partition the group has state for (GROUP_ID_NOT_FOUND when it is not a share group and
has none). The lag is the high watermark less the start offset less the records past the start
whose delivery is complete, as Kafka computes it.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..features import SHARE_VERSION
from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from ..share_groups import group_state_keys, service_of, share_partition_summary
from ..share_groups import served as serves_share_groups

API = APIS_BY_NAME["DescribeShareGroupOffsets"]


def _partition(index: int, error: ErrorCode = ErrorCode.NONE, start: int = -1, epoch: int = -1, lag: int = -1):
    return {"partition_index": index, "start_offset": start, "leader_epoch": epoch, "lag": lag,
            "error_code": int(error), "error_message": None}


def served(broker: BrokerView) -> bool:
    """Not by a ZooKeeper-mode cluster (broker/share_groups.py)."""
    return serves_share_groups(broker)


async def handle(broker: BrokerView, ctx, request):
    groups = []
    service = service_of(broker) if broker.feature_level(SHARE_VERSION) >= 1 else None
    ready = ErrorCode.UNSUPPORTED_VERSION if service is None else service.ready()
    for group in request.groups:
        group_id = group.group_id
        entry = {"group_id": group_id, "topics": [], "error_code": 0, "error_message": None}
        groups.append(entry)
        if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            entry["error_code"] = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
            continue
        if ready is not None:
            entry["error_code"] = int(ready)
            continue
        persisted = group_state_keys(service, group_id)
        keys = set(persisted) | {k for k in service.partitions if k[0] == group_id}
        if group.topics is None:
            if not keys and group_id not in service.coordinator.groups:
                entry["error_code"] = int(ErrorCode.GROUP_ID_NOT_FOUND)
                entry["error_message"] = f"Group {group_id} not found."
                continue
            by_name: dict[str, list[int]] = {}
            for _, topic_id, partition in sorted(keys, key=lambda k: (str(k[1]), k[2])):
                meta = broker.metadata.topic_by_id(topic_id)
                if meta is not None:
                    by_name.setdefault(meta.name, []).append(partition)
            wanted = sorted(by_name.items())
        else:
            wanted = [(t.topic_name, list(t.partitions)) for t in group.topics]
        readable = broker.authorizer.filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                       {name for name, _ in wanted})
        for name, partitions in wanted:
            meta = broker.metadata.topic(name)
            topic = {"topic_name": name, "topic_id": meta.topic_id if meta is not None else None, "partitions": []}
            entry["topics"].append(topic)
            for partition in partitions:
                if name not in readable:
                    topic["partitions"].append(_partition(partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                    continue
                if meta is None or not 0 <= partition < meta.partitions:
                    topic["partitions"].append(_partition(partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                summary = share_partition_summary(service, (group_id, meta.topic_id, partition), persisted)
                if summary is None:
                    topic["partitions"].append(_partition(partition))
                    continue
                start, epoch, complete = summary
                _, high_watermark, _ = await service.log_offsets(name, partition)
                lag = max(0, high_watermark - start - complete)
                topic["partitions"].append(_partition(partition, start=start, epoch=epoch, lag=lag))
            if topic["topic_id"] is None:
                import uuid

                topic["topic_id"] = uuid.UUID(int=0)
    return {"throttle_time_ms": 0, "groups": groups}
