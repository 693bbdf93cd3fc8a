"""Console logins: on a broker with SASL users, a user name and password checked against the same
SCRAM credentials as a Kafka client's login; the session then acts as `User:<name>` under the
broker's ACLs. Without SASL users everyone is `User:ANONYMOUS`, as on a PLAINTEXT listener.
"""

from __future__ import annotations

import asyncio
import secrets
import time

ANONYMOUS = "User:ANONYMOUS"
COOKIE = "kw_console"
SESSION_SECONDS = 8 * 3600


class Sessions:
    def __init__(self, broker) -> None:
        self.broker = broker
        self._sessions: dict[str, tuple[str, float]] = {}

    def login_required(self) -> bool:
        return bool(self.broker.credentials.users())

    def user_of(self, token: str | None) -> str | None:
        """The logged-in user name for a session cookie, or None."""
        if not token:
            return None
        found = self._sessions.get(token)
        if found is None:
            return None
        user, expires = found
        if expires < time.time():
            del self._sessions[token]
            return None
        return user

    def principal(self, token: str | None) -> str | None:
        """The principal requests run as; None when a login is required and missing."""
        if not self.login_required():
            return ANONYMOUS
        user = self.user_of(token)
        return None if user is None else f"User:{user}"

    async def login(self, username: str, password: str) -> str | None:
        """A new session token when the password is right (PBKDF2 runs off the event loop)."""
        ok = await asyncio.to_thread(self.broker.credentials.verify_plain, username, password)
        if not ok:
            # As a failed SASL login: answered after connection.failed.authentication.delay.ms.
            await asyncio.sleep(int(self.broker.config["connection.failed.authentication.delay.ms"]) / 1000)
            return None
        now = time.time()
        for stale in [t for t, (_, expires) in self._sessions.items() if expires < now]:
            del self._sessions[stale]
        token = secrets.token_urlsafe(32)
        self._sessions[token] = (username, now + SESSION_SECONDS)
        return token

    def logout(self, token: str | None) -> None:
        if token:
            self._sessions.pop(token, None)
