"""DescribeShareGroupOffsets (90): each share-partition's start offset and (v1) lag, as
kafka-share-groups.sh --describe --offsets shows them (KIP-932).

A partition the group has no state for answers start offset -1 (and lag -1); topics null asks for
every share-partition the group has state for (GROUP_ID_NOT_FOUND when it is not a share group and
has none). The lag is the high watermark less the start offset less the records past the start
whose delivery is complete, as Kafka computes it.
"""

from __future__ import annotations

from coordinator.offsets_store import AppendFailed
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from ..share_groups import ShareRequestRefused, open_share_request, share_group_summaries

API = APIS_BY_NAME["DescribeShareGroupOffsets"]

def _partition(index: int, error: ErrorCode = ErrorCode.NONE, start: int = -1, epoch: int = -1, lag: int = -1):
    return {"partition_index": index, "start_offset": start, "leader_epoch": epoch, "lag": lag,
            "error_code": int(error), "error_message": None}


async def handle(broker: BrokerView, ctx, request):
    groups = []
    for group in request.groups:
        group_id = group.group_id
        entry = {"group_id": group_id, "topics": [], "error_code": 0, "error_message": None}
        groups.append(entry)
        try:
            service = open_share_request(broker, ctx, group_id, AclOperation.DESCRIBE)
        except ShareRequestRefused as e:
            entry["error_code"] = int(e.error)
            continue
        summaries = await share_group_summaries(
            service, group_id, None if group.topics is None else [t.topic_name for t in group.topics])
        keys = {k for k, summary in summaries.items() if not isinstance(summary, ErrorCode)}
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
                summary = summaries.get((group_id, meta.topic_id, partition))
                if summary is None:
                    topic["partitions"].append(_partition(partition))
                    continue
                if isinstance(summary, ErrorCode):  # its share coordinator could not answer
                    topic["partitions"].append(_partition(partition, summary))
                    continue
                start, epoch, complete = summary
                try:
                    _, high_watermark, _ = await service.log_offsets(name, partition)
                except AppendFailed as e:  # a cluster's leader of the partition could not be asked
                    topic["partitions"].append(_partition(partition, e.error))
                    continue
                lag = max(0, high_watermark - start - complete)
                topic["partitions"].append(_partition(partition, start=start, epoch=epoch, lag=lag))
            if topic["topic_id"] is None:
                import uuid

                topic["topic_id"] = uuid.UUID(int=0)
    return {"throttle_time_ms": 0, "groups": groups}
