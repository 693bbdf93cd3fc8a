"""DescribeDelegationToken (41): the delegation tokens of the given owners (null: everyone's).

As Kafka's KafkaApis.handleDescribeTokensRequest: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED as for
CreateDelegationToken, DELEGATION_TOKEN_AUTH_DISABLED without a secret key, nothing for an empty
owner list. A token is shown (with its HMAC) when one of the owners asked for owns or renews it,
and the caller owns or renews it, or has DESCRIBE on the token (DELEGATION_TOKEN resource) or
DESCRIBE_TOKENS on its owner (USER resource). Expired tokens are shown until they are removed.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from ..security.delegation_tokens import filter_token, split_principal, token_requests_allowed

API = APIS_BY_NAME["DescribeDelegationToken"]


def _principal(principal: str) -> dict:
    kind, name = split_principal(principal)
    return {"principal_type": kind, "principal_name": name}


async def handle(broker: BrokerView, ctx, request):
    if not token_requests_allowed(broker, ctx):
        return {"error_code": int(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), "tokens": [], "throttle_time_ms": 0}
    if not broker.tokens.enabled:
        return {"error_code": int(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED), "tokens": [], "throttle_time_ms": 0}
    if request.owners is not None and not request.owners:
        return {"error_code": 0, "tokens": [], "throttle_time_ms": 0}
    owners = None if request.owners is None else [f"{o.principal_type}:{o.principal_name}" for o in request.owners]

    def eligible(token) -> bool:
        return filter_token(
            ctx.principal, owners, token,
            lambda token_id: broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN,
                                                         token_id),
            lambda owner: broker.authorizer.authorize(ctx, AclOperation.DESCRIBE_TOKENS, ResourceType.USER, owner))

    tokens = []
    for token in broker.tokens.tokens(eligible):
        requester = _principal(token.requester)
        tokens.append({**_principal(token.owner),
                       "token_requester_principal_type": requester["principal_type"],
                       "token_requester_principal_name": requester["principal_name"],
                       "issue_timestamp": token.issue_timestamp, "expiry_timestamp": token.expiry_timestamp,
                       "max_timestamp": token.max_timestamp, "token_id": token.token_id,
                       "hmac": broker.tokens.hmac(token.token_id),
                       "renewers": [_principal(r) for r in token.renewers]})
    return {"error_code": 0, "tokens": tokens, "throttle_time_ms": 0}
