"""The records inside a RecordBatch v2: decode them, build batches, and transaction markers.

One record (all varints zigzag-encoded, as Kafka's DefaultRecord):

    length          varint   bytes after this field
    attributes      int8     unused, 0
    timestamp_delta varlong  from the batch's base_timestamp
    offset_delta    varint   from the batch's base_offset
    key             varint length (-1 = null) + bytes
    value           varint length (-1 = null) + bytes
    headers         varint count, then per header: varint length + UTF-8 key, varint length + value

The produce path never comes here (the log appends batches without decoding them); compaction,
the group and transaction coordinators, and tests do.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from kafka_wire.compression import DEFAULT_MAX_OUTPUT, compress, decompress
from kafka_wire.primitives import write_unsigned_varint
from kafka_wire.records import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    BATCH_HEADER_SIZE,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    BatchHeader,
    InvalidRecordBatch,
    batch_size_at,
    pack_batch,
    verify_crc,
)

# The smallest record: length, attributes, timestamp delta, offset delta, key length, value
# length and header count, one byte each.
_MIN_RECORD_SIZE = 7
_INT16_PAIR = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0


class InvalidRecord(InvalidRecordBatch):
    """A record inside a batch is malformed (Kafka's InvalidRecordException)."""


@dataclass(slots=True)
class Record:
    """One record of a batch; offsets and timestamps are deltas from the batch header."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    attributes: int = 0


class ControlRecordType(IntEnum):
    """The type in a control record's key (Kafka's ControlRecordType)."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


# -- decoding ---------------------------------------------------------------------------------------------


def decode_records(
    buf, pos: int = 0, *, max_output: int = DEFAULT_MAX_OUTPUT
) -> tuple[BatchHeader, list[Record]]:
    """Verify the batch at `pos`, decompress it, and parse its records.

    Raises InvalidRecordBatch (or a subclass) for anything malformed: a short or corrupt batch,
    an unknown codec, a payload that does not decompress or expands beyond max_output, records
    that do not parse or do not fill the batch exactly.
    """
    header = verify_crc(buf, pos)
    payload = buf[pos + BATCH_HEADER_SIZE : pos + header.size]
    codec = header.attributes & ATTR_COMPRESSION_MASK
    payload = decompress(codec, payload, max_output) if codec else bytes(payload)
    return header, _parse_records(payload, header.records_count)


def decode_batches(
    buf, pos: int = 0, end: int | None = None, *, max_output: int = DEFAULT_MAX_OUTPUT
) -> Iterator[tuple[BatchHeader, list[Record]]]:
    """Decode each whole batch in buf[pos:end]; a partial batch at the end is skipped.

    Fetch responses may end in a partial batch (the log slice is cut at max_bytes), and clients
    ignore it; so do we.
    """
    end = len(buf) if end is None else end
    while True:
        size = batch_size_at(buf, pos)
        if size is None or pos + size > end:
            return
        # A nonsensical length (below the header size) is rejected by decode_records.
        yield decode_records(buf, pos, max_output=max_output)
        pos += size


def iter_records_with_offsets(
    header: BatchHeader, records: Sequence[Record]
) -> Iterator[tuple[int, int, Record]]:
    """Yield (offset, timestamp, record) with the absolute values a consumer sees."""
    base_offset = header.base_offset
    if header.attributes & ATTR_TIMESTAMP_TYPE:
        # LogAppendTime: every record carries the time the broker appended the batch.
        for record in records:
            yield base_offset + record.offset_delta, header.max_timestamp, record
        return
    base_timestamp = header.base_timestamp
    for record in records:
        yield base_offset + record.offset_delta, base_timestamp + record.timestamp_delta, record


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag varint/varlong at pos; raises IndexError when the bytes run out (caller converts)."""
    byte = buf[pos]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1
    raw = byte & 0x7F
    shift = 7
    while True:
        pos += 1
        byte = buf[pos]
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos + 1
        shift += 7
        if shift > 63:
            raise InvalidRecord("varint longer than 10 bytes")


def _parse_records(data: bytes, count: int) -> list[Record]:
    # Compaction and coordinator replay decode every record, so the single-byte varint (the common
    # case for everything but timestamps and long values) is read inline rather than by a call.
    end = len(data)
    if count < 0 or count * _MIN_RECORD_SIZE > end:
        raise InvalidRecord(f"record count {count} does not fit in {end} bytes of records")
    records: list[Record] = []
    append = records.append
    read_varint = _read_varint
    pos = 0
    try:
        for _ in range(count):
            byte = data[pos]
            if byte < 0x80:
                length = (byte >> 1) ^ -(byte & 1)
                pos += 1
            else:
                length, pos = read_varint(data, pos)
            record_end = pos + length
            if length < _MIN_RECORD_SIZE - 1 or record_end > end:
                raise InvalidRecord(f"invalid record size {length}")
            attributes = data[pos]
            timestamp_delta, pos = read_varint(data, pos + 1)
            byte = data[pos]
            if byte < 0x80:
                offset_delta = (byte >> 1) ^ -(byte & 1)
                pos += 1
            else:
                offset_delta, pos = read_varint(data, pos)
            byte = data[pos]
            if byte < 0x80:
                size = (byte >> 1) ^ -(byte & 1)
                pos += 1
            else:
                size, pos = read_varint(data, pos)
            if size < 0:
                key = None
            else:
                key = data[pos : pos + size]
                pos += size
            byte = data[pos]
            if byte < 0x80:
                size = (byte >> 1) ^ -(byte & 1)
                pos += 1
            else:
                size, pos = read_varint(data, pos)
            if size < 0:
                value = None
            else:
                value = data[pos : pos + size]
                pos += size
            headers = []
            if data[pos] == 0:
                pos += 1
            else:
                header_count, pos = read_varint(data, pos)
                if header_count < 0 or header_count * 2 > record_end - pos:
                    raise InvalidRecord(f"invalid number of record headers {header_count}")
                for _ in range(header_count):
                    size, pos = read_varint(data, pos)
                    if size < 0:
                        raise InvalidRecord("negative record header key size")
                    # surrogateescape: Java decodes header keys leniently, and compaction must be
                    # able to write back exactly the bytes it read.
                    header_key = data[pos : pos + size].decode("utf-8", "surrogateescape")
                    pos += size
                    size, pos = read_varint(data, pos)
                    if size < 0:
                        headers.append((header_key, None))
                    else:
                        headers.append((header_key, data[pos : pos + size]))
                        pos += size
            if pos != record_end:
                read = length + pos - record_end
                raise InvalidRecord(f"invalid record size: expected {length} bytes, read {read}")
            append(Record(offset_delta, timestamp_delta, key, value, headers, attributes))
    except IndexError:
        raise InvalidRecord("record extends past the end of the batch") from None
    if pos != end:
        raise InvalidRecord(f"{end - pos} bytes remain after the batch's {count} records")
    return records


# -- encoding ---------------------------------------------------------------------------------------------


def _write_zigzag(out: bytearray, value: int) -> None:
    # Zigzag as a 64-bit varlong; for int32 values it produces the same bytes as a varint.
    write_unsigned_varint(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def encode_records(records: Sequence[Record]) -> bytes:
    """The uncompressed records blob of a batch."""
    out = bytearray()
    body = bytearray()
    for record in records:
        body.clear()
        body.append(record.attributes & 0xFF)
        _write_zigzag(body, record.timestamp_delta)
        _write_zigzag(body, record.offset_delta)
        for data in (record.key, record.value):
            if data is None:
                body.append(1)  # zigzag(-1)
            else:
                _write_zigzag(body, len(data))
                body += data
        _write_zigzag(body, len(record.headers))
        for header_key, header_value in record.headers:
            if isinstance(header_key, str):
                header_key = header_key.encode("utf-8", "surrogateescape")
            _write_zigzag(body, len(header_key))
            body += header_key
            if header_value is None:
                body.append(1)
            else:
                _write_zigzag(body, len(header_value))
                body += header_value
        _write_zigzag(out, len(body))
        out += body
    return bytes(out)


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    compression: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp_type: int = 0,
    base_timestamp: int | None = None,
    compression_level: int | None = None,
) -> bytes:
    """A complete RecordBatch v2 holding `records` (offset deltas strictly increasing).

    base_timestamp defaults to now (ms); max_timestamp is derived from the records' deltas.
    timestamp_type 1 marks the batch LogAppendTime.
    """
    if not records:
        raise ValueError("a record batch needs at least one record")
    previous = -1
    for record in records:
        if record.offset_delta <= previous:
            raise ValueError("record offset deltas must be non-negative and strictly increasing")
        previous = record.offset_delta
    if base_timestamp is None:
        base_timestamp = time.time_ns() // 1_000_000
    blob = encode_records(records)
    if compression:
        blob = compress(compression, blob, compression_level)
    attributes = compression & ATTR_COMPRESSION_MASK
    if timestamp_type:
        attributes |= ATTR_TIMESTAMP_TYPE
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    if is_control:
        attributes |= ATTR_CONTROL
    return pack_batch(
        blob,
        records_count=len(records),
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=attributes,
        last_offset_delta=previous,
        base_timestamp=base_timestamp,
        max_timestamp=base_timestamp + max(record.timestamp_delta for record in records),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )


# -- control records (transaction markers) -----------------------------------------------------------------


def encode_control_key(record_type: ControlRecordType, version: int = CONTROL_KEY_VERSION) -> bytes:
    return _INT16_PAIR.pack(version, record_type)


def decode_control_key(key: bytes | None) -> tuple[int, ControlRecordType]:
    """(version, type) of a control record's key; a type we do not know reads as UNKNOWN."""
    if key is None or len(key) < _INT16_PAIR.size:
        raise InvalidRecord("control record key shorter than 4 bytes")
    version, raw_type = _INT16_PAIR.unpack_from(key)
    try:
        return version, ControlRecordType(raw_type)
    except ValueError:
        return version, ControlRecordType.UNKNOWN


def encode_end_transaction_marker(coordinator_epoch: int, version: int = END_TXN_MARKER_VERSION) -> bytes:
    return _END_TXN_VALUE.pack(version, coordinator_epoch)


def decode_end_transaction_marker(value: bytes | None) -> tuple[int, int]:
    """(version, coordinator_epoch) of an ABORT or COMMIT marker's value."""
    if value is None or len(value) < _END_TXN_VALUE.size:
        raise InvalidRecord("end transaction marker value shorter than 6 bytes")
    return _END_TXN_VALUE.unpack_from(value)


def build_control_batch(
    commit: bool,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    base_offset: int = 0,
    timestamp: int | None = None,
    *,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """The batch a transaction marker is written as: transactional, control, one record."""
    record_type = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    marker = Record(0, 0, encode_control_key(record_type), encode_end_transaction_marker(coordinator_epoch))
    return build_batch(
        [marker],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
        base_timestamp=timestamp,
    )
