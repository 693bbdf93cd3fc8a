"""ListOffsets (key 2): the offset for a timestamp, or the earliest (-2) / latest (-1) offset.

Versions 1-11: v1 answers one offset and its timestamp per partition, v2 adds the isolation level,
v4 leader epochs (KIP-320), v6 is flexible, v7 accepts MAX_TIMESTAMP (-3, KIP-734), v8
EARLIEST_LOCAL_TIMESTAMP (-4, KIP-405), v9 LATEST_TIERED_TIMESTAMP (-5, KIP-1005), v10 adds the
timeout for lookups in remote storage (KIP-1075), v11 EARLIEST_PENDING_UPLOAD_TIMESTAMP (-6, KIP-1023).
"""

from ..schema import INT8, INT16, INT32, INT64, STRING, Api, Array, Field

API = Api(
    2, "ListOffsets", versions="1-11", flexible="6+",
    request=[
        Field("replica_id", INT32),
        Field("isolation_level", INT8, "2+"),
        Field("topics", Array("ListOffsetsTopic", [
            Field("name", STRING),
            Field("partitions", Array("ListOffsetsPartition", [
                Field("partition_index", INT32),
                Field("current_leader_epoch", INT32, "4+", default=-1),
                Field("timestamp", INT64),
            ])),
        ])),
        Field("timeout_ms", INT32, "10+"),
    ],
    response=[
        Field("throttle_time_ms", INT32, "2+"),
        Field("topics", Array("ListOffsetsTopicResponse", [
            Field("name", STRING),
            Field("partitions", Array("ListOffsetsPartitionResponse", [
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("timestamp", INT64, "1+", default=-1),
                Field("offset", INT64, "1+", default=-1),
                Field("leader_epoch", INT32, "4+", default=-1),
            ])),
        ])),
    ],
)
