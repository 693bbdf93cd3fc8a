"""SaslHandshake (17) outside a SASL exchange: on a listener without SASL, or after authentication.

Before authentication on a SASL listener the server's authenticator (broker/security/
authentication.py) answers SaslHandshake itself; a request that gets here is out of place, and
Kafka answers it ILLEGAL_SASL_STATE (no re-authentication: SessionLifetimeMs is always 0).
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView

API = APIS_BY_NAME["SaslHandshake"]


async def handle(broker: BrokerView, ctx, request):
    return {"error_code": int(ErrorCode.ILLEGAL_SASL_STATE), "mechanisms": []}
