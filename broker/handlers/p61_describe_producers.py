"""DescribeProducers (61): the producers a partition's leader knows, with their open transaction (KIP-664).

As in Kafka's KafkaApis, describing a partition's producers needs READ on its topic; a partition
of a topic the principal may not read answers TOPIC_AUTHORIZATION_FAILED (checked before whether
the partition exists, so the answer does not tell which topics exist).
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["DescribeProducers"]


def partition_error(partition: int, error: ErrorCode) -> dict:
    return {"partition_index": partition, "error_code": int(error), "error_message": error.message,
            "active_producers": []}


def describe_partition(broker: BrokerView, topic: str, partition: int) -> dict:
    plog = broker.partition_log(topic, partition)
    if plog is None:
        # Kafka explains a topic it does not have, not a partition past an existing topic's.
        unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return {"partition_index": partition, "error_code": int(unknown),
                "error_message": unknown.message if broker.metadata.topic(topic) is None else None,
                "active_producers": []}
    producers = []
    for entry in plog.producer_state.entries.values():
        txn_start = entry.current_txn_first_offset
        producers.append({
            "producer_id": entry.producer_id,
            "producer_epoch": entry.producer_epoch,
            "last_sequence": entry.last_seq,
            "last_timestamp": entry.last_timestamp,
            "coordinator_epoch": entry.coordinator_epoch,
            "current_txn_start_offset": -1 if txn_start is None else txn_start,
        })
    return {"partition_index": partition, "error_code": 0, "error_message": None, "active_producers": producers}


async def handle(broker: BrokerView, ctx, request):
    readable = broker.authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC,
                                                   {t.name for t in request.topics})
    topics = []
    for t in request.topics:
        if t.name in readable:
            partitions = [describe_partition(broker, t.name, p) for p in t.partition_indexes]
        else:
            partitions = [partition_error(p, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in t.partition_indexes]
        topics.append({"name": t.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
