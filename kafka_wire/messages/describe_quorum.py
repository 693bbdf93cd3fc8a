"""DescribeQuorum (key 55): the state of the KRaft quorum of the `__cluster_metadata` log (KIP-595):
leader, epoch, high watermark, each voter's and observer's log end offset.

Versions 0-2, all flexible; v1 adds each replica's last fetch and last caught-up times (KIP-836), v2
the error messages, each replica's directory id and the voters' endpoints, `nodes` (KIP-853).
"""

from ..schema import INT16, INT32, INT64, STRING, UINT16, UUID, Api, Array, Field

_REPLICA_STATE = [
    Field("replica_id", INT32),
    Field("replica_directory_id", UUID, "2+"),
    Field("log_end_offset", INT64),
    Field("last_fetch_timestamp", INT64, "1+", default=-1),
    Field("last_caught_up_timestamp", INT64, "1+", default=-1),
]

API = Api(
    55, "DescribeQuorum", versions="0-2", flexible="0+",
    request=[
        Field("topics", Array("DescribeQuorumTopicRequest", [
            Field("topic_name", STRING),
            Field("partitions", Array("DescribeQuorumPartitionRequest", [
                Field("partition_index", INT32),
            ])),
        ])),
    ],
    response=[
        Field("error_code", INT16),
        Field("error_message", STRING, "2+", nullable="2+", default=""),
        Field("topics", Array("DescribeQuorumTopicResponse", [
            Field("topic_name", STRING),
            Field("partitions", Array("DescribeQuorumPartitionResponse", [
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, "2+", nullable="2+", default=""),
                Field("leader_id", INT32),
                Field("leader_epoch", INT32),
                Field("high_watermark", INT64),
                Field("current_voters", Array("DescribeQuorumVoter", _REPLICA_STATE)),
                Field("observers", Array("DescribeQuorumObserver", _REPLICA_STATE)),
            ])),
        ])),
        Field("nodes", Array("DescribeQuorumNode", [
            Field("node_id", INT32),
            Field("listeners", Array("DescribeQuorumListener", [
                Field("name", STRING),
                Field("host", STRING),
                Field("port", UINT16),
            ])),
        ]), "2+"),
    ],
)
