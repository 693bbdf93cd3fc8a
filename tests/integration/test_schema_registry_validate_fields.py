"""The config's `validateFields` acted on as Confluent's registry acts on it (reserved fields in the
`confluent:reserved` metadata property, JSON Schema property names starting with `$$`), against a
real broker over HTTP and through confluent-kafka's SchemaRegistryClient. The first test follows
Confluent's RestApiTest.testRegisterSchemaWithReservedFields step by step."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import Metadata, MetadataProperties, Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from test_schema_registry import quote, registry_broker

F_AND_G = json.dumps({"type": "record", "name": "myrecord", "fields": [
    {"type": "string", "name": "f"}, {"type": "string", "name": "g", "default": "d"}]})
ONLY_G = json.dumps({"type": "record", "name": "myrecord", "fields": [
    {"type": "string", "name": "g", "default": "d"}]})

REMOVED = ("The new schema has reserved field {} removed from its metadata which is present in the old schema's "
           "metadata.")
CONFLICTS = "The new schema has field that conflicts with the reserved field {}."


def reserving(schema: str, names: str, schema_type: str | None = None) -> dict:
    body = {"schema": schema, "metadata": {"properties": {"confluent:reserved": names}}}
    return body | ({"schemaType": schema_type} if schema_type else {})


@pytest.fixture(scope="module")
def registry():
    with registry_broker() as registry:
        yield registry


def register(registry, subject: str, body: dict) -> tuple[int, dict]:
    return registry.call("POST", f"/subjects/{quote(subject)}/versions", body)


def registered_id(registry, subject: str, body: dict) -> tuple[int, int | None]:
    status, answer = register(registry, subject, body)
    return status, answer.get("id")


def test_reserved_fields_by_global_and_subject_validate_fields(registry):
    request = reserving(F_AND_G, "f")
    registry.ok("PUT", "/config", {"compatibility": "BACKWARD", "validateFields": True})
    status, answer = register(registry, "testSubject0", request)
    assert (status, answer["error_code"]) == (409, 409)
    assert answer["message"] == ('Schema being registered is incompatible with an earlier schema for subject '
                                 f'"testSubject0", details: [{CONFLICTS.format("f")}, '
                                 "{validateFields: 'true', compatibility: 'BACKWARD'}]")

    registry.ok("PUT", "/config", {"compatibility": "BACKWARD", "validateFields": False})
    assert registered_id(registry, "testSubject0", request) == (200, 1)

    # global false, testSubject1 true
    registry.ok("PUT", "/config/testSubject1", {"compatibility": "BACKWARD", "validateFields": True})
    assert register(registry, "testSubject1", request)[0] == 409
    assert registered_id(registry, "testSubject2", request) == (200, 1)

    # global true, testSubject1 false
    registry.ok("PUT", "/config", {"compatibility": "BACKWARD", "validateFields": True})
    registry.ok("PUT", "/config/testSubject1", {"compatibility": "BACKWARD", "validateFields": False})
    assert registered_id(registry, "testSubject1", request) == (200, 1)
    assert register(registry, "testSubject3", request)[0] == 409

    # testSubject1 (validateFields false) may drop the reserved field f
    assert registered_id(registry, "testSubject1", reserving(F_AND_G, "g")) == (200, 2)

    # testSubject0 (global true) may not, and g is now reserved and a field
    status, answer = register(registry, "testSubject0", reserving(ONLY_G, "g"))
    assert (status, answer["error_code"]) == (409, 409)
    assert answer["message"].endswith(f"details: [{REMOVED.format('f')}, {CONFLICTS.format('g')}, "
                                      "{validateFields: 'true', compatibility: 'BACKWARD'}]")
    registry.ok("PUT", "/config", {"validateFields": False})


def test_checked_under_none_and_when_testing_compatibility(registry):
    subject = "reserved-none-value"
    registry.ok("PUT", f"/config/{subject}", {"compatibility": "NONE", "validateFields": True})
    registry.ok("PUT", "/config/reserved-empty", {"compatibility": "BACKWARD", "validateFields": True})
    assert register(registry, subject, reserving(F_AND_G, "x"))[0] == 200
    # NONE: no compatibility check, the reserved fields still are
    status, answer = register(registry, subject, reserving(F_AND_G, "f"))
    assert status == 409 and answer["message"].endswith(
        f"[{REMOVED.format('x')}, {CONFLICTS.format('f')}, {{validateFields: 'true', compatibility: 'NONE'}}]")
    path = f"/compatibility/subjects/{subject}/versions/latest?verbose=true"
    assert registry.ok("POST", path, reserving(F_AND_G, "f")) == {"is_compatible": False, "messages": [
        REMOVED.format("x"), CONFLICTS.format("f"), "{validateFields: 'true', compatibility: 'NONE'}"]}
    assert registry.ok("POST", path, reserving(F_AND_G, "x,y")) == {"is_compatible": True, "messages": []}
    # A subject without versions: its reserved fields still are checked, with "latest" too
    for empty in ("/compatibility/subjects/reserved-empty/versions/latest?verbose=true",
                  "/compatibility/subjects/reserved-empty/versions?verbose=true"):
        assert registry.ok("POST", empty, reserving(F_AND_G, "f")) == {"is_compatible": False, "messages": [
            CONFLICTS.format("f"), "{validateFields: 'true', compatibility: 'BACKWARD'}"]}, empty
    assert registry.ok("POST", "/compatibility/subjects/reserved-empty/versions/latest",
                       reserving(F_AND_G, "x")) == {"is_compatible": True}
    # Without the setting, nothing of this is checked
    registry.ok("PUT", f"/config/{subject}", {"validateFields": False})
    assert registry.ok("POST", path, reserving(F_AND_G, "f")) == {"is_compatible": True, "messages": []}


def test_json_schema_and_protobuf_top_level_fields(registry):
    registry.ok("PUT", "/config/json-reserved", {"validateFields": True})
    document = json.dumps({"type": "object", "properties": {"a": {"type": "string"}, "nested": {
        "type": "object", "properties": {"deep": {"type": "string"}}}}})
    assert register(registry, "json-reserved", reserving(document, "deep", "JSON"))[0] == 200
    status, answer = register(registry, "json-reserved", reserving(document, "deep,a", "JSON"))
    assert status == 409 and CONFLICTS.format("a") in answer["message"]

    registry.ok("PUT", "/config/proto-reserved", {"validateFields": True})
    proto = ('syntax = "proto3";\npackage shop;\n\nmessage Order {\n  string id = 1;\n  oneof pick {\n'
             '    string in_oneof = 2;\n  }\n  message Line {\n    string sku = 1;\n  }\n}\n')
    assert register(registry, "proto-reserved", reserving(proto, "sku,in_oneof", "PROTOBUF"))[0] == 200
    status, answer = register(registry, "proto-reserved", reserving(proto, "sku,in_oneof,id", "PROTOBUF"))
    assert status == 409 and CONFLICTS.format("id") in answer["message"]


def test_json_property_names_starting_with_two_dollars(registry):
    document = json.dumps({"type": "object", "properties": {"$$id": {"type": "string"}}})
    body = {"schema": document, "schemaType": "JSON"}
    assert register(registry, "dollars-off", body)[0] == 200  # validateFields unset: false
    registry.ok("PUT", "/config/dollars-on", {"validateFields": True})
    status, answer = register(registry, "dollars-on", body)
    assert (status, answer["error_code"]) == (422, 42201)
    assert answer["message"].endswith("details: #: Field names cannot start with $$ prefix")
    assert registry.error("POST", "/compatibility/subjects/dollars-on/versions", body) == (422, 42201)
    assert registry.error("POST", "/subjects/dollars-on", body) == (422, 42201)
    # IMPORT mode registers as it is told
    registry.ok("PUT", "/mode/dollars-on", {"mode": "IMPORT"})
    assert registered_id(registry, "dollars-on", body | {"id": 900, "version": 1}) == (200, 900)


def test_confluent_kafka_client_sees_the_409(registry):
    client = SchemaRegistryClient({"url": registry.url})
    registry.ok("PUT", "/config/client-reserved-value", {"validateFields": True})
    schema = Schema(F_AND_G, "AVRO", metadata=Metadata(None, MetadataProperties({"confluent:reserved": "g"}), None))
    with pytest.raises(SchemaRegistryError) as raised:
        client.register_schema("client-reserved-value", schema)
    assert raised.value.http_status_code == 409 and raised.value.error_code == 409
    assert CONFLICTS.format("g") in raised.value.error_message


# -- validateNewSchemas (Confluent's testRegisterSchemaWithInvalidNamespace, ...InvalidDefault and
# RestApiCompatibilityTest.testRegisterBadDefaultWithValidateNewSchemaConfig) -------------------------

BAD_NAMESPACE = json.dumps({"type": "record", "name": "myrecord", "namespace": "a-bad.namespace", "fields": [
    {"type": "string", "name": "f"}, {"type": "string", "name": "g", "default": "d"}]})
BAD_DEFAULT = json.dumps({"namespace": "namespace", "type": "record", "name": "test", "fields": [
    {"name": "string_default", "type": "string", "default": None}]})
BAD_INT_DEFAULT = json.dumps({"type": "record", "name": "myrecord", "fields": [
    {"type": "int", "default": "foo", "name": "f"}]})


def test_new_schemas_validated_unless_validate_new_schemas_is_false():
    with registry_broker() as registry:  # its own broker: the global config changes
        for subject, schema in (("ns-value", BAD_NAMESPACE), ("default-value", BAD_DEFAULT)):
            status, answer = register(registry, subject, {"schema": schema})
            assert (status, answer["error_code"]) == (422, 42201), answer
        status, answer = register(registry, "default-value", {"schema": BAD_DEFAULT})
        assert answer["message"] == ('Invalid AVRO schema: Invalid default for field string_default: null not a '
                                     '"string"')
        path = "/compatibility/subjects/compat-value/versions/latest"
        assert registry.error("POST", path, {"schema": BAD_INT_DEFAULT}) == (422, 42201)

        assert registry.ok("PUT", "/config", {"compatibility": "BACKWARD", "validateNewSchemas": False}) == {
            "compatibility": "BACKWARD", "validateNewSchemas": False}
        assert registry.ok("GET", "/config")["validateNewSchemas"] is False
        assert registered_id(registry, "ns-value", {"schema": BAD_NAMESPACE}) == (200, 1)
        assert registered_id(registry, "default-value", {"schema": BAD_DEFAULT}) == (200, 2)
        assert registry.ok("POST", path, {"schema": BAD_INT_DEFAULT}) == {"is_compatible": True}
        # Stored, they are read back, looked up and compared with as any version
        assert registry.ok("GET", "/subjects/ns-value/versions/1")["schema"] == BAD_NAMESPACE.replace(" ", "")
        assert registry.ok("POST", "/subjects/default-value", {"schema": BAD_DEFAULT})["version"] == 1
        assert registry.ok("POST", "/compatibility/subjects/ns-value/versions/latest",
                           {"schema": BAD_NAMESPACE}) == {"is_compatible": True}
        # A subject's own setting wins
        registry.ok("PUT", "/config/strict-value", {"validateNewSchemas": True})
        assert registry.error("POST", "/subjects/strict-value/versions", {"schema": BAD_DEFAULT}) == (422, 42201)
        assert registry.error("PUT", "/config", {"validateNewSchemas": "no"}) == (422, 422)
