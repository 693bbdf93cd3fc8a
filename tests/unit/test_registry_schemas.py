"""registry/schemas.py and registry/store.py without a server: parsing, canonical text, Avro's
compatibility rules case by case under each level, and the replay of `_schemas` records (ours and
the ones Confluent's registry or Karapace wrote)."""

from __future__ import annotations

import json

import pytest

from registry.schemas import AVRO, JSON, InvalidSchema, parse_schema
from registry.store import (
    RegistryState,
    SchemaVersion,
    config_key,
    config_value,
    delete_subject_key,
    delete_subject_value,
    mode_key,
    mode_value,
    schema_key,
    schema_value,
)


def avro(value) -> str:
    return json.dumps(value)


def rec(*fields, name="R") -> str:
    return avro({"type": "record", "name": name, "fields": list(fields)})


def field(name, type_, **extra) -> dict:
    return {"name": name, "type": type_, **extra}


def errors(new: str, old: str, level: str) -> list[str]:
    return parse_schema(AVRO, new).compatibility_errors(parse_schema(AVRO, old), level)


# Each case: (old schema, new schema, BACKWARD compatible (new reads old), FORWARD compatible (old reads new)).
CASES = [
    ("same record", rec(field("a", "int")), rec(field("a", "int")), True, True),
    ("int promotes to long", '"int"', '"long"', True, False),
    ("int promotes to float and double", '"int"', '"double"', True, False),
    ("long promotes to float", '"long"', '"float"', True, False),
    ("float promotes to double", '"float"', '"double"', True, False),
    ("string and bytes read each other", '"string"', '"bytes"', True, True),
    ("int is not a string", '"int"', '"string"', False, False),
    ("a field added with a default", rec(field("a", "int")), rec(field("a", "int"), field("b", "string", default="")),
     True, True),
    ("a field added without a default", rec(field("a", "int")), rec(field("a", "int"), field("b", "string")),
     False, True),
    ("a field removed that had a default", rec(field("a", "int"), field("b", "string", default="")),
     rec(field("a", "int")), True, True),
    ("a field removed that had no default", rec(field("a", "int"), field("b", "string")), rec(field("a", "int")),
     True, False),
    ("a field renamed with the old name as alias", rec(field("a", "int")), rec(field("b", "int", aliases=["a"])),
     True, False),
    ("a field's type widened", rec(field("a", "int")), rec(field("a", "long")), True, False),
    ("an enum symbol added", avro({"type": "enum", "name": "E", "symbols": ["A"]}),
     avro({"type": "enum", "name": "E", "symbols": ["A", "B"]}), True, False),
    ("an enum symbol removed", avro({"type": "enum", "name": "E", "symbols": ["A", "B"]}),
     avro({"type": "enum", "name": "E", "symbols": ["A"]}), False, True),
    ("an enum symbol removed, the reader has a default",
     avro({"type": "enum", "name": "E", "symbols": ["A", "B"]}),
     avro({"type": "enum", "name": "E", "symbols": ["A"], "default": "A"}), True, True),
    ("a record renamed", rec(field("a", "int"), name="R"), rec(field("a", "int"), name="S"), False, False),
    ("a fixed resized", avro({"type": "fixed", "name": "F", "size": 4}), avro({"type": "fixed", "name": "F", "size": 8}),
     False, False),
    ("a type made nullable", '"string"', '["null", "string"]', True, False),
    ("a union branch added", '["null", "string"]', '["null", "string", "int"]', True, False),
    ("array items widened", avro({"type": "array", "items": "int"}), avro({"type": "array", "items": "long"}),
     True, False),
    ("map values narrowed", avro({"type": "map", "values": "long"}), avro({"type": "map", "values": "int"}),
     False, True),
]


@pytest.mark.parametrize("old, new, backward, forward", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_avro_compatibility_case_by_case(old, new, backward, forward):
    assert (errors(new, old, "BACKWARD") == []) is backward
    assert (errors(new, old, "FORWARD") == []) is forward
    assert (errors(new, old, "FULL") == []) is (backward and forward)
    assert errors(new, old, "NONE") == []


def test_an_incompatibility_says_where_and_why():
    found = errors(rec(field("a", "int"), field("b", "string")), rec(field("a", "int")), "BACKWARD")
    assert len(found) == 1 and found[0].startswith("BACKWARD: READER_FIELD_MISSING_DEFAULT_VALUE") and "b" in found[0]


def test_canonical_text_ignores_layout():
    assert parse_schema(AVRO, '{"type": "string"}').canonical == parse_schema(AVRO, ' "string" ').canonical == '"string"'
    spaced = parse_schema(AVRO, '{ "type" : "record", "name" : "R", "fields" : [ ] }')
    assert " " not in spaced.canonical
    assert parse_schema(JSON, '{ "type" : "object" }').canonical == '{"type":"object"}'


@pytest.mark.parametrize("schema_type, text", [
    (AVRO, "{"), (AVRO, '{"type": "record", "name": "R"}'), (AVRO, '"nosuchtype"'),
    (AVRO, '{"type": "enum", "name": "E", "symbols": ["A", "A"]}'), (AVRO, '{"type": "fixed", "name": "F"}'),
    (AVRO, "[" * 100000), (JSON, "{"), (JSON, "12"), (JSON, '{"type": 12}'), (JSON, '{"minimum": "a"}'),
    ("PROTOBUF", 'syntax = "proto3"; message M { strin a = 1; }'), ("PROTOBUF", 'message M { int32 a = 1 }'),
])
def test_invalid_schemas_are_refused_with_a_reason(schema_type, text):
    with pytest.raises(InvalidSchema) as refused:
        parse_schema(schema_type, text)
    assert str(refused.value)


def test_json_schema_levels_and_schema_types():
    old, new = parse_schema(JSON, '{"type": "object"}'), parse_schema(JSON, '{"type": "string"}')
    assert new.compatibility_errors(old, "NONE") == []
    assert "TYPE_CHANGED" in new.compatibility_errors(old, "BACKWARD")[0]
    assert new.compatibility_errors(new, "BACKWARD") == []  # the same schema again is compatible
    assert parse_schema(AVRO, '"string"').compatibility_errors(old, "BACKWARD")  # another type


# -- the records of _schemas -----------------------------------------------------------------------


def test_replay_of_schema_config_and_delete_records():
    state = RegistryState()
    v1 = SchemaVersion("s", 1, 1, '"string"', "AVRO")
    v2 = SchemaVersion("s", 2, 5, '{"type":"object"}', "JSON")
    state.apply(schema_key("s", 1), schema_value(v1))
    state.apply(schema_key("s", 2), schema_value(v2))
    state.apply(config_key(None), config_value("FULL"))
    state.apply(config_key("s"), config_value("NONE"))
    assert [e.version for e in state.versions("s")] == [1, 2]
    assert state.max_id == 5 and state.by_id(5)[0].schema_type == "JSON"
    assert state.compatibility("s") == "NONE" and state.compatibility("t") == "FULL"
    state.apply(config_key("s"), None)
    assert state.compatibility("s") == "FULL"
    state.apply(delete_subject_key("s"), delete_subject_value("s", 1))  # up to version 1
    assert [e.version for e in state.versions("s")] == [2]
    assert [e.version for e in state.versions("s", include_deleted=True)] == [1, 2]
    state.apply(schema_key("s", 1), None)  # permanently deleted
    assert [e.version for e in state.versions("s", include_deleted=True)] == [2]
    state.apply(schema_key("s", 2), None)
    assert state.subject_names(include_deleted=True) == []
    assert state.max_id == 5  # ids are never given again


def test_records_as_confluent_and_karapace_write_them_replay():
    state = RegistryState()
    # Karapace's older key order, Confluent's NOOP, a value with schemaType and an unknown key type.
    state.apply(b'{"subject":"k","version":1,"magic":1,"keytype":"SCHEMA"}',
                b'{"subject":"k","version":1,"id":7,"schema":"{\\"type\\":\\"object\\"}","schemaType":"JSON",'
                b'"deleted":false}')
    state.apply(b'{"keytype":"NOOP","magic":0}', None)
    state.apply(b'{"keytype":"MODE","subject":null,"magic":0}', b'{"mode":"READWRITE"}')
    state.apply(b"not json", b"{}")
    state.apply(b'{"keytype":"SCHEMA","subject":"k","version":2,"magic":1}', b'{"subject":"k"}')  # no id
    assert [(e.subject, e.version, e.schema_id, e.schema_type) for e in state.versions("k")] == [("k", 1, 7, "JSON")]


def test_our_records_have_confluents_shape():
    assert schema_key("s", 3) == b'{"keytype":"SCHEMA","subject":"s","version":3,"magic":1}'
    assert schema_value(SchemaVersion("s", 3, 9, '"int"', "AVRO")) == (
        b'{"subject":"s","version":3,"id":9,"schema":"\\"int\\"","deleted":false}')
    assert json.loads(schema_value(SchemaVersion("s", 1, 2, "{}", "JSON")))["schemaType"] == "JSON"
    assert config_key(None) == b'{"keytype":"CONFIG","subject":null,"magic":0}'
    assert config_value("FULL") == b'{"compatibilityLevel":"FULL"}'
    assert delete_subject_key("s") == b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}'
    assert delete_subject_value("s", 4) == b'{"subject":"s","version":4}'


def test_avro_references_lend_their_named_types():
    address = parse_schema(AVRO, avro({"type": "record", "name": "Address", "namespace": "shop",
                                       "fields": [field("street", "string")]}))
    customer_text = rec(field("address", "shop.Address"), name="Customer")
    with pytest.raises(InvalidSchema):
        parse_schema(AVRO, customer_text)  # shop.Address is unknown without the reference
    customer = parse_schema(AVRO, customer_text, [("shop.Address", address)])
    # The canonical text names the referenced type; the parsed schema has it resolved.
    assert json.loads(customer.canonical)["fields"][0]["type"] == "shop.Address"
    assert customer.parsed.fields[0].type.fullname == "shop.Address"
    assert set(customer.named) == {"shop.Address", "Customer"}
    # A reference's references reach the schema too.
    order = parse_schema(AVRO, rec(field("by", "Customer"), field("to", "shop.Address"), name="Order"),
                         [("Customer", customer)])
    assert order.parsed.fields[1].type.fullname == "shop.Address"


def test_references_must_be_of_the_schema_type():
    address = parse_schema(AVRO, avro({"type": "record", "name": "A", "fields": [field("s", "string")]}))
    with pytest.raises(InvalidSchema, match="not JSON"):
        parse_schema(JSON, '{"$ref": "A"}', [("A", address)])
    json_address = parse_schema(JSON, '{"type": "object"}')
    assert parse_schema(JSON, '{"$ref": "a.json"}', [("a.json", json_address)]).named == {"a.json": {"type": "object"}}


# -- JSON Schema compatibility (registry/json_compat.py), Confluent's rules case by case ------------


def obj(properties: dict, *, required=None, additional=None, **extra) -> dict:
    schema = {"type": "object", "properties": properties, **extra}
    if required is not None:
        schema["required"] = required
    if additional is not None:
        schema["additionalProperties"] = additional
    return schema


INT, STR, NUM = {"type": "integer"}, {"type": "string"}, {"type": "number"}

# Each case: (old schema, new schema, BACKWARD compatible (new reads old), FORWARD compatible (old reads new)).
JSON_CASES = [
    ("the same schema", obj({"a": INT}), obj({"a": INT}), True, True),
    ("a type changed", {"type": "string"}, {"type": "integer"}, False, False),
    ("integer widened to number", INT, NUM, True, False),
    ("a type added to a type list", {"type": "string"}, {"type": ["string", "null"]}, True, False),
    ("a type where there was none", {}, {"type": "string"}, False, True),
    ("a property's type changed", obj({"a": INT}), obj({"a": STR}), False, False),
    # Added to a closed model, the old schema (closed) refuses documents with it: never FORWARD.
    ("a required property added (closed model)", obj({"a": INT}, additional=False),
     obj({"a": INT, "b": STR}, required=["b"], additional=False), False, False),
    ("a required property added with a default (closed model)", obj({"a": INT}, additional=False),
     obj({"a": INT, "b": {"type": "string", "default": ""}}, required=["b"], additional=False), True, False),
    ("a required property added (open model, optional before in a partially open one)",
     obj({"a": INT}, additional=STR), obj({"a": INT, "b": STR}, required=["b"], additional=STR), False, True),
    ("an existing property made required", obj({"a": INT}), obj({"a": INT}, required=["a"]), False, True),
    ("a required property made optional", obj({"a": INT}, required=["a"]), obj({"a": INT}), True, False),
    ("an optional property added to an open model", obj({"a": INT}), obj({"a": INT, "b": STR}), False, True),
    ("an optional property added to a closed model", obj({"a": INT}, additional=False),
     obj({"a": INT, "b": STR}, additional=False), True, False),
    ("a property removed from an open model", obj({"a": INT, "b": STR}), obj({"a": INT}), True, False),
    ("a property removed from a closed model", obj({"a": INT, "b": STR}, additional=False),
     obj({"a": INT}, additional=False), False, True),
    ("a property added that fits a partially open model", obj({"a": INT}, additional=STR),
     obj({"a": INT, "b": STR}, additional=STR), True, True),
    ("a property added that does not fit a partially open model", obj({"a": INT}, additional=STR),
     obj({"a": INT, "b": INT}, additional=STR), False, False),
    ("the content model closed", obj({"a": INT}), obj({"a": INT}, additional=False), False, True),
    ("the content model opened", obj({"a": INT}, additional=False), obj({"a": INT}), True, False),
    ("an enum widened", {"type": "string", "enum": ["A", "B"]}, {"type": "string", "enum": ["A", "B", "C"]},
     True, False),
    ("an enum narrowed", {"type": "string", "enum": ["A", "B"]}, {"type": "string", "enum": ["A"]}, False, True),
    ("an enum added", STR, {"type": "string", "enum": ["A"]}, False, True),
    ("a maximum added", INT, {"type": "integer", "maximum": 10}, False, True),
    ("a maximum lowered", {"type": "integer", "maximum": 10}, {"type": "integer", "maximum": 5}, False, True),
    ("a maximum raised", {"type": "integer", "maximum": 10}, {"type": "integer", "maximum": 20}, True, False),
    ("a minimum raised", {"type": "integer", "minimum": 0}, {"type": "integer", "minimum": 5}, False, True),
    ("a minimum removed", {"type": "integer", "minimum": 0}, INT, True, False),
    ("an exclusiveMaximum lowered", {"type": "number", "exclusiveMaximum": 1},
     {"type": "number", "exclusiveMaximum": 0.5}, False, True),
    ("maxLength lowered", {"type": "string", "maxLength": 10}, {"type": "string", "maxLength": 5}, False, True),
    ("minLength lowered", {"type": "string", "minLength": 3}, {"type": "string", "minLength": 1}, True, False),
    ("maxItems added", {"type": "array", "items": INT}, {"type": "array", "items": INT, "maxItems": 3}, False, True),
    ("minProperties raised", obj({}, minProperties=1), obj({}, minProperties=2), False, True),
    ("a pattern added", STR, {"type": "string", "pattern": "^a"}, False, True),
    ("a pattern changed", {"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "^b"}, False, False),
    ("multipleOf divides the old one", {"type": "integer", "multipleOf": 4}, {"type": "integer", "multipleOf": 2},
     True, False),
    ("multipleOf that does not divide", {"type": "integer", "multipleOf": 4}, {"type": "integer", "multipleOf": 3},
     False, False),
    ("array items widened", {"type": "array", "items": INT}, {"type": "array", "items": NUM}, True, False),
    ("uniqueItems added", {"type": "array", "items": INT}, {"type": "array", "items": INT, "uniqueItems": True},
     False, True),
    ("a nested property's type changed", obj({"o": obj({"x": INT})}), obj({"o": obj({"x": STR})}), False, False),
    ("a branch added to anyOf", {"anyOf": [INT]}, {"anyOf": [INT, STR]}, True, False),
    ("a type turned into an anyOf with it", INT, {"anyOf": [INT, STR]}, True, False),
    ("a $ref to a definition widened", {"$defs": {"n": INT}, "$ref": "#/$defs/n"},
     {"$defs": {"n": NUM}, "$ref": "#/$defs/n"}, True, False),
]


def json_errors(new, old, level: str, new_named=None, old_named=None) -> list[str]:
    old_parsed = parse_schema(JSON, json.dumps(old))
    new_parsed = parse_schema(JSON, json.dumps(new))
    if new_named is not None:
        new_parsed = type(new_parsed)(JSON, new_parsed.canonical, new_parsed.parsed, new_named)
        old_parsed = type(old_parsed)(JSON, old_parsed.canonical, old_parsed.parsed, old_named)
    return new_parsed.compatibility_errors(old_parsed, level)


@pytest.mark.parametrize("name, old, new, backward, forward", JSON_CASES, ids=[c[0] for c in JSON_CASES])
def test_json_schema_compatibility(name, old, new, backward, forward):
    assert (not json_errors(new, old, "BACKWARD")) == backward, json_errors(new, old, "BACKWARD")
    assert (not json_errors(new, old, "FORWARD")) == forward, json_errors(new, old, "FORWARD")
    assert (not json_errors(new, old, "FULL")) == (backward and forward)
    assert json_errors(new, old, "NONE") == []


def test_json_schema_incompatibilities_name_confluents_difference_types():
    found = json_errors(obj({"a": INT, "b": STR}), obj({"a": INT}), "BACKWARD")
    assert found == ["BACKWARD: PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at #/properties/b: the writer's open content "
                     "model may have written b with any value"]
    assert json_errors({"type": "integer", "maximum": 5}, {"type": "integer", "maximum": 10}, "BACKWARD")[0].startswith(
        "BACKWARD: MAXIMUM_DECREASED at #/maximum")
    assert json_errors(NUM, INT, "FORWARD")[0].startswith("FORWARD: TYPE_NARROWED")


def test_json_schema_compatibility_follows_refs_to_references():
    old = {"type": "object", "properties": {"to": {"$ref": "address.json"}}}
    narrow = {"address.json": obj({"street": STR}, additional=False)}
    wide = {"address.json": obj({"street": STR, "zip": STR}, additional=False)}
    # The referencing schema is the same text; what its reference says decides.
    assert json_errors(old, old, "BACKWARD", new_named=wide, old_named=narrow) == []  # same text: compatible
    new = {"type": "object", "properties": {"to": {"$ref": "address.json"}, "n": INT}, "additionalProperties": False}
    closed_old = {**old, "additionalProperties": False}
    assert json_errors(new, closed_old, "BACKWARD", new_named=wide, old_named=narrow) == []
    assert json_errors(new, closed_old, "FORWARD", new_named=wide, old_named=narrow)  # zip unknown to the old reader


def test_mode_records_replay():
    state = RegistryState()
    assert state.mode(None) == "READWRITE" and state.mode("s") == "READWRITE"
    state.apply(mode_key(None), mode_value("READONLY"))
    state.apply(mode_key("s"), mode_value("IMPORT"))
    assert state.mode("s") == "IMPORT" and state.mode("t") == "READONLY"
    state.apply(mode_key("s"), None)
    assert state.mode("s") == "READONLY"
    assert mode_key("s") == b'{"keytype":"MODE","subject":"s","magic":0}'
    assert mode_value("IMPORT") == b'{"mode":"IMPORT"}'


def test_json_schema_compatibility_of_recursive_schemas():
    linked = {"$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer"}, "next": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/node"}]}}}},
        "$ref": "#/$defs/node"}
    wider = json.loads(json.dumps(linked))
    wider["$defs"]["node"]["properties"]["value"] = {"type": ["integer", "string"]}
    assert json_errors(linked, linked, "FULL") == []
    assert json_errors(wider, linked, "BACKWARD") == []  # the new list reads the old one, however long
    assert any("TYPE_CHANGED at #/properties/value" in e for e in json_errors(wider, linked, "FORWARD"))


def test_json_schema_compatibility_gives_up_on_a_blowup_as_incompatible():
    nested = {"type": "string"}
    for n in range(9):  # every level doubles the branches to try
        nested = {"anyOf": [nested, {"type": "integer", "maximum": n}],
                  "allOf": [{"anyOf": [nested, {"type": "null"}]}]}
    from registry.json_compat import read_errors

    found = read_errors(nested, {"anyOf": [nested, {"type": "null"}]}, reader_named={}, writer_named={})
    assert found[-1].startswith("TOO_COMPLEX")
