"""Protobuf schemas in the registry (registry/protobuf.py through registry/schemas.py): parsing proto2 and
proto3 text and Confluent's serialized (base64 FileDescriptorProto) form, protoc's reasons for an
invalid schema, imports resolved through references, the canonical and normalized texts, and each of
Confluent's Protobuf compatibility rules, case by case."""

from __future__ import annotations

import base64

import pytest
from google.protobuf import descriptor_pb2

from registry.protobuf import compile_proto, print_proto, serialized
from registry.schemas import PROTOBUF, SCHEMA_TYPES, InvalidSchema, parse_schema

PROTO3 = 'syntax = "proto3";\n'
PROTO2 = 'syntax = "proto2";\n'


def parse(text: str, references=(), normalize: bool = False):
    return parse_schema(PROTOBUF, text, list(references), normalize=normalize)


# -- parsing ---------------------------------------------------------------------------------------


def test_protobuf_is_a_schema_type():
    assert SCHEMA_TYPES == ("JSON", "PROTOBUF", "AVRO")


def test_proto3_parses_to_a_descriptor_and_a_canonical_text():
    schema = parse(PROTO3 + """package shop.v1;
        message Order { int64 id = 1; repeated string items = 2; map<string, int32> counts = 3;
          optional string note = 4; Status status = 5; oneof pay { string card = 6; string iban = 7; }
          message Line { string sku = 1; } repeated Line lines = 8; }
        enum Status { NEW = 0; PAID = 1; }""")
    order = schema.parsed.message_type[0]
    assert schema.parsed.package == "shop.v1" and order.name == "Order"
    assert [f.name for f in order.field] == ["id", "items", "counts", "note", "status", "card", "iban", "lines"]
    assert schema.canonical == (
        'syntax = "proto3";\npackage shop.v1;\nmessage Order {\n  int64 id = 1;\n  repeated string items = 2;\n'
        '  map<string, int32> counts = 3;\n  optional string note = 4;\n  .shop.v1.Status status = 5;\n'
        '  oneof pay {\n    string card = 6;\n    string iban = 7;\n  }\n  repeated .shop.v1.Order.Line lines = 8;\n'
        '  message Line {\n    string sku = 1;\n  }\n}\nenum Status {\n  NEW = 0;\n  PAID = 1;\n}\n')
    # The canonical text parses to itself, and layout does not matter.
    assert parse(schema.canonical).canonical == schema.canonical
    squeezed = parse(PROTO3 + "package shop.v1; message Order { int64 id = 1; }")
    spread = parse(PROTO3 + "package shop.v1;\n\n  message   Order {\n // the id\n int64   id=1 ;\n}\n")
    assert squeezed.canonical == spread.canonical


def test_proto2_with_labels_defaults_extensions_services_and_options():
    text = PROTO2 + """option java_package = "com.shop";
        message P { required int32 a = 1 [default = 5]; optional string s = 2 [default = "x\\"y"];
          repeated int32 r = 3 [packed = true, deprecated = true]; optional bytes b = 4 [default = "\\001"];
          extensions 100 to max; reserved 10, 12 to 14; reserved "gone";
          enum E { option allow_alias = true; A = 0; B = 1; C = 1; } optional E e = 5 [default = B]; }
        extend P { optional int32 extra = 100; }
        service S { rpc Get (P) returns (stream P); }"""
    schema = parse(text)
    assert schema.parsed.syntax in ("", "proto2")
    assert parse(schema.canonical).canonical == schema.canonical
    for part in ("required int32 a = 1 [default = 5];", 'optional string s = 2 [default = "x\\"y"];',
                 "repeated int32 r = 3 [packed = true, deprecated = true];", "extensions 100 to max;",
                 "reserved 10, 12 to 14;", 'reserved "gone";', "optional .P.E e = 5 [default = B];",
                 "extend .P {", "rpc Get (.P) returns (stream .P);", 'option java_package = "com.shop";'):
        assert part in schema.canonical


def test_a_serialized_descriptor_is_the_same_schema_as_its_text():
    schema = parse(PROTO3 + "package a; message M { string s = 1; repeated int64 n = 2; }")
    as_base64 = serialized(schema.parsed)
    descriptor = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(as_base64))
    assert descriptor.message_type[0].name == "M"
    assert parse(as_base64).canonical == schema.canonical


@pytest.mark.parametrize("text, reason", [
    (PROTO3 + "message M { strin s = 1; }", '"strin" is not defined'),
    (PROTO3 + "message M { string s = 1 }", "Expected \";\""),
    (PROTO3 + "message M { string s = 1; int32 t = 1; }", "Field number 1 has already been used"),
    (PROTO3 + "message M { required string s = 1; }", "Required fields are not allowed in proto3"),
    (PROTO3 + 'import "missing.proto"; message M { string s = 1; }', "missing.proto"),
    ('syntax = "proto4"; message M {}', "proto4"),
    (PROTO3 + "message M {", "missing '}'"),
    ('edition = "2023"; message M { int32 a = 1; }', "editions are not supported"),
])
def test_invalid_protobuf_is_refused_with_protocs_reason(text, reason):
    with pytest.raises(InvalidSchema) as refused:
        parse(text)
    assert reason in str(refused.value)


# -- references --------------------------------------------------------------------------------------


def test_imports_resolve_through_references_and_their_own_references():
    money = parse(PROTO3 + "package shop; message Money { int64 cents = 1; }")
    line = parse(PROTO3 + 'package shop; import "money.proto"; message Line { .shop.Money price = 1; }',
                 [("money.proto", money)])
    order = parse(PROTO3 + 'package shop; import "line.proto"; import "money.proto";\n'
                           "message Order { repeated Line lines = 1; Money total = 2; }",
                  [("line.proto", line), ("money.proto", money)])
    assert list(order.parsed.dependency) == ["line.proto", "money.proto"]
    assert ".shop.Line" in order.canonical and ".shop.Money" in order.canonical
    # line.proto's own import travels with it: money.proto is known through it.
    assert set(line.named) == {"money.proto"} and set(order.named) == {"line.proto", "money.proto"}
    # Without the reference, the import is unknown.
    with pytest.raises(InvalidSchema, match="money.proto"):
        parse(PROTO3 + 'package shop; import "money.proto"; message Line { Money price = 1; }')


def test_well_known_types_need_no_reference():
    schema = parse(PROTO3 + 'import "google/protobuf/timestamp.proto";\n'
                            "message Event { google.protobuf.Timestamp at = 1; }")
    assert ".google.protobuf.Timestamp at = 1;" in schema.canonical


def test_a_reference_name_must_stay_inside_the_schema_root():
    money = parse(PROTO3 + "message Money { int64 cents = 1; }")
    with pytest.raises(InvalidSchema, match="not a relative .proto path"):
        parse(PROTO3 + 'import "../money.proto"; message M { Money m = 1; }', [("../money.proto", money)])


def test_a_reference_of_another_type_is_refused():
    avro = parse_schema("AVRO", '{"type": "record", "name": "Money", "fields": []}')
    with pytest.raises(InvalidSchema, match="not PROTOBUF"):
        parse(PROTO3 + 'import "money.proto"; message M { string s = 1; }', [("money.proto", avro)])


# -- normalize -------------------------------------------------------------------------------------


def test_normalize_orders_imports_options_and_fields():
    a = parse(PROTO3 + 'import "google/protobuf/timestamp.proto"; import "google/protobuf/duration.proto";\n'
                       'option java_package = "x"; option go_package = "y";\n'
                       "message M { string b = 2; int32 a = 1 [json_name = \"A\", deprecated = true];"
                       " google.protobuf.Timestamp t = 3; google.protobuf.Duration d = 4; }")
    b = parse(PROTO3 + 'import "google/protobuf/duration.proto"; import "google/protobuf/timestamp.proto";\n'
                       'option go_package = "y"; option java_package = "x";\n'
                       "message M { int32 a = 1 [deprecated = true, json_name = \"A\"]; string b = 2;"
                       " google.protobuf.Duration d = 4; google.protobuf.Timestamp t = 3; }")
    assert a.canonical != b.canonical
    assert parse(a.canonical, normalize=True).canonical == parse(b.canonical, normalize=True).canonical
    normalized = parse(a.canonical, normalize=True).canonical
    assert normalized.index("int32 a = 1") < normalized.index("string b = 2")
    assert parse(normalized, normalize=True).canonical == normalized


def test_normalize_avro_and_json_orders_object_keys():
    first = '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}'
    second = '{"fields": [{"type": "int", "name": "a"}], "name": "R", "type": "record"}'
    assert (parse_schema("AVRO", first, normalize=True).canonical
            == parse_schema("AVRO", second, normalize=True).canonical)
    one = '{"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}'
    two = '{"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "type": "object"}'
    assert parse_schema("JSON", one).canonical != parse_schema("JSON", two).canonical
    assert parse_schema("JSON", one, normalize=True).canonical == parse_schema("JSON", two, normalize=True).canonical


# -- compatibility ---------------------------------------------------------------------------------

OLD_AND_NEW = {
    # name: (old schema, new schema, what BACKWARD finds: None when compatible)
    "field added": ("message M { string a = 1; }", "message M { string a = 1; string b = 2; }", None),
    "field added to a nested message": (
        "message W { int32 w = 1; message M { string a = 1; } }",
        "message W { int32 w = 1; message M { string a = 1; string b = 2; } }", None),
    "field removed": ("message M { string a = 1; string b = 2; }", "message M { string a = 1; }", None),
    "field renamed": ("message M { string a = 1; }", "message M { string renamed = 1; }", None),
    "field number changed": ("message M { string a = 1; }", "message M { string a = 2; }", None),
    "int32 to int64": ("message M { int32 a = 1; }", "message M { int64 a = 1; }", None),
    "int32 to bool": ("message M { int32 a = 1; }", "message M { bool a = 1; }", None),
    "sint32 to sint64": ("message M { sint32 a = 1; }", "message M { sint64 a = 1; }", None),
    "fixed32 to sfixed32": ("message M { fixed32 a = 1; }", "message M { sfixed32 a = 1; }", None),
    "string to bytes": ("message M { string a = 1; }", "message M { bytes a = 1; }", None),
    "int32 to string": ("message M { int32 a = 1; }", "message M { string a = 1; }", "FIELD_SCALAR_KIND_CHANGED"),
    "int32 to sint32": ("message M { int32 a = 1; }", "message M { sint32 a = 1; }", "FIELD_SCALAR_KIND_CHANGED"),
    "float to double": ("message M { float a = 1; }", "message M { double a = 1; }", "FIELD_SCALAR_KIND_CHANGED"),
    "int32 to enum": ("message M { int32 a = 1; }", "message M { E a = 1; } enum E { X = 0; }", None),
    "enum to int32": ("message M { E a = 1; } enum E { X = 0; }", "message M { int32 a = 1; }", None),
    "enum to string": ("message M { E a = 1; } enum E { X = 0; }", "message M { string a = 1; }",
                       "FIELD_KIND_CHANGED"),
    "int32 to message": ("message M { int32 a = 1; }", "message M { N a = 1; } message N { string s = 1; }",
                         "FIELD_KIND_CHANGED"),
    "message to int32": ("message M { N a = 1; } message N { string s = 1; }", "message M { int32 a = 1; }",
                         "FIELD_KIND_CHANGED"),
    "message type changed": ("message M { N a = 1; } message N { string s = 1; }",
                             "message M { O a = 1; } message O { string s = 1; }", "FIELD_NAMED_TYPE_CHANGED"),
    "enum type changed": ("message M { E a = 1; } enum E { X = 0; }", "message M { F a = 1; } enum F { X = 0; }",
                          "FIELD_NAMED_TYPE_CHANGED"),
    "name qualified differently": ("message M { N a = 1; message N { string s = 1; } }",
                                   "message M { .M.N a = 1; message N { string s = 1; } }", None),
    "map value type changed": ("message M { map<string, int32> m = 1; }", "message M { map<string, string> m = 1; }",
                               "FIELD_SCALAR_KIND_CHANGED"),
    "map value type within a group": ("message M { map<string, int32> m = 1; }",
                                      "message M { map<string, int64> m = 1; }", None),
    "map to scalar": ("message M { map<string, int32> m = 1; }", "message M { string m = 1; }",
                      "FIELD_KIND_CHANGED"),
    "optional message to repeated": ("message M { optional N a = 1; } message N { string s = 1; }",
                                     "message M { repeated N a = 1; } message N { string s = 1; }", None),
    "optional string to repeated": ("message M { optional string a = 1; }", "message M { repeated string a = 1; }",
                                    None),
    "optional bytes to repeated": ("message M { optional bytes a = 1; }", "message M { repeated bytes a = 1; }",
                                   None),
    "optional int32 to repeated": ("message M { optional int32 a = 1; }", "message M { repeated int32 a = 1; }",
                                   "FIELD_NUMERIC_LABEL_CHANGED"),
    "repeated enum to singular": ("message M { repeated E a = 1; } enum E { X = 0; }",
                                  "message M { E a = 1; } enum E { X = 0; }", "FIELD_NUMERIC_LABEL_CHANGED"),
    "message added": ("message M { string a = 1; }", "message M { string a = 1; } message N { string b = 1; }",
                      None),
    "messages reordered": ("message M { string a = 1; } message N { string b = 1; }",
                           "message N { string b = 1; } message M { string a = 1; }", None),
    "message removed": ("message M { string a = 1; } message N { string b = 1; }", "message M { string a = 1; }",
                        "MESSAGE_REMOVED"),
    "nested message removed": ("message M { message N { string b = 1; } }", "message M { }", "MESSAGE_REMOVED"),
    "enum added": ("message M { string a = 1; }", "message M { string a = 1; } enum E { X = 0; }", None),
    "enum removed": ("message M { string a = 1; } enum E { X = 0; }", "message M { string a = 1; }", None),
    "enum constant added": ("enum E { X = 0; } message M { E e = 1; }",
                            "enum E { X = 0; Y = 1; } message M { E e = 1; }", None),
    "enum constant removed": ("enum E { X = 0; Y = 1; } message M { E e = 1; }",
                              "enum E { X = 0; } message M { E e = 1; }", None),
    "enum constant renamed": ("enum E { X = 0; Y = 1; } message M { E e = 1; }",
                              "enum E { X = 0; Z = 1; } message M { E e = 1; }", None),
    "oneof added": ("message M { string a = 1; }", "message M { string a = 1; oneof o { int32 b = 2; } }", None),
    "field added to a oneof": ("message M { oneof o { string a = 1; } }",
                               "message M { oneof o { string a = 1; int32 b = 2; } }", None),
    "field removed from a oneof": ("message M { oneof o { string a = 1; int32 b = 2; } }",
                                   "message M { oneof o { string a = 1; } }", "ONEOF_FIELD_REMOVED"),
    "field taken out of a oneof": ("message M { oneof o { string a = 1; int32 b = 2; } }",
                                   "message M { oneof o { string a = 1; } int32 b = 2; }", "ONEOF_FIELD_REMOVED"),
    "oneof removed whole": ("message M { string s = 3; oneof o { string a = 1; int32 b = 2; } }",
                            "message M { string s = 3; }", None),
    "one field moved into a new oneof": ("message M { string a = 1; string b = 2; }",
                                         "message M { string a = 1; oneof o { string b = 2; int32 c = 3; } }", None),
    "several fields moved into a new oneof": ("message M { string a = 1; string b = 2; }",
                                              "message M { oneof o { string a = 1; string b = 2; int32 c = 3; } }",
                                              "MULTIPLE_FIELDS_MOVED_TO_ONEOF"),
    "field moved into an existing oneof": ("message M { string a = 1; oneof o { string b = 2; string c = 3; } }",
                                           "message M { oneof o { string a = 1; string b = 2; string c = 3; } }",
                                           "FIELD_MOVED_TO_EXISTING_ONEOF"),
    "oneof fields moved into a renamed oneof": (
        "message M { string a = 1; oneof o { string b = 2; string c = 3; } }",
        "message M { oneof p { string a = 1; string b = 2; string c = 3; } }", "MULTIPLE_FIELDS_MOVED_TO_ONEOF"),
    "package changed": ("package foo; message M { N a = 1; message N { string s = 1; } }",
                        "package bar; message M { N a = 1; message N { string s = 1; } }", "PACKAGE_CHANGED"),
}


@pytest.mark.parametrize("case", list(OLD_AND_NEW))
def test_backward_compatibility_rule(case):
    old_text, new_text, difference = OLD_AND_NEW[case]
    old, new = parse(PROTO3 + old_text), parse(PROTO3 + new_text)
    errors = new.compatibility_errors(old, "BACKWARD")
    if difference is None:
        assert errors == []
    else:
        assert errors and all(error.startswith("BACKWARD: ") for error in errors)
        assert any(difference in error for error in errors), errors
    assert new.compatibility_errors(old, "NONE") == []


@pytest.mark.parametrize("old_text, new_text, difference", [
    ("message M { optional string a = 1; }", "message M { optional string a = 1; required string b = 2; }",
     "REQUIRED_FIELD_ADDED"),
    ("message M { optional string a = 1; required string b = 2; }", "message M { optional string a = 1; }",
     "REQUIRED_FIELD_REMOVED"),
    ("message M { optional string a = 1; }", "message M { required string a = 1; }", "FIELD_LABEL_CHANGED"),
    ("message M { optional string a = 1; }", "message M { optional string a = 1; optional int32 b = 2; }", None),
])
def test_proto2_required_fields(old_text, new_text, difference):
    errors = parse(PROTO2 + new_text).compatibility_errors(parse(PROTO2 + old_text), "BACKWARD")
    assert (errors == []) if difference is None else any(difference in error for error in errors)


def test_a_syntax_change_alone_is_compatible():
    old = parse(PROTO2 + "message M { optional string a = 1; }")
    new = parse(PROTO3 + "message M { optional string a = 1; }")
    assert new.compatibility_errors(old, "FULL") == []


def test_forward_and_full_check_the_other_direction():
    old = parse(PROTO3 + "message M { string a = 1; } message N { string b = 1; }")
    new = parse(PROTO3 + "message M { string a = 1; } message N { string b = 1; } message O { int32 c = 1; }")
    assert new.compatibility_errors(old, "BACKWARD") == []
    # Read by the old schema, what the new one writes names a message the old one lacks: the reverse
    # of a removal.
    forward = new.compatibility_errors(old, "FORWARD")
    assert forward and all(error.startswith("FORWARD: MESSAGE_REMOVED") for error in forward)
    assert new.compatibility_errors(old, "FULL") == forward
    assert old.compatibility_errors(new, "BACKWARD")[0].startswith("BACKWARD: MESSAGE_REMOVED")


def test_a_schema_type_change_is_incompatible():
    avro = parse_schema("AVRO", '"string"')
    proto = parse(PROTO3 + "message M { string a = 1; }")
    assert proto.compatibility_errors(avro, "BACKWARD") == ["Incompatible schema type: PROTOBUF after AVRO"]


def test_printing_keeps_a_custom_json_name_and_drops_the_default_one():
    fd = compile_proto(PROTO3 + 'message M { string first_name = 1; string b = 2 [json_name = "bee"]; }', {})
    text = print_proto(fd)
    assert "string first_name = 1;" in text and 'string b = 2 [json_name = "bee"];' in text


# -- the config's normalize in _schemas ------------------------------------------------------------


def test_a_config_record_carries_normalize_and_replaces_the_one_before():
    from registry.store import RegistryState, config_key, config_value

    state = RegistryState()
    state.apply(config_key(None), config_value("FULL", True))
    state.apply(config_key("s"), config_value(None, False))
    assert (state.compatibility("s"), state.normalize("s"), state.normalize("other")) == ("FULL", False, True)
    assert config_value("FULL", True) == b'{"compatibilityLevel":"FULL","normalize":true}'
    state.apply(config_key(None), config_value("NONE"))  # a later record without normalize drops it
    assert (state.compatibility(None), state.normalize(None), state.normalize("s")) == ("NONE", None, False)
    state.apply(config_key("s"), None)
    assert state.normalize("s") is None and "s" not in state.configs
