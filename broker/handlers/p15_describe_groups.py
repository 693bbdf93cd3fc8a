"""DescribeGroups (15): state, protocol and members of groups (metadata and assignments when Stable).

A group this broker does not know, or a KIP-848 consumer group, is described as Dead with no error
at v0-5; from v6 (KIP-1043) it is GROUP_ID_NOT_FOUND with Kafka's message ("Group g not found.",
"Group g is not a classic group."), still Dead.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["DescribeGroups"]

AUTHORIZED_OPERATIONS_OMITTED = -2147483648
# READ, DELETE and DESCRIBE (AclOperation codes 3, 6, 8): what a group allows without an authorizer.
GROUP_AUTHORIZED_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)


async def handle(broker: BrokerView, ctx, request):
    groups = getattr(broker, "groups", None)
    operations = GROUP_AUTHORIZED_OPERATIONS if request.include_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED
    described = []
    for group_id in request.groups:
        if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            # Kafka's refused entry keeps the schema's default: no authorized operations.
            described.append({"error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED), "group_id": group_id,
                              "group_state": "", "protocol_type": "", "protocol_data": "", "members": [],
                              "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED})
            continue
        if groups is None:
            entry = {"error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE), "group_id": group_id,
                     "group_state": "", "protocol_type": "", "protocol_data": "", "members": []}
        else:
            entry = groups.describe_group(group_id, ctx.api_version)
        # An error entry (v6's GROUP_ID_NOT_FOUND) keeps the schema's default, as Kafka 4.3 answers it.
        if operations == AUTHORIZED_OPERATIONS_OMITTED or entry.get("error_code"):
            entry["authorized_operations"] = AUTHORIZED_OPERATIONS_OMITTED
        else:
            entry["authorized_operations"] = broker.authorizer.authorized_operations(ctx, ResourceType.GROUP, group_id)
        described.append(entry)
    return {"throttle_time_ms": 0, "groups": described}
