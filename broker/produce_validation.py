"""The record-level checks and conversion of a produced batch that depend on the topic's config.

Kafka's LogValidator does these on the leader before the append: CreateTime timestamps within
`message.timestamp.before.max.ms` / `message.timestamp.after.max.ms` of the broker's clock, no
LogAppendTime batches from producers on a LogAppendTime topic, a key on every record of a
compacted topic, and recompression to the topic's `compression.type` (anything but `producer`).

The common case, a topic with none of these settings, returns the producer's bytes untouched
without decoding a record. Timestamp bounds are first checked against the batch header's base
and max timestamps; records are decoded only when that cannot settle it.
"""

from __future__ import annotations

from kafka_wire.compression import CompressionType
from kafka_wire.record_codec import Record, build_batch, decode_records
from kafka_wire.records import BatchHeader, InvalidRecordBatch, read_batch_header
from log.config import LONG_MAX, LogConfig

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


class RecordValidationError(Exception):
    """Records of a batch refused one by one (Kafka's RecordValidationException): the response
    carries `record_errors` (batch index, message) and the exception's message."""

    def __init__(self, error_name: str, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(message)
        self.error_name = error_name
        self.record_errors = record_errors


def timestamp_bounds(config: LogConfig) -> tuple[int, int]:
    """(before, after) max ms (message.timestamp.difference.max.ms, deprecated by KIP-937, is gone in Kafka 4.0)."""
    return config["message.timestamp.before.max.ms"], config["message.timestamp.after.max.ms"]


def validate_and_convert(batch, config: LogConfig, now_ms: int, topic_partition: str):
    """The bytes to append for one produced batch: `batch` itself when no record-level rule of
    the topic applies, a rebuilt batch when the topic recompresses. Raises RecordValidationError.

    Batches the log refuses anyway (too large, corrupt, control batches, bad offsets) are
    returned unchanged so that the log reports them with Kafka's error and in Kafka's order.
    """
    create_time = config.message_timestamp_type == "CreateTime"
    before, after = timestamp_bounds(config)
    bounded = create_time and (before < LONG_MAX or after < LONG_MAX)
    compacted = "compact" in config.cleanup_policy
    recompress_to = None if config["compression.type"] == "producer" else CODECS[config["compression.type"]]
    if not (bounded or compacted or recompress_to is not None or not create_time):
        return batch
    try:
        header = read_batch_header(batch)
    except InvalidRecordBatch:
        return batch
    if header.size != len(batch) or header.size > config.max_message_bytes or header.is_control \
            or header.base_offset != 0:
        return batch
    recompress = recompress_to is not None and recompress_to != header.compression
    lat_from_producer = not create_time and header.timestamp_type == LOG_APPEND_TIME
    if not (recompress or compacted or lat_from_producer) and \
            (not bounded or _header_within_bounds(header, now_ms, before, after)):
        return batch
    header, records = decode_records(batch)  # verifies the CRC first: a corrupt batch stays CORRUPT_MESSAGE
    timestamps = _record_timestamps(header, records)
    errors = _record_errors(header, records, timestamps, now_ms, create_time, before, after, compacted,
                            topic_partition)
    if errors:
        _raise(errors)
    if not recompress:
        return batch
    return bytearray(_rebuild(header, records, timestamps, recompress_to, config))


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
    shown = ", ".join(f"RecordError(batchIndex={index}, message='{message}')"
                      for index, message in record_errors[:3])
    raise RecordValidationError("INVALID_RECORD",
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

