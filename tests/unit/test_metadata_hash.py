"""The KIP-848 group metadata hash (coordinator/metadata_hash.py) against Kafka 4.3.0's own values."""

from __future__ import annotations

import base64
import uuid

import pytest

from coordinator.metadata_hash import group_hash, topic_hash, xxh3_64
from kafka_wire import internal_records as ir

# hash4j 0.22.0's Hashing.xxh3_64().hashBytesToLong(b) (the jar Kafka 4.3.0 ships), for b[i] = i * 31 + 7:
# every input class of XXH3 (0, 1-3, 4-8, 9-16, 17-128, 129-240, long: one stripe, blocks of 1024).
HASH4J = {0: 3244421341483603138, 1: 5502495245947142431, 3: 1582743943441612892, 5: -5579736752565435579,
          8: -2394039629164210130, 12: 5092156298037866404, 16: 9099606716676871632, 17: 2345212530088924167,
          33: 1844846513307983686, 65: -381843323958800864, 100: -8316154546292524762, 128: -492175581222641016,
          129: -506823097681485574, 200: 1368452603177808973, 240: -3690920546649497853, 241: 809349449570470400,
          500: -2169663460569493437, 1024: 2575082683865311686, 1025: -4566685497618039422,
          2100: -6718926036433904599, 5000: 6169931020318013678}


@pytest.mark.parametrize("length", sorted(HASH4J))
def test_xxh3_64_is_hash4js(length):
    data = bytes((i * 31 + 7) & 0xFF for i in range(length))
    value = xxh3_64(data)
    assert (value - (1 << 64) if value >= 1 << 63 else value) == HASH4J[length]


def _topic_id(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def test_group_hash_is_kafka_4_3s():
    # ConsumerGroupMetadataValue.metadataHash as Kafka 4.3.0 wrote it for a group subscribed to one topic
    # (its id, name and partition count as that broker had them; no broker.rack), read from its log.
    for topic_id, name, partitions, expected in (
            ("URe1-TtgRL2bhc8UEgBhPQ",
             "client-replay-confluent-kafka-consumer-protocol-consumergroupheartbeat-v1-0-v1-t-9", 2,
             1164038956923852236),
            ("QIO57nqESGSC_GFyNQw-9g", "client-replay-franz-go-consumergroupheartbeat-v1-0-v1-t-17", 31,
             2499871218706751344)):
        hashed = topic_hash(_topic_id(topic_id), name, [[] for _ in range(partitions)])
        assert group_hash({name: hashed}) == expected
    assert group_hash({}) == 0


def test_racks_and_topic_order_change_the_hash():
    t = uuid.UUID(int=7)
    plain = topic_hash(t, "a", [[], []])
    assert topic_hash(t, "a", [["r1"], []]) != plain
    assert topic_hash(t, "a", [["r2", "r1"], []]) == topic_hash(t, "a", [["r1", "r2"], []])  # racks sorted
    assert group_hash({"a": 1, "b": 2}) == group_hash({"b": 2, "a": 1})  # by topic name


def test_consumer_group_records_are_kafka_4_3s_bytes():
    # Values Kafka 4.3.0 wrote for a KIP-848 group (read from its __consumer_offsets segment).
    epoch = bytes.fromhex("00000000000201000810277f43942995cc")
    assert ir.encode_consumer_group_value(ir.CONSUMER_GROUP_METADATA,
                                          {"epoch": 2, "metadata_hash": 1164038956923852236}) == epoch
    target = bytes.fromhex("000000000002010008000001a2231c6075")
    assert ir.encode_consumer_group_value(ir.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
                                          {"assignment_epoch": 2, "assignment_timestamp": 0x1a2231c6075}) == target
    name = "client-replay-confluent-kafka-consumer-protocol-consumergroupheartbeat-v1-0-v1-t-9"
    member = bytes.fromhex("000000000c636f6e666f726d616e63650b2f3132372e302e302e3102") + bytes([len(name) + 1]) \
        + name.encode() + bytes.fromhex("01000493e00001000100")
    fields = {"instance_id": None, "rack_id": None, "client_id": "conformance", "client_host": "/127.0.0.1",
              "subscribed_topic_names": [name], "subscribed_topic_regex": "", "rebalance_timeout_ms": 300000,
              "server_assignor": None, "classic_member_metadata": None}
    assert ir.encode_consumer_group_value(ir.CONSUMER_GROUP_MEMBER_METADATA, fields) == member
    key = ir.encode_consumer_group_key(ir.CONSUMER_GROUP_MEMBER_METADATA, "g", "m")
    decoded = ir.decode_consumer_group_record(key, member)[3]
    assert decoded.classic_member_metadata is None and decoded.subscribed_topic_regex == ""
