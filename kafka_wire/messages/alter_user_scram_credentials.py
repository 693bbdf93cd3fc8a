"""AlterUserScramCredentials (key 51): upsert or delete users' SCRAM credentials (KIP-554).

Version 0, flexible. An upsertion carries the salt and the salted password (the client runs the
PBKDF2 step), never the password itself.
"""

from ..schema import BYTES, INT8, INT16, INT32, STRING, Api, Array, Field

API = Api(
    51, "AlterUserScramCredentials", versions="0", flexible="0+",
    request=[
        Field("deletions", Array("ScramCredentialDeletion", [
            Field("name", STRING),
            Field("mechanism", INT8),
        ])),
        Field("upsertions", Array("ScramCredentialUpsertion", [
            Field("name", STRING),
            Field("mechanism", INT8),
            Field("iterations", INT32),
            Field("salt", BYTES),
            Field("salted_password", BYTES),
        ])),
    ],
    response=[
        Field("throttle_time_ms", INT32),
        Field("results", Array("AlterUserScramCredentialsResult", [
            Field("user", STRING),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
        ])),
    ],
)
