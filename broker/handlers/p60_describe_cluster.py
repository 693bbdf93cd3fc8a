"""DescribeCluster (60): the Admin client's view of brokers and the controller.

As Kafka's AuthHelper.computeDescribeClusterResponse on a broker: v1 may ask for another kind of
endpoint; an unknown kind is UNSUPPORTED_ENDPOINT_TYPE and the controllers' kind (2) is
MISMATCHED_ENDPOINT_TYPE (both INVALID_REQUEST at v0, which has no endpoint type). v2 (KIP-1073)
may ask for fenced brokers too: a KRaft controller fences a registered broker that stops
heartbeating, but here, as in Kafka's ZooKeeper mode, a broker is registered and alive or gone, so
no broker is fenced and the answer is the same.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import cluster_authorized_operations

API = APIS_BY_NAME["DescribeCluster"]

BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT = 1, 2
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def _error(version: int, error: ErrorCode, message: str) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(ErrorCode.INVALID_REQUEST if version == 0 else error),
            "error_message": message, "endpoint_type": BROKERS_ENDPOINT, "cluster_id": "",
            "controller_id": -1, "brokers": [], "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}


async def handle(broker: BrokerView, ctx, request):
    endpoint_type = getattr(request, "endpoint_type", BROKERS_ENDPOINT)
    if endpoint_type not in (BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT):
        return _error(ctx.api_version, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                      f"Unsupported endpoint type {endpoint_type}")
    if endpoint_type != BROKERS_ENDPOINT:
        return _error(ctx.api_version, ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                      "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of "
                      "type CONTROLLER")
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "endpoint_type": BROKERS_ENDPOINT, "cluster_id": broker.metadata.cluster_id,
            "controller_id": broker.controller_id(),
            "brokers": [{"broker_id": node_id, "host": host, "port": port, "rack": rack, "is_fenced": False}
                        for node_id, host, port, rack in broker.live_brokers(ctx.listener)],
            "cluster_authorized_operations": cluster_authorized_operations(broker.authorizer, ctx)
            if request.include_cluster_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED}
