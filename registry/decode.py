"""Reading a key or value written in the Schema Registry's wire format: a magic byte 0, the
schema id (4 bytes, big-endian), then the data, which for

    AVRO      is the record in Avro's binary encoding;
    JSON      is the JSON text;
    PROTOBUF  is the message indexes (a zigzag varint count, then a zigzag varint per index: the
              path of the message type among the file's top-level messages and their nested ones;
              a count of 0 alone stands for [0], the first message), then the protobuf binary.

`split` finds the id, `decode` turns the data into a JSON value with the registry's parsed schema
(schemas.ParsedSchema). For the console's message browser (console/registry_views.py).
"""

from __future__ import annotations

import datetime
import decimal
import functools
import io
import json
import struct
import uuid

from .schemas import AVRO, JSON, PROTOBUF, ParsedSchema

MAGIC = 0
HEADER = 5  # the magic byte and the schema id


class DecodeError(ValueError):
    """The data does not read as the schema says."""


def split(data: bytes | None) -> tuple[int, bytes] | None:
    """(schema id, data) of bytes in the wire format; None for bytes that are not."""
    if data is None or len(data) < HEADER or data[0] != MAGIC:
        return None
    return int.from_bytes(data[1:HEADER], "big"), bytes(data[HEADER:])


def prepare(parsed: ParsedSchema) -> None:
    """What `decode` needs built first, on the caller's thread: a Protobuf schema's descriptors,
    which protoc compiles while it points the process's stderr at a file (protobuf.py), a thing
    two threads must not do at once. Raises DecodeError where they do not compile."""
    if parsed.schema_type == PROTOBUF:
        from .protobuf import ProtobufError

        try:
            _pool(parsed.canonical, tuple(sorted(parsed.named.items())))
        except ProtobufError as exc:
            raise DecodeError(f"the schema does not compile with its imports: {exc}") from None


def decode(parsed: ParsedSchema, data: bytes) -> tuple[object, str | None]:
    """The record `data` (what follows the header) as a JSON value, and the name of its type where
    the schema gives one (an Avro named type's full name, the Protobuf message, a JSON Schema title)."""
    if parsed.schema_type == AVRO:
        return _avro(parsed, data), getattr(parsed.parsed, "fullname", None)
    if parsed.schema_type == JSON:
        try:
            value = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise DecodeError(f"not JSON text: {exc}") from None
        title = parsed.parsed.get("title") if isinstance(parsed.parsed, dict) else None
        return value, title if isinstance(title, str) else None
    if parsed.schema_type == PROTOBUF:
        return _protobuf(parsed, data)
    raise DecodeError(f"schema type {parsed.schema_type} is not one this broker reads")


# -- Avro ------------------------------------------------------------------------------------------

def _avro(parsed: ParsedSchema, data: bytes):
    import avro.errors
    import avro.io

    stream = io.BytesIO(data)
    try:
        value = avro.io.DatumReader(parsed.parsed).read(avro.io.BinaryDecoder(stream))
    except (avro.errors.AvroException, ValueError, TypeError, KeyError, IndexError, EOFError, struct.error,
            UnicodeDecodeError, OverflowError, MemoryError, RecursionError) as exc:
        raise DecodeError(f"not Avro binary of this schema: {exc or type(exc).__name__}") from None
    left = len(data) - stream.tell()
    if left:
        raise DecodeError(f"{left} byte{'s' if left != 1 else ''} left over after the Avro record")
    return _jsonable(value)


def _jsonable(value):
    """Avro's decoded values as JSON: bytes and fixed as Avro's JSON encoding writes them (one
    character per byte), decimals, dates, times and UUIDs as text."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return "NaN"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return value


# -- Protobuf --------------------------------------------------------------------------------------

def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if position >= len(data):
            raise DecodeError("the message indexes end early")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), position  # zigzag
        shift += 7
        if shift > 63:
            raise DecodeError("a message index is not a varint")


def message_indexes(data: bytes) -> tuple[list[int], int]:
    """The message indexes at the start of Protobuf data, and where the message begins."""
    count, position = _read_varint(data, 0)
    if count == 0:
        return [0], position
    if count < 0 or count > 100:
        raise DecodeError(f"{count} message indexes: not Confluent's Protobuf wire format")
    indexes = []
    for _ in range(count):
        index, position = _read_varint(data, position)
        indexes.append(index)
    return indexes, position


@functools.lru_cache(maxsize=64)
def _pool(text: str, dependency_items: tuple):
    from google.protobuf import descriptor_pool

    from .protobuf import compile_proto_with_imports

    pool = descriptor_pool.DescriptorPool()
    files = compile_proto_with_imports(text, dict(dependency_items))
    for file in files:
        pool.Add(file)
    return pool, files[-1]


def _protobuf(parsed: ParsedSchema, data: bytes):
    from google.protobuf import json_format, message, message_factory

    indexes, position = message_indexes(data)
    pool, main = _pool(parsed.canonical, tuple(sorted(parsed.named.items())))
    messages, names = main.message_type, [main.package] if main.package else []
    for index in indexes:
        if not 0 <= index < len(messages):
            raise DecodeError(f"message index {indexes} names no message of the schema")
        names.append(messages[index].name)
        messages = messages[index].nested_type
    descriptor = pool.FindMessageTypeByName(".".join(names))
    record = message_factory.GetMessageClass(descriptor)()
    try:
        record.ParseFromString(data[position:])
    except (message.DecodeError, RuntimeError, ValueError) as exc:
        raise DecodeError(f"not protobuf binary of {descriptor.full_name}: {exc}") from None
    return json_format.MessageToDict(record, preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True), descriptor.full_name
