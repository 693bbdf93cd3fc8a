"""Delegation tokens (KIP-48): short-lived credentials a SASL-authenticated user hands to its jobs.

As Kafka's DelegationTokenControlManager and DelegationTokenManager:

- Tokens are on when `delegation.token.secret.key` is set (every broker of a cluster needs the
  same key); otherwise the token APIs answer DELEGATION_TOKEN_AUTH_DISABLED.
- A token is its information (id, owner, requester, renewers, issue, expiry and max timestamps);
  its HMAC, HmacSHA512(secret key, token id), is never stored: it is computed again when a token
  is described or authenticated with. A token's id is a random UUID in Kafka's base64 form.
- Clients log in with SCRAM using the token id as user name, the HMAC in base64 as password and the
  `tokenauth=true` extension; the credential is derived from the HMAC with the mechanism's minimum
  iterations (4096), and the connection's principal is the token's owner. As in Kafka, the session
  lasts until the expiry timestamp the token had at login (Kafka's clients re-authenticate then,
  KIP-368; kafka-wire has no re-authentication and closes the connection at its next request, so
  the client logs in again); removing or renewing the token later does not change that.
- A token expires at its expiry timestamp (issue + `delegation.token.expiry.time.ms`, pushed out
  by renewals, never past issue + its max lifetime, at most `delegation.token.max.lifetime.ms`);
  expired tokens are removed every `delegation.token.expiry.check.interval.ms` and no longer
  authenticate.

Where tokens are kept is the store's business: a JSON file in the first data directory on the
embedded single node (`TokenFile`), ZooKeeper in cluster mode (cluster/zk_delegation_tokens.py).
"""

from __future__ import annotations

import base64
import hashlib
import hmac as hmac_lib
import json
import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kafka_wire.errors import ErrorCode
from kafka_wire.sasl import SCRAM_MECHANISMS, ScramCredential

logger = logging.getLogger("kafka_wire.security")

TOKENS_FILE = "kafka-wire-delegation-tokens.json"
USER_TYPE = "User"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _sum(now: int, duration: int) -> int:
    return min(now + duration, (1 << 63) - 1)


def new_token_id() -> str:
    """Kafka's Uuid.randomUuid().toString(): a random UUID in URL-safe base64 without padding,
    never starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")
        if not text.startswith("-"):
            return text


def split_principal(principal: str) -> tuple[str, str]:
    """("User", "alice") of "User:alice"."""
    kind, _, name = principal.partition(":")
    return kind, name


@dataclass
class TokenInformation:
    token_id: str
    owner: str  # a principal, "User:alice"
    requester: str
    renewers: list[str]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int

    def owner_or_renewer(self, principal: str) -> bool:
        return principal == self.owner or principal in self.renewers

    def expired(self, now: int) -> bool:
        return self.max_timestamp < now or self.expiry_timestamp < now

    def to_json(self) -> dict:
        return {"tokenId": self.token_id, "owner": self.owner, "tokenRequester": self.requester,
                "renewers": list(self.renewers), "issueTimestamp": self.issue_timestamp,
                "maxTimestamp": self.max_timestamp, "expiryTimestamp": self.expiry_timestamp}

    @classmethod
    def from_json(cls, data: dict) -> TokenInformation:
        return cls(data["tokenId"], data["owner"], data.get("tokenRequester", data["owner"]),
                   list(data.get("renewers", [])), int(data["issueTimestamp"]), int(data["maxTimestamp"]),
                   int(data["expiryTimestamp"]))


class TokenFile:
    """The embedded node's tokens: JSON in the data directory (mode 0600), written atomically."""

    def __init__(self, data_dir: str | os.PathLike) -> None:
        self.path = Path(data_dir) / TOKENS_FILE
        self._tokens: dict[str, TokenInformation] = {}
        try:
            data = json.loads(self.path.read_text())
            self._tokens = {t["tokenId"]: TokenInformation.from_json(t) for t in data.get("tokens", [])}
        except FileNotFoundError:
            pass
        except (ValueError, KeyError, TypeError) as exc:
            logger.error("ignoring unreadable %s: %s", self.path, exc)

    def tokens(self) -> dict[str, TokenInformation]:
        return self._tokens

    def put(self, token: TokenInformation) -> None:
        self._tokens[token.token_id] = token
        self._save()

    def remove(self, token_id: str) -> None:
        if self._tokens.pop(token_id, None) is not None:
            self._save()

    def _save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"version": 1, "tokens": [t.to_json() for t in self._tokens.values()]}, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


@dataclass
class Outcome:
    error: ErrorCode
    token: TokenInformation | None = None
    expiry_timestamp: int = 0


@dataclass
class DelegationTokenManager:
    secret_key: str | None
    max_lifetime_ms: int
    expiry_time_ms: int
    store: object  # tokens() -> {id: TokenInformation}, put(token), remove(id)
    clock_ms: Callable[[], int] = _now_ms
    _credentials: dict[tuple[str, str, int], ScramCredential] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config, store) -> DelegationTokenManager:
        return cls(config["delegation.token.secret.key"] or None, int(config["delegation.token.max.lifetime.ms"]),
                   int(config["delegation.token.expiry.time.ms"]), store)

    @property
    def enabled(self) -> bool:
        return self.secret_key is not None

    def hmac(self, token_id: str) -> bytes:
        return hmac_lib.new(self.secret_key.encode("utf-8"), token_id.encode("utf-8"), hashlib.sha512).digest()

    def _by_hmac(self, given: bytes) -> TokenInformation | None:
        for token in self.store.tokens().values():
            if hmac_lib.compare_digest(self.hmac(token.token_id), bytes(given)):
                return token
        return None

    # -- the controller's decisions (DelegationTokenControlManager) ---------------------------------

    def create(self, requester: str, owner: str, renewers: list[str], max_lifetime_ms: int) -> Outcome:
        if not self.enabled:
            return Outcome(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        now = self.clock_ms()
        lifetime = min(self.max_lifetime_ms, max_lifetime_ms) if max_lifetime_ms > 0 else self.max_lifetime_ms
        max_timestamp = _sum(now, lifetime)
        token = TokenInformation(new_token_id(), owner, requester, list(renewers), now, max_timestamp,
                                 min(max_timestamp, _sum(now, self.expiry_time_ms)))
        self.store.put(token)
        logger.info("created delegation token %s for %s (requested by %s)", token.token_id, owner, requester)
        return Outcome(ErrorCode.NONE, token, token.expiry_timestamp)

    def renew(self, principal: str, given_hmac: bytes, renew_period_ms: int) -> Outcome:
        if not self.enabled:
            return Outcome(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        token = self._by_hmac(given_hmac)
        if token is None:
            return Outcome(ErrorCode.DELEGATION_TOKEN_NOT_FOUND)
        now = self.clock_ms()
        if token.expired(now):
            return Outcome(ErrorCode.DELEGATION_TOKEN_EXPIRED)
        if not token.owner_or_renewer(principal):
            return Outcome(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        period = min(self.expiry_time_ms, renew_period_ms) if renew_period_ms > 0 else self.expiry_time_ms
        token.expiry_timestamp = min(token.max_timestamp, now + period)
        self.store.put(token)
        return Outcome(ErrorCode.NONE, token, token.expiry_timestamp)

    def expire(self, principal: str, given_hmac: bytes, expiry_period_ms: int) -> Outcome:
        if not self.enabled:
            return Outcome(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        token = self._by_hmac(given_hmac)
        if token is None:
            return Outcome(ErrorCode.DELEGATION_TOKEN_NOT_FOUND)
        if not token.owner_or_renewer(principal):
            return Outcome(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        now = self.clock_ms()
        if expiry_period_ms < 0:  # expire now: the token goes
            self.store.remove(token.token_id)
            logger.info("expired delegation token %s", token.token_id)
            return Outcome(ErrorCode.NONE, token, now)
        if token.expired(now):
            return Outcome(ErrorCode.DELEGATION_TOKEN_EXPIRED)
        token.expiry_timestamp = min(token.max_timestamp, _sum(now, expiry_period_ms))
        self.store.put(token)
        return Outcome(ErrorCode.NONE, token, token.expiry_timestamp)

    def sweep_expired(self) -> int:
        """Remove the expired tokens (Kafka's sweepExpiredDelegationTokens); how many went."""
        now = self.clock_ms()
        expired = [t for t in self.store.tokens().values() if t.expired(now)]
        for token in expired:
            logger.info("delegation token %s of %s expired", token.token_id, token.owner)
            self.store.remove(token.token_id)
        return len(expired)

    def tokens(self, eligible: Callable[[TokenInformation], bool]) -> list[TokenInformation]:
        return [t for t in self.store.tokens().values() if eligible(t)]

    # -- authentication (ScramServerCallbackHandler's token callback) --------------------------------

    def scram_lookup(self, mechanism_name: str) -> Callable[[str], tuple[ScramCredential, str, int] | None]:
        """For ScramServer: a token id -> (its SCRAM credential, its owner's name, its expiry
        timestamp), or None when there is no such token (or it expired, or tokens are off)."""
        mechanism = SCRAM_MECHANISMS[mechanism_name]

        def lookup(token_id: str):
            token = self.store.tokens().get(token_id) if self.enabled else None
            if token is None or token.expired(self.clock_ms()):
                return None
            key = (token_id, mechanism_name, token.issue_timestamp)
            credential = self._credentials.get(key)
            if credential is None:
                password = base64.b64encode(self.hmac(token_id)).decode("ascii")
                credential = ScramCredential.from_password(mechanism, password, iterations=mechanism.min_iterations)
                self._credentials[key] = credential
            return credential, split_principal(token.owner)[1], token.expiry_timestamp

        return lookup


def filter_token(requester: str, owners: list[str] | None, token: TokenInformation,
                 authorize_token: Callable[[str], bool], authorize_requester: Callable[[str], bool]) -> bool:
    """Kafka's DelegationTokenManager.filterToken: which tokens DescribeDelegationToken shows."""
    if owners is not None and not any(token.owner_or_renewer(owner) for owner in owners):
        return False
    if token.owner_or_renewer(requester):
        return True
    return authorize_token(token.token_id) or authorize_requester(token.owner)


def token_requests_allowed(broker, ctx) -> bool:
    """Kafka's KafkaApis.allowTokenRequests: not over PLAINTEXT, not over one-way SSL (no client
    certificate), not from a connection that logged in with a token."""
    protocol = broker.config.security_protocol(ctx.listener)
    if ctx.extra.get("token_authenticated") or protocol == "PLAINTEXT":
        return False
    return not (protocol == "SSL" and ctx.principal == "User:ANONYMOUS")
