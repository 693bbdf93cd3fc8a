"""DescribeGroups (key 15): state, protocol and members of groups.

Versions 0-5: v3 adds authorized operations, v4 the members' group instance ids, v5 is flexible.
"""

from ..schema import BOOL, BYTES, INT16, INT32, STRING, Api, Array, Field

API = Api(
    15, "DescribeGroups", versions="0-5", flexible="5+",
    request=[
        Field("groups", Array(STRING)),
        Field("include_authorized_operations", BOOL, "3+"),
    ],
    response=[
        Field("throttle_time_ms", INT32, "1+"),
        Field("groups", Array("DescribedGroup", [
            Field("error_code", INT16),
            Field("group_id", STRING),
            Field("group_state", STRING),
            Field("protocol_type", STRING),
            Field("protocol_data", STRING),
            Field("members", Array("DescribedGroupMember", [
                Field("member_id", STRING),
                Field("group_instance_id", STRING, "4+", nullable="4+", default=None),
                Field("client_id", STRING),
                Field("client_host", STRING),
                Field("member_metadata", BYTES),
                Field("member_assignment", BYTES),
            ])),
            Field("authorized_operations", INT32, "3+", default=-2147483648),
        ])),
    ],
)
