"""The console's Schema Registry pages (/api/registry) against a broker process serving both the
console and the registry: what confluent-kafka's SchemaRegistryClient registered and configured is
what the console shows (subjects, versions, schema text, compatibility and mode per subject and
global), soft deletes marked, Confluent's errors as the console's, and the registry's ACLs obeyed
for the logged-in user."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from urllib.parse import quote

import pytest
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, \
    ResourceType
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient

from broker.security.credentials import CredentialStore
from kafka_wire.sasl import SCRAM_MECHANISMS
from testing.broker_process import free_port
from tests.console.conftest import PASSWORDS, finish, sasl_config, start_console_broker
from tests.console.test_console_browser import browse, browser_env  # noqa: F401 (a fixture, used by name)

pytestmark = pytest.mark.timeout(180)


def avro_record(name: str, *fields: tuple[str, object]) -> str:
    return json.dumps({"type": "record", "name": name,
                       "fields": [{"name": n, "type": t} for n, t in fields]})


def login(console, user: str) -> str:
    status, body, headers = console.call("POST", "login", {"username": user, "password": PASSWORDS[user]})
    assert status == 200, body
    return headers["Set-Cookie"].split(";")[0]


@pytest.fixture(scope="module")
def registry_console(tmp_path_factory):
    """A broker serving the console (read-only, the default) and the Schema Registry."""
    registry_port = free_port()
    console = start_console_broker(tmp_path_factory.mktemp("console-registry"), {"schema.registry.port": registry_port})
    console.registry = SchemaRegistryClient({"url": f"http://127.0.0.1:{registry_port}"})
    yield console
    finish(console)


def test_the_console_shows_subjects_versions_schemas_and_settings(registry_console):
    client = registry_console.registry
    v1 = avro_record("Order", ("id", "long"))
    # A default for the new field keeps BACKWARD
    v2 = json.dumps({"type": "record", "name": "Order", "fields": [
        {"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None}]})
    id1 = client.register_schema("orders-value", Schema(v1, "AVRO"))
    id2 = client.register_schema("orders-value", Schema(v2, "AVRO"))
    json_id = client.register_schema("events-value", Schema(json.dumps(
        {"type": "object", "properties": {"kind": {"type": "string"}}}), "JSON"))
    proto = 'syntax = "proto3";\npackage shop;\n\nmessage Item {\n  string sku = 1;\n}\n'
    proto_id = client.register_schema("items-value", Schema(proto, "PROTOBUF"))
    client.set_compatibility("orders-value", "FULL_TRANSITIVE")
    client.set_compatibility(level="FORWARD")
    client.update_mode("events-value", "READONLY")

    session = registry_console.get("session")
    assert session["schema_registry"] is True
    summary = registry_console.get("registry")
    assert summary["compatibility"] == "FORWARD" and summary["mode"] == "READWRITE"
    assert summary["global_visible"] is True
    assert set(summary["types"]) == {"AVRO", "JSON", "PROTOBUF"}
    rows = {row["subject"]: row for row in summary["subjects"]}
    assert set(rows) == {"orders-value", "events-value", "items-value"}
    assert [r["subject"] for r in summary["subjects"]] == sorted(rows)
    assert rows["orders-value"] == {"subject": "orders-value", "deleted": False, "versions": 2,
                                    "latest_version": 2, "latest_id": id2, "schema_type": "AVRO",
                                    "compatibility": "FULL_TRANSITIVE", "mode": None}
    assert rows["events-value"]["schema_type"] == "JSON" and rows["events-value"]["latest_id"] == json_id
    assert rows["events-value"]["mode"] == "READONLY" and rows["events-value"]["compatibility"] is None
    assert rows["items-value"]["schema_type"] == "PROTOBUF" and rows["items-value"]["latest_id"] == proto_id

    subject = registry_console.get("registry/subjects/orders-value")
    assert [(v["version"], v["id"], v["schema_type"], v["deleted"]) for v in subject["versions"]] == [
        (1, id1, "AVRO", False), (2, id2, "AVRO", False)]
    assert subject["compatibility"]["subject"] == "FULL_TRANSITIVE"
    assert subject["compatibility"]["effective"] == "FULL_TRANSITIVE"
    assert subject["mode"] == {"subject": None, "effective": "READWRITE"}
    assert subject["latest"]["version"] == 2 and json.loads(subject["latest"]["schema"]) == json.loads(v2)
    # Without a level of its own, the global one is in force
    events = registry_console.get("registry/subjects/events-value")
    assert events["compatibility"] == {"subject": None, "effective": "FORWARD", "normalize": None}
    assert events["mode"] == {"subject": "READONLY", "effective": "READONLY"}

    first = registry_console.get("registry/subjects/orders-value/versions/1")
    assert (first["subject"], first["version"], first["id"], first["schema_type"]) == ("orders-value", 1, id1, "AVRO")
    assert json.loads(first["schema"]) == json.loads(v1)
    assert first["pretty"] == json.dumps(json.loads(first["schema"]), indent=2)
    assert registry_console.get("registry/subjects/orders-value/versions/latest")["version"] == 2
    item = registry_console.get("registry/subjects/items-value/versions/1")
    assert item["schema_type"] == "PROTOBUF" and "message Item" in item["schema"] and item["pretty"] == item["schema"]


def test_references_and_soft_deletes_are_shown(registry_console):
    client = registry_console.registry
    address = avro_record("Address", ("street", "string"))
    address_id = client.register_schema("address-value", Schema(address, "AVRO"))
    customer = json.dumps({"type": "record", "name": "Customer", "fields": [{"name": "home", "type": "Address"}]})
    client.register_schema("customer-value", Schema(customer, "AVRO", [SchemaReference("Address", "address-value", 1)]))
    customer_version = registry_console.get("registry/subjects/customer-value/versions/1")
    assert customer_version["references"] == [{"name": "Address", "subject": "address-value", "version": 1}]
    referenced = registry_console.get("registry/subjects/address-value/versions/1")
    assert referenced["referenced_by"] == [customer_version["id"]] and referenced["id"] == address_id

    client.set_compatibility("audit-value", "NONE")
    client.register_schema("audit-value", Schema(avro_record("Audit", ("at", "long")), "AVRO"))
    client.register_schema("audit-value", Schema(avro_record("Audit", ("at", "long"), ("who", "string")), "AVRO"))
    client.delete_version("audit-value", 1)
    audit = registry_console.get("registry/subjects/audit-value")
    assert [(v["version"], v["deleted"]) for v in audit["versions"]] == [(1, True), (2, False)]
    assert audit["deleted"] is False and audit["latest"]["version"] == 2
    assert registry_console.get("registry/subjects/audit-value/versions/1")["deleted"] is True

    client.delete_subject("audit-value")
    assert "audit-value" not in {r["subject"] for r in registry_console.get("registry")["subjects"]}
    with_deleted = {r["subject"]: r for r in registry_console.get("registry?deleted=true")["subjects"]}
    assert with_deleted["audit-value"]["deleted"] is True and with_deleted["audit-value"]["latest_version"] == 2
    gone = registry_console.get("registry/subjects/audit-value")
    assert gone["deleted"] is True and gone["latest"] is None
    assert [v["deleted"] for v in gone["versions"]] == [True, True]


def test_subjects_of_other_contexts_are_listed_qualified(registry_console):
    client = registry_console.registry
    staging_id = client.register_schema(":.staging:orders-value",
                                        Schema(avro_record("Staged", ("at", "long")), "AVRO"))
    client.set_compatibility(":.staging:", "NONE")
    summary = registry_console.get("registry")
    assert summary["contexts"] == [".", ".staging"]
    row = next(r for r in summary["subjects"] if r["subject"] == ":.staging:orders-value")
    assert (row["latest_id"], row["compatibility"]) == (staging_id, None)
    subject = registry_console.get("registry/subjects/" + quote(":.staging:orders-value"))
    # The context's level is in force for its subjects
    assert subject["compatibility"] == {"subject": None, "effective": "NONE", "normalize": None}
    assert subject["latest"]["id"] == staging_id == 1


@pytest.mark.parametrize("path, status, error, code", [
    ("registry/subjects/no-such-value", 404, "SUBJECT_NOT_FOUND", 40401),
    ("registry/subjects/no-such-value/versions/1", 404, "SUBJECT_NOT_FOUND", 40401),
    ("registry/subjects/orders-value/versions/99", 404, "VERSION_NOT_FOUND", 40402),
    ("registry/subjects/orders-value/versions/x", 422, "INVALID_VERSION", 42202),
])
def test_registry_errors_are_the_consoles(registry_console, path, status, error, code):
    registry_console.registry.register_schema("orders-value", Schema(avro_record("Order", ("id", "long")), "AVRO"))
    got, body, _ = registry_console.call("GET", path)
    assert (got, body["error"], body["registry_error_code"]) == (status, error, code), body
    assert body["message"]


def test_a_broker_without_the_registry_says_so(writable_console):
    assert writable_console.get("session")["schema_registry"] is False
    status, body, _ = writable_console.call("GET", "registry")
    assert (status, body["error"]) == (404, "NO_SCHEMA_REGISTRY")


@pytest.fixture(scope="module")
def secure_registry_console(tmp_path_factory):
    """Console and registry on a broker with SCRAM users and ACLs: admin is a super user; alice
    may read the topic `alice-visible` (so the subject alice-visible-value) and nothing else."""
    kafka_port, registry_port = free_port(), free_port()

    def add_users(process):
        store = CredentialStore(process.log_dir)
        for user, password in PASSWORDS.items():
            store.set_password(user, password, SCRAM_MECHANISMS["SCRAM-SHA-256"])

    console = start_console_broker(tmp_path_factory.mktemp("console-registry-secure"), {
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{kafka_port}",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin", "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "schema.registry.port": registry_port,
    }, before_start=add_users, kafka_port=kafka_port)
    admin = AdminClient(sasl_config(console, "admin"))
    binding = AclBinding(ResourceType.TOPIC, "alice-visible", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    for future in admin.create_acls([binding]).values():
        future.result(30)
    console.registry = SchemaRegistryClient({"url": f"http://127.0.0.1:{registry_port}",
                                             "basic.auth.user.info": f"admin:{PASSWORDS['admin']}"})
    console.registry_url = f"http://127.0.0.1:{registry_port}"
    yield console
    finish(console)


def test_the_console_user_sees_only_the_subjects_the_acls_let_them_read(secure_registry_console):
    console = secure_registry_console
    client = console.registry
    visible = client.register_schema("alice-visible-value", Schema(avro_record("Seen", ("a", "int")), "AVRO"))
    client.register_schema("secret-value", Schema(avro_record("Secret", ("b", "int")), "AVRO"))
    client.set_compatibility("alice-visible-value", "NONE")

    status, body, _ = console.call("GET", "registry")
    assert (status, body["error"]) == (401, "LOGIN_REQUIRED")
    alice = login(console, "alice")
    summary = console.get("registry", cookie=alice)
    assert [r["subject"] for r in summary["subjects"]] == ["alice-visible-value"]
    assert summary["subjects"][0]["latest_id"] == visible and summary["subjects"][0]["compatibility"] == "NONE"
    # The global config and mode are the super users'
    assert (summary["compatibility"], summary["mode"], summary["global_visible"]) == (None, None, False)
    assert console.get("registry/subjects/alice-visible-value", cookie=alice)["compatibility"]["effective"] == "NONE"
    for path in ("registry/subjects/secret-value", "registry/subjects/secret-value/versions/1"):
        status, body, _ = console.call("GET", path, cookie=alice)
        assert (status, body["error"], body["registry_error_code"]) == (
            403, "SCHEMA_REGISTRY_AUTHORIZATION_FAILED", 40301), body
        assert body["message"] == "User is denied operation SUBJECT_READ on Subject: secret-value"

    admin = login(console, "admin")
    summary = console.get("registry", cookie=admin)
    assert [r["subject"] for r in summary["subjects"]] == ["alice-visible-value", "secret-value"]
    assert (summary["compatibility"], summary["mode"], summary["global_visible"]) == ("BACKWARD", "READWRITE", True)
    assert console.get(f"registry/subjects/{quote('secret-value')}/versions/1", cookie=admin)["version"] == 1


def test_the_schema_pages_in_a_browser(browser_env, registry_console):  # noqa: F811 (the fixture)
    client = registry_console.registry
    first = avro_record("Payment", ("id", "long"))
    second = json.dumps({"type": "record", "name": "Payment", "fields": [
        {"name": "id", "type": "long"}, {"name": "currency", "type": "string", "default": "EUR"}]})
    first_id = client.register_schema("browser-payments-value", Schema(first, "AVRO"))
    second_id = client.register_schema("browser-payments-value", Schema(second, "AVRO"))
    client.set_compatibility("browser-payments-value", "FULL")
    client.register_schema("browser-gone-value", Schema(avro_record("Gone", ("x", "int")), "AVRO"))
    client.delete_subject("browser-gone-value")
    global_level = client.get_compatibility()

    shown = browse(browser_env, "schemas", url=registry_console.url, subject="browser-payments-value",
                   deleted="browser-gone-value")

    assert shown["nav"] == "Schema Registry"
    assert shown["global"] == [global_level, "READWRITE"]
    assert "null" not in shown["lines"] and "undefined" not in shown["lines"]
    rows = {row[0]: row for row in shown["subjects"]}
    # subject, type, latest version, latest id, versions, compatibility, mode
    assert rows["browser-payments-value"] == ["browser-payments-value", "AVRO", "2", str(second_id), "2",
                                              "FULL subject", "READWRITE (global)"]
    assert shown["subject"] == ["browser-payments-value", "FULL", "READWRITE"]
    assert [row[:3] for row in shown["versions"]] == [["1", str(first_id), "AVRO"], ["2", str(second_id), "AVRO"]]
    assert json.loads(shown["latest_schema"]) == json.loads(second) and "\n" in shown["latest_schema"]
    assert json.loads(shown["first_schema"]) == json.loads(first)
    assert shown["deleted_hidden"] is True
    assert shown["deleted_row"][0] == "browser-gone-value deleted"


def test_a_schema_id_is_authorized_in_the_context_it_is_read_from(secure_registry_console):
    """Ids are per context: id 1 of .staging is another schema than id 1 of the default context,
    and reading it through ?subject=:.staging:... needs READ on that subject's topic."""
    console = secure_registry_console
    client = console.registry
    visible = client.register_schema("alice-visible-value", Schema(avro_record("Seen", ("a", "int")), "AVRO"))
    hidden = client.register_schema(":.staging:secret-value", Schema(avro_record("Hidden", ("h", "int")), "AVRO"))
    assert visible == hidden == 1

    def as_alice(path: str) -> int:
        request = urllib.request.Request(console.registry_url + path, headers={
            "Authorization": "Basic " + base64.b64encode(f"alice:{PASSWORDS['alice']}".encode()).decode()})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    assert as_alice("/schemas/ids/1") == 200
    assert as_alice("/schemas/ids/1?subject=" + quote(":.staging:secret-value", safe="")) == 403
    assert as_alice("/schemas/ids/1?subject=" + quote(":.staging:", safe="")) == 403
    assert as_alice("/contexts/.staging/schemas/ids/1") == 403
