"""SaslAuthenticate (36) outside a SASL exchange: ILLEGAL_SASL_STATE, with Kafka's message.

During authentication the server's authenticator handles SaslAuthenticate; see p17_sasl_handshake.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView

API = APIS_BY_NAME["SaslAuthenticate"]


async def handle(broker: BrokerView, ctx, request):
    return {"error_code": int(ErrorCode.ILLEGAL_SASL_STATE),
            "error_message": "SaslAuthenticate request received after successful authentication",
            "auth_bytes": b"", "session_lifetime_ms": 0}
