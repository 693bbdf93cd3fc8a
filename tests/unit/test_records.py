"""RecordBatch v2 records: the byte layout, agreement with Kafka's Java client and kafka-python,
control batches, many batches in one blob, and malformed input."""

import struct
import time
from pathlib import Path

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.compression import CompressionType, compress, decompress
from kafka_wire.record_codec import (
    ControlRecordType,
    InvalidRecord,
    Record,
    build_batch,
    build_control_batch,
    decode_batches,
    decode_control_key,
    decode_end_transaction_marker,
    decode_records,
    encode_control_key,
    encode_records,
    iter_records_with_offsets,
)
from kafka_wire.records import CorruptBatch, InvalidRecordBatch, UnsupportedMagic, pack_batch, verify_crc

JAVA_VECTORS = Path(__file__).parent / "data" / "record_batches_kafka_clients_4.3.0.txt"
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _java_batches() -> dict[tuple[str, str], bytes]:
    batches = {}
    for line in JAVA_VECTORS.read_text().splitlines():
        if line and not line.startswith("#"):
            kind, codec, hex_bytes = line.split()
            batches[kind, codec] = bytes.fromhex(hex_bytes)
    return batches


JAVA = _java_batches()
# The records of the "sample" batches (see RecordBatchVectors.java).
SAMPLE_BIG_VALUE = bytes((i * 7) % 251 for i in range(300))
SAMPLE = [
    # (offset, timestamp, key, value, headers)
    (5, 1700000000000, b"key-0", b"value-0", [("h1", b"v1"), ("h2", None)]),
    (6, 1700000000005, None, b"value-1", []),
    (7, 1699999999990, b"k", None, []),
    (8, 1700000000001, b"k2", SAMPLE_BIG_VALUE, []),
]


def _seen_by_consumer(buf) -> list[tuple]:
    return [
        (offset, timestamp, record.key, record.value, record.headers)
        for header, records in decode_batches(buf)
        for offset, timestamp, record in iter_records_with_offsets(header, records)
    ]


# -- the byte layout, written out from the spec -----------------------------------------------------------


def test_one_record_batch_matches_the_spec_layout_byte_for_byte():
    record_body = (
        b"\x00"  # attributes
        + b"\x0a"  # timestamp delta 5, zigzag varlong
        + b"\x00"  # offset delta 0
        + b"\x02" + b"k"  # key length 1, key
        + b"\x04" + b"vv"  # value length 2, value
        + b"\x02"  # one header
        + b"\x04" + b"hk"  # header key length 2, key
        + b"\x01"  # header value length -1: null
    )
    records = bytes([len(record_body) * 2]) + record_body  # record length, zigzag varint
    crc_covered = (
        struct.pack(">h", 0x10)  # attributes: transactional, no compression, CreateTime
        + struct.pack(">i", 0)  # last offset delta
        + struct.pack(">q", 1000)  # base timestamp
        + struct.pack(">q", 1005)  # max timestamp
        + struct.pack(">q", 42)  # producer id
        + struct.pack(">h", 1)  # producer epoch
        + struct.pack(">i", 9)  # base sequence
        + struct.pack(">i", 1)  # records count
        + records
    )
    expected = (
        struct.pack(">q", 100)  # base offset
        + struct.pack(">i", 4 + 1 + 4 + len(crc_covered))  # batch length: bytes after this field
        + struct.pack(">i", 7)  # partition leader epoch
        + b"\x02"  # magic
        + struct.pack(">I", crc32c(crc_covered))
        + crc_covered
    )
    built = build_batch(
        [Record(0, 5, b"k", b"vv", [("hk", None)])],
        base_offset=100,
        producer_id=42,
        producer_epoch=1,
        base_sequence=9,
        is_transactional=True,
        partition_leader_epoch=7,
        base_timestamp=1000,
    )
    assert built == expected
    header, [record] = decode_records(expected)
    assert (header.base_offset, header.producer_id, header.base_sequence) == (100, 42, 9)
    assert header.max_timestamp == 1005
    assert record == Record(0, 5, b"k", b"vv", [("hk", None)])


# -- agreement with Kafka's Java client ---------------------------------------------------------------------


@pytest.mark.parametrize("codec", list(CODEC_IDS))
def test_decodes_batches_the_java_client_wrote(codec):
    batch = JAVA["sample", codec]
    header, records = decode_records(batch)
    assert header.compression == CODEC_IDS[codec]
    assert (header.base_offset, header.last_offset_delta, header.records_count) == (5, 3, 4)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (1234, 3, 7)
    assert header.partition_leader_epoch == 11
    assert header.max_timestamp == 1700000000005
    assert _seen_by_consumer(batch) == SAMPLE


@pytest.mark.parametrize("codec", list(CODEC_IDS))
def test_rebuilding_a_java_batch_gives_the_same_records_blob(codec):
    java = JAVA["sample", codec]
    header, records = decode_records(java)
    ours = build_batch(
        records,
        base_offset=header.base_offset,
        compression=header.compression,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        partition_leader_epoch=header.partition_leader_epoch,
        base_timestamp=header.base_timestamp,
    )
    # Compressed bytes depend on the compressor's implementation; the records inside must not.
    assert decompress(header.compression, ours[61:]) == decompress(header.compression, java[61:])
    assert ours[:8] == java[:8] and ours[12:17] == java[12:17] and ours[21:61] == java[21:61]
    if codec == "none":
        assert ours == java


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_decodes_java_batches_spanning_many_compression_blocks(codec):
    [(offset, timestamp, key, value, headers)] = _seen_by_consumer(JAVA["large", codec])
    assert (offset, timestamp, key, headers) == (0, 1700000000000, b"big", [])
    assert value == bytes((i * 7) % 251 for i in range(100_000))


def test_transactional_batch_matches_java():
    java = JAVA["txn", "none"]
    header, records = decode_records(java)
    assert header.is_transactional and not header.is_control
    ours = build_batch(
        records, producer_id=99, producer_epoch=0, base_sequence=0, is_transactional=True,
        partition_leader_epoch=2, base_timestamp=1700000000000,
    )
    assert ours == java


@pytest.mark.parametrize(
    ("kind", "commit", "base_offset", "timestamp", "coordinator_epoch"),
    [("commit", True, 42, 1700000000000, 17), ("abort", False, 43, 1700000000009, 18)],
)
def test_transaction_markers_match_java_byte_for_byte(kind, commit, base_offset, timestamp, coordinator_epoch):
    java = JAVA[kind, "none"]
    ours = build_control_batch(
        commit, 1234, 3, coordinator_epoch, base_offset=base_offset, timestamp=timestamp, partition_leader_epoch=4
    )
    assert ours == java
    header, [record] = decode_records(java)
    assert header.is_control and header.is_transactional
    assert header.base_sequence == -1
    expected_type = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    assert decode_control_key(record.key) == (0, expected_type)
    assert decode_end_transaction_marker(record.value) == (0, coordinator_epoch)


# -- agreement with kafka-python (an independent Python implementation) --------------------------------------


@pytest.mark.parametrize("codec", list(CODEC_IDS))
def test_kafka_python_batches_decode_and_uncompressed_ones_match_ours(codec):
    default_records = pytest.importorskip("kafka.record.default_records")
    builder = default_records.DefaultRecordBatchBuilder(
        magic=2, compression_type=CODEC_IDS[codec], is_transactional=0,
        producer_id=1234, producer_epoch=3, base_sequence=7, batch_size=1 << 20,
    )
    for offset, timestamp, key, value, headers in SAMPLE:
        builder.append(offset - 5, timestamp, key, value, headers)
    theirs = bytes(builder.build())
    header, records = decode_records(theirs)
    assert [(o + 5, t, k, v, h) for o, t, k, v, h in _seen_by_consumer(theirs)] == SAMPLE
    ours = build_batch(
        records, compression=CODEC_IDS[codec], producer_id=1234, producer_epoch=3, base_sequence=7,
        partition_leader_epoch=0, base_timestamp=header.base_timestamp,
    )
    if codec == "none":
        assert ours == theirs
    # And kafka-python reads what we wrote.
    reader = default_records.DefaultRecordBatch(ours)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in reader] == [
        (o - 5, t, k, v) for o, t, k, v, _ in SAMPLE
    ]


# -- round trips -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", list(CompressionType))
def test_round_trip_every_codec(codec):
    records = [
        Record(0, 0, b"key", b"value", [("trace", b"\x00\x01"), ("empty", b""), ("null", None)]),
        Record(1, -3, None, None),
        Record(5, 1 << 40, b"", bytes(range(256)) * 300),  # gaps in offsets, as compaction leaves
    ]
    batch = build_batch(records, base_offset=1000, compression=codec, base_timestamp=1_600_000_000_000)
    header, decoded = decode_records(batch)
    assert decoded == records
    assert header.compression == codec
    assert header.last_offset_delta == 5 and header.next_offset == 1006
    assert header.max_timestamp == 1_600_000_000_000 + (1 << 40)


def test_header_keys_that_are_not_utf8_survive_a_round_trip():
    batch = build_batch([Record(0, 0, b"k", b"v", [(b"\xff\xfe", b"x")])], base_timestamp=0)
    _, [record] = decode_records(batch)
    assert build_batch([record], base_timestamp=0) == batch


def test_log_append_time_records_carry_the_batch_max_timestamp():
    batch = build_batch([Record(0, 0, b"a", b"1"), Record(1, 0, b"b", b"2")], timestamp_type=1, base_timestamp=77)
    header, records = decode_records(batch)
    assert header.timestamp_type == 1
    assert [(o, t) for o, t, _ in iter_records_with_offsets(header, records)] == [(0, 77), (1, 77)]


def test_build_batch_defaults_base_timestamp_to_now():
    before = int(time.time() * 1000)
    header, _ = decode_records(build_batch([Record(0, 0, None, b"v")]))
    assert before - 1 <= header.base_timestamp <= int(time.time() * 1000) + 1


def test_build_batch_refuses_empty_or_unordered_records():
    with pytest.raises(ValueError):
        build_batch([])
    with pytest.raises(ValueError):
        build_batch([Record(1, 0, None, b"a"), Record(1, 0, None, b"b")], base_timestamp=0)


def test_empty_batch_keeps_its_header_and_has_no_records():
    # What Kafka's log cleaner leaves when it removes every record but must keep producer state.
    batch = pack_batch(b"", records_count=0, base_offset=50, last_offset_delta=4, producer_id=7, base_sequence=3)
    header, records = decode_records(batch)
    assert records == []
    assert (header.base_offset, header.last_offset, header.producer_id, header.last_sequence) == (50, 54, 7, 7)


# -- control records -----------------------------------------------------------------------------------------------


def test_control_key_types():
    leader_change = encode_control_key(ControlRecordType.LEADER_CHANGE)
    assert decode_control_key(leader_change) == (0, ControlRecordType.LEADER_CHANGE)
    assert decode_control_key(struct.pack(">hh", 1, 99)) == (1, ControlRecordType.UNKNOWN)
    with pytest.raises(InvalidRecord):
        decode_control_key(b"\x00\x00\x00")
    with pytest.raises(InvalidRecord):
        decode_control_key(None)
    with pytest.raises(InvalidRecord):
        decode_end_transaction_marker(b"\x00\x00\x00\x00\x01")


# -- many batches --------------------------------------------------------------------------------------------------


def test_decode_batches_reads_a_fetch_blob_and_ignores_a_partial_last_batch():
    first = build_batch([Record(0, 0, b"a", b"1"), Record(1, 1, b"b", b"2")], base_offset=0, base_timestamp=10)
    second = build_control_batch(True, 5, 0, 1, base_offset=2, timestamp=20)
    third = build_batch([Record(0, 0, b"c", b"3")], base_offset=3, compression=3, base_timestamp=30)
    blob = first + second + third
    assert [h.base_offset for h, _ in decode_batches(blob)] == [0, 2, 3]
    for cut in (1, 11, 12, 60, 61, len(third) - 1):
        assert [h.base_offset for h, _ in decode_batches(blob + third[:cut])] == [0, 2, 3]
    assert [h.base_offset for h, _ in decode_batches(blob, end=len(first) + len(second) + 5)] == [0, 2]
    assert [(o, t, r.key) for o, t, r in _consumer_view(blob)] == [
        (0, 10, b"a"),
        (1, 11, b"b"),
        (2, 20, b"\x00\x00\x00\x01"),  # the COMMIT marker's control key
        (3, 30, b"c"),
    ]


def _consumer_view(blob):
    for header, records in decode_batches(blob):
        yield from iter_records_with_offsets(header, records)


def test_decode_batches_rejects_a_nonsense_length_instead_of_looping():
    bad = struct.pack(">qi", 0, 3) + bytes(60)
    with pytest.raises(InvalidRecordBatch):
        list(decode_batches(bad))
    with pytest.raises(InvalidRecordBatch):
        list(decode_batches(struct.pack(">qi", 0, -100) + bytes(60)))


# -- malformed batches ------------------------------------------------------------------------------------------


def _with_fixed_crc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_corrupt_crc_is_detected():
    batch = bytearray(build_batch([Record(0, 0, b"k", b"v")], base_timestamp=0))
    batch[-1] ^= 0xFF
    with pytest.raises(CorruptBatch):
        decode_records(bytes(batch))


def test_other_magic_is_unsupported():
    batch = bytearray(build_batch([Record(0, 0, b"k", b"v")], base_timestamp=0))
    batch[16] = 1
    with pytest.raises(UnsupportedMagic):
        decode_records(bytes(batch))


def test_record_count_must_match_the_records():
    batch = bytearray(build_batch([Record(0, 0, b"k", b"v"), Record(1, 0, b"k", b"v")], base_timestamp=0))
    struct.pack_into(">i", batch, 57, 1)
    with pytest.raises(InvalidRecord, match="remain"):
        decode_records(_with_fixed_crc(batch))
    struct.pack_into(">i", batch, 57, 3)
    with pytest.raises(InvalidRecord):
        decode_records(_with_fixed_crc(batch))
    struct.pack_into(">i", batch, 57, -1)
    with pytest.raises(InvalidRecord):
        decode_records(_with_fixed_crc(batch))


def test_record_length_must_match_its_fields():
    records = bytearray(encode_records([Record(0, 0, b"key", b"value")]))
    records[0] += 2  # claim one more byte than the fields use
    batch = pack_batch(bytes(records) + b"\x00", records_count=1)
    with pytest.raises(InvalidRecord, match="record size"):
        decode_records(batch)


def test_compressed_garbage_is_an_invalid_batch():
    batch = pack_batch(b"not zstd at all", records_count=1, attributes=CompressionType.ZSTD)
    with pytest.raises(InvalidRecordBatch):
        decode_records(batch)
    batch = pack_batch(b"whatever", records_count=1, attributes=6)
    with pytest.raises(InvalidRecordBatch):
        decode_records(batch)


def test_decompressed_size_is_bounded():
    batch = build_batch([Record(0, 0, None, bytes(2_000_000))], compression=CompressionType.ZSTD, base_timestamp=0)
    assert len(batch) < 10_000
    with pytest.raises(InvalidRecordBatch):
        decode_records(batch, max_output=1_000_000)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_only_raise_invalid_record_batch(data):
    try:
        decode_records(data)
    except InvalidRecordBatch:
        pass
    try:
        list(decode_batches(data))
    except InvalidRecordBatch:
        pass


_VALID_RECORDS = encode_records(
    [
        Record(0, 0, b"key", b"value", [("h", b"v"), ("n", None)]),
        Record(1, 7, None, b"x" * 20),
        Record(2, -1, b"", None),
    ]
)


@settings(max_examples=500, deadline=None)
@given(
    edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=6),
    count=st.integers(-2, 5),
    codec=st.sampled_from([CompressionType.NONE, CompressionType.NONE, CompressionType.GZIP, CompressionType.LZ4]),
)
def test_damaged_records_with_a_valid_crc_only_raise_invalid_record_batch(edits, count, codec):
    # A valid CRC gets the damage past the checksum and into the record parser.
    records = bytearray(_VALID_RECORDS)
    for position, byte in edits:
        records[position % len(records)] = byte
    batch = pack_batch(compress(codec, bytes(records)), records_count=count, attributes=codec)
    verify_crc(batch)
    try:
        decode_records(batch)
    except InvalidRecordBatch:
        pass
