"""AlterUserScramCredentials (51): upsert and delete users' SCRAM credentials (KIP-554).

Needs ALTER on the cluster. The client sends the salt and the salted password; we keep only
StoredKey and ServerKey derived from it. Validation and messages are Kafka's (ScramControlManager):
a user altered twice in one request is DUPLICATE_RESOURCE, an unknown mechanism
UNSUPPORTED_SASL_MECHANISM, an empty name or an iteration count outside 4096..16384
UNACCEPTABLE_CREDENTIAL, deleting a credential that does not exist RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.sasl import SCRAM_BY_WIRE_TYPE, ScramCredential

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["AlterUserScramCredentials"]

TWICE = "A user credential cannot be altered twice in the same request"


def _validate(name: str, mechanism_type: int) -> tuple[ErrorCode, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism_type not in SCRAM_BY_WIRE_TYPE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


async def handle(broker: BrokerView, ctx, request):
    users = [item.name for item in (*request.deletions, *request.upsertions)]
    if not broker.authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "results": [
            {"user": user, "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
             "error_message": ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message} for user in dict.fromkeys(users)]}
    store = broker.credentials
    deletions, upsertions, errors = {}, {}, {}
    for item in request.deletions:
        if item.name in errors:
            continue
        if deletions.pop(item.name, None) is not None:
            errors[item.name] = (ErrorCode.DUPLICATE_RESOURCE, TWICE)
            continue
        error = _validate(item.name, item.mechanism)
        if error is None and store.scram_credential(SCRAM_BY_WIRE_TYPE[item.mechanism].name, item.name) is None:
            error = ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        if error:
            errors[item.name] = error
        else:
            deletions[item.name] = item
    for item in request.upsertions:
        if item.name in errors:
            continue
        if deletions.pop(item.name, None) is not None or upsertions.pop(item.name, None) is not None:
            errors[item.name] = (ErrorCode.DUPLICATE_RESOURCE, TWICE)
            continue
        error = _validate(item.name, item.mechanism)
        if error is None:
            mechanism = SCRAM_BY_WIRE_TYPE[item.mechanism]
            if item.iterations < mechanism.min_iterations:
                error = ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
            elif item.iterations > mechanism.max_iterations:
                error = ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
        if error:
            errors[item.name] = error
        else:
            upsertions[item.name] = item
    results = []
    for name, item in deletions.items():
        store.delete(name, SCRAM_BY_WIRE_TYPE[item.mechanism])
        results.append({"user": name, "error_code": 0, "error_message": None})
    for name, item in upsertions.items():
        mechanism = SCRAM_BY_WIRE_TYPE[item.mechanism]
        store.upsert(name, mechanism, ScramCredential.from_salted_password(
            mechanism, item.salt, item.salted_password, item.iterations))
        results.append({"user": name, "error_code": 0, "error_message": None})
    for name, (error, message) in errors.items():
        results.append({"user": name, "error_code": int(error), "error_message": message})
    return {"throttle_time_ms": 0, "results": results}
