"""Metadata (3): brokers, topics and partition leaders; auto-creates topics as Kafka does.

As Kafka's KafkaApis.handleTopicMetadataRequest (KRaft): a topic asked for that does not exist is
created when auto.create.topics.enable and the request's allow_auto_topic_creation (v4+) both
allow it, and that first answer says UNKNOWN_TOPIC_OR_PARTITION (Kafka forwards the creation to
its controller and answers before it lands; clients retry). Invalid names are
INVALID_TOPIC_EXCEPTION. v12 may name topics by id: then names are ignored and an unknown id is
UNKNOWN_TOPIC_ID. Internal topics are left to their coordinators to create.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.primitives import ZERO_UUID
from log.errors import KafkaStorageError

from ..handler_view import BrokerView
from ..metadata import INTERNAL_TOPICS, validate_topic_name
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType, cluster_authorized_operations

API = APIS_BY_NAME["Metadata"]

# Authorized-operations fields hold this when the client did not ask for them.
AUTHORIZED_OPERATIONS_OMITTED = -2147483648
# Without an authorizer Kafka grants every operation a resource supports (AclEntry.supportedOperations):
# a topic READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS. With one,
# the authorizer says (broker/security/authorizer.py).
TOPIC_OPERATIONS = sum(1 << code for code in (3, 4, 5, 6, 7, 8, 10, 11))


def partition_entries(broker: BrokerView, meta) -> list[dict]:
    live = set(broker.live_broker_ids())
    entries = []
    state_of, name = broker.metadata.partition_state, meta.name
    previous, previous_entry = None, None
    for partition in range(meta.partitions):
        state = state_of(name, partition)
        if state == previous:
            # Partitions placed alike (on a single node: all of them) share one entry's values:
            # a topic of 10,000 partitions is answered several times faster.
            entry = previous_entry.copy()
            entry["partition_index"] = partition
            entries.append(entry)
            continue
        previous_entry = {
            # A cluster's partition whose replicas in sync are all down has no leader for now.
            "error_code": int(ErrorCode.LEADER_NOT_AVAILABLE) if state.leader < 0 else 0,
            "partition_index": partition,
            "leader_id": state.leader,
            "leader_epoch": state.leader_epoch,
            "replica_nodes": state.replicas,
            "isr_nodes": state.isr,
            "offline_replicas": [r for r in state.replicas if r not in live],
        }
        previous = state
        entries.append(previous_entry)
    return entries


def topic_entry(broker: BrokerView, meta, include_operations: bool = False) -> dict:
    return {
        "error_code": 0,
        "name": meta.name,
        "topic_id": meta.topic_id,
        "is_internal": meta.internal,
        "partitions": partition_entries(broker, meta),
        "topic_authorized_operations": TOPIC_OPERATIONS if include_operations else AUTHORIZED_OPERATIONS_OMITTED,
    }


def error_entry(name, error: ErrorCode, topic_id=ZERO_UUID) -> dict:
    return {"error_code": int(error), "name": name, "topic_id": topic_id,
            "is_internal": name in INTERNAL_TOPICS, "partitions": [],
            "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}


def _invalid_request(request) -> dict:
    """Kafka's MetadataRequest.getErrorResponse: every topic asked for, with the error, and nothing else."""
    return {"throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": -1,
            "topics": [error_entry(t.name if t.name is not None else "", ErrorCode.INVALID_REQUEST)
                       for t in request.topics or []],
            "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}


def _missing_topic(broker: BrokerView, name: str, allow_auto_create: bool, ctx=None) -> dict:
    if validate_topic_name(name):
        return error_entry(name, ErrorCode.INVALID_TOPIC_EXCEPTION)
    authorizer = broker.authorizer
    if allow_auto_create and ctx is not None and not (
            authorizer.authorize(ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
            or authorizer.authorize(ctx, AclOperation.CREATE, ResourceType.TOPIC, name)):
        return error_entry(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if allow_auto_create and name not in INTERNAL_TOPICS:
        try:
            broker.auto_create_topic(name)
        except (OSError, KafkaStorageError):
            pass  # logged by create_topic; the client asks again, as while a creation is under way
    return error_entry(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


async def handle(broker: BrokerView, ctx, request):
    version = ctx.api_version
    requested = request.topics
    if 10 <= version <= 11 and any(t.name is None or t.topic_id not in (None, ZERO_UUID) for t in requested or []):
        return _invalid_request(request)  # topic ids are only for v12+
    all_topics = requested is None or (version == 0 and not requested)
    allow_auto_create = (request.allow_auto_topic_creation if version >= 4 else True) \
        and broker.config["auto.create.topics.enable"]
    include_operations = version >= 8 and request.include_topic_authorized_operations
    topics = []
    describable = broker.authorizer.filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                      broker.metadata.topics)
    if all_topics:
        topics = [topic_entry(broker, meta, include_operations) for meta in broker.metadata.topics.values()
                  if meta.name in describable]
    else:
        topic_ids = [t.topic_id for t in requested if t.topic_id not in (None, ZERO_UUID)]
        if topic_ids:
            # Kafka: when ids are given, the request is about those ids only.
            for topic_id in dict.fromkeys(topic_ids):
                meta = broker.metadata.topic_by_id(topic_id)
                if meta is not None and meta.name not in describable:
                    topics.append(error_entry(None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, topic_id))
                    continue
                topics.append(topic_entry(broker, meta, include_operations) if meta is not None
                              else error_entry(None, ErrorCode.UNKNOWN_TOPIC_ID, topic_id))
        else:
            for name in dict.fromkeys(t.name for t in requested):
                meta = broker.metadata.topic(name)
                if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                    topics.append(error_entry(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                    continue
                topics.append(topic_entry(broker, meta, include_operations) if meta is not None
                              else _missing_topic(broker, name, allow_auto_create, ctx))
    if include_operations and broker.authorizer.enabled:
        for entry in topics:
            if entry["error_code"] == 0:
                entry["topic_authorized_operations"] = broker.authorizer.authorized_operations(
                    ctx, ResourceType.TOPIC, entry["name"])
    include_cluster_operations = 8 <= version <= 10 and request.include_cluster_authorized_operations
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": node_id, "host": host, "port": port, "rack": rack}
                    for node_id, host, port, rack in broker.live_brokers(ctx.listener)],
        "cluster_id": broker.metadata.cluster_id,
        "controller_id": broker.controller_id(),
        "topics": topics,
        "cluster_authorized_operations": cluster_authorized_operations(broker.authorizer, ctx)
        if include_cluster_operations else AUTHORIZED_OPERATIONS_OMITTED,
        "error_code": 0,  # v13 (KIP-1102): Kafka's broker never asks clients to rebootstrap
    }
