"""The API definitions in kafka_wire.messages: round trips for every registered API and version,
byte-exact vectors written by hand from Kafka's message specs, and kafka-python as a second encoder.
"""

from __future__ import annotations

import importlib
import itertools
import uuid

import pytest

from kafka_wire import schema
from kafka_wire.messages import APIS, APIS_BY_NAME
from kafka_wire.primitives import DecodeError
from kafka_wire.schema import Array, StructType

# ----------------------------------------------------------------------------------------------
# A value generator that walks the field types
# ----------------------------------------------------------------------------------------------

# Each call gets a fresh number, so two fields never hold the same value: a swapped pair of fields
# changes the bytes, which the kafka-python comparison below then sees.
_SCALARS = {
    schema.INT8: lambda n: n % 100 + 2,
    schema.INT16: lambda n: 1000 + n,
    schema.UINT16: lambda n: 40000 + n,
    schema.INT32: lambda n: 100_000 + n,
    schema.UINT32: lambda n: 3_000_000_000 + n,
    schema.INT64: lambda n: (1 << 40) + n,
    schema.FLOAT64: lambda n: n + 0.5,
    schema.UUID: lambda n: uuid.UUID(int=(n << 64) | (n * 7919)),
    # Non-ASCII: lengths are in UTF-8 bytes, not characters.
    schema.STRING: lambda n: f"s{n}-\u00e9",
    schema.INT16_STRING: lambda n: f"c{n}",
    schema.BYTES: lambda n: bytes([n % 256, 0, 255]),
    schema.RECORDS: lambda n: b"records-" + bytes([n % 256]) * 5,
}


def _value(field: schema.Field, ftype: schema.FieldType, version: int, flexible: bool, counter, nulls: bool):
    if isinstance(ftype, Array):
        if isinstance(ftype.item, StructType):
            return [_populate(ftype.item, version, flexible, counter, nulls) for _ in range(2)]
        return [_value(field, ftype.item, version, flexible, counter, nulls) for _ in range(2)]
    if isinstance(ftype, StructType):
        return _populate(ftype, version, flexible, counter, nulls)
    if ftype is schema.BOOL:
        return not field.default()
    if ftype not in _SCALARS:
        raise AssertionError(f"no test value generator for type {ftype!r} (field {field.name})")
    value = _SCALARS[ftype](next(counter))
    if value == field.default():
        value = _SCALARS[ftype](next(counter))
    return value


def _populate(struct: StructType, version: int, flexible: bool, counter, nulls: bool = False):
    """An instance with every field the version carries set to a non-default value (tagged ones
    only in flexible versions); with nulls=True, fields nullable at this version are None."""
    obj = struct.cls()
    for field in struct.fields:
        if not field.versions[0] <= version <= field.versions[1]:
            continue
        if field.tag is not None and not flexible:
            continue
        if nulls and field.is_nullable(version):
            setattr(obj, field.name, None)
        else:
            setattr(obj, field.name, _value(field, field.type, version, flexible, counter, nulls))
    return obj


def populated(message: schema.Message, version: int, nulls: bool = False):
    return _populate(message.struct, version, message.is_flexible(version), itertools.count(1), nulls)


def _defaults_with_one_of_each(struct: StructType, version: int):
    """Every field at its default, except that each array of structs holds one such instance."""
    obj = struct.cls()
    for field in struct.fields:
        if not field.versions[0] <= version <= field.versions[1] or field.tag is not None:
            continue
        if isinstance(field.type, Array) and isinstance(field.type.item, StructType):
            setattr(obj, field.name, [_defaults_with_one_of_each(field.type.item, version)])
        elif isinstance(field.type, StructType):
            setattr(obj, field.name, _defaults_with_one_of_each(field.type, version))
    return obj


def _has_nullable(struct: StructType, version: int) -> bool:
    for field in struct.fields:
        if not field.versions[0] <= version <= field.versions[1]:
            continue
        if field.is_nullable(version):
            return True
        inner = field.type.item if isinstance(field.type, Array) else field.type
        if isinstance(inner, StructType) and _has_nullable(inner, version):
            return True
    return False


CASES = [
    pytest.param(api, version, side, id=f"{api.name}-v{version}-{side}")
    for api in APIS.values()
    for version in range(api.min_version, api.max_version + 1)
    for side in ("request", "response")
]


def _assert_round_trip(message: schema.Message, obj, version: int) -> bytes:
    data = message.encode_bytes(obj, version)
    decoded = message.decode(data, version)
    assert decoded == obj
    assert message.encode_bytes(decoded, version) == data
    if data:  # a message with no fields at this version (ApiVersions v0 request) encodes to b""
        with pytest.raises(DecodeError):
            message.decode(data[:-1], version)
    with pytest.raises(DecodeError):
        message.decode(data + b"\x00", version)
    return data


# ----------------------------------------------------------------------------------------------
# 1. Round trips over every registered API and version
# ----------------------------------------------------------------------------------------------


def test_registry_has_the_core_apis():
    for name, key in [("Produce", 0), ("Fetch", 1), ("ListOffsets", 2), ("Metadata", 3),
                      ("DeleteRecords", 21), ("InitProducerId", 22), ("OffsetForLeaderEpoch", 23),
                      ("ApiVersions", 18), ("DescribeCluster", 60)]:
        assert APIS[key] is APIS_BY_NAME[name]


@pytest.mark.parametrize("api, version, side", CASES)
def test_populated_round_trip(api, version, side):
    message = getattr(api, side)
    _assert_round_trip(message, populated(message, version), version)
    if _has_nullable(message.struct, version):
        _assert_round_trip(message, populated(message, version, nulls=True), version)


@pytest.mark.parametrize("api, version, side", CASES)
def test_defaults_encode_and_round_trip(api, version, side):
    # Every default must be encodable at every version (a None default on a field that is not
    # nullable at some version would only fail once a handler leaves it unset).
    message = getattr(api, side)
    _assert_round_trip(message, message(), version)
    obj = _defaults_with_one_of_each(message.struct, version)
    _assert_round_trip(message, obj, version)


@pytest.mark.parametrize("api, version, side", [c for c in CASES if c.values[0].is_flexible(c.values[1])])
def test_unknown_tagged_fields_are_skipped(api, version, side):
    message = getattr(api, side)
    obj = message()
    data = message.encode_bytes(obj, version)
    # A default instance sets no tagged field: the body ends with an empty tagged-field section.
    assert data[-1:] == b"\x00"
    with_unknown = data[:-1] + b"\x01" + b"\x63" + b"\x02" + b"zz"  # 1 field: tag 99, 2 bytes
    assert message.decode(with_unknown, version) == obj


# ----------------------------------------------------------------------------------------------
# kafka-python's JSON-driven protocol classes as a second, independent encoder
# ----------------------------------------------------------------------------------------------


def _kafka_python_classes() -> dict[tuple[int, str], type]:
    try:
        from kafka.protocol.api_message import ApiMessage

        # Importing the API modules defines their classes as subclasses of ApiMessage.
        for package in ("admin", "consumer", "metadata", "producer"):
            importlib.import_module(f"kafka.protocol.{package}")
    except ImportError:
        return {}
    found = {}
    todo = [ApiMessage]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if getattr(cls, "_json", None) is not None and getattr(cls, "_class_version", 0) is None:
            found[(cls.API_KEY, cls.type)] = cls
    return found


KP = _kafka_python_classes()
needs_kafka_python_json = pytest.mark.skipif(
    not KP, reason="needs kafka-python >= 3 (JSON-driven protocol classes); pyproject pins 3.0.12")


def _kafka_python_default_differs(obj, field) -> bool:
    """Fields whose kafka-python default is not Kafka's (the Java classes generated from the specs):
    records default to null in Kafka (javap on kafka-clients 3.9.0: `records = null`), to empty
    in kafka-python; ListOffsets' replica_id defaults to 0 in Kafka, kafka-python patches it to -1."""
    return field.type is schema.RECORDS or (type(obj).__name__, field.name) == ("ListOffsetsRequest", "replica_id")


def _to_kafka_python(kp_cls, obj, version: int, flexible: bool, *, top: bool, structs_only: bool = False):
    """kafka-python's object for ours; with structs_only, scalar fields are left to kafka-python's
    own defaults (so comparing the bytes compares the defaults)."""
    kwargs = {}
    for field in obj._fields:
        if not field.versions[0] <= version <= field.versions[1]:
            continue
        value = getattr(obj, field.name)
        inner = field.type.item if isinstance(field.type, Array) else field.type
        if structs_only and not isinstance(inner, StructType) and not _kafka_python_default_differs(obj, field):
            continue
        if field.tag is not None and (not flexible or value == field.default()):
            continue
        kp_name = field.name
        if kp_name.endswith("_authorized_operations") and kp_name not in kp_cls.fields:
            # kafka-python renames Kafka's <Resource>AuthorizedOperations to authorized_operations.
            kp_name = "authorized_operations"
        # A KeyError here means our field name is not the snake_case of Kafka's.
        kp_field = kp_cls.fields[kp_name]
        if getattr(getattr(kp_field, "_type", None), "__name__", "") == "BitField":
            # kafka-python holds a 32-bit authorized-operations bitfield as a set of bit positions.
            value = {bit for bit in range(32) if (value & 0xFFFFFFFF) >> bit & 1}
        if isinstance(inner, StructType) and value is not None:
            sub = kp_field.data_class
            if isinstance(field.type, Array):
                value = [_to_kafka_python(sub, v, version, flexible, top=False, structs_only=structs_only)
                         for v in value]
            else:
                value = _to_kafka_python(sub, value, version, flexible, top=False, structs_only=structs_only)
        elif isinstance(value, memoryview):
            value = bytes(value)
        kwargs[kp_name] = value
    return kp_cls(version=version, **kwargs) if top else kp_cls(**kwargs)


def kafka_python_encode(api, side: str, obj, version: int, *, structs_only: bool = False) -> bytes:
    kp_cls = KP[(api.key, side)]
    flexible = api.is_flexible(version)
    kp_obj = _to_kafka_python(kp_cls, obj, version, flexible, top=True, structs_only=structs_only)
    return bytes(kp_obj.encode(version=version))


KP_CASES = [
    c for c in CASES
    if (c.values[0].key, c.values[2]) in KP
    and KP[(c.values[0].key, c.values[2])].valid_versions[0] <= c.values[1]
    <= KP[(c.values[0].key, c.values[2])].valid_versions[1]
]


@needs_kafka_python_json
@pytest.mark.parametrize("api, version, side", KP_CASES)
def test_same_bytes_as_kafka_python(api, version, side):
    message = getattr(api, side)
    for obj in (populated(message, version), populated(message, version, nulls=True), message()):
        assert message.encode_bytes(obj, version) == kafka_python_encode(api, side, obj, version)
    # Defaults: kafka-python fills in its own (from Kafka's specs) for every scalar field.
    obj = _defaults_with_one_of_each(message.struct, version)
    assert message.encode_bytes(obj, version) == kafka_python_encode(api, side, obj, version, structs_only=True)


@needs_kafka_python_json
def test_kafka_python_covers_the_core_apis():
    # Guard against the comparison above silently selecting nothing.
    covered = {(c.values[0].name, c.values[1], c.values[2]) for c in KP_CASES}
    for name in ("Produce", "Fetch", "ListOffsets", "Metadata", "ApiVersions",
                 "OffsetForLeaderEpoch", "InitProducerId", "DescribeCluster", "DeleteRecords"):
        api = APIS_BY_NAME[name]
        assert (name, api.max_version, "request") in covered
        assert (name, api.max_version, "response") in covered


# ----------------------------------------------------------------------------------------------
# 2. Byte-exact vectors, written field by field from Kafka's message specs
# ----------------------------------------------------------------------------------------------

PRODUCE = APIS_BY_NAME["Produce"]
FETCH = APIS_BY_NAME["Fetch"]
METADATA = APIS_BY_NAME["Metadata"]
API_VERSIONS = APIS_BY_NAME["ApiVersions"]

BATCH = b"\x00" * 8 + b"\x00\x00\x00\x05" + b"abcde"  # opaque to the message layer


def old_kafka_python_encode(module: str, name: str, version: int, *fields) -> bytes:
    """Encode with kafka-python's hand-written (pre-JSON) protocol classes: kafka.protocol.<module>
    in kafka-python 2, kafka.protocol.old.<module> in kafka-python 3."""
    pytest.importorskip("kafka")
    for path in (f"kafka.protocol.old.{module}", f"kafka.protocol.{module}"):
        try:
            classes = getattr(importlib.import_module(path), name)
        except (ImportError, AttributeError):
            continue
        # Bind the instance to a name: its encode() holds it by weak reference only.
        instance = classes[version](*fields)
        return bytes(instance.encode())
    pytest.fail(f"kafka-python has no {name} in kafka.protocol[.old].{module}")


def _check(api, side, version, obj, expected: bytes):
    message = getattr(api, side)
    assert message.encode_bytes(obj, version) == expected
    assert message.decode(expected, version) == obj


# -- Produce ----------------------------------------------------------------------------------


def produce_request():
    req = PRODUCE.request
    return req(
        transactional_id="tx",
        acks=-1,
        timeout_ms=30000,
        topic_data=[req.cls.TopicProduceData(
            name="t1",
            partition_data=[req.cls.TopicProduceData.PartitionProduceData(index=2, records=BATCH)],
        )],
    )


PRODUCE_V3_REQUEST = (
    b"\x00\x02" b"tx"              # transactional_id: int16 length + bytes
    + b"\xff\xff"                  # acks = -1
    + b"\x00\x00\x75\x30"          # timeout_ms = 30000
    + b"\x00\x00\x00\x01"          # topic_data: 1 topic
    + b"\x00\x02" b"t1"            #   name
    + b"\x00\x00\x00\x01"          #   partition_data: 1 partition
    + b"\x00\x00\x00\x02"          #     index = 2
    + b"\x00\x00\x00\x11" + BATCH  #     records: int32 length (17) + batch bytes
)

PRODUCE_V9_REQUEST = (
    b"\x03" b"tx"                  # transactional_id: compact string, uvarint length + 1
    + b"\xff\xff"                  # acks = -1
    + b"\x00\x00\x75\x30"          # timeout_ms = 30000
    + b"\x02"                      # topic_data: compact array, 1 + 1
    + b"\x03" b"t1"                #   name
    + b"\x02"                      #   partition_data: 1 + 1
    + b"\x00\x00\x00\x02"          #     index = 2
    + b"\x12" + BATCH              #     records: compact, uvarint 17 + 1
    + b"\x00"                      #     partition tagged fields: none
    + b"\x00"                      #   topic tagged fields: none
    + b"\x00"                      # tagged fields: none
)


def produce_response(version):
    resp = PRODUCE.response
    topic = resp.cls.TopicProduceResponse
    part = topic.PartitionProduceResponse
    return resp(
        responses=[topic(name="t1", partition_responses=[part(
            index=2, error_code=0, base_offset=100, log_append_time_ms=-1, log_start_offset=0,
            record_errors=[part.BatchIndexAndErrorMessage(batch_index=3, batch_index_error_message=None)]
            if version >= 8 else [],
            error_message="bad" if version >= 8 else None,
        )])],
        throttle_time_ms=5,
    )


PRODUCE_V3_RESPONSE = (
    b"\x00\x00\x00\x01"                    # responses: 1 topic
    + b"\x00\x02" b"t1"                    #   name
    + b"\x00\x00\x00\x01"                  #   partition_responses: 1
    + b"\x00\x00\x00\x02"                  #     index = 2
    + b"\x00\x00"                          #     error_code = 0
    + b"\x00\x00\x00\x00\x00\x00\x00\x64"  #     base_offset = 100
    + b"\xff\xff\xff\xff\xff\xff\xff\xff"  #     log_append_time_ms = -1 (v2+)
    + b"\x00\x00\x00\x05"                  # throttle_time_ms = 5 (v1+)
)

PRODUCE_V9_RESPONSE = (
    b"\x02"                                # responses: compact array of 1
    + b"\x03" b"t1"                        #   name
    + b"\x02"                              #   partition_responses: 1
    + b"\x00\x00\x00\x02"                  #     index = 2
    + b"\x00\x00"                          #     error_code = 0
    + b"\x00\x00\x00\x00\x00\x00\x00\x64"  #     base_offset = 100
    + b"\xff\xff\xff\xff\xff\xff\xff\xff"  #     log_append_time_ms = -1
    + b"\x00\x00\x00\x00\x00\x00\x00\x00"  #     log_start_offset = 0 (v5+)
    + b"\x02"                              #     record_errors (v8+): 1
    + b"\x00\x00\x00\x03"                  #       batch_index = 3
    + b"\x00"                              #       batch_index_error_message = null
    + b"\x00"                              #       tagged fields
    + b"\x04" b"bad"                       #     error_message (v8+)
    + b"\x00"                              #     tagged fields
    + b"\x00"                              #   tagged fields
    + b"\x00\x00\x00\x05"                  # throttle_time_ms = 5
    + b"\x00"                              # tagged fields
)


def test_produce_vectors():
    _check(PRODUCE, "request", 3, produce_request(), PRODUCE_V3_REQUEST)
    _check(PRODUCE, "request", 9, produce_request(), PRODUCE_V9_REQUEST)
    # v3 carries neither log_start_offset nor the v8 fields: decoding gives their defaults.
    v3 = produce_response(3)
    v3.responses[0].partition_responses[0].log_start_offset = -1
    _check(PRODUCE, "response", 3, v3, PRODUCE_V3_RESPONSE)
    _check(PRODUCE, "response", 9, produce_response(9), PRODUCE_V9_RESPONSE)


def test_produce_vectors_match_kafka_python():
    encoded = old_kafka_python_encode("produce", "ProduceRequest", 3, "tx", -1, 30000, [("t1", [(2, BATCH)])])
    assert encoded == PRODUCE_V3_REQUEST
    encoded = old_kafka_python_encode("produce", "ProduceResponse", 3, [("t1", [(2, 0, 100, -1)])], 5)
    assert encoded == PRODUCE_V3_RESPONSE


@needs_kafka_python_json
def test_flexible_produce_vectors_match_kafka_python():
    assert kafka_python_encode(PRODUCE, "request", produce_request(), 9) == PRODUCE_V9_REQUEST
    assert kafka_python_encode(PRODUCE, "response", produce_response(9), 9) == PRODUCE_V9_RESPONSE


PRODUCE_TOPIC_ID = uuid.UUID("00112233445566778899aabbccddeeff")


def test_produce_v13_names_topics_by_id():
    req = PRODUCE.request
    topic = req.cls.TopicProduceData
    request = req(transactional_id=None, acks=1, timeout_ms=1000, topic_data=[topic(
        topic_id=PRODUCE_TOPIC_ID, partition_data=[topic.PartitionProduceData(index=0, records=BATCH)])])
    _check(PRODUCE, "request", 13, request,
           b"\x00"                        # transactional_id = null
           + b"\x00\x01"                 # acks = 1
           + b"\x00\x00\x03\xe8"         # timeout_ms = 1000
           + b"\x02"                      # topic_data: 1
           + PRODUCE_TOPIC_ID.bytes       #   topic_id (v13+), no name
           + b"\x02"                      #   partition_data: 1
           + b"\x00\x00\x00\x00"         #     index = 0
           + b"\x12" + BATCH              #     records
           + b"\x00" + b"\x00" + b"\x00")  # tagged fields of partition, topic, request
    # The name is not on the wire at v13: decoding leaves it at its default.
    assert PRODUCE.request.decode(PRODUCE.request.encode_bytes(request, 13), 13).topic_data[0].name == ""


def test_produce_v10_current_leader_and_node_endpoints_are_tagged():
    resp = PRODUCE.response
    topic = resp.cls.TopicProduceResponse
    part = topic.PartitionProduceResponse
    response = resp(responses=[topic(name="t1", partition_responses=[part(
        index=0, error_code=6, base_offset=-1, log_start_offset=-1,
        current_leader=part.LeaderIdAndEpoch(leader_id=2, leader_epoch=5))])],
        throttle_time_ms=0,
        node_endpoints=[resp.cls.NodeEndpoint(node_id=2, host="h2", port=9092, rack=None)])
    _check(PRODUCE, "response", 10, response,
           b"\x02" + b"\x03t1"                       # responses: 1; name
           + b"\x02"                                 #   partition_responses: 1
           + b"\x00\x00\x00\x00" + b"\x00\x06"      #     index 0, NOT_LEADER_OR_FOLLOWER
           + b"\xff" * 8 + b"\xff" * 8 + b"\xff" * 8  #     base_offset, log_append_time_ms, log_start_offset
           + b"\x01" + b"\x00"                       #     record_errors: empty; error_message = null
           + b"\x01" + b"\x00\x09"                   #     tagged fields: 1; tag 0 current_leader, 9 bytes
           + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x05" + b"\x00"  # leader 2, epoch 5, tagged fields
           + b"\x00"                                 #   topic tagged fields
           + b"\x00\x00\x00\x00"                     # throttle_time_ms
           + b"\x01" + b"\x00\x0e"                   # tagged fields: 1; tag 0 node_endpoints, 14 bytes
           + b"\x02" + b"\x00\x00\x00\x02" + b"\x03h2" + b"\x00\x00\x23\x84" + b"\x00" + b"\x00")
    # Before v10 the hint is not on the wire at all: v9 encodes the bytes of a response without it.
    plain = resp(responses=[topic(name="t1", partition_responses=[part(
        index=0, error_code=6, base_offset=-1, log_start_offset=-1)])], throttle_time_ms=0)
    assert resp.encode_bytes(response, 9) == resp.encode_bytes(plain, 9)


# -- Fetch ------------------------------------------------------------------------------------


def fetch_request(version):
    req = FETCH.request
    topic = req.cls.FetchTopic
    return req(
        cluster_id="c1" if version >= 12 else None,
        replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52428800, isolation_level=1,
        topics=[topic(topic="t1", partitions=[topic.FetchPartition(
            partition=0, fetch_offset=42, partition_max_bytes=1048576,
            current_leader_epoch=7 if version >= 9 else -1,
            log_start_offset=-1,
            last_fetched_epoch=6 if version >= 12 else -1,
        )])],
    )


FETCH_V4_REQUEST = (
    b"\xff\xff\xff\xff"                    # replica_id = -1
    + b"\x00\x00\x01\xf4"                  # max_wait_ms = 500
    + b"\x00\x00\x00\x01"                  # min_bytes = 1
    + b"\x03\x20\x00\x00"                  # max_bytes = 52428800 (v3+)
    + b"\x01"                              # isolation_level = READ_COMMITTED (v4+)
    + b"\x00\x00\x00\x01"                  # topics: 1
    + b"\x00\x02" b"t1"                    #   topic
    + b"\x00\x00\x00\x01"                  #   partitions: 1
    + b"\x00\x00\x00\x00"                  #     partition = 0
    + b"\x00\x00\x00\x00\x00\x00\x00\x2a"  #     fetch_offset = 42
    + b"\x00\x10\x00\x00"                  #     partition_max_bytes = 1 MiB
)

FETCH_V12_REQUEST = (
    b"\xff\xff\xff\xff"                    # replica_id = -1
    + b"\x00\x00\x01\xf4"                  # max_wait_ms = 500
    + b"\x00\x00\x00\x01"                  # min_bytes = 1
    + b"\x03\x20\x00\x00"                  # max_bytes
    + b"\x01"                              # isolation_level
    + b"\x00\x00\x00\x00"                  # session_id = 0 (v7+)
    + b"\xff\xff\xff\xff"                  # session_epoch = -1 (v7+)
    + b"\x02"                              # topics: compact array of 1
    + b"\x03" b"t1"                        #   topic
    + b"\x02"                              #   partitions: 1
    + b"\x00\x00\x00\x00"                  #     partition = 0
    + b"\x00\x00\x00\x07"                  #     current_leader_epoch = 7 (v9+)
    + b"\x00\x00\x00\x00\x00\x00\x00\x2a"  #     fetch_offset = 42
    + b"\x00\x00\x00\x06"                  #     last_fetched_epoch = 6 (v12+)
    + b"\xff\xff\xff\xff\xff\xff\xff\xff"  #     log_start_offset = -1 (v5+)
    + b"\x00\x10\x00\x00"                  #     partition_max_bytes
    + b"\x00"                              #     tagged fields
    + b"\x00"                              #   tagged fields
    + b"\x01"                              # forgotten_topics_data (v7+): empty compact array
    + b"\x01"                              # rack_id = "" (v11+)
    + b"\x01"                              # tagged fields: 1
    + b"\x00" b"\x03" b"\x03c1"            #   tag 0 cluster_id, 3 bytes: compact string "c1"
)


def fetch_response(version):
    resp = FETCH.response
    topic = resp.cls.FetchableTopicResponse
    part = topic.PartitionData
    partition = part(
        partition_index=0, error_code=0, high_watermark=50, last_stable_offset=48,
        log_start_offset=0 if version >= 5 else -1,
        aborted_transactions=[part.AbortedTransaction(producer_id=9, first_offset=44)],
        records=BATCH,
    )
    if version >= 12:
        partition.current_leader = part.LeaderIdAndEpoch(leader_id=1, leader_epoch=7)
    return resp(throttle_time_ms=0, responses=[topic(topic="t1", partitions=[partition])])


FETCH_V4_RESPONSE = (
    b"\x00\x00\x00\x00"                    # throttle_time_ms = 0 (v1+)
    + b"\x00\x00\x00\x01"                  # responses: 1
    + b"\x00\x02" b"t1"                    #   topic
    + b"\x00\x00\x00\x01"                  #   partitions: 1
    + b"\x00\x00\x00\x00"                  #     partition_index = 0
    + b"\x00\x00"                          #     error_code = 0
    + b"\x00\x00\x00\x00\x00\x00\x00\x32"  #     high_watermark = 50
    + b"\x00\x00\x00\x00\x00\x00\x00\x30"  #     last_stable_offset = 48 (v4+)
    + b"\x00\x00\x00\x01"                  #     aborted_transactions (v4+): 1
    + b"\x00\x00\x00\x00\x00\x00\x00\x09"  #       producer_id = 9
    + b"\x00\x00\x00\x00\x00\x00\x00\x2c"  #       first_offset = 44
    + b"\x00\x00\x00\x11" + BATCH          #     records: int32 length + bytes
)

FETCH_V12_RESPONSE = (
    b"\x00\x00\x00\x00"                    # throttle_time_ms = 0
    + b"\x00\x00"                          # error_code = 0 (v7+)
    + b"\x00\x00\x00\x00"                  # session_id = 0 (v7+)
    + b"\x02"                              # responses: compact array of 1
    + b"\x03" b"t1"                        #   topic
    + b"\x02"                              #   partitions: 1
    + b"\x00\x00\x00\x00"                  #     partition_index
    + b"\x00\x00"                          #     error_code
    + b"\x00\x00\x00\x00\x00\x00\x00\x32"  #     high_watermark = 50
    + b"\x00\x00\x00\x00\x00\x00\x00\x30"  #     last_stable_offset = 48
    + b"\x00\x00\x00\x00\x00\x00\x00\x00"  #     log_start_offset = 0 (v5+)
    + b"\x02"                              #     aborted_transactions: 1
    + b"\x00\x00\x00\x00\x00\x00\x00\x09"  #       producer_id = 9
    + b"\x00\x00\x00\x00\x00\x00\x00\x2c"  #       first_offset = 44
    + b"\x00"                              #       tagged fields
    + b"\xff\xff\xff\xff"                  #     preferred_read_replica = -1 (v11+)
    + b"\x12" + BATCH                      #     records: compact, 17 + 1
    + b"\x01"                              #     tagged fields: 1
    + b"\x01" b"\x09"                      #       tag 1 current_leader, 9 bytes:
    + b"\x00\x00\x00\x01"                  #         leader_id = 1
    + b"\x00\x00\x00\x07"                  #         leader_epoch = 7
    + b"\x00"                              #         its own tagged fields
    + b"\x00"                              #   tagged fields
    + b"\x00"                              # tagged fields
)


def test_fetch_vectors():
    _check(FETCH, "request", 4, fetch_request(4), FETCH_V4_REQUEST)
    _check(FETCH, "request", 12, fetch_request(12), FETCH_V12_REQUEST)
    _check(FETCH, "response", 4, fetch_response(4), FETCH_V4_RESPONSE)
    _check(FETCH, "response", 12, fetch_response(12), FETCH_V12_RESPONSE)


def test_fetch_null_records_and_aborted_transactions():
    resp = fetch_response(4)
    part = resp.responses[0].partitions[0]
    part.records = None
    part.aborted_transactions = None
    data = FETCH.response.encode_bytes(resp, 4)
    # null aborted_transactions is int32 -1, null records is int32 -1
    assert data.endswith(b"\x00\x00\x00\x00\x00\x00\x00\x30" + b"\xff\xff\xff\xff" * 2)
    decoded = FETCH.response.decode(data, 4).responses[0].partitions[0]
    assert decoded.records is None and decoded.aborted_transactions is None


def test_fetch_vectors_match_kafka_python():
    encoded = old_kafka_python_encode("fetch", "FetchRequest", 4,
                                      -1, 500, 1, 52428800, 1, [("t1", [(0, 42, 1048576)])])
    assert encoded == FETCH_V4_REQUEST
    encoded = old_kafka_python_encode("fetch", "FetchResponse", 4,
                                      0, [("t1", [(0, 0, 50, 48, [(9, 44)], BATCH)])])
    assert encoded == FETCH_V4_RESPONSE


@needs_kafka_python_json
def test_flexible_fetch_vectors_match_kafka_python():
    assert kafka_python_encode(FETCH, "request", fetch_request(12), 12) == FETCH_V12_REQUEST
    assert kafka_python_encode(FETCH, "response", fetch_response(12), 12) == FETCH_V12_RESPONSE


def test_fetch_v18_request_tagged_fields():
    """v13 names topics by id; v15's replica state (tag 1), v17's directory id (tag 0 of a partition)
    and v18's high watermark (tag 1 of a partition) are tagged; replica_id is gone from v15."""
    req = FETCH.request
    topic = req.cls.FetchTopic
    request = req(
        replica_state=req.cls.ReplicaState(replica_id=2, replica_epoch=9), max_wait_ms=500, min_bytes=1,
        max_bytes=1048576, isolation_level=0, session_id=0, session_epoch=-1,
        topics=[topic(topic_id=PRODUCE_TOPIC_ID, partitions=[topic.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=42, last_fetched_epoch=-1, log_start_offset=0,
            partition_max_bytes=1024, replica_directory_id=TOPIC_ID, high_watermark=40)])],
        forgotten_topics_data=[req.cls.ForgottenTopic(topic_id=PRODUCE_TOPIC_ID, partitions=[1])], rack_id="")
    _check(FETCH, "request", 18, request,
           b"\x00\x00\x01\xf4" + b"\x00\x00\x00\x01"         # max_wait_ms, min_bytes (no replica_id)
           + b"\x00\x10\x00\x00" + b"\x00"                    # max_bytes, isolation_level
           + b"\x00\x00\x00\x00" + b"\xff\xff\xff\xff"         # session_id, session_epoch
           + b"\x02" + PRODUCE_TOPIC_ID.bytes                  # topics: 1; topic_id
           + b"\x02" + b"\x00\x00\x00\x00"                    #   partitions: 1; partition 0
           + b"\xff\xff\xff\xff" + b"\x00" * 7 + b"\x2a"        #     current_leader_epoch, fetch_offset
           + b"\xff\xff\xff\xff" + b"\x00" * 8                  #     last_fetched_epoch, log_start_offset
           + b"\x00\x00\x04\x00"                              #     partition_max_bytes
           + b"\x02" + b"\x00\x10" + TOPIC_ID.bytes             #     tagged: 2; tag 0 directory id
           + b"\x01\x08" + b"\x00" * 7 + b"\x28"                #       tag 1 high_watermark = 40
           + b"\x00"                                          #   topic tagged fields
           + b"\x02" + PRODUCE_TOPIC_ID.bytes + b"\x02\x00\x00\x00\x01" + b"\x00"  # forgotten: id, [1]
           + b"\x01"                                          # rack_id = ""
           + b"\x01" + b"\x01\x0d"                             # tagged: 1; tag 1 replica state, 13 bytes
           + b"\x00\x00\x00\x02" + b"\x00" * 7 + b"\x09" + b"\x00")
    # Defaults: a consumer's replica id is -1 in both places; an unknown high watermark is Long.MAX.
    decoded = FETCH.request.decode(FETCH.request.encode_bytes(req(topics=[topic(partitions=[topic.FetchPartition()])]), 18), 18)
    assert (decoded.replica_id, decoded.replica_state.replica_id) == (-1, -1)
    assert decoded.topics[0].partitions[0].high_watermark == (1 << 63) - 1


def test_fetch_v16_node_endpoints():
    resp = FETCH.response
    response = resp(throttle_time_ms=0, error_code=0, session_id=0, responses=[],
                    node_endpoints=[resp.cls.NodeEndpoint(node_id=3, host="h", port=9093, rack="r1")])
    _check(FETCH, "response", 16, response,
           b"\x00" * 4 + b"\x00\x00" + b"\x00" * 4 + b"\x01"     # throttle, error, session id, no topics
           + b"\x01" + b"\x00\x0f"                             # tagged: 1; tag 0 node_endpoints, 15 bytes
           + b"\x02" + b"\x00\x00\x00\x03" + b"\x02h" + b"\x00\x00\x23\x85" + b"\x03r1" + b"\x00")
    assert FETCH.response.encode_bytes(response, 15) == FETCH.response.encode_bytes(resp(responses=[]), 15)


def test_list_offsets_v10_timeout_ms():
    """v10 appends the timeout for remote-storage lookups (KIP-1075); v8, v9 and v11 only allow new
    special timestamps, on the same bytes."""
    api = APIS_BY_NAME["ListOffsets"]
    topic = api.request.cls.ListOffsetsTopic
    request = api.request(replica_id=-1, isolation_level=1, timeout_ms=30000, topics=[topic(
        name="t1", partitions=[topic.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-5)])])
    body = (b"\xff\xff\xff\xff" + b"\x01"                    # replica_id, isolation_level
            + b"\x02" + b"\x03t1"                               # topics: 1; name
            + b"\x02" + b"\x00\x00\x00\x00" + b"\xff\xff\xff\xff"  #   partitions: 1; index 0, epoch -1
            + b"\xff" * 7 + b"\xfb" + b"\x00" + b"\x00")          #   timestamp -5; tagged fields
    _check(APIS_BY_NAME["ListOffsets"], "request", 10, request, body + b"\x00\x00\x75\x30" + b"\x00")
    request.timeout_ms = 0  # not on the wire before v10: decodes as its default
    _check(APIS_BY_NAME["ListOffsets"], "request", 9, request, body + b"\x00")


# -- Metadata ---------------------------------------------------------------------------------

TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")


def test_metadata_request_vectors():
    req = METADATA.request
    topic = req.cls.MetadataRequestTopic
    # v0: an empty array means all topics; the array cannot be null.
    _check(METADATA, "request", 0, req(topics=[]), b"\x00\x00\x00\x00")
    with pytest.raises(ValueError):
        req.encode_bytes(req(topics=None), 0)
    # v1: null means all topics.
    _check(METADATA, "request", 1, req(topics=None), b"\xff\xff\xff\xff")
    _check(METADATA, "request", 4, req(topics=[topic(name="t1")], allow_auto_topic_creation=False),
           b"\x00\x00\x00\x01" + b"\x00\x02t1"  # topics: 1, name
           + b"\x00")                           # allow_auto_topic_creation = false (v4+)
    _check(METADATA, "request", 9, req(topics=None, include_topic_authorized_operations=True),
           b"\x00"     # topics: compact null = all topics
           + b"\x01"   # allow_auto_topic_creation = true (the default)
           + b"\x00"   # include_cluster_authorized_operations = false (v8-10)
           + b"\x01"   # include_topic_authorized_operations = true (v8+)
           + b"\x00")  # tagged fields
    _check(METADATA, "request", 12, req(topics=[topic(topic_id=TOPIC_ID, name=None)]),
           b"\x02" + TOPIC_ID.bytes  # topics: 1; topic_id (v10+)
           + b"\x00"                 # name = null (nullable from v10)
           + b"\x00"                 # topic tagged fields
           + b"\x01"                 # allow_auto_topic_creation = true
           + b"\x00"                 # include_topic_authorized_operations = false
           + b"\x00")                # tagged fields


def metadata_response(version):
    resp = METADATA.response
    topic = resp.cls.MetadataResponseTopic
    return resp(
        throttle_time_ms=0,
        brokers=[resp.cls.MetadataResponseBroker(node_id=1, host="h", port=9092,
                                                 rack="r" if version >= 1 else None)],
        cluster_id="cid" if version >= 2 else None,
        controller_id=1 if version >= 1 else -1,
        topics=[topic(
            error_code=0, name="t1",
            topic_id=TOPIC_ID if version >= 10 else schema.UUID.default(False),
            is_internal=False,
            partitions=[topic.MetadataResponsePartition(
                error_code=0, partition_index=0, leader_id=1,
                leader_epoch=3 if version >= 7 else -1,
                replica_nodes=[1, 2], isr_nodes=[1],
                offline_replicas=[2] if version >= 5 else [],
            )],
        )],
    )


METADATA_V1_RESPONSE = (
    b"\x00\x00\x00\x01"          # brokers: 1
    + b"\x00\x00\x00\x01"        #   node_id = 1
    + b"\x00\x01" b"h"           #   host
    + b"\x00\x00\x23\x84"        #   port = 9092
    + b"\x00\x01" b"r"           #   rack (v1+)
    + b"\x00\x00\x00\x01"        # controller_id = 1 (v1+)
    + b"\x00\x00\x00\x01"        # topics: 1
    + b"\x00\x00"                #   error_code
    + b"\x00\x02" b"t1"          #   name
    + b"\x00"                    #   is_internal = false (v1+)
    + b"\x00\x00\x00\x01"        #   partitions: 1
    + b"\x00\x00"                #     error_code
    + b"\x00\x00\x00\x00"        #     partition_index = 0
    + b"\x00\x00\x00\x01"        #     leader_id = 1
    + b"\x00\x00\x00\x02"        #     replica_nodes: 2
    + b"\x00\x00\x00\x01" b"\x00\x00\x00\x02"
    + b"\x00\x00\x00\x01"        #     isr_nodes: 1
    + b"\x00\x00\x00\x01"
)

METADATA_V12_RESPONSE = (
    b"\x00\x00\x00\x00"          # throttle_time_ms (v3+)
    + b"\x02"                    # brokers: compact array of 1
    + b"\x00\x00\x00\x01"        #   node_id
    + b"\x02" b"h"               #   host
    + b"\x00\x00\x23\x84"        #   port
    + b"\x02" b"r"               #   rack
    + b"\x00"                    #   tagged fields
    + b"\x04" b"cid"             # cluster_id (v2+)
    + b"\x00\x00\x00\x01"        # controller_id
    + b"\x02"                    # topics: 1
    + b"\x00\x00"                #   error_code
    + b"\x03" b"t1"              #   name
    + TOPIC_ID.bytes             #   topic_id (v10+)
    + b"\x00"                    #   is_internal
    + b"\x02"                    #   partitions: 1
    + b"\x00\x00"                #     error_code
    + b"\x00\x00\x00\x00"        #     partition_index
    + b"\x00\x00\x00\x01"        #     leader_id
    + b"\x00\x00\x00\x03"        #     leader_epoch = 3 (v7+)
    + b"\x03" b"\x00\x00\x00\x01" b"\x00\x00\x00\x02"  # replica_nodes: 2
    + b"\x02" b"\x00\x00\x00\x01"                      # isr_nodes: 1
    + b"\x02" b"\x00\x00\x00\x02"                      # offline_replicas: 1 (v5+)
    + b"\x00"                    #     tagged fields
    + b"\x80\x00\x00\x00"        #   topic_authorized_operations = INT32_MIN (v8+, not asked)
    + b"\x00"                    #   tagged fields
    + b"\x00"                    # tagged fields (no cluster_authorized_operations after v10)
)


def test_metadata_response_vectors():
    _check(METADATA, "response", 1, metadata_response(1), METADATA_V1_RESPONSE)
    _check(METADATA, "response", 12, metadata_response(12), METADATA_V12_RESPONSE)
    # v13 adds the top-level error code after the topics, before the tagged fields (KIP-1102).
    rebootstrap = metadata_response(13)
    rebootstrap.error_code = 129
    _check(METADATA, "response", 13, rebootstrap, METADATA_V12_RESPONSE[:-1] + b"\x00\x81" + b"\x00")


def test_metadata_vectors_match_kafka_python():
    encoded = old_kafka_python_encode("metadata", "MetadataResponse", 1,
                                      [(1, "h", 9092, "r")], 1, [(0, "t1", False, [(0, 0, 1, [1, 2], [1])])])
    assert encoded == METADATA_V1_RESPONSE
    assert old_kafka_python_encode("metadata", "MetadataRequest", 1, None) == b"\xff\xff\xff\xff"
    assert old_kafka_python_encode("metadata", "MetadataRequest", 0, []) == b"\x00\x00\x00\x00"


@needs_kafka_python_json
def test_flexible_metadata_vectors_match_kafka_python():
    assert kafka_python_encode(METADATA, "response", metadata_response(12), 12) == METADATA_V12_RESPONSE


# -- ApiVersions ------------------------------------------------------------------------------


def api_versions_response(version):
    resp = API_VERSIONS.response
    key = resp.cls.ApiVersion
    obj = resp(
        error_code=0,
        api_keys=[key(api_key=0, min_version=3, max_version=9), key(api_key=18, min_version=0, max_version=3)],
        throttle_time_ms=0,
    )
    if version >= 3:
        obj.finalized_features_epoch = 5
        obj.finalized_features = [resp.cls.FinalizedFeatureKey(
            name="metadata.version", max_version_level=20, min_version_level=1)]
    return obj


API_VERSIONS_V0_RESPONSE = (
    b"\x00\x00"                                  # error_code
    + b"\x00\x00\x00\x02"                        # api_keys: 2
    + b"\x00\x00" b"\x00\x03" b"\x00\x09"        #   Produce 3-9
    + b"\x00\x12" b"\x00\x00" b"\x00\x03"        #   ApiVersions 0-3
)

API_VERSIONS_V3_RESPONSE = (
    b"\x00\x00"                                  # error_code
    + b"\x03"                                    # api_keys: compact array of 2
    + b"\x00\x00" b"\x00\x03" b"\x00\x09" b"\x00"  # Produce 3-9, tagged fields
    + b"\x00\x12" b"\x00\x00" b"\x00\x03" b"\x00"  # ApiVersions 0-3, tagged fields
    + b"\x00\x00\x00\x00"                        # throttle_time_ms (v1+)
    + b"\x02"                                    # tagged fields: 2 (in tag order)
    + b"\x01" b"\x08"                            #   tag 1 finalized_features_epoch, 8 bytes
    + b"\x00\x00\x00\x00\x00\x00\x00\x05"
    + b"\x02" b"\x17"                            #   tag 2 finalized_features, 23 bytes:
    + b"\x02"                                    #     compact array of 1
    + b"\x11" b"metadata.version"                #       name
    + b"\x00\x14" b"\x00\x01"                    #       max_version_level 20, min 1
    + b"\x00"                                    #       tagged fields
)


def test_api_versions_vectors():
    req = API_VERSIONS.request
    _check(API_VERSIONS, "request", 0, req(), b"")
    _check(API_VERSIONS, "request", 3, req(client_software_name="kw", client_software_version="1.0"),
           b"\x03kw" + b"\x041.0" + b"\x00")  # two compact strings, tagged fields
    _check(API_VERSIONS, "response", 0, api_versions_response(0), API_VERSIONS_V0_RESPONSE)
    _check(API_VERSIONS, "response", 3, api_versions_response(3), API_VERSIONS_V3_RESPONSE)


def test_api_versions_vectors_match_kafka_python():
    encoded = old_kafka_python_encode("api_versions", "ApiVersionsResponse", 0, 0, [(0, 3, 9), (18, 0, 3)])
    assert encoded == API_VERSIONS_V0_RESPONSE


@needs_kafka_python_json
def test_flexible_api_versions_vectors_match_kafka_python():
    assert kafka_python_encode(API_VERSIONS, "response", api_versions_response(3), 3) == API_VERSIONS_V3_RESPONSE
    obj = API_VERSIONS.request(client_software_name="kw", client_software_version="1.0")
    assert kafka_python_encode(API_VERSIONS, "request", obj, 3) == b"\x03kw\x041.0\x00"


# -- defaults the handlers rely on ------------------------------------------------------------


def test_spec_defaults():
    assert PRODUCE.request().transactional_id is None
    part = FETCH.response.cls.FetchableTopicResponse.PartitionData()
    assert (part.last_stable_offset, part.log_start_offset, part.preferred_read_replica) == (-1, -1, -1)
    assert part.records is None and part.aborted_transactions == []
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (-1, -1)
    assert FETCH.request().max_bytes == 0x7FFFFFFF and FETCH.request().session_epoch == -1
    assert METADATA.request().allow_auto_topic_creation is True
    assert METADATA.response().cluster_id is None and METADATA.response().controller_id == -1
    assert APIS_BY_NAME["OffsetForLeaderEpoch"].request().replica_id == -2
    assert APIS_BY_NAME["InitProducerId"].request().transactional_id == ""
    assert APIS_BY_NAME["DescribeCluster"].response().cluster_authorized_operations == -(2**31)
    assert API_VERSIONS.response().finalized_features_epoch == -1
