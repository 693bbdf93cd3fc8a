"""CreatePartitions (key 37): raise the partition count of existing topics.

Versions 0-3: v2 is flexible; v3 is the same as v2.
"""

from ..schema import BOOL, INT16, INT32, STRING, Api, Array, Field

API = Api(
    37, "CreatePartitions", versions="0-3", flexible="2+",
    request=[
        Field("topics", Array("CreatePartitionsTopic", [
            Field("name", STRING),
            Field("count", INT32),
            Field("assignments", Array("CreatePartitionsAssignment", [
                Field("broker_ids", Array(INT32)),
            ]), nullable="0+"),
        ])),
        Field("timeout_ms", INT32),
        Field("validate_only", BOOL),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("results", Array("CreatePartitionsTopicResult", [
            Field("name", STRING),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
        ])),
    ],
)
