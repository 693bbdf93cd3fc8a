"""ListConfigResources (74): the config resources of the cluster, by type (KIP-1142; v0 is KIP-714's
ListClientMetricsResources).

As Kafka's KafkaApis.handleListConfigResources: DESCRIBE_CONFIGS on the cluster is needed (else
CLUSTER_AUTHORIZATION_FAILED and no resources). v0 lists client-metrics resources only; v1 the
types asked for, or, when none are, every type Kafka lists: groups, client metrics, broker loggers,
brokers, topics (in that order). A type outside those is UNSUPPORTED_VERSION for the whole request.
The answer is this cluster's: every live broker (as a broker and as a broker logger) and every
topic, internal ones included, and every group with configs of its own (broker/group_configs.py).
kafka-wire keeps no client-metrics subscriptions (KIP-714), and refuses to create them, so it has
none of those resources to list.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["ListConfigResources"]

# Kafka's ConfigResource.Type ids.
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
LISTED_BY_VERSION = {0: (CLIENT_METRICS,), 1: (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)}


def _resources(broker: BrokerView, ctx, resource_type: int) -> list[str]:
    if resource_type in (BROKER, BROKER_LOGGER):
        return [str(node_id) for node_id, _, _, _ in broker.live_brokers(ctx.listener)]
    if resource_type == TOPIC:
        return sorted(broker.metadata.topics)
    if resource_type == GROUP:
        return sorted(broker.metadata.group_configs)
    return []  # CLIENT_METRICS: none exist here


async def handle(broker: BrokerView, ctx, request):
    if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                "config_resources": []}
    supported = LISTED_BY_VERSION[ctx.api_version]
    wanted = set(request.resource_types or supported)
    if not wanted <= set(supported):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.UNSUPPORTED_VERSION), "config_resources": []}
    return {"throttle_time_ms": 0, "error_code": 0, "config_resources": [
        {"resource_name": name, "resource_type": resource_type}
        for resource_type in supported if resource_type in wanted
        for name in _resources(broker, ctx, resource_type)]}
