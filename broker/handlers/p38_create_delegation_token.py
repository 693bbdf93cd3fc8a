"""CreateDelegationToken (38): a delegation token for the caller, or for another owner (KIP-373).

As Kafka's KafkaApis.handleCreateTokenRequest then DelegationTokenControlManager: not from a
PLAINTEXT or one-way SSL connection, nor one that logged in with a token
(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); a token for someone else needs CREATE_TOKENS on that user
(DELEGATION_TOKEN_AUTHORIZATION_FAILED); renewers must be users (INVALID_PRINCIPAL_TYPE);
DELEGATION_TOKEN_AUTH_DISABLED without `delegation.token.secret.key`. The max lifetime is the
request's, capped by `delegation.token.max.lifetime.ms` (<= 0: that default).
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from ..security.delegation_tokens import USER_TYPE, split_principal, token_requests_allowed

API = APIS_BY_NAME["CreateDelegationToken"]


def _answer(error: ErrorCode, owner: str, requester: str, *, timestamps: int = -1, token=None, hmac=b"") -> dict:
    owner_type, owner_name = split_principal(owner)
    requester_type, requester_name = split_principal(requester)
    return {"error_code": int(error), "principal_type": owner_type, "principal_name": owner_name,
            "token_requester_principal_type": requester_type, "token_requester_principal_name": requester_name,
            "issue_timestamp_ms": token.issue_timestamp if token else timestamps,
            "expiry_timestamp_ms": token.expiry_timestamp if token else timestamps,
            "max_timestamp_ms": token.max_timestamp if token else timestamps,
            "token_id": token.token_id if token else "", "hmac": hmac, "throttle_time_ms": 0}


async def handle(broker: BrokerView, ctx, request):
    requester = ctx.principal
    owner = requester
    if request.owner_principal_name:
        owner = f"{request.owner_principal_type}:{request.owner_principal_name}"
    if not token_requests_allowed(broker, ctx):
        return _answer(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, owner, requester)
    if owner != requester and not broker.authorizer.authorize(ctx, AclOperation.CREATE_TOKENS, ResourceType.USER,
                                                              owner):
        return _answer(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, owner, requester)
    if any(r.principal_type != USER_TYPE for r in request.renewers):
        return _answer(ErrorCode.INVALID_PRINCIPAL_TYPE, owner, requester)
    # From here on the answer is the controller's, whose failures leave the timestamps at 0.
    outcome = broker.tokens.create(requester, owner, [f"{r.principal_type}:{r.principal_name}"
                                                      for r in request.renewers], request.max_lifetime_ms)
    if outcome.error != ErrorCode.NONE:
        return _answer(outcome.error, owner, requester, timestamps=0)
    return _answer(ErrorCode.NONE, owner, requester, token=outcome.token, hmac=broker.tokens.hmac(outcome.token.token_id))
