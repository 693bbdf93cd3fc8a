"""registry/tags.py: Confluent's schema tags added to and removed from Avro records and fields (found
breadth first, through unions, arrays and maps), JSON Schema objects and properties (by Confluent's
entity paths) and Protobuf messages and fields (its meta options), and listed for `?findTags=`."""

import json

import pytest
from google.protobuf import descriptor_pb2

from registry.protobuf import print_proto
from registry.schemas import InvalidSchema, parse_schema
from registry.tags import (TagRequestError, _java_hash_order, modify_avro_tags, modify_proto_tags, modify_tags,
                           schema_tags_answer, schema_tags_arg, tagged_entities)

SCHEMA = json.dumps({
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": ["null", {"type": "record", "name": "Customer",
                                               "fields": [{"name": "email", "type": "string"}]}]},
        {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line",
                                                               "fields": [{"name": "sku", "type": "string"}]}}},
        {"name": "extra", "type": {"type": "map", "values": {"type": "record", "name": "Extra",
                                                              "fields": [{"name": "note", "type": "string"}]}}},
    ]})


def test_tags_reach_records_and_fields_through_unions_arrays_and_maps():
    text = modify_avro_tags(SCHEMA, [
        ("shop.Order", "sr_record", ["A"]),
        ("shop.Customer.email", "sr_field", ["PII"]),
        ("Line.sku", "sr_field", ["X", "Y"]),
        ("Extra", "sr_record", ["M"]),
    ], [])
    schema = json.loads(text)
    assert schema["confluent:tags"] == ["A"]
    assert schema["fields"][1]["type"][1]["fields"][0]["confluent:tags"] == ["PII"]
    assert schema["fields"][2]["type"]["items"]["fields"][0]["confluent:tags"] == ["X", "Y"]
    assert schema["fields"][3]["type"]["values"]["confluent:tags"] == ["M"]


def test_tags_keep_their_order_once_each_and_an_empty_list_goes():
    once = modify_avro_tags(SCHEMA, [("Order.id", "sr_field", ["B", "A", "B"])], [])
    assert json.loads(once)["fields"][0]["confluent:tags"] == ["B", "A"]
    twice = modify_avro_tags(once, [("Order.id", "sr_field", ["C"])], [("Order.id", "sr_field", ["B"])])
    assert json.loads(twice)["fields"][0]["confluent:tags"] == ["A", "C"]
    gone = modify_avro_tags(twice, [], [("Order.id", "sr_field", ["A", "C"])])
    assert "confluent:tags" not in json.loads(gone)["fields"][0]


@pytest.mark.parametrize("path, kind", [("shop.Nope", "sr_record"), ("other.Order", "sr_record"),
                                        ("Order.nope", "sr_field"), ("Order", "sr_field")])
def test_a_path_naming_nothing_is_an_invalid_schema(path, kind):
    with pytest.raises(InvalidSchema, match=f"No matching path '{path}' found in the schema"):
        modify_avro_tags(SCHEMA, [(path, kind, ["T"])], [])


def test_tag_entities_are_read_in_confluents_shape():
    assert schema_tags_arg([{"schemaEntity": {"entityPath": "a.B", "entityType": "SR_RECORD"}, "tags": ["T"]}],
                           "tagsToAdd") == [("a.B", "sr_record", ["T"])]
    assert schema_tags_arg(None, "tagsToAdd") == []
    for bad in ({"x": 1}, [{"schemaEntity": {"entityPath": "a"}, "tags": ["T"]}],
                [{"schemaEntity": {"entityPath": "a", "entityType": "sr_topic"}, "tags": ["T"]}],
                [{"schemaEntity": {"entityPath": "a", "entityType": "sr_field"}, "tags": "T"}]):
        with pytest.raises(TagRequestError):
            schema_tags_arg(bad, "tagsToAdd")


# -- JSON Schema: Confluent's entity paths (its JsonSchemaTest's schemas) ------------------------------

SAMPLE = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "SampleRecord", "type": "object",
    "additionalProperties": False,
    "properties": {
        "myfield1": {"type": "array", "items": {"type": "object", "title": "arrayRecord", "properties": {
            "field1": {"type": "string"}, "field2": {"type": "number"}}}},
        "myfield2": {"allOf": [{"type": "string"}, {"type": "object", "title": "nestedUnion", "properties": {
            "nestedUnionField1": {"type": "boolean"}, "nestedUnionField2": {"type": "number"}}}]},
        "myfield3": {"not": {"type": "object", "title": "nestedNot", "properties": {
            "nestedNotField1": {"type": "boolean"}, "nestedNotField2": {"type": "string"}}}},
        "myfield4": {"enum": ["red", "amber", "green"]},
    }}
SAMPLE_TAGS = [("object.myfield1.array.object.field1", "sr_field", ["PII"]),
               ("object.myfield2.allof.0.object.nestedUnionField2", "sr_field", ["PII"]),
               ("object.myfield3.not.object.nestedNotField2", "sr_field", ["PII"]),
               ("object.myfield4", "sr_field", ["PII"]),
               ("object.myfield1.array.object", "sr_record", ["record"]),
               ("object.myfield2.allof.0.object", "sr_record", ["record"]),
               ("object.myfield3.not.object", "sr_record", ["record"])]


def test_json_schema_tags_follow_confluents_paths_through_arrays_combinations_and_not():
    tagged = json.loads(modify_tags("JSON", json.dumps(SAMPLE), SAMPLE_TAGS, []))
    props = tagged["properties"]
    assert props["myfield1"]["items"]["confluent:tags"] == ["record"]
    assert props["myfield1"]["items"]["properties"]["field1"]["confluent:tags"] == ["PII"]
    # allOf's object sorts before its string (everit orders subschemas by kind), so it is allof.0
    assert props["myfield2"]["allOf"][1]["confluent:tags"] == ["record"]
    assert props["myfield2"]["allOf"][1]["properties"]["nestedUnionField2"]["confluent:tags"] == ["PII"]
    assert "confluent:tags" not in props["myfield2"]["allOf"][0]
    assert props["myfield3"]["not"]["properties"]["nestedNotField2"]["confluent:tags"] == ["PII"]
    assert props["myfield4"]["confluent:tags"] == ["PII"]
    assert sorted(tagged_entities("JSON", json.dumps(tagged))) == sorted(SAMPLE_TAGS)
    untagged = modify_tags("JSON", json.dumps(tagged), [], SAMPLE_TAGS)
    assert json.loads(untagged) == SAMPLE and tagged_entities("JSON", untagged) == []


def test_json_schema_conditionals_and_type_lists_are_combinations_of_kinds():
    conditional = {"else": {"properties": {"postal_code": {"pattern": "[A-Z]"}}},
                   "if": {"properties": {"country": {"const": "United States of America"}}},
                   "properties": {"country": {"default": "United States of America", "enum": ["US", "Canada"]},
                                  "street_address": {"type": "string"}},
                   "then": {"properties": {"postal_code": {"pattern": "[0-9]{5}"}}}, "type": "object"}
    tagged = json.loads(modify_tags("JSON", json.dumps(conditional), [
        ("allof.0.conditional.else.object.postal_code", "sr_field", ["C"]),
        ("allof.1.object.country", "sr_field", ["C"]),
        ("allof.1.object", "sr_record", ["record"]),
        ("allof.0.conditional.if.object", "sr_record", ["record"])], []))
    assert tagged["else"]["properties"]["postal_code"]["confluent:tags"] == ["C"]
    assert tagged["properties"]["country"]["confluent:tags"] == ["C"]
    assert tagged["confluent:tags"] == ["record"] and tagged["if"]["confluent:tags"] == ["record"]
    task = {"$id": "task.schema.json", "title": "Task", "type": ["null", "object"],
            "properties": {"parent": {"$ref": "task.schema.json", "confluent:tags": ["testRecursive"]},
                           "title": {"type": "string"}}}
    tagged = json.loads(modify_tags("JSON", json.dumps(task), [("anyof.1.object.parent", "sr_field", ["PII"])], []))
    assert tagged["properties"]["parent"]["confluent:tags"] == ["testRecursive", "PII"]
    assert tagged_entities("JSON", json.dumps(tagged)) == [("anyof.1.object.parent", "sr_field",
                                                            ["testRecursive", "PII"])]


def test_json_schema_definitions_and_dotted_names():
    schema = {"type": "object", "properties": {"cc": {"oneOf": [{"type": "null"}, {"$ref": "#/definitions/Card"}]}},
              "definitions": {"Another.Details": {"type": "object", "properties": {"additional.field1": {"type": "string"}}},
                              "Card": {"type": "object", "properties": {"number": {"type": "string"}}}}}
    tagged = json.loads(modify_tags("JSON", json.dumps(schema), [
        ("object.definitions.Card.object.number", "sr_field", ["PII"]),
        ("object.definitions.Another.Details.object.additional.field1", "sr_field", ["T2"]),
        ("object.definitions.Card.object", "sr_record", ["T3"])], []))
    definitions = tagged["definitions"]
    assert definitions["Card"]["properties"]["number"]["confluent:tags"] == ["PII"]
    assert definitions["Card"]["confluent:tags"] == ["T3"]
    assert definitions["Another.Details"]["properties"]["additional.field1"]["confluent:tags"] == ["T2"]
    assert set(map(tuple, [(p, k) for p, k, _ in tagged_entities("JSON", json.dumps(tagged))])) == {
        ("object.definitions.Card.object.number", "sr_field"),
        ("object.definitions.Another.Details.object.additional.field1", "sr_field"),
        ("object.definitions.Card.object", "sr_record")}


@pytest.mark.parametrize("path, kind", [("object.nope", "sr_field"), ("object", "sr_field"),
                                        ("record.f", "sr_field"), ("array.object", "sr_record"),
                                        (".object.f", "sr_field")])
def test_a_json_path_naming_nothing_is_an_invalid_schema(path, kind):
    schema = json.dumps({"type": "object", "properties": {"f": {"type": "string"}}})
    with pytest.raises(InvalidSchema, match="No matching path"):
        modify_tags("JSON", schema, [(path, kind, ["T"])], [])


def test_tagged_entities_list_avro_full_names_depth_first_and_find_tags_filters():
    tagged = modify_avro_tags(SCHEMA, [("shop.Order", "sr_record", ["A"]), ("shop.Customer.email", "sr_field", ["PII"]),
                                       ("Line.sku", "sr_field", ["X", "Y"]), ("Order.id", "sr_field", ["B"])], [])
    entities = tagged_entities("AVRO", tagged)
    assert entities == [("shop.Order", "sr_record", ["A"]), ("shop.Order.id", "sr_field", ["B"]),
                        ("shop.Customer.email", "sr_field", ["PII"]), ("shop.Line.sku", "sr_field", ["X", "Y"])]
    assert schema_tags_answer(entities, ["Y", "A"]) == [
        {"schemaEntity": {"entityPath": "shop.Order", "entityType": "sr_record"}, "tags": ["A"]},
        {"schemaEntity": {"entityPath": "shop.Line.sku", "entityType": "sr_field"}, "tags": ["X", "Y"]}]
    assert len(schema_tags_answer(entities, ["*"])) == 4 and schema_tags_answer(entities, ["none"]) == []


PROTO = """syntax = "proto3";
package com.example.mynamespace;
import "confluent/meta.proto";
message SampleRecord {
  option (confluent.message_meta).tags = "OTHER";
  int32 my_field1 = 1 [(confluent.field_meta).tags = "OTHER", (confluent.field_meta).tags = "PRIVATE"];
  double my_field2 = 2 [(confluent.field_meta) = { tags: [ "PRIVATE" ] }];
  NestedRecord my_field3 = 3 [(confluent.field_meta) = { doc: "field_meta" }];
  oneof pay { string card = 5; }
  message NestedRecord { int64 nested_filed1 = 4; }
}
"""


def _proto_tagged(text, to_add, to_remove):
    descriptor = descriptor_pb2.FileDescriptorProto()
    descriptor.CopyFrom(parse_schema("PROTOBUF", text).parsed)
    modify_proto_tags(descriptor, to_add, to_remove)
    return parse_schema("PROTOBUF", print_proto(descriptor)).canonical  # (protoc accepts it again)


def test_protobuf_tags_are_confluent_meta_options_found_as_confluent_finds_them():
    # Confluent's ProtobufSchemaTest.testBasicAddAndRemoveSchemaTags, and a oneof's field
    added = _proto_tagged(PROTO, [(".SampleRecord.my_field1", "sr_field", ["PII"]),
                                  (".SampleRecord.my_field2", "sr_field", ["PII"]),
                                  (".SampleRecord.my_field3", "sr_field", ["PII"]),
                                  (".SampleRecord.NestedRecord.nested_filed1", "sr_field", ["PII"]),
                                  (".SampleRecord", "sr_record", ["PII"]),
                                  (".SampleRecord.NestedRecord", "sr_record", ["PII"]),
                                  ("SampleRecord.pay.card", "sr_field", ["C"])], [])
    assert 'my_field3 = 3 [(confluent.field_meta) = { doc: "field_meta" tags: ["PII"] }];' in added
    assert tagged_entities("PROTOBUF", added) == [
        ("SampleRecord", "sr_record", ["OTHER", "PII"]), ("SampleRecord.card", "sr_field", ["C"]),
        ("SampleRecord.my_field1", "sr_field", ["OTHER", "PRIVATE", "PII"]),
        ("SampleRecord.my_field2", "sr_field", ["PRIVATE", "PII"]), ("SampleRecord.my_field3", "sr_field", ["PII"]),
        ("SampleRecord.NestedRecord", "sr_record", ["PII"]),
        ("SampleRecord.NestedRecord.nested_filed1", "sr_field", ["PII"])]
    removed = _proto_tagged(added, [], [(".SampleRecord.my_field1", "sr_field", ["OTHER"]),
                                        (".SampleRecord.my_field3", "sr_field", ["PII"]),
                                        (".SampleRecord.NestedRecord", "sr_record", ["PII"]),
                                        ("SampleRecord.card", "sr_field", ["C"])])
    assert 'my_field3 = 3 [(confluent.field_meta) = { doc: "field_meta" }];' in removed
    assert tagged_entities("PROTOBUF", removed) == [
        ("SampleRecord", "sr_record", ["OTHER", "PII"]), ("SampleRecord.my_field1", "sr_field", ["PRIVATE", "PII"]),
        ("SampleRecord.my_field2", "sr_field", ["PRIVATE", "PII"]),
        ("SampleRecord.NestedRecord.nested_filed1", "sr_field", ["PII"])]


def test_protobuf_tagging_imports_confluent_meta_and_refuses_paths_naming_nothing():
    plain = 'syntax = "proto3";\nmessage P {\n  int32 x = 1;\n}\n'
    tagged = _proto_tagged(plain, [("P.x", "sr_field", ["T"])], [])
    assert 'import "confluent/meta.proto";' in tagged and tagged_entities("PROTOBUF", tagged) == [
        ("P.x", "sr_field", ["T"])]
    for path, kind, message in [("Q", "sr_record", "No matching Message with name 'Q' found"),
                                ("P.y", "sr_field", "No matching Field with name 'y' found"),
                                ("P.o.x", "sr_field", "No matching Field with name 'x' found")]:
        with pytest.raises(InvalidSchema, match=message):
            _proto_tagged(plain, [(path, kind, ["T"])], [])


def test_java_hash_order_is_a_hashmaps():
    # java.util.HashMap<String, ?> with "b", "a", "c" put in that order iterates a, b, c ("a".hashCode()
    # is 97: bucket 1), and "Aa"/"BB" share a hash code, so they keep their insertion order.
    assert _java_hash_order(["b", "a", "c"]) == ["a", "b", "c"]
    assert _java_hash_order(["BB", "Aa"]) == ["BB", "Aa"]


def test_listing_a_schema_nested_past_pythons_recursion_is_an_invalid_schema_not_a_crash():
    deep = '{"not":' * 3000 + '{"type":"object"}' + "}" * 3000
    with pytest.raises(InvalidSchema, match="nested too deeply"):
        tagged_entities("JSON", deep)
    assert tagged_entities("JSON", "not json") == []


def test_protobuf_tags_are_found_when_confluents_meta_pb2_is_loaded_in_the_process():
    """With confluent-kafka's meta_pb2 imported (its Protobuf serializer imports it), field 1088 of the
    options messages is a known extension rather than an unknown field: the tags are read all the
    same. In a child process, so that this process's descriptor pool stays as it is."""
    import subprocess
    import sys

    program = (
        "import confluent_kafka.schema_registry.confluent.meta_pb2\n"
        "from tests.unit.test_registry_tags import _proto_tagged\n"
        "from registry.tags import tagged_entities\n"
        "plain = 'syntax = \"proto3\";\\nmessage P {\\n  int32 x = 1;\\n}\\n'\n"
        "print(tagged_entities('PROTOBUF', _proto_tagged(plain, [('P.x', 'sr_field', ['T'])], [])))\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[('P.x', 'sr_field', ['T'])]"
