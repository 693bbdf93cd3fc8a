"""OffsetDelete (key 47): delete a group's committed offsets for partitions it no longer consumes.

Version 0 only; never flexible.
"""

from ..schema import INT16, INT32, STRING, Api, Array, Field

API = Api(
    47, "OffsetDelete", versions="0", flexible=None,
    request=[
        Field("group_id", STRING),
        Field("topics", Array("OffsetDeleteRequestTopic", [
            Field("name", STRING),
            Field("partitions", Array("OffsetDeleteRequestPartition", [
                Field("partition_index", INT32),
            ])),
        ])),
    ],
    response=[
        Field("error_code", INT16),
        Field("throttle_time_ms", INT32),
        Field("topics", Array("OffsetDeleteResponseTopic", [
            Field("name", STRING),
            Field("partitions", Array("OffsetDeleteResponsePartition", [
                Field("partition_index", INT32),
                Field("error_code", INT16),
            ])),
        ])),
    ],
)
