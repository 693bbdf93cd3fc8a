"""DescribeProducers (key 61): the active producers of partitions (KIP-664).

Version 0, flexible.
"""

from ..schema import INT16, INT32, INT64, STRING, Api, Array, Field

API = Api(
    61, "DescribeProducers", versions="0", flexible="0+",
    request=[
        Field("topics", Array("TopicRequest", [
            Field("name", STRING),
            Field("partition_indexes", Array(INT32)),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("topics", Array("TopicResponse", [
            Field("name", STRING),
            Field("partitions", Array("PartitionResponse", [
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
                Field("active_producers", Array("ProducerState", [
                    Field("producer_id", INT64),
                    Field("producer_epoch", INT32),
                    Field("last_sequence", INT32, default=-1),
                    Field("last_timestamp", INT64, default=-1),
                    Field("coordinator_epoch", INT32),
                    Field("current_txn_start_offset", INT64, default=-1),
                ])),
            ])),
        ])),
    ],
)
