"""SyncGroup (14): the leader hands in the assignment; every member waits for and gets its own."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

API = APIS_BY_NAME["SyncGroup"]


async def handle(broker, ctx, request):
    groups = getattr(broker, "groups", None)
    if groups is None:
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE),
                "protocol_type": None, "protocol_name": None, "assignment": b""}
    return await groups.sync_group(
        group_id=request.group_id,
        generation_id=request.generation_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id,
        protocol_type=request.protocol_type,
        protocol_name=request.protocol_name,
        assignments=[(a.member_id, a.assignment) for a in request.assignments],
    )
