"""ConsumerGroupHeartbeat (key 68): a member of a KIP-848 consumer group joins, heartbeats and leaves.

Versions 0-1, always flexible: v1 adds SubscribedTopicRegex and requires the consumer to generate
its own member id (KIP-1082). Topics are named by topic id in assignments and owned partitions.
"""

from ..schema import INT16, INT32, STRING, UUID, Api, Array, Field, StructType

TOPIC_PARTITIONS = [
    Field("topic_id", UUID),
    Field("partitions", Array(INT32)),
]

API = Api(
    68, "ConsumerGroupHeartbeat", versions="0-1", flexible="0+",
    request=[
        Field("group_id", STRING),
        Field("member_id", STRING),
        Field("member_epoch", INT32),
        Field("instance_id", STRING, nullable="0+", default=None),
        Field("rack_id", STRING, nullable="0+", default=None),
        Field("rebalance_timeout_ms", INT32, default=-1),
        Field("subscribed_topic_names", Array(STRING), nullable="0+", default=None),
        Field("subscribed_topic_regex", STRING, "1+", nullable="1+", default=None),
        Field("server_assignor", STRING, nullable="0+", default=None),
        Field("topic_partitions", Array("TopicPartitions", TOPIC_PARTITIONS), nullable="0+", default=None),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("member_id", STRING, nullable="0+", default=None),
        Field("member_epoch", INT32),
        Field("heartbeat_interval_ms", INT32),
        Field("assignment", StructType("Assignment", [
            Field("topic_partitions", Array("TopicPartitions", TOPIC_PARTITIONS)),
        ]), nullable="0+", default=None),
    ],
)
