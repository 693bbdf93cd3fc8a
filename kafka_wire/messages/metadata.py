"""Metadata (key 3): brokers, controller, topics, partitions, leaders and replicas.

Versions 0-13. Which topics are asked for: in v0 an empty topics array means all topics; from v1
the array is nullable and null means all, empty means none. v4 adds allow_auto_topic_creation,
v7 leader epochs, v8 authorized operations, v9 is flexible, v10 adds topic ids (UUIDs; Kafka says
v10-11 must not use them), v11 drops the cluster authorized operations (DescribeCluster has them),
v12 supports asking by topic id, with null names, v13 adds a top-level error code (KIP-1102: a
broker or proxy may answer REBOOTSTRAP_REQUIRED; Apache Kafka's broker itself answers 0).
"""

from ..schema import BOOL, INT16, INT32, STRING, UUID, Api, Array, Field

# Kafka's "authorized operations not asked for" sentinel.
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)

API = Api(
    3, "Metadata", versions="0-13", flexible="9+",
    request=[
        Field("topics", Array("MetadataRequestTopic", [
            Field("topic_id", UUID, "10+"),
            Field("name", STRING, nullable="10+"),
        ]), nullable="1+"),
        Field("allow_auto_topic_creation", BOOL, "4+", default=True),
        Field("include_cluster_authorized_operations", BOOL, "8-10"),
        Field("include_topic_authorized_operations", BOOL, "8+"),
    ],
    response=[
        Field("throttle_time_ms", INT32, "3+"),
        Field("brokers", Array("MetadataResponseBroker", [
            Field("node_id", INT32),
            Field("host", STRING),
            Field("port", INT32),
            Field("rack", STRING, "1+", nullable="1+", default=None),
        ])),
        Field("cluster_id", STRING, "2+", nullable="2+", default=None),
        Field("controller_id", INT32, "1+", default=-1),
        Field("topics", Array("MetadataResponseTopic", [
            Field("error_code", INT16),
            Field("name", STRING, nullable="12+"),
            Field("topic_id", UUID, "10+"),
            Field("is_internal", BOOL, "1+", default=False),
            Field("partitions", Array("MetadataResponsePartition", [
                Field("error_code", INT16),
                Field("partition_index", INT32),
                Field("leader_id", INT32),
                Field("leader_epoch", INT32, "7+", default=-1),
                Field("replica_nodes", Array(INT32)),
                Field("isr_nodes", Array(INT32)),
                Field("offline_replicas", Array(INT32), "5+"),
            ])),
            Field("topic_authorized_operations", INT32, "8+", default=AUTHORIZED_OPERATIONS_OMITTED),
        ])),
        Field("cluster_authorized_operations", INT32, "8-10", default=AUTHORIZED_OPERATIONS_OMITTED),
        Field("error_code", INT16, "13+"),
    ],
)
