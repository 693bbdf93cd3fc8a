"""OffsetCommit (8): a group member (or a consumer using assign()) commits offsets.

Partitions of topics that do not exist are answered UNKNOWN_TOPIC_OR_PARTITION, as Kafka does;
the rest go to the group coordinator, which writes them to __consumer_offsets before answering.
v2-4 carry a retention time (an explicit expire timestamp), v6+ the committed leader epoch; members
of KIP-848 consumer groups commit with v9 and their member epoch. v10 names topics by id: an id
this broker does not know is UNKNOWN_TOPIC_ID (after the group's authorization, before the topic's).
"""

from __future__ import annotations

from coordinator.offsets_store import OFFSETS_TOPIC, offset_commit_append_error
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..metadata import topic_names_of
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["OffsetCommit"]

TOPIC_IDS_VERSION = 10


def partition_exists(broker: BrokerView, topic: str, partition: int) -> bool:
    meta = broker.metadata.topic(topic)
    return meta is not None and 0 <= partition < meta.partitions


async def await_commit_durable(broker: BrokerView, group_id: str, errors: dict) -> None:
    """The commit counts once the group's __consumer_offsets partition has it as safely as an
    acknowledged produce: in a cluster its in-sync replicas (Kafka appends offsets with acks=all,
    waiting offsets.commit.timeout.ms), and with log.flush.on.ack this broker's disk."""
    committed = [tp for tp, error in errors.items() if error == ErrorCode.NONE]
    if not committed:
        return
    partition = broker.groups.partition_for(group_id)
    timeout_ms = int(broker.config["offsets.commit.timeout.ms"])
    error = (await broker.await_durable([(OFFSETS_TOPIC, partition)], timeout_ms))[(OFFSETS_TOPIC, partition)]
    if error != ErrorCode.NONE:
        for tp in committed:
            errors[tp] = offset_commit_append_error(error)


async def handle(broker: BrokerView, ctx, request):
    groups = getattr(broker, "groups", None)
    errors: dict[tuple[str, int], ErrorCode] = {}
    offsets = []
    names = (topic_names_of(broker.metadata, (t.topic_id for t in request.topics))
             if ctx.api_version >= TOPIC_IDS_VERSION else [t.name for t in request.topics])
    group_denied = not broker.authorizer.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id)
    readable = broker.authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC,
                                                   (name for name in names if name is not None))
    for topic, name in zip(request.topics, names):
        for p in topic.partitions:
            tp = (name, p.partition_index)
            if group_denied:
                errors[tp] = ErrorCode.GROUP_AUTHORIZATION_FAILED
            elif name is None:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_ID
            elif name not in readable:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not partition_exists(broker, *tp):
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                offsets.append((name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                                p.committed_metadata))
    if offsets:
        if groups is None:
            errors.update({(t, p): ErrorCode.COORDINATOR_NOT_AVAILABLE for t, p, *_ in offsets})
        else:
            errors.update(groups.commit_offsets(
                group_id=request.group_id,
                generation_id=request.generation_id_or_member_epoch,
                member_id=request.member_id,
                group_instance_id=request.group_instance_id,
                offsets=offsets,
                retention_time_ms=request.retention_time_ms if ctx.api_version <= 4 else -1,
                api_version=ctx.api_version,
            ))
            if broker.waits_for_replicas or broker.flush_on_ack:
                await await_commit_durable(broker, request.group_id, errors)
    return {
        "throttle_time_ms": 0,
        "topics": [
            {"name": topic.name, "topic_id": topic.topic_id,
             "partitions": [{"partition_index": p.partition_index,
                             "error_code": int(errors[(name, p.partition_index)])}
                            for p in topic.partitions]}
            for topic, name in zip(request.topics, names)
        ],
    }
