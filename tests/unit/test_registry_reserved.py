"""registry/reserved.py: the config's `validateFields` as Confluent's registry acts on it: reserved
fields (`confluent:reserved`) against each schema type's top-level fields, and JSON Schema property
names starting with `$$`; and the setting's scope (registry/store.py)."""

import json

import pytest

from registry.reserved import (reserved_field_errors, reserved_fields, restricted_field, top_level_fields)
from registry.schemas import InvalidSchema, parse_schema
from registry.store import RegistryState, config_key, config_value

AVRO_RECORD = json.dumps({"type": "record", "name": "myrecord", "fields": [
    {"name": "f", "type": "string"},
    {"name": "g", "type": "string", "default": "d"},
    {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [{"name": "deep", "type": "int"}]}}]})

JSON_OBJECT = json.dumps({"type": "object", "properties": {
    "f": {"type": "string"}, "nested": {"type": "object", "properties": {"deep": {"type": "string"}}}}})

PROTO = """syntax = "proto3";
package shop;
message Order {
  string f = 1;
  optional int32 g = 2;
  oneof choice { string in_oneof = 3; }
  map<string, int32> counts = 4;
  message Nested { string deep = 1; }
}
message Other { string h = 1; }
enum Kind { A = 0; }
"""


def reserving(names: str) -> dict:
    return {"properties": {"confluent:reserved": names}}


def test_reserved_names_are_comma_separated_and_trimmed():
    assert reserved_fields(reserving(" f, g ,,h ")) == {"f", "g", "h"}
    assert reserved_fields(reserving("")) == set()
    assert reserved_fields(None) == set() and reserved_fields({"properties": {"other": "f"}}) == set()


@pytest.mark.parametrize("schema_type, text, fields", [
    ("AVRO", AVRO_RECORD, {"f", "g", "inner"}),
    ("AVRO", json.dumps({"type": "error", "name": "Oops", "fields": [{"name": "why", "type": "string"}]}), {"why"}),
    ("AVRO", '"string"', set()),
    ("AVRO", json.dumps({"type": "enum", "name": "E", "symbols": ["f"]}), set()),
    ("JSON", JSON_OBJECT, {"f", "nested"}),
    ("JSON", json.dumps({"type": "string"}), set()),
    ("PROTOBUF", PROTO, {"f", "g", "counts", "h"}),
])
def test_top_level_fields_as_confluent_lists_them(schema_type, text, fields):
    assert top_level_fields(parse_schema(schema_type, text)) == fields


def test_a_reserved_field_the_schema_has_conflicts():
    parsed = parse_schema("AVRO", AVRO_RECORD)
    assert reserved_field_errors(parsed, reserving("f"), None, False) == [
        "The new schema has field that conflicts with the reserved field f."]
    assert reserved_field_errors(parsed, reserving("x, deep"), None, False) == []  # not top level
    proto = parse_schema("PROTOBUF", PROTO)
    assert reserved_field_errors(proto, reserving("in_oneof,deep,h"), None, False) == [
        "The new schema has field that conflicts with the reserved field h."]


def test_a_reserved_field_of_the_previous_version_may_not_be_dropped():
    parsed = parse_schema("JSON", JSON_OBJECT)
    assert reserved_field_errors(parsed, reserving("g,f"), reserving("z,g,y"), True) == [
        "The new schema has reserved field y removed from its metadata which is present in the old schema's "
        "metadata.",
        "The new schema has reserved field z removed from its metadata which is present in the old schema's "
        "metadata.",
        "The new schema has field that conflicts with the reserved field f."]
    # No previous version: nothing to drop
    assert reserved_field_errors(parsed, None, reserving("z"), False) == []
    assert reserved_field_errors(parsed, reserving("z"), reserving("z"), True) == []


def test_json_property_names_may_not_start_with_two_dollars():
    assert restricted_field(parse_schema("JSON", json.dumps({"type": "object", "properties": {
        "a": {}, "$$b": {}}}))) == "$$b"
    # Without a type, object keywords make it an object schema
    assert restricted_field(parse_schema("JSON", json.dumps({"properties": {"$$b": {}}}))) == "$$b"
    assert restricted_field(parse_schema("JSON", json.dumps({"type": "object", "properties": {"$b": {}}}))) is None
    # Only the root's properties; other schema types have none
    assert restricted_field(parse_schema("JSON", json.dumps({"type": "object", "properties": {
        "a": {"type": "object", "properties": {"$$b": {}}}}}))) is None
    array = {"type": "array", "items": {"type": "object", "properties": {"$$b": {}}}}
    assert restricted_field(parse_schema("JSON", json.dumps(array))) is None
    assert restricted_field(parse_schema("AVRO", AVRO_RECORD)) is None


def test_validate_fields_in_scope_subject_then_context_then_global():
    state = RegistryState()
    assert state.setting("s", "validateFields") is None
    state.apply(config_key(None), config_value("BACKWARD", None, {"validateFields": True}))
    assert state.setting("s", "validateFields") is True
    state.apply(config_key("s"), config_value("BACKWARD", None, {"validateFields": False}))
    assert state.setting("s", "validateFields") is False and state.setting("t", "validateFields") is True
    state.apply(config_key("u"), config_value("NONE"))  # a record without it: the global one's
    assert state.setting("u", "validateFields") is True
    state.apply(config_key(":.ctx:"), config_value(None, None, {"validateFields": False}))
    assert state.setting(":.ctx:v", "validateFields") is False
    state.apply(config_key(None), None)
    assert state.setting("t", "validateFields") is None


# -- validateNewSchemas: Avro defaults and namespaces (registry/schemas.py) ----------------------------

def with_default(kind, default) -> str:
    return json.dumps({"type": "record", "name": "r", "fields": [{"name": "f", "type": kind, "default": default}]})


# Each answer as Java Avro 1.12's parser with validateDefaults gives it (checked against it)
@pytest.mark.parametrize("kind, default, refusal", [
    ("int", "foo", 'Invalid default for field f: "foo" not a "int"'),
    ("string", None, 'Invalid default for field f: null not a "string"'),
    (["null", "string"], "x", None),  # a union's default may be of any branch
    (["string", "null"], 1, 'Invalid default for field f: 1 not a ["string","null"]'),
    ("int", 1.0, 'Invalid default for field f: 1.0 not a "int"'),
    ("int", 2 ** 31, 'Invalid default for field f: 2147483648 not a "int"'),
    ("long", -2 ** 63, None),
    ("long", 2 ** 63, 'Invalid default for field f: 9223372036854775808 not a "long"'),
    ("float", 1, None),
    ("int", True, 'Invalid default for field f: true not a "int"'),
    ("boolean", 0, 'Invalid default for field f: 0 not a "boolean"'),
    ({"type": "array", "items": "int"}, [1, "a"], 'Invalid default for field f: [1,"a"] not a '
                                                  '{"type":"array","items":"int"}'),
    ({"type": "map", "values": "long"}, [], 'Invalid default for field f: [] not a {"type":"map","values":"long"}'),
    ({"type": "record", "name": "I", "fields": [{"name": "a", "type": "int"},
                                                {"name": "b", "type": "string", "default": "x"}]}, {"a": 1}, None),
    ({"type": "record", "name": "I", "fields": [{"name": "a", "type": "int", "default": "bad"}]}, {"a": 1},
     'Invalid default for field a: "bad" not a "int"'),  # the inner field first, as Java parses
    ("double", "NaN", None), ("float", " 2d ", None), ("double", "0x1p3", None),  # Java's Double.valueOf
    ("double", "abc", 'For input string: "abc"'),
    (["double", "null"], "1.5", 'Invalid default for field f: "1.5" not a ["double","null"]'),
])
def test_avro_defaults_of_a_new_schema(kind, default, refusal):
    text = with_default(kind, default)
    if refusal is None:
        parse_schema("AVRO", text, validate_new=True)
    else:
        with pytest.raises(InvalidSchema) as raised:
            parse_schema("AVRO", text, validate_new=True)
        assert str(raised.value) == f"Invalid AVRO schema: {refusal}"
    parse_schema("AVRO", text)  # not new: defaults are not checked


def test_avro_namespaces_of_a_new_schema():
    bad_namespace = json.dumps({"type": "record", "name": "myrecord", "namespace": "a-bad.namespace",
                                "fields": [{"name": "f", "type": "string"}]})
    with pytest.raises(InvalidSchema, match="a-bad is not a valid Avro name"):
        parse_schema("AVRO", bad_namespace, validate_new=True)
    assert parse_schema("AVRO", bad_namespace).parsed.fullname == "a-bad.namespace.myrecord"
    # Not new: the simple names still are checked
    for bad in ({"type": "record", "name": "my-record", "fields": []},
                {"type": "record", "name": "r", "fields": [{"name": "f-x", "type": "int"}]},
                {"type": "record", "name": "r", "fields": [{"name": "e", "type": {"type": "fixed", "name": "f-x",
                                                                                  "size": 1}}]}):
        with pytest.raises(InvalidSchema, match="is not a valid Avro name"):
            parse_schema("AVRO", json.dumps(bad))
