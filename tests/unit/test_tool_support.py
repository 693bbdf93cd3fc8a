"""Pieces of the client tools that need no broker: Kafka's default partitioner (murmur2), the
consumer protocol's embedded subscription and assignment, the range assignor, option parsing,
Kafka's Uuid spelling and the console consumer's output format."""

from __future__ import annotations

import uuid

import pytest

from cli.commands.consume import MessageFormat, range_assign
from cli.commands.topics import _include_list
from cli.tool_support import ToolError, kafka_uuid, parse_key_values
from client import murmur2, partition_for_key, split_address
from kafka_wire.consumer_protocol import assigned_partitions, serialize_assignment, serialize_subscription, subscribed_topics
from kafka_wire.record_codec import Record


@pytest.mark.parametrize("key, expected", [
    # Apache Kafka's UtilsTest.testMurmur2 vectors.
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
])
def test_murmur2_matches_kafka(key, expected):
    assert murmur2(key) == expected


def test_keyed_partition_is_kafkas_positive_murmur2_modulo():
    assert partition_for_key(b"foobar", 50) == (-790332482 & 0x7FFFFFFF) % 50
    assert {partition_for_key(f"k{i}".encode(), 3) for i in range(100)} == {0, 1, 2}


def test_subscription_and_assignment_decode_with_the_coordinators_reader():
    assert subscribed_topics(serialize_subscription(["orders", "payments"])) == ["orders", "payments"]
    encoded = serialize_assignment({"orders": [0, 2], "payments": [1]}.items())
    assert assigned_partitions(encoded) == [("orders", [0, 2]), ("payments", [1])]
    # v0 byte for byte, as a Java consumer writes them: version, topics, null user data.
    assert serialize_subscription(["ab"]) == b"\x00\x00" b"\x00\x00\x00\x01" b"\x00\x02ab" b"\xff\xff\xff\xff"
    assert serialize_assignment([("ab", [3])]) == (b"\x00\x00" b"\x00\x00\x00\x01" b"\x00\x02ab"
                                                   b"\x00\x00\x00\x01\x00\x00\x00\x03" b"\xff\xff\xff\xff")


def test_range_assignor_gives_consecutive_ranges_extra_partitions_first():
    plan = range_assign({"b": ["t"], "a": ["t", "u"], "c": ["t"]}, {"t": 7, "u": 2})
    assert plan["a"] == {"t": [0, 1, 2], "u": [0, 1]}
    assert plan["b"] == {"t": [3, 4]}
    assert plan["c"] == {"t": [5, 6]}
    assert range_assign({"a": ["t"], "b": ["t"]}, {"t": 1}) == {"a": {"t": [0]}, "b": {}}


def test_key_values_split_on_commas_only_before_a_new_key():
    assert parse_key_values(["cleanup.policy=compact,delete", "retention.ms=1,segment.bytes=2"], "config") == {
        "cleanup.policy": "compact,delete", "retention.ms": "1", "segment.bytes": "2"}
    with pytest.raises(ToolError):
        parse_key_values(["novalue"], "config")


def test_topic_ids_print_as_kafka_prints_them():
    # Kafka's Uuid.toString: URL-safe base64 without padding (22 characters).
    value = uuid.UUID(bytes=bytes(range(16)))
    assert kafka_uuid(value) == "AAECAwQFBgcICQoLDA0ODw"
    assert kafka_uuid(uuid.UUID(bytes=b"\xff" * 16)) == "_____________________w"


def test_include_list_is_a_full_match_with_commas_as_alternatives():
    regex = _include_list("orders,pay.*")
    assert regex.fullmatch("orders") and regex.fullmatch("payments")
    assert not regex.fullmatch("orders-2")
    assert _include_list(None) is None


def test_addresses():
    assert split_address("broker1:9092") == ("broker1", 9092)
    assert split_address("[::1]:9092") == ("::1", 9092)
    with pytest.raises(ValueError):
        split_address("no-port")


def test_default_message_formatter_layout():
    fmt = MessageFormat(print_timestamp=True, print_partition=True, print_offset=True, print_headers=True,
                        print_key=True)
    record = Record(0, 0, b"k", b"v", headers=[("h1", b"x"), ("h2", None)])
    assert fmt.format(2, 17, 1700000000000, False, record) == (
        b"CreateTime:1700000000000\tPartition:2\tOffset:17\th1:x,h2:null\tk\tv\n")
    plain = MessageFormat(print_key=True)
    assert plain.format(0, 0, 1, True, Record(0, 0, None, None)) == b"null\tnull\n"
    assert MessageFormat(print_timestamp=True).format(0, 0, 5, True, Record(0, 0, None, b"v")) == b"LogAppendTime:5\tv\n"
