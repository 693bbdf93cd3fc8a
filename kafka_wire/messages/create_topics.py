"""CreateTopics (key 19): create topics with partitions, replication factor or assignment, configs.

Versions 2-7 (v0-1 were removed in Kafka 4.0): v4 lets -1 mean the broker default, v5 is flexible
and returns the created topic's configs (KIP-525), v7 returns the topic id.
"""

from ..schema import BOOL, INT16, INT32, INT8, STRING, UUID, Api, Array, Field

API = Api(
    19, "CreateTopics", versions="2-7", flexible="5+",
    request=[
        Field("topics", Array("CreatableTopic", [
            Field("name", STRING),
            Field("num_partitions", INT32),
            Field("replication_factor", INT16),
            Field("assignments", Array("CreatableReplicaAssignment", [
                Field("partition_index", INT32),
                Field("broker_ids", Array(INT32)),
            ])),
            Field("configs", Array("CreatableTopicConfig", [
                Field("name", STRING),
                Field("value", STRING, nullable="0+"),
            ])),
        ])),
        Field("timeout_ms", INT32, default=60000),
        Field("validate_only", BOOL, "1+"),
    ],
    response=[
        Field("throttle_time_ms", INT32, "2+"),
        Field("topics", Array("CreatableTopicResult", [
            Field("name", STRING),
            Field("topic_id", UUID, "7+"),
            Field("error_code", INT16),
            Field("error_message", STRING, "1+", nullable="0+"),
            Field("topic_config_error_code", INT16, "5+", tag=0),
            Field("num_partitions", INT32, "5+", default=-1),
            Field("replication_factor", INT16, "5+", default=-1),
            Field("configs", Array("CreatableTopicConfigs", [
                Field("name", STRING, "5+"),
                Field("value", STRING, "5+", nullable="5+"),
                Field("read_only", BOOL, "5+"),
                Field("config_source", INT8, "5+", default=-1),
                Field("is_sensitive", BOOL, "5+"),
            ]), "5+", nullable="5+"),
        ])),
    ],
)
