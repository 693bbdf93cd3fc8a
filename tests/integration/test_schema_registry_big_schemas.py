"""The Schema Registry under schemas built to be expensive: a record of tens of thousands of fields
registers and evolves (the parse and the compatibility check grow with the schema's size, not its
square) while reads are answered; schemas nested deeper than the parsers go, and a Protobuf schema
that makes protoc abort, are refused with Confluent's 42201 and the broker keeps serving."""

from __future__ import annotations

import json
import threading

import pytest

from test_schema_registry import produce_and_consume, registry_broker

FIELDS = 25_000  # about 0.8 MB of schema (a `_schemas` record holds 1 MB): minutes in Avro's own quadratic steps


def wide_record(fields: int, *extra: dict) -> str:
    return json.dumps({"type": "record", "name": "Wide", "fields": [
        *({"name": f"f{i}", "type": "int"} for i in range(fields)), *extra]})


def nested_records(depth: int, *extra: dict) -> str:
    """Records each holding the next as its one field, `depth` deep (written as text: json.dumps
    recurses as deep as the schema nests)."""
    leaf = json.dumps({"type": "record", "name": "Leaf", "fields": [{"name": "x", "type": "int"}, *extra]})
    return ("".join(f'{{"type":"record","name":"Level{level}","fields":[{{"name":"child","type":'
                    for level in range(depth)) + leaf + "}]}" * depth)


@pytest.fixture(scope="module")
def registry():
    with registry_broker() as registry:
        yield registry


def test_a_huge_record_registers_and_evolves_while_reads_are_answered(registry):
    assert registry.register("wide-value", wide_record(FIELDS)) >= 1
    registry.register("small-value", wide_record(3))
    answer: dict = {}

    def register_evolution() -> None:
        answer["result"] = registry.call("POST", "/subjects/wide-value/versions",
                                         {"schema": wide_record(FIELDS, {"name": "added", "type": "string",
                                                                         "default": ""})})

    writer = threading.Thread(target=register_evolution)
    writer.start()
    reads_while_writing = 0
    while writer.is_alive():
        assert registry.ok("GET", "/subjects/small-value/versions/1")["version"] == 1
        if writer.is_alive():
            reads_while_writing += 1
    writer.join()
    status, body = answer["result"]
    assert status == 200, body
    assert reads_while_writing > 0
    assert registry.ok("GET", "/subjects/wide-value/versions") == [1, 2]
    # The check finds what is incompatible in a record that size too.
    status, body = registry.call("POST", "/subjects/wide-value/versions",
                                 {"schema": wide_record(FIELDS, {"name": "added", "type": "string", "default": ""},
                                                        {"name": "required", "type": "long"})})
    assert (status, body["error_code"]) == (409, 409), body
    assert "required" in body["message"]


def test_records_nested_deeper_than_the_parser_goes_are_42201(registry):
    assert registry.error("POST", "/subjects/deep-value/versions", {"schema": nested_records(5000)}) == (422, 42201)
    # Nested as deep as the parser goes, a schema registers and its evolution is checked.
    registry.register("nested-value", nested_records(100))
    registry.register("nested-value", nested_records(100, {"name": "y", "type": "int", "default": 0}))
    status, body = registry.call("POST", "/subjects/nested-value/versions",
                                 {"schema": nested_records(100, {"name": "z", "type": "int"})})
    assert (status, body["error_code"]) == (409, 409), body


def test_deeply_nested_json_schema_is_answered(registry):
    deep = '{"type":"object","properties":{"a":' * 5000 + '{"type":"integer"}' + "}}" * 5000
    assert registry.error("POST", "/subjects/deep-json-value/versions",
                          {"schema": deep, "schemaType": "JSON"}) == (422, 42201)


def test_a_protobuf_schema_that_makes_protoc_abort_is_42201_and_the_broker_keeps_serving(registry):
    depth = 1000
    hostile = ('syntax = "proto3"; import "google/protobuf/descriptor.proto";\n'
               "message Opt { Opt o = 1; int32 v = 2; }\n"
               "extend google.protobuf.MessageOptions { Opt opt = 50000; }\n"
               "message Target { option (opt) = " + "{o: " * depth + "{v: 1}" + "}" * depth + "; int32 x = 1; }\n")
    status, body = registry.call("POST", "/subjects/abort-value/versions", {"schema": hostile, "schemaType": "PROTOBUF"})
    assert (status, body["error_code"]) == (422, 42201), body
    assert registry.process.is_running()
    # The next Protobuf schema compiles (in a new protoc process) and Kafka clients are served.
    schema_id = registry.register("after-abort-value", 'syntax = "proto3"; message Fine { int32 x = 1; }', "PROTOBUF")
    assert registry.ok("GET", f"/schemas/ids/{schema_id}")["schemaType"] == "PROTOBUF"
    assert produce_and_consume(registry.process.bootstrap, "after-protoc-abort", [b"still", b"serving"]) == [
        b"still", b"serving"]
