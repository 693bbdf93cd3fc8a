"""DeleteGroups (42): delete empty groups with their offsets (NON_EMPTY_GROUP while members remain)."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

API = APIS_BY_NAME["DeleteGroups"]


async def handle(broker, ctx, request):
    groups = getattr(broker, "groups", None)
    if groups is None:
        results = [(g, ErrorCode.COORDINATOR_NOT_AVAILABLE) for g in request.groups_names]
    else:
        results = groups.delete_groups(list(request.groups_names))
    return {"throttle_time_ms": 0,
            "results": [{"group_id": g, "error_code": int(e)} for g, e in results]}
