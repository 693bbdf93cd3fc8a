"""SASL mechanisms as sans-io state machines: SCRAM-SHA-256/512 (RFC 5802, RFC 7677) and PLAIN.

The broker feeds each client token to a server object's `step()` and sends back what it returns;
nothing here reads a socket or a file. Credentials are looked up through a callable, so the
store behind them is the caller's business. What a server keeps per user is Kafka's
ScramCredential: salt, iterations, StoredKey and ServerKey, never the password.

    server = ScramServer(SCRAM_SHA_256, lookup=store.scram_credential)
    server_first = server.step(client_first)
    server_final = server.step(client_final)   # raises SaslAuthenticationFailed on a bad proof
    assert server.complete and server.username == "alice"

`ScramClient` is the client side, for our own tools and tests.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Callable


class SaslAuthenticationFailed(Exception):
    """The exchange failed; `client_message` is what the broker may tell the client (Kafka's
    text: it never says whether the user exists)."""

    def __init__(self, reason: str, client_message: str) -> None:
        super().__init__(reason)
        self.client_message = client_message


@dataclass(frozen=True)
class ScramMechanism:
    """One SCRAM variant: its SASL name, hash, and the number Kafka's admin APIs give it."""

    name: str
    hash_name: str
    wire_type: int
    min_iterations: int = 4096
    max_iterations: int = 16384  # Kafka refuses to store credentials with more (KIP-554)

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        """Hi(Normalize(password), salt, i) of RFC 5802 (PBKDF2 with the mechanism's HMAC).
        Kafka does not apply SASLprep, so neither do we: the password's UTF-8 bytes as given."""
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode("utf-8"), salt, iterations)


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", "sha256", 1)
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", "sha512", 2)
SCRAM_MECHANISMS = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
SCRAM_BY_WIRE_TYPE = {m.wire_type: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
PLAIN = "PLAIN"


@dataclass(frozen=True)
class ScramCredential:
    """What the server stores for one user and mechanism (RFC 5802 section 3)."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_salted_password(cls, mechanism: ScramMechanism, salt: bytes, salted_password: bytes,
                             iterations: int) -> ScramCredential:
        client_key = mechanism.hmac(salted_password, b"Client Key")
        return cls(salt, iterations, mechanism.hash(client_key), mechanism.hmac(salted_password, b"Server Key"))

    @classmethod
    def from_password(cls, mechanism: ScramMechanism, password: str, *, salt: bytes | None = None,
                      iterations: int = 4096) -> ScramCredential:
        salt = secrets.token_bytes(32) if salt is None else salt
        salted = mechanism.salted_password(password, salt, iterations)
        return cls.from_salted_password(mechanism, salt, salted, iterations)

    def verify_password(self, mechanism: ScramMechanism, password: str) -> bool:
        """PLAIN checks a password against the SCRAM credential: recompute StoredKey and compare
        in constant time."""
        salted = mechanism.salted_password(password, self.salt, self.iterations)
        client_key = mechanism.hmac(salted, b"Client Key")
        return hmac.compare_digest(mechanism.hash(client_key), self.stored_key)


def invalid_credentials_message(mechanism: str) -> str:
    """Kafka's answer to any failed proof, unknown user or malformed token (SaslServerAuthenticator
    hides the detail so that a client cannot learn which users exist)."""
    return f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"


# ----------------------------------------------------------------------------------------------
# SCRAM messages (RFC 5802 section 7)
# ----------------------------------------------------------------------------------------------


class _Malformed(Exception):
    pass


def _decode_saslname(text: str) -> str:
    """saslname: ',' and '=' are written =2C and =3D; any other '=' is malformed."""
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == ",":
            raise _Malformed("',' in saslname")
        if ch == "=":
            code = text[i + 1 : i + 3]
            if code == "2C":
                out.append(",")
            elif code == "3D":
                out.append("=")
            else:
                raise _Malformed("invalid escape in saslname")
            i += 3
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def encode_saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _valid_nonce(nonce: str) -> bool:
    # printable ASCII except ','
    return bool(nonce) and all(0x21 <= ord(c) <= 0x7E and c != "," for c in nonce)


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise _Malformed("invalid base64") from None


@dataclass(frozen=True)
class ClientFirstMessage:
    gs2_header: str
    authorization_id: str
    username: str
    nonce: str
    extensions: dict[str, str]
    bare: str  # client-first-message-bare: the part the AuthMessage repeats


def parse_client_first(data: bytes) -> ClientFirstMessage:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Malformed("client-first-message is not UTF-8") from None
    parts = text.split(",", 2)
    if len(parts) != 3:
        raise _Malformed("client-first-message has no GS2 header")
    cbind, authzid_part, bare = parts
    # We offer no channel binding: 'n' (client does not support it) or 'y' (client does, but
    # thinks we do not) are the only acceptable flags.
    if cbind not in ("n", "y"):
        raise _Malformed(f"unsupported channel binding flag {cbind!r}")
    if authzid_part == "":
        authzid = ""
    elif authzid_part.startswith("a="):
        authzid = _decode_saslname(authzid_part[2:])
    else:
        raise _Malformed("invalid authzid in GS2 header")
    attrs = bare.split(",")
    if len(attrs) < 2 or not attrs[0].startswith("n=") or not attrs[1].startswith("r="):
        raise _Malformed("client-first-message must start with n= and r=")
    username = _decode_saslname(attrs[0][2:])
    nonce = attrs[1][2:]
    if not _valid_nonce(nonce):
        raise _Malformed("invalid client nonce")
    extensions = {}
    for attr in attrs[2:]:
        key, sep, value = attr.partition("=")
        if not sep or not key:
            raise _Malformed("invalid extension in client-first-message")
        extensions[key] = value
    return ClientFirstMessage(f"{cbind},{authzid_part},", authzid, username, nonce, extensions, bare)


@dataclass(frozen=True)
class ClientFinalMessage:
    channel_binding: bytes
    nonce: str
    proof: bytes
    without_proof: str


def parse_client_final(data: bytes) -> ClientFinalMessage:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Malformed("client-final-message is not UTF-8") from None
    without_proof, sep, proof_text = text.rpartition(",p=")
    if not sep:
        raise _Malformed("client-final-message has no proof")
    attrs = without_proof.split(",")
    if len(attrs) < 2 or not attrs[0].startswith("c=") or not attrs[1].startswith("r="):
        raise _Malformed("client-final-message must start with c= and r=")
    return ClientFinalMessage(_b64decode(attrs[0][2:]), attrs[1][2:], _b64decode(proof_text), without_proof)


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


# ----------------------------------------------------------------------------------------------
# Servers
# ----------------------------------------------------------------------------------------------


class ScramServer:
    """The server side of one SCRAM exchange: two client messages, two answers."""

    def __init__(self, mechanism: ScramMechanism, lookup: Callable[[str], ScramCredential | None],
                 server_nonce: str | None = None,
                 token_lookup: Callable[[str], tuple[ScramCredential, str, int] | None] | None = None) -> None:
        self.mechanism = mechanism
        self.mechanism_name = mechanism.name
        self._lookup = lookup
        # Delegation tokens (KIP-48): with the `tokenauth=true` extension the user name is a token
        # id; `token_lookup` gives the token's credential, its owner (who becomes the principal)
        # and its expiry timestamp (when the session ends).
        self._token_lookup = token_lookup
        self.token_owner: str | None = None
        self.token_expiry_ms: int | None = None
        self._server_nonce = server_nonce or secrets.token_urlsafe(24)
        self._state = "client-first"
        self._client_first: ClientFirstMessage | None = None
        self._server_first = ""
        self._credential: ScramCredential | None = None
        self.username: str | None = None
        self.complete = False

    def _fail(self, reason: str, client_message: str | None = None) -> SaslAuthenticationFailed:
        self._state = "failed"
        self._credential = None
        return SaslAuthenticationFailed(reason, client_message or invalid_credentials_message(self.mechanism_name))

    def step(self, token: bytes) -> bytes:
        if self._state == "client-first":
            return self._on_client_first(token)
        if self._state == "client-final":
            return self._on_client_final(token)
        raise self._fail(f"unexpected SCRAM message in state {self._state}")

    def _on_client_first(self, token: bytes) -> bytes:
        try:
            first = parse_client_first(token)
        except _Malformed as exc:
            raise self._fail(f"invalid client-first-message: {exc}") from None
        if first.extensions.get("tokenauth", "").lower() == "true":
            found = self._token_lookup(first.username) if self._token_lookup is not None else None
            if found is None:
                raise self._fail(f"Token Authentication failed: Invalid tokenId : {first.username}")
            credential, self.token_owner, self.token_expiry_ms = found
        else:
            credential = self._lookup(first.username)
            if credential is None:
                raise self._fail(f"unknown user {first.username!r}")
        if first.authorization_id and first.authorization_id != first.username:
            raise self._fail("authorization id differs from username", "Authentication failed: Client requested "
                             "an authorization id that is different from username")
        if credential.iterations < self.mechanism.min_iterations:
            raise self._fail(f"credential iterations {credential.iterations} below the minimum")
        self._client_first = first
        self._credential = credential
        nonce = first.nonce + self._server_nonce
        salt = base64.b64encode(credential.salt).decode("ascii")
        self._server_first = f"r={nonce},s={salt},i={credential.iterations}"
        self._state = "client-final"
        return self._server_first.encode("ascii")

    def _on_client_final(self, token: bytes) -> bytes:
        first, credential = self._client_first, self._credential
        try:
            final = parse_client_final(token)
        except _Malformed as exc:
            raise self._fail(f"invalid client-final-message: {exc}") from None
        # Kafka's ScramSaslServer only checks that the nonce ends with the server-first-message's:
        # librdkafka before 2.1 sends its own nonce once more in front of it, and Kafka (so we)
        # accepts that; the proof still covers the message exactly as sent.
        if not final.nonce.endswith(first.nonce + self._server_nonce):
            raise self._fail("nonce mismatch in client-final-message")
        if final.channel_binding != first.gs2_header.encode("utf-8"):
            raise self._fail("channel binding does not repeat the GS2 header")
        auth_message = f"{first.bare},{self._server_first},{final.without_proof}".encode("utf-8")
        m = self.mechanism
        client_signature = m.hmac(credential.stored_key, auth_message)
        if len(final.proof) != len(client_signature):
            raise self._fail("client proof has the wrong length")
        client_key = _xor(final.proof, client_signature)
        if not hmac.compare_digest(m.hash(client_key), credential.stored_key):
            raise self._fail("invalid client proof")
        server_signature = m.hmac(credential.server_key, auth_message)
        self.username = first.username
        self.complete = True
        self._state = "complete"
        self._credential = None
        return b"v=" + base64.b64encode(server_signature)


class PlainServer:
    """The server side of SASL/PLAIN (RFC 4616): one message, [authzid] NUL authcid NUL passwd."""

    mechanism_name = PLAIN

    def __init__(self, verify: Callable[[str, str], bool]) -> None:
        self._verify = verify
        self.username: str | None = None
        self.complete = False
        self._used = False

    def step(self, token: bytes) -> bytes:
        if self._used:
            raise SaslAuthenticationFailed("PLAIN takes one message", invalid_credentials_message(PLAIN))
        self._used = True
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationFailed("PLAIN message is not UTF-8", invalid_credentials_message(PLAIN)) from None
        tokens = text.split("\x00")
        if len(tokens) != 3:
            raise SaslAuthenticationFailed(f"PLAIN message has {len(tokens)} tokens, not 3",
                                           invalid_credentials_message(PLAIN))
        authzid, username, password = tokens
        if not username:
            raise SaslAuthenticationFailed("no username", "Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationFailed("no password", "Authentication failed: password not specified")
        if not self._verify(username, password):
            raise SaslAuthenticationFailed(f"bad password for {username!r}",
                                           "Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationFailed("authorization id differs from username", "Authentication failed: "
                                           "Client requested an authorization id that is different from username")
        self.username = username
        self.complete = True
        return b""


# ----------------------------------------------------------------------------------------------
# Client (our tools and tests)
# ----------------------------------------------------------------------------------------------


class ScramClient:
    """The client side of SCRAM: first(), final(server_first), verify(server_final)."""

    def __init__(self, mechanism: ScramMechanism, username: str, password: str, nonce: str | None = None,
                 extensions: dict[str, str] | None = None) -> None:
        self.mechanism = mechanism
        self.username = username
        self.password = password
        self.nonce = nonce or secrets.token_urlsafe(24)
        # Extensions follow the nonce (RFC 5802), e.g. tokenauth=true for a delegation token login.
        extra = "".join(f",{key}={value}" for key, value in (extensions or {}).items())
        self._bare = f"n={encode_saslname(username)},r={self.nonce}{extra}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode("utf-8")

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode("utf-8")
        attrs = dict(a.split("=", 1) for a in text.split(","))
        nonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
        if not nonce.startswith(self.nonce):
            raise ValueError("server nonce does not extend ours")
        if iterations < self.mechanism.min_iterations:
            # As Kafka's ScramSaslClient: a server asking for fewer makes the proof cheap to attack.
            raise ValueError(f"requested iterations {iterations} is less than the minimum "
                             f"{self.mechanism.min_iterations} for {self.mechanism.name}")
        m = self.mechanism
        salted = m.salted_password(self.password, salt, iterations)
        client_key = m.hmac(salted, b"Client Key")
        without_proof = f"c={base64.b64encode(b'n,,').decode()},r={nonce}"
        auth_message = f"{self._bare},{text},{without_proof}".encode("utf-8")
        proof = _xor(client_key, m.hmac(m.hash(client_key), auth_message))
        self._server_signature = m.hmac(m.hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode("utf-8")

    def verify(self, server_final: bytes) -> bool:
        text = server_final.decode("utf-8")
        return text.startswith("v=") and hmac.compare_digest(base64.b64decode(text[2:]), self._server_signature)


def plain_token(username: str, password: str, authorization_id: str = "") -> bytes:
    return f"{authorization_id}\x00{username}\x00{password}".encode("utf-8")
