"""RecordBatch v2 (magic 2): the 61-byte batch header, CRC-32C, and in-place offset assignment.

Layout of one batch (all big-endian):

    0  base_offset            int64   (not covered by the CRC: the broker rewrites it)
    8  batch_length           int32   bytes after this field
   12  partition_leader_epoch int32   (not covered by the CRC)
   16  magic                  int8    = 2
   17  crc                    uint32  CRC-32C of bytes 21..end
   21  attributes             int16   bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control
   23  last_offset_delta      int32
   27  base_timestamp         int64
   35  max_timestamp          int64
   43  producer_id            int64
   51  producer_epoch         int16
   53  base_sequence          int32
   57  records_count          int32
   61  records...

This module reads and patches headers only; decoding the records themselves lives in
`kafka_wire.record_codec` so that the append path never touches per-record data.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

BATCH_HEADER_SIZE = 61
# base_offset + batch_length: the prefix every batch (of any magic) starts with.
LOG_OVERHEAD = 12
MAGIC_V2 = 2

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08  # 1 = LogAppendTime
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_PREFIX = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")


class InvalidRecordBatch(ValueError):
    """The bytes are not a well-formed RecordBatch v2 (maps to CORRUPT_MESSAGE or INVALID_RECORD)."""


class UnsupportedMagic(InvalidRecordBatch):
    """A batch with a magic other than 2 (old message formats are not served)."""


class CorruptBatch(InvalidRecordBatch):
    """The CRC-32C stored in the batch does not match its bytes (CORRUPT_MESSAGE)."""


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed header of one RecordBatch v2, as read from bytes."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return 1 if self.attributes & ATTR_TIMESTAMP_TYPE else 0

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        # Sequences wrap at int32 max, as Kafka's DefaultRecordBatch.incrementSequence does.
        return (self.base_sequence + self.last_offset_delta) % (2**31)


def read_batch_header(buf, pos: int = 0) -> BatchHeader:
    """Parse the 61-byte header at `pos`. Raises InvalidRecordBatch when it cannot be a v2 batch."""
    if len(buf) - pos < BATCH_HEADER_SIZE:
        if len(buf) - pos >= 17 and buf[pos + 16] != MAGIC_V2:
            raise UnsupportedMagic(f"record batch magic {buf[pos + 16]} is not supported")
        raise InvalidRecordBatch("record batch shorter than its header")
    header = BatchHeader(*_HEADER.unpack_from(buf, pos))
    if header.magic != MAGIC_V2:
        raise UnsupportedMagic(f"record batch magic {header.magic} is not supported")
    if header.batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
        raise InvalidRecordBatch(f"record batch length {header.batch_length} is too small")
    return header


def batch_size_at(buf, pos: int) -> int | None:
    """Total size of the batch starting at `pos`, or None when fewer than 12 bytes remain."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    return _INT32.unpack_from(buf, pos + 8)[0] + LOG_OVERHEAD


def crc32c(data) -> int:
    """CRC-32C of `data` (bytes-like). The crc32c package is imported on the first call, not with
    this module: its import reads its own version through importlib.metadata (about 50 ms of CPU,
    a fifth of a broker's start), which a broker need not pay before its listener is up. The first
    call replaces this function with the package's."""
    global crc32c
    from crc32c import crc32c as implementation

    crc32c = implementation
    return implementation(data)


def compute_crc(buf, pos: int, size: int) -> int:
    """CRC-32C over attributes..end of the batch at `pos` (the bytes Kafka's CRC covers)."""
    view = memoryview(buf)[pos + 21 : pos + size]
    return crc32c(view)


def verify_crc(buf, pos: int = 0, header: BatchHeader | None = None) -> BatchHeader:
    """Check the batch at `pos` is whole and its CRC matches; return its header."""
    header = header or read_batch_header(buf, pos)
    if len(buf) - pos < header.size:
        raise InvalidRecordBatch("record batch is truncated")
    if compute_crc(buf, pos, header.size) != header.crc:
        raise CorruptBatch("record batch CRC mismatch")
    return header


def iter_batch_headers(buf, pos: int = 0, end: int | None = None):
    """Yield (position, header) for each whole batch in buf[pos:end]; stops at a partial tail."""
    end = len(buf) if end is None else end
    while end - pos >= BATCH_HEADER_SIZE:
        header = read_batch_header(buf, pos)
        if pos + header.size > end:
            return
        yield pos, header
        pos += header.size


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Assign offsets to a batch in place; the CRC does not cover this field."""
    _INT64.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Stamp the leader epoch in place; the CRC does not cover this field."""
    _INT32.pack_into(buf, pos + 12, epoch)


def set_max_timestamp_log_append(buf: bytearray | memoryview, pos: int, size: int, now_ms: int) -> None:
    """Rewrite a batch for message.timestamp.type=LogAppendTime and fix its CRC (as Kafka does)."""
    attributes = struct.unpack_from(">h", buf, pos + 21)[0] | ATTR_TIMESTAMP_TYPE
    struct.pack_into(">h", buf, pos + 21, attributes)
    _INT64.pack_into(buf, pos + 35, now_ms)
    _UINT32.pack_into(buf, pos + 17, compute_crc(buf, pos, size))


def pack_batch(
    records: bytes | bytearray | memoryview,
    *,
    records_count: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    attributes: int = 0,
    last_offset_delta: int = 0,
    base_timestamp: int = -1,
    max_timestamp: int = -1,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
) -> bytes:
    """Wrap an encoded (and already compressed) records blob in a v2 header with length and CRC.

    An empty blob with records_count 0 is the empty batch Kafka's log cleaner keeps so that a
    producer's last sequence survives compaction.
    """
    out = bytearray(BATCH_HEADER_SIZE + len(records))
    _HEADER.pack_into(
        out,
        0,
        base_offset,
        BATCH_HEADER_SIZE - LOG_OVERHEAD + len(records),
        partition_leader_epoch,
        MAGIC_V2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        records_count,
    )
    out[BATCH_HEADER_SIZE:] = records
    _UINT32.pack_into(out, 17, compute_crc(out, 0, len(out)))
    return bytes(out)
