"""kafka_wire.sasl: SCRAM against RFC 7677's test vector, the server state machine's refusals, PLAIN."""

from __future__ import annotations

import base64

import pytest

from kafka_wire.sasl import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    PlainServer,
    SaslAuthenticationFailed,
    ScramClient,
    ScramCredential,
    ScramServer,
    invalid_credentials_message,
    plain_token,
)

# RFC 7677 section 3: user "user", password "pencil".
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _store(mechanism, users: dict[str, str], iterations: int = 4096):
    creds = {name: ScramCredential.from_password(mechanism, pw, iterations=iterations) for name, pw in users.items()}
    return creds.get


def test_rfc7677_vector_server_side():
    credential = ScramCredential.from_password(SCRAM_SHA_256, "pencil", salt=RFC_SALT, iterations=4096)
    server = ScramServer(SCRAM_SHA_256, {"user": credential}.get, server_nonce=RFC_SERVER_NONCE)
    assert server.step(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert not server.complete
    assert server.step(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete and server.username == "user"


def test_rfc7677_vector_client_side():
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first() == RFC_CLIENT_FIRST
    assert client.final(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert client.verify(RFC_SERVER_FINAL)
    assert not client.verify(b"v=" + base64.b64encode(b"x" * 32))


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512], ids=lambda m: m.name)
def test_round_trip_with_our_client(mechanism):
    server = ScramServer(mechanism, _store(mechanism, {"al,i=ce": "s3cret"}))
    client = ScramClient(mechanism, "al,i=ce", "s3cret")
    server_final = server.step(client.final(server.step(client.first())))
    assert client.verify(server_final)
    assert server.username == "al,i=ce"


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512], ids=lambda m: m.name)
def test_wrong_password_fails_with_kafkas_message(mechanism):
    server = ScramServer(mechanism, _store(mechanism, {"alice": "right"}))
    client = ScramClient(mechanism, "alice", "wrong")
    server_first = server.step(client.first())
    with pytest.raises(SaslAuthenticationFailed) as failure:
        server.step(client.final(server_first))
    assert failure.value.client_message == invalid_credentials_message(mechanism.name)
    assert not server.complete
    with pytest.raises(SaslAuthenticationFailed):  # a failed exchange stays failed
        server.step(b"anything")


def test_unknown_user_fails_at_the_first_message_with_the_same_message():
    server = ScramServer(SCRAM_SHA_256, _store(SCRAM_SHA_256, {"alice": "pw"}))
    with pytest.raises(SaslAuthenticationFailed) as failure:
        server.step(ScramClient(SCRAM_SHA_256, "mallory", "pw").first())
    assert failure.value.client_message == invalid_credentials_message("SCRAM-SHA-256")


def test_credential_of_other_mechanism_does_not_verify():
    # The SHA-512 exchange against a SHA-256 credential must fail (the proof lengths differ).
    credential = ScramCredential.from_password(SCRAM_SHA_256, "pw")
    server = ScramServer(SCRAM_SHA_512, {"alice": credential}.get)
    client = ScramClient(SCRAM_SHA_512, "alice", "pw")
    with pytest.raises(SaslAuthenticationFailed):
        server.step(client.final(server.step(client.first())))


def test_authorization_id_must_match_username():
    server = ScramServer(SCRAM_SHA_256, _store(SCRAM_SHA_256, {"alice": "pw"}))
    with pytest.raises(SaslAuthenticationFailed) as failure:
        server.step(b"n,a=bob,n=alice,r=abcdef")
    assert "authorization id" in failure.value.client_message
    server = ScramServer(SCRAM_SHA_256, _store(SCRAM_SHA_256, {"alice": "pw"}))
    assert server.step(b"n,a=alice,n=alice,r=abcdef").startswith(b"r=abcdef")


def test_too_few_iterations_are_refused():
    server = ScramServer(SCRAM_SHA_256, _store(SCRAM_SHA_256, {"alice": "pw"}, iterations=1000))
    with pytest.raises(SaslAuthenticationFailed):
        server.step(ScramClient(SCRAM_SHA_256, "alice", "pw").first())


def test_nonce_and_channel_binding_are_checked():
    store = _store(SCRAM_SHA_256, {"alice": "pw"})
    for tamper in (lambda f: f.replace(b",p=", b"X,p=", 1),       # a nonce that does not end with ours
                   lambda f: f.replace(b"c=biws", b"c=eSws", 1)):   # channel binding 'y,,'
        server = ScramServer(SCRAM_SHA_256, store)
        client = ScramClient(SCRAM_SHA_256, "alice", "pw")
        final = tamper(client.final(server.step(client.first())))
        with pytest.raises(SaslAuthenticationFailed):
            server.step(final)


@pytest.mark.parametrize("token", [
    b"", b"\xff\xfe", b"p=tls-unique,,n=alice,r=abc", b"n,,r=abc,n=alice", b"n,,n=al=ice,r=abc",
    b"n,,n=alice,r=", b"n,,n=alice,r=a,b", b"n,x,n=alice,r=abc", b"n,,n=alice", b"n,,m=ext,n=alice,r=abc",
])
def test_malformed_client_first_fails_cleanly(token):
    server = ScramServer(SCRAM_SHA_256, _store(SCRAM_SHA_256, {"alice": "pw"}))
    with pytest.raises(SaslAuthenticationFailed):
        server.step(token)


@pytest.mark.parametrize("final", [
    b"", b"c=biws", b"c=biws,r=x,p=!!!", b"c=***,r=x,p=AAAA", b"r=x,c=biws,p=AAAA", b"\xff,p=AAAA",
])
def test_malformed_client_final_fails_cleanly(final):
    server = ScramServer(SCRAM_SHA_256, _store(SCRAM_SHA_256, {"alice": "pw"}))
    server.step(ScramClient(SCRAM_SHA_256, "alice", "pw").first())
    with pytest.raises(SaslAuthenticationFailed):
        server.step(final)


def test_credential_keeps_no_password_and_verifies_plain_passwords():
    credential = ScramCredential.from_password(SCRAM_SHA_256, "hunter2")
    assert b"hunter2" not in repr(credential).encode()
    assert credential.verify_password(SCRAM_SHA_256, "hunter2")
    assert not credential.verify_password(SCRAM_SHA_256, "hunter3")


def _plain(users: dict[str, str]) -> PlainServer:
    return PlainServer(lambda user, password: users.get(user) == password)


def test_plain_accepts_the_right_password():
    server = _plain({"alice": "pw"})
    assert server.step(plain_token("alice", "pw")) == b""
    assert server.complete and server.username == "alice"


@pytest.mark.parametrize("token, message", [
    (plain_token("alice", "nope"), "Authentication failed: Invalid username or password"),
    (plain_token("", "pw"), "Authentication failed: username not specified"),
    (plain_token("alice", ""), "Authentication failed: password not specified"),
    (plain_token("alice", "pw", authorization_id="bob"),
     "Authentication failed: Client requested an authorization id that is different from username"),
    (b"alice\x00pw", invalid_credentials_message("PLAIN")),
    (b"\xff\x00a\x00b", invalid_credentials_message("PLAIN")),
])
def test_plain_refusals_say_what_kafka_says(token, message):
    with pytest.raises(SaslAuthenticationFailed) as failure:
        _plain({"alice": "pw"}).step(token)
    assert failure.value.client_message == message


def test_librdkafka_before_2_1_nonce_with_its_own_part_twice_is_accepted_as_by_kafka():
    """librdkafka 2.0.x (Debian's, kcat's) sends r=<client nonce><client nonce><server nonce>:
    Kafka's ScramSaslServer only checks endsWith(server-first nonce), and the proof covers the
    message as sent, so the login succeeds there and must here."""
    import base64

    from kafka_wire.sasl import _xor

    m = SCRAM_SHA_256
    credential = ScramCredential.from_password(m, "pw")
    server = ScramServer(m, {"alice": credential}.get)
    client_nonce = "rIyc\\ydpLT[dP84yV2:e:};C.kL8Wd.J"
    bare = f"n=alice,r={client_nonce}"
    server_first = server.step(f"n,,{bare}".encode()).decode()
    attrs = dict(a.split("=", 1) for a in server_first.split(","))
    salted = m.salted_password("pw", base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = m.hmac(salted, b"Client Key")
    without_proof = f"c=biws,r={client_nonce}{attrs['r']}"
    auth_message = f"{bare},{server_first},{without_proof}".encode()
    proof = _xor(client_key, m.hmac(m.hash(client_key), auth_message))
    final = server.step(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())
    assert server.complete and final.startswith(b"v=")
