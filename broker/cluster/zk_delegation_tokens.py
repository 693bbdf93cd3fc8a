"""Delegation tokens in ZooKeeper, where Kafka's ZooKeeper mode kept them, so that a token created
through one broker authenticates on every broker:

    /delegation_token/tokens/<token id>                 {"version":3,"owner":"User%3Aalice",
                                                         "tokenRequester":"User%3Aalice",
                                                         "renewers":["User%3Abob"],"issueTimestamp":...,
                                                         "maxTimestamp":...,"expiryTimestamp":...,
                                                         "tokenId":"..."}
    /delegation_token/token_changes/token_change_<seq>  the token id (UTF-8)

As Kafka's DelegationTokenManagerZk: the broker that creates, renews or removes a token writes its
znode and then a change notification; every broker reads all tokens at start, then follows the
notifications (one ChildrenWatch) and reads the named token again (gone: removed). Notifications
older than 15 minutes are deleted, as Kafka's brokers do. The principals are sanitized as
Kafka's Sanitizer does.
"""

from __future__ import annotations

import json
import logging
import threading
import time

from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.recipe.watchers import ChildrenWatch

from ..security.delegation_tokens import TokenInformation
from .zk_entity_configs import CHANGE_EXPIRATION_MS, desanitize, sanitize

logger = logging.getLogger("kafka_wire.cluster")

TOKENS_PATH = "/delegation_token/tokens"
TOKEN_CHANGES_PATH = "/delegation_token/token_changes"
TOKEN_CHANGE_PREFIX = "token_change_"
ZNODE_VERSION = 3


def token_znode(token: TokenInformation) -> bytes:
    return json.dumps({
        "version": ZNODE_VERSION, "owner": sanitize(token.owner), "tokenRequester": sanitize(token.requester),
        "renewers": [sanitize(r) for r in token.renewers], "issueTimestamp": token.issue_timestamp,
        "maxTimestamp": token.max_timestamp, "expiryTimestamp": token.expiry_timestamp,
        "tokenId": token.token_id}, separators=(",", ":")).encode("utf-8")


def parse_token_znode(data: bytes) -> TokenInformation:
    node = json.loads(data)
    if not 0 < int(node["version"]) <= ZNODE_VERSION:
        raise ValueError(f"unknown delegation token znode version {node['version']}")
    owner = desanitize(node["owner"])
    requester = desanitize(node["tokenRequester"]) if int(node["version"]) >= 3 else owner
    return TokenInformation(node["tokenId"], owner, requester, [desanitize(r) for r in node["renewers"]],
                            int(node["issueTimestamp"]), int(node["maxTimestamp"]), int(node["expiryTimestamp"]))


def _sequence(child: str) -> int | None:
    if not child.startswith(TOKEN_CHANGE_PREFIX):
        return None
    try:
        return int(child[len(TOKEN_CHANGE_PREFIX):])
    except ValueError:
        return None


class ZkTokenStore:
    """The store of a DelegationTokenManager in cluster mode: a cache of the tokens in ZooKeeper,
    changed on the event loop only (watches post their reads to it)."""

    def __init__(self, zk, loop) -> None:
        self.zk = zk
        self._loop = loop
        self._tokens: dict[str, TokenInformation] = {}
        self._last_change = -1
        self._lock = threading.Lock()
        self._closed = False

    def load(self) -> None:
        """Read every token, then follow the change notifications (those already there are
        covered by this read)."""
        self.zk.ensure_path(TOKENS_PATH)
        self.zk.ensure_path(TOKEN_CHANGES_PATH)
        sequences = [_sequence(child) for child in self.zk.get_children(TOKEN_CHANGES_PATH)]
        self._last_change = max((s for s in sequences if s is not None), default=-1)
        for token_id in self.zk.get_children(TOKENS_PATH):
            token = self._read(token_id)
            if token is not None:
                self._tokens[token_id] = token
        ChildrenWatch(self.zk, TOKEN_CHANGES_PATH, self._on_changes)

    def close(self) -> None:
        self._closed = True

    # -- the store's interface ------------------------------------------------------------------------

    def tokens(self) -> dict[str, TokenInformation]:
        return self._tokens

    def put(self, token: TokenInformation) -> None:
        path = f"{TOKENS_PATH}/{token.token_id}"
        try:
            self.zk.set(path, token_znode(token))
        except NoNodeError:
            try:
                self.zk.create(path, token_znode(token), makepath=True)
            except NodeExistsError:
                self.zk.set(path, token_znode(token))
        self._tokens[token.token_id] = token
        self._notify(token.token_id)

    def remove(self, token_id: str) -> None:
        try:
            self.zk.delete(f"{TOKENS_PATH}/{token_id}")
        except NoNodeError:
            pass
        self._tokens.pop(token_id, None)
        self._notify(token_id)

    # -- ZooKeeper ------------------------------------------------------------------------------------

    def _notify(self, token_id: str) -> None:
        self.zk.create(f"{TOKEN_CHANGES_PATH}/{TOKEN_CHANGE_PREFIX}", token_id.encode("utf-8"), sequence=True,
                       makepath=True)

    def _read(self, token_id: str) -> TokenInformation | None:
        try:
            data, _ = self.zk.get(f"{TOKENS_PATH}/{token_id}")
        except NoNodeError:
            return None
        try:
            return parse_token_znode(data)
        except (ValueError, KeyError, TypeError) as exc:
            logger.warning("ignoring unreadable delegation token znode %s: %s", token_id, exc)
            return None

    def _on_changes(self, children) -> bool | None:
        """kazoo's thread: read the tokens new notifications name; apply them on the loop."""
        if self._closed:
            return False
        with self._lock:
            numbered = sorted((seq, child) for child in children if (seq := _sequence(child)) is not None)
            for seq, child in numbered:
                if seq <= self._last_change:
                    continue
                try:
                    data, _ = self.zk.get(f"{TOKEN_CHANGES_PATH}/{child}")
                except NoNodeError:
                    continue
                self._last_change = seq
                token_id = data.decode("utf-8")
                self._post(self._apply, token_id, self._read(token_id))
            self._purge(numbered)
        return None

    def _apply(self, token_id: str, token: TokenInformation | None) -> None:
        if token is None:
            self._tokens.pop(token_id, None)
        else:
            self._tokens[token_id] = token

    def _post(self, fn, *args) -> None:
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            pass  # the loop is closed: the broker is gone

    def _purge(self, numbered: list[tuple[int, str]]) -> None:
        expired_before = time.time() * 1000 - CHANGE_EXPIRATION_MS
        for seq, child in numbered:
            if seq > self._last_change:
                break
            path = f"{TOKEN_CHANGES_PATH}/{child}"
            try:
                _, stat = self.zk.get(path)
                if stat.ctime >= expired_before:
                    break
                self.zk.delete(path)
            except NoNodeError:
                continue
