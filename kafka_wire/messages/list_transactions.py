"""ListTransactions (key 66): the transactional ids a coordinator knows (KIP-664).

Versions 0-2, all flexible: v0 filters by state and producer id, v1 by how long the transaction
has been running (KIP-994), v2 by a regular expression over transactional ids (KIP-1152, which
may answer INVALID_REGULAR_EXPRESSION).
"""

from ..schema import INT16, INT32, INT64, STRING, Api, Array, Field

API = Api(
    66, "ListTransactions", versions="0-2", flexible="0+",
    request=[
        Field("state_filters", Array(STRING)),
        Field("producer_id_filters", Array(INT64)),
        Field("duration_filter", INT64, "1+", default=-1),
        Field("transactional_id_pattern", STRING, "2+", nullable="2+", default=None),
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
