"""Produce (key 0): a producer writes record batches to partitions and learns their base offsets.

Versions 3-13: v3 is the first with the transactional id and record batch v2 (magic 2), v5 adds the
log start offset to the answer, v8 the per-record errors (KIP-467), v9 is flexible, v10 adds the
tagged current leader and node endpoints answered with NOT_LEADER_OR_FOLLOWER (KIP-951), v11 may
answer TRANSACTION_ABORTABLE and v12 lets a transaction.version 2 producer add partitions to its
transaction implicitly (KIP-890; both the same bytes as v10), v13 names topics by id (KIP-516).
"""

from ..schema import INT16, INT32, INT64, RECORDS, STRING, UUID, Api, Array, Field, StructType

API = Api(
    0, "Produce", versions="3-13", flexible="9+",
    request=[
        Field("transactional_id", STRING, "3+", nullable="3+", default=None),
        Field("acks", INT16),
        Field("timeout_ms", INT32),
        Field("topic_data", Array("TopicProduceData", [
            Field("name", STRING, "0-12"),
            Field("topic_id", UUID, "13+"),
            Field("partition_data", Array("PartitionProduceData", [
                Field("index", INT32),
                Field("records", RECORDS, nullable="0+", default=None),
            ])),
        ])),
    ],
    response=[
        Field("responses", Array("TopicProduceResponse", [
            Field("name", STRING, "0-12"),
            Field("topic_id", UUID, "13+"),
            Field("partition_responses", Array("PartitionProduceResponse", [
                Field("index", INT32),
                Field("error_code", INT16),
                Field("base_offset", INT64),
                Field("log_append_time_ms", INT64, "2+", default=-1),
                Field("log_start_offset", INT64, "5+", default=-1),
                Field("record_errors", Array("BatchIndexAndErrorMessage", [
                    Field("batch_index", INT32, "8+"),
                    Field("batch_index_error_message", STRING, "8+", nullable="8+", default=None),
                ]), "8+"),
                Field("error_message", STRING, "8+", nullable="8+", default=None),
                Field("current_leader", StructType("LeaderIdAndEpoch", [
                    Field("leader_id", INT32, "10+", default=-1),
                    Field("leader_epoch", INT32, "10+", default=-1),
                ]), "10+", tag=0),
            ])),
        ])),
        Field("throttle_time_ms", INT32, "1+"),
        Field("node_endpoints", Array("NodeEndpoint", [
            Field("node_id", INT32, "10+"),
            Field("host", STRING, "10+"),
            Field("port", INT32, "10+"),
            Field("rack", STRING, "10+", nullable="10+", default=None),
        ]), "10+", tag=0),
    ],
)
