"""SaslAuthenticate (key 36): one SASL token each way, after a v1 SaslHandshake (KIP-152).

Versions 0-2, flexible from v2; v1 adds the session lifetime (KIP-368 re-authentication, 0 = none).
"""

from ..schema import BYTES, INT16, INT64, STRING, Api, Field

API = Api(
    36, "SaslAuthenticate", versions="0-2", flexible="2+",
    request=[
        Field("auth_bytes", BYTES),
    ],
    response=[
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("auth_bytes", BYTES),
        Field("session_lifetime_ms", INT64, "1+", ignorable=True),
    ],
)
