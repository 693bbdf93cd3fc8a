"""Delegation tokens (CreateDelegationToken 38, RenewDelegationToken 39, ExpireDelegationToken 40,
DescribeDelegationToken 41; KIP-48) and SCRAM logins with them, as Apache Kafka 4.3.0 answers them
(the same sequences were run against it: tests/unit/test_admin_api_messages.py has its bytes).
Through the wire client, Java's Admin and a Java producer and consumer logged in with a token,
on one node and in a ZooKeeper cluster (a token made through one broker works on the others)."""

from __future__ import annotations

import base64
import json
import subprocess
import time
from pathlib import Path

import pytest

from testing.cluster import Cluster
from broker.security.credentials import CredentialStore
from testing.broker_process import BrokerProcess, free_port
from client import AuthenticationFailed, ConnectionClosed, WireClient
from kafka_wire.sasl import SCRAM_MECHANISMS

from wire_cases import error_name, unique

pytestmark = pytest.mark.timeout(300)

JAVA_PROGRAM = Path(__file__).parent.parent / "clients" / "java" / "DelegationTokens.java"
PASSWORDS = {"admin": "admin-pw", "alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw"}
SECRET = "kw-test-secret"


def sasl_settings(plain_port: int, sasl_port: int, **more) -> dict:
    return {"listeners": f"SASL_PLAINTEXT://127.0.0.1:{sasl_port},PLAINTEXT://127.0.0.1:{plain_port}",
            "inter.broker.listener.name": "PLAINTEXT", "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin;User:ANONYMOUS", "delegation.token.secret.key": SECRET,
            "group.initial.rebalance.delay.ms": 0, **more}


def add_users(log_dir: Path) -> None:
    store = CredentialStore(log_dir)
    for user, password in PASSWORDS.items():
        store.set_password(user, password, SCRAM_MECHANISMS["SCRAM-SHA-256"])


class TokenBroker:
    """A broker process with a SASL_PLAINTEXT listener (`sasl`) and a PLAINTEXT one (`plain`)."""

    def __init__(self, data_dir: Path, **settings) -> None:
        self.sasl_port, self.plain_port = free_port(), free_port()
        self.process = BrokerProcess(data_dir, port=self.sasl_port,
                                     config=sasl_settings(self.plain_port, self.sasl_port, **settings))
        add_users(self.process.log_dir)

    @property
    def sasl(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    @property
    def plain(self) -> str:
        return f"127.0.0.1:{self.plain_port}"


@pytest.fixture(scope="module")
def token_broker(tmp_path_factory):
    broker = TokenBroker(tmp_path_factory.mktemp("token-broker"))
    broker.process.start()
    yield broker
    problems = broker.process.finish()
    assert not problems, "\n".join(problems) + "\n" + broker.process.log_report()


def login(address: str, user: str, password: str | None = None, *, token: bool = False) -> WireClient:
    client = WireClient(address)
    try:
        client.sasl_authenticate("SCRAM-SHA-256", user, password if password is not None else PASSWORDS[user],
                                 token=token)
    except Exception:
        client.close()
        raise
    return client


def create(client, *, owner: str | None = None, renewers=(), max_lifetime_ms: int = -1, version: int = 3):
    return client.call("CreateDelegationToken", version, {
        "owner_principal_type": owner and "User", "owner_principal_name": owner, "max_lifetime_ms": max_lifetime_ms,
        "renewers": [{"principal_type": kind, "principal_name": name} for kind, name in renewers]})


def renew(client, hmac: bytes, period: int):
    answer = client.call("RenewDelegationToken", 2, {"hmac": hmac, "renew_period_ms": period})
    return error_name(answer.error_code), answer.expiry_timestamp_ms


def expire(client, hmac: bytes, period: int):
    answer = client.call("ExpireDelegationToken", 2, {"hmac": hmac, "expiry_time_period_ms": period})
    return error_name(answer.error_code), answer.expiry_timestamp_ms


def describe(client, owners=None) -> tuple[str, dict]:
    answer = client.call("DescribeDelegationToken", 3, {"owners": None if owners is None else [
        {"principal_type": "User", "principal_name": name} for name in owners]})
    return error_name(answer.error_code), {t.token_id: t for t in answer.tokens}


def now_ms() -> int:
    return int(time.time() * 1000)


def test_not_allowed_over_plaintext(token_broker):
    with WireClient(token_broker.plain) as anonymous:
        created = create(anonymous)
        assert (error_name(created.error_code), created.principal_name, created.token_requester_principal_name,
                created.issue_timestamp_ms, created.max_timestamp_ms, created.token_id, created.hmac) == (
            "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", "ANONYMOUS", "ANONYMOUS", -1, -1, "", b"")
        assert renew(anonymous, b"x", 1) == ("DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", -1)
        assert expire(anonymous, b"x", 1) == ("DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", -1)
        assert describe(anonymous) == ("DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", {})


def test_create_renew_expire_and_describe_as_kafka_does(token_broker):
    with login(token_broker.sasl, "alice") as alice, login(token_broker.sasl, "bob") as bob, \
            login(token_broker.sasl, "carol") as carol, login(token_broker.sasl, "admin") as admin:
        before = now_ms()
        created = create(alice, renewers=[("User", "bob")], max_lifetime_ms=3_600_000)
        assert (error_name(created.error_code), created.principal_type, created.principal_name,
                created.token_requester_principal_name) == ("NONE", "User", "alice", "alice")
        assert before <= created.issue_timestamp_ms <= now_ms() and len(created.hmac) == 64
        assert created.max_timestamp_ms - created.issue_timestamp_ms == 3_600_000  # below the 7 days default
        assert created.expiry_timestamp_ms == created.max_timestamp_ms  # the 1 day renewal is longer
        hmac = created.hmac
        v1 = create(alice, version=1)  # no owner, no requester at v1
        assert (error_name(v1.error_code), v1.principal_name, v1.token_requester_principal_name) == ("NONE", "alice", "")

        refused = create(alice, renewers=[("Group", "x")])
        assert (error_name(refused.error_code), refused.issue_timestamp_ms, refused.token_id) == (
            "INVALID_PRINCIPAL_TYPE", -1, "")
        for_bob = create(alice, owner="bob")  # needs CREATE_TOKENS on User:bob
        assert (error_name(for_bob.error_code), for_bob.principal_name, for_bob.token_requester_principal_name) == (
            "DELEGATION_TOKEN_AUTHORIZATION_FAILED", "bob", "alice")
        by_admin = create(admin, owner="bob")
        assert (error_name(by_admin.error_code), by_admin.principal_name,
                by_admin.token_requester_principal_name) == ("NONE", "bob", "admin")

        assert renew(alice, b"not a token", 1000) == ("DELEGATION_TOKEN_NOT_FOUND", 0)
        assert renew(admin, hmac, 1000) == ("DELEGATION_TOKEN_OWNER_MISMATCH", 0)  # super users are not owners
        error, expiry = renew(bob, hmac, 60_000)  # a renewer may
        assert error == "NONE" and 0 < expiry - now_ms() <= 60_000

        # Owners and renewers see their tokens; others need DESCRIBE on the token or
        # DESCRIBE_TOKENS on its owner (the super user has both).
        assert describe(alice, owners=[])[1] == {}
        assert set(describe(alice)[1]) == {created.token_id, v1.token_id}
        assert set(describe(bob)[1]) == {created.token_id, by_admin.token_id}
        assert set(describe(bob, owners=["alice"])[1]) == {created.token_id}
        assert describe(carol) == ("NONE", {})
        error, everything = describe(admin, owners=["bob"])
        assert set(everything) == {created.token_id, by_admin.token_id}
        shown = everything[created.token_id]
        assert (shown.principal_name, shown.token_requester_principal_name, shown.hmac,
                [(r.principal_type, r.principal_name) for r in shown.renewers], shown.expiry_timestamp) == (
            "alice", "alice", hmac, [("User", "bob")], expiry)

        assert expire(carol, hmac, -1) == ("DELEGATION_TOKEN_OWNER_MISMATCH", 0)
        error, expiry = expire(alice, hmac, 5000)
        assert error == "NONE" and 0 < expiry - now_ms() <= 5000
        error, expiry = expire(bob, hmac, -1)  # now: the token is gone
        assert error == "NONE" and abs(expiry - now_ms()) < 5000
        assert renew(alice, hmac, 1000) == ("DELEGATION_TOKEN_NOT_FOUND", 0)
        assert created.token_id not in describe(admin)[1]


def test_logins_with_a_token(token_broker):
    with login(token_broker.sasl, "alice") as alice:
        created = create(alice)
        password = base64.b64encode(created.hmac).decode()
        with login(token_broker.sasl, created.token_id, password, token=True) as with_token:
            # The principal is the owner's (alice sees her token), but a token cannot make tokens.
            assert describe(with_token)[0] == "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"
            assert error_name(create(with_token).error_code) == "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"
            assert with_token.call("Metadata", 12, {"topics": None}).brokers
        for user, secret in [(created.token_id, "wrong"), ("no-such-token", password)]:
            with pytest.raises(AuthenticationFailed) as failed:
                login(token_broker.sasl, user, secret, token=True)
            assert str(failed.value).endswith("Authentication failed during authentication due to invalid "
                                              "credentials with SASL mechanism SCRAM-SHA-256")
        with pytest.raises(AuthenticationFailed):  # without tokenauth=true the id is a user name
            login(token_broker.sasl, created.token_id, password)

        # The session lasts until the expiry the token had at login (Kafka's clients
        # re-authenticate then; here the connection is closed and the client logs in again).
        assert expire(alice, created.hmac, 1500)[0] == "NONE"
        session = login(token_broker.sasl, created.token_id, password, token=True)
        assert session.call("Metadata", 12, {"topics": []}).brokers
        time.sleep(2)
        with pytest.raises((ConnectionClosed, ConnectionError)):
            session.call("Metadata", 12, {"topics": []})
        session.close()
        with pytest.raises(AuthenticationFailed):  # expired
            login(token_broker.sasl, created.token_id, password, token=True)


def test_tokens_survive_a_restart(token_broker):
    with login(token_broker.sasl, "alice") as alice:
        created = create(alice)
    token_broker.process.restart()
    with login(token_broker.sasl, created.token_id, base64.b64encode(created.hmac).decode(), token=True) as again:
        assert again.call("Metadata", 12, {"topics": []}).brokers


def test_java_admin_producer_and_consumer(token_broker, java_kafka_clients):
    topic = unique("token-java")
    with login(token_broker.sasl, "admin") as admin:
        assert admin.call("CreateTopics", 7, {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1}],
                                              "timeout_ms": 10000}).topics[0].error_code == 0
        granted = admin.call("CreateAcls", 3, {"creations": [{
            "resource_type": 2, "resource_name": topic, "resource_pattern_type": 3, "principal": "User:alice",
            "host": "*", "operation": 2, "permission_type": 3}]})  # ALL on the topic
        assert [r.error_code for r in granted.results] == [0]
    command = java_kafka_clients("4.3.0").program(JAVA_PROGRAM)
    done = subprocess.run([*command, token_broker.sasl, "alice", PASSWORDS["alice"], topic], capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "owner": "User:alice", "renewers": "[User:bob]", "produced": "ok", "consumed": "sent with a token",
        "describedOwner": "User:alice", "describedHmacMatches": True, "renewedWithinAMinute": True,
        "expiredNow": True, "producedAfterExpiry": "SaslAuthenticationException",
        "renewAfterExpiry": "DelegationTokenNotFoundException"}


def test_without_a_secret_key_tokens_are_disabled(tmp_path):
    broker = TokenBroker(tmp_path, **{"delegation.token.secret.key": ""})
    broker.process.start()
    try:
        with login(broker.sasl, "alice") as alice:
            created = create(alice)
            assert (error_name(created.error_code), created.principal_name, created.issue_timestamp_ms,
                    created.token_id) == ("DELEGATION_TOKEN_AUTH_DISABLED", "alice", 0, "")
            assert renew(alice, b"x", 1) == ("DELEGATION_TOKEN_AUTH_DISABLED", 0)
            assert expire(alice, b"x", 1) == ("DELEGATION_TOKEN_AUTH_DISABLED", 0)
            assert describe(alice) == ("DELEGATION_TOKEN_AUTH_DISABLED", {})
    finally:
        problems = broker.process.finish()
        assert not problems, "\n".join(problems)


def test_a_token_works_on_every_broker_of_a_cluster(zookeeper_installed, tmp_path):
    cluster = Cluster(tmp_path, 2, {"default.replication.factor": 1, "offsets.topic.replication.factor": 1})
    sasl_ports = {}
    for node_id, broker in cluster.brokers.items():
        sasl_ports[node_id] = free_port()
        broker.config.update(sasl_settings(broker.port, sasl_ports[node_id]))
        broker.config["advertised.listeners"] = broker.config["listeners"]
        add_users(broker.log_dir)
    cluster.start()
    try:
        one, two = (f"127.0.0.1:{sasl_ports[n]}" for n in (1, 2))
        with login(one, "alice") as alice:
            created = create(alice, renewers=[("User", "bob")])
            assert error_name(created.error_code) == "NONE"
        password = base64.b64encode(created.hmac).decode()

        def logs_in(address: str) -> bool:
            try:
                login(address, created.token_id, password, token=True).close()
                return True
            except AuthenticationFailed:
                return False

        cluster.wait_for(lambda: logs_in(two), 20, "the token to work on broker 2")
        with login(two, "bob") as bob:
            assert renew(bob, created.hmac, 60_000)[0] == "NONE"
            renewed = describe(bob)[1][created.token_id].expiry_timestamp
        with login(one, "alice") as alice:
            cluster.wait_for(lambda: describe(alice)[1][created.token_id].expiry_timestamp == renewed, 20,
                             "broker 1 to see the renewal")
        with login(two, "alice") as alice:
            assert expire(alice, created.hmac, -1)[0] == "NONE"
        cluster.wait_for(lambda: not logs_in(one), 20, "the expired token to stop working on broker 1")
        # Kafka's ZooKeeper layout: the token is gone from /delegation_token/tokens.
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=cluster.zookeeper.connect)
        zk.start(timeout=10)
        try:
            assert created.token_id not in zk.get_children("/delegation_token/tokens")
            assert zk.get_children("/delegation_token/token_changes")
        finally:
            zk.stop()
            zk.close()
    finally:
        cluster.stop()
