"""Delegation tokens (broker/security/delegation_tokens.py) without a server: the controller's
decisions as Kafka's DelegationTokenControlManager makes them, the token file, the ZooKeeper znode
format, and a whole SCRAM login with a token (kafka_wire.sasl, tokenauth=true)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

import pytest

from broker.cluster.zk_delegation_tokens import parse_token_znode, token_znode
from broker.security.delegation_tokens import (
    DelegationTokenManager,
    TokenFile,
    TokenInformation,
    filter_token,
    new_token_id,
)
from kafka_wire.errors import ErrorCode
from kafka_wire.sasl import SCRAM_SHA_256, SCRAM_SHA_512, SaslAuthenticationFailed, ScramClient, ScramServer

HOUR, DAY = 3_600_000, 86_400_000
SECRET = "kw-test-secret"


class Clock:
    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class MemoryStore:
    def __init__(self) -> None:
        self._tokens: dict[str, TokenInformation] = {}

    def tokens(self):
        return self._tokens

    def put(self, token):
        self._tokens[token.token_id] = token

    def remove(self, token_id):
        self._tokens.pop(token_id, None)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def manager(clock):
    return DelegationTokenManager(SECRET, 7 * DAY, DAY, MemoryStore(), clock)


def test_token_ids_are_kafka_uuids_and_hmacs_are_hmac_sha512_of_the_id(manager):
    token = manager.create("User:alice", "User:alice", [], -1).token
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", token.token_id)
    assert len({new_token_id() for _ in range(100)}) == 100
    assert manager.hmac(token.token_id) == hmac.new(SECRET.encode(), token.token_id.encode(), hashlib.sha512).digest()


def test_create_caps_the_lifetimes(manager, clock):
    default = manager.create("User:alice", "User:alice", ["User:bob"], -1)
    assert default.error == ErrorCode.NONE
    token = default.token
    assert (token.issue_timestamp, token.expiry_timestamp, token.max_timestamp) == (
        clock.now, clock.now + DAY, clock.now + 7 * DAY)
    assert (token.owner, token.requester, token.renewers) == ("User:alice", "User:alice", ["User:bob"])
    short = manager.create("User:admin", "User:bob", [], HOUR).token  # a token for someone else
    assert (short.owner, short.requester, short.expiry_timestamp, short.max_timestamp) == (
        "User:bob", "User:admin", clock.now + HOUR, clock.now + HOUR)
    assert manager.create("User:a", "User:a", [], 30 * DAY).token.max_timestamp == clock.now + 7 * DAY


def test_disabled_without_a_secret_key(clock):
    off = DelegationTokenManager(None, 7 * DAY, DAY, MemoryStore(), clock)
    assert not off.enabled
    assert off.create("User:a", "User:a", [], -1).error == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert off.renew("User:a", b"x", 1).error == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert off.expire("User:a", b"x", 1).error == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert off.scram_lookup("SCRAM-SHA-256")("any") is None


def test_renew_and_expire_as_kafka_decides(manager, clock):
    token = manager.create("User:alice", "User:alice", ["User:bob"], -1).token
    mac = manager.hmac(token.token_id)
    assert manager.renew("User:alice", b"not a token", 1).error == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    assert manager.renew("User:carol", mac, 1).error == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    clock.now += HOUR
    renewed = manager.renew("User:bob", mac, -1)  # a renewer; <= 0: the default period
    assert (renewed.error, renewed.expiry_timestamp) == (ErrorCode.NONE, clock.now + DAY)
    assert manager.renew("User:alice", mac, 10 * DAY).expiry_timestamp == clock.now + DAY  # capped
    assert manager.expire("User:carol", mac, 1).error == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    assert manager.expire("User:alice", mac, 1000).expiry_timestamp == clock.now + 1000
    clock.now += 1001
    assert manager.renew("User:alice", mac, 1).error == ErrorCode.DELEGATION_TOKEN_EXPIRED
    assert manager.expire("User:alice", mac, 1).error == ErrorCode.DELEGATION_TOKEN_EXPIRED
    gone = manager.expire("User:alice", mac, -1)  # a negative period removes it, expired or not
    assert (gone.error, gone.expiry_timestamp) == (ErrorCode.NONE, clock.now)
    assert manager.renew("User:alice", mac, 1).error == ErrorCode.DELEGATION_TOKEN_NOT_FOUND


def test_sweep_removes_expired_tokens(manager, clock):
    keep = manager.create("User:a", "User:a", [], -1).token
    manager.create("User:a", "User:a", [], HOUR)
    clock.now += HOUR + 1
    assert manager.sweep_expired() == 1
    assert list(manager.store.tokens()) == [keep.token_id]


def test_describe_filter_is_kafkas():
    token = TokenInformation("id", "User:alice", "User:admin", ["User:bob"], 0, 10, 5)
    no, yes = (lambda _: False), (lambda _: True)
    assert filter_token("User:alice", None, token, no, no)  # the owner
    assert filter_token("User:bob", None, token, no, no)  # a renewer
    assert not filter_token("User:carol", None, token, no, no)
    assert filter_token("User:carol", None, token, yes, no)  # DESCRIBE on the token
    assert filter_token("User:carol", None, token, no, yes)  # DESCRIBE_TOKENS on its owner
    assert filter_token("User:alice", ["User:bob"], token, no, no)  # bob renews it
    assert not filter_token("User:alice", ["User:carol"], token, yes, yes)


def test_token_file_survives_a_restart(tmp_path, clock):
    store = TokenFile(tmp_path)
    manager = DelegationTokenManager(SECRET, 7 * DAY, DAY, store, clock)
    token = manager.create("User:alice", "User:alice", ["User:bob"], -1).token
    assert oct((tmp_path / "kafka-wire-delegation-tokens.json").stat().st_mode & 0o777) == "0o600"
    again = TokenFile(tmp_path)
    assert again.tokens() == {token.token_id: token}
    assert SECRET not in (tmp_path / "kafka-wire-delegation-tokens.json").read_text()  # no HMAC, no key


def test_zookeeper_znode_is_kafkas_format():
    token = TokenInformation("tok", "User:alice", "User:ad min", ["User:bob"], 1, 3, 2)
    data = token_znode(token)
    assert data == (b'{"version":3,"owner":"User%3Aalice","tokenRequester":"User%3Aad%20min",'
                    b'"renewers":["User%3Abob"],"issueTimestamp":1,"maxTimestamp":3,"expiryTimestamp":2,'
                    b'"tokenId":"tok"}')
    assert parse_token_znode(data) == token


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512])
def test_scram_login_with_a_token(manager, clock, mechanism):
    token = manager.create("User:alice", "User:alice", [], -1).token
    password = base64.b64encode(manager.hmac(token.token_id)).decode()
    lookup = manager.scram_lookup(mechanism.name)

    def login(username, secret, extensions):
        server = ScramServer(mechanism, lambda user: None, token_lookup=lookup)
        client = ScramClient(mechanism, username, secret, extensions=extensions)
        final = client.final(server.step(client.first()))
        assert client.verify(server.step(final))
        return server

    server = login(token.token_id, password, {"tokenauth": "true"})
    assert (server.username, server.token_owner, server.token_expiry_ms) == (
        token.token_id, "alice", token.expiry_timestamp)
    with pytest.raises(SaslAuthenticationFailed):  # the HMAC is the password
        login(token.token_id, "wrong", {"tokenauth": "true"})
    with pytest.raises(SaslAuthenticationFailed):  # without the extension it is a user name
        login(token.token_id, password, None)
    clock.now = token.expiry_timestamp + 1
    with pytest.raises(SaslAuthenticationFailed):  # expired
        login(token.token_id, password, {"tokenauth": "true"})
