"""DescribeUserScramCredentials (50): each user's SCRAM mechanisms and iteration counts (KIP-554).

Needs DESCRIBE on the cluster. No users (null or empty) describes everyone; a user named twice is
DUPLICATE_RESOURCE, one without credentials RESOURCE_NOT_FOUND, with Kafka's messages.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.sasl import SCRAM_MECHANISMS

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["DescribeUserScramCredentials"]


async def handle(broker: BrokerView, ctx, request):
    if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        # Kafka 4.3's getErrorResponse: no message, and one nameless result per user asked about (for users
        # null Kafka's own refusal throws and never answers; we answer with no results).
        refused = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return {"throttle_time_ms": 0, "error_code": refused, "error_message": None,
                "results": [{"user": "", "error_code": refused, "error_message": None, "credential_infos": []}
                            for _ in request.users or ()]}
    known = broker.credentials.users()
    requested: dict[str, bool] = {}  # user -> named more than once
    if not request.users:
        requested = {user: False for user in known}
    else:
        for item in request.users:
            requested[item.name] = item.name in requested
    results = []
    for user, duplicate in requested.items():
        result = {"user": user, "error_code": 0, "error_message": "", "credential_infos": []}
        if duplicate:
            result.update(error_code=int(ErrorCode.DUPLICATE_RESOURCE), error_message=(
                f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}"))
        elif user not in known:
            result.update(error_code=int(ErrorCode.RESOURCE_NOT_FOUND),
                          error_message=f"Attempt to describe a user credential that does not exist: {user}")
        else:
            result["credential_infos"] = [
                {"mechanism": SCRAM_MECHANISMS[name].wire_type, "iterations": iterations}
                for name, iterations in known[user].items()]
        results.append(result)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": "", "results": results}
