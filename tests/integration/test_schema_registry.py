"""The Schema Registry (registry/, schema.registry.port) against a broker process: Confluent's endpoints,
status codes and error bodies, `_schemas` as Confluent's registry writes it, ids across a restart,
and confluent-kafka's SchemaRegistryClient with the Avro and JSON serializers through a real
Producer and Consumer. KAFKA_WIRE_TEST_WORKERS=2 runs all of it with two worker processes; the
round trip also runs with two workers whatever that says.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
import urllib.parse
from contextlib import contextmanager

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from testing.broker_process import REPO_ROOT, BrokerProcess, free_port, running_broker, serve_until_exit

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def record(name: str, *fields: dict) -> str:
    return json.dumps({"type": "record", "name": name, "fields": list(fields)})


USER_V1 = record("User", {"name": "name", "type": "string"})
USER_V2 = record("User", {"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": 0})
DEL_V1 = record("Deleted", {"name": "name", "type": "string"})
DEL_V2 = record("Deleted", {"name": "name", "type": "string"}, {"name": "n", "type": "int", "default": 0})
USER_NO_DEFAULT = record("User", {"name": "name", "type": "string"}, {"name": "email", "type": "string"})


class Registry:
    """HTTP calls to a broker's Schema Registry."""

    def __init__(self, process: BrokerProcess, port: int) -> None:
        self.process = process
        self.port = port
        self.url = f"http://127.0.0.1:{port}"

    def raw(self, method: str, path: str, body: bytes | None = None,
            headers: dict | None = None) -> tuple[int, bytes, dict]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            sent = {"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE, **(headers or {})}
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            return response.status, response.read(), dict(response.getheaders())
        finally:
            connection.close()

    def call(self, method: str, path: str, body=None) -> tuple[int, object]:
        status, data, headers = self.raw(method, path, None if body is None else json.dumps(body).encode())
        assert headers["Content-Type"] == CONTENT_TYPE
        return status, json.loads(data)

    def ok(self, method: str, path: str, body=None):
        status, answer = self.call(method, path, body)
        assert status == 200, (method, path, status, answer)
        return answer

    def error(self, method: str, path: str, body=None) -> tuple[int, int]:
        """(HTTP status, Confluent error_code) of a call that must fail."""
        status, answer = self.call(method, path, body)
        assert set(answer) == {"error_code", "message"}, answer
        assert isinstance(answer["message"], str) and answer["message"]
        return status, answer["error_code"]

    def register(self, subject: str, schema: str, schema_type: str | None = None) -> int:
        body = {"schema": schema} | ({"schemaType": schema_type} if schema_type else {})
        return self.ok("POST", f"/subjects/{quote(subject)}/versions", body)["id"]

    def wait_until_serving(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.raw("GET", "/subjects")
                return
            except OSError:
                if time.monotonic() > deadline or not self.process.is_running():
                    raise AssertionError("the registry did not come up\n" + self.process.log_report()) from None
                time.sleep(0.05)


def quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


@contextmanager
def registry_broker(tmp_dir=None, **config):
    port = free_port()
    with running_broker(tmp_dir, config={"schema.registry.port": port, **config}) as process:
        registry = Registry(process, port)
        registry.wait_until_serving()
        yield registry


@pytest.fixture(scope="module")
def registry():
    with registry_broker() as registry:
        yield registry


def produce_and_consume(bootstrap: str, topic: str, values: list[bytes]) -> list[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < len(values) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    return got


# -- registering, reading back, looking up ---------------------------------------------------------


def test_register_read_back_and_look_up(registry):
    first = registry.register("reg-value", USER_V1)
    assert registry.register("reg-value", USER_V1) == first  # the same schema again: the same id
    assert registry.ok("GET", "/subjects/reg-value/versions") == [1]
    second = registry.register("reg-value", USER_V2)
    assert second != first
    assert registry.ok("GET", "/subjects/reg-value/versions") == [1, 2]
    assert "reg-value" in registry.ok("GET", "/subjects")

    latest = registry.ok("GET", "/subjects/reg-value/versions/latest")
    assert latest == {"subject": "reg-value", "version": 2, "id": second, "guid": latest["guid"],
                      "schema": latest["schema"]}
    assert json.loads(latest["schema"]) == json.loads(USER_V2)
    assert registry.ok("GET", "/subjects/reg-value/versions/-1") == latest
    assert registry.ok("GET", "/subjects/reg-value/versions/1")["id"] == first
    assert registry.ok("GET", "/subjects/reg-value/versions/1/schema") == json.loads(USER_V1)

    assert json.loads(registry.ok("GET", f"/schemas/ids/{first}")["schema"]) == json.loads(USER_V1)
    assert "schemaType" not in registry.ok("GET", f"/schemas/ids/{first}")  # AVRO, as Confluent omits it
    assert registry.ok("GET", f"/schemas/ids/{first}/versions") == [{"subject": "reg-value", "version": 1}]
    assert registry.ok("GET", f"/schemas/ids/{first}/subjects") == ["reg-value"]

    # Ids are global: the same schema under another subject has the same id.
    assert registry.register("reg-other", USER_V1) == first
    assert registry.ok("GET", f"/schemas/ids/{first}/subjects") == ["reg-other", "reg-value"]
    assert registry.ok("GET", f"/schemas/ids/{first}/versions?subject=reg-other") == [
        {"subject": "reg-other", "version": 1}]
    assert registry.ok("GET", f"/schemas/ids/{first}?subject=no-such-subject")["schema"]

    found = registry.ok("POST", "/subjects/reg-value", {"schema": USER_V1})
    assert found == {"subject": "reg-value", "version": 1, "id": first, "guid": found["guid"], "schema": found["schema"]}
    # The same schema written differently (other spacing, a type as an object) is the same schema.
    assert registry.register("reg-prim", '"string"') == registry.register("reg-prim", '{ "type" : "string" }')


def test_json_schemas_are_registered_with_their_type(registry):
    schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}})
    schema_id = registry.register("reg-json", schema, "JSON")
    assert registry.ok("GET", f"/schemas/ids/{schema_id}")["schemaType"] == "JSON"
    assert registry.ok("GET", "/subjects/reg-json/versions/1")["schemaType"] == "JSON"
    assert registry.ok("POST", "/subjects/reg-json", {"schema": schema, "schemaType": "JSON"})["id"] == schema_id
    # Looked up as Avro (the default type), a JSON Schema does not parse.
    assert registry.error("POST", "/subjects/reg-json", {"schema": schema}) == (422, 42201)
    # A text that is both a JSON Schema and an Avro schema is two schemas, with two ids.
    both = '{"type": "string"}'
    assert registry.register("reg-both", both, "JSON") != registry.register("reg-both-avro", both)
    assert registry.error("POST", "/subjects/reg-both", {"schema": both}) == (404, 40403)


def test_types_and_mode(registry):
    assert registry.ok("GET", "/schemas/types") == ["JSON", "PROTOBUF", "AVRO"]
    assert registry.ok("GET", "/mode") == {"mode": "READWRITE"}
    assert registry.error("GET", "/mode/types-value") == (404, 40409)
    assert registry.ok("GET", "/mode/types-value?defaultToGlobal=true") == {"mode": "READWRITE"}
    assert registry.ok("GET", "/") == {}


# -- errors ----------------------------------------------------------------------------------------


def test_not_found_errors(registry):
    registry.register("nf-value", USER_V1)
    assert registry.error("GET", "/subjects/nf-missing/versions") == (404, 40401)
    assert registry.error("GET", "/subjects/nf-missing/versions/1") == (404, 40401)
    assert registry.error("POST", "/subjects/nf-missing", {"schema": USER_V1}) == (404, 40401)
    assert registry.error("DELETE", "/subjects/nf-missing") == (404, 40401)
    assert registry.error("GET", "/subjects/nf-value/versions/7") == (404, 40402)
    assert registry.error("DELETE", "/subjects/nf-value/versions/7") == (404, 40402)
    assert registry.error("GET", "/schemas/ids/99999") == (404, 40403)
    assert registry.error("POST", "/subjects/nf-value", {"schema": USER_V2}) == (404, 40403)
    assert registry.error("GET", "/nothing/here") == (404, 404)
    assert registry.error("GET", "/schemas/ids/abc") == (404, 404)
    assert registry.error("PATCH", "/subjects") == (405, 405)


@pytest.mark.parametrize("version", ["0", "abc", "2147483648", "-2"])
def test_an_invalid_version_is_42202(registry, version):
    registry.register("iv-value", USER_V1)
    assert registry.error("GET", f"/subjects/iv-value/versions/{version}") == (422, 42202)
    assert registry.error("DELETE", f"/subjects/iv-value/versions/{version}") == (422, 42202)


@pytest.mark.parametrize("body", [
    {"schema": "{not json"},
    {"schema": json.dumps({"type": "record", "name": "R"})},  # no fields
    {"schema": json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "nosuchtype"}]})},
    {"schema": json.dumps({"type": "enum", "name": "E", "symbols": ["A", "A"]})},
    {"schema": ""},
    {},
    {"schema": json.dumps({"type": "object", "properties": {"a": {"type": 12}}}), "schemaType": "JSON"},
    {"schema": "[1, 2]", "schemaType": "JSON"},
    {"schema": "syntax = \"proto3\"; message M { string a = 1 }", "schemaType": "PROTOBUF"},
    {"schema": USER_V1, "references": [{"name": "x", "subject": "y", "version": 1}]},
])
def test_an_invalid_schema_is_42201(registry, body):
    assert registry.error("POST", "/subjects/inv-value/versions", body) == (422, 42201)
    assert registry.error("POST", "/compatibility/subjects/inv-value/versions/latest", body) == (422, 42201)
    assert registry.error("GET", "/subjects/inv-value/versions") == (404, 40401)  # nothing registered


def test_bad_requests_get_confluent_errors_and_the_broker_keeps_serving(registry):
    status, data, _ = registry.raw("POST", "/subjects/bad-value/versions", b"{not json")
    assert status == 400 and json.loads(data)["error_code"] == 400
    status, data, _ = registry.raw("POST", "/subjects/bad-value/versions", b"\xff\xfe")
    assert status == 400 and json.loads(data)["error_code"] == 400
    assert registry.error("POST", "/subjects/bad-value/versions", ["a list"]) == (422, 422)
    huge = json.dumps({"schema": json.dumps({"type": "string", "doc": "x" * (5 << 20)})}).encode()
    status, data, _ = registry.raw("POST", "/subjects/bad-value/versions", huge)
    assert status == 413 and json.loads(data)["error_code"] == 413
    status, data, _ = registry.raw("GET", "/subjects", headers={"X-Big": "y" * 20000})
    assert status == 431 and json.loads(data)["error_code"] == 431
    # A request line that is not HTTP, then a request on a fresh connection.
    with socket.create_connection(("127.0.0.1", registry.port), timeout=10) as sock:
        sock.sendall(b"garbage\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 400")
    assert registry.error("GET", "/subjects/bad-value/versions") == (404, 40401)
    assert produce_and_consume(registry.process.bootstrap, "after-bad-requests", [b"still", b"serving"]) == [
        b"still", b"serving"]


def test_keep_alive_serves_several_requests_on_one_connection(registry):
    connection = http.client.HTTPConnection("127.0.0.1", registry.port, timeout=30)
    try:
        for _ in range(3):
            connection.request("GET", "/schemas/types")
            response = connection.getresponse()
            assert response.status == 200 and json.loads(response.read()) == ["JSON", "PROTOBUF", "AVRO"]
    finally:
        connection.close()


# -- compatibility and config ----------------------------------------------------------------------


def test_global_and_subject_config(registry):
    assert registry.ok("GET", "/config") == {"compatibilityLevel": "BACKWARD"}
    assert registry.error("GET", "/config/cfg-value") == (404, 40408)
    assert registry.ok("GET", "/config/cfg-value?defaultToGlobal=true") == {"compatibilityLevel": "BACKWARD"}
    assert registry.ok("PUT", "/config/cfg-value", {"compatibility": "full"}) == {"compatibility": "FULL"}
    assert registry.ok("GET", "/config/cfg-value") == {"compatibilityLevel": "FULL"}
    assert registry.error("PUT", "/config/cfg-value", {"compatibility": "SIDEWAYS"}) == (422, 42203)
    assert registry.error("PUT", "/config", {}) == (422, 42203)
    assert registry.ok("DELETE", "/config/cfg-value") == {"compatibilityLevel": "FULL"}
    assert registry.error("GET", "/config/cfg-value") == (404, 40408)
    assert registry.ok("GET", "/config") == {"compatibilityLevel": "BACKWARD"}


def test_backward_refuses_a_field_without_default_and_none_accepts_it(registry):
    registry.register("compat-value", USER_V1)
    assert registry.ok("POST", "/compatibility/subjects/compat-value/versions/latest",
                       {"schema": USER_NO_DEFAULT}) == {"is_compatible": False}
    verbose = registry.ok("POST", "/compatibility/subjects/compat-value/versions/1?verbose=true",
                          {"schema": USER_NO_DEFAULT})
    assert verbose["is_compatible"] is False and any("email" in m for m in verbose["messages"])
    assert registry.ok("POST", "/compatibility/subjects/compat-value/versions",
                       {"schema": USER_V2}) == {"is_compatible": True}
    assert registry.error("POST", "/subjects/compat-value/versions", {"schema": USER_NO_DEFAULT}) == (409, 409)
    assert registry.error("POST", "/compatibility/subjects/compat-value/versions/9",
                          {"schema": USER_V2}) == (404, 40402)
    assert registry.error("POST", "/compatibility/subjects/compat-missing/versions/1",
                          {"schema": USER_V2}) == (404, 40401)
    registry.ok("PUT", "/config/compat-value", {"compatibility": "NONE"})
    registry.register("compat-value", USER_NO_DEFAULT)
    assert registry.ok("GET", "/subjects/compat-value/versions") == [1, 2]


def test_forward_and_transitive_levels(registry):
    v1 = record("T", {"name": "a", "type": "int"})
    v2 = record("T", {"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": ""})
    v3 = record("T", {"name": "b", "type": "string", "default": ""})  # drops a, which v1 needs
    registry.ok("PUT", "/config/fwd-value", {"compatibility": "FORWARD"})
    registry.register("fwd-value", v1)
    registry.register("fwd-value", v2)
    # FORWARD: v2 must read v3's data, which lacks a (no default in v2).
    assert registry.error("POST", "/subjects/fwd-value/versions", {"schema": v3}) == (409, 409)

    # t3 reads t2's data (b is there) but not t1's (b is missing and t3 has no default for it).
    t1 = record("W", {"name": "a", "type": "int"})
    t2 = record("W", {"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": "x"})
    t3 = record("W", {"name": "a", "type": "int"}, {"name": "b", "type": "string"})
    registry.ok("PUT", "/config/trans-value", {"compatibility": "BACKWARD_TRANSITIVE"})
    registry.register("trans-value", t1)
    registry.register("trans-value", t2)
    assert registry.ok("POST", "/compatibility/subjects/trans-value/versions", {"schema": t3}) == {
        "is_compatible": False}
    assert registry.ok("POST", "/compatibility/subjects/trans-value/versions/latest", {"schema": t3}) == {
        "is_compatible": True}  # one version named: that one alone
    assert registry.error("POST", "/subjects/trans-value/versions", {"schema": t3}) == (409, 409)
    registry.ok("PUT", "/config/trans-value", {"compatibility": "BACKWARD"})
    registry.register("trans-value", t3)
    assert registry.ok("GET", "/subjects/trans-value/versions") == [1, 2, 3]


def test_json_schema_compatibility_levels(registry):
    closed = {"type": "object", "properties": {"id": {"type": "integer"}}, "additionalProperties": False}
    added = {**closed, "properties": {"id": {"type": "integer"}, "note": {"type": "string"}}}
    required = {**added, "required": ["note"]}
    registry.register("jcompat-value", json.dumps(closed), "JSON")
    # BACKWARD (the default): an optional property added to a closed model is fine, a required one is not.
    verbose = registry.ok("POST", "/compatibility/subjects/jcompat-value/versions/latest?verbose=true",
                          {"schema": json.dumps(required), "schemaType": "JSON"})
    assert verbose["is_compatible"] is False
    assert any("REQUIRED_ATTRIBUTE_ADDED" in message for message in verbose["messages"])
    assert registry.error("POST", "/subjects/jcompat-value/versions",
                          {"schema": json.dumps(required), "schemaType": "JSON"}) == (409, 409)
    registry.register("jcompat-value", json.dumps(added), "JSON")
    # FORWARD: the old closed schema cannot read documents with a property it does not know.
    registry.ok("PUT", "/config/jcompat-fwd", {"compatibility": "FORWARD"})
    registry.register("jcompat-fwd", json.dumps(closed), "JSON")
    assert registry.error("POST", "/subjects/jcompat-fwd/versions",
                          {"schema": json.dumps(added), "schemaType": "JSON"}) == (409, 409)
    # FULL_TRANSITIVE checks every version: widening a maximum, then lowering it below the first.
    registry.ok("PUT", "/config/jcompat-full", {"compatibility": "FULL_TRANSITIVE"})
    registry.register("jcompat-full", json.dumps({"type": "string", "maxLength": 10}), "JSON")
    assert registry.error("POST", "/subjects/jcompat-full/versions",
                          {"schema": json.dumps({"type": "string", "maxLength": 20}), "schemaType": "JSON"}) == (
        409, 409)


# -- deletes ---------------------------------------------------------------------------------------


def test_soft_and_hard_deletes(registry):
    first = registry.register("del-value", DEL_V1)
    second = registry.register("del-value", DEL_V2)
    assert registry.error("DELETE", "/subjects/del-value/versions/1?permanent=true") == (404, 40407)
    assert registry.ok("DELETE", "/subjects/del-value/versions/1") == 1
    assert registry.error("DELETE", "/subjects/del-value/versions/1") == (404, 40406)
    assert registry.ok("GET", "/subjects/del-value/versions") == [2]
    assert registry.ok("GET", "/subjects/del-value/versions?deleted=true") == [1, 2]
    assert registry.error("GET", "/subjects/del-value/versions/1") == (404, 40402)
    assert registry.ok("GET", "/subjects/del-value/versions/1?deleted=true")["id"] == first
    assert registry.ok("GET", f"/schemas/ids/{first}")["schema"]  # a soft-deleted schema keeps its id
    assert registry.ok("DELETE", "/subjects/del-value/versions/1?permanent=true") == 1
    assert registry.ok("GET", "/subjects/del-value/versions?deleted=true") == [2]

    assert registry.error("DELETE", "/subjects/del-value?permanent=true") == (404, 40405)
    assert registry.ok("DELETE", "/subjects/del-value") == [2]
    assert "del-value" not in registry.ok("GET", "/subjects")
    assert "del-value" in registry.ok("GET", "/subjects?deleted=true")
    assert registry.error("GET", "/subjects/del-value/versions") == (404, 40401)
    assert registry.error("DELETE", "/subjects/del-value") == (404, 40404)
    assert registry.ok("DELETE", "/subjects/del-value?permanent=true") == [2]
    assert "del-value" not in registry.ok("GET", "/subjects?deleted=true")
    assert registry.error("GET", f"/schemas/ids/{second}") == (404, 40403)
    # Registering again after a hard delete starts the subject over; the schema gets a new id.
    assert registry.register("del-value", DEL_V1) > second
    assert registry.ok("GET", "/subjects/del-value/versions") == [1]


# -- modes -----------------------------------------------------------------------------------------


def test_readonly_mode_refuses_writes_per_subject_and_globally():
    with registry_broker() as registry:
        registry.register("ro-value", USER_V1)
        assert registry.ok("PUT", "/mode/ro-value", {"mode": "readonly"}) == {"mode": "READONLY"}
        assert registry.ok("GET", "/mode/ro-value") == {"mode": "READONLY"}
        status, answer = registry.call("POST", "/subjects/ro-value/versions", {"schema": USER_V2})
        assert (status, answer) == (422, {"error_code": 42205, "message": "Subject ro-value is in read-only mode"})
        assert registry.error("DELETE", "/subjects/ro-value/versions/1") == (422, 42205)
        assert registry.error("DELETE", "/subjects/ro-value") == (422, 42205)
        # Reads still answer, and other subjects still take registrations.
        assert registry.ok("POST", "/subjects/ro-value", {"schema": USER_V1})["version"] == 1
        registry.register("ro-other", USER_V1)
        assert registry.error("PUT", "/mode/ro-value", {"mode": "SIDEWAYS"}) == (422, 42204)
        assert registry.error("PUT", "/mode", {}) == (422, 42204)
        assert registry.ok("DELETE", "/mode/ro-value") == {"mode": "READONLY"}
        assert registry.error("DELETE", "/mode/ro-value") == (404, 40401)
        registry.register("ro-value", USER_V2)

        assert registry.ok("PUT", "/mode", {"mode": "READONLY"}) == {"mode": "READONLY"}
        assert registry.error("POST", "/subjects/ro-new/versions", {"schema": USER_V1}) == (422, 42205)
        registry.ok("PUT", "/mode/ro-new", {"mode": "READWRITE"})  # a subject's mode overrides the global one
        registry.register("ro-new", USER_V1)
        # The mode lives in _schemas under Confluent's MODE key, and survives a restart.
        records = read_schemas_topic(registry.process.bootstrap)
        assert ({"keytype": "MODE", "subject": None, "magic": 0}, {"mode": "READONLY"}) in records
        assert ({"keytype": "MODE", "subject": "ro-value", "magic": 0}, None) in records
        registry.process.stop()
        registry.process.start()
        registry.wait_until_serving()
        assert registry.ok("GET", "/mode") == {"mode": "READONLY"}
        assert registry.ok("GET", "/mode/ro-new") == {"mode": "READWRITE"}
        assert registry.error("POST", "/subjects/ro-value/versions", {"schema": USER_V1}) == (422, 42205)


def test_import_mode_registers_with_the_given_id_and_version():
    with registry_broker() as registry:
        registry.register("imp-existing", USER_V1)
        # Only an empty registry goes into IMPORT, unless forced.
        assert registry.error("PUT", "/mode", {"mode": "IMPORT"}) == (422, 42205)
        assert registry.ok("PUT", "/mode/imp-value", {"mode": "IMPORT"}) == {"mode": "IMPORT"}  # an empty subject
        # An id outside IMPORT mode, and no id inside it, are refused.
        assert registry.error("POST", "/subjects/imp-other/versions", {"schema": USER_V1, "id": 7}) == (422, 42205)
        assert registry.error("POST", "/subjects/imp-value/versions", {"schema": USER_V1}) == (422, 42205)

        body = {"schema": USER_NO_DEFAULT, "id": 100, "version": 3}
        imported = registry.ok("POST", "/subjects/imp-value/versions", body)
        assert (imported["id"], imported["version"]) == (100, 3)
        assert registry.ok("POST", "/subjects/imp-value/versions", body) == imported  # the same again
        got = registry.ok("GET", "/subjects/imp-value/versions/3")
        assert (got["id"], got["version"]) == (100, 3)
        assert registry.ok("GET", "/subjects/imp-value/versions") == [3]
        # Compatibility is not checked; the next version follows the highest.
        assert registry.ok("POST", "/subjects/imp-value/versions", {"schema": USER_V1, "id": 101})["id"] == 101
        assert registry.ok("GET", "/subjects/imp-value/versions") == [3, 4]
        # An id that is another schema's, or a version that holds another schema, is not overwritten.
        assert registry.error("POST", "/subjects/imp-value/versions", {"schema": USER_V2, "id": 100}) == (422, 42205)
        assert registry.error("POST", "/subjects/imp-value/versions",
                              {"schema": USER_V2, "id": 102, "version": 3}) == (422, 42205)
        assert registry.error("POST", "/subjects/imp-value/versions", {"schema": USER_V2, "id": "x"}) == (422, 42205)
        registry.ok("PUT", "/mode/imp-value", {"mode": "READWRITE"})
        # Ids given after an import continue above the highest imported one.
        assert registry.register("imp-after", record("After", {"name": "a", "type": "int"})) == 102
        assert registry.ok("PUT", "/mode?force=true", {"mode": "IMPORT"}) == {"mode": "IMPORT"}


# -- references ------------------------------------------------------------------------------------


ADDRESS = json.dumps({"type": "record", "name": "Address", "namespace": "shop",
                      "fields": [{"name": "street", "type": "string"}]})
CUSTOMER = record("Customer", {"name": "name", "type": "string"}, {"name": "address", "type": "shop.Address"})


def test_avro_references_register_look_up_and_guard_deletes(registry):
    address_id = registry.register("ref-address", ADDRESS)
    reference = {"name": "shop.Address", "subject": "ref-address", "version": 1}
    body = {"schema": CUSTOMER, "references": [reference]}
    customer_id = registry.ok("POST", "/subjects/ref-customer/versions", body)["id"]
    assert customer_id != address_id
    assert registry.ok("POST", "/subjects/ref-customer/versions", body)["id"] == customer_id
    got = registry.ok("GET", "/subjects/ref-customer/versions/1")
    assert got["references"] == [reference]
    assert json.loads(got["schema"])["fields"][1]["type"] == "shop.Address"  # named, not written out
    assert registry.ok("GET", f"/schemas/ids/{customer_id}")["references"] == [reference]
    assert registry.ok("POST", "/subjects/ref-customer", body)["id"] == customer_id
    # Without its references the schema is another one (or does not parse at all).
    assert registry.error("POST", "/subjects/ref-customer", {"schema": CUSTOMER}) == (422, 42201)
    assert registry.error("POST", "/subjects/ref-customer/versions", {
        "schema": CUSTOMER, "references": [{"name": "shop.Address", "subject": "ref-address", "version": 5}]}) == (
        422, 42201)
    assert registry.error("POST", "/subjects/ref-customer/versions", {
        "schema": CUSTOMER, "references": [{"name": "shop.Address", "subject": "ref-address"}]}) == (422, 42201)
    # -1 stands for the latest version and is stored as its number.
    assert registry.ok("POST", "/subjects/ref-customer", {"schema": CUSTOMER, "references": [
        {"name": "shop.Address", "subject": "ref-address", "version": -1}]})["id"] == customer_id

    assert registry.ok("GET", "/subjects/ref-address/versions/1/referencedby") == [customer_id]
    assert registry.ok("GET", "/subjects/ref-address/versions/latest/referencedby") == [customer_id]
    assert registry.ok("GET", "/subjects/ref-customer/versions/1/referencedby") == []
    assert registry.error("GET", "/subjects/ref-address/versions/2/referencedby") == (404, 40402)

    # Compatibility of a referencing schema resolves the references of both sides.
    customer_v2 = record("Customer", {"name": "name", "type": "string"}, {"name": "address", "type": "shop.Address"},
                         {"name": "vip", "type": "boolean"})  # no default: BACKWARD refuses it
    assert registry.ok("POST", "/compatibility/subjects/ref-customer/versions/latest",
                       {"schema": customer_v2, "references": [reference]}) == {"is_compatible": False}
    assert registry.error("POST", "/subjects/ref-customer/versions",
                          {"schema": customer_v2, "references": [reference]}) == (409, 409)

    # A referenced version is not deleted while a live schema refers to it (Confluent's 42206).
    assert registry.error("DELETE", "/subjects/ref-address/versions/1") == (422, 42206)
    assert registry.error("DELETE", "/subjects/ref-address") == (422, 42206)
    assert registry.ok("DELETE", "/subjects/ref-customer") == [1]
    assert registry.ok("GET", "/subjects/ref-address/versions/1/referencedby") == []
    assert registry.ok("DELETE", "/subjects/ref-address/versions/1") == 1


def test_json_schema_references_by_ref(registry):
    address = json.dumps({"type": "object", "properties": {"street": {"type": "string"}}})
    registry.register("jref-address", address, "JSON")
    order = json.dumps({"type": "object", "properties": {"to": {"$ref": "address.json"}}})
    reference = {"name": "address.json", "subject": "jref-address", "version": 1}
    order_id = registry.ok("POST", "/subjects/jref-order/versions",
                           {"schema": order, "schemaType": "JSON", "references": [reference]})["id"]
    assert registry.ok("GET", "/subjects/jref-address/versions/1/referencedby") == [order_id]
    # An Avro schema is not a JSON Schema's reference.
    registry.register("jref-avro", ADDRESS)
    assert registry.error("POST", "/subjects/jref-mixed/versions", {
        "schema": order, "schemaType": "JSON",
        "references": [{"name": "address.json", "subject": "jref-avro", "version": 1}]}) == (422, 42201)


def test_confluent_avro_serializer_with_references(registry):
    from confluent_kafka.schema_registry import SchemaReference

    client = SchemaRegistryClient({"url": registry.url})
    client.register_schema("sref-address", Schema(ADDRESS, "AVRO"))
    schema = Schema(CUSTOMER, "AVRO", [SchemaReference("shop.Address", "sref-address", 1)])
    serialize = AvroSerializer(client, schema, conf={"auto.register.schemas": False, "use.latest.version": True})
    client.register_schema("sref-value", schema)
    context = SerializationContext("sref", MessageField.VALUE)
    value = {"name": "Ada", "address": {"street": "Main St"}}
    data = serialize(value, context)
    assert AvroDeserializer(client)(data, context) == value
    assert client.get_latest_version("sref-value").schema.references[0].subject == "sref-address"


def test_confluent_json_serializer_with_references(registry):
    from confluent_kafka.schema_registry import SchemaReference

    client = SchemaRegistryClient({"url": registry.url})
    address = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                          "properties": {"street": {"type": "string"}}, "required": ["street"]})
    client.register_schema("sjref-address", Schema(address, "JSON"))
    order = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                        "properties": {"id": {"type": "integer"}, "to": {"$ref": "address.json"}}})
    schema = Schema(order, "JSON", [SchemaReference("address.json", "sjref-address", 1)])
    client.register_schema("sjref-value", schema)
    serialize = JSONSerializer(schema, client, conf={"auto.register.schemas": False, "use.latest.version": True})
    context = SerializationContext("sjref", MessageField.VALUE)
    value = {"id": 1, "to": {"street": "Main St"}}
    data = serialize(value, context)
    assert JSONDeserializer(None, schema_registry_client=client)(data, context) == value
    with pytest.raises(Exception, match="street"):  # the referenced schema validates the value
        serialize({"id": 2, "to": {}}, context)


# -- the log and restarts --------------------------------------------------------------------------


def read_schemas_topic(bootstrap: str) -> list[tuple[dict, dict | None]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "schemas-reader",
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    consumer.subscribe(["_schemas"])
    found = []
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == -191:  # _PARTITION_EOF
                    break
                continue
            found.append((json.loads(message.key()), None if message.value() is None else json.loads(message.value())))
    finally:
        consumer.close()
    return found


def test_schemas_are_kept_in_the_log_as_confluent_writes_them_and_survive_a_restart(tmp_path):
    with registry_broker(tmp_path / "broker") as registry:
        first = registry.register("restart-value", USER_V1)
        second = registry.register("restart-value", USER_V2)
        registry.ok("PUT", "/config/restart-value", {"compatibility": "FULL"})
        json_id = registry.register("restart-json", '{"type": "string"}', "JSON")
        registry.ok("DELETE", "/subjects/restart-json")
        records = read_schemas_topic(registry.process.bootstrap)
    keys = [key for key, _ in records]
    assert keys[0] == {"keytype": "SCHEMA", "subject": "restart-value", "version": 1, "magic": 1}
    assert list(keys[0]) == ["keytype", "subject", "version", "magic"]  # Confluent's key order
    assert records[0][1] == {"subject": "restart-value", "version": 1, "id": first,
                             "schema": records[0][1]["schema"], "deleted": False}
    assert {"keytype": "CONFIG", "subject": "restart-value", "magic": 0} in keys
    assert ({"keytype": "CONFIG", "subject": "restart-value", "magic": 0}, {"compatibilityLevel": "FULL"}) in records
    json_record = next(value for key, value in records if key.get("subject") == "restart-json"
                       and key["keytype"] == "SCHEMA")
    assert json_record["schemaType"] == "JSON"
    assert ({"keytype": "DELETE_SUBJECT", "subject": "restart-json", "magic": 0},
            {"subject": "restart-json", "version": 1}) in records

    with registry_broker(tmp_path / "broker") as registry:
        assert registry.ok("GET", "/subjects") == ["restart-value"]
        assert registry.ok("GET", "/subjects?deleted=true") == ["restart-json", "restart-value"]
        assert registry.ok("GET", "/subjects/restart-value/versions/2")["id"] == second
        assert json.loads(registry.ok("GET", f"/schemas/ids/{first}")["schema"]) == json.loads(USER_V1)
        assert registry.ok("GET", "/config/restart-value") == {"compatibilityLevel": "FULL"}
        third = registry.register("restart-new", record("Other", {"name": "x", "type": "int"}))
        assert third == max(first, second, json_id) + 1  # ids continue, none reused
        assert registry.register("restart-value", USER_V2) == second


def test_every_acknowledged_registration_survives_sigkill():
    with registry_broker() as registry:
        ids = {f"kill-{n}": registry.register(f"kill-{n}", record(f"K{n}", {"name": "a", "type": "int"}))
               for n in range(20)}
        registry.ok("PUT", "/config", {"compatibility": "FULL"})
        registry.ok("DELETE", "/subjects/kill-0")
        registry.process.kill_group()  # the broker and every worker at once: nothing is flushed after
        registry.process.start()
        registry.wait_until_serving()
        assert registry.ok("GET", "/subjects") == sorted(set(ids) - {"kill-0"})
        for subject, schema_id in ids.items():
            assert registry.ok("GET", f"/subjects/{subject}/versions/1?deleted=true")["id"] == schema_id
        assert registry.ok("GET", "/config") == {"compatibilityLevel": "FULL"}


# -- confluent-kafka's serializers through the registry and the broker ------------------------------


@pytest.mark.parametrize("workers", [None, 2])
def test_confluent_serializers_round_trip(workers):
    config = {} if workers is None else {"num.worker.processes": workers}
    with registry_broker(**config) as registry:
        client = SchemaRegistryClient({"url": registry.url})
        topic = "orders"
        avro_schema = record("Order", {"name": "id", "type": "long"}, {"name": "item", "type": "string"})
        serialize = AvroSerializer(client, avro_schema)
        values = [{"id": n, "item": f"item-{n}"} for n in range(5)]
        context = SerializationContext(topic, MessageField.VALUE)
        encoded = [serialize(value, context) for value in values]
        assert all(data[0] == 0 for data in encoded)  # Confluent's wire format: magic byte, then the id
        schema_id = int.from_bytes(encoded[0][1:5], "big")
        assert client.get_latest_version(f"{topic}-value").schema_id == schema_id

        received = produce_and_consume(registry.process.bootstrap, topic, encoded)
        deserialize = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))
        assert [deserialize(data, context) for data in received] == values

        # A compatible evolution registers as version 2; an incompatible one is refused.
        evolved = record("Order", {"name": "id", "type": "long"}, {"name": "item", "type": "string"},
                         {"name": "qty", "type": "int", "default": 1})
        assert client.register_schema(f"{topic}-value", Schema(evolved, "AVRO")) != schema_id
        with pytest.raises(SchemaRegistryError) as refused:
            client.register_schema(f"{topic}-value", Schema(record("Order", {"name": "x", "type": "int"}), "AVRO"))
        assert refused.value.http_status_code == 409 and refused.value.error_code == 409
        with pytest.raises(SchemaRegistryError) as missing:
            client.get_latest_version("no-such-subject")
        assert missing.value.error_code == 40401
        assert client.get_subjects() == [f"{topic}-value"]
        assert client.delete_subject(f"{topic}-value") == [1, 2]

        json_schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
        json_context = SerializationContext("events", MessageField.VALUE)
        json_serialize = JSONSerializer(json_schema, client)
        received = produce_and_consume(registry.process.bootstrap, "events",
                                       [json_serialize({"n": n}, json_context) for n in range(3)])
        json_deserialize = JSONDeserializer(json_schema, schema_registry_client=client)
        assert [json_deserialize(data, json_context) for data in received] == [{"n": 0}, {"n": 1}, {"n": 2}]


# -- configuration and start -----------------------------------------------------------------------


@pytest.mark.parametrize("setting, message", [
    ("schema.registry.port=web",
     "Invalid value web for configuration schema.registry.port: Not a number of type INT"),
    ("schema.registry.port=70000",
     "Invalid value 70000 for configuration schema.registry.port: Value must be no more than 65535"),
])
def test_a_bad_registry_port_stops_the_broker_with_one_line(tmp_path, setting, message):
    done = serve_until_exit(setting, data_dir=tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"kafka-wire: {message}\n"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_registry_port_in_use_stops_the_broker_with_one_line(tmp_path, workers):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = serve_until_exit(f"schema.registry.port={port}", f"num.worker.processes={workers}", data_dir=tmp_path)
    assert done.returncode == 1
    line = (f"kafka-wire: Schema Registry (schema.registry.host, schema.registry.port) failed to bind to "
            f"127.0.0.1:{port}: Address already in use.")
    # With workers, worker 0 cannot start it: a failed start, said once (not a crash to restart from).
    assert done.stderr.splitlines()[-1] == line
    assert done.stderr.count(line) == 1 and "Traceback" not in done.stderr


def test_the_registry_is_not_imported_unless_configured():
    # A broker without the registry loads none of it, nor the schema libraries it needs.
    code = ("import sys, cli.main, cli.commands.serve, broker.node, broker.server, broker.workers.supervisor; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('registry', 'avro', 'jsonschema')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def test_get_schemas_lists_subject_versions_with_prefix_latest_deleted_and_paging(registry):
    """GET /schemas as Confluent answers it: subject versions ordered by subject then version,
    filtered by subjectPrefix, latestOnly, deleted, and paged by offset and limit."""
    a1 = registry.register("gs-alpha-value", record("GsA", {"name": "a", "type": "string"}))
    a2 = registry.register("gs-alpha-value", record("GsA", {"name": "a", "type": "string"},
                                                      {"name": "b", "type": "int", "default": 0}))
    b1 = registry.register("gs-beta-value", record("GsB", {"name": "x", "type": "long"}))
    j1 = registry.register("gs-json-value", json.dumps({"type": "object"}), "JSON")
    registry.ok("DELETE", "/subjects/gs-beta-value")  # soft delete

    def listed(query: str) -> list[tuple]:
        return [(s["subject"], s["version"], s["id"], s.get("schemaType", "AVRO"))
                for s in registry.ok("GET", "/schemas?" + query)]

    assert listed("subjectPrefix=gs-") == [("gs-alpha-value", 1, a1, "AVRO"), ("gs-alpha-value", 2, a2, "AVRO"),
                                          ("gs-json-value", 1, j1, "JSON")]
    assert listed("subjectPrefix=gs-&deleted=true") == [
        ("gs-alpha-value", 1, a1, "AVRO"), ("gs-alpha-value", 2, a2, "AVRO"), ("gs-beta-value", 1, b1, "AVRO"),
        ("gs-json-value", 1, j1, "JSON")]
    assert listed("subjectPrefix=gs-&latestOnly=true") == [("gs-alpha-value", 2, a2, "AVRO"),
                                                         ("gs-json-value", 1, j1, "JSON")]
    assert listed("subjectPrefix=gs-&offset=1&limit=1") == [("gs-alpha-value", 2, a2, "AVRO")]
    assert listed("subjectPrefix=gs-&offset=2&limit=0") == [("gs-json-value", 1, j1, "JSON")]  # limit <= 0: no limit
    assert listed("subjectPrefix=gs-nothing") == []
    first = registry.ok("GET", "/schemas?subjectPrefix=gs-alpha")[0]
    assert set(first) == {"subject", "version", "id", "guid", "schema"}  # schemaType and references left out for Avro
    assert json.loads(first["schema"]) == json.loads(record("GsA", {"name": "a", "type": "string"}))
    everything = [(s["subject"], s["version"]) for s in registry.ok("GET", "/schemas")]
    assert everything == sorted(everything) and ("gs-alpha-value", 2) in everything
    assert registry.error("GET", "/schemas?offset=x") == (404, 404)
