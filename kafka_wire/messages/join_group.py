"""JoinGroup (key 11): a member joins a classic group, which starts or joins a rebalance.

Versions 0-9: v1 adds the rebalance timeout, v4 makes a new member rejoin with the member id it was
given (KIP-394), v5 adds static membership (group.instance.id), v6 is flexible, v7 returns the
protocol type and name, v8 adds the join reason (KIP-800), v9 skip_assignment (KIP-814).
"""

from ..schema import BOOL, BYTES, INT16, INT32, STRING, Api, Array, Field

API = Api(
    11, "JoinGroup", versions="0-9", flexible="6+",
    request=[
        Field("group_id", STRING),
        Field("session_timeout_ms", INT32),
        Field("rebalance_timeout_ms", INT32, "1+", default=-1),
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "5+", nullable="5+", default=None),
        Field("protocol_type", STRING),
        Field("protocols", Array("JoinGroupRequestProtocol", [
            Field("name", STRING),
            Field("metadata", BYTES),
        ])),
        Field("reason", STRING, "8+", nullable="8+", default=None),
    ],
    response=[
        Field("throttle_time_ms", INT32, "2+"),
        Field("error_code", INT16),
        Field("generation_id", INT32, default=-1),
        Field("protocol_type", STRING, "7+", nullable="7+", default=None),
        Field("protocol_name", STRING, nullable="7+"),
        Field("leader", STRING),
        Field("skip_assignment", BOOL, "9+"),
        Field("member_id", STRING),
        Field("members", Array("JoinGroupResponseMember", [
            Field("member_id", STRING),
            Field("group_instance_id", STRING, "5+", nullable="5+", default=None),
            Field("metadata", BYTES),
        ])),
    ],
)
