"""DescribeDelegationToken (key 41): the delegation tokens of some owners (null: every owner).

Versions 1-3 (v0 was removed in Kafka 4.0): v1 is the same as v0, v2 is flexible, v3 answers
each token's requester.
"""

from ..schema import BYTES, INT16, INT32, INT64, STRING, Api, Array, Field

API = Api(
    41, "DescribeDelegationToken", versions="1-3", flexible="2+",
    request=[
        Field("owners", Array("DescribeDelegationTokenOwner", [
            Field("principal_type", STRING),
            Field("principal_name", STRING),
        ]), nullable="0+"),
    ],
    response=[
        Field("error_code", INT16),
        Field("tokens", Array("DescribedDelegationToken", [
            Field("principal_type", STRING),
            Field("principal_name", STRING),
            Field("token_requester_principal_type", STRING, "3+"),
            Field("token_requester_principal_name", STRING, "3+"),
            Field("issue_timestamp", INT64),
            Field("expiry_timestamp", INT64),
            Field("max_timestamp", INT64),
            Field("token_id", STRING),
            Field("hmac", BYTES),
            Field("renewers", Array("DescribedDelegationTokenRenewer", [
                Field("principal_type", STRING),
                Field("principal_name", STRING),
            ])),
        ])),
        Field("throttle_time_ms", INT32),
    ],
)
