"""DeleteGroups (42): delete empty groups with their offsets (NON_EMPTY_GROUP while members remain).

A group's configs (broker/group_configs.py) stay, as in Kafka 4.3: they are metadata, not the
coordinator's, and a group of that name later gets them again."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["DeleteGroups"]


async def handle(broker: BrokerView, ctx, request):
    groups = getattr(broker, "groups", None)
    deletable = broker.authorizer.filter_authorized(ctx, AclOperation.DELETE, ResourceType.GROUP,
                                                    request.groups_names)
    if groups is None:
        results = [(g, ErrorCode.COORDINATOR_NOT_AVAILABLE) for g in request.groups_names if g in deletable]
    else:
        results = groups.delete_groups([g for g in request.groups_names if g in deletable])
    results += [(g, ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in request.groups_names if g not in deletable]
    return {"throttle_time_ms": 0,
            "results": [{"group_id": g, "error_code": int(e)} for g, e in results]}
