"""InitProducerId (key 22): a producer id and epoch for an idempotent or transactional producer.

Versions 0-5: v2 is flexible, v3 lets a producer pass its current id and epoch to bump the epoch
instead of starting over (KIP-360), v4 may answer PRODUCER_FENCED, v5 TRANSACTION_ABORTABLE (KIP-890;
the same bytes). v6 (KIP-939 two-phase commit) is not stable in Kafka 4.3, which serves 0-5.
"""

from ..schema import INT16, INT32, INT64, STRING, Api, Field

API = Api(
    22, "InitProducerId", versions="0-5", flexible="2+",
    request=[
        Field("transactional_id", STRING, nullable="0+"),
        Field("transaction_timeout_ms", INT32),
        Field("producer_id", INT64, "3+", default=-1),
        Field("producer_epoch", INT16, "3+", default=-1),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("producer_id", INT64, default=-1),
        Field("producer_epoch", INT16),
    ],
)
