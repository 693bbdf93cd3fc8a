"""Kafka's primitive wire types: fixed-width ints, varints, (compact) strings and bytes, UUIDs.

Readers take (buf, pos) and return (value, new_pos); writers append to a bytearray. No reader
allocates from a length field before checking the length against the bytes actually present.
"""

from __future__ import annotations

import struct
import uuid

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")

ZERO_UUID = uuid.UUID(int=0)


class DecodeError(ValueError):
    """The bytes do not decode as the expected type (a malformed frame)."""


def need(buf, pos: int, n: int) -> None:
    if n < 0 or pos + n > len(buf):
        raise DecodeError(f"need {n} bytes at {pos}, frame has {len(buf)}")


# -- unsigned varints (protocol lengths, tagged fields) -------------------------------------------


def read_unsigned_varint(buf, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint too long")


def write_unsigned_varint(out: bytearray, value: int) -> None:
    if value < 0:
        raise ValueError("unsigned varint cannot be negative")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def unsigned_varint_size(value: int) -> int:
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


# -- zigzag varints and varlongs (record fields) --------------------------------------------------


def read_varint(buf, pos: int) -> tuple[int, int]:
    raw, pos = read_unsigned_varint(buf, pos)
    if raw > 0xFFFFFFFF:
        raise DecodeError("varint out of int32 range")
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf, pos: int) -> tuple[int, int]:
    raw, pos = read_unsigned_varint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def write_varint(out: bytearray, value: int) -> None:
    write_unsigned_varint(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(out: bytearray, value: int) -> None:
    write_unsigned_varint(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def varint_size(value: int) -> int:
    return unsigned_varint_size(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def varlong_size(value: int) -> int:
    return unsigned_varint_size(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


# -- fixed width ------------------------------------------------------------------------------------


def read_fixed(st: struct.Struct):
    size = st.size
    unpack_from = st.unpack_from

    def read(buf, pos: int):
        if pos + size > len(buf):
            raise DecodeError(f"truncated {size}-byte field at {pos}")
        return unpack_from(buf, pos)[0], pos + size

    return read


read_int8 = read_fixed(INT8)
read_int16 = read_fixed(INT16)
read_uint16 = read_fixed(UINT16)
read_int32 = read_fixed(INT32)
read_uint32 = read_fixed(UINT32)
read_int64 = read_fixed(INT64)
read_float64 = read_fixed(FLOAT64)


def read_bool(buf, pos: int) -> tuple[bool, int]:
    need(buf, pos, 1)
    return buf[pos] != 0, pos + 1


def read_uuid(buf, pos: int) -> tuple[uuid.UUID, int]:
    need(buf, pos, 16)
    return uuid.UUID(bytes=bytes(buf[pos : pos + 16])), pos + 16


def write_uuid(out: bytearray, value: uuid.UUID | None) -> None:
    out += (value or ZERO_UUID).bytes


# -- strings and bytes --------------------------------------------------------------------------------


def _read_len_prefixed(buf, pos: int, length: int, nullable: bool, what: str):
    if length < 0:
        if length == -1 and nullable:
            return None, pos
        raise DecodeError(f"invalid {what} length {length}")
    need(buf, pos, length)
    return buf[pos : pos + length], pos + length


def read_string(buf, pos: int, nullable: bool = False) -> tuple[str | None, int]:
    length, pos = read_int16(buf, pos)
    raw, pos = _read_len_prefixed(buf, pos, length, nullable, "string")
    return _utf8(raw), pos


def read_compact_string(buf, pos: int, nullable: bool = False) -> tuple[str | None, int]:
    length, pos = read_unsigned_varint(buf, pos)
    raw, pos = _read_len_prefixed(buf, pos, length - 1, nullable, "compact string")
    return _utf8(raw), pos


def _utf8(raw) -> str | None:
    if raw is None:
        return None
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"string is not UTF-8: {exc}") from None


def read_bytes(buf, pos: int, nullable: bool = False) -> tuple[bytes | None, int]:
    length, pos = read_int32(buf, pos)
    raw, pos = _read_len_prefixed(buf, pos, length, nullable, "bytes")
    return (None if raw is None else bytes(raw)), pos


def read_compact_bytes(buf, pos: int, nullable: bool = False) -> tuple[bytes | None, int]:
    length, pos = read_unsigned_varint(buf, pos)
    raw, pos = _read_len_prefixed(buf, pos, length - 1, nullable, "compact bytes")
    return (None if raw is None else bytes(raw)), pos


def write_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    data = value.encode("utf-8")
    out += INT16.pack(len(data))
    out += data


def write_compact_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
        return
    data = value.encode("utf-8")
    write_unsigned_varint(out, len(data) + 1)
    out += data


def write_bytes(out: bytearray, value) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    out += INT32.pack(len(value))
    out += value


def write_compact_bytes(out: bytearray, value) -> None:
    if value is None:
        out.append(0)
        return
    write_unsigned_varint(out, len(value) + 1)
    out += value
