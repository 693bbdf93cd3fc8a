"""ConsumerGroupDescribe (key 69): members, epochs and assignments of KIP-848 consumer groups.

Versions 0-1, always flexible: v1 adds each member's MemberType (KIP-1099: 0 classic, 1 consumer).
"""

from ..schema import BOOL, INT8, INT16, INT32, STRING, UUID, Api, Array, Field, StructType

ASSIGNMENT = StructType("Assignment", [
    Field("topic_partitions", Array("TopicPartitions", [
        Field("topic_id", UUID),
        Field("topic_name", STRING),
        Field("partitions", Array(INT32)),
    ])),
])

API = Api(
    69, "ConsumerGroupDescribe", versions="0-1", flexible="0+",
    request=[
        Field("group_ids", Array(STRING)),
        Field("include_authorized_operations", BOOL),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("groups", Array("DescribedGroup", [
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
            Field("group_id", STRING),
            Field("group_state", STRING),
            Field("group_epoch", INT32),
            Field("assignment_epoch", INT32),
            Field("assignor_name", STRING),
            Field("members", Array("Member", [
                Field("member_id", STRING),
                Field("instance_id", STRING, nullable="0+", default=None),
                Field("rack_id", STRING, nullable="0+", default=None),
                Field("member_epoch", INT32),
                Field("client_id", STRING),
                Field("client_host", STRING),
                Field("subscribed_topic_names", Array(STRING)),
                Field("subscribed_topic_regex", STRING, nullable="0+", default=None),
                Field("assignment", ASSIGNMENT),
                Field("target_assignment", ASSIGNMENT),
                Field("member_type", INT8, "1+", default=-1, ignorable=True),
            ])),
            Field("authorized_operations", INT32, default=-2147483648),
        ])),
    ],
)
