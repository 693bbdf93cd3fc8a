"""CreateDelegationToken (key 38): a delegation token for the caller or another owner (KIP-48,
KIP-373 for owners).

Versions 1-3 (v0 was removed in Kafka 4.0, KIP-896): v1 is the same as v0, v2 is flexible, v3
names the owner in the request and the requester in the answer.
"""

from ..schema import BYTES, INT16, INT32, INT64, STRING, Api, Array, Field

API = Api(
    38, "CreateDelegationToken", versions="1-3", flexible="2+",
    request=[
        Field("owner_principal_type", STRING, "3+", nullable="3+"),
        Field("owner_principal_name", STRING, "3+", nullable="3+"),
        Field("renewers", Array("CreatableRenewers", [
            Field("principal_type", STRING),
            Field("principal_name", STRING),
        ])),
        Field("max_lifetime_ms", INT64),
    ],
    response=[
        Field("error_code", INT16),
        Field("principal_type", STRING),
        Field("principal_name", STRING),
        Field("token_requester_principal_type", STRING, "3+"),
        Field("token_requester_principal_name", STRING, "3+"),
        Field("issue_timestamp_ms", INT64),
        Field("expiry_timestamp_ms", INT64),
        Field("max_timestamp_ms", INT64),
        Field("token_id", STRING),
        Field("hmac", BYTES),
        Field("throttle_time_ms", INT32),
    ],
)
