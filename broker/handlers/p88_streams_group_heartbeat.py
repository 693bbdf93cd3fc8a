"""StreamsGroupHeartbeat (88): members of KIP-1071 streams groups join with their topology,
heartbeat and leave; the group coordinator assigns tasks (coordinator/streams_group_coordinator.py).

Checks in Kafka 4.3's order (KafkaApis.handleStreamsGroupHeartbeat): the protocol is on (finalized
streams.version >= 1, else UNSUPPORTED_VERSION), READ on the group, DESCRIBE on every topic the
topology names. Internal topics the configured topology lacks (repartition and changelog topics) are
created here, with the partition counts, replication factor and configs the coordinator derived,
as Kafka's broker creates them: the member meanwhile hears MISSING_INTERNAL_TOPICS; without CREATE
on them the status says so instead.
"""

from __future__ import annotations

import logging

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..config import ConfigError, parse_topic_configs
from ..features import STREAMS_VERSION
from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from .group_heartbeat import durable, refused
from .p11_join_group import client_host

API = APIS_BY_NAME["StreamsGroupHeartbeat"]

CLUSTER_NAME = "kafka-cluster"
MISSING_INTERNAL_TOPICS = 3

logger = logging.getLogger("kafka_wire.streams")


def _error(error: ErrorCode, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": message, "member_id": "",
            "member_epoch": 0, "heartbeat_interval_ms": 0, "acceptable_recovery_lag": 0,
            "task_offset_interval_ms": 0, "status": [], "endpoint_information_epoch": 0}


def topology_topics(topology) -> list[str]:
    names: list[str] = []
    for s in topology.subtopologies or ():
        names.extend(s.source_topics or ())
        names.extend(s.repartition_sink_topics or ())
        names.extend(t.name for t in s.repartition_source_topics or ())
        names.extend(t.name for t in s.state_changelog_topics or ())
    return list(dict.fromkeys(names))


async def create_internal_topics(broker: BrokerView, ctx, to_create: dict) -> str:
    """Create what the coordinator found missing; what to add to the MISSING_INTERNAL_TOPICS status
    detail ("" when all were created), in Kafka's words."""
    if not to_create:
        return ""
    if broker.authorizer.authorize(ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME):
        allowed = set(to_create)
    else:
        allowed = set(broker.authorizer.filter_authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, to_create))
    refused = sorted(set(to_create) - allowed)
    failed: list[str] = []
    live = max(1, len(broker.metadata.live_brokers()))
    for name in sorted(allowed):
        if broker.metadata.topic(name) is not None:
            continue
        partitions, replication, configs = to_create[name]
        if replication <= 0:
            replication = int(broker.config["default.replication.factor"])
        try:
            parsed = parse_topic_configs(dict(configs), broker.config.topic_defaults())
            broker.create_topic(name, partitions, min(replication, live), parsed)
            failure = await broker.logs_everywhere(name)
            if failure is not None:
                logger.warning("internal topic %s: %s", name, failure)
        except (ConfigError, OSError, ValueError) as exc:
            logger.warning("could not create internal topic %s: %s", name, exc)
            failed.append(f"{name} ({exc})")
    detail = ""
    if refused:
        detail += f"; Unauthorized to CREATE on topics {', '.join(refused)}."
    if failed:
        detail += f"; Creation failed: {', '.join(failed)}."
    return detail


async def handle(broker: BrokerView, ctx, request):
    groups = getattr(broker, "groups", None)
    error = refused(broker, ctx, feature=STREAMS_VERSION, group_id=request.group_id,
                    topics=None if request.topology is None else topology_topics(request.topology))
    if error is not None:
        return _error(error)
    if groups is None:
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    response, to_create = groups.streams_group_heartbeat(request, client_id=ctx.client_id or "",
                                                         client_host=client_host(ctx))
    if response["error_code"] == 0 and to_create:
        detail = await create_internal_topics(broker, ctx, to_create)
        if detail:
            for status in response["status"]:
                if status["status_code"] == MISSING_INTERNAL_TOPICS:
                    status["status_detail"] += detail
    if response["error_code"] == 0 and not await durable(broker, groups, request.group_id):
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return response
