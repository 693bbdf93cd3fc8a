"""DescribeTransactions (key 65): transactional ids' state as their coordinator holds it (KIP-664).

Version 0, flexible.
"""

from ..schema import INT16, INT32, INT64, STRING, Api, Array, Field

API = Api(
    65, "DescribeTransactions", versions="0", flexible="0+",
    request=[
        Field("transactional_ids", Array(STRING)),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("transaction_states", Array("TransactionState", [
            Field("error_code", INT16),
            Field("transactional_id", STRING),
            Field("transaction_state", STRING),
            Field("transaction_timeout_ms", INT32),
            Field("transaction_start_time_ms", INT64),
            Field("producer_id", INT64),
            Field("producer_epoch", INT16),
            Field("topics", Array("TopicData", [
                Field("topic", STRING),
                Field("partitions", Array(INT32)),
            ])),
        ])),
    ],
)
