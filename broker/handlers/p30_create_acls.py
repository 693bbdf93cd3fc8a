"""CreateAcls (30): add ACL bindings; each creation is answered on its own.

As Kafka 4.3 answers: a binding with an UNKNOWN element (or a code Kafka does not define) makes
the request unparseable, and the connection is closed (CreateAclsRequest.validate); one with an ANY
or MATCH element cannot be built (ResourcePattern and AccessControlEntry refuse them) and fails the
whole request: every creation UNKNOWN_SERVER_ERROR without a message, nothing stored. Then ALTER on
the cluster is needed; without an authorizer every creation is SECURITY_DISABLED. A binding with
an empty resource name, a principal without a type or a cluster other than kafka-cluster is
INVALID_REQUEST with Kafka's message; the valid ones are stored.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import (
    CLUSTER_NAME,
    AclBinding,
    AclOperation,
    AclPermissionType,
    InvalidAcl,
    PatternType,
    ResourceType,
    from_code,
    sent_unknown,
)
from .p29_describe_acls import NO_AUTHORIZER
from .closing import CloseConnection

API = APIS_BY_NAME["CreateAcls"]


def _binding(creation) -> AclBinding:
    return AclBinding(from_code(ResourceType, creation.resource_type), creation.resource_name,
                      from_code(PatternType, creation.resource_pattern_type), creation.principal, creation.host,
                      from_code(AclOperation, creation.operation), from_code(AclPermissionType, creation.permission_type))


def _unbuildable(binding: AclBinding) -> bool:
    return binding.resource_type == ResourceType.ANY or binding.pattern_type in (PatternType.ANY, PatternType.MATCH) \
        or binding.operation == AclOperation.ANY or binding.permission_type == AclPermissionType.ANY


async def handle(broker: BrokerView, ctx, request):
    bindings = [_binding(creation) for creation in request.creations]
    if any(sent_unknown(c.resource_type, c.resource_pattern_type, c.operation, c.permission_type)
           for c in request.creations):

        raise CloseConnection
    authorizer = broker.authorizer
    if not authorizer.enabled:
        error, message = ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER
    elif not authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        error, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message
    elif any(_unbuildable(b) for b in bindings):
        error, message = ErrorCode.UNKNOWN_SERVER_ERROR, None
    else:
        error = None
    if error is not None:
        return {"throttle_time_ms": 0,
                "results": [{"error_code": int(error), "error_message": message} for _ in request.creations]}
    results, valid = [], []
    for binding in bindings:
        try:
            binding.validate()
        except InvalidAcl as invalid:
            results.append({"error_code": int(ErrorCode.INVALID_REQUEST), "error_message": str(invalid)})
            continue
        valid.append(binding)
        results.append({"error_code": 0, "error_message": ""})
    if valid:
        authorizer.create(valid)
    return {"throttle_time_ms": 0, "results": results}
