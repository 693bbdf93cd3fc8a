"""DescribeTopicPartitions (key 75): topics' partitions, paged by a cursor (KIP-966).

Version 0 only, flexible. Kafka's admin client (3.9+) and kafka-topics.sh --describe use it
instead of Metadata when the broker advertises it. `cursor` / `next_cursor` are nullable structs:
where to start, and where the next page starts when `response_partition_limit` cut this one.
"""

from ..schema import BOOL, INT16, INT32, STRING, UUID, Api, Array, Field, StructType
from .metadata import AUTHORIZED_OPERATIONS_OMITTED


def _cursor(name: str) -> StructType:
    return StructType(name, [
        Field("topic_name", STRING),
        Field("partition_index", INT32),
    ])


API = Api(
    75, "DescribeTopicPartitions", versions="0", flexible="0+",
    request=[
        Field("topics", Array("TopicRequest", [
            Field("name", STRING),
        ])),
        Field("response_partition_limit", INT32, default=2000),
        Field("cursor", _cursor("Cursor"), nullable="0+", default=None),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("topics", Array("DescribeTopicPartitionsResponseTopic", [
            Field("error_code", INT16),
            Field("name", STRING, nullable="0+"),
            Field("topic_id", UUID),
            Field("is_internal", BOOL, default=False),
            Field("partitions", Array("DescribeTopicPartitionsResponsePartition", [
                Field("error_code", INT16),
                Field("partition_index", INT32),
                Field("leader_id", INT32),
                Field("leader_epoch", INT32, default=-1),
                Field("replica_nodes", Array(INT32)),
                Field("isr_nodes", Array(INT32)),
                Field("eligible_leader_replicas", Array(INT32), nullable="0+", default=None),
                Field("last_known_elr", Array(INT32), nullable="0+", default=None),
                Field("offline_replicas", Array(INT32)),
            ])),
            Field("topic_authorized_operations", INT32, default=AUTHORIZED_OPERATIONS_OMITTED),
        ])),
        Field("next_cursor", _cursor("Cursor"), nullable="0+", default=None),
    ],
)
