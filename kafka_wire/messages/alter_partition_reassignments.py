"""AlterPartitionReassignments (key 45): move partitions to other brokers, or cancel a move (KIP-455).

Versions 0-1, flexible from 0. A partition's replicas null cancels its ongoing reassignment. v1
adds AllowReplicationFactorChange (KIP-860): false refuses a target whose replica count differs.
"""

from ..schema import BOOL, INT16, INT32, STRING, Api, Array, Field

API = Api(
    45, "AlterPartitionReassignments", versions="0-1", flexible="0+",
    request=[
        Field("timeout_ms", INT32, default=60000),
        Field("allow_replication_factor_change", BOOL, "1+", default=True),
        Field("topics", Array("ReassignableTopic", [
            Field("name", STRING),
            Field("partitions", Array("ReassignablePartition", [
                Field("partition_index", INT32),
                Field("replicas", Array(INT32), nullable="0+", default=None),
            ])),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("allow_replication_factor_change", BOOL, "1+", default=True),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("responses", Array("ReassignableTopicResponse", [
            Field("name", STRING),
            Field("partitions", Array("ReassignablePartitionResponse", [
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+"),
            ])),
        ])),
    ],
)
