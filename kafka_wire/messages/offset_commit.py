"""OffsetCommit (key 8): a group member commits consumed offsets.

Versions 2-10 (v0-1 were removed in Kafka 4.0): v2-4 carry a retention time, v6 the committed leader
epoch, v7 static membership, v8 is flexible, v9 is the same as v8 and is the first version members of
KIP-848 consumer groups may use (the coordinator checks their member epoch). The generation field is named as in Kafka's spec since
KIP-848: generation id for classic groups, member epoch for consumer groups. v10 names topics by
id instead of by name (KIP-848's follow-up; UNKNOWN_TOPIC_ID for an id the broker does not know).
"""

from ..schema import INT16, INT32, INT64, STRING, UUID, Api, Array, Field

API = Api(
    8, "OffsetCommit", versions="2-10", flexible="8+",
    request=[
        Field("group_id", STRING),
        Field("generation_id_or_member_epoch", INT32, "1+", default=-1),
        Field("member_id", STRING, "1+"),
        Field("group_instance_id", STRING, "7+", nullable="7+", default=None),
        Field("retention_time_ms", INT64, "2-4", default=-1),
        Field("topics", Array("OffsetCommitRequestTopic", [
            Field("name", STRING, "0-9"),
            Field("topic_id", UUID, "10+"),
            Field("partitions", Array("OffsetCommitRequestPartition", [
                Field("partition_index", INT32),
                Field("committed_offset", INT64),
                Field("committed_leader_epoch", INT32, "6+", default=-1),
                Field("committed_metadata", STRING, nullable="0+"),
            ])),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32, "3+"),
        Field("topics", Array("OffsetCommitResponseTopic", [
            Field("name", STRING, "0-9"),
            Field("topic_id", UUID, "10+"),
            Field("partitions", Array("OffsetCommitResponsePartition", [
                Field("partition_index", INT32),
                Field("error_code", INT16),
            ])),
        ])),
    ],
)
