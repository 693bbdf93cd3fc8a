"""Record batch compression codecs, by the attribute id Kafka stores in a batch (bits 0-2).

    0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd

What we write is what the Java client writes, so every Kafka client can read it back:
gzip members (GZIPOutputStream), snappy in the xerial framing (snappy-java's
SnappyOutputStream, 32 KiB blocks), LZ4 frames with independent 64 KiB blocks and no content
size (Kafka's Lz4BlockOutputStream; its reader cannot follow linked blocks), zstd frames.

What we read is whatever any client writes: raw snappy as well as xerial, LZ4 frames with or
without content size and checksums, zstd frames without a content size (the Java client streams
them). Every decompression is bounded by `max_output` so a small hostile batch cannot expand into
gigabytes ("zip bomb"); exceeding it, or any malformed input, raises DecompressionError.

The codec libraries (cramjam, lz4, zstandard) are imported on first use: a broker whose clients
never compress does not load them (start-up time).
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum

from kafka_wire.records import InvalidRecordBatch


class CompressionType(IntEnum):
    """Kafka's codec ids (CompressionType.id in the Java client)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# One batch should never need more; callers that allow larger batches pass their own bound.
DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024

# Kafka's default levels when a topic or producer does not set compression.<codec>.level (KIP-390).
DEFAULT_LEVEL = {CompressionType.GZIP: 6, CompressionType.LZ4: 9, CompressionType.ZSTD: 3}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
XERIAL_BLOCK_SIZE = 32 * 1024
_INT32 = struct.Struct(">i")

_ZSTD_MAGIC = 0xFD2FB528

# Streaming decompressors produce output in steps of this size: a small batch must not pay for
# allocating max_output up front.
_OUTPUT_STEP = 256 * 1024


class DecompressionError(InvalidRecordBatch):
    """Compressed records that cannot be decompressed, or would expand beyond the allowed size."""


class UnknownCompressionCodec(InvalidRecordBatch):
    """A batch names a codec id Kafka does not define (5-7)."""


def compress(codec: int, data, level: int | None = None) -> bytes:
    """Compress a records blob with the codec whose attribute id is `codec`."""
    if codec == CompressionType.NONE:
        return bytes(data)
    if codec == CompressionType.GZIP:
        # wbits 31 = gzip container, as GZIPOutputStream writes; mtime 0 keeps output reproducible.
        level = DEFAULT_LEVEL[CompressionType.GZIP] if level is None else level
        compressor = zlib.compressobj(level, zlib.DEFLATED, 31)
        out = bytearray(compressor.compress(data) + compressor.flush())
        out[9] = 0xFF  # header OS byte "unknown", as java.util.zip writes it (zlib says 3, Unix)
        return bytes(out)
    if codec == CompressionType.SNAPPY:
        return _xerial_compress(data)
    if codec == CompressionType.LZ4:
        import lz4.frame

        return lz4.frame.compress(
            data,
            compression_level=DEFAULT_LEVEL[CompressionType.LZ4] if level is None else level,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
    if codec == CompressionType.ZSTD:
        import zstandard

        level = DEFAULT_LEVEL[CompressionType.ZSTD] if level is None else level
        # Framed as the Java client's streaming ZstdOutputStream frames it: no content size, the
        # data flushed as blocks, then an empty last block.
        compressor = zstandard.ZstdCompressor(level=level, write_content_size=False).compressobj()
        out = compressor.compress(data) + compressor.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        return out + compressor.flush()
    raise UnknownCompressionCodec(f"unknown compression codec {codec}")


def decompress(codec: int, data, max_output: int = DEFAULT_MAX_OUTPUT) -> bytes:
    """Decompress a records blob; raises DecompressionError when malformed or larger than max_output."""
    if codec == CompressionType.NONE:
        if len(data) > max_output:
            raise DecompressionError(f"records exceed {max_output} bytes")
        return bytes(data)
    if codec == CompressionType.GZIP:
        return _gzip_decompress(data, max_output)
    if codec == CompressionType.SNAPPY:
        return _snappy_decompress(data, max_output)
    if codec == CompressionType.LZ4:
        return _lz4_decompress(data, max_output)
    if codec == CompressionType.ZSTD:
        return _zstd_decompress(data, max_output)
    raise UnknownCompressionCodec(f"unknown compression codec {codec}")


# -- gzip --------------------------------------------------------------------------------------------


def _gzip_decompress(data, max_output: int) -> bytes:
    # GZIPInputStream reads concatenated members, so we do too. wbits 47 also accepts a bare zlib
    # stream, which costs nothing and some old writers produced.
    chunks = []
    produced = 0
    remaining = bytes(data)
    while True:
        decompressor = zlib.decompressobj(47)
        try:
            chunk = decompressor.decompress(remaining, max_output - produced + 1)
        except zlib.error as exc:
            raise DecompressionError(f"gzip: {exc}") from None
        produced += len(chunk)
        if produced > max_output:
            raise DecompressionError(f"gzip records expand beyond {max_output} bytes")
        chunks.append(chunk)
        if not decompressor.eof:
            raise DecompressionError("gzip: truncated stream")
        remaining = decompressor.unused_data
        if not remaining.startswith(b"\x1f\x8b"):
            # Trailing padding after the last member is ignored, as GZIPInputStream does.
            return b"".join(chunks)


# -- snappy --------------------------------------------------------------------------------------------


def _xerial_compress(data) -> bytes:
    import cramjam

    view = memoryview(data)
    out = bytearray(_XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1))
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = cramjam.snappy.compress_raw(view[start : start + XERIAL_BLOCK_SIZE])
        out += _INT32.pack(len(block))
        out += block
    return bytes(out)


def _snappy_decompress(data, max_output: int) -> bytes:
    data = bytes(data)
    if not data.startswith(XERIAL_MAGIC):
        # snappy-java's SnappyInputStream falls back to a raw block when the magic is absent.
        if _snappy_uncompressed_length(data) > max_output:
            raise DecompressionError(f"snappy records expand beyond {max_output} bytes")
        return _snappy_raw_block(data)
    end = len(data)
    pos = 0
    chunks = []
    produced = 0
    while pos < end:
        if data.startswith(XERIAL_MAGIC, pos):
            # A stream header, at the start or again where two streams were concatenated.
            if end - pos < _XERIAL_HEADER.size:
                raise DecompressionError("snappy: truncated xerial header")
            pos += _XERIAL_HEADER.size
            continue
        if end - pos < 4:
            raise DecompressionError("snappy: truncated xerial block length")
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or length > end - pos:
            raise DecompressionError(f"snappy: xerial block length {length} exceeds the data")
        block = data[pos : pos + length]
        pos += length
        produced += _snappy_uncompressed_length(block)
        if produced > max_output:
            raise DecompressionError(f"snappy records expand beyond {max_output} bytes")
        chunks.append(_snappy_raw_block(block))
    return b"".join(chunks)


def _snappy_uncompressed_length(block: bytes) -> int:
    # A raw block starts with its uncompressed length (little-endian base-128 varint, at most
    # 32 bits): reading it lets us refuse a block before the decompressor allocates for it.
    length = 0
    for i in range(min(len(block), 5)):
        byte = block[i]
        length |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return length
    raise DecompressionError("snappy: malformed block length")


def _snappy_raw_block(block: bytes) -> bytes:
    import cramjam

    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as exc:
        raise DecompressionError(f"snappy: {exc}") from None


# -- lz4 --------------------------------------------------------------------------------------------------


def _lz4_decompress(data, max_output: int) -> bytes:
    # The streaming decompressor with max_length never allocates from the frame's declared
    # content size (lz4.frame.decompress would, and a hostile size is a MemoryError).
    import lz4.frame

    decompressor = lz4.frame.LZ4FrameDecompressor()
    chunks = []
    produced = 0
    pending = data
    while True:
        try:
            chunk = decompressor.decompress(pending, max_length=min(max_output + 1 - produced, _OUTPUT_STEP))
        except RuntimeError as exc:
            raise DecompressionError(f"lz4: {exc}") from None
        pending = b""
        produced += len(chunk)
        if produced > max_output:
            raise DecompressionError(f"lz4 records expand beyond {max_output} bytes")
        chunks.append(chunk)
        if decompressor.eof or decompressor.needs_input:
            break
    if not decompressor.eof:
        raise DecompressionError("lz4: truncated frame")
    return b"".join(chunks)


# -- zstd -------------------------------------------------------------------------------------------------


def _zstd_decompress(data, max_output: int) -> bytes:
    import zstandard

    data = bytes(data)
    # The stream reader returns a truncated frame's prefix without complaint, so check first that
    # every frame is whole; walking block headers is cheap next to decompressing them.
    _check_zstd_frames_whole(data)
    chunks = []
    produced = 0
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
        while True:
            chunk = reader.read(min(max_output + 1 - produced, _OUTPUT_STEP))
            if not chunk:
                break
            produced += len(chunk)
            if produced > max_output:
                raise DecompressionError(f"zstd records expand beyond {max_output} bytes")
            chunks.append(chunk)
    except zstandard.ZstdError as exc:
        raise DecompressionError(f"zstd: {exc}") from None
    return b"".join(chunks)


_FCS_FIELD_SIZE = (0, 2, 4, 8)
_DICT_ID_FIELD_SIZE = (0, 1, 2, 4)


def _check_zstd_frames_whole(data: bytes) -> None:
    """Walk the frame and block headers (RFC 8878) and fail unless every frame ends in the data."""
    end = len(data)
    pos = 0
    if end == 0:
        raise DecompressionError("zstd: empty input")
    while pos < end:
        if end - pos < 5:
            raise DecompressionError("zstd: truncated frame header")
        magic = int.from_bytes(data[pos : pos + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame: magic, 4-byte size, payload
            if end - pos < 8:
                raise DecompressionError("zstd: truncated skippable frame")
            pos += 8 + int.from_bytes(data[pos + 4 : pos + 8], "little")
            if pos > end:
                raise DecompressionError("zstd: truncated skippable frame")
            continue
        if magic != _ZSTD_MAGIC:
            raise DecompressionError("zstd: bad frame magic")
        descriptor = data[pos + 4]
        single_segment = descriptor & 0x20
        fcs_size = _FCS_FIELD_SIZE[descriptor >> 6]
        if fcs_size == 0 and single_segment:
            fcs_size = 1
        pos += 5 + (0 if single_segment else 1) + _DICT_ID_FIELD_SIZE[descriptor & 0x03] + fcs_size
        while True:
            if end - pos < 3:
                raise DecompressionError("zstd: truncated block")
            block_header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
            block_type = (block_header >> 1) & 0x03
            pos += 3 + (1 if block_type == 1 else block_header >> 3)  # an RLE block holds one byte
            if block_header & 1:
                break
        if descriptor & 0x04:
            pos += 4  # content checksum
        if pos > end:
            raise DecompressionError("zstd: truncated frame")
