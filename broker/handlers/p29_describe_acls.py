"""DescribeAcls (29): the ACL bindings matching a filter, grouped by resource pattern.

A filter with an UNKNOWN element (or a code Kafka does not define) makes the request unparseable
and the connection is closed, as Kafka 4.3 does (DescribeAclsRequest.validate). Then DESCRIBE on the
cluster is needed; without an authorizer Kafka answers SECURITY_DISABLED.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclBindingFilter, AclOperation, ResourceType, sent_unknown
from .closing import CloseConnection

API = APIS_BY_NAME["DescribeAcls"]

# Kafka 4.3's words (AclApis): DescribeAcls and CreateAcls say "on the broker", DeleteAcls does not.
NO_AUTHORIZER = "No Authorizer is configured on the broker"


def _error(error: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": message, "resources": []}


async def handle(broker: BrokerView, ctx, request):
    flt = AclBindingFilter.from_request(request)
    if sent_unknown(request.resource_type_filter, request.pattern_type_filter, request.operation,
                    request.permission_type):

        raise CloseConnection
    authorizer = broker.authorizer
    if not authorizer.enabled:
        return _error(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    if not authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message)
    by_resource: dict[tuple, list] = {}
    for acl in authorizer.acls(flt):
        by_resource.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(acl)
    resources = []
    for (rtype, name, pattern), acls in sorted(by_resource.items()):
        resources.append({
            "resource_type": int(rtype), "resource_name": name, "pattern_type": int(pattern),
            "acls": [{"principal": a.principal, "host": a.host, "operation": int(a.operation),
                      "permission_type": int(a.permission_type)}
                     for a in sorted(acls, key=lambda a: (a.principal, a.host, a.operation, a.permission_type))],
        })
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": "", "resources": resources}
