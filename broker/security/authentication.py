"""One connection's SASL exchange on a SASL_PLAINTEXT or SASL_SSL listener, before any other request.

It follows Kafka's SaslServerAuthenticator, fed whole frames by the server:

- first ApiVersions (at most once; the server's dispatcher answers it) and/or SaslHandshake; any
  other request closes the connection unanswered;
- SaslHandshake names a mechanism: an enabled one is accepted (the answer lists the enabled
  mechanisms, in the order Kafka's HashSet of them iterates); any other is answered
  UNSUPPORTED_SASL_MECHANISM and the connection closed;
- after SaslHandshake v1, tokens come in SaslAuthenticate requests (KIP-152); after v0, as raw
  frames (4-byte size and the token, no request header) and are answered the same way; another
  request there is answered with its error response (ILLEGAL_SASL_STATE: SaslHandshake, ApiVersions,
  Metadata) or not at all, and the connection closed;
- a failed exchange is answered SASL_AUTHENTICATION_FAILED with Kafka's message, after
  `connection.failed.authentication.delay.ms`, and the connection closed (a raw-token exchange
  is just closed: that framing has no place for an error);
- once complete, the connection's principal is User:<name> and requests go to the handlers; a
  SCRAM login with a delegation token (`tokenauth=true`) is its owner's, and `token_id` says so.

Frames are capped at `sasl.server.max.receive.size` until then. No re-authentication (KIP-368):
SessionLifetimeMs is 0, so clients never start one.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from enum import Enum
from typing import Callable

from kafka_wire.errors import ErrorCode
from kafka_wire.framing import encode_response_frame, size_prefixed
from kafka_wire.headers import API_VERSIONS_KEY, decode_request_header, peek_api
from kafka_wire.messages import APIS, APIS_BY_NAME
from kafka_wire.primitives import DecodeError
from kafka_wire.sasl import PLAIN, SCRAM_MECHANISMS, PlainServer, SaslAuthenticationFailed, ScramServer

logger = logging.getLogger("kafka_wire.security")

SASL_HANDSHAKE = APIS_BY_NAME["SaslHandshake"]
SASL_AUTHENTICATE = APIS_BY_NAME["SaslAuthenticate"]


class SaslState(Enum):
    INITIAL_REQUEST = "initial"               # ApiVersions or SaslHandshake
    HANDSHAKE_OR_VERSIONS_REQUEST = "either"  # an ApiVersions was answered UNSUPPORTED_VERSION
    HANDSHAKE_REQUEST = "handshake"           # after ApiVersions: SaslHandshake only
    AUTHENTICATE = "authenticate"             # SASL tokens
    COMPLETE = "complete"
    FAILED = "failed"


@dataclass(frozen=True)
class Step:
    """What the server does with one frame: answer it itself (`dispatch`), send `reply` (size
    prefix included), close (after the reply; `delay` seconds first when authentication failed)."""

    reply: bytes | None = None
    dispatch: bool = False
    close: bool = False
    delay: float = 0.0


CLOSE = Step(close=True)
DISPATCH = Step(dispatch=True)


def _java_string_hash(text: str) -> int:
    units = text.encode("utf-16-be")
    h = 0
    for (unit,) in struct.iter_unpack(">H", units):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h


def hash_set_order(names) -> list[str]:
    """The enabled mechanisms in the order SaslHandshake lists them: Kafka's SaslServerAuthenticator
    copies sasl.enabled.mechanisms through a java.util.HashSet, so clients see them in that set's
    iteration order (bucket of String.hashCode spread as HashMap.hash, then insertion order), not
    in the configured order ("SCRAM-SHA-256,PLAIN" is answered [PLAIN, SCRAM-SHA-256])."""
    unique = list(dict.fromkeys(names))
    wanted = max(int(len(unique) / 0.75) + 1, 16)  # new HashSet<>(collection)'s initial capacity
    capacity = 1 << (wanted - 1).bit_length()  # HashMap.tableSizeFor

    def bucket(name: str) -> int:
        h = _java_string_hash(name)
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(unique, key=bucket)  # stable: one bucket's entries keep their insertion order


def _response_frame(api, version: int, correlation_id: int, body: dict) -> bytes:
    return b"".join(encode_response_frame(api, version, correlation_id, body))


# Kafka's SaslServerAuthenticator answers a request other than SaslAuthenticate that comes after
# SaslHandshake with that request's error response (AbstractRequest.getErrorResponse with
# ILLEGAL_SASL_STATE), then closes the connection. The answers of the requests a confused client sends
# there, as Kafka 4.3 gives them; any other request is closed unanswered (OPEN in the conformance suite).
_ILLEGAL_STATE = int(ErrorCode.ILLEGAL_SASL_STATE)
_ILLEGAL_STATE_ANSWERS: dict[str, Callable] = {
    "SaslHandshake": lambda request: {"error_code": _ILLEGAL_STATE, "mechanisms": []},
    "ApiVersions": lambda request: {"error_code": _ILLEGAL_STATE},
    "Metadata": lambda request: {"topics": [
        {"name": topic.name or "", "error_code": _ILLEGAL_STATE, "is_internal": False, "partitions": [],
         **({"topic_id": topic.topic_id} if getattr(topic, "topic_id", None) is not None else {})}
        for topic in request.topics or ()]},
}


def _illegal_state_answer(api_key: int, version: int, correlation_id: int, frame) -> bytes | None:
    api = APIS.get(api_key)
    if api is None or api.name not in _ILLEGAL_STATE_ANSWERS or not api.supports(version):
        return None
    _, pos = decode_request_header(frame, api.is_flexible(version))
    request = api.request.decode(frame, version, pos, exact=False)
    return _response_frame(api, version, correlation_id, _ILLEGAL_STATE_ANSWERS[api.name](request))


class SaslAuthenticator:
    """The server side of SASL for one connection; `receive(frame)` says what to do with it."""

    def __init__(self, mechanisms: list[str], credentials, *, api_versions_supported: Callable[[int], bool],
                 max_receive_size: int = 524288, failed_authentication_delay_ms: int = 100,
                 connection: str = "", tokens=None) -> None:
        self.mechanisms = hash_set_order(mechanisms)
        self.credentials = credentials
        self.tokens = tokens  # delegation tokens (security/delegation_tokens.py), for SCRAM
        self.api_versions_supported = api_versions_supported
        self.max_receive_size = max_receive_size
        self.failure_delay = failed_authentication_delay_ms / 1000
        self.connection = connection
        self.state = SaslState.INITIAL_REQUEST
        self.raw_tokens = False
        self.mechanism: str | None = None
        self.principal: str | None = None
        # The delegation token the connection logged in with (SCRAM with tokenauth=true), if any,
        # and its expiry timestamp then: the session ends there.
        self.token_id: str | None = None
        self.token_expiry_ms: int | None = None
        self._server = None

    @property
    def complete(self) -> bool:
        return self.state == SaslState.COMPLETE

    def receive(self, frame) -> Step:
        """Handle one frame (without its size prefix) received before authentication completed."""
        try:
            if self.state in (SaslState.INITIAL_REQUEST, SaslState.HANDSHAKE_OR_VERSIONS_REQUEST,
                              SaslState.HANDSHAKE_REQUEST):
                return self._kafka_request(frame)
            if self.state == SaslState.AUTHENTICATE:
                return self._raw_token(bytes(frame)) if self.raw_tokens else self._authenticate_request(frame)
        except (DecodeError, ValueError) as exc:
            logger.info("closing connection %s during SASL authentication: malformed request: %s", self.connection, exc)
        self.state = SaslState.FAILED
        return CLOSE

    def _kafka_request(self, frame) -> Step:
        api_key, version, correlation_id = peek_api(frame)
        if api_key == API_VERSIONS_KEY:
            if self.state == SaslState.HANDSHAKE_REQUEST:
                logger.info("closing connection %s: a second ApiVersions request before SaslHandshake", self.connection)
                self.state = SaslState.FAILED
                return CLOSE
            self.state = (SaslState.HANDSHAKE_REQUEST if self.api_versions_supported(version)
                          else SaslState.HANDSHAKE_OR_VERSIONS_REQUEST)
            return DISPATCH
        if api_key != SASL_HANDSHAKE.key or not SASL_HANDSHAKE.supports(version):
            logger.info("closing connection %s: API key %d v%d during SASL handshake (the client may be configured "
                     "with the wrong security protocol)", self.connection, api_key, version)
            self.state = SaslState.FAILED
            return CLOSE
        _, pos = decode_request_header(frame, SASL_HANDSHAKE.is_flexible(version))
        request = SASL_HANDSHAKE.request.decode(frame, version, pos, exact=False)
        if request.mechanism not in self.mechanisms:
            logger.info("closing connection %s: SASL mechanism %r is not enabled (%s)", self.connection,
                     request.mechanism, ",".join(self.mechanisms))
            self.state = SaslState.FAILED
            reply = _response_frame(SASL_HANDSHAKE, version, correlation_id, {
                "error_code": int(ErrorCode.UNSUPPORTED_SASL_MECHANISM), "mechanisms": self.mechanisms})
            return Step(reply=reply, close=True)
        self.mechanism = request.mechanism
        self.raw_tokens = version == 0
        if self.mechanism == PLAIN:
            self._server = PlainServer(self.credentials.verify_plain)
        else:
            self._server = ScramServer(SCRAM_MECHANISMS[self.mechanism], self.credentials.lookup(self.mechanism),
                                       token_lookup=self.tokens.scram_lookup(self.mechanism) if self.tokens else None)
        self.state = SaslState.AUTHENTICATE
        return Step(reply=_response_frame(SASL_HANDSHAKE, version, correlation_id,
                                          {"error_code": 0, "mechanisms": self.mechanisms}))

    def _authenticate_request(self, frame) -> Step:
        api_key, version, correlation_id = peek_api(frame)
        if api_key != SASL_AUTHENTICATE.key or not SASL_AUTHENTICATE.supports(version):
            logger.info("closing connection %s: API key %d v%d during SASL authentication", self.connection,
                     api_key, version)
            self.state = SaslState.FAILED
            reply = _illegal_state_answer(api_key, version, correlation_id, frame)
            return Step(reply=reply, close=True, delay=self.failure_delay) if reply else CLOSE
        _, pos = decode_request_header(frame, SASL_AUTHENTICATE.is_flexible(version))
        request = SASL_AUTHENTICATE.request.decode(frame, version, pos, exact=False)
        try:
            token = self._server.step(request.auth_bytes)
        except SaslAuthenticationFailed as failure:
            logger.info("failed authentication with %s from connection %s: %s", self.mechanism, self.connection, failure)
            self.state = SaslState.FAILED
            reply = _response_frame(SASL_AUTHENTICATE, version, correlation_id, {
                "error_code": int(ErrorCode.SASL_AUTHENTICATION_FAILED), "error_message": failure.client_message,
                "auth_bytes": b"", "session_lifetime_ms": 0})
            return Step(reply=reply, close=True, delay=self.failure_delay)
        self._check_complete()
        return Step(reply=_response_frame(SASL_AUTHENTICATE, version, correlation_id, {
            "error_code": 0, "error_message": "", "auth_bytes": token, "session_lifetime_ms": 0}))

    def _raw_token(self, token: bytes) -> Step:
        try:
            answer = self._server.step(token)
        except SaslAuthenticationFailed as failure:
            logger.info("failed authentication with %s from connection %s: %s", self.mechanism, self.connection, failure)
            self.state = SaslState.FAILED
            return Step(close=True, delay=self.failure_delay)
        self._check_complete()
        return Step(reply=size_prefixed(answer))

    def _check_complete(self) -> None:
        if self._server.complete:
            owner = getattr(self._server, "token_owner", None)
            if owner is not None:
                self.token_id = self._server.username
                self.token_expiry_ms = self._server.token_expiry_ms
            self.principal = f"User:{owner if owner is not None else self._server.username}"
            self.state = SaslState.COMPLETE
            self._server = None
            logger.debug("connection %s authenticated as %s with %s", self.connection, self.principal, self.mechanism)
