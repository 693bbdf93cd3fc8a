"""DeleteAcls (31): remove the bindings each filter matches, and say which ones went.

A filter with an UNKNOWN element (or a code Kafka does not define) makes the request unparseable
and the connection is closed, as Kafka 4.3 does (DeleteAclsRequest.normalizeAndValidate). Then
ALTER on the cluster is needed; without an authorizer every filter is SECURITY_DISABLED.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import (
    CLUSTER_NAME,
    UNKNOWN_CODE,
    AclBindingFilter,
    AclOperation,
    ResourceType,
    sent_unknown,
)
from .closing import CloseConnection

API = APIS_BY_NAME["DeleteAcls"]


def _failed(error: ErrorCode, message: str) -> dict:
    return {"error_code": int(error), "error_message": message, "matching_acls": []}


def _unknown_filter(flt: AclBindingFilter) -> str | None:
    if UNKNOWN_CODE in (flt.resource_type, flt.pattern_type):
        return "Unknown patternFilter."
    if UNKNOWN_CODE in (flt.operation, flt.permission_type):
        return "Unknown entryFilter."
    return None


async def handle(broker: BrokerView, ctx, request):
    filters = [AclBindingFilter.from_request(item) for item in request.filters]
    if any(sent_unknown(item.resource_type_filter, item.pattern_type_filter, item.operation, item.permission_type)
           for item in request.filters):

        raise CloseConnection
    authorizer = broker.authorizer
    if not authorizer.enabled:
        return {"throttle_time_ms": 0, "filter_results": [
            _failed(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.") for _ in request.filters]}
    if not authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "filter_results": [
            _failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message)
            for _ in request.filters]}
    # Codes Kafka does not know (other than 0) read as UNKNOWN: such a filter is refused on its own
    # (AclControlManager.validateFilter), the others are applied.
    refused = [_unknown_filter(flt) for flt in filters]
    valid = [flt for flt, why in zip(filters, refused) if why is None]
    removed = iter(authorizer.delete(valid) if valid else [])
    results = []
    for flt, why in zip(filters, refused):
        if why is not None:
            results.append(_failed(ErrorCode.INVALID_REQUEST, why))
            continue
        results.append({"error_code": 0, "error_message": None, "matching_acls": [
            {"error_code": 0, "error_message": None, "resource_type": int(acl.resource_type),
             "resource_name": acl.resource_name, "pattern_type": int(acl.pattern_type),
             "principal": acl.principal, "host": acl.host, "operation": int(acl.operation),
             "permission_type": int(acl.permission_type)}
            for acl in next(removed)]})
    return {"throttle_time_ms": 0, "filter_results": results}
