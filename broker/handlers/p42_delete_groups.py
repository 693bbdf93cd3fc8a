"""DeleteGroups (42): delete empty groups with their offsets (NON_EMPTY_GROUP while members remain).

A group's configs (broker/group_configs.py) stay, as in Kafka 4.3: they are metadata, not the
coordinator's, and a group of that name later gets them again."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from ..share_groups import delete_share_group, share_group_ids

API = APIS_BY_NAME["DeleteGroups"]


async def handle(broker: BrokerView, ctx, request):
    groups = getattr(broker, "groups", None)
    deletable = broker.authorizer.filter_authorized(ctx, AclOperation.DELETE, ResourceType.GROUP,
                                                    request.groups_names)
    share = share_group_ids(broker, [g for g in request.groups_names if g in deletable])
    if groups is None:
        results = [(g, ErrorCode.COORDINATOR_NOT_AVAILABLE) for g in request.groups_names if g in deletable]
    else:
        results = groups.delete_groups([g for g in request.groups_names if g in deletable and g not in share])
    # Share groups (KIP-932, broker/share_groups.py), in the request's order among the others.
    if share:
        by_id = dict(results)
        by_id.update({g: delete_share_group(broker, g) for g in share})
        results = [(g, by_id[g]) for g in dict.fromkeys(request.groups_names) if g in by_id]
    results += [(g, ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in request.groups_names if g not in deletable]
    return {"throttle_time_ms": 0,
            "results": [{"group_id": g, "error_code": int(e)} for g, e in results]}
