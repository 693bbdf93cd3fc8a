"""Record batch codecs: round trips, the framings other clients write, and bounded output."""

import gzip
import os
import struct

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.compression import (
    XERIAL_MAGIC,
    CompressionType,
    DecompressionError,
    UnknownCompressionCodec,
    compress,
    decompress,
)
from kafka_wire.records import InvalidRecordBatch

CODECS = list(CompressionType)
COMPRESSED = [c for c in CompressionType if c != CompressionType.NONE]

# Compressible but not trivial, and long enough to span several snappy (32 KiB) and lz4 (64 KiB) blocks.
PATTERNED = bytes((i * 7) % 251 for i in range(200_000))
PAYLOADS = [b"", b"x", b"hello kafka " * 100, os.urandom(70_000), PATTERNED]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("payload", PAYLOADS, ids=["empty", "one", "text", "random", "patterned"])
def test_round_trip(codec, payload):
    assert decompress(codec, compress(codec, payload)) == payload


@pytest.mark.parametrize("codec", COMPRESSED)
def test_round_trip_at_other_levels(codec):
    for level in {CompressionType.GZIP: (1, 9), CompressionType.LZ4: (1, 17), CompressionType.ZSTD: (1, 19)}.get(
        codec, (None,)
    ):
        assert decompress(codec, compress(codec, PATTERNED, level)) == PATTERNED


def test_unknown_codec_is_an_invalid_batch():
    with pytest.raises(UnknownCompressionCodec):
        decompress(5, b"abc")
    with pytest.raises(UnknownCompressionCodec):
        compress(7, b"abc")
    assert issubclass(UnknownCompressionCodec, InvalidRecordBatch)
    assert issubclass(DecompressionError, InvalidRecordBatch)


# -- gzip ---------------------------------------------------------------------------------------------


def test_gzip_is_a_gzip_member_any_reader_understands():
    out = compress(CompressionType.GZIP, PATTERNED)
    assert out[:3] == b"\x1f\x8b\x08"
    assert out[9] == 0xFF  # OS "unknown", as java.util.zip.GZIPOutputStream writes
    assert gzip.decompress(out) == PATTERNED


def test_gzip_reads_concatenated_members():
    data = gzip.compress(b"first ") + gzip.compress(b"second")
    assert decompress(CompressionType.GZIP, data) == b"first second"


# -- snappy ---------------------------------------------------------------------------------------------


def _parse_xerial(data: bytes) -> list[bytes]:
    magic, version, compatible = struct.unpack_from(">8sii", data)
    assert (magic, version, compatible) == (XERIAL_MAGIC, 1, 1)
    blocks, pos = [], 16
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos)
        blocks.append(data[pos + 4 : pos + 4 + length])
        pos += 4 + length
    assert pos == len(data)
    return blocks


def test_snappy_writes_xerial_framing_in_32k_blocks():
    blocks = _parse_xerial(compress(CompressionType.SNAPPY, PATTERNED))
    assert len(blocks) == 7  # ceil(200000 / 32768)
    plain = [bytes(cramjam.snappy.decompress_raw(block)) for block in blocks]
    assert [len(p) for p in plain] == [32768] * 6 + [200_000 - 6 * 32768]
    assert b"".join(plain) == PATTERNED


def _xerial(*chunks: bytes) -> bytes:
    """Xerial framing written independently of our compressor: header, then [int32 length, raw block]*."""
    out = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    for chunk in chunks:
        block = bytes(cramjam.snappy.compress_raw(chunk))
        out += struct.pack(">i", len(block)) + block
    return out


def test_snappy_reads_xerial_framing():
    assert decompress(CompressionType.SNAPPY, _xerial(b"abc" * 1000, b"", b"tail")) == b"abc" * 1000 + b"tail"


def test_snappy_reads_concatenated_xerial_streams():
    assert decompress(CompressionType.SNAPPY, _xerial(b"one ") + _xerial(b"two")) == b"one two"


def test_snappy_reads_a_raw_block():
    raw = bytes(cramjam.snappy.compress_raw(PATTERNED))
    assert decompress(CompressionType.SNAPPY, raw) == PATTERNED


@pytest.mark.parametrize("cut", [3, 10, 17, 21])
def test_snappy_truncated_xerial_is_an_error(cut):
    data = _xerial(b"abcdefgh" * 100)
    with pytest.raises(DecompressionError):
        decompress(CompressionType.SNAPPY, data[: len(data) - cut] if cut > 16 else data[:cut])


# -- lz4 ---------------------------------------------------------------------------------------------------


def test_lz4_writes_independent_64k_blocks_without_content_size():
    out = compress(CompressionType.LZ4, PATTERNED)
    assert out[:4] == b"\x04\x22\x4d\x18"
    # FLG: version 01, block independence, no block checksum, no content size, no content checksum
    # (what Kafka's Lz4BlockOutputStream writes; its reader rejects linked blocks). BD: 64 KiB blocks.
    assert out[4] == 0x60
    assert out[5] == 0x40


@pytest.mark.parametrize("block_linked", [False, True])
@pytest.mark.parametrize("content_checksum", [False, True])
@pytest.mark.parametrize("store_size", [False, True])
@pytest.mark.parametrize("block_checksum", [False, True])
@pytest.mark.parametrize("block_size", [lz4.frame.BLOCKSIZE_MAX64KB, lz4.frame.BLOCKSIZE_MAX4MB])
def test_lz4_reads_every_frame_flavour(block_linked, content_checksum, store_size, block_checksum, block_size):
    # Java and kafka-python write independent 64 KiB blocks; librdkafka stores the content size and
    # a checksum; kafkajs codecs differ again. Every valid frame must read.
    data = lz4.frame.compress(
        PATTERNED,
        block_linked=block_linked,
        content_checksum=content_checksum,
        store_size=store_size,
        block_checksum=block_checksum,
        block_size=block_size,
    )
    assert decompress(CompressionType.LZ4, data) == PATTERNED


def test_lz4_hostile_content_size_is_refused_without_allocating_it():
    frame = bytearray(lz4.frame.compress(b"abc" * 1000, store_size=True, block_linked=False))
    struct.pack_into("<Q", frame, 6, 2**62)  # claim 4 EiB of content
    # Try every header checksum byte, so one of them passes the descriptor check.
    for header_checksum in range(256):
        frame[14] = header_checksum
        with pytest.raises(DecompressionError):
            decompress(CompressionType.LZ4, bytes(frame))


# -- zstd ---------------------------------------------------------------------------------------------------


def test_zstd_writes_frames_without_content_size_as_java_does():
    out = compress(CompressionType.ZSTD, PATTERNED)
    assert zstandard.get_frame_parameters(out).content_size == zstandard.CONTENTSIZE_UNKNOWN


def test_zstd_reads_streamed_frames_without_content_size():
    compressor = zstandard.ZstdCompressor(write_content_size=False, write_checksum=True).compressobj()
    data = compressor.compress(PATTERNED) + compressor.flush()
    assert zstandard.get_frame_parameters(data).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(CompressionType.ZSTD, data) == PATTERNED


def test_zstd_reads_frames_with_content_size_and_concatenated_frames():
    first = zstandard.ZstdCompressor().compress(b"first ")
    second = zstandard.ZstdCompressor().compress(b"second")
    assert decompress(CompressionType.ZSTD, first + second) == b"first second"


# -- malformed input and bounds ---------------------------------------------------------------------------


@pytest.mark.parametrize("codec", COMPRESSED)
def test_truncated_input_is_an_error(codec):
    data = compress(codec, PATTERNED)
    for cut in (1, 5, len(data) // 2, len(data) - 1):
        with pytest.raises(DecompressionError):
            decompress(codec, data[:cut])


@pytest.mark.parametrize("codec", CODECS)
def test_output_is_bounded(codec):
    bomb = compress(codec, bytes(4 * 1024 * 1024))
    with pytest.raises(DecompressionError):
        decompress(codec, bomb, max_output=1024 * 1024)
    assert len(decompress(codec, bomb, max_output=4 * 1024 * 1024)) == 4 * 1024 * 1024


def test_snappy_refuses_a_block_claiming_more_than_the_bound_before_decompressing():
    # A raw block's preamble claims 2**31 bytes; nothing else follows.
    with pytest.raises(DecompressionError):
        decompress(CompressionType.SNAPPY, b"\x80\x80\x80\x80\x08\x00")


@settings(max_examples=300, deadline=None)
@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=300))
def test_random_bytes_only_raise_decompression_errors(codec, data):
    try:
        decompress(codec, data, max_output=1 << 20)
    except DecompressionError:
        pass


@settings(max_examples=300, deadline=None)
@given(
    codec=st.sampled_from(COMPRESSED),
    edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=4),
    keep=st.floats(0.0, 1.0),
)
def test_damaged_streams_only_raise_decompression_errors(codec, edits, keep):
    # Random bytes rarely get past a format's magic; damage a valid stream instead.
    data = bytearray(compress(codec, b"kafka record payload " * 40 + bytes(range(256))))
    for position, byte in edits:
        data[position % len(data)] = byte
    data = data[: max(1, int(len(data) * keep))]
    try:
        decompress(codec, bytes(data), max_output=1 << 20)
    except DecompressionError:
        pass
