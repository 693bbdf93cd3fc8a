"""LeaveGroup (key 13): members leave a classic group.

Versions 0-5: v3 leaves several members at once, by member id or group instance id (KIP-345),
v4 is flexible, v5 adds the leave reason (KIP-800).
"""

from ..schema import INT16, INT32, STRING, Api, Array, Field

API = Api(
    13, "LeaveGroup", versions="0-5", flexible="4+",
    request=[
        Field("group_id", STRING),
        Field("member_id", STRING, "0-2"),
        Field("members", Array("MemberIdentity", [
            Field("member_id", STRING, "3+"),
            Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
            Field("reason", STRING, "5+", nullable="5+", default=None),
        ]), "3+"),
    ],
    response=[
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16),
        Field("members", Array("MemberResponse", [
            Field("member_id", STRING, "3+"),
            Field("group_instance_id", STRING, "3+", nullable="3+"),
            Field("error_code", INT16, "3+"),
        ]), "3+"),
    ],
)
