"""The checks and conversion of batches appended to a partition (Kafka's LogValidator with
UnifiedLog.analyzeAndValidateRecords), each check in one place.

`PartitionLog.append` runs them in Kafka's order, before anything is written:
1. `validate_batches`, every append, reading batch headers only: each batch whole
   (CORRUPT_MESSAGE); a client's base offset 0 (INVALID_RECORD); the size within
   max.message.bytes, except for a follower's copy (MESSAGE_TOO_LARGE); the CRC (CORRUPT_MESSAGE);
   for a client's, LogValidator.validateBatch: an offset range that matches the record count, no
   control batch, a sequence on an idempotent batch (INVALID_RECORD).
2. `validate_records`, a client's append: the record checks that depend on the topic's config
   (LogValidator.validateRecord: a key on every record of a compacted topic, CreateTime
   timestamps within message.timestamp.before.max.ms / message.timestamp.after.max.ms of the
   broker's clock, no batch a producer marked LogAppendTime on a LogAppendTime topic;
   RecordValidationError with one record error per refused record) and the conversion to the
   topic's compression.type, after which a rebuilt batch is held to max.message.bytes again
   (MESSAGE_TOO_LARGE).
3. `assign_batch_offsets`, a leader's append: base offset, leader epoch and, on a LogAppendTime
   topic, the append time as max timestamp, written into the headers in place.

What stays elsewhere: `PartitionLog.append` keeps the checks against the log's state (a
follower's offsets must continue the log, segment.bytes: RECORD_LIST_TOO_LARGE) and the producer
state keeps sequences, epochs and transactions (log/producer_state.py). The Produce handler
(broker/handlers/p00_produce.py) keeps what is about the request rather than the batch: exactly one
magic-2 batch per partition and zstd only from v7 (ProduceRequest.validateRecords), the acks value,
transactional id and topic authorization, internal topics, min.insync.replicas.

The common case, a topic with none of these settings, decodes no record and keeps the producer's
bytes: timestamp bounds are first checked against the batch header's base and max timestamps, and
records are decoded only when that cannot settle it. The coordinators' own appends are not
checked record by record (their records are ours and always keyed).
"""

from __future__ import annotations

from kafka_wire.compression import CompressionType
from kafka_wire.record_codec import InvalidRecord, Record, build_batch, decode_records
from kafka_wire.records import (
    NO_PRODUCER_ID,
    BatchHeader,
    InvalidRecordBatch,
    read_batch_header,
    set_base_offset,
    set_max_timestamp_log_append,
    set_partition_leader_epoch,
    verify_crc,
)
from log.config import LONG_MAX, LogConfig
from log.errors import RecordTooLarge, RecordValidationError
from log.producer_state import AppendOrigin

NO_TIMESTAMP = -1
CREATE_TIME, LOG_APPEND_TIME = 0, 1

CODECS = {
    "uncompressed": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}
LEVEL_CONFIGS = {
    CompressionType.GZIP: "compression.gzip.level",
    CompressionType.LZ4: "compression.lz4.level",
    CompressionType.ZSTD: "compression.zstd.level",
}

Batches = list[tuple[int, BatchHeader]]


def validate_batches(buf, config: LogConfig, origin: AppendOrigin) -> Batches:
    """Each batch's (position, header) in `buf`, after the header checks Kafka makes before appending."""
    total = len(buf)
    if total == 0:
        raise InvalidRecordBatch("append with no record batches")
    batches = []
    pos = 0
    client = origin is AppendOrigin.CLIENT
    while pos < total:
        header = read_batch_header(buf, pos)
        if header.size > total - pos:
            raise InvalidRecordBatch("record batch is truncated")
        # Kafka's order: base offset, size, CRC (analyzeAndValidateRecords), then the
        # LogValidator's batch checks.
        if client and header.base_offset != 0:
            raise InvalidRecord(f"the base offset of a produced batch must be 0, not {header.base_offset}")
        if origin is not AppendOrigin.REPLICATION:
            _check_size(header, config)
        verify_crc(buf, pos, header)
        if client:
            if header.last_offset_delta < 0 or header.records_count <= 0 \
                    or header.records_count != header.last_offset_delta + 1:
                raise InvalidRecord(
                    f"batch offset range {header.last_offset_delta + 1} does not match its "
                    f"record count {header.records_count}"
                )
            if header.is_control:
                raise InvalidRecord("clients may not write control batches")
            if header.producer_id != NO_PRODUCER_ID and header.base_sequence < 0:
                raise InvalidRecord(f"batch from producer {header.producer_id} has no sequence number")
        batches.append((pos, header))
        pos += header.size
    return batches


def validate_records(buf, batches: Batches, config: LogConfig, now_ms: int,
                     topic_partition: str) -> tuple[object, Batches]:
    """(buffer, batches) to append for a client's validated batches: `buf` and `batches` themselves
    when no record-level rule of the topic applies, rebuilt batches when the topic recompresses.
    Raises RecordValidationError, or RecordTooLarge for a rebuilt batch over max.message.bytes."""
    create_time = config.message_timestamp_type == "CreateTime"
    before, after = config["message.timestamp.before.max.ms"], config["message.timestamp.after.max.ms"]
    bounded = create_time and (before < LONG_MAX or after < LONG_MAX)
    compacted = "compact" in config.cleanup_policy
    recompress_to = None if config["compression.type"] == "producer" else CODECS[config["compression.type"]]
    if not (bounded or compacted or recompress_to is not None or not create_time):
        return buf, batches
    rebuilt: dict[int, bytes] = {}
    for pos, header in batches:
        recompress = recompress_to is not None and recompress_to != header.compression
        lat_from_producer = not create_time and header.timestamp_type == LOG_APPEND_TIME
        if not (recompress or compacted or lat_from_producer) and \
                (not bounded or _header_within_bounds(header, now_ms, before, after)):
            continue
        header, records = decode_records(buf, pos)
        timestamps = _record_timestamps(header, records)
        errors = _record_errors(header, records, timestamps, now_ms, create_time, before, after, compacted,
                                topic_partition)
        if errors:
            _raise(errors)
        if recompress:
            rebuilt[pos] = _rebuild(header, records, timestamps, recompress_to, config)
    if not rebuilt:
        return buf, batches
    converted = bytearray()
    for pos, header in batches:
        converted += rebuilt.get(pos) or buf[pos:pos + header.size]
    converted_batches = []
    pos = 0
    while pos < len(converted):
        header = read_batch_header(converted, pos)
        _check_size(header, config)  # Kafka checks again when the size may have changed
        converted_batches.append((pos, header))
        pos += header.size
    return converted, converted_batches


def assign_batch_offsets(buf, batches: Batches, first_offset: int, leader_epoch: int, log_append_time: int) -> Batches:
    """Stamp the validated batches in place from `first_offset` on, as LogValidator does on the
    leader: base offset and leader epoch (the CRC does not cover them) and, unless
    `log_append_time` is NO_TIMESTAMP, that time as max timestamp (the CRC is recomputed).
    Returns the stamped (position, header)s."""
    next_offset = first_offset
    for pos, header in batches:
        set_base_offset(buf, pos, next_offset)
        set_partition_leader_epoch(buf, pos, leader_epoch)
        if log_append_time != NO_TIMESTAMP:
            set_max_timestamp_log_append(buf, pos, header.size, log_append_time)
        next_offset += header.last_offset_delta + 1
    return [(pos, read_batch_header(buf, pos)) for pos, _ in batches]


def _check_size(header: BatchHeader, config: LogConfig) -> None:
    if header.size > config.max_message_bytes:
        raise RecordTooLarge(
            f"record batch of {header.size} bytes exceeds max.message.bytes {config.max_message_bytes}")


def _header_within_bounds(header: BatchHeader, now_ms: int, before: int, after: int) -> bool:
    """True when the header proves every record's timestamp is within the bounds."""
    if header.timestamp_type == LOG_APPEND_TIME:
        return False
    if header.max_timestamp - now_ms > after:
        return False
    if before == LONG_MAX:
        return True
    # Only the first record's timestamp is in the header; later ones may be older.
    return header.records_count == 1 and now_ms - header.base_timestamp <= before


def _record_timestamps(header: BatchHeader, records: list[Record]) -> list[int]:
    if header.timestamp_type == LOG_APPEND_TIME:
        return [header.max_timestamp] * len(records)
    return [header.base_timestamp + record.timestamp_delta for record in records]


def _record_errors(header, records, timestamps, now_ms, create_time, before, after, compacted,
                   topic_partition) -> list[tuple[str, int, str]]:
    """(error name, batch index, message) for each refused record, as LogValidator.validateRecord."""
    errors = []
    for index, (record, timestamp) in enumerate(zip(records, timestamps)):
        if compacted and record.key is None:
            errors.append(("INVALID_RECORD", index,
                           f"Compacted topic cannot accept message without key in topic partition "
                           f"{topic_partition}"))
        elif create_time and timestamp != NO_TIMESTAMP:
            if now_ms - timestamp > before or timestamp - now_ms > after:
                errors.append(("INVALID_TIMESTAMP", index,
                               f"Timestamp {timestamp} of message with offset "
                               f"{header.base_offset + record.offset_delta} is out of range. The timestamp "
                               f"should be within [{now_ms - before}, {now_ms + after}]"))
        elif header.timestamp_type == LOG_APPEND_TIME:
            errors.append(("INVALID_TIMESTAMP", index,
                           f"Invalid timestamp type in message with offset "
                           f"{header.base_offset + record.offset_delta}. Producer should not set timestamp "
                           "type to LogAppendTime."))
    return errors


def _raise(errors: list[tuple[str, int, str]]) -> None:
    record_errors = [(index, message) for _, index, message in errors]
    if any(name == "INVALID_TIMESTAMP" for name, _, _ in errors):
        raise RecordValidationError("INVALID_TIMESTAMP",
                                    "One or more records have been rejected due to invalid timestamp",
                                    record_errors)
    raise invalid_records(record_errors)


def invalid_records(record_errors: list[tuple[int, str]]) -> RecordValidationError:
    """INVALID_RECORD for the refused records (batch index, message), with Kafka's message."""
    shown = ", ".join(f"RecordError(batchIndex={index}, message='{message}')"
                      for index, message in record_errors[:3])
    return RecordValidationError("INVALID_RECORD",
                                 f"One or more records have been rejected due to {len(record_errors)} record "
                                 f"errors in total, and only showing the first three errors at most: [{shown}]",
                                 record_errors)


def _rebuild(header: BatchHeader, records: list[Record], timestamps: list[int], codec: int,
             config: LogConfig) -> bytes:
    """The batch with the topic's codec, as Kafka's LogValidator.buildRecordsAndAssignOffsets builds
    it: same producer id, epoch, base sequence and transactional flag, same record timestamps,
    keys, values and headers, the base timestamp being the first record's."""
    base_timestamp = timestamps[0]
    rebuilt = [Record(index, timestamp - base_timestamp, record.key, record.value, record.headers,
                      record.attributes)
               for index, (record, timestamp) in enumerate(zip(records, timestamps))]
    level = config[LEVEL_CONFIGS[codec]] if codec in LEVEL_CONFIGS else None
    if level == -1:
        level = None  # gzip's -1: the codec's default level
    return build_batch(
        rebuilt,
        compression=codec,
        compression_level=level,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        timestamp_type=LOG_APPEND_TIME if config.message_timestamp_type == "LogAppendTime" else CREATE_TIME,
        base_timestamp=base_timestamp,
    )
