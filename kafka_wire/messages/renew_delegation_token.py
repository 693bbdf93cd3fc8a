"""RenewDelegationToken (key 39): push a delegation token's expiry out, up to its max lifetime.

Versions 1-2 (v0 was removed in Kafka 4.0): v1 is the same as v0, v2 is flexible.
"""

from ..schema import BYTES, INT16, INT32, INT64, Api, Field

API = Api(
    39, "RenewDelegationToken", versions="1-2", flexible="2+",
    request=[
        Field("hmac", BYTES),
        Field("renew_period_ms", INT64),
    ],
    response=[
        Field("error_code", INT16),
        Field("expiry_timestamp_ms", INT64),
        Field("throttle_time_ms", INT32),
    ],
)
