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


# -- Delegation tokens (38-41) -----------------------------------------------------------------------
# The expected bytes are what Kafka 4.3.0's own generated codec (the *Data classes of
# kafka-clients) writes for the same values.

RENEWERS = [{"principal_type": "User", "principal_name": "c"}]
CREATED = {"error_code": 0, "principal_type": "User", "principal_name": "a", "token_requester_principal_type": "User",
           "token_requester_principal_name": "r", "issue_timestamp_ms": 1, "expiry_timestamp_ms": 2,
           "max_timestamp_ms": 3, "token_id": "t", "hmac": b"\x01\x02", "throttle_time_ms": 0}
DESCRIBED = {"error_code": 0, "throttle_time_ms": 0, "tokens": [{
    "principal_type": "User", "principal_name": "a", "token_requester_principal_type": "User",
    "token_requester_principal_name": "r", "issue_timestamp": 1, "expiry_timestamp": 2, "max_timestamp": 3,
    "token_id": "t", "hmac": b"\x01\x02", "renewers": [{"principal_type": "User", "principal_name": "b"}]}]}
V1_2_ONLY = {"token_requester_principal_type", "token_requester_principal_name", "owner_principal_type",
             "owner_principal_name"}


def _without_v3_fields(body):
    if isinstance(body, dict):
        return {k: _without_v3_fields(v) for k, v in body.items() if k not in V1_2_ONLY}
    if isinstance(body, list):
        return [_without_v3_fields(v) for v in body]
    return body


@pytest.mark.parametrize("api,side,version,body,kafka_hex", [
    ("CreateDelegationToken", "request", 1, {"renewers": RENEWERS, "max_lifetime_ms": -1},
     "00000001000455736572000163ffffffffffffffff"),
    ("CreateDelegationToken", "request", 2, {"renewers": RENEWERS, "max_lifetime_ms": -1},
     "020555736572026300ffffffffffffffff00"),
    ("CreateDelegationToken", "request", 3, {"owner_principal_type": "User", "owner_principal_name": "bob",
                                             "renewers": RENEWERS, "max_lifetime_ms": -1},
     "055573657204626f62020555736572026300ffffffffffffffff00"),
    ("CreateDelegationToken", "response", 1, _without_v3_fields(CREATED),
     "000000045573657200016100000000000000010000000000000002000000000000000300017400000002010200000000"),
    ("CreateDelegationToken", "response", 2, _without_v3_fields(CREATED),
     "00000555736572026100000000000000010000000000000002000000000000000302740301020000000000"),
    ("CreateDelegationToken", "response", 3, CREATED,
     "0000055573657202610555736572027200000000000000010000000000000002000000000000000302740301020000000000"),
    ("RenewDelegationToken", "request", 1, {"hmac": b"\x01\x02", "renew_period_ms": 1000},
     "00000002010200000000000003e8"),
    ("RenewDelegationToken", "request", 2, {"hmac": b"\x01\x02", "renew_period_ms": 1000}, "03010200000000000003e800"),
    ("RenewDelegationToken", "response", 1, {"error_code": 62, "expiry_timestamp_ms": -1, "throttle_time_ms": 0},
     "003effffffffffffffff00000000"),
    ("RenewDelegationToken", "response", 2, {"error_code": 62, "expiry_timestamp_ms": -1, "throttle_time_ms": 0},
     "003effffffffffffffff0000000000"),
    ("ExpireDelegationToken", "request", 1, {"hmac": b"\x01\x02", "expiry_time_period_ms": -1},
     "000000020102ffffffffffffffff"),
    ("ExpireDelegationToken", "request", 2, {"hmac": b"\x01\x02", "expiry_time_period_ms": -1},
     "030102ffffffffffffffff00"),
    ("DescribeDelegationToken", "request", 1, {"owners": [{"principal_type": "User", "principal_name": "a"}]},
     "00000001000455736572000161"),
    ("DescribeDelegationToken", "request", 1, {"owners": None}, "ffffffff"),
    ("DescribeDelegationToken", "request", 3, {"owners": [{"principal_type": "User", "principal_name": "a"}]},
     "02055573657202610000"),
    ("DescribeDelegationToken", "request", 3, {"owners": None}, "0000"),
    ("DescribeDelegationToken", "response", 1, _without_v3_fields(DESCRIBED),
     "0000000000010004557365720001610000000000000001000000000000000200000000000000030001740000000201020000000100"
     "045573657200016200000000"),
    ("DescribeDelegationToken", "response", 2, _without_v3_fields(DESCRIBED),
     "000002055573657202610000000000000001000000000000000200000000000000030274030102020555736572026200000000000000"),
    ("DescribeDelegationToken", "response", 3, DESCRIBED,
     "0000020555736572026105557365720272000000000000000100000000000000020000000000000003027403010202055573657202"
     "6200000000000000"),
])
def test_delegation_token_messages_are_kafkas_bytes(api, side, version, body, kafka_hex):
    check(api, side, version, body, bytes.fromhex(kafka_hex))
