"""registry/reserved.py: the config's `validateFields` as Confluent's registry acts on it: reserved
fields (`confluent:reserved`) against each schema type's top-level fields, and JSON Schema property
names starting with `$$`; and the setting's scope (registry/store.py)."""

import json

import pytest

from registry.reserved import (reserved_field_errors, reserved_fields, restricted_field, top_level_fields)
from registry.schemas import parse_schema
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
    assert restricted_field(parse_schema("JSON", json.dumps({"type": "array", "items": {"type": "object", "properties": {
        "$$b": {}}}}))) is None
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
