"""ConsumerGroupDescribe (69): epochs, members and assignments of KIP-848 consumer groups.

A classic group (or an unknown group id) answers GROUP_ID_NOT_FOUND, as Kafka does: the admin
client then describes it with DescribeGroups. With the finalized group.version below 1 every group
answers UNSUPPORTED_VERSION (Kafka's getErrorResponse when the protocol is off).
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..features import GROUP_VERSION
from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["ConsumerGroupDescribe"]

AUTHORIZED_OPERATIONS_OMITTED = -2147483648


async def handle(broker: BrokerView, ctx, request):
    def coordinator():
        groups = getattr(broker, "groups", None)
        if groups is None:
            return None, ErrorCode.COORDINATOR_NOT_AVAILABLE
        return groups.consumer_group_describe, None

    return describe_groups(broker, ctx, request, GROUP_VERSION, coordinator)


def describe_groups(broker: BrokerView, ctx, request, feature: str, coordinator) -> dict:
    """The answer of ConsumerGroupDescribe, ShareGroupDescribe and StreamsGroupDescribe: every group
    UNSUPPORTED_VERSION while `feature` is below 1. Otherwise `coordinator()` gives (describe, error):
    per group id GROUP_AUTHORIZATION_FAILED without DESCRIBE on it, else `error` when it is not None
    (the coordinator is not there or not loaded), else `describe(group_id)`; authorized operations
    only when asked for and the entry has no error."""
    if broker.feature_level(feature) < 1:
        return {"throttle_time_ms": 0, "groups": [
            {"error_code": int(ErrorCode.UNSUPPORTED_VERSION), "group_id": group_id,
             "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED} for group_id in request.group_ids]}
    describe, error = coordinator()
    described = []
    for group_id in request.group_ids:
        if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            entry = {"error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED), "group_id": group_id}
        elif error is not None:
            entry = {"error_code": int(error), "group_id": group_id}
        else:
            entry = describe(group_id)
        if request.include_authorized_operations and entry.get("error_code", 0) == 0:
            entry["authorized_operations"] = broker.authorizer.authorized_operations(ctx, ResourceType.GROUP, group_id)
        else:
            entry["authorized_operations"] = AUTHORIZED_OPERATIONS_OMITTED
        described.append(entry)
    return {"throttle_time_ms": 0, "groups": described}
