"""SaslHandshake (key 17): the client names its SASL mechanism; the broker lists the enabled ones.

Versions 0-1, never flexible. v0 is followed by raw SASL tokens (4-byte size, no request header);
v1 by SaslAuthenticate requests carrying the tokens (KIP-152).
"""

from ..schema import INT16, STRING, Api, Array, Field

API = Api(
    17, "SaslHandshake", versions="0-1", flexible=None,
    request=[
        Field("mechanism", STRING),
    ],
    response=[
        Field("error_code", INT16),
        Field("mechanisms", Array(STRING)),
    ],
)
