"""The checks and conversion of appended batches (log/validator.py, Kafka's LogValidator): the
header checks in Kafka's order, the record checks a topic's config asks for with one record error
per refused record, recompression, and the common case that decodes nothing."""

from __future__ import annotations

import pytest

from kafka_wire.compression import CompressionType
from kafka_wire.record_codec import InvalidRecord, Record, build_batch, build_control_batch, decode_records
from kafka_wire.records import (ATTR_TIMESTAMP_TYPE, CorruptBatch, InvalidRecordBatch, iter_batch_headers, pack_batch,
                                verify_crc)
from log.config import LogConfig
from log.errors import RecordTooLarge, RecordValidationError
from log.partition_log import PartitionLog
from log.producer_state import AppendOrigin
from log.validator import NO_TIMESTAMP, assign_batch_offsets, validate_batches, validate_records

NOW = 1_700_000_000_000
HOUR = 3_600_000
TP = "orders-3"


def batch(values, *, keys=None, timestamps=None, compression=0, **kwargs) -> bytearray:
    timestamps = timestamps or [NOW] * len(values)
    keys = keys or [b"k%d" % i for i in range(len(values))]
    records = [Record(i, ts - timestamps[0], key, value)
               for i, (key, value, ts) in enumerate(zip(keys, values, timestamps))]
    return bytearray(build_batch(records, compression=compression, base_timestamp=timestamps[0], **kwargs))


def undecodable(records_count: int = 1, timestamp: int = NOW) -> bytearray:
    """A batch with a valid CRC whose gzip payload is not gzip: decoding it raises."""
    return bytearray(pack_batch(b"not gzip at all", records_count=records_count, attributes=CompressionType.GZIP,
                                last_offset_delta=records_count - 1, base_timestamp=timestamp,
                                max_timestamp=timestamp))


def records_of(buf, config=None, now_ms=NOW):
    config = LogConfig.of(config)
    return validate_records(buf, validate_batches(buf, config, AppendOrigin.CLIENT), config, now_ms, TP)


# -- the header checks -------------------------------------------------------------------------------------


def test_header_checks_come_in_kafkas_order():
    """analyzeAndValidateRecords: base offset, then size, then CRC; then LogValidator.validateBatch."""
    config = LogConfig({"max.message.bytes": 200})
    large = batch([b"x" * 300])
    with pytest.raises(RecordTooLarge):
        validate_batches(large, config, AppendOrigin.CLIENT)
    moved = batch([b"x" * 300], base_offset=5)
    with pytest.raises(InvalidRecord, match="base offset"):
        validate_batches(moved, config, AppendOrigin.CLIENT)
    large[-1] ^= 0xFF
    with pytest.raises(RecordTooLarge):  # too large before corrupt
        validate_batches(large, config, AppendOrigin.CLIENT)
    small = batch([b"x"])
    small[-1] ^= 0xFF
    with pytest.raises(CorruptBatch):
        validate_batches(small, config, AppendOrigin.CLIENT)
    # A follower copies what its leader accepted, whatever the size.
    assert len(validate_batches(batch([b"x" * 300]), config, AppendOrigin.REPLICATION)) == 1


def test_clients_may_not_write_control_batches_or_idempotent_batches_without_a_sequence():
    config = LogConfig()
    marker = bytearray(build_control_batch(True, producer_id=7, producer_epoch=0, coordinator_epoch=1))
    with pytest.raises(InvalidRecord, match="control"):
        validate_batches(marker, config, AppendOrigin.CLIENT)
    assert len(validate_batches(marker, config, AppendOrigin.COORDINATOR)) == 1
    with pytest.raises(InvalidRecord, match="sequence"):
        validate_batches(batch([b"x"], producer_id=3, producer_epoch=0), config, AppendOrigin.CLIENT)


def test_each_batch_of_an_append_is_checked():
    two = batch([b"a"]) + batch([b"b", b"c"])
    assert [pos for pos, _ in validate_batches(two, LogConfig(), AppendOrigin.CLIENT)] == [0, len(batch([b"a"]))]
    with pytest.raises(InvalidRecordBatch, match="truncated"):
        validate_batches(two[:-3], LogConfig(), AppendOrigin.CLIENT)
    with pytest.raises(InvalidRecordBatch, match="no record batches"):
        validate_batches(bytearray(), LogConfig(), AppendOrigin.CLIENT)


# -- the record checks -------------------------------------------------------------------------------------


def test_the_common_case_keeps_the_producers_bytes_and_decodes_nothing():
    buf = undecodable(records_count=3)
    batches = validate_batches(buf, LogConfig(), AppendOrigin.CLIENT)
    assert validate_records(buf, batches, LogConfig(), NOW, TP) == (buf, batches)
    assert validate_records(buf, batches, LogConfig(), NOW, TP)[0] is buf
    # A before bound is settled by the header when the batch holds one record.
    one = undecodable(records_count=1)
    bounded = LogConfig({"message.timestamp.before.max.ms": HOUR})
    assert records_of(one, bounded)[0] is one
    # More records: later ones may be older than the first, so they are decoded.
    with pytest.raises(InvalidRecordBatch):
        records_of(undecodable(records_count=2), bounded)


def test_timestamps_out_of_bounds_are_invalid_timestamp_with_one_error_per_record():
    config = {"message.timestamp.before.max.ms": HOUR, "message.timestamp.after.max.ms": 60_000}
    with pytest.raises(RecordValidationError) as refused:
        records_of(batch([b"a", b"b", b"c"], timestamps=[NOW, NOW + 1, NOW - 2 * HOUR]), config)
    assert refused.value.error_name == "INVALID_TIMESTAMP"
    assert str(refused.value) == "One or more records have been rejected due to invalid timestamp"
    assert refused.value.record_errors == [
        (2, f"Timestamp {NOW - 2 * HOUR} of message with offset 2 is out of range. "
            f"The timestamp should be within [{NOW - HOUR}, {NOW + 60_000}]")]
    with pytest.raises(RecordValidationError) as ahead:
        records_of(batch([b"a", b"b"], timestamps=[NOW, NOW + HOUR]), config)
    assert [index for index, _ in ahead.value.record_errors] == [1]
    fine = batch([b"a", b"b"], timestamps=[NOW - 1000, NOW + 1000])
    assert records_of(fine, config)[0] is fine


def test_the_default_after_bound_is_one_hour():
    with pytest.raises(RecordValidationError):
        records_of(batch([b"later"], timestamps=[NOW + 2 * HOUR]))
    soon = batch([b"soon"], timestamps=[NOW + HOUR // 2])
    assert records_of(soon)[0] is soon


def test_a_compacted_topic_refuses_records_without_a_key():
    with pytest.raises(RecordValidationError) as refused:
        records_of(batch([b"a", b"b", b"c"], keys=[None, b"k", None]), {"cleanup.policy": "compact"})
    assert refused.value.error_name == "INVALID_RECORD"
    message = f"Compacted topic cannot accept message without key in topic partition {TP}"
    assert refused.value.record_errors == [(0, message), (2, message)]
    assert str(refused.value) == (
        "One or more records have been rejected due to 2 record errors in total, and only showing the first "
        f"three errors at most: [RecordError(batchIndex=0, message='{message}'), "
        f"RecordError(batchIndex=2, message='{message}')]")


def test_an_invalid_timestamp_names_the_whole_refusal_even_beside_keyless_records():
    config = {"cleanup.policy": "compact", "message.timestamp.after.max.ms": 1000}
    with pytest.raises(RecordValidationError) as refused:
        records_of(batch([b"a", b"b"], keys=[None, b"k"], timestamps=[NOW, NOW + HOUR]), config)
    assert refused.value.error_name == "INVALID_TIMESTAMP"
    assert [index for index, _ in refused.value.record_errors] == [0, 1]


def test_a_producer_may_not_send_log_append_time_batches_to_a_log_append_time_topic():
    lat = batch([b"a", b"b"], timestamp_type=1)
    with pytest.raises(RecordValidationError) as refused:
        records_of(lat, {"message.timestamp.type": "LogAppendTime"})
    assert refused.value.error_name == "INVALID_TIMESTAMP"
    assert refused.value.record_errors == [
        (i, f"Invalid timestamp type in message with offset {i}. Producer should not set timestamp type to "
            "LogAppendTime.") for i in range(2)]
    create_time = batch([b"a"])
    assert records_of(create_time, {"message.timestamp.type": "LogAppendTime"})[0] is create_time


# -- conversion -----------------------------------------------------------------------------------------------


def test_the_topic_codec_rebuilds_the_batch_keeping_producer_fields_and_timestamps():
    sent = batch([b"v%d" % i * 20 for i in range(4)], timestamps=[NOW + i for i in range(4)],
                 compression=CompressionType.LZ4, producer_id=9, producer_epoch=2, base_sequence=40,
                 is_transactional=True)
    buf, batches = records_of(sent, {"compression.type": "zstd"})
    assert buf is not sent
    [(pos, header)] = batches
    assert (pos, header.size) == (0, len(buf))
    stored, records = decode_records(buf)
    assert stored.compression == CompressionType.ZSTD
    assert (stored.producer_id, stored.producer_epoch, stored.base_sequence, stored.is_transactional) == \
        (9, 2, 40, True)
    assert [(r.offset_delta, stored.base_timestamp + r.timestamp_delta, r.value) for r in records] == \
        [(i, NOW + i, b"v%d" % i * 20) for i in range(4)]
    # Sent in the topic's codec already: kept as it is.
    zstd = batch([b"z"], compression=CompressionType.ZSTD)
    assert records_of(zstd, {"compression.type": "zstd"})[0] is zstd


def test_a_rebuilt_batch_is_held_to_max_message_bytes_again():
    sent = batch([b"x" * 2000], compression=CompressionType.GZIP)
    config = {"compression.type": "uncompressed", "max.message.bytes": 1000}
    assert len(sent) < 1000
    with pytest.raises(RecordTooLarge):
        records_of(sent, config)


def test_only_the_batches_in_another_codec_are_rebuilt():
    first, second = batch([b"a"], compression=CompressionType.GZIP), batch([b"b", b"c"])
    buf, batches = records_of(first + second, {"compression.type": "gzip"})
    assert buf[:len(first)] == first
    assert [h.compression for _, h in batches] == [CompressionType.GZIP, CompressionType.GZIP]
    assert [p for p, _ in batches] == [p for p, _ in iter_batch_headers(buf)]


def test_assign_batch_offsets_stamps_offsets_epoch_and_log_append_time():
    buf = batch([b"a", b"b"]) + batch([b"c"])
    batches = validate_batches(buf, LogConfig(), AppendOrigin.CLIENT)
    stamped = assign_batch_offsets(buf, batches, 10, 4, NO_TIMESTAMP)
    assert [(h.base_offset, h.last_offset, h.partition_leader_epoch) for _, h in stamped] == [(10, 11, 4), (12, 12, 4)]
    assert [h.max_timestamp for _, h in stamped] == [NOW, NOW]
    appended = assign_batch_offsets(buf, batches, 10, 4, NOW + 5)
    assert all(h.max_timestamp == NOW + 5 and h.attributes & ATTR_TIMESTAMP_TYPE for _, h in appended)
    for pos, header in appended:
        verify_crc(buf, pos, header)  # the CRC was recomputed


# -- through the log ------------------------------------------------------------------------------------------


def test_the_log_validates_a_clients_records_against_its_own_clock(tmp_path):
    log = PartitionLog(str(tmp_path / "orders-3"), {"message.timestamp.after.max.ms": 1000}, clock_ms=lambda: NOW)
    with pytest.raises(RecordValidationError) as refused:
        log.append(batch([b"a"], timestamps=[NOW + 5000]), leader_epoch=0)
    assert refused.value.error_name == "INVALID_TIMESTAMP"
    assert log.log_end_offset == 0 and log.active_segment.size == 0
    assert log.append(batch([b"a"], timestamps=[NOW + 500]), leader_epoch=0).base_offset == 0
    # The coordinators' own appends and a follower's copies are not checked record by record.
    assert log.append(batch([b"b"], timestamps=[NOW + 5000]), leader_epoch=0,
                      origin=AppendOrigin.COORDINATOR).base_offset == 1
    copied = batch([b"c"], timestamps=[NOW + 5000], base_offset=2, partition_leader_epoch=0)
    log.append(copied, leader_epoch=-1, assign_offsets=False)
    assert log.log_end_offset == 3


def test_the_log_appends_the_rebuilt_batch(tmp_path):
    log = PartitionLog(str(tmp_path / "orders-3"), {"compression.type": "gzip"}, clock_ms=lambda: NOW)
    info = log.append(batch([b"a" * 100, b"b" * 100]), leader_epoch=2)
    assert (info.base_offset, info.last_offset, info.valid_bytes) == (0, 1, log.active_segment.size)
    stored, records = decode_records(bytearray(log.read_slice(0, 1 << 20).read_bytes()))
    assert stored.compression == CompressionType.GZIP and stored.partition_leader_epoch == 2
    assert [r.value for r in records] == [b"a" * 100, b"b" * 100]
