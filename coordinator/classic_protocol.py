"""The classic group protocol's answers (JoinGroup and SyncGroup response bodies) and the keys of its
timers (member heartbeats, the join and sync phases): shared by the classic coordinator and the
online migration between classic and KIP-848 groups."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode

UNKNOWN_MEMBER_ID = ""


def join_response(error: ErrorCode = ErrorCode.NONE, member_id: str = UNKNOWN_MEMBER_ID, *,
                  generation_id: int = -1, protocol_type: str | None = None, protocol_name: str | None = None,
                  leader: str = "", members: list | None = None, skip_assignment: bool = False) -> dict:
    """A JoinGroup response body (null protocol fields as None; handlers adapt old versions)."""
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "generation_id": generation_id,
        "protocol_type": protocol_type,
        "protocol_name": protocol_name,
        "leader": leader or "",
        "skip_assignment": skip_assignment,
        "member_id": member_id,
        "members": members or [],
    }


def sync_response(error: ErrorCode = ErrorCode.NONE, assignment: bytes = b"", *,
                  protocol_type: str | None = None, protocol_name: str | None = None) -> dict:
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "protocol_type": protocol_type,
        "protocol_name": protocol_name,
        "assignment": assignment,
    }


def heartbeat_key(group_id: str, member_id: str) -> tuple:
    return ("heartbeat", group_id, member_id)


def join_key(group_id: str) -> tuple:
    return ("join", group_id)


def sync_key(group_id: str) -> tuple:
    return ("sync", group_id)
