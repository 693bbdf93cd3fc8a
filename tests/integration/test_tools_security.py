"""The client tools against a secured broker, as a user runs them: every tool logs in over SASL_SSL
with SCRAM through Kafka's client properties file (--command-config; --producer.config and
--consumer.config on produce and consume), is refused with a clear one-line error for a wrong
password, an untrusted certificate or a missing file, and `kafka-wire acls` adds, lists and removes
ACLs that then allow or deny a client.

The broker has every kind of listener (tests/integration/test_security.py), ACLs on and admin as a
super user; alice has no ACL unless a test gives her one.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.integration.test_security import Certificates, SecureBroker, make_certificates, start_secure_broker

pytestmark = pytest.mark.timeout(300)

SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}";'
PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="{user}" password="{password}";'
AUTH_FAILED = "SASL_AUTHENTICATION_FAILED"


def kafka_wire(*args: str, input: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], input=input, capture_output=True,
                          text=True, timeout=timeout)


def ok(*args: str, **kwargs) -> str:
    done = kafka_wire(*args, **kwargs)
    assert done.returncode == 0, f"kafka-wire {' '.join(args)} exited {done.returncode}\n{done.stderr}"
    return done.stdout


def fails(*args: str, **kwargs) -> str:
    """The one-line error of a tool that must fail (exit status 1, no traceback)."""
    done = kafka_wire(*args, **kwargs)
    assert done.returncode == 1, f"kafka-wire {' '.join(args)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("tool-certs"))


@pytest.fixture(scope="module")
def secured(tmp_path_factory, certificates) -> SecureBroker:
    broker = start_secure_broker(tmp_path_factory.mktemp("tools-secure-broker"), certificates, extra={
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
        "group.initial.rebalance.delay.ms": 0,
    })
    yield broker
    problems = broker.process.finish()
    assert not problems, "\n".join(problems) + "\n" + broker.process.log_report()


@pytest.fixture(scope="module")
def configs(tmp_path_factory, certificates) -> dict[str, Path]:
    """Client properties files, as a Kafka user writes them."""
    folder = tmp_path_factory.mktemp("client-configs")
    trust = f"ssl.truststore.type=PEM\nssl.truststore.location={certificates.ca}\n"
    files = {
        "admin": f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n{trust}"
                 f"sasl.jaas.config={SCRAM_JAAS.format(user='admin', password='admin-secret')}\n",
        "alice": f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
                 f"ssl.truststore.location={certificates.ca}\n"  # a .pem file needs no type
                 f"sasl.jaas.config={SCRAM_JAAS.format(user='alice', password='alice-secret')}\n",
        "alice-plain": f"security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n{trust}"
                       f"sasl.jaas.config={PLAIN_JAAS.format(user='alice', password='alice-secret')}\n",
        "wrong-password": f"# a typo in the password\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n{trust}"
                          f"sasl.jaas.config={SCRAM_JAAS.format(user='admin', password='admin-typo')}\n",
        "untrusted": "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                     f"sasl.jaas.config={SCRAM_JAAS.format(user='admin', password='admin-secret')}\n",
        "jks": f"security.protocol=SSL\nssl.truststore.location={certificates.ca}\nssl.truststore.type=JKS\n",
        "gssapi": f"security.protocol=SASL_SSL\n{trust}",
        "sasl-plaintext": "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                          f"sasl.jaas.config={SCRAM_JAAS.format(user='admin', password='admin-secret')}\n",
    }
    client_keystore = folder / "alice-keystore.pem"
    client_keystore.write_text(certificates.client_key.read_text() + certificates.client_cert.read_text())
    files["mutual-tls"] = (f"security.protocol=SSL\n{trust}"
                           f"ssl.keystore.type=PEM\nssl.keystore.location={client_keystore}\n")
    paths = {}
    for name, text in files.items():
        paths[name] = folder / f"{name}.properties"
        paths[name].write_text(text)
    return paths


def test_every_tool_works_over_sasl_ssl_with_scram(secured, configs):
    b = ["--bootstrap-server", secured.address("SASL_SSL")]
    admin = ["--command-config", str(configs["admin"])]
    topic, group = unique("secure-tools"), unique("secure-group")

    assert ok("topics", "create", *b, *admin, "--topic", topic, "--partitions", "2") == f"Created topic {topic}.\n"
    assert topic in ok("topics", "list", *b, *admin).split()
    assert f"Topic: {topic}\t" in ok("topics", "describe", *b, *admin, "--topic", topic)
    ok("topics", "alter", *b, *admin, "--topic", topic, "--add-config", "retention.ms=3600000")
    ok("produce", *b, "--producer.config", str(configs["admin"]), "--topic", topic, input="one\ntwo\nthree\n")
    consumed = ok("consume", *b, "--consumer.config", str(configs["admin"]), "--topic", topic, "--group", group,
                  "--from-beginning", "--max-messages", "3", "--timeout-ms", "10000")
    assert sorted(consumed.split()) == ["one", "three", "two"]
    assert group in ok("groups", "list", *b, *admin)
    described = ok("groups", "describe", group, *b, *admin)
    assert topic in described and group in described
    assert "user-principal 'alice'" in ok("users", "list", "--bootstrap-server", secured.address("SASL_SSL"), *admin)
    ok("users", "add", "carol", "--password", "carol-secret", "--bootstrap-server", secured.address("SASL_SSL"),
       *admin)
    assert "user-principal 'carol'" in ok("users", "list", "--bootstrap-server", secured.address("SASL_SSL"), *admin)
    assert ok("acls", "--list", *b, *admin) == ""  # no ACL yet, but the request went through
    assert ok("topics", "delete", *b, *admin, "--topic", topic) == ""


@pytest.mark.parametrize("tool", [
    ["topics", "list"], ["topics", "create", "--topic", "never-made"], ["topics", "describe"],
    ["topics", "alter", "--topic", "x", "--partitions", "3"], ["topics", "delete", "--topic", "x"],
    ["produce", "--topic", "x"], ["consume", "--topic", "x", "--timeout-ms", "1000"],
    ["groups", "list"], ["groups", "describe", "g"], ["acls", "--list"],
], ids=lambda tool: "-".join(tool[:2]))
def test_every_tool_names_the_authentication_failure_for_a_wrong_password(secured, configs, tool):
    error = fails(*tool, "--bootstrap-server", secured.address("SASL_SSL"),
                  "--command-config", str(configs["wrong-password"]), input="")
    assert AUTH_FAILED in error and "Authentication failed" in error, error
    assert len(error.strip().splitlines()) == 1, error


def test_users_names_the_authentication_failure_for_a_wrong_password(secured, configs):
    error = fails("users", "list", "--bootstrap-server", secured.address("SASL_SSL"),
                  "--command-config", str(configs["wrong-password"]))
    assert AUTH_FAILED in error and "Authentication failed" in error, error


def test_produce_and_consume_also_take_command_config(secured, configs):
    b = ["--bootstrap-server", secured.address("SASL_SSL"), "--command-config", str(configs["admin"])]
    topic = unique("command-config")
    ok("topics", "create", *b, "--topic", topic)
    ok("produce", *b, "--topic", topic, input="hello\n")
    assert ok("consume", *b, "--topic", topic, "--from-beginning", "--max-messages", "1",
              "--timeout-ms", "10000") == "hello\n"


def test_plain_over_sasl_ssl(secured, configs):
    # alice may do nothing yet, but she is logged in: Metadata answers (with no topic she may see).
    assert ok("topics", "list", "--bootstrap-server", secured.address("SASL_SSL"),
              "--command-config", str(configs["alice-plain"])) == ""


def test_sasl_plaintext_listener(secured, configs):
    b = ["--bootstrap-server", secured.address("SASL_PLAINTEXT"), "--command-config", str(configs["sasl-plaintext"])]
    topic = unique("sasl-plaintext")
    ok("topics", "create", *b, "--topic", topic)
    assert topic in ok("topics", "list", *b).split()
    # The same settings against the TLS listener: the TLS server hangs up on a plaintext client.
    error = fails("topics", "list", "--bootstrap-server", secured.address("SASL_SSL"),
                  "--command-config", str(configs["sasl-plaintext"]))
    assert "does security.protocol in the client properties match the listener?" in error
    # ... and against a listener without SASL, the broker answers the handshake ILLEGAL_SASL_STATE.
    error = fails("topics", "list", "--bootstrap-server", secured.address("PLAINTEXT"),
                  "--command-config", str(configs["sasl-plaintext"]))
    assert "ILLEGAL_SASL_STATE" in error and "the listener does not expect a SASL login" in error
    # A TLS client against a plaintext listener.
    error = fails("topics", "list", "--bootstrap-server", secured.address("PLAINTEXT"),
                  "--command-config", str(configs["admin"]))
    assert "does security.protocol in the client properties match the listener?" in error


def test_clear_errors_for_settings_that_cannot_work(secured, configs, tmp_path):
    address = secured.address("SASL_SSL")
    # No client settings against a TLS listener: the broker hangs up, the tool says what is missing.
    error = fails("topics", "list", "--bootstrap-server", address)
    assert "--command-config" in error and "security.protocol" in error
    # The system's CAs do not know the test CA.
    assert "CERTIFICATE_VERIFY_FAILED" in fails("topics", "list", "--bootstrap-server", address,
                                                "--command-config", str(configs["untrusted"]))
    assert "ssl.truststore.type=JKS is not supported" in fails("topics", "list", "--bootstrap-server", address,
                                                              "--command-config", str(configs["jks"]))
    assert "sasl.mechanism=GSSAPI is not supported" in fails("topics", "list", "--bootstrap-server", address,
                                                             "--command-config", str(configs["gssapi"]))
    missing = tmp_path / "missing.properties"
    assert f"cannot read the client properties {missing}" in fails("topics", "list", "--bootstrap-server", address,
                                                                   "--command-config", str(missing))


# -- kafka-wire acls --------------------------------------------------------------------------------------


def test_acls_add_list_remove_allow_then_deny_a_client(secured, configs):
    b = ["--bootstrap-server", secured.address("SASL_SSL")]
    admin, alice = ["--command-config", str(configs["admin"])], ["--command-config", str(configs["alice"])]
    topic, group = unique("acl-tool"), unique("acl-tool-group")
    ok("topics", "create", *b, *admin, "--topic", topic)

    assert "TOPIC_AUTHORIZATION_FAILED" in fails("produce", *b, *alice, "--topic", topic, input="denied\n")

    added = ok("acls", *b, *admin, "--add", "--allow-principal", "User:alice", "--producer", "--topic", topic)
    pattern = f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)"
    entries = [f"\t(principal=User:alice, host=*, operation={op}, permissionType=ALLOW)"
               for op in ("WRITE", "CREATE", "DESCRIBE")]
    assert added == (f"Adding ACLs for resource `{pattern}`: \n " + "\n".join(entries) + " \n\n"
                     f"Current ACLs for resource `{pattern}`: \n " + "\n".join(entries) + " \n\n")
    ok("produce", *b, *alice, "--topic", topic, input="allowed\n")

    # Reading needs READ on the topic and the group: --consumer grants both.
    assert "TOPIC_AUTHORIZATION_FAILED" in fails("consume", *b, *alice, "--topic", topic, "--from-beginning",
                                                 "--max-messages", "1", "--timeout-ms", "5000")
    ok("acls", *b, *admin, "--add", "--allow-principal", "User:alice", "--consumer", "--topic", topic,
       "--group", group)
    assert ok("consume", *b, *alice, "--topic", topic, "--group", group, "--from-beginning", "--max-messages", "1",
              "--timeout-ms", "10000") == "allowed\n"

    listed = ok("acls", *b, *admin, "--list", "--topic", topic)
    assert listed.count("operation=READ") == 1 and listed.count("operation=WRITE") == 1
    assert ok("acls", *b, *admin, "--list", "--principal", "User:alice").startswith("ACLs for principal `User:alice`\n")
    assert f"name={group}, patternType=LITERAL" in ok("acls", *b, *admin, "--list")

    # Remove only WRITE, then everything on the topic.
    ok("acls", *b, *admin, "--remove", "--allow-principal", "User:alice", "--operation", "Write", "--topic", topic,
       "--force")
    assert "operation=WRITE" not in ok("acls", *b, *admin, "--list", "--topic", topic)
    assert "TOPIC_AUTHORIZATION_FAILED" in fails("produce", *b, *alice, "--topic", topic, input="denied again\n")
    asked = ok("acls", *b, *admin, "--remove", "--topic", topic, input="n\n")
    assert f"Are you sure you want to delete all ACLs for resource filter `{pattern}`? (y/n)" in asked
    assert "operation=READ" in ok("acls", *b, *admin, "--list", "--topic", topic)  # "n" kept them
    ok("acls", *b, *admin, "--remove", "--topic", topic, input="y\n")
    assert ok("acls", *b, *admin, "--list", "--topic", topic) == ""


def test_acls_prefixed_deny_and_match(secured, configs):
    b = ["--bootstrap-server", secured.address("SASL_SSL")]
    admin, alice = ["--command-config", str(configs["admin"])], ["--command-config", str(configs["alice"])]
    prefix = unique("team") + "-"
    topic = prefix + "orders"
    ok("topics", "create", *b, *admin, "--topic", topic)
    ok("acls", *b, *admin, "--add", "--allow-principal", "User:alice", "--operation", "All", "--topic", prefix,
       "--resource-pattern-type", "prefixed")
    ok("produce", *b, *alice, "--topic", topic, input="by prefix\n")
    ok("acls", *b, *admin, "--add", "--deny-principal", "User:alice", "--operation", "Write", "--topic", topic)
    assert "TOPIC_AUTHORIZATION_FAILED" in fails("produce", *b, *alice, "--topic", topic, input="x\n")
    matched = ok("acls", *b, *admin, "--list", "--topic", topic, "--resource-pattern-type", "match")
    assert f"name={prefix}, patternType=PREFIXED" in matched and f"name={topic}, patternType=LITERAL" in matched
    assert "permissionType=DENY" in matched
    # An ACL cannot be added with a filter pattern type; adding needs a principal.
    assert "'MATCH' is not valid when adding acls" in fails("acls", *b, *admin, "--add", "--allow-principal",
                                                            "User:alice", "--topic", topic,
                                                            "--resource-pattern-type", "match")
    assert "--allow-principal, --deny-principal" in fails("acls", *b, *admin, "--add", "--topic", topic)
    assert "only supports operations" in fails("acls", *b, *admin, "--add", "--allow-principal", "User:alice",
                                               "--operation", "Write", "--group", "g")
    # Alice may not manage ACLs (ALTER on the cluster).
    assert "CLUSTER_AUTHORIZATION_FAILED" in fails("acls", *b, *alice, "--add", "--allow-principal", "User:alice",
                                                   "--topic", "anything")


def test_mutual_tls_principal_gets_acls_from_the_tool(secured, configs):
    """An SSL listener with a client certificate: the principal is the certificate's name."""
    b = ["--bootstrap-server", secured.address("SSL"), "--command-config", str(configs["mutual-tls"])]
    admin = ["--bootstrap-server", secured.address("SASL_SSL"), "--command-config", str(configs["admin"])]
    topic = unique("mtls")
    ok("topics", "create", *admin, "--topic", topic)
    assert topic not in ok("topics", "list", *b).split()
    ok("acls", *admin, "--add", "--allow-principal", "User:CN=alice,O=kafka-wire", "--operation", "Describe",
       "--topic", topic)
    assert topic in ok("topics", "list", *b).split()


def test_acls_on_a_broker_without_an_authorizer(broker):
    error = fails("acls", "--bootstrap-server", broker.bootstrap, "--list")
    assert "SECURITY_DISABLED: No Authorizer is configured" in error
