"""StreamsGroupDescribe (key 89): the topology, epochs, members and task assignments of streams
groups (KIP-1071). Kafka 4.3.0 defines version 0 only, flexible."""

from ..schema import BOOL, INT16, INT32, INT64, STRING, UINT16, Api, Array, Field, StructType

_KEY_VALUE = [Field("key", STRING), Field("value", STRING)]
_TOPIC_INFO = [
    Field("name", STRING),
    Field("partitions", INT32),
    Field("replication_factor", INT16),
    Field("topic_configs", Array("KeyValue", _KEY_VALUE)),
]
_TASK_IDS = [Field("subtopology_id", STRING), Field("partitions", Array(INT32))]
_ASSIGNMENT = [
    Field("active_tasks", Array("TaskIds", _TASK_IDS)),
    Field("standby_tasks", Array("TaskIds", _TASK_IDS)),
    Field("warmup_tasks", Array("TaskIds", _TASK_IDS)),
]
_TASK_OFFSET = [Field("subtopology_id", STRING), Field("partition", INT32), Field("offset", INT64)]

API = Api(
    89, "StreamsGroupDescribe", versions="0", flexible="0+",
    request=[
        Field("group_ids", Array(STRING)),
        Field("include_authorized_operations", BOOL),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("groups", Array("DescribedGroup", [
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
            Field("group_id", STRING),
            Field("group_state", STRING, default=""),
            Field("group_epoch", INT32),
            Field("assignment_epoch", INT32),
            Field("topology", StructType("Topology", [
                Field("epoch", INT32),
                Field("subtopologies", Array("Subtopology", [
                    Field("subtopology_id", STRING),
                    Field("source_topics", Array(STRING)),
                    Field("repartition_sink_topics", Array(STRING)),
                    Field("state_changelog_topics", Array("TopicInfo", _TOPIC_INFO)),
                    Field("repartition_source_topics", Array("TopicInfo", _TOPIC_INFO)),
                ]), nullable="0+", default=None),
            ]), nullable="0+", default=None),
            Field("members", Array("Member", [
                Field("member_id", STRING),
                Field("member_epoch", INT32),
                Field("instance_id", STRING, nullable="0+", default=None),
                Field("rack_id", STRING, nullable="0+", default=None),
                Field("client_id", STRING),
                Field("client_host", STRING),
                Field("topology_epoch", INT32),
                Field("process_id", STRING),
                Field("user_endpoint", StructType("Endpoint", [Field("host", STRING), Field("port", UINT16)]),
                      nullable="0+", default=None),
                Field("client_tags", Array("KeyValue", _KEY_VALUE)),
                Field("task_offsets", Array("TaskOffset", _TASK_OFFSET)),
                Field("task_end_offsets", Array("TaskOffset", _TASK_OFFSET)),
                Field("assignment", StructType("Assignment", _ASSIGNMENT)),
                Field("target_assignment", StructType("Assignment", _ASSIGNMENT)),
                Field("is_classic", BOOL),
            ])),
            Field("authorized_operations", INT32, default=-2147483648),
        ])),
    ],
)
