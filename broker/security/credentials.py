"""The SCRAM credential store: per user and mechanism the salt, iterations, StoredKey and ServerKey.

Kept as JSON in the first data directory (`kafka-wire-scram-credentials.json`, mode 0600),
written atomically. Passwords are never stored: SCRAM needs only StoredKey and ServerKey, and PLAIN
is checked by recomputing StoredKey from the offered password with the stored salt. The broker
re-reads the file when it changes, so `kafka-wire users add` on a running broker's data directory
takes effect for the next login.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import secrets
import threading
from pathlib import Path

from kafka_wire.sasl import SCRAM_MECHANISMS, SCRAM_SHA_256, ScramCredential, ScramMechanism

logger = logging.getLogger("kafka_wire.security")

CREDENTIALS_FILE = "kafka-wire-scram-credentials.json"
FORMAT_VERSION = 1


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class CredentialStore:
    """Users' SCRAM credentials, persisted in `data_dir`."""

    def __init__(self, data_dir: str | os.PathLike) -> None:
        self.path = Path(data_dir) / CREDENTIALS_FILE
        # {user: {mechanism name: ScramCredential}}
        self._users: dict[str, dict[str, ScramCredential]] = {}
        self._file_stamp: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self._loaded = False
        self._reload_if_changed()
        self._loaded = True
        # PLAIN answers an unknown user after the same work as a known one (no timing oracle).
        self._decoy = ScramCredential.from_password(SCRAM_SHA_256, secrets.token_hex(16))

    # -- reading -------------------------------------------------------------------------------

    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return st.st_mtime_ns, st.st_size

    def _reload_if_changed(self) -> None:
        stamp = self._stamp()
        if stamp == self._file_stamp:
            return
        users: dict[str, dict[str, ScramCredential]] = {}
        if stamp is not None:
            try:
                data = json.loads(self.path.read_text())
                for user, mechanisms in data.get("users", {}).items():
                    users[user] = {
                        name: ScramCredential(base64.b64decode(c["salt"]), int(c["iterations"]),
                                              base64.b64decode(c["stored_key"]), base64.b64decode(c["server_key"]))
                        for name, c in mechanisms.items() if name in SCRAM_MECHANISMS
                    }
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                if not self._loaded:
                    raise ValueError(f"unreadable credential store {self.path}: {exc}") from None
                # A broken edit must not lock everyone out: keep what we had.
                logger.error("ignoring unreadable credential store %s: %s", self.path, exc)
                self._file_stamp = stamp
                return
        self._users = users
        self._file_stamp = stamp

    def scram_credential(self, mechanism: str, username: str) -> ScramCredential | None:
        self._reload_if_changed()
        return self._users.get(username, {}).get(mechanism)

    def lookup(self, mechanism: str):
        """A `username -> ScramCredential | None` callable for kafka_wire.sasl.ScramServer."""
        return lambda username: self.scram_credential(mechanism, username)

    def verify_plain(self, username: str, password: str) -> bool:
        """PLAIN: the password is right when it reproduces a stored SCRAM credential's StoredKey."""
        self._reload_if_changed()
        stored = self._users.get(username)
        if not stored:
            self._decoy.verify_password(SCRAM_SHA_256, password)
            return False
        name, credential = sorted(stored.items())[0]
        return credential.verify_password(SCRAM_MECHANISMS[name], password)

    def users(self) -> dict[str, dict[str, int]]:
        """{user: {mechanism: iterations}} for every user with a credential."""
        self._reload_if_changed()
        return {user: {name: c.iterations for name, c in sorted(mechs.items())}
                for user, mechs in sorted(self._users.items()) if mechs}

    # -- writing -------------------------------------------------------------------------------

    def upsert(self, username: str, mechanism: ScramMechanism, credential: ScramCredential) -> None:
        with self._lock:
            self._reload_if_changed()
            self._users.setdefault(username, {})[mechanism.name] = credential
            self._save()

    def set_password(self, username: str, password: str, mechanism: ScramMechanism,
                     iterations: int = 4096) -> None:
        self.upsert(username, mechanism, ScramCredential.from_password(mechanism, password, iterations=iterations))

    def delete(self, username: str, mechanism: ScramMechanism) -> bool:
        """Remove one credential; False when the user had none for that mechanism."""
        with self._lock:
            self._reload_if_changed()
            mechs = self._users.get(username, {})
            if mechanism.name not in mechs:
                return False
            del mechs[mechanism.name]
            if not mechs:
                del self._users[username]
            self._save()
            return True

    def _save(self) -> None:
        data = {
            "version": FORMAT_VERSION,
            "users": {
                user: {name: {"salt": _b64(c.salt), "iterations": c.iterations,
                              "stored_key": _b64(c.stored_key), "server_key": _b64(c.server_key)}
                       for name, c in sorted(mechs.items())}
                for user, mechs in sorted(self._users.items())
            },
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._file_stamp = self._stamp()
