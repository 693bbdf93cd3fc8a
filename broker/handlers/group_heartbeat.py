"""What the heartbeats of the KIP-848 group kinds check before their coordinator sees them, and
what they wait for after it answered: ConsumerGroupHeartbeat (68), ShareGroupHeartbeat (76) and
StreamsGroupHeartbeat (88) share both (Kafka's KafkaApis handles them alike)."""

from __future__ import annotations

from collections.abc import Iterable

from coordinator.offsets_store import OFFSETS_TOPIC
from kafka_wire.errors import ErrorCode

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType


def refused(broker: BrokerView, ctx, *, feature: str, group_id: str, topics: Iterable[str] | None) -> ErrorCode | None:
    """In Kafka's order: the protocol is on (its feature finalized at 1 or more, else
    UNSUPPORTED_VERSION), READ on the group, DESCRIBE on every topic the request names (one
    missing refuses the request, TOPIC_AUTHORIZATION_FAILED). None when the request may go on."""
    if broker.feature_level(feature) < 1:
        return ErrorCode.UNSUPPORTED_VERSION
    if not broker.authorizer.authorize(ctx, AclOperation.READ, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    names = list(dict.fromkeys(topics or ()))
    if names:
        readable = set(broker.authorizer.filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names))
        if any(name not in readable for name in names):
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return None


async def durable(broker: BrokerView, groups, group_id: str) -> bool:
    """The group's records count once its __consumer_offsets partition has them as safely as an
    acknowledged produce (Broker.await_durable): in a cluster its in-sync replicas (Kafka's
    coordinator answers once its write is committed), and with log.flush.on.ack this broker's
    disk; whether they are within offsets.commit.timeout.ms."""
    partition = groups.partition_for(group_id)
    timeout_ms = int(broker.config["offsets.commit.timeout.ms"])
    error = (await broker.await_durable([(OFFSETS_TOPIC, partition)], timeout_ms))[(OFFSETS_TOPIC, partition)]
    return error == ErrorCode.NONE
