"""Metadata (3): brokers, topics and partition leaders; auto-creates topics as Kafka does."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.primitives import ZERO_UUID

from ..metadata_store import validate_topic_name

API = APIS_BY_NAME["Metadata"]

# Authorized-operations fields hold this when the client did not ask for them.
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def partition_entries(broker, meta) -> list[dict]:
    entries = []
    for partition in range(meta.partitions):
        state = broker.metadata.partition_state(meta.name, partition)
        entries.append({
            "error_code": 0,
            "partition_index": partition,
            "leader_id": state.leader,
            "leader_epoch": state.leader_epoch,
            "replica_nodes": state.replicas,
            "isr_nodes": state.isr,
            "offline_replicas": [],
        })
    return entries


def topic_entry(broker, meta) -> dict:
    return {
        "error_code": 0,
        "name": meta.name,
        "topic_id": meta.topic_id,
        "is_internal": meta.internal,
        "partitions": partition_entries(broker, meta),
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def error_entry(name, error: ErrorCode, topic_id=ZERO_UUID) -> dict:
    return {"error_code": int(error), "name": name, "topic_id": topic_id, "is_internal": False,
            "partitions": [], "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}


async def handle(broker, ctx, request):
    version = ctx.api_version
    all_topics = request.topics is None or (version == 0 and not request.topics)
    allow_auto_create = request.allow_auto_topic_creation if version >= 4 else True
    topics = []
    if all_topics:
        topics = [topic_entry(broker, meta) for meta in broker.metadata.topics.values()]
    else:
        for requested in request.topics:
            name = requested.name
            topic_id = getattr(requested, "topic_id", ZERO_UUID)
            if name is None:
                meta = broker.metadata.topic_by_id(topic_id)
                topics.append(topic_entry(broker, meta) if meta else
                              error_entry(None, ErrorCode.UNKNOWN_TOPIC_ID, topic_id))
                continue
            meta = broker.metadata.topic(name)
            if meta is None:
                invalid = validate_topic_name(name)
                if invalid:
                    topics.append(error_entry(name, ErrorCode.INVALID_TOPIC_EXCEPTION))
                    continue
                if not (allow_auto_create and broker.config["auto.create.topics.enable"]):
                    topics.append(error_entry(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                meta = broker.auto_create_topic(name)
            topics.append(topic_entry(broker, meta))
    host, port = broker.advertised_endpoint(ctx.listener)
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": broker.node_id, "host": host, "port": port,
                     "rack": broker.config["broker.rack"]}],
        "cluster_id": broker.metadata.cluster_id,
        "controller_id": broker.node_id,
        "topics": topics,
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }
