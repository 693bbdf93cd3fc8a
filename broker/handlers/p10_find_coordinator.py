"""FindCoordinator (10): which broker coordinates a group or a transactional id (this one, on a single node).

v0-3 ask for one key, v4-6 for several (`coordinator_keys`, one `coordinators` entry each). Key
type 0 is a group, 1 a transactional id (the transaction coordinator lives here too). Key type 2
(v6, KIP-932) names a share group's state: kafka-wire serves no share groups, so it is
INVALID_REQUEST, Kafka's answer when it has no share coordinator (and its answer below v6); as
Kafka, it first needs CLUSTER_ACTION on the cluster. Any other key type fails the whole request
with INVALID_REQUEST.

`error_message`: at v1-3 Kafka puts the error's message there, "NONE" on success. At v4+ a key's
own answer has an empty message; a whole-request failure (an unknown key type, a share key without
CLUSTER_ACTION) puts the error's message in every key's entry.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ..share_coordinator import share_coordinator_of

API = APIS_BY_NAME["FindCoordinator"]

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2
SHARE_VERSION = 6


def _error_message(error: ErrorCode) -> str:
    # Kafka's Errors.message(): the exception's message, or the name ("NONE") when there is none.
    return error.message or error.name


def find_coordinator(broker: BrokerView, ctx, key_type: int, key: str) -> tuple[ErrorCode, int, str, int]:
    """(error, node id, host, port) of the coordinator for a key of this type (in a cluster, the
    leader of the key's partition of __consumer_offsets or __transaction_state)."""
    if key_type == SHARE_KEY_TYPE and ctx.api_version >= SHARE_VERSION:
        # The share coordinator of a share-partition (broker/share_coordinator.py).
        return share_coordinator_of(broker).find(key, ctx.listener)
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return ErrorCode.INVALID_REQUEST, -1, "", -1
    if key_type == GROUP_KEY_TYPE and not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE,
                                                                       ResourceType.GROUP, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, -1, "", -1
    if key_type == TRANSACTION_KEY_TYPE and not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE,
                                                                             ResourceType.TRANSACTIONAL_ID, key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, "", -1
    if key_type == GROUP_KEY_TYPE and getattr(broker, "groups", None) is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    return broker.coordinator_for(key_type, key, ctx.listener)


def _request_error(broker: BrokerView, ctx, key_type: int) -> ErrorCode | None:
    """An error of the whole request (Kafka's getErrorResponse), or None."""
    if key_type == SHARE_KEY_TYPE and ctx.api_version >= SHARE_VERSION and not broker.authorizer.authorize(
            ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE, SHARE_KEY_TYPE):
        return ErrorCode.INVALID_REQUEST
    return None


async def handle(broker: BrokerView, ctx, request):
    if ctx.api_version >= 4:
        failed = _request_error(broker, ctx, request.key_type)
        coordinators = []
        for key in request.coordinator_keys:
            if failed is not None:
                coordinators.append({"key": key, "node_id": -1, "host": "", "port": -1,
                                     "error_code": int(failed), "error_message": _error_message(failed)})
                continue
            error, node_id, host, port = find_coordinator(broker, ctx, request.key_type, key)
            coordinators.append({"key": key, "node_id": node_id, "host": host, "port": port,
                                 "error_code": int(error), "error_message": ""})
        return {"throttle_time_ms": 0, "coordinators": coordinators}
    error, node_id, host, port = find_coordinator(broker, ctx, request.key_type, request.key)
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": _error_message(error),
            "node_id": node_id, "host": host, "port": port}
