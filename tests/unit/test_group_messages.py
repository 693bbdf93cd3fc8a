"""Group, admin and transaction API definitions, and the internal topic records, proven on bytes.

Three kinds of evidence: vectors written by hand from Kafka's message specs; every field of every
version of our APIs encoded from the same values by kafka-python's codecs (the hand-written
per-version schemas of kafka-python 2 and 3 for non-flexible versions, and, when kafka-python 3 is
installed, its codecs generated from Kafka's JSON specs for all versions); and round trips of the
__consumer_offsets and __transaction_state records.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import random
import uuid

import pytest

from kafka_wire import internal_records as ir
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.primitives import DecodeError
from kafka_wire.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    Array,
    StructType,
)

EXPECTED_RANGES = {
    "CreateTopics": (19, 2, 7, 5), "DeleteTopics": (20, 1, 6, 4), "CreatePartitions": (37, 0, 3, 2),
    "DescribeConfigs": (32, 1, 4, 4), "AlterConfigs": (33, 0, 2, 2),
    "IncrementalAlterConfigs": (44, 0, 1, 1), "FindCoordinator": (10, 0, 6, 3),
    "JoinGroup": (11, 0, 9, 6), "Heartbeat": (12, 0, 4, 4), "LeaveGroup": (13, 0, 5, 4),
    "SyncGroup": (14, 0, 5, 4), "DescribeGroups": (15, 0, 6, 5), "ListGroups": (16, 0, 5, 3),
    "OffsetCommit": (8, 2, 10, 8), "OffsetFetch": (9, 1, 10, 6), "DeleteGroups": (42, 0, 2, 2),
    "OffsetDelete": (47, 0, 0, None), "AddPartitionsToTxn": (24, 0, 5, 3),
    "AddOffsetsToTxn": (25, 0, 4, 3), "EndTxn": (26, 0, 5, 3), "WriteTxnMarkers": (27, 0, 2, 1),
    "TxnOffsetCommit": (28, 0, 5, 3), "DescribeProducers": (61, 0, 0, 0),
    "DescribeTransactions": (65, 0, 0, 0), "ListTransactions": (66, 0, 2, 0),
}


OUR_APIS = list(EXPECTED_RANGES)


def s16(text: str) -> bytes:
    """A non-flexible STRING: int16 length, UTF-8 bytes."""
    data = text.encode()
    return len(data).to_bytes(2, "big") + data


def cs(text: str) -> bytes:
    """A COMPACT_STRING (lengths here stay below 127, so the varint is one byte)."""
    data = text.encode()
    return bytes([len(data) + 1]) + data


def i16(v: int) -> bytes:
    return v.to_bytes(2, "big", signed=True)


def i32(v: int) -> bytes:
    return v.to_bytes(4, "big", signed=True)


def i64(v: int) -> bytes:
    return v.to_bytes(8, "big", signed=True)


def test_registered_with_the_promised_versions():
    for name, (key, lo, hi, flex_from) in EXPECTED_RANGES.items():
        api = APIS_BY_NAME[name]
        assert (api.key, api.min_version, api.max_version) == (key, lo, hi), name
        for v in range(lo, hi + 1):
            assert api.is_flexible(v) == (flex_from is not None and v >= flex_from), (name, v)


# -- hand-written vectors ---------------------------------------------------------------------------


def check_vector(message, version, obj, expected: bytes):
    assert message.encode_bytes(obj, version) == expected
    assert message.decode(expected, version) == obj


def test_join_group_v1_request_vector():
    api = APIS_BY_NAME["JoinGroup"]
    req = api.request(
        group_id="grp",
        session_timeout_ms=10000,
        rebalance_timeout_ms=300000,
        member_id="",
        protocol_type="consumer",
        protocols=[api.request.cls.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01")],
    )
    expected = (
        s16("grp") + i32(10000) + i32(300000) + s16("") + s16("consumer")
        + i32(1) + s16("range") + i32(2) + b"\x00\x01"
    )
    check_vector(api.request, 1, req, expected)
    # v0 has no rebalance timeout; decoding it leaves the spec's default, -1.
    v0 = s16("grp") + i32(10000) + s16("") + s16("consumer") + i32(0)
    decoded = api.request.decode(v0, 0)
    assert decoded.rebalance_timeout_ms == -1
    assert decoded.group_instance_id is None and decoded.reason is None


def test_join_group_v7_response_vector():
    api = APIS_BY_NAME["JoinGroup"]
    Member = api.response.cls.JoinGroupResponseMember
    resp = api.response(
        throttle_time_ms=0,
        error_code=0,
        generation_id=3,
        protocol_type="consumer",
        protocol_name="range",
        leader="m-1",
        member_id="m-1",
        members=[Member(member_id="m-1", group_instance_id=None, metadata=b"\x07")],
    )
    expected = (
        i32(0) + i16(0) + i32(3) + cs("consumer") + cs("range") + cs("m-1") + cs("m-1")
        + b"\x02" + cs("m-1") + b"\x00" + b"\x02\x07" + b"\x00"  # one member, its tagged fields
        + b"\x00"  # top-level tagged fields
    )
    check_vector(api.response, 7, resp, expected)


def test_offset_commit_v8_vectors():
    api = APIS_BY_NAME["OffsetCommit"]
    Topic = api.request.cls.OffsetCommitRequestTopic
    Partition = Topic.OffsetCommitRequestPartition
    req = api.request(
        group_id="grp",
        generation_id_or_member_epoch=5,
        member_id="m-1",
        group_instance_id=None,
        topics=[Topic(name="t", partitions=[
            Partition(partition_index=0, committed_offset=42, committed_leader_epoch=7,
                      committed_metadata=""),
        ])],
    )
    expected = (
        cs("grp") + i32(5) + cs("m-1") + b"\x00"  # null group instance id
        + b"\x02" + cs("t")
        + b"\x02" + i32(0) + i64(42) + i32(7) + cs("") + b"\x00"  # partition + its tags
        + b"\x00"  # topic tags
        + b"\x00"  # request tags
    )
    check_vector(api.request, 8, req, expected)

    RTopic = api.response.cls.OffsetCommitResponseTopic
    RPartition = RTopic.OffsetCommitResponsePartition
    resp = api.response(
        throttle_time_ms=0,
        topics=[RTopic(name="t", partitions=[RPartition(partition_index=0, error_code=22)])],
    )
    expected = i32(0) + b"\x02" + cs("t") + b"\x02" + i32(0) + i16(22) + b"\x00" + b"\x00" + b"\x00"
    check_vector(api.response, 8, resp, expected)


TOPIC_ID = uuid.UUID("00112233445566778899aabbccddeeff")


def test_offset_commit_and_fetch_v10_name_topics_by_id():
    commit = APIS_BY_NAME["OffsetCommit"]
    Topic = commit.request.cls.OffsetCommitRequestTopic
    req = commit.request(group_id="grp", generation_id_or_member_epoch=5, member_id="m-1", group_instance_id=None,
                         topics=[Topic(topic_id=TOPIC_ID, partitions=[Topic.OffsetCommitRequestPartition(
                             partition_index=0, committed_offset=42, committed_leader_epoch=7,
                             committed_metadata="")])])
    expected = (
        cs("grp") + i32(5) + cs("m-1") + b"\x00"
        + b"\x02" + TOPIC_ID.bytes  # the topic id instead of the name
        + b"\x02" + i32(0) + i64(42) + i32(7) + cs("") + b"\x00" + b"\x00" + b"\x00"
    )
    check_vector(commit.request, 10, req, expected)
    RTopic = commit.response.cls.OffsetCommitResponseTopic
    resp = commit.response(throttle_time_ms=0, topics=[RTopic(topic_id=TOPIC_ID, partitions=[
        RTopic.OffsetCommitResponsePartition(partition_index=0, error_code=100)])])
    check_vector(commit.response, 10, resp,
                 i32(0) + b"\x02" + TOPIC_ID.bytes + b"\x02" + i32(0) + i16(100) + b"\x00" + b"\x00" + b"\x00")

    fetch = APIS_BY_NAME["OffsetFetch"]
    Group = fetch.request.cls.OffsetFetchRequestGroup
    req = fetch.request(groups=[Group(group_id="grp", member_id="m-1", member_epoch=3, topics=[
        Group.OffsetFetchRequestTopics(topic_id=TOPIC_ID, partition_indexes=[0, 1])])], require_stable=True)
    check_vector(fetch.request, 10, req,
                 b"\x02" + cs("grp") + cs("m-1") + i32(3)
                 + b"\x02" + TOPIC_ID.bytes + b"\x03" + i32(0) + i32(1) + b"\x00"  # topic by id, 2 partitions
                 + b"\x00"  # group tags
                 + b"\x01" + b"\x00")  # require_stable, request tags
    RGroup = fetch.response.cls.OffsetFetchResponseGroup
    RTopics = RGroup.OffsetFetchResponseTopics
    resp = fetch.response(throttle_time_ms=0, groups=[RGroup(group_id="grp", error_code=0, topics=[RTopics(
        topic_id=TOPIC_ID, partitions=[RTopics.OffsetFetchResponsePartitions(
            partition_index=0, committed_offset=42, committed_leader_epoch=-1, metadata="", error_code=0)])])])
    check_vector(fetch.response, 10, resp,
                 i32(0) + b"\x02" + cs("grp")
                 + b"\x02" + TOPIC_ID.bytes + b"\x02" + i32(0) + i64(42) + i32(-1) + cs("") + i16(0) + b"\x00"
                 + b"\x00"  # topic tags
                 + i16(0) + b"\x00"  # group error code, group tags
                 + b"\x00")


def test_find_coordinator_v4_vectors():
    api = APIS_BY_NAME["FindCoordinator"]
    req = api.request(key_type=0, coordinator_keys=["g1", "g2"])
    check_vector(api.request, 4, req, b"\x00" + b"\x03" + cs("g1") + cs("g2") + b"\x00")
    # The single `key` is v0-3 only: at v4 it is neither written nor read.
    with_key = api.request(key="ignored", key_type=0, coordinator_keys=["g1", "g2"])
    assert api.request.encode_bytes(with_key, 4) == b"\x00" + b"\x03" + cs("g1") + cs("g2") + b"\x00"

    Coordinator = api.response.cls.Coordinator
    resp = api.response(
        throttle_time_ms=0,
        coordinators=[Coordinator(key="g1", node_id=1, host="localhost", port=9092, error_code=0,
                                  error_message=None)],
    )
    expected = (
        i32(0) + b"\x02" + cs("g1") + i32(1) + cs("localhost") + i32(9092) + i16(0) + b"\x00" + b"\x00"
        + b"\x00"
    )
    check_vector(api.response, 4, resp, expected)
    # v5 (TRANSACTION_ABORTABLE) and v6 (key type 2, share groups) are v4's bytes.
    for version in (5, 6):
        check_vector(api.response, version, resp, expected)
        check_vector(api.request, version, req, b"\x00" + b"\x03" + cs("g1") + cs("g2") + b"\x00")


def test_create_topics_v5_tagged_field_vector():
    """TopicConfigErrorCode is a tagged field (tag 0): written only when it is not 0."""
    api = APIS_BY_NAME["CreateTopics"]
    Result = api.response.cls.CreatableTopicResult
    fields = dict(name="t", error_code=0, error_message=None, num_partitions=1, replication_factor=1,
                  configs=None)
    body = cs("t") + i16(0) + b"\x00" + i32(1) + i16(1) + b"\x00"
    without = api.response(throttle_time_ms=0, topics=[Result(**fields)])
    check_vector(api.response, 5, without, i32(0) + b"\x02" + body + b"\x00" + b"\x00")
    with_tag = api.response(throttle_time_ms=0, topics=[Result(topic_config_error_code=29, **fields)])
    tags = b"\x01" + b"\x00" + b"\x02" + i16(29)  # one tagged field: tag 0, size 2, int16 29
    check_vector(api.response, 5, with_tag, i32(0) + b"\x02" + body + tags + b"\x00")


# -- kafka-python's codecs, every field of every version --------------------------------------------

KP_MODULES = [
    "kafka.protocol.consumer.group",
    "kafka.protocol.admin.topics",
    "kafka.protocol.admin.configs",
    "kafka.protocol.admin.groups",
    "kafka.protocol.admin.transactions",
    "kafka.protocol.metadata.find_coordinator",
    "kafka.protocol.producer.transaction",
]


@functools.cache
def kafka_python_classes() -> dict:
    """kafka-python 3's message classes, generated from Kafka's JSON specs (absent in kafka-python 2)."""
    classes = {}
    for name in KP_MODULES:
        module = pytest.importorskip(name)
        for attr, value in vars(module).items():
            if attr.endswith(("Request", "Response")) and isinstance(value, type):
                classes[attr] = value
    return classes


SAMPLE_TEXT = ["", "a", "grp", "topic-1", "héllo", "ü" * 3]


def random_value(field_type, rng: random.Random, version: int, flexible: bool):
    if field_type is INT8:
        return rng.randint(-128, 127)
    if field_type is INT16:
        return rng.randint(-(1 << 15), (1 << 15) - 1)
    if field_type is UINT16:
        return rng.randint(0, (1 << 16) - 1)
    if field_type is INT32:
        return rng.randint(-(1 << 31), (1 << 31) - 1)
    if field_type is INT64:
        return rng.randint(-(1 << 63), (1 << 63) - 1)
    if field_type is FLOAT64:
        return rng.random()
    if field_type is BOOL:
        return rng.random() < 0.5
    if field_type is UUID:
        return uuid.UUID(int=rng.getrandbits(128))
    if field_type is STRING:
        return rng.choice(SAMPLE_TEXT)
    if field_type is BYTES:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 4)))
    if isinstance(field_type, Array):
        return [random_value(field_type.item, rng, version, flexible) for _ in range(rng.randint(0, 2))]
    if isinstance(field_type, StructType):
        return random_struct(field_type, rng, version, flexible)
    raise AssertionError(f"no generator for {field_type}")


def random_struct(struct_type: StructType, rng: random.Random, version: int, flexible: bool):
    values = {}
    for f in struct_type.fields:
        if not f.versions[0] <= version <= f.versions[1]:
            continue
        if f.tag is not None and not flexible:
            continue
        if f.is_nullable(version) and rng.random() < 0.3:
            values[f.name] = None
        else:
            values[f.name] = random_value(f.type, rng, version, flexible)
    return struct_type.cls(**values)


def to_kafka_python(kp_class, obj, version: int, flexible: bool, top: bool):
    """Build kafka-python's object of the same values, checking that it expects exactly our fields."""
    ours = {f.name for f in obj._fields
            if f.versions[0] <= version <= f.versions[1] and (f.tag is None or flexible)}
    kwargs = {}
    for field in kp_class._struct.fields.values():
        if not field.for_version_q(version) or (field.tag is not None and not flexible):
            continue
        where = f"{type(obj).__name__} v{version}"
        assert field.name in ours, f"{where}: kafka-python has {field.name}, we do not"
        ours.discard(field.name)
        value = getattr(obj, field.name)
        if value is not None and field.is_struct_array():
            value = [to_kafka_python(field.data_class, item, version, flexible, False) for item in value]
        bitfield = getattr(field, "_type", None)
        if getattr(bitfield, "__name__", "") == "BitField":
            # kafka-python hands authorized operations over as a set of bit positions.
            value = bitfield.from_32_bit_field(value)
        kwargs[field.name] = value
    assert not ours, f"{type(obj).__name__} v{version}: kafka-python lacks {sorted(ours)}"
    return kp_class(version=version, **kwargs) if top else kp_class(**kwargs)


def api_versions(names):
    for name in names:
        api = APIS_BY_NAME[name]
        for version in range(api.min_version, api.max_version + 1):
            yield pytest.param(name, version, id=f"{name}-v{version}")


@pytest.mark.parametrize("name,version", list(api_versions(OUR_APIS)))
def test_bytes_match_kafka_python(name, version):
    classes = kafka_python_classes()
    api = APIS_BY_NAME[name]
    flexible = api.is_flexible(version)
    for message, kp_class in ((api.request, classes[f"{name}Request"]),
                              (api.response, classes[f"{name}Response"])):
        assert kp_class.flexible_version_q(version) == flexible
        rng = random.Random(f"{name}/{message.name}/{version}")
        for _ in range(4):
            obj = random_struct(message.struct, rng, version, flexible)
            ours = message.encode_bytes(obj, version)
            theirs = bytes(to_kafka_python(kp_class, obj, version, flexible, True).encode(version=version))
            assert ours == theirs, f"{message.name} v{version}: {obj!r}"
            assert message.decode(ours, version) == obj


# kafka-python 2 keeps them in kafka.protocol, kafka-python 3 in kafka.protocol.old.
OLD_PACKAGE = "kafka.protocol.old" if importlib.util.find_spec("kafka.protocol.old") else "kafka.protocol"


# Where kafka-python's hand-written schemas disagree with Kafka's spec (not with us).
KAFKA_PYTHON_SCHEMA_BUGS = {
    ("AlterConfigsResponse", 1): "its AlterConfigsResponse list holds AlterConfigsRequest_v1",
    ("DescribeGroupsResponse", 3): "authorized_operations follows the groups array instead of each group",
}


def old_kafka_python_versions():
    """kafka-python's older, hand-written schemas (one class per version) for non-flexible versions."""
    old = {}
    for module_name in ("group", "commit", "admin", "find_coordinator", "add_partitions_to_txn",
                        "add_offsets_to_txn", "end_txn", "txn_offset_commit"):
        module = importlib.import_module(f"{OLD_PACKAGE}.{module_name}")
        for attr, value in vars(module).items():
            if isinstance(value, list) and attr.endswith(("Request", "Response")):
                old[attr] = value
    for name in OUR_APIS:
        api = APIS_BY_NAME[name]
        for kind, message in (("Request", api.request), ("Response", api.response)):
            for cls in old.get(name + kind, []):
                v = cls.API_VERSION
                if api.supports(v) and not api.is_flexible(v):
                    bug = KAFKA_PYTHON_SCHEMA_BUGS.get((name + kind, v))
                    marks = [pytest.mark.skip(reason=f"kafka-python: {bug}")] if bug else []
                    yield pytest.param(message, v, cls, id=f"{name}{kind}-v{v}", marks=marks)


def positional(obj, version: int):
    """Our values in wire order, nested structs as tuples (kafka-python's old Struct schemas)."""
    values = []
    for f in obj._fields:
        if not f.versions[0] <= version <= f.versions[1] or f.tag is not None:
            continue
        value = getattr(obj, f.name)
        inner = f.type.item if isinstance(f.type, Array) else None
        if value is not None and isinstance(inner, StructType):
            value = [tuple(positional(item, version)) for item in value]
        values.append(value)
    return values


def fit(old_type, value):
    """Shape our positional values to an old schema. Those schemas sometimes inline a struct (a
    Schema inside a Schema) or write a struct of one array field as a bare array (CreatePartitions'
    assignments); both are the same on the wire."""
    types = importlib.import_module(OLD_PACKAGE + ".types")
    if value is None:
        return None
    if isinstance(value, tuple) and len(value) == 1 and not isinstance(old_type, types.Schema):
        return fit(old_type, value[0])
    if isinstance(old_type, types.Array):
        return [fit(old_type.array_of, item) for item in value]
    if isinstance(old_type, types.Schema):
        items = iter(value)

        def take(schema):
            return tuple(take(t) if isinstance(t, types.Schema) else fit(t, next(items))
                         for t in schema.fields)

        shaped = take(old_type)
        assert next(items, None) is None, "our struct has more fields than kafka-python's"
        return shaped
    return value


@pytest.mark.parametrize("message,version,old_class", list(old_kafka_python_versions()))
def test_bytes_match_kafka_python_hand_written_schemas(message, version, old_class):
    rng = random.Random(f"old/{message.name}/{version}")
    for _ in range(4):
        obj = random_struct(message.struct, rng, version, False)
        values = fit(old_class.SCHEMA, tuple(positional(obj, version)))
        assert message.encode_bytes(obj, version) == bytes(old_class(*values).encode())


# -- internal topic records -------------------------------------------------------------------------


def test_offset_commit_key_vector():
    expected = i16(1) + s16("grp") + s16("t") + i32(2)
    assert ir.encode_offset_commit_key("grp", "t", 2) == expected
    key = ir.decode_internal_key(expected)
    assert isinstance(key, ir.OffsetCommitKey)
    assert (key.group, key.topic, key.partition) == ("grp", "t", 2)
    # Version 0 (very old brokers) has the same body.
    assert ir.decode_internal_key(i16(0) + expected[2:]) == key


def test_offset_commit_value_vectors():
    # Kafka 4.x writes v4 (flexible): compact metadata, then the tagged fields.
    value = ir.OffsetCommitValue(offset=42, leader_epoch=7, metadata="", commit_timestamp=1700000000000)
    v4 = i16(4) + i64(42) + i32(7) + b"\x01" + i64(1700000000000) + b"\x00"
    assert ir.encode_offset_commit_value(value) == v4
    assert ir.decode_offset_commit_value(v4) == value
    # Kafka 3.x wrote v3; it still reads.
    v3 = i16(3) + i64(42) + i32(7) + s16("") + i64(1700000000000)
    assert ir.decode_offset_commit_value(v3) == value

    # With an expire timestamp (OffsetCommit v2-4 retention time) Kafka writes v1, without the epoch.
    expiring = ir.OffsetCommitValue(offset=42, metadata="m", commit_timestamp=1000, expire_timestamp=5000)
    v1 = i16(1) + i64(42) + s16("m") + i64(1000) + i64(5000)
    assert ir.encode_offset_commit_value(expiring) == v1
    assert ir.decode_offset_commit_value(v1) == expiring
    assert ir.decode_offset_commit_value(None) is None  # a tombstone


def test_offset_commit_value_with_topic_id_is_kafka_4_3s_record():
    # The value of an OffsetCommit (v7, offset 100) as Apache Kafka 4.3.0 wrote it into __consumer_offsets
    # (read back from its segment): v4, the topic id as tagged field 0.
    kafka = bytes.fromhex("00040000000000000064ffffffff01000001a22316798d0100108e3c65052d04471cba7343da3446f8f9")
    value = ir.OffsetCommitValue(offset=100, leader_epoch=-1, metadata="", commit_timestamp=0x1a22316798d,
                                 topic_id=uuid.UUID("8e3c6505-2d04-471c-ba73-43da3446f8f9"))
    assert ir.encode_offset_commit_value(value) == kafka
    assert ir.decode_offset_commit_value(kafka) == value


def test_empty_group_metadata_value_is_kafka_4_3s_record():
    # What Apache Kafka 4.3.0 writes when a JoinGroup creates a classic group (newEmptyGroupMetadataRecord).
    kafka = bytes.fromhex("0003000000000000ffffffff000001a223161f5500000000")
    value = ir.GroupMetadataValue(protocol_type="", generation=0, protocol=None, leader=None,
                                  current_state_timestamp=0x1a223161f55, members=[])
    assert ir.encode_group_metadata_value(value) == kafka


def test_offset_commit_value_every_version_round_trips():
    value = ir.OffsetCommitValue(offset=9, metadata="x", commit_timestamp=123)
    for version in range(0, 5):
        data = ir.encode_offset_commit_value(value, version)
        assert data[:2] == i16(version)
        assert ir.decode_offset_commit_value(data) == value
    assert ir.encode_offset_commit_value(value, 4).endswith(b"\x00")  # v4 is flexible: tagged fields


def test_group_metadata_key_and_value_round_trip():
    key = ir.encode_group_metadata_key("grp")
    assert key == i16(2) + s16("grp")
    decoded = ir.decode_internal_key(key)
    assert isinstance(decoded, ir.GroupMetadataKey) and decoded.group == "grp"

    member = ir.MemberMetadata(
        member_id="m-1", group_instance_id="instance-1", client_id="client", client_host="/127.0.0.1",
        rebalance_timeout=300000, session_timeout=45000, subscription=b"\x00\x01", assignment=b"\x02",
    )
    value = ir.GroupMetadataValue(
        protocol_type="consumer", generation=4, protocol="range", leader="m-1",
        current_state_timestamp=1700000000000, members=[member],
    )
    data = ir.encode_group_metadata_value(value)
    assert data[:2] == i16(3)  # the version Kafka writes
    assert data == i16(3) + (
        s16("consumer") + i32(4) + s16("range") + s16("m-1") + i64(1700000000000) + i32(1)
        + s16("m-1") + s16("instance-1") + s16("client") + s16("/127.0.0.1") + i32(300000) + i32(45000)
        + i32(2) + b"\x00\x01" + i32(1) + b"\x02"
    )
    assert ir.decode_group_metadata_value(data) == value
    assert ir.decode_group_metadata_value(ir.encode_group_metadata_value(value, 4)) == value

    # An empty group: no protocol, no leader (null strings).
    empty = ir.GroupMetadataValue(protocol_type="consumer", generation=5, protocol=None, leader=None,
                                  current_state_timestamp=1, members=[])
    assert ir.decode_group_metadata_value(ir.encode_group_metadata_value(empty)) == empty
    # Older versions drop fields: v0 has neither the state timestamp nor member rebalance timeouts.
    old = ir.decode_group_metadata_value(ir.encode_group_metadata_value(value, 0))
    assert old.current_state_timestamp == -1
    assert old.members[0].rebalance_timeout == 0 and old.members[0].group_instance_id is None


def test_unknown_versions_are_decode_errors():
    with pytest.raises(DecodeError):
        ir.decode_internal_key(i16(3) + s16("grp"))  # a KIP-848 consumer group record
    with pytest.raises(DecodeError):
        ir.decode_offset_commit_value(i16(5) + i64(1))
    with pytest.raises(DecodeError):
        ir.decode_internal_key(b"\x00")


def test_transaction_log_records_round_trip():
    key = ir.encode_transaction_log_key("txn-1")
    assert key == i16(0) + s16("txn-1")
    assert ir.decode_transaction_log_key(key).transactional_id == "txn-1"

    Partitions = ir.PartitionsSchema
    value = ir.TransactionLogValue(
        producer_id=1000, producer_epoch=3, transaction_timeout_ms=60000, transaction_status=1,
        transaction_partitions=[Partitions(topic="t", partition_ids=[0, 2])],
        transaction_last_update_timestamp_ms=20, transaction_start_timestamp_ms=10,
    )
    v0 = ir.encode_transaction_log_value(value)
    assert v0 == i16(0) + (
        i64(1000) + i16(3) + i32(60000) + b"\x01" + i32(1) + s16("t") + i32(2) + i32(0) + i32(2)
        + i64(20) + i64(10)
    )
    assert ir.decode_transaction_log_value(v0) == value

    # v1 is flexible; the producer ids of KIP-890 and the client's transaction version are tagged.
    tagged = ir.TransactionLogValue(
        producer_id=1000, previous_producer_id=999, producer_epoch=0, transaction_timeout_ms=60000,
        transaction_status=0, transaction_partitions=None, transaction_last_update_timestamp_ms=20,
        transaction_start_timestamp_ms=-1, client_transaction_version=2,
    )
    v1 = ir.encode_transaction_log_value(tagged, 1)
    assert v1 == i16(1) + (
        i64(1000) + i16(0) + i32(60000) + b"\x00" + b"\x00" + i64(20) + i64(-1)
        + b"\x02" + b"\x00\x08" + i64(999) + b"\x02\x02" + i16(2)
    )
    assert ir.decode_transaction_log_value(v1) == tagged
