"""ListTransactions (key 66): the transactional ids a coordinator knows (KIP-664).

Version 0, flexible; filters by state and producer id.
"""

from ..schema import INT16, INT32, INT64, STRING, Api, Array, Field

API = Api(
    66, "ListTransactions", versions="0", flexible="0+",
    request=[
        Field("state_filters", Array(STRING)),
        Field("producer_id_filters", Array(INT64)),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("unknown_state_filters", Array(STRING)),
        Field("transaction_states", Array("TransactionState", [
            Field("transactional_id", STRING),
            Field("producer_id", INT64),
            Field("transaction_state", STRING),
        ])),
    ],
)
