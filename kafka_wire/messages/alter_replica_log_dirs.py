"""AlterReplicaLogDirs (key 34): move partitions of a broker between its log directories (KIP-113).

Versions 1-2 (v0 was removed in Kafka 4.0, KIP-896): v1 is the same as v0, v2 is flexible.
"""

from ..schema import INT16, INT32, STRING, Api, Array, Field

API = Api(
    34, "AlterReplicaLogDirs", versions="1-2", flexible="2+",
    request=[
        Field("dirs", Array("AlterReplicaLogDir", [
            Field("path", STRING),
            Field("topics", Array("AlterReplicaLogDirTopic", [
                Field("name", STRING),
                Field("partitions", Array(INT32)),
            ])),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("results", Array("AlterReplicaLogDirTopicResult", [
            Field("topic_name", STRING),
            Field("partitions", Array("AlterReplicaLogDirPartitionResult", [
                Field("partition_index", INT32),
                Field("error_code", INT16),
            ])),
        ])),
    ],
)
