"""ShareGroupHeartbeat (key 76): a share-group member joins, heartbeats and leaves (KIP-932).

Kafka 4.3.0 defines version 1 only (v0 was the early-access version, removed in 4.1), always
flexible. A member joins with epoch 0, leaves with epoch -1; the answer carries its epoch, the
heartbeat interval and, when it changed, the partitions assigned to it.
"""

from ..schema import INT32, INT16, STRING, UUID, Api, Array, Field, StructType

API = Api(
    76, "ShareGroupHeartbeat", versions="1", flexible="0+",
    request=[
        Field("group_id", STRING),
        Field("member_id", STRING),
        Field("member_epoch", INT32),
        Field("rack_id", STRING, nullable="0+", default=None),
        Field("subscribed_topic_names", Array(STRING), nullable="0+", default=None),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("member_id", STRING, nullable="0+", default=None),
        Field("member_epoch", INT32),
        Field("heartbeat_interval_ms", INT32),
        Field("assignment", StructType("Assignment", [
            Field("topic_partitions", Array("TopicPartitions", [
                Field("topic_id", UUID),
                Field("partitions", Array(INT32)),
            ])),
        ]), nullable="0+", default=None),
    ],
)
