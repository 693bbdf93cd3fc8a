"""DescribeUserScramCredentials (key 50): which SCRAM mechanisms and iterations each user has.

Version 0, flexible (KIP-554). Null or empty `users` describes every user. Mechanisms on the wire:
1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
"""

from ..schema import INT8, INT16, INT32, STRING, Api, Array, Field

API = Api(
    50, "DescribeUserScramCredentials", versions="0", flexible="0+",
    request=[
        Field("users", Array("UserName", [
            Field("name", STRING),
        ]), nullable="0+"),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("results", Array("DescribeUserScramCredentialsResult", [
            Field("user", STRING),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("credential_infos", Array("CredentialInfo", [
                Field("mechanism", INT8),
                Field("iterations", INT32),
            ])),
        ])),
    ],
)
