"""Byte-exact vectors, written by hand from Kafka 4.3.0's message specs
(clients/src/main/resources/common/message/*.json), for the admin APIs added after the core ones:
AlterReplicaLogDirs (34) and ListConfigResources (74). Every version of every registered API also
round-trips in test_messages.py; these pin the bytes."""

from __future__ import annotations

import pytest

from kafka_wire.messages import APIS_BY_NAME


def check(api_name: str, side: str, version: int, body: dict, expected: bytes) -> None:
    message = getattr(APIS_BY_NAME[api_name], side)
    assert message.encode_bytes(body, version) == expected
    decoded = message.decode(expected, version)
    assert message.encode_bytes(decoded, version) == expected


# -- AlterReplicaLogDirs (34) ------------------------------------------------------------------------

ALTER_LOG_DIRS_REQUEST = {"dirs": [{"path": "/d", "topics": [{"name": "t", "partitions": [0, 2]}]}]}
ALTER_LOG_DIRS_RESPONSE = {"throttle_time_ms": 7, "results": [
    {"topic_name": "t", "partitions": [{"partition_index": 2, "error_code": 57}]}]}


@pytest.mark.parametrize("version,expected", [
    (1, b"\x00\x00\x00\x01"            # dirs: 1
        b"\x00\x02/d"                  #   path
        b"\x00\x00\x00\x01"            #   topics: 1
        b"\x00\x01t"                   #     name
        b"\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x02"),  # partitions [0, 2]
    (2, b"\x02"                        # dirs: 1 (compact)
        b"\x03/d"                      #   path (compact)
        b"\x02"                        #   topics: 1
        b"\x02t"                       #     name
        b"\x03\x00\x00\x00\x00\x00\x00\x00\x02"  # partitions [0, 2]
        b"\x00\x00\x00"),              # tagged fields: topic, dir, request
])
def test_alter_replica_log_dirs_request(version, expected):
    check("AlterReplicaLogDirs", "request", version, ALTER_LOG_DIRS_REQUEST, expected)


@pytest.mark.parametrize("version,expected", [
    (1, b"\x00\x00\x00\x07"            # throttle_time_ms
        b"\x00\x00\x00\x01"            # results: 1
        b"\x00\x01t"                   #   topic_name
        b"\x00\x00\x00\x01"            #   partitions: 1
        b"\x00\x00\x00\x02\x00\x39"),  #     partition_index 2, error_code 57 (LOG_DIR_NOT_FOUND)
    (2, b"\x00\x00\x00\x07\x02\x02t\x02\x00\x00\x00\x02\x00\x39"
        b"\x00\x00\x00"),              # tagged fields: partition, topic, response
])
def test_alter_replica_log_dirs_response(version, expected):
    check("AlterReplicaLogDirs", "response", version, ALTER_LOG_DIRS_RESPONSE, expected)


# -- ListConfigResources (74) ------------------------------------------------------------------------

LIST_CONFIG_RESOURCES_RESPONSE = {"throttle_time_ms": 5, "error_code": 0, "config_resources": [
    {"resource_name": "t", "resource_type": 2}, {"resource_name": "cm", "resource_type": 16}]}


def test_list_config_resources_request():
    check("ListConfigResources", "request", 0, {}, b"\x00")  # v0: only the tagged fields
    check("ListConfigResources", "request", 1, {"resource_types": [2, 4]},
          b"\x03\x02\x04"   # resource_types [2, 4] (compact array of int8)
          b"\x00")


@pytest.mark.parametrize("version,expected", [
    # v0 has no resource type: it is ignorable, so a v0 answer leaves it out (Kafka's codec too).
    (0, b"\x00\x00\x00\x05\x00\x00"    # throttle_time_ms, error_code
        b"\x03"                        # config_resources: 2
        b"\x02t\x00"                   #   resource_name, tagged fields
        b"\x03cm\x00"
        b"\x00"),
    (1, b"\x00\x00\x00\x05\x00\x00\x03"
        b"\x02t\x02\x00"               #   resource_name, resource_type 2 (TOPIC)
        b"\x03cm\x10\x00"              #   resource_type 16 (CLIENT_METRICS)
        b"\x00"),
])
def test_list_config_resources_response(version, expected):
    message = APIS_BY_NAME["ListConfigResources"].response
    assert message.encode_bytes(LIST_CONFIG_RESOURCES_RESPONSE, version) == expected
    decoded = message.decode(expected, version)
    assert [(r.resource_name, r.resource_type) for r in decoded.config_resources] == (
        [("t", 2), ("cm", 16)] if version else [("t", 16), ("cm", 16)])  # v0 decodes to the default
