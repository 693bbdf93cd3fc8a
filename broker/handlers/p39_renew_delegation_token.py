"""RenewDelegationToken (39): push a token's expiry out by the renew period (capped by
`delegation.token.expiry.time.ms`; <= 0: that default), never past its max timestamp.

As Kafka's KafkaApis.handleRenewTokenRequest then DelegationTokenControlManager.renewDelegationToken:
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED as for CreateDelegationToken (expiry -1), then
DELEGATION_TOKEN_AUTH_DISABLED, DELEGATION_TOKEN_NOT_FOUND (no token has this HMAC),
DELEGATION_TOKEN_EXPIRED, DELEGATION_TOKEN_OWNER_MISMATCH (only the owner and the renewers renew).
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.delegation_tokens import token_requests_allowed

API = APIS_BY_NAME["RenewDelegationToken"]


async def handle(broker: BrokerView, ctx, request):
    if not token_requests_allowed(broker, ctx):
        return {"error_code": int(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), "expiry_timestamp_ms": -1,
                "throttle_time_ms": 0}
    outcome = broker.tokens.renew(ctx.principal, request.hmac, request.renew_period_ms)
    return {"error_code": int(outcome.error), "expiry_timestamp_ms": outcome.expiry_timestamp, "throttle_time_ms": 0}
