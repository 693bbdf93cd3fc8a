"""Share group (KIP-932) message definitions: every version of the twelve share APIs round-trips,
hand-written bytes prove the encoding, every field matches Apache Kafka 4.3.0's JSON specs (read from
the reference Kafka's jars when scripts/setup-tests.sh installed them), the share records of
__consumer_offsets and __share_group_state round-trip and match their specs, and none of the new
APIs is advertised in ApiVersions until its handler exists.
"""

from __future__ import annotations

import json
import re
import struct
import uuid
import zipfile
from pathlib import Path

import pytest

from kafka_wire import internal_records as ir
from kafka_wire import schema
from kafka_wire.messages import APIS, APIS_BY_NAME
from kafka_wire.primitives import DecodeError
from kafka_wire.schema import Array, StructType
from tests.conftest import DEPS, missing_tool
from tests.unit.test_messages import populated

SHARE_APIS = {
    76: ("ShareGroupHeartbeat", (1, 1)),
    77: ("ShareGroupDescribe", (1, 1)),
    78: ("ShareFetch", (1, 2)),
    79: ("ShareAcknowledge", (1, 2)),
    83: ("InitializeShareGroupState", (0, 0)),
    84: ("ReadShareGroupState", (0, 0)),
    85: ("WriteShareGroupState", (0, 1)),
    86: ("DeleteShareGroupState", (0, 0)),
    87: ("ReadShareGroupStateSummary", (0, 1)),
    90: ("DescribeShareGroupOffsets", (0, 1)),
    91: ("AlterShareGroupOffsets", (0, 0)),
    92: ("DeleteShareGroupOffsets", (0, 0)),
}

CASES = [
    pytest.param(key, version, side, id=f"{name}-v{version}-{side}")
    for key, (name, (lo, hi)) in SHARE_APIS.items()
    for version in range(lo, hi + 1)
    for side in ("request", "response")
]


def test_registered_with_kafka_4_3_versions():
    for key, (name, (lo, hi)) in SHARE_APIS.items():
        api = APIS[key]
        assert api.name == name
        assert (api.min_version, api.max_version) == (lo, hi)
        assert all(api.is_flexible(v) for v in range(lo, hi + 1))


@pytest.mark.parametrize("key,version,side", CASES)
def test_round_trip(key, version, side):
    message = getattr(APIS[key], side)
    for nulls in (False, True):
        obj = populated(message, version, nulls=nulls)
        data = message.encode_bytes(obj, version)
        assert message.decode(data, version) == obj
        with pytest.raises(DecodeError):
            message.decode(data[:-1], version)


def test_advertised_exactly_when_handled():
    """Defining the messages must not put them in ApiVersions: a handler advertises its API (the
    share group APIs served, broker/share_groups.py; the share coordinator's inter-broker APIs not)."""
    from broker.handlers import HANDLERS
    from broker.handlers.p18_api_versions import api_versions_response

    advertised = {k["api_key"] for k in api_versions_response()["api_keys"]}
    assert advertised, "ApiVersions advertises nothing?"
    assert {76, 77, 78, 79} <= set(HANDLERS)
    for key in SHARE_APIS:
        assert key in APIS
        assert (key in HANDLERS) == (key in advertised)
    assert not {83, 84, 85, 86, 87} & advertised


# ----------------------------------------------------------------------------------------------
# Hand-written bytes
# ----------------------------------------------------------------------------------------------


def _cstr(text: str) -> bytes:
    raw = text.encode()
    return bytes([len(raw) + 1]) + raw


def test_share_acknowledge_v1_request_bytes():
    topic = uuid.UUID("0123456789abcdef0123456789abcdef")
    api = APIS_BY_NAME["ShareAcknowledge"]
    request = api.request(group_id="g", member_id="m", share_session_epoch=3, topics=[
        {"topic_id": topic, "partitions": [
            {"partition_index": 2, "acknowledgement_batches": [
                {"first_offset": 10, "last_offset": 12, "acknowledge_types": [1, 0, 3]}]}]}])
    expected = (
        _cstr("g") + _cstr("m") + struct.pack(">i", 3)
        + b"\x02" + topic.bytes                      # one topic
        + b"\x02" + struct.pack(">i", 2)             # one partition
        + b"\x02" + struct.pack(">qq", 10, 12)       # one batch
        + b"\x04" + bytes([1, 0, 3])                 # three types
        + b"\x00"                                    # batch tags
        + b"\x00"                                    # partition tags
        + b"\x00"                                    # topic tags
        + b"\x00"                                    # request tags
    )
    assert api.request.encode_bytes(request, 1) == expected
    decoded = api.request.decode(expected, 1)
    assert decoded.topics[0].partitions[0].acknowledgement_batches[0].acknowledge_types == [1, 0, 3]
    assert api.request.encode_bytes(decoded, 1) == expected
    assert decoded.group_id == request.group_id and decoded.share_session_epoch == 3


def test_share_fetch_v2_adds_acquire_mode_and_renew_after_batch_size():
    api = APIS_BY_NAME["ShareFetch"]
    common = dict(group_id="g", member_id="m", share_session_epoch=0, max_wait_ms=500, min_bytes=1,
                  max_bytes=1024, max_records=10, batch_size=5)
    v1 = api.request.encode_bytes(api.request(**common), 1)
    v2 = api.request.encode_bytes(api.request(**common, share_acquire_mode=1, is_renew_ack=True), 2)
    head = _cstr("g") + _cstr("m") + struct.pack(">iiiiii", 0, 500, 1, 1024, 10, 5)
    assert v1 == head + b"\x01\x01\x00"  # empty topics, empty forgotten topics, no tags
    assert v2 == head + b"\x01\x01" + b"\x01\x01\x00"


def test_share_fetch_response_v1_carries_lock_timeout_and_acquired_records():
    api = APIS_BY_NAME["ShareFetch"]
    topic = uuid.UUID(int=7)
    response = {"acquisition_lock_timeout_ms": 30000, "responses": [{"topic_id": topic, "partitions": [{
        "partition_index": 0, "current_leader": {"leader_id": 1, "leader_epoch": 4}, "records": b"\x00" * 3,
        "acquired_records": [{"first_offset": 5, "last_offset": 7, "delivery_count": 2}]}]}]}
    data = api.response.encode_bytes(response, 1)
    decoded = api.response.decode(data, 1)
    assert decoded.acquisition_lock_timeout_ms == 30000
    part = decoded.responses[0].partitions[0]
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (1, 4)
    assert bytes(part.records) == b"\x00" * 3
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in part.acquired_records] == [(5, 7, 2)]
    assert data.startswith(struct.pack(">ih", 0, 0) + b"\x00" + struct.pack(">i", 30000))


# ----------------------------------------------------------------------------------------------
# Field lists against Kafka 4.3.0's JSON specs
# ----------------------------------------------------------------------------------------------

KAFKA_LIBS = DEPS / "kafka-4.3.0" / "libs"
SPEC_JARS = ("kafka-clients-4.3.0.jar", "kafka-group-coordinator-4.3.0.jar", "kafka-share-coordinator-4.3.0.jar")


def _load_specs() -> dict[str, dict]:
    specs = {}
    for jar in SPEC_JARS:
        path = KAFKA_LIBS / jar
        if not path.exists():
            missing_tool(f"the reference Kafka 4.3.0 ({path})")
        with zipfile.ZipFile(path) as zf:
            for name in zf.namelist():
                if name.startswith("common/message/") and name.endswith(".json"):
                    text = zf.read(name).decode()
                    text = re.sub(r"^\s*//.*$", "", text, flags=re.M)
                    specs[Path(name).stem] = json.loads(text)
    return specs


@pytest.fixture(scope="module")
def specs():
    return _load_specs()


def _versions(spec: str | None) -> tuple[int, int]:
    return schema.parse_versions(spec or "none")


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


_PRIMITIVES = {"int8", "int16", "int32", "int64", "uint16", "string", "bool", "uuid", "bytes", "records", "float64"}


def _spec_fields(fields: list, version: int, commons: dict, flexible: bool) -> list:
    out = []
    for f in fields:
        if not schema._in(_versions(f["versions"]), version):
            continue
        tag = f.get("tag")
        if tag is not None and not flexible:
            continue
        ftype = f["type"]
        inner = ftype[2:] if ftype.startswith("[]") else ftype
        children = None
        if inner not in _PRIMITIVES:
            sub = f.get("fields") or commons[inner]["fields"]
            children = _spec_fields(sub, version, commons, flexible)
        nullable = schema._in(_versions(f.get("nullableVersions")), version)
        out.append((_snake(f["name"]), ftype, nullable, tag, children))
    return out


def _our_fields(fields: list[schema.Field], version: int, flexible: bool) -> list:
    out = []
    for f in fields:
        if not schema._in(f.versions, version):
            continue
        if f.tag is not None and not flexible:
            continue
        ftype = f.type
        array = isinstance(ftype, Array)
        inner = ftype.item if array else ftype
        children = None
        if isinstance(inner, StructType):
            children = _our_fields(inner.fields, version, flexible)
        type_name = ("[]" if array else "") + inner.name
        out.append((f.name, type_name, f.is_nullable(version), f.tag, children))
    return out


def _compare(spec: dict, fields: list[schema.Field], versions: tuple[int, int], flexible_range) -> None:
    commons = {c["name"]: c for c in spec.get("commonStructs", [])}
    for version in range(versions[0], versions[1] + 1):
        flexible = schema._in(flexible_range, version)
        assert flexible == schema._in(_versions(spec.get("flexibleVersions")), version), (spec["name"], version)
        assert _our_fields(fields, version, flexible) == _spec_fields(spec["fields"], version, commons, flexible), \
            f"{spec['name']} v{version}"


@pytest.mark.parametrize("key", sorted(SHARE_APIS))
def test_fields_match_kafka_spec(specs, key):
    api = APIS[key]
    for side, message in (("Request", api.request), ("Response", api.response)):
        spec = specs[f"{api.name}{side}"]
        assert spec["apiKey"] == key
        assert _versions(spec["validVersions"]) == (api.min_version, api.max_version)
        assert not spec.get("latestVersionUnstable", False)
        _compare(spec, message.struct.fields, (api.min_version, api.max_version), message.flexible)


def test_comparison_sees_a_wrong_field(specs):
    """The comparison above would catch a renamed or retyped field."""
    api = APIS[79]
    spec = specs["ShareAcknowledgeRequest"]
    wrong = [schema.Field("group_id", schema.STRING, nullable="0+", default=None),
             schema.Field("member_id", schema.STRING),  # not nullable: Kafka's is
             *api.request.struct.fields[2:]]
    with pytest.raises(AssertionError):
        _compare(spec, wrong, (1, 2), api.request.flexible)


# ----------------------------------------------------------------------------------------------
# Records: __consumer_offsets share group records, __share_group_state
# ----------------------------------------------------------------------------------------------

SHARE_GROUP_RECORDS = {
    ir.SHARE_GROUP_MEMBER_METADATA: "ShareGroupMemberMetadata",
    ir.SHARE_GROUP_METADATA: "ShareGroupMetadata",
    ir.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: "ShareGroupTargetAssignmentMetadata",
    ir.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: "ShareGroupTargetAssignmentMember",
    ir.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: "ShareGroupCurrentMemberAssignment",
    ir.SHARE_GROUP_STATE_PARTITION_METADATA: "ShareGroupStatePartitionMetadata",
}
SHARE_STATE_RECORDS = {ir.SHARE_SNAPSHOT: "ShareSnapshot", ir.SHARE_UPDATE: "ShareUpdate"}


@pytest.mark.parametrize("record_type,name", sorted(SHARE_GROUP_RECORDS.items()))
def test_share_group_records_match_spec(specs, record_type, name):
    key_spec, value_spec = specs[f"{name}Key"], specs[f"{name}Value"]
    assert key_spec["apiKey"] == value_spec["apiKey"] == record_type
    key_message = (ir.CONSUMER_GROUP_MEMBER_KEY if record_type in ir.SHARE_GROUP_MEMBER_KEYED_RECORDS
                   else ir.CONSUMER_GROUP_KEY)
    _compare(key_spec, key_message.struct.fields, (0, 0), key_message.flexible)
    value = ir.SHARE_GROUP_VALUES[record_type]
    assert value.name == f"{name}Value"
    assert _versions(value_spec["validVersions"]) == (0, 0)
    _compare(value_spec, value.struct.fields, (0, 0), value.flexible)


@pytest.mark.parametrize("record_type,name", sorted(SHARE_STATE_RECORDS.items()))
def test_share_state_records_match_spec(specs, record_type, name):
    key_spec, value_spec = specs[f"{name}Key"], specs[f"{name}Value"]
    assert key_spec["apiKey"] == value_spec["apiKey"] == record_type
    _compare(key_spec, ir.SHARE_STATE_KEY.struct.fields, (0, 0), ir.SHARE_STATE_KEY.flexible)
    _compare(value_spec, ir.SHARE_STATE_VALUES[record_type].struct.fields, (0, 0),
             ir.SHARE_STATE_VALUES[record_type].flexible)


@pytest.mark.parametrize("record_type", sorted(SHARE_GROUP_RECORDS))
def test_share_group_record_round_trip(record_type):
    member = "member-1" if record_type in ir.SHARE_GROUP_MEMBER_KEYED_RECORDS else None
    value = populated(ir.SHARE_GROUP_VALUES[record_type], 0)
    key_bytes = ir.encode_share_group_key(record_type, "grp", member)
    value_bytes = ir.encode_share_group_value(record_type, value)
    # The key version is the record type; the value version is 0.
    assert struct.unpack(">h", key_bytes[:2])[0] == record_type
    assert value_bytes[:2] == b"\x00\x00"
    assert ir.decode_share_group_record(key_bytes, value_bytes) == (record_type, "grp", member, value)
    assert ir.decode_share_group_record(key_bytes, None) == (record_type, "grp", member, None)
    # Neither a KIP-848 consumer group record nor an offset commit.
    assert ir.decode_consumer_group_record(key_bytes, value_bytes) is None


def test_share_group_key_bytes():
    assert ir.encode_share_group_key(ir.SHARE_GROUP_METADATA, "g") == b"\x00\x0b\x00\x01g"
    assert ir.encode_share_group_key(ir.SHARE_GROUP_MEMBER_METADATA, "g", "m") == b"\x00\x0a\x00\x01g\x00\x01m"
    with pytest.raises(ValueError):
        ir.encode_share_group_key(ir.CONSUMER_GROUP_METADATA, "g")


def test_share_state_records():
    topic = uuid.UUID(int=0xABCDEF)
    key = ir.encode_share_state_key(ir.SHARE_SNAPSHOT, "g", topic, 3)
    assert key == b"\x00\x00" + b"\x00\x01g" + topic.bytes + struct.pack(">i", 3)
    snapshot = {"snapshot_epoch": 1, "state_epoch": 2, "leader_epoch": 3, "start_offset": 40,
                "create_timestamp": 100, "write_timestamp": 200, "delivery_complete_count": 2,
                "state_batches": [{"first_offset": 40, "last_offset": 41, "delivery_state": 2, "delivery_count": 1}]}
    value = ir.encode_share_state_value(ir.SHARE_SNAPSHOT, snapshot)
    record_type, decoded_key, decoded = ir.decode_share_state_record(key, value)
    assert record_type == ir.SHARE_SNAPSHOT
    assert (decoded_key.group_id, decoded_key.topic_id, decoded_key.partition) == ("g", topic, 3)
    assert decoded.to_dict() == snapshot
    # DeliveryCompleteCount is tagged field 0: left out at its default of -1.
    default_count = ir.encode_share_state_value(ir.SHARE_SNAPSHOT, {**snapshot, "delivery_complete_count": -1})
    assert len(default_count) == len(value) - 6  # tag 0 (1 byte), size (1 byte), the int32 (4 bytes)
    with pytest.raises(DecodeError):
        ir.decode_share_state_record(b"\x00\x02" + key[2:], value)
