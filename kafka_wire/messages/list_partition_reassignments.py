"""ListPartitionReassignments (key 46): the partition reassignments in progress (KIP-455).

Version 0 only, flexible. A null topic list asks about every partition.
"""

from ..schema import INT16, INT32, STRING, Api, Array, Field

API = Api(
    46, "ListPartitionReassignments", versions="0", flexible="0+",
    request=[
        Field("timeout_ms", INT32, default=60000),
        Field("topics", Array("ListPartitionReassignmentsTopics", [
            Field("name", STRING),
            Field("partition_indexes", Array(INT32)),
        ]), nullable="0+", default=None),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("topics", Array("OngoingTopicReassignment", [
            Field("name", STRING),
            Field("partitions", Array("OngoingPartitionReassignment", [
                Field("partition_index", INT32),
                Field("replicas", Array(INT32)),
                Field("adding_replicas", Array(INT32)),
                Field("removing_replicas", Array(INT32)),
            ])),
        ])),
    ],
)
