"""StreamsGroupHeartbeat (key 88): a Kafka Streams member joins, heartbeats and leaves a streams
group (KIP-1071); the coordinator assigns tasks.

Kafka 4.3.0 defines version 0 only, flexible. A member joins with epoch 0 and its topology, leaves
with -1 (-2: a static member leaving for a while); the answer carries its epoch, the group's status
and, when they changed, its active, standby and warm-up tasks.
"""

from ..schema import BOOL, INT8, INT16, INT32, INT64, STRING, UINT16, Api, Array, Field, StructType

_KEY_VALUE = [Field("key", STRING), Field("value", STRING)]
_TOPIC_INFO = [
    Field("name", STRING),
    Field("partitions", INT32),
    Field("replication_factor", INT16),
    Field("topic_configs", Array("KeyValue", _KEY_VALUE)),
]
_TASK_IDS = [Field("subtopology_id", STRING), Field("partitions", Array(INT32))]
_TASK_OFFSET = [Field("subtopology_id", STRING), Field("partition", INT32), Field("offset", INT64)]
_ENDPOINT = [Field("host", STRING), Field("port", UINT16)]

API = Api(
    88, "StreamsGroupHeartbeat", versions="0", flexible="0+",
    request=[
        Field("group_id", STRING),
        Field("member_id", STRING),
        Field("member_epoch", INT32),
        Field("endpoint_information_epoch", INT32),
        Field("instance_id", STRING, nullable="0+", default=None),
        Field("rack_id", STRING, nullable="0+", default=None),
        Field("rebalance_timeout_ms", INT32, default=-1),
        Field("topology", StructType("Topology", [
            Field("epoch", INT32),
            Field("subtopologies", Array("Subtopology", [
                Field("subtopology_id", STRING),
                Field("source_topics", Array(STRING)),
                Field("source_topic_regex", Array(STRING)),
                Field("state_changelog_topics", Array("TopicInfo", _TOPIC_INFO)),
                Field("repartition_sink_topics", Array(STRING)),
                Field("repartition_source_topics", Array("TopicInfo", _TOPIC_INFO)),
                Field("copartition_groups", Array("CopartitionGroup", [
                    Field("source_topics", Array(INT16)),
                    Field("source_topic_regex", Array(INT16)),
                    Field("repartition_source_topics", Array(INT16)),
                ])),
            ])),
        ]), nullable="0+", default=None),
        Field("active_tasks", Array("TaskIds", _TASK_IDS), nullable="0+", default=None),
        Field("standby_tasks", Array("TaskIds", _TASK_IDS), nullable="0+", default=None),
        Field("warmup_tasks", Array("TaskIds", _TASK_IDS), nullable="0+", default=None),
        Field("process_id", STRING, nullable="0+", default=None),
        Field("user_endpoint", StructType("Endpoint", _ENDPOINT), nullable="0+", default=None),
        Field("client_tags", Array("KeyValue", _KEY_VALUE), nullable="0+", default=None),
        Field("task_offsets", Array("TaskOffset", _TASK_OFFSET), nullable="0+", default=None),
        Field("task_end_offsets", Array("TaskOffset", _TASK_OFFSET), nullable="0+", default=None),
        Field("shutdown_application", BOOL, default=False),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("member_id", STRING),
        Field("member_epoch", INT32),
        Field("heartbeat_interval_ms", INT32),
        Field("acceptable_recovery_lag", INT32),
        Field("task_offset_interval_ms", INT32),
        Field("status", Array("Status", [Field("status_code", INT8), Field("status_detail", STRING)]),
              nullable="0+", default=None),
        Field("active_tasks", Array("TaskIds", _TASK_IDS), nullable="0+", default=None),
        Field("standby_tasks", Array("TaskIds", _TASK_IDS), nullable="0+", default=None),
        Field("warmup_tasks", Array("TaskIds", _TASK_IDS), nullable="0+", default=None),
        Field("endpoint_information_epoch", INT32),
        Field("partitions_by_user_endpoint", Array("EndpointToPartitions", [
            Field("user_endpoint", StructType("Endpoint", _ENDPOINT)),
            Field("active_partitions", Array("TopicPartition", [Field("topic", STRING), Field("partitions", Array(INT32))])),
            Field("standby_partitions", Array("TopicPartition", [Field("topic", STRING), Field("partitions", Array(INT32))])),
        ]), nullable="0+", default=None),
    ],
)
