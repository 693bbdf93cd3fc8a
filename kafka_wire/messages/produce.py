"""Produce (key 0): a producer writes record batches to partitions and learns their base offsets.

Versions 3-9: v3 is the first with the transactional id and record batch v2 (magic 2), v5 adds the
log start offset to the answer, v8 the per-record errors (KIP-467), v9 is flexible.
"""

from ..schema import INT16, INT32, INT64, RECORDS, STRING, Api, Array, Field

API = Api(
    0, "Produce", versions="3-9", flexible="9+",
    request=[
        Field("transactional_id", STRING, "3+", nullable="3+", default=None),
        Field("acks", INT16),
        Field("timeout_ms", INT32),
        Field("topic_data", Array("TopicProduceData", [
            Field("name", STRING),
            Field("partition_data", Array("PartitionProduceData", [
                Field("index", INT32),
                Field("records", RECORDS, nullable="0+", default=None),
            ])),
        ])),
    ],
    response=[
        Field("responses", Array("TopicProduceResponse", [
            Field("name", STRING),
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
            ])),
        ])),
        Field("throttle_time_ms", INT32, "1+"),
    ],
)
