"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch, to detect log divergence.

Consumers use it to validate their position after a leader change (KIP-320), followers to find
where to truncate. Versions 2-4: v2 adds the current leader epoch for fencing and the throttle
time, v3 the replica id (-1 consumer, -2 debugging tool), v4 is flexible.
"""

from ..schema import INT16, INT32, INT64, STRING, Api, Array, Field

API = Api(
    23, "OffsetForLeaderEpoch", versions="2-4", flexible="4+",
    request=[
        Field("replica_id", INT32, "3+", default=-2),
        Field("topics", Array("OffsetForLeaderTopic", [
            Field("topic", STRING),
            Field("partitions", Array("OffsetForLeaderPartition", [
                Field("partition", INT32),
                Field("current_leader_epoch", INT32, "2+", default=-1),
                Field("leader_epoch", INT32),
            ])),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32, "2+"),
        Field("topics", Array("OffsetForLeaderTopicResult", [
            Field("topic", STRING),
            Field("partitions", Array("EpochEndOffset", [
                Field("error_code", INT16),
                Field("partition", INT32),
                Field("leader_epoch", INT32, "1+", default=-1),
                Field("end_offset", INT64, default=-1),
            ])),
        ])),
    ],
)
