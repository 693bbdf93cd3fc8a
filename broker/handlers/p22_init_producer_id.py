"""InitProducerId (22): a fresh producer id for an idempotent producer; transactional producers
(a non-null transactional_id) are served by the transaction coordinator."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["InitProducerId"]


async def handle(broker: BrokerView, ctx, request):
    authorizer = broker.authorizer
    if request.transactional_id is not None and not authorizer.authorize(
            ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
                "producer_id": -1, "producer_epoch": -1}
    if request.transactional_id is None and not (
            authorizer.authorize(ctx, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME)
            or authorizer.authorize_by_resource_type(ctx, AclOperation.WRITE, ResourceType.TOPIC)):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                "producer_id": -1, "producer_epoch": -1}
    if (request.producer_id == -1) != (request.producer_epoch == -1):
        # Kafka's KafkaApis: a producer id without its epoch (or the reverse) is malformed, for
        # transactional and idempotent producers alike.
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.INVALID_REQUEST), "producer_id": -1,
                "producer_epoch": -1}
    if request.transactional_id is not None:
        coordinator = getattr(broker, "transactions", None)
        if coordinator is None:
            return {"throttle_time_ms": 0, "error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE),
                    "producer_id": -1, "producer_epoch": -1}
        return await coordinator.init_producer_id(request, ctx.api_version)
    # Kafka gives an idempotent producer a new id at epoch 0 every time, even when it asks to
    # bump the epoch of the id it had (KIP-360): the old id's state simply expires.
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": broker.producer_ids.next(),
            "producer_epoch": 0}
