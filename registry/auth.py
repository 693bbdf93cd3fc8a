"""Who may use the Schema Registry: on a broker with SASL users (SCRAM credentials, as the console
decides) every request carries HTTP basic auth (`Authorization: Basic base64(user:password)`, what
confluent-kafka's SchemaRegistryClient sends with `basic.auth.user.info`, and Java's serializers with
`basic.auth.credentials.source=USER_INFO`), checked against the same credentials as a Kafka client's
SASL/PLAIN or SCRAM login. A missing or wrong one is answered 401 with a `WWW-Authenticate: Basic`
challenge, after connection.failed.authentication.delay.ms as a failed SASL login is. A broker without
SASL users serves everyone as `User:ANONYMOUS`, as a PLAINTEXT listener does.

A right password is remembered for VERIFIED_SECONDS (as a digest of user and password, never the
password), so a client's every request does not cost a PBKDF2 derivation; a password changed or a user
deleted is refused at the latest that much later. What an authenticated user may do is the
broker's ACLs' say (registry/acls.py).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import time

ANONYMOUS = "User:ANONYMOUS"
VERIFIED_SECONDS = 10.0
REALM = "kafka-wire Schema Registry"
CHALLENGE = f'Basic realm="{REALM}"'


class BasicAuth:
    def __init__(self, broker) -> None:
        self.broker = broker
        self._verified: dict[bytes, float] = {}

    def required(self) -> bool:
        return bool(self.broker.credentials.users())

    async def principal(self, headers: dict[str, str]) -> str | None:
        """The principal the request runs as; None when it must be refused with 401."""
        if not self.required():
            return ANONYMOUS
        credentials = _basic_credentials(headers.get("authorization", ""))
        if credentials is None:
            return None
        user, password = credentials
        digest = hashlib.sha256(user.encode() + b"\0" + password.encode()).digest()
        now = time.monotonic()
        if self._verified.get(digest, 0.0) > now:
            return f"User:{user}"
        if await asyncio.to_thread(self.broker.credentials.verify_plain, user, password):
            for stale in [d for d, until in self._verified.items() if until <= now]:
                del self._verified[stale]
            self._verified[digest] = now + VERIFIED_SECONDS
            return f"User:{user}"
        await asyncio.sleep(int(self.broker.config["connection.failed.authentication.delay.ms"]) / 1000)
        return None


def _basic_credentials(header: str) -> tuple[str, str] | None:
    scheme, _, encoded = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    user, separator, password = decoded.partition(":")
    if not separator or not user:
        return None
    return user, password
