"""OffsetFetch (key 9): a group's committed offsets.

Versions 1-10 (v0 was removed in Kafka 4.0): v2 lets null topics mean every partition and adds a
top-level error code, v5 the committed leader epoch, v6 is flexible, v7 require_stable (KIP-447),
v8 asks for several groups at once (`groups` replaces `group_id`/`topics`), v9 adds the member id and
member epoch that members of KIP-848 consumer groups fetch with (validated for those groups), v10
names topics by id instead of by name (UNKNOWN_TOPIC_ID for an id the broker does not know).
"""

from ..schema import BOOL, INT16, INT32, INT64, STRING, UUID, Api, Array, Field

API = Api(
    9, "OffsetFetch", versions="1-10", flexible="6+",
    request=[
        Field("group_id", STRING, "0-7"),
        Field("topics", Array("OffsetFetchRequestTopic", [
            Field("name", STRING, "0-7"),
            Field("partition_indexes", Array(INT32), "0-7"),
        ]), "0-7", nullable="2-7"),
        Field("groups", Array("OffsetFetchRequestGroup", [
            Field("group_id", STRING, "8+"),
            Field("member_id", STRING, "9+", nullable="9+", default=None, ignorable=True),
            Field("member_epoch", INT32, "9+", default=-1, ignorable=True),
            Field("topics", Array("OffsetFetchRequestTopics", [
                Field("name", STRING, "8-9"),
                Field("topic_id", UUID, "10+"),
                Field("partition_indexes", Array(INT32), "8+"),
            ]), "8+", nullable="8+"),
        ]), "8+"),
        Field("require_stable", BOOL, "7+"),
    ],
    response=[
        Field("throttle_time_ms", INT32, "3+"),
        Field("topics", Array("OffsetFetchResponseTopic", [
            Field("name", STRING, "0-7"),
            Field("partitions", Array("OffsetFetchResponsePartition", [
                Field("partition_index", INT32, "0-7"),
                Field("committed_offset", INT64, "0-7"),
                Field("committed_leader_epoch", INT32, "5-7", default=-1),
                Field("metadata", STRING, "0-7", nullable="0-7"),
                Field("error_code", INT16, "0-7"),
            ]), "0-7"),
        ]), "0-7"),
        Field("error_code", INT16, "2-7"),
        Field("groups", Array("OffsetFetchResponseGroup", [
            Field("group_id", STRING, "8+"),
            Field("topics", Array("OffsetFetchResponseTopics", [
                Field("name", STRING, "8-9"),
                Field("topic_id", UUID, "10+"),
                Field("partitions", Array("OffsetFetchResponsePartitions", [
                    Field("partition_index", INT32, "8+"),
                    Field("committed_offset", INT64, "8+"),
                    Field("committed_leader_epoch", INT32, "8+", default=-1),
                    Field("metadata", STRING, "8+", nullable="8+"),
                    Field("error_code", INT16, "8+"),
                ]), "8+"),
            ]), "8+"),
            Field("error_code", INT16, "8+"),
        ]), "8+"),
    ],
)
