"""Fetch (key 1): consumers and follower replicas read record batches from partitions.

Versions 4-12: v4 adds the isolation level and aborted transactions (read_committed), v5 the log
start offset, v7 fetch sessions (KIP-227), v9 the current leader epoch (KIP-320), v11 the rack id
and preferred read replica (KIP-392), v12 is flexible and adds the last fetched epoch and the
tagged diverging epoch, current leader and snapshot id. v13 names topics by id (KIP-516), v14 may
answer OFFSET_MOVED_TO_TIERED_STORAGE (KIP-405), v15 moves the replica id into the tagged replica
state (KIP-903), v16 adds the tagged node endpoints of the current leaders named beside
NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH (KIP-951), v17 the follower's tagged directory id
(KIP-853), v18 the follower's tagged high watermark (KIP-1166).
"""

from ..schema import (
    INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, Api, Array, Field, StructType,
)

# Fetch v18's high watermark of a follower that does not know it (Long.MAX_VALUE).
HIGH_WATERMARK_UNSUPPORTED = (1 << 63) - 1

API = Api(
    1, "Fetch", versions="4-18", flexible="12+",
    request=[
        Field("cluster_id", STRING, "12+", nullable="12+", default=None, tag=0),
        Field("replica_id", INT32, "0-14", default=-1),
        Field("replica_state", StructType("ReplicaState", [
            Field("replica_id", INT32, "15+", default=-1),
            Field("replica_epoch", INT64, "15+", default=-1),
        ]), "15+", tag=1),
        Field("max_wait_ms", INT32),
        Field("min_bytes", INT32),
        Field("max_bytes", INT32, "3+", default=0x7FFFFFFF),
        Field("isolation_level", INT8, "4+", default=0),
        Field("session_id", INT32, "7+", default=0),
        Field("session_epoch", INT32, "7+", default=-1),
        Field("topics", Array("FetchTopic", [
            Field("topic", STRING, "0-12"),
            Field("topic_id", UUID, "13+"),
            Field("partitions", Array("FetchPartition", [
                Field("partition", INT32),
                Field("current_leader_epoch", INT32, "9+", default=-1),
                Field("fetch_offset", INT64),
                Field("last_fetched_epoch", INT32, "12+", default=-1),
                Field("log_start_offset", INT64, "5+", default=-1),
                Field("partition_max_bytes", INT32),
                Field("replica_directory_id", UUID, "17+", tag=0),
                Field("high_watermark", INT64, "18+", default=HIGH_WATERMARK_UNSUPPORTED, tag=1),
            ])),
        ])),
        Field("forgotten_topics_data", Array("ForgottenTopic", [
            Field("topic", STRING, "7-12"),
            Field("topic_id", UUID, "13+"),
            Field("partitions", Array(INT32), "7+"),
        ]), "7+"),
        Field("rack_id", STRING, "11+", default=""),
    ],
    response=[
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16, "7+"),
        Field("session_id", INT32, "7+", default=0),
        Field("responses", Array("FetchableTopicResponse", [
            Field("topic", STRING, "0-12"),
            Field("topic_id", UUID, "13+"),
            Field("partitions", Array("PartitionData", [
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("high_watermark", INT64),
                Field("last_stable_offset", INT64, "4+", default=-1),
                Field("log_start_offset", INT64, "5+", default=-1),
                Field("diverging_epoch", StructType("EpochEndOffset", [
                    Field("epoch", INT32, "12+", default=-1),
                    Field("end_offset", INT64, "12+", default=-1),
                ]), "12+", tag=0),
                Field("current_leader", StructType("LeaderIdAndEpoch", [
                    Field("leader_id", INT32, "12+", default=-1),
                    Field("leader_epoch", INT32, "12+", default=-1),
                ]), "12+", tag=1),
                Field("snapshot_id", StructType("SnapshotId", [
                    Field("end_offset", INT64, default=-1),
                    Field("epoch", INT32, default=-1),
                ]), "12+", tag=2),
                Field("aborted_transactions", Array("AbortedTransaction", [
                    Field("producer_id", INT64, "4+"),
                    Field("first_offset", INT64, "4+"),
                ]), "4+", nullable="4+"),
                Field("preferred_read_replica", INT32, "11+", default=-1),
                Field("records", RECORDS, nullable="0+", default=None),
            ])),
        ])),
        Field("node_endpoints", Array("NodeEndpoint", [
            Field("node_id", INT32, "16+"),
            Field("host", STRING, "16+"),
            Field("port", INT32, "16+"),
            Field("rack", STRING, "16+", nullable="16+", default=None),
        ]), "16+", tag=0),
    ],
)
