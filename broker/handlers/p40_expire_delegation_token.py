"""ExpireDelegationToken (40): bring a token's expiry forward to now + the period (never past its
max timestamp); a negative period removes the token at once.

As Kafka's KafkaApis.handleExpireTokenRequest then DelegationTokenControlManager.expireDelegationToken:
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED as for CreateDelegationToken (expiry -1), then
DELEGATION_TOKEN_AUTH_DISABLED, DELEGATION_TOKEN_NOT_FOUND, DELEGATION_TOKEN_OWNER_MISMATCH (only
the owner and the renewers expire), DELEGATION_TOKEN_EXPIRED (unless removing it). Connections that
logged in with a removed or expired token are closed at their next request.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.delegation_tokens import token_requests_allowed

API = APIS_BY_NAME["ExpireDelegationToken"]


async def handle(broker: BrokerView, ctx, request):
    if not token_requests_allowed(broker, ctx):
        return {"error_code": int(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), "expiry_timestamp_ms": -1,
                "throttle_time_ms": 0}
    outcome = broker.tokens.expire(ctx.principal, request.hmac, request.expiry_time_period_ms)
    return {"error_code": int(outcome.error), "expiry_timestamp_ms": outcome.expiry_timestamp, "throttle_time_ms": 0}
