"""Schema tags (`POST /subjects/{s}/versions/{v}/tags`), `compatibilityGroup` and the other config
settings Confluent's registry keeps (`validateFields`, `validateRules`), against a real broker over
HTTP and through confluent-kafka's SchemaRegistryClient."""

from __future__ import annotations

import base64
import json

import pytest
from confluent_kafka.schema_registry import Metadata, MetadataProperties, Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.common.schema_registry_client import ServerConfig
from confluent_kafka.schema_registry.error import SchemaRegistryError

from test_schema_registry import quote, registry_broker

MYRECORD = json.dumps({"type": "record", "name": "myrecord", "namespace": "com.example",
                       "fields": [{"name": "f1", "type": "string"},
                                  {"name": "inner", "type": {"type": "record", "name": "Inner",
                                                             "fields": [{"name": "secret", "type": "string"}]}}]})


def entity(path: str, kind: str, *tags: str) -> dict:
    return {"schemaEntity": {"entityPath": path, "entityType": kind}, "tags": list(tags)}


@pytest.fixture(scope="module")
def registry():
    with registry_broker() as registry:
        yield registry


def latest(registry, subject: str) -> dict:
    return registry.ok("GET", f"/subjects/{quote(subject)}/versions/latest")


def test_tags_are_added_and_removed_as_a_new_version(registry):
    first = registry.register("tagged-value", MYRECORD)
    answer = registry.ok("POST", "/subjects/tagged-value/versions/1/tags", {
        "newVersion": 2,
        "tagsToAdd": [entity("com.example.myrecord", "sr_record", "TAG1", "TAG2"),
                      entity("com.example.myrecord.f1", "sr_field", "PII"),
                      entity("Inner.secret", "sr_field", "PII", "SECRET")]})
    assert answer["version"] == 2 and answer["id"] != first
    stored = latest(registry, "tagged-value")
    assert stored["version"] == 2
    assert stored["metadata"]["properties"]["confluent:version"] == "2"
    schema = json.loads(stored["schema"])
    assert schema["confluent:tags"] == ["TAG1", "TAG2"]
    assert schema["fields"][0]["confluent:tags"] == ["PII"]
    assert schema["fields"][1]["type"]["fields"][0]["confluent:tags"] == ["PII", "SECRET"]
    # Removing: the rest stay in their order; a field left without tags loses the property.
    registry.ok("POST", "/subjects/tagged-value/versions/latest/tags", {
        "tagsToRemove": [entity("com.example.myrecord", "sr_record", "TAG2"),
                         entity("com.example.myrecord.f1", "sr_field", "PII")]})
    stored = latest(registry, "tagged-value")
    assert stored["version"] == 3 and stored["metadata"]["properties"]["confluent:version"] == "3"
    schema = json.loads(stored["schema"])
    assert schema["confluent:tags"] == ["TAG1"]
    assert "confluent:tags" not in schema["fields"][0]
    # Version 1 is as it was.
    assert "confluent:tags" not in json.loads(registry.ok("GET", "/subjects/tagged-value/versions/1")["schema"])


def test_tag_request_errors(registry):
    registry.register("tag-errors-value", MYRECORD)
    path = "/subjects/tag-errors-value/versions/1/tags"
    status, body = registry.call("POST", path, {"tagsToAdd": [entity("com.example.nothing", "sr_record", "T")]})
    assert (status, body["error_code"]) == (422, 42201)
    assert "No matching path 'com.example.nothing' found in the schema" in body["message"]
    assert registry.error("POST", path, {"tagsToAdd": [entity("other.ns.myrecord", "sr_record", "T")]}) == (422, 42201)
    assert registry.error("POST", path, {"newVersion": 5, "tagsToAdd": [entity("myrecord", "sr_record", "T")]}) == (
        422, 42201)
    assert registry.error("POST", path, {"tagsToAdd": [{"schemaEntity": {"entityPath": "myrecord"}}]}) == (422, 422)
    assert registry.error("POST", path, {"ruleSet": {}, "rulesToRemove": ["x"]}) == (422, 42210)
    assert registry.error("POST", "/subjects/no-such-subject/versions/1/tags", {}) == (404, 40401)
    assert registry.error("POST", "/subjects/tag-errors-value/versions/7/tags", {}) == (404, 40402)


def test_a_tag_request_merges_and_removes_rules(registry):
    rule = {"name": "checkLen", "kind": "CONDITION", "type": "CEL", "mode": "WRITE", "expr": "size(message.f1) < 10"}
    other = {"name": "other", "kind": "CONDITION", "type": "CEL", "mode": "WRITE", "expr": "true"}
    registry.ok("POST", "/subjects/tag-rules-value/versions", {"schema": MYRECORD, "ruleSet": {"domainRules": [rule]}})
    registry.ok("POST", "/subjects/tag-rules-value/versions/1/tags", {
        "tagsToAdd": [entity("myrecord", "sr_record", "T")], "rulesToMerge": {"domainRules": [other]}})
    assert [r["name"] for r in latest(registry, "tag-rules-value")["ruleSet"]["domainRules"]] == ["checkLen", "other"]
    registry.ok("POST", "/subjects/tag-rules-value/versions/2/tags", {
        "tagsToRemove": [entity("myrecord", "sr_record", "T")], "rulesToRemove": ["checkLen"]})
    stored = latest(registry, "tag-rules-value")
    assert stored["version"] == 3
    assert [r["name"] for r in stored["ruleSet"]["domainRules"]] == ["other"]


def test_compatibility_group_checks_only_versions_of_the_same_group(registry):
    client = SchemaRegistryClient({"url": registry.url})
    subject = "grouped-value"
    answer = client.set_config(subject, ServerConfig(compatibility_group="application.major.version"))
    assert answer["compatibilityGroup"] == "application.major.version"
    assert registry.ok("GET", f"/config/{subject}")["compatibilityGroup"] == "application.major.version"

    def schema(fields: list, major: str) -> Schema:
        return Schema(json.dumps({"type": "record", "name": "G", "fields": fields}), "AVRO",
                      metadata=Metadata(None, MetadataProperties({"application.major.version": major}), None))

    v1 = [{"name": "a", "type": "string"}]
    breaking = [{"name": "b", "type": "int"}]  # no default: BACKWARD-incompatible with v1
    client.register_schema(subject, schema(v1, "1"))
    # Another major version starts its own line: not checked against major 1.
    client.register_schema(subject, schema(breaking, "2"))
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, schema(breaking + [{"name": "c", "type": "long"}], "1"))
    assert refused.value.http_status_code == 409
    status, body = registry.call("POST", f"/compatibility/subjects/{subject}/versions?verbose=true",
                                 {"schema": json.dumps({"type": "record", "name": "G", "fields": breaking}),
                                  "metadata": {"properties": {"application.major.version": "1"}}})
    assert status == 200 and body["is_compatible"] is False
    # Unset again (null), every version counts.
    assert "compatibilityGroup" not in registry.ok("PUT", f"/config/{subject}", {"compatibilityGroup": None})


def test_validate_fields_and_rules_are_kept_and_checked_for_type(registry):
    answer = registry.ok("PUT", "/config/settings-value", {"validateFields": True, "validateRules": False})
    assert answer["validateFields"] is True and answer["validateRules"] is False
    assert registry.ok("GET", "/config/settings-value") == {"validateFields": True, "validateRules": False}
    assert registry.error("PUT", "/config/settings-value", {"validateRules": "yes"}) == (422, 422)
    assert registry.error("PUT", "/config/settings-value", {"compatibilityGroup": 7}) == (422, 422)


# -- schemaTagsToAdd / schemaTagsToRemove / propagateSchemaTags on registration, ?findTags= ------------
# (Confluent's RestApiRegisterSchemaTagsTest: the same requests, schema texts and answers)

CONFLUENT_RECORD = '{"type":"record","name":"myrecord","fields":[{"name":"f1","type":"string"}]}'


def tagged_record(fields: str, tags: str) -> dict:
    # (compared as JSON: our Avro text orders an object's keys as Python's avro writes them, not as
    # Apache Avro's Java library does)
    return json.loads('{"type":"record","name":"myrecord","fields":[' + fields + '],"confluent:tags":[' + tags + "]}")


def test_registration_adds_removes_and_propagates_tags_and_find_tags_lists_them(registry):
    subject = "reg-tags-value"
    registry.register(subject, CONFLUENT_RECORD)
    record_tags = [entity("myrecord", "sr_record", "TAG1", "TAG2")]
    answer = registry.ok("POST", f"/subjects/{subject}/versions",
                         {"schema": CONFLUENT_RECORD, "version": 2, "schemaTagsToAdd": record_tags})
    assert answer["version"] == 2
    stored = registry.ok("GET", f"/subjects/{subject}/versions/latest?findTags=*")
    assert json.loads(stored["schema"]) == tagged_record('{"name":"f1","type":"string"}', '"TAG1","TAG2"')
    assert stored["version"] == 2 and stored["metadata"]["properties"]["confluent:version"] == "2"
    assert stored["schemaTags"] == record_tags
    # Without findTags, no schemaTags; a tag no entity has finds nothing (and the key is left out).
    assert "schemaTags" not in registry.ok("GET", f"/subjects/{subject}/versions/latest")
    assert "schemaTags" not in registry.ok("GET", f"/subjects/{subject}/versions/latest?findTags=NOPE")

    registry.ok("POST", f"/subjects/{subject}/versions", {
        "schema": stored["schema"], "version": 3,
        "schemaTagsToRemove": [entity("myrecord", "sr_record", "TAG2")]})
    stored = registry.ok("GET", f"/subjects/{subject}/versions/latest?findTags=*")
    assert json.loads(stored["schema"]) == tagged_record('{"name":"f1","type":"string"}', '"TAG1"')
    assert stored["version"] == 3 and stored["metadata"]["properties"]["confluent:version"] == "3"
    only_tag1 = [entity("myrecord", "sr_record", "TAG1")]
    assert stored["schemaTags"] == only_tag1
    by_id = registry.ok("GET", f"/schemas/ids/{stored['id']}?subject={subject}&findTags=TAG1")
    assert by_id["schemaTags"] == only_tag1 and "subject" not in by_id

    # propagateSchemaTags: the latest version's tags carried onto the evolved schema
    evolved = '{"name":"f1","type":"string"},{"name":"f2","type":"string","default":"hi"}'
    answer = registry.ok("POST", f"/subjects/{subject}/versions", {
        "schema": '{"type":"record","name":"myrecord","fields":[' + evolved + "]}", "propagateSchemaTags": True})
    stored = registry.ok("GET", f"/subjects/{subject}/versions/latest?findTags=*")
    assert answer["version"] == stored["version"] == 4
    assert json.loads(stored["schema"]) == tagged_record(evolved, '"TAG1"')
    assert stored["schemaTags"] == only_tag1

    evolved = '{"name":"f1","type":"string","confluent:tags":["TAG2"]},{"name":"f2","type":"string","default":"hi"}'
    registry.ok("POST", f"/subjects/{subject}/versions", {
        "schema": '{"type":"record","name":"myrecord","fields":[' + evolved + "]}", "propagateSchemaTags": True})
    stored = registry.ok("GET", f"/subjects/{subject}/versions/latest?findTags=*")
    assert stored["version"] == 5 and json.loads(stored["schema"]) == tagged_record(evolved, '"TAG1"')
    both = [entity("myrecord", "sr_record", "TAG1"), entity("myrecord.f1", "sr_field", "TAG2")]
    assert stored["schemaTags"] == both
    status, by_id = registry.call("GET", f"/schemas/ids/{stored['id']}?subject={subject}&findTags=TAG1&findTags=TAG2")
    assert status == 200 and by_id["schemaTags"] == both
    status, by_id = registry.call("GET", f"/schemas/ids/{stored['id']}?findTags=TAG2")
    assert by_id["schemaTags"] == [entity("myrecord.f1", "sr_field", "TAG2")]


def test_registration_with_tags_and_no_version_is_always_a_new_version(registry):
    subject = "reg-tags-noversion-value"
    registry.register(subject, CONFLUENT_RECORD)
    answer = registry.ok("POST", f"/subjects/{subject}/versions", {
        "schema": CONFLUENT_RECORD, "schemaTagsToAdd": [entity("myrecord", "sr_record", "TAG1", "TAG2")]})
    stored = latest(registry, subject)
    assert answer["version"] == stored["version"] == 2
    assert stored["metadata"]["properties"]["confluent:version"] == "2"
    # The same request again is one more version (Confluent does not look a tag request up first),
    # its own id as its confluent:version differs.
    again = registry.ok("POST", f"/subjects/{subject}/versions", {
        "schema": CONFLUENT_RECORD, "schemaTagsToAdd": [entity("myrecord", "sr_record", "TAG1", "TAG2")]})
    assert again["version"] == 3 and again["id"] != answer["id"]
    assert latest(registry, subject)["metadata"]["properties"]["confluent:version"] == "3"
    # In a context too
    registry.register(":.ctx:tagged", CONFLUENT_RECORD)
    answer = registry.ok("POST", f"/subjects/{quote(':.ctx:tagged')}/versions", {
        "schema": CONFLUENT_RECORD, "version": 2, "schemaTagsToAdd": [entity("myrecord", "sr_record", "T")]})
    assert answer["version"] == 2
    assert json.loads(latest(registry, ":.ctx:tagged")["schema"])["confluent:tags"] == ["T"]


def test_registration_tag_errors(registry):
    subject = "reg-tags-errors-value"
    registry.register(subject, CONFLUENT_RECORD)
    path = f"/subjects/{subject}/versions"
    status, body = registry.call("POST", path, {"schema": CONFLUENT_RECORD, "version": 2,
                                                "schemaTagsToAdd": [entity("does.not.exist", "sr_field", "TAG1")]})
    assert (status, body["error_code"]) == (422, 42201)
    assert "No matching path 'does.not.exist' found in the schema" in body["message"]
    # version 1 exists: not one more than the previous version
    assert registry.error("POST", path, {"schema": CONFLUENT_RECORD, "version": 1,
                                         "schemaTagsToAdd": [entity("myrecord", "sr_record", "T")]}) == (422, 42201)
    assert registry.error("POST", path, {"schema": CONFLUENT_RECORD,
                                         "schemaTagsToAdd": [{"tags": ["T"]}]}) == (422, 422)
    assert registry.error("POST", path, {"schema": CONFLUENT_RECORD, "propagateSchemaTags": "yes"}) == (422, 422)
    assert latest(registry, subject)["version"] == 1


JSON_SCHEMA = json.dumps({"type": "object", "title": "Order", "properties": {
    "id": {"type": "integer"},
    "card": {"oneOf": [{"type": "null"}, {"$ref": "#/definitions/Card"}]},
    "lines": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}}}}},
    "definitions": {"Card": {"type": "object", "properties": {"number": {"type": "string"}}}}})


def test_json_schema_tags_through_the_tags_endpoint_registration_and_find_tags(registry):
    subject = "json-tags-value"
    registry.register(subject, JSON_SCHEMA, "JSON")
    added = [entity("object", "sr_record", "ORDER"), entity("object.id", "sr_field", "KEY"),
             entity("object.lines.array.object.sku", "sr_field", "SKU"),
             entity("object.definitions.Card.object.number", "sr_field", "PII")]
    answer = registry.ok("POST", f"/subjects/{subject}/versions/1/tags", {"newVersion": 2, "tagsToAdd": added})
    assert answer["version"] == 2 and answer["schemaType"] == "JSON"
    stored = registry.ok("GET", f"/subjects/{subject}/versions/2?findTags=*")
    schema = json.loads(stored["schema"])
    assert schema["confluent:tags"] == ["ORDER"]
    assert schema["properties"]["id"]["confluent:tags"] == ["KEY"]
    assert schema["properties"]["lines"]["items"]["properties"]["sku"]["confluent:tags"] == ["SKU"]
    assert schema["definitions"]["Card"]["properties"]["number"]["confluent:tags"] == ["PII"]
    assert sorted(stored["schemaTags"], key=json.dumps) == sorted(added, key=json.dumps)
    assert registry.ok("GET", f"/subjects/{subject}/versions/2?findTags=PII")["schemaTags"] == [added[3]]
    # schemaTagsToRemove on a registration, and a path naming nothing
    registry.ok("POST", f"/subjects/{subject}/versions", {
        "schema": stored["schema"], "schemaType": "JSON",
        "schemaTagsToRemove": [entity("object.definitions.Card.object.number", "sr_field", "PII")]})
    stored = latest(registry, subject)
    assert stored["version"] == 3
    assert "confluent:tags" not in json.loads(stored["schema"])["definitions"]["Card"]["properties"]["number"]
    status, body = registry.call("POST", f"/subjects/{subject}/versions/3/tags",
                                 {"tagsToAdd": [entity("object.nothing", "sr_field", "T")]})
    assert (status, body["error_code"]) == (422, 42201) and "No matching path 'object.nothing'" in body["message"]
    # propagateSchemaTags carries the JSON tags onto an evolved schema
    evolved = json.loads(JSON_SCHEMA)
    evolved["properties"]["note"] = {"type": "string"}  # (incompatible with an open content model)
    registry.ok("PUT", f"/config/{subject}", {"compatibility": "NONE"})
    registry.ok("POST", f"/subjects/{subject}/versions",
                {"schema": json.dumps(evolved), "schemaType": "JSON", "propagateSchemaTags": True})
    stored = registry.ok("GET", f"/subjects/{subject}/versions/latest?findTags=KEY&findTags=SKU")
    assert stored["version"] == 4
    assert [tag["schemaEntity"]["entityPath"] for tag in stored["schemaTags"]] == [
        "object.id", "object.lines.array.object.sku"]

    # confluent-kafka's client reads the tagged version as any other
    client = SchemaRegistryClient({"url": registry.url})
    registered = client.get_latest_version(subject)
    assert registered.version == 4 and registered.schema.schema_type == "JSON"
    assert json.loads(registered.schema.schema_str)["properties"]["id"]["confluent:tags"] == ["KEY"]
    assert client.lookup_schema(subject, registered.schema).version == 4


PROTO = """syntax = "proto3";
package shop;

message Order {
  int64 id = 1;
  oneof payment {
    string card = 2;
    string iban = 3;
  }
  Line line = 4;
  message Line {
    string sku = 1;
  }
}
"""


def test_protobuf_tags_are_meta_options_added_removed_propagated_and_found(registry):
    subject = "proto-tags-value"
    registry.register(subject, PROTO, "PROTOBUF")
    added = [entity("Order", "sr_record", "ORDER"), entity(".Order.id", "sr_field", "KEY"),
             entity("Order.payment.card", "sr_field", "PII"), entity("Order.Line.sku", "sr_field", "SKU", "X")]
    answer = registry.ok("POST", f"/subjects/{subject}/versions/1/tags", {"newVersion": 2, "tagsToAdd": added})
    assert answer["version"] == 2
    stored = registry.ok("GET", f"/subjects/{subject}/versions/2?findTags=*")
    schema = stored["schema"]
    assert 'import "confluent/meta.proto";' in schema
    assert 'option (confluent.message_meta) = { tags: ["ORDER"] };' in schema
    assert 'int64 id = 1 [(confluent.field_meta) = { tags: ["KEY"] }];' in schema
    assert 'string card = 2 [(confluent.field_meta) = { tags: ["PII"] }];' in schema
    assert stored["metadata"]["properties"]["confluent:version"] == "2"
    # Listed as Confluent lists them: the message, its oneof's fields, its fields, then nested messages
    assert stored["schemaTags"] == [entity("Order", "sr_record", "ORDER"), entity("Order.card", "sr_field", "PII"),
                                    entity("Order.id", "sr_field", "KEY"),
                                    entity("Order.Line.sku", "sr_field", "SKU", "X")]
    assert registry.ok("GET", f"/schemas/ids/{stored['id']}?findTags=X")["schemaTags"] == [
        entity("Order.Line.sku", "sr_field", "SKU", "X")]
    # The stored text registers again as the same version (the tags survive the round trip).
    assert registry.ok("POST", f"/subjects/{subject}", {"schema": schema, "schemaType": "PROTOBUF"})["version"] == 2
    # As the FileDescriptorProto a Protobuf deserializer asks for: the tags are field 1088 of the options.
    from confluent_kafka.schema_registry.confluent import meta_pb2  # (registers the meta extensions)
    from google.protobuf import descriptor_pb2

    serialized = registry.ok("GET", f"/subjects/{subject}/versions/2?format=serialized")["schema"]
    file = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized))
    assert "confluent/meta.proto" in file.dependency
    id_field = next(field for field in file.message_type[0].field if field.name == "id")
    assert list(id_field.options.Extensions[meta_pb2.field_meta].tags) == ["KEY"]

    # schemaTagsToRemove on a registration
    registry.ok("POST", f"/subjects/{subject}/versions", {
        "schema": schema, "schemaType": "PROTOBUF",
        "schemaTagsToRemove": [entity("Order.Line.sku", "sr_field", "SKU", "X"), entity("Order", "sr_record", "ORDER")]})
    stored = registry.ok("GET", f"/subjects/{subject}/versions/latest?findTags=*")
    assert stored["version"] == 3 and "message_meta" not in stored["schema"]
    assert [tag["schemaEntity"]["entityPath"] for tag in stored["schemaTags"]] == ["Order.card", "Order.id"]

    # propagateSchemaTags onto an evolved schema sent without tags
    evolved = PROTO.replace("  Line line = 4;\n", "  Line line = 4;\n  string note = 5;\n")
    registry.ok("POST", f"/subjects/{subject}/versions",
                {"schema": evolved, "schemaType": "PROTOBUF", "propagateSchemaTags": True})
    stored = registry.ok("GET", f"/subjects/{subject}/versions/latest?findTags=KEY")
    assert stored["version"] == 4 and "string note = 5;" in stored["schema"]
    assert stored["schemaTags"] == [entity("Order.id", "sr_field", "KEY")]

    # Confluent's messages for a path naming nothing
    for path, kind, message in [("Nope", "sr_record", "No matching Message with name 'Nope' found in the schema"),
                                ("Order.nope", "sr_field", "No matching Field with name 'nope' found in the schema"),
                                ("Order.other.card", "sr_field",
                                 "No matching Field with name 'card' found in the schema")]:
        status, body = registry.call("POST", f"/subjects/{subject}/versions/latest/tags",
                                     {"tagsToAdd": [entity(path, kind, "T")]})
        assert (status, body["error_code"]) == (422, 42201) and message in body["message"]


def test_protobuf_serializer_registers_a_tagged_message_importing_confluent_meta(registry):
    """confluent-kafka's ProtobufSerializer sends a schema importing confluent/meta.proto without a
    reference (it is built in, as in Confluent's registry); its tags are kept and found."""
    from confluent_kafka.schema_registry.confluent import meta_pb2
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    file = descriptor_pb2.FileDescriptorProto(name="kw_tagged_customer.proto", package="kwtags", syntax="proto3",
                                              dependency=["confluent/meta.proto"])
    message = file.message_type.add(name="Customer")
    message.options.Extensions[meta_pb2.message_meta].tags.append("CUSTOMER")
    email = message.field.add(name="email", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                              label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    email.options.Extensions[meta_pb2.field_meta].tags.extend(["PII", "EMAIL"])
    pool = descriptor_pool.Default()
    pool.Add(file)
    customer_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("kwtags.Customer"))

    client = SchemaRegistryClient({"url": registry.url})
    serializer = ProtobufSerializer(customer_class, client, {"use.deprecated.format": False})
    context = SerializationContext("tagged-customers", MessageField.VALUE)
    data = serializer(customer_class(email="a@example.com"), context)
    stored = registry.ok("GET", "/subjects/tagged-customers-value/versions/latest?findTags=PII&findTags=CUSTOMER")
    assert stored["schemaTags"] == [entity("Customer", "sr_record", "CUSTOMER"),
                                    entity("Customer.email", "sr_field", "PII", "EMAIL")]
    assert "references" not in stored
    deserializer = ProtobufDeserializer(customer_class, {"use.deprecated.format": False}, client)
    assert deserializer(data, context).email == "a@example.com"
