"""DescribeGroups (key 15): state, protocol and members of groups.

Versions 0-6: v3 adds authorized operations, v4 the members' group instance ids, v5 is flexible, v6
answers a group that does not exist GROUP_ID_NOT_FOUND with an error message (KIP-1043).
"""

from ..schema import BOOL, BYTES, INT16, INT32, STRING, Api, Array, Field

API = Api(
    15, "DescribeGroups", versions="0-6", flexible="5+",
    request=[
        Field("groups", Array(STRING)),
        Field("include_authorized_operations", BOOL, "3+"),
    ],
    response=[
        Field("throttle_time_ms", INT32, "1+"),
        Field("groups", Array("DescribedGroup", [
            Field("error_code", INT16),
            Field("error_message", STRING, "6+", nullable="6+", default=None),
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
