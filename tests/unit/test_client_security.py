"""Client settings that need no broker: Kafka's client properties (--command-config) read into a
ClientSecurity, sasl.jaas.config parsing, the errors a user sees for settings that cannot work,
and kafka-wire acls' expansion of its options into ACLs (AclCommand's rules)."""

from __future__ import annotations

import argparse
import ssl

import pytest

from cli.commands import acls
from kafka_wire.acls import AclOperation as Op, AclPermissionType as Perm, PatternType, ResourceType
from cli.tool_support import ToolError, client_security
from client import ClientConfigError, ClientSecurity, jaas_credentials
from kafka_wire.sasl import SCRAM_SHA_256, ScramClient

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


@pytest.mark.parametrize("config, expected", [
    (f'{SCRAM} required username="alice" password="alice-secret";', ("alice", "alice-secret")),
    (f'{PLAIN} required\n    username="bob"\n    password="p w=;\\"x";', ("bob", 'p w=;"x')),
    (f"{SCRAM} required username=carol password=unquoted", ("carol", "unquoted")),
])
def test_jaas_credentials(config, expected):
    assert jaas_credentials(config) == expected


@pytest.mark.parametrize("config, message", [
    (None, "sasl.jaas.config is not set"),
    ("com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;", "is not supported"),
    (f'{SCRAM} required username="alice";', "needs username"),
    (f"{SCRAM} username=alice password=x;", "must be"),
])
def test_jaas_errors(config, message):
    with pytest.raises(ClientConfigError, match=message):
        jaas_credentials(config)


def test_properties_to_security():
    plain = ClientSecurity.from_properties({})
    assert (plain.protocol, plain.ssl_context, plain.sasl_mechanism) == ("PLAINTEXT", None, None)
    sasl = ClientSecurity.from_properties({"security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-512",
                                           "sasl.jaas.config": f'{SCRAM} required username="a" password="s3cr3t";'})
    assert (sasl.protocol, sasl.ssl_context, sasl.sasl_mechanism, sasl.username, sasl.password) == \
        ("SASL_PLAINTEXT", None, "SCRAM-SHA-512", "a", "s3cr3t")
    assert "s3cr3t" not in repr(sasl)  # no password in logs or tracebacks
    tls = ClientSecurity.from_properties({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "",
                                          "ssl.enabled.protocols": "TLSv1.3"})
    assert isinstance(tls.ssl_context, ssl.SSLContext)
    assert tls.ssl_context.check_hostname is False and tls.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert tls.ssl_context.minimum_version == ssl.TLSVersion.TLSv1_3
    assert ClientSecurity.from_properties({"security.protocol": "SSL"}).ssl_context.check_hostname is True


@pytest.mark.parametrize("props, message", [
    ({"security.protocol": "TLS"}, "Invalid value TLS for configuration security.protocol"),
    ({"security.protocol": "SASL_PLAINTEXT"}, "sasl.mechanism=GSSAPI is not supported"),
    ({"security.protocol": "SSL", "ssl.truststore.type": "PKCS12", "ssl.truststore.location": "/x.p12"},
     "ssl.truststore.type=PKCS12 is not supported"),
    ({"security.protocol": "SSL", "ssl.truststore.location": "/nonexistent/ca.pem"}, "cannot read /nonexistent"),
    ({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "ldap"}, "is not supported"),
])
def test_settings_that_cannot_work(props, message):
    with pytest.raises(ClientConfigError, match=message):
        ClientSecurity.from_properties(props)


def test_a_truststore_that_is_not_pem_is_refused(tmp_path):
    store = tmp_path / "truststore.jks"
    store.write_bytes(b"\xfe\xed\xfe\xed binary JKS")
    with pytest.raises(ClientConfigError, match="ssl.truststore.type=JKS is not supported"):
        ClientSecurity.from_properties({"security.protocol": "SSL", "ssl.truststore.location": str(store)})


def test_command_config_file(tmp_path):
    path = tmp_path / "client.properties"
    path.write_text("# Kafka client properties\nsecurity.protocol = SASL_PLAINTEXT\nsasl.mechanism: PLAIN\n"
                    f'sasl.jaas.config={PLAIN} required \\\n    username="alice" password="pw";\n')
    security = client_security(argparse.Namespace(command_config=str(path)))
    assert (security.protocol, security.sasl_mechanism, security.username, security.password) == \
        ("SASL_PLAINTEXT", "PLAIN", "alice", "pw")
    assert client_security(argparse.Namespace(command_config=None)) is None
    with pytest.raises(ToolError, match="cannot read the client properties"):
        client_security(argparse.Namespace(command_config=str(tmp_path / "missing")))
    path.write_text("security.protocol=SASL_SSL\n")
    with pytest.raises(ToolError, match=f"{path}: sasl.mechanism=GSSAPI"):
        client_security(argparse.Namespace(command_config=str(path)))


# -- kafka-wire acls: options to ACLs ---------------------------------------------------------------------


def parse_acls(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    acls.register(parser.add_subparsers())
    return parser.parse_args(["acls", "--bootstrap-server", "x:1", *argv])


def expanded(*argv: str) -> dict[tuple, set[tuple]]:
    args = parse_acls(*argv)
    acls.check_arguments(args)
    return {(p.resource_type, p.name, p.pattern_type): {(e.principal, e.host, e.operation, e.permission_type)
                                                         for e in entries}
            for p, entries in acls.filters_to_entries(args).items()}


def test_producer_and_consumer_expand_as_kafka_acls_does():
    result = expanded("--add", "--allow-principal", "User:bob", "--producer", "--consumer", "--topic", "t",
                      "--group", "g", "--transactional-id", "tx", "--idempotent")
    bob = lambda *ops: {("User:bob", "*", op, Perm.ALLOW) for op in ops}  # noqa: E731
    assert result == {
        (ResourceType.TOPIC, "t", PatternType.LITERAL): bob(Op.WRITE, Op.DESCRIBE, Op.CREATE, Op.READ),
        (ResourceType.TRANSACTIONAL_ID, "tx", PatternType.LITERAL): bob(Op.WRITE, Op.DESCRIBE),
        (ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL): bob(Op.IDEMPOTENT_WRITE),
        (ResourceType.GROUP, "g", PatternType.LITERAL): bob(Op.READ),
    }


def test_principals_hosts_and_operations_multiply():
    result = expanded("--add", "--allow-principal", "User:a", "--allow-principal", "User:b", "--allow-host", "10.0.0.1",
                      "--deny-principal", "User:c", "--operation", "read", "--operation", "Describe",
                      "--topic", "p-", "--resource-pattern-type", "prefixed")
    assert result == {(ResourceType.TOPIC, "p-", PatternType.PREFIXED): {
        (p, "10.0.0.1", op, Perm.ALLOW) for p in ("User:a", "User:b") for op in (Op.READ, Op.DESCRIBE)}
        | {("User:c", "*", op, Perm.DENY) for op in (Op.READ, Op.DESCRIBE)}}
    assert expanded("--add", "--allow-principal", "User:a", "--cluster") == {
        (ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL): {("User:a", "*", Op.ALL, Perm.ALLOW)}}
    assert acls.parse_operation("CLUSTER_ACTION") == acls.parse_operation("ClusterAction") == Op.CLUSTER_ACTION


@pytest.mark.parametrize("argv, message", [
    (("--list", "--add"), "exactly one action"),
    (("--add", "--allow-principal", "alice", "--topic", "t"), "Could not parse principal"),
    (("--add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"), "Invalid operation 'Fly'"),
    (("--add", "--allow-principal", "User:a", "--operation", "Write", "--group", "g"),
     "ResourceType GROUP only supports operations"),
    (("--add", "--allow-principal", "User:a", "--consumer", "--topic", "t"), "With --consumer you must specify"),
    (("--add", "--allow-principal", "User:a", "--idempotent", "--topic", "t"), "only available if --producer"),
    (("--add", "--allow-principal", "User:a"), "You must provide at least one resource"),
])
def test_option_errors(argv, message):
    args = parse_acls(*argv)
    with pytest.raises(ToolError, match=message):
        acls.check_arguments(args)
        acls.filters_to_entries(args)


def test_listing_prints_kafka_acls_layout(capsys):
    pattern = acls.ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
    entries = {acls.AccessControlEntry("User:alice", "*", Op.READ, Perm.ALLOW),
               acls.AccessControlEntry("User:alice", "*", Op.DESCRIBE, Perm.ALLOW)}
    acls.print_resource_acls({pattern: entries})
    assert capsys.readouterr().out == (
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n"
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW) \n\n")


@pytest.mark.parametrize("server_first, message", [
    (b"r=abcXYZ,s=c2FsdA==,i=1000", "iterations 1000 is less than the minimum 4096"),
    (b"r=zzzXYZ,s=c2FsdA==,i=4096", "does not extend ours"),
])
def test_scram_client_refuses_a_weak_or_foreign_server_first(server_first, message):
    client = ScramClient(SCRAM_SHA_256, "alice", "pw", nonce="abc")
    with pytest.raises(ValueError, match=message):
        client.final(server_first)
