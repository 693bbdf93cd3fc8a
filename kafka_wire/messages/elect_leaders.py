"""ElectLeaders (key 43): elect the preferred (or, unclean, any live) replica leader (KIP-183, KIP-460).

Versions 0-2, flexible from 2. v1 adds the election type (0 preferred, 1 unclean) and a
top-level error code. A null topic_partitions asks for every partition of the cluster.
"""

from ..schema import INT8, INT16, INT32, STRING, Api, Array, Field

API = Api(
    43, "ElectLeaders", versions="0-2", flexible="2+",
    request=[
        Field("election_type", INT8, "1+"),
        Field("topic_partitions", Array("TopicPartitions", [
            Field("topic", STRING),
            Field("partitions", Array(INT32)),
        ]), nullable="0+"),
        Field("timeout_ms", INT32, default=60000),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16, "1+"),
        Field("replica_election_results", Array("ReplicaElectionResult", [
            Field("topic", STRING),
            Field("partition_result", Array("PartitionResult", [
                Field("partition_id", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+"),
            ])),
        ])),
    ],
)
