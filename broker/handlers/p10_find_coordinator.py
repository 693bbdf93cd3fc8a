"""FindCoordinator (10): which broker coordinates a group or a transactional id (this one, on a single node).

v0-3 ask for one key, v4 for several (`coordinator_keys`, one `coordinators` entry each). Key type
0 is a group, 1 a transactional id (the transaction coordinator lives here too); any other type is
INVALID_REQUEST. Kafka puts the error's message in `error_message`: "NONE" on success at v1-3, an
empty string for a found coordinator at v4.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["FindCoordinator"]

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


def _error_message(error: ErrorCode) -> str:
    # Kafka's Errors.message(): the exception's message, or the name ("NONE") when there is none.
    return error.message or error.name


def find_coordinator(broker, ctx, key_type: int, key: str) -> tuple[ErrorCode, int, str, int]:
    """(error, node id, host, port) of the coordinator for a key of this type (in a cluster, the
    leader of the key's partition of __consumer_offsets or __transaction_state)."""
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


async def handle(broker, ctx, request):
    if ctx.api_version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            error, node_id, host, port = find_coordinator(broker, ctx, request.key_type, key)
            coordinators.append({"key": key, "node_id": node_id, "host": host, "port": port,
                                 "error_code": int(error),
                                 "error_message": _error_message(error) if error != ErrorCode.NONE else ""})
        return {"throttle_time_ms": 0, "coordinators": coordinators}
    error, node_id, host, port = find_coordinator(broker, ctx, request.key_type, request.key)
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": _error_message(error),
            "node_id": node_id, "host": host, "port": port}
