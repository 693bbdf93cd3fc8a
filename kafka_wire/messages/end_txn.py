"""EndTxn (key 26): a transactional producer commits or aborts its transaction.

Versions 0-3: v3 is flexible.
"""

from ..schema import BOOL, INT16, INT32, INT64, STRING, Api, Field

API = Api(
    26, "EndTxn", versions="0-3", flexible="3+",
    request=[
        Field("transactional_id", STRING),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("committed", BOOL),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
    ],
)
