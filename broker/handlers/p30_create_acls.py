"""CreateAcls (30): add ACL bindings; each creation is answered on its own.

Needs ALTER on the cluster; without an authorizer every creation is SECURITY_DISABLED. A binding
with an unknown or non-concrete element (ANY, MATCH), an empty resource name, or a principal
without a type is INVALID_REQUEST with Kafka's message; the valid ones are stored.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..security.authorizer import (
    CLUSTER_NAME,
    AclBinding,
    AclOperation,
    AclPermissionType,
    InvalidAcl,
    PatternType,
    ResourceType,
    from_code,
)

API = APIS_BY_NAME["CreateAcls"]


def _binding(creation) -> AclBinding:
    return AclBinding(from_code(ResourceType, creation.resource_type), creation.resource_name,
                      from_code(PatternType, creation.resource_pattern_type), creation.principal, creation.host,
                      from_code(AclOperation, creation.operation), from_code(AclPermissionType, creation.permission_type))


async def handle(broker, ctx, request):
    authorizer = broker.authorizer
    if not authorizer.enabled:
        error, message = ErrorCode.SECURITY_DISABLED, "No Authorizer is configured."
    elif not authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        error, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message
    else:
        error = None
    if error is not None:
        return {"throttle_time_ms": 0,
                "results": [{"error_code": int(error), "error_message": message} for _ in request.creations]}
    results, valid = [], []
    for creation in request.creations:
        binding = _binding(creation)
        try:
            binding.validate()
        except InvalidAcl as invalid:
            results.append({"error_code": int(ErrorCode.INVALID_REQUEST), "error_message": str(invalid)})
            continue
        valid.append(binding)
        results.append({"error_code": 0, "error_message": None})
    if valid:
        authorizer.create(valid)
    return {"throttle_time_ms": 0, "results": results}
