"""AddOffsetsToTxn (key 25): a transactional producer adds a group's offsets to its transaction.

Versions 0-4: v3 is flexible, v4 may answer TRANSACTION_ABORTABLE (KIP-890; the same bytes). A
transaction.version 2 client does not send it: its TxnOffsetCommit v5 adds the group's partition.
"""

from ..schema import INT16, INT32, INT64, STRING, Api, Field

API = Api(
    25, "AddOffsetsToTxn", versions="0-4", flexible="3+",
    request=[
        Field("transactional_id", STRING),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("group_id", STRING),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
    ],
)
