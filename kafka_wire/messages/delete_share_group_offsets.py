"""DeleteShareGroupOffsets (key 92): drop a share group's state for whole topics (KIP-932,
kafka-share-groups.sh --delete-offsets).

Kafka 4.3.0 defines version 0, flexible.
"""

from ..schema import INT16, INT32, STRING, UUID, Api, Array, Field

API = Api(
    92, "DeleteShareGroupOffsets", versions="0", flexible="0+",
    request=[
        Field("group_id", STRING),
        Field("topics", Array("DeleteShareGroupOffsetsRequestTopic", [
            Field("topic_name", STRING),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("responses", Array("DeleteShareGroupOffsetsResponseTopic", [
            Field("topic_name", STRING),
            Field("topic_id", UUID),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
        ])),
    ],
)
