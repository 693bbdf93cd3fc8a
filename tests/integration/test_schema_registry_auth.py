"""The Schema Registry on a broker with SASL users (registry/auth.py): HTTP basic auth against the
broker's SCRAM credentials, 401 with a Basic challenge otherwise; confluent-kafka's
SchemaRegistryClient with `basic.auth.user.info`. One process and two workers. With the broker's
key store (ssl.keystore.location) the registry serves HTTPS."""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import time

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from broker.security.credentials import CredentialStore
from client import WireClient
from kafka_wire.sasl import SCRAM_MECHANISMS
from testing.broker_process import BrokerProcess, free_port
from test_schema_registry import Registry, record

PASSWORD = "registry-secret"


@pytest.fixture(scope="module", params=[1, 2], ids=["one-process", "two-workers"])
def registry(tmp_path_factory, request):
    port = free_port()
    process = BrokerProcess(tmp_path_factory.mktemp("registry-auth"),
                            config={"schema.registry.port": port, "num.worker.processes": request.param})
    CredentialStore(process.log_dir).set_password("alice", PASSWORD, SCRAM_MECHANISMS["SCRAM-SHA-256"])
    process.start()
    try:
        registry = Registry(process, port)
        registry.wait_until_serving()
        yield registry
    finally:
        process.stop()


def basic(user: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.mark.parametrize("headers", [
    {},
    basic("alice", "wrong"),
    basic("mallory", PASSWORD),
    {"Authorization": "Basic not-base64!"},
    {"Authorization": "Bearer " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()},
    {"Authorization": "Basic " + base64.b64encode(b"alice").decode()},  # no password separator
])
def test_without_the_right_credentials_it_is_401_with_a_challenge(registry, headers):
    status, body, answered = registry.raw("GET", "/subjects", headers=headers)
    assert status == 401
    assert json.loads(body) == {"error_code": 401, "message": "Unauthorized"}
    assert answered["WWW-Authenticate"] == 'Basic realm="kafka-wire Schema Registry"'
    # A refused request does not end the connection's usefulness to Kafka clients of the broker.
    with WireClient(registry.process.bootstrap, timeout=5) as client:
        assert client.call("ApiVersions", 3, {"client_software_name": "t",
                                              "client_software_version": "1"}).error_code == 0


def test_the_right_credentials_are_served(registry):
    status, body, _ = registry.raw("GET", "/subjects", headers=basic("alice", PASSWORD))
    assert status == 200 and isinstance(json.loads(body), list)
    status, _, _ = registry.raw("GET", "/schemas/types", headers=basic("alice", PASSWORD))  # (remembered)
    assert status == 200


def test_confluent_client_with_basic_auth_user_info(registry):
    client = SchemaRegistryClient({"url": registry.url, "basic.auth.user.info": f"alice:{PASSWORD}"})
    subject = f"auth-{registry.port}-value"
    schema_id = client.register_schema(subject, Schema(record("Auth", {"name": "n", "type": "int"}), "AVRO"))
    assert client.get_latest_version(subject).schema_id == schema_id
    anonymous = SchemaRegistryClient({"url": registry.url})
    with pytest.raises(SchemaRegistryError) as refused:
        anonymous.get_subjects()
    assert refused.value.http_status_code == 401
    wrong = SchemaRegistryClient({"url": registry.url, "basic.auth.user.info": "alice:nope"})
    with pytest.raises(SchemaRegistryError) as refused:
        wrong.get_latest_version(subject)
    assert refused.value.http_status_code == 401


# -- TLS: the broker's key store serves the registry over HTTPS ---------------------------------------


def test_https_with_the_brokers_key_store_and_basic_auth(tmp_path):
    from test_security import make_certificates

    certificates = make_certificates(tmp_path / "certs")
    port = free_port()
    process = BrokerProcess(tmp_path / "broker", config={
        "schema.registry.port": port, "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certificates.server)})
    CredentialStore(process.log_dir).set_password("alice", PASSWORD, SCRAM_MECHANISMS["SCRAM-SHA-256"])
    process.start()
    try:
        url = f"https://localhost:{port}"
        deadline = time.monotonic() + 30
        context = ssl.create_default_context(cafile=str(certificates.ca))
        while True:
            try:
                connection = http.client.HTTPSConnection("localhost", port, timeout=10, context=context)
                connection.request("GET", "/schemas/types", headers=basic("alice", PASSWORD))
                answer = connection.getresponse()
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline, process.log_report()
                time.sleep(0.1)
        assert answer.status == 200 and "AVRO" in json.loads(answer.read())
        connection.close()
        # Plain HTTP on the HTTPS port gets no answer, and the listener serves TLS clients after it.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as plain:
            plain.sendall(b"GET /subjects HTTP/1.1\r\nHost: x\r\n\r\n")
            assert not plain.recv(1024).startswith(b"HTTP/1.1 200")
        client = SchemaRegistryClient({"url": url, "ssl.ca.location": str(certificates.ca),
                                       "basic.auth.user.info": f"alice:{PASSWORD}"})
        subject = "tls-value"
        schema_id = client.register_schema(subject, Schema(record("Tls", {"name": "n", "type": "int"}), "AVRO"))
        assert client.get_latest_version(subject).schema_id == schema_id
        assert "schema registry on https://" in process.log_path.read_text()
    finally:
        process.stop()


# -- ACLs: the broker's Kafka ACLs as Confluent's Topic ACL authorizer maps them -----------------------


@pytest.fixture(scope="module", params=[1, 2], ids=["acl-one-process", "acl-two-workers"])
def guarded(tmp_path_factory, request):
    from broker.security.authorizer import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
    from broker.security.authorizer import StandardAuthorizer

    port = free_port()
    process = BrokerProcess(tmp_path_factory.mktemp("registry-acls"), config={
        "schema.registry.port": port, "num.worker.processes": request.param,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin"})
    store = CredentialStore(process.log_dir)
    for user in ("admin", "alice", "bob", "carol"):
        store.set_password(user, PASSWORD, SCRAM_MECHANISMS["SCRAM-SHA-256"])
    StandardAuthorizer(process.log_dir).create([
        AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, f"User:{user}", "*", operation,
                   AclPermissionType.ALLOW)
        for user, operations in (("alice", (AclOperation.READ, AclOperation.WRITE)), ("bob", (AclOperation.READ,)))
        for operation in operations])
    process.start()
    try:
        registry = Registry(process, port)
        registry.wait_until_serving()
        yield registry
    finally:
        process.stop()


def as_user(registry, user: str, method: str, path: str, body=None) -> tuple[int, object]:
    status, data, _ = registry.raw(method, path, None if body is None else json.dumps(body).encode(),
                                   headers=basic(user, PASSWORD))
    return status, json.loads(data)


def test_subjects_follow_their_topics_acls(guarded):
    schema = {"schema": record("Order", {"name": "id", "type": "long"})}
    status, answer = as_user(guarded, "bob", "POST", "/subjects/orders-value/versions", schema)
    assert (status, answer) == (403, {"error_code": 40301,
                                      "message": "User is denied operation SUBJECT_WRITE on Subject: orders-value"})
    status, answer = as_user(guarded, "alice", "POST", "/subjects/orders-value/versions", schema)
    assert status == 200
    schema_id = answer["id"]
    assert as_user(guarded, "bob", "GET", "/subjects/orders-value/versions")[0] == 200  # READ on orders
    assert as_user(guarded, "bob", "GET", f"/schemas/ids/{schema_id}")[0] == 200  # READ on one of its topics
    assert as_user(guarded, "carol", "GET", f"/schemas/ids/{schema_id}")[0] == 403
    assert as_user(guarded, "carol", "GET", "/subjects/orders-value/versions/1")[0] == 403
    guid = answer["guid"]  # by guid as by id: READ on a topic of one of its subjects
    assert as_user(guarded, "bob", "GET", f"/schemas/guids/{guid}")[0] == 200
    assert as_user(guarded, "carol", "GET", f"/schemas/guids/{guid}")[0] == 403
    assert as_user(guarded, "carol", "GET", f"/schemas/guids/{guid}/ids")[0] == 403
    assert as_user(guarded, "carol", "GET", "/subjects/orders-value/metadata?key=a&value=b")[0] == 403
    assert as_user(guarded, "bob", "GET", "/subjects/orders-value/metadata?key=a&value=b")[0] == 404
    status, _, _ = guarded.raw("DELETE", "/contexts/.unused", headers=basic("alice", PASSWORD))
    assert status == 403  # a super user's
    assert guarded.raw("DELETE", "/contexts/.unused", headers=basic("admin", PASSWORD))[0] == 204
    assert as_user(guarded, "bob", "GET", "/config/orders-value")[0] in (200, 404)  # SUBJECT_COMPATIBILITY_READ
    assert as_user(guarded, "bob", "PUT", "/config/orders-value", {"compatibility": "NONE"})[0] == 403
    assert as_user(guarded, "alice", "PUT", "/config/orders-value", {"compatibility": "NONE"})[0] == 200
    assert as_user(guarded, "bob", "DELETE", "/subjects/orders-value")[0] == 403  # SUBJECT_DELETE: WRITE
    # A subject named after no topic, and the global operations, are a super user's.
    assert as_user(guarded, "alice", "POST", "/subjects/free-form/versions", schema)[0] == 403
    assert as_user(guarded, "alice", "GET", "/subjects")[0] == 403
    assert as_user(guarded, "alice", "GET", "/schemas")[0] == 403  # every subject's schemas: GLOBAL_SUBJECTS_READ
    assert [s["subject"] for s in as_user(guarded, "admin", "GET", "/schemas")[1]] == ["orders-value"]
    assert as_user(guarded, "alice", "PUT", "/config", {"compatibility": "FULL"})[0] == 403
    assert as_user(guarded, "admin", "GET", "/subjects") == (200, ["orders-value"])
    assert as_user(guarded, "admin", "POST", "/subjects/free-form/versions", schema)[0] == 200
    assert as_user(guarded, "carol", "GET", "/schemas/types")[0] == 200  # names nothing
    assert as_user(guarded, "alice", "DELETE", "/subjects/orders-value")[0] == 200
