"""registry/decode.py: the Schema Registry's wire format read without a broker (split, Confluent's
Protobuf message indexes, Avro, JSON and Protobuf records against parsed schemas, and bytes that
do not read as their schema). Records are written with fastavro and protobuf's own runtime."""

from __future__ import annotations

import io
import json
from decimal import Decimal

import fastavro
import pytest
from google.protobuf import descriptor_pool, message_factory

from kafka_wire.primitives import write_varlong
from registry.decode import DecodeError, decode, message_indexes, prepare, split
from registry.schemas import parse_schema

PROTO = """syntax = "proto3";
package shop;
message First { string a = 1; }
message Outer {
  message Inner { int32 n = 1; bool flag = 2; }
  Inner inner = 1;
}
"""


def test_split_finds_the_schema_id():
    assert split(None) is None and split(b"\x00\x00\x00\x01") is None and split(b"\x01\x00\x00\x00\x01x") is None
    assert split(b"\x00\x00\x00\x01\x02rest") == (258, b"rest")


@pytest.mark.parametrize("data, indexes, position", [
    (b"\x00", [0], 1),  # Confluent's shortcut for the first message
    (b"\x02\x02", [1], 2),  # one index (zigzag: 2 is 1)
    (b"\x04\x02\x00", [1, 0], 3),  # two indexes
    (b"\x04\x02\x04", [1, 2], 3),
])
def test_message_indexes(data, indexes, position):
    assert message_indexes(data + b"rest") == (indexes, position)


@pytest.mark.parametrize("data", [b"", b"\x04\x02", b"\x01", b"\xff"])
def test_message_indexes_that_are_not_the_wire_format(data):
    with pytest.raises(DecodeError):
        message_indexes(data)


def test_avro_records_and_bytes_that_are_not_one():
    schema = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"}, {"name": "blob", "type": "bytes"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}}]}
    parsed = parse_schema("AVRO", json.dumps(schema))
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema),
                               {"id": 3, "blob": b"\x00\xff", "price": Decimal("12.50")})
    assert decode(parsed, out.getvalue()) == ({"id": 3, "blob": "\x00\xff", "price": "12.50"}, "shop.Order")
    with pytest.raises(DecodeError, match="left over"):
        decode(parsed, out.getvalue() + b"\x00")
    with pytest.raises(DecodeError):
        decode(parsed, out.getvalue()[:2])


def test_json_records():
    parsed = parse_schema("JSON", json.dumps({"type": "object", "title": "Event"}))
    assert decode(parsed, b'{"kind": "click"}') == ({"kind": "click"}, "Event")
    with pytest.raises(DecodeError):
        decode(parsed, b"\xff not json")


def test_protobuf_records_by_their_message_indexes():
    parsed = parse_schema("PROTOBUF", PROTO)
    prepare(parsed)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(parsed.parsed)
    Inner = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Outer.Inner"))
    First = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.First"))
    assert decode(parsed, b"\x04\x02\x00" + Inner(n=-4).SerializeToString()) == (
        {"n": -4, "flag": False}, "shop.Outer.Inner")
    assert decode(parsed, b"\x00" + First(a="x").SerializeToString()) == ({"a": "x"}, "shop.First")
    with pytest.raises(DecodeError, match="names no message"):
        decode(parsed, b"\x02\x06" + First(a="x").SerializeToString())
    with pytest.raises(DecodeError):
        decode(parsed, b"\x00\x0a\x05ab")  # a string field cut short


def _zigzag(n: int) -> bytes:
    """Avro's long encoding (Kafka's varlong: zigzag, then a varint)."""
    out = bytearray()
    write_varlong(out, n)
    return bytes(out)


def test_hostile_avro_records_stop_at_a_limit_with_a_note():
    from registry.decode import MAX_DEPTH, MAX_PAGE_VALUES, MAX_RECORD_BYTES, MAX_VALUES, DecodeLimit, ValueBudget

    linked = parse_schema("AVRO", json.dumps({"type": "record", "name": "Link",
                                              "fields": [{"name": "next", "type": ["null", "Link"]}]}))
    assert decode(linked, b"\x02\x00")[0] == {"next": {"next": None}}
    with pytest.raises(DecodeLimit, match=f"nests deeper than {MAX_DEPTH}"):
        decode(linked, b"\x02" * 10_000 + b"\x00")
    nulls = parse_schema("AVRO", json.dumps({"type": "array", "items": "null"}))
    assert decode(nulls, _zigzag(1000) + b"\x00")[0] == [None] * 1000
    with pytest.raises(DecodeLimit, match=f"more than {MAX_VALUES} values"):
        decode(nulls, _zigzag(MAX_VALUES + 1) + b"\x00")
    # A page's records share one budget
    budget = ValueBudget(MAX_PAGE_VALUES)
    for _ in range(MAX_PAGE_VALUES // MAX_VALUES):
        decode(nulls, _zigzag(MAX_VALUES - 1) + b"\x00", budget)
    with pytest.raises(DecodeLimit, match="on this page"):
        decode(nulls, _zigzag(MAX_PAGE_VALUES // MAX_VALUES + 1) + b"\x00", budget)
    with pytest.raises(DecodeError, match="not decoded here"):
        decode(parse_schema("AVRO", '"bytes"'), _zigzag(MAX_RECORD_BYTES) + bytes(MAX_RECORD_BYTES))
