"""DescribeShareGroupOffsets (key 90): each share-partition's start offset (KIP-932); v1 adds the
lag. Topics null asks for every topic the group has state for.

Kafka 4.3.0 defines versions 0-1, always flexible.
"""

from ..schema import INT16, INT32, INT64, STRING, UUID, Api, Array, Field

API = Api(
    90, "DescribeShareGroupOffsets", versions="0-1", flexible="0+",
    request=[
        Field("groups", Array("DescribeShareGroupOffsetsRequestGroup", [
            Field("group_id", STRING),
            Field("topics", Array("DescribeShareGroupOffsetsRequestTopic", [
                Field("topic_name", STRING),
                Field("partitions", Array(INT32)),
            ]), nullable="0+"),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("groups", Array("DescribeShareGroupOffsetsResponseGroup", [
            Field("group_id", STRING),
            Field("topics", Array("DescribeShareGroupOffsetsResponseTopic", [
                Field("topic_name", STRING),
                Field("topic_id", UUID),
                Field("partitions", Array("DescribeShareGroupOffsetsResponsePartition", [
                    Field("partition_index", INT32),
                    Field("start_offset", INT64),
                    Field("leader_epoch", INT32),
                    Field("lag", INT64, "1+", default=-1, ignorable=True),
                    Field("error_code", INT16),
                    Field("error_message", STRING, nullable="0+", default=None),
                ])),
            ])),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
        ])),
    ],
)
