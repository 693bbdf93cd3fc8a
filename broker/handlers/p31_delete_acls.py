"""DeleteAcls (31): remove the bindings each filter matches, and say which ones went.

Needs ALTER on the cluster; without an authorizer every filter is SECURITY_DISABLED. A filter
with an element Kafka does not know is INVALID_REQUEST.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..security.authorizer import CLUSTER_NAME, AclBindingFilter, AclOperation, ResourceType

API = APIS_BY_NAME["DeleteAcls"]


def _failed(error: ErrorCode, message: str) -> dict:
    return {"error_code": int(error), "error_message": message, "matching_acls": []}


async def handle(broker, ctx, request):
    authorizer = broker.authorizer
    if not authorizer.enabled:
        return {"throttle_time_ms": 0, "filter_results": [
            _failed(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.") for _ in request.filters]}
    if not authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "filter_results": [
            _failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message)
            for _ in request.filters]}
    filters = [AclBindingFilter.from_request(item) for item in request.filters]
    valid = [flt for flt in filters if not flt.unknown_elements()]
    removed = iter(authorizer.delete(valid) if valid else [])
    results = []
    for flt in filters:
        if flt.unknown_elements():
            results.append(_failed(ErrorCode.INVALID_REQUEST, "The filter contains UNKNOWN elements"))
            continue
        results.append({"error_code": 0, "error_message": None, "matching_acls": [
            {"error_code": 0, "error_message": None, "resource_type": int(acl.resource_type),
             "resource_name": acl.resource_name, "pattern_type": int(acl.pattern_type),
             "principal": acl.principal, "host": acl.host, "operation": int(acl.operation),
             "permission_type": int(acl.permission_type)}
            for acl in next(removed)]})
    return {"throttle_time_ms": 0, "filter_results": results}
