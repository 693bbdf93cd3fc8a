"""DescribeCluster (60): the Admin client's view of brokers and the controller."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

API = APIS_BY_NAME["DescribeCluster"]

BROKERS_ENDPOINT = 1


async def handle(broker, ctx, request):
    endpoint_type = getattr(request, "endpoint_type", BROKERS_ENDPOINT)
    response = {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                "endpoint_type": endpoint_type, "cluster_id": broker.metadata.cluster_id,
                "controller_id": broker.node_id, "brokers": [],
                "cluster_authorized_operations": -2147483648}
    if endpoint_type != BROKERS_ENDPOINT:
        response.update(error_code=int(ErrorCode.UNSUPPORTED_ENDPOINT_TYPE),
                        error_message="The request was sent to an endpoint of type BROKER, "
                                      "but we wanted an endpoint of type CONTROLLER")
        return response
    host, port = broker.advertised_endpoint(ctx.listener)
    response["brokers"] = [{"broker_id": broker.node_id, "host": host, "port": port,
                            "rack": broker.config["broker.rack"]}]
    return response
