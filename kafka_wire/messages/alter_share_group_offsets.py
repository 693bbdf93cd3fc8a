"""AlterShareGroupOffsets (key 91): set share-partitions' start offsets of an empty share group
(KIP-932, kafka-share-groups.sh --reset-offsets).

Kafka 4.3.0 defines version 0, flexible.
"""

from ..schema import INT16, INT32, INT64, STRING, UUID, Api, Array, Field

API = Api(
    91, "AlterShareGroupOffsets", versions="0", flexible="0+",
    request=[
        Field("group_id", STRING),
        Field("topics", Array("AlterShareGroupOffsetsRequestTopic", [
            Field("topic_name", STRING),
            Field("partitions", Array("AlterShareGroupOffsetsRequestPartition", [
                Field("partition_index", INT32),
                Field("start_offset", INT64),
            ])),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("responses", Array("AlterShareGroupOffsetsResponseTopic", [
            Field("topic_name", STRING),
            Field("topic_id", UUID),
            Field("partitions", Array("AlterShareGroupOffsetsResponsePartition", [
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
            ])),
        ])),
    ],
)
