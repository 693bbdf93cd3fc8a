"""The per-connection SASL authenticator (fed frames, no sockets), the credential store, the SCRAM
credential APIs and `kafka-wire users`."""

from __future__ import annotations

import asyncio
import json
import struct
from types import SimpleNamespace

import pytest

from broker.config import BrokerConfig
from broker.security.authentication import SaslAuthenticator, SaslState
from broker.security.credentials import CredentialStore
from kafka_wire.errors import ErrorCode
from kafka_wire.headers import RESPONSE_HEADER, encode_request_header
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.sasl import SCRAM_SHA_256, SCRAM_SHA_512, ScramClient, invalid_credentials_message, plain_token
from kafka_wire.schema import Writer


def frame(api_name: str, version: int, body: dict, correlation_id: int = 7) -> bytes:
    api = APIS_BY_NAME[api_name]
    w = Writer()
    encode_request_header(w, api.key, version, correlation_id, "test", api.is_flexible(version))
    api.request.encode(body, version, w)
    return w.to_bytes()


def decode_reply(api_name: str, version: int, reply: bytes, correlation_id: int = 7):
    api = APIS_BY_NAME[api_name]
    (size,) = struct.unpack_from(">i", reply)
    assert size == len(reply) - 4
    flexible = api.is_flexible(version) and api.key != 18
    header, pos = RESPONSE_HEADER.decode_from(reply[4:], 1 if flexible else 0)
    assert header.correlation_id == correlation_id
    return api.response.decode(reply[4:], version, pos)


@pytest.fixture
def store(tmp_path):
    credentials = CredentialStore(tmp_path)
    credentials.set_password("alice", "alice-secret", SCRAM_SHA_256)
    credentials.set_password("alice", "alice-secret", SCRAM_SHA_512)
    return credentials


def authenticator(store, mechanisms=("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")):
    return SaslAuthenticator(list(mechanisms), store, api_versions_supported=lambda v: 0 <= v <= 4,
                             connection="test")


def handshake(auth, mechanism, version=1):
    step = auth.receive(frame("SaslHandshake", version, {"mechanism": mechanism}))
    return step, decode_reply("SaslHandshake", version, step.reply)


def authenticate(auth, token: bytes, version=2):
    step = auth.receive(frame("SaslAuthenticate", version, {"auth_bytes": token}))
    return step, decode_reply("SaslAuthenticate", version, step.reply)


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512], ids=lambda m: m.name)
@pytest.mark.parametrize("auth_version", [0, 1, 2])
def test_scram_login_with_sasl_authenticate(store, mechanism, auth_version):
    auth = authenticator(store)
    assert auth.receive(frame("ApiVersions", 3, {"client_software_name": "x", "client_software_version": "1"})).dispatch
    step, response = handshake(auth, mechanism.name)
    assert response.error_code == 0 and set(response.mechanisms) == {"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"}
    client = ScramClient(mechanism, "alice", "alice-secret")
    step, first = authenticate(auth, client.first(), auth_version)
    assert first.error_code == 0 and not auth.complete
    step, final = authenticate(auth, client.final(first.auth_bytes), auth_version)
    assert final.error_code == 0 and final.error_message == "" and not step.close  # Kafka's default, not null
    assert client.verify(final.auth_bytes)
    assert auth.complete and auth.principal == "User:alice"


@pytest.mark.parametrize("configured, answered", [
    (("SCRAM-SHA-256", "PLAIN"), ["PLAIN", "SCRAM-SHA-256"]),
    (("PLAIN", "SCRAM-SHA-256"), ["PLAIN", "SCRAM-SHA-256"]),
    (("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"), ["SCRAM-SHA-512", "PLAIN", "SCRAM-SHA-256"]),
    (("PLAIN", "PLAIN"), ["PLAIN"])])
def test_handshake_lists_mechanisms_in_kafkas_hash_set_order(store, configured, answered):
    """Kafka 4.3 answered [PLAIN, SCRAM-SHA-256] for sasl.enabled.mechanisms=SCRAM-SHA-256,PLAIN
    (SaslServerAuthenticator keeps them in a java.util.HashSet); the UNSUPPORTED_SASL_MECHANISM answer too."""
    _, accepted = handshake(authenticator(store, configured), "PLAIN")
    assert accepted.mechanisms == answered
    _, refused = handshake(authenticator(store, configured), "GSSAPI")
    assert (refused.error_code, refused.mechanisms) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, answered)


def test_plain_login_answers_an_empty_error_message(store):
    auth = authenticator(store)
    handshake(auth, "PLAIN")
    _, answer = authenticate(auth, plain_token("alice", "alice-secret"))
    assert (answer.error_code, answer.error_message, answer.session_lifetime_ms) == (0, "", 0)


def test_wrong_password_is_answered_then_closed_after_the_delay(store):
    auth = authenticator(store)
    handshake(auth, "SCRAM-SHA-256")
    client = ScramClient(SCRAM_SHA_256, "alice", "wrong")
    _, first = authenticate(auth, client.first())
    step, final = authenticate(auth, client.final(first.auth_bytes))
    assert final.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert final.error_message == invalid_credentials_message("SCRAM-SHA-256")
    assert step.close and step.delay == pytest.approx(0.1)
    assert auth.state == SaslState.FAILED and auth.principal is None


def test_unknown_user_gets_the_same_answer(store):
    auth = authenticator(store)
    handshake(auth, "SCRAM-SHA-512")
    step, first = authenticate(auth, ScramClient(SCRAM_SHA_512, "nobody", "x").first())
    assert first.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert first.error_message == invalid_credentials_message("SCRAM-SHA-512") and step.close


def test_plain_login_checks_the_scram_credential(store):
    auth = authenticator(store)
    handshake(auth, "PLAIN")
    step, response = authenticate(auth, plain_token("alice", "alice-secret"))
    assert response.error_code == 0 and auth.principal == "User:alice"
    auth = authenticator(store)
    handshake(auth, "PLAIN")
    step, response = authenticate(auth, plain_token("alice", "nope"))
    assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and step.close
    assert response.error_message == "Authentication failed: Invalid username or password"


def test_legacy_v0_handshake_exchanges_raw_tokens(store):
    auth = authenticator(store)
    step, response = handshake(auth, "SCRAM-SHA-256", version=0)
    assert response.error_code == 0 and auth.raw_tokens
    client = ScramClient(SCRAM_SHA_256, "alice", "alice-secret")
    step = auth.receive(client.first())
    server_first = step.reply[4:]
    assert struct.unpack(">i", step.reply[:4])[0] == len(server_first)
    step = auth.receive(client.final(server_first))
    assert client.verify(step.reply[4:]) and auth.complete
    # PLAIN over raw tokens: the empty answer is a 4-byte zero size.
    auth = authenticator(store)
    handshake(auth, "PLAIN", version=0)
    assert auth.receive(plain_token("alice", "alice-secret")).reply == b"\x00\x00\x00\x00"
    auth = authenticator(store)
    handshake(auth, "PLAIN", version=0)
    step = auth.receive(plain_token("alice", "bad"))
    assert step.close and step.reply is None


def test_unsupported_mechanism_is_answered_and_closed(store):
    auth = authenticator(store, ["SCRAM-SHA-512"])
    step, response = handshake(auth, "GSSAPI")
    assert response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert response.mechanisms == ["SCRAM-SHA-512"] and step.close


@pytest.mark.parametrize("first", [
    frame("Metadata", 12, {"topics": None}),                       # a data request before authenticating
    frame("SaslAuthenticate", 2, {"auth_bytes": b"x"}),            # tokens before the handshake
    b"\x00\x11\x00\x07\x00\x00\x00\x01",                           # SaslHandshake v7
    b"GET / HTTP/1.1\r\n",                                         # not Kafka at all
    b"\x00",
])
def test_anything_but_apiversions_or_handshake_first_closes_unanswered(store, first):
    step = authenticator(store).receive(first)
    assert step.close and step.reply is None


def test_second_apiversions_before_handshake_closes(store):
    auth = authenticator(store)
    body = {"client_software_name": "x", "client_software_version": "1"}
    assert auth.receive(frame("ApiVersions", 3, body)).dispatch
    assert auth.receive(frame("ApiVersions", 3, body)).close


def test_apiversions_at_an_unknown_version_may_be_retried(store):
    auth = authenticator(store)
    assert auth.receive(b"\x00\x12\x00\x63\x00\x00\x00\x01\x00\x00\x00").dispatch  # v99
    assert auth.receive(frame("ApiVersions", 3, {"client_software_name": "x",
                                                 "client_software_version": "1"})).dispatch
    assert handshake(auth, "PLAIN")[1].error_code == 0


def test_other_requests_during_authentication_close(store):
    auth = authenticator(store)
    handshake(auth, "SCRAM-SHA-256")
    assert auth.receive(frame("Metadata", 12, {"topics": None})).close


# -- the credential store -------------------------------------------------------------------------


def test_store_keeps_no_password_and_reloads_changes(tmp_path):
    store = CredentialStore(tmp_path)
    store.set_password("bob", "correct horse", SCRAM_SHA_512, iterations=8192)
    text = (tmp_path / "kafka-wire-scram-credentials.json").read_text()
    assert "correct horse" not in text
    assert (tmp_path / "kafka-wire-scram-credentials.json").stat().st_mode & 0o777 == 0o600
    assert json.loads(text)["users"]["bob"]["SCRAM-SHA-512"]["iterations"] == 8192
    assert store.verify_plain("bob", "correct horse") and not store.verify_plain("bob", "wrong")
    assert not store.verify_plain("nobody", "x")
    # Another process (the users tool) changes the file: the broker's store sees it.
    other = CredentialStore(tmp_path)
    other.set_password("carol", "pw", SCRAM_SHA_256)
    assert store.scram_credential("SCRAM-SHA-256", "carol") is not None
    other.delete("bob", SCRAM_SHA_512)
    assert store.users() == {"carol": {"SCRAM-SHA-256": 4096}}


def test_a_broken_store_edit_keeps_the_previous_credentials(tmp_path):
    store = CredentialStore(tmp_path)
    store.set_password("bob", "pw", SCRAM_SHA_256)
    (tmp_path / "kafka-wire-scram-credentials.json").write_text("{not json")
    assert store.verify_plain("bob", "pw")
    with pytest.raises(ValueError):
        CredentialStore(tmp_path)


# -- DescribeUserScramCredentials / AlterUserScramCredentials -----------------------------------------


def _broker(tmp_path, **props):
    from broker.security import attach

    broker = SimpleNamespace(config=BrokerConfig({"log.dirs": str(tmp_path), **props}))
    attach(broker)
    return broker


def _call(api_name, broker, body, principal="User:admin"):
    from broker.handlers import HANDLERS

    api = APIS_BY_NAME[api_name]
    request = api.request.decode(api.request.encode_bytes(body, 0), 0)
    context = SimpleNamespace(principal=principal, peer=("127.0.0.1", 1), api_version=0)
    response = asyncio.run(HANDLERS[api.key].handle(broker, context, request))
    return api.response.decode(api.response.encode_bytes(response, 0), 0)


def _upsertion(name, mechanism=SCRAM_SHA_256, password="pw", iterations=4096, salt=b"salt-bytes"):
    return {"name": name, "mechanism": mechanism.wire_type, "iterations": iterations, "salt": salt,
            "salted_password": mechanism.salted_password(password, salt, iterations)}


def test_alter_then_describe_then_login(tmp_path):
    broker = _broker(tmp_path)
    altered = _call("AlterUserScramCredentials", broker, {"deletions": [], "upsertions": [
        _upsertion("alice"), _upsertion("bob", SCRAM_SHA_512, iterations=8192)]})
    assert [(r.user, r.error_code) for r in altered.results] == [("alice", 0), ("bob", 0)]
    described = _call("DescribeUserScramCredentials", broker, {"users": None})
    assert {r.user: [(c.mechanism, c.iterations) for c in r.credential_infos] for r in described.results} == \
        {"alice": [(1, 4096)], "bob": [(2, 8192)]}
    assert broker.credentials.verify_plain("bob", "pw")
    described = _call("DescribeUserScramCredentials", broker,
                      {"users": [{"name": "alice"}, {"name": "zed"}, {"name": "bob"}, {"name": "bob"}]})
    assert [(r.user, r.error_code, r.error_message) for r in described.results] == [
        ("alice", 0, ""),  # Kafka 4.3 answers an empty message, not null (conformance suite)
        ("zed", ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: zed"),
        ("bob", ErrorCode.DUPLICATE_RESOURCE,
         "Cannot describe SCRAM credentials for the same user twice in a single request: bob")]


def test_alter_validates_as_kafka_does(tmp_path):
    broker = _broker(tmp_path)
    altered = _call("AlterUserScramCredentials", broker, {
        "deletions": [{"name": "ghost", "mechanism": 1}, {"name": "twice", "mechanism": 1}],
        "upsertions": [_upsertion("twice"), _upsertion(""), _upsertion("few", iterations=100),
                       _upsertion("many", iterations=20000), {**_upsertion("odd"), "mechanism": 9}]})
    assert {r.user: (ErrorCode(r.error_code).name, r.error_message) for r in altered.results} == {
        "ghost": ("RESOURCE_NOT_FOUND", "Attempt to delete a user credential that does not exist"),
        "twice": ("RESOURCE_NOT_FOUND", "Attempt to delete a user credential that does not exist"),
        "": ("UNACCEPTABLE_CREDENTIAL", "Username must not be empty"),
        "few": ("UNACCEPTABLE_CREDENTIAL", "Too few iterations"),
        "many": ("UNACCEPTABLE_CREDENTIAL", "Too many iterations"),
        "odd": ("UNSUPPORTED_SASL_MECHANISM", "Unknown SCRAM mechanism"),
    }
    _call("AlterUserScramCredentials", broker, {"deletions": [], "upsertions": [_upsertion("u")]})
    altered = _call("AlterUserScramCredentials", broker, {"deletions": [{"name": "u", "mechanism": 1}],
                                                          "upsertions": [_upsertion("u")]})
    assert [(r.user, r.error_code) for r in altered.results] == [("u", ErrorCode.DUPLICATE_RESOURCE)]
    altered = _call("AlterUserScramCredentials", broker, {"deletions": [{"name": "u", "mechanism": 1}],
                                                          "upsertions": []})
    assert [(r.user, r.error_code) for r in altered.results] == [("u", 0)]
    assert broker.credentials.users() == {}


def test_scram_credential_apis_need_cluster_permissions(tmp_path):
    broker = _broker(tmp_path, **{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    assert _call("DescribeUserScramCredentials", broker, {"users": None}).error_code == 31
    # Kafka 4.3's refusal: no message, one nameless result per user asked about.
    refused = _call("DescribeUserScramCredentials", broker, {"users": [{"name": "a"}, {"name": "b"}]})
    assert (refused.error_code, refused.error_message) == (31, None)
    assert [(r.user, r.error_code, r.error_message, list(r.credential_infos)) for r in refused.results] == \
        [("", 31, None, []), ("", 31, None, [])]
    altered = _call("AlterUserScramCredentials", broker, {"deletions": [], "upsertions": [_upsertion("a")]})
    assert [(r.user, r.error_code) for r in altered.results] == [("a", 31)]
    assert broker.credentials.users() == {}


# -- SaslHandshake / SaslAuthenticate reaching the handlers ---------------------------------------------


def test_handshake_outside_an_exchange_is_illegal_sasl_state(tmp_path):
    from broker.handlers import HANDLERS

    for name, version, body in (("SaslHandshake", 1, {"mechanism": "PLAIN"}),
                                ("SaslAuthenticate", 2, {"auth_bytes": b""})):
        api = APIS_BY_NAME[name]
        response = asyncio.run(HANDLERS[api.key].handle(None, None, api.request(**body)))
        decoded = api.response.decode(api.response.encode_bytes(response, version), version)
        assert decoded.error_code == ErrorCode.ILLEGAL_SASL_STATE


# -- kafka-wire users ------------------------------------------------------------------------------------


def test_users_command_offline(tmp_path, capsys):
    from cli.main import main

    data = str(tmp_path / "data")
    assert main(["users", "add", "alice", "--password", "pw", "--data-dir", data]) == 0
    assert main(["users", "add", "bob", "--password", "pw2", "--mechanism", "SCRAM-SHA-512",
                 "--iterations", "8192", "--set", f"log.dirs={data}"]) == 0
    capsys.readouterr()
    assert main(["users", "list", "--data-dir", data]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=[iterations=4096], "
        "SCRAM-SHA-512=[iterations=4096]",
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=[iterations=8192]"]
    store = CredentialStore(data)
    assert store.verify_plain("alice", "pw") and store.verify_plain("bob", "pw2")
    assert main(["users", "delete", "alice", "--mechanism", "SCRAM-SHA-256", "--data-dir", data]) == 0
    assert store.users()["alice"] == {"SCRAM-SHA-512": 4096}
    assert main(["users", "delete", "nobody", "--data-dir", data]) == 1
    assert main(["users", "add", "x", "--password", "pw", "--iterations", "10", "--data-dir", data]) == 1


# -- listeners and connection quotas ---------------------------------------------------------------------


def test_listener_security_from_kafka_properties():
    from broker.config import ConfigError
    from broker.security.listeners import listener_security

    config = BrokerConfig({"listeners": "CLIENT://:1,INTERNAL://:2,SASL_PLAINTEXT://:3",
                           "listener.security.protocol.map": "client:SASL_PLAINTEXT,INTERNAL:PLAINTEXT",
                           "listener.name.client.sasl.enabled.mechanisms": "PLAIN",
                           "listener.name.client.sasl.server.max.receive.size": "1000"})
    client = listener_security(config, "CLIENT")
    assert (client.protocol, client.mechanisms, client.max_receive_size) == ("SASL_PLAINTEXT", ("PLAIN",), 1000)
    assert client.authenticator(None, lambda v: True, "1") is not None
    internal = listener_security(config, "INTERNAL")
    assert internal.protocol == "PLAINTEXT" and internal.authenticator(None, lambda v: True, "1") is None
    assert listener_security(config, "SASL_PLAINTEXT").mechanisms == ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")
    with pytest.raises(ConfigError):
        listener_security(config, "OTHER")
    with pytest.raises(ConfigError):
        BrokerConfig({"sasl.enabled.mechanisms": "GSSAPI"})


def test_connection_quotas():
    from broker.security.listeners import ConnectionQuotas

    quotas = ConnectionQuotas(BrokerConfig({"max.connections": "3", "max.connections.per.ip": "2",
                                            "max.connections.per.ip.overrides": "10.0.0.9:0,[::1]:5"}))
    assert quotas.open("10.0.0.1") is None and quotas.open("10.0.0.1") is None
    assert "max.connections.per.ip=2" in quotas.open("10.0.0.1")
    assert "max.connections.per.ip=0" in quotas.open("10.0.0.9")
    assert quotas.open("::1") is None
    assert "max.connections=3" in quotas.open("10.0.0.2")
    quotas.close("10.0.0.1")
    assert quotas.open("10.0.0.2") is None
    assert quotas.total == 3 and dict(quotas.per_ip) == {"10.0.0.1": 1, "::1": 1, "10.0.0.2": 1}


def test_requests_after_the_handshake_get_their_illegal_sasl_state_answer_then_close(store):
    """After SaslHandshake v1 Kafka 4.3 answers a request other than SaslAuthenticate with the request's error
    response (ILLEGAL_SASL_STATE) and closes the connection after the failed-authentication delay."""
    def after_handshake(api_name, version, body):
        auth = authenticator(store)
        handshake(auth, "PLAIN")
        step = auth.receive(frame(api_name, version, body))
        assert step.close and step.delay == 0.1 and auth.state == SaslState.FAILED
        return step

    step = after_handshake("SaslHandshake", 1, {"mechanism": "PLAIN"})
    answer = decode_reply("SaslHandshake", 1, step.reply)
    assert (answer.error_code, answer.mechanisms) == (ErrorCode.ILLEGAL_SASL_STATE, [])
    step = after_handshake("ApiVersions", 3, {"client_software_name": "x", "client_software_version": "1"})
    answer = decode_reply("ApiVersions", 3, step.reply)
    assert (answer.error_code, answer.api_keys) == (ErrorCode.ILLEGAL_SASL_STATE, [])
    step = after_handshake("Metadata", 12, {"topics": [{"name": "t"}], "allow_auto_topic_creation": False,
                                            "include_topic_authorized_operations": False})
    answer = decode_reply("Metadata", 12, step.reply)
    assert [(t.name, t.error_code, t.partitions) for t in answer.topics] == [("t", ErrorCode.ILLEGAL_SASL_STATE, [])]
    assert (answer.brokers, answer.cluster_id, answer.controller_id) == ([], None, -1)
    auth = authenticator(store)  # an API without such an answer here: closed unanswered
    handshake(auth, "PLAIN")
    step = auth.receive(frame("FindCoordinator", 3, {"key": "g", "key_type": 0}))
    assert step.close and step.reply is None
