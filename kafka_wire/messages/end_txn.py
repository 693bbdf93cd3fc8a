"""EndTxn (key 26): a transactional producer commits or aborts its transaction.

Versions 0-5: v2 may answer PRODUCER_FENCED, v3 is flexible, v4 may answer TRANSACTION_ABORTABLE,
v5 is transaction.version 2 (KIP-890 part 2): every commit and abort bumps the producer epoch, and
the answer carries the producer id and epoch to go on with.
"""

from ..schema import BOOL, INT16, INT32, INT64, STRING, Api, Field

API = Api(
    26, "EndTxn", versions="0-5", flexible="3+",
    request=[
        Field("transactional_id", STRING),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("committed", BOOL),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("producer_id", INT64, "5+", default=-1, ignorable=True),
        Field("producer_epoch", INT16, "5+", default=-1, ignorable=True),
    ],
)
