"""ShareGroupDescribe (key 77): members, epochs and assignments of share groups (KIP-932).

Kafka 4.3.0 defines version 1 only (v0 was early access), always flexible.
"""

from ..schema import BOOL, INT16, INT32, STRING, UUID, Api, Array, Field, StructType

ASSIGNMENT = StructType("Assignment", [
    Field("topic_partitions", Array("TopicPartitions", [
        Field("topic_id", UUID),
        Field("topic_name", STRING),
        Field("partitions", Array(INT32)),
    ])),
])

API = Api(
    77, "ShareGroupDescribe", versions="1", flexible="0+",
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
                Field("rack_id", STRING, nullable="0+", default=None),
                Field("member_epoch", INT32),
                Field("client_id", STRING),
                Field("client_host", STRING),
                Field("subscribed_topic_names", Array(STRING)),
                Field("assignment", ASSIGNMENT),
            ])),
            Field("authorized_operations", INT32, default=-2147483648),
        ])),
    ],
)
