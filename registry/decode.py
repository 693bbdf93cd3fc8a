"""Reading a key or value written in the Schema Registry's wire format: a magic byte 0, the
schema id (4 bytes, big-endian), then the data, which for

    AVRO      is the record in Avro's binary encoding;
    JSON      is the JSON text;
    PROTOBUF  is the message indexes (a zigzag varint count, then a zigzag varint per index: the
              path of the message type among the file's top-level messages and their nested ones;
              a count of 0 alone stands for [0], the first message), then the protobuf binary.

`split` finds the id, `decode` turns the data into a JSON value with the registry's parsed schema
(schemas.ParsedSchema). `decode_records` reads a page of keys and values for the console's
message browser (console/registry_views.py, through `RegistryServer.decode_records`) as a user
may: each schema id is read as that user's `GET /schemas/ids/{id}` (the registry's ACL check), and
whatever does not decode is answered with a note, never an exception.
"""

from __future__ import annotations

import asyncio
import datetime
import decimal
import functools
import io
import json
import logging
import struct
import uuid

from .schemas import AVRO, JSON, PROTOBUF, InvalidSchema, ParsedSchema

logger = logging.getLogger("kafka_wire.registry")

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


# -- a page of records, as a user reads them -------------------------------------------------------

async def decode_records(registry, principal: str, peer: str, topic: str,
                         records: list[tuple[str, bytes]]) -> list[dict]:
    """For each ("key" or "value", bytes in the wire format) of `topic`: {id, subject, version,
    type, name, value} where it decodes, {id, subject, version, type, error, message} where it does
    not (SCHEMA_NOT_FOUND, SCHEMA_REGISTRY_AUTHORIZATION_FAILED, SCHEMA_NOT_READABLE,
    SCHEMA_REGISTRY_UNAVAILABLE, UNDECODABLE). The subject named is the topic's own
    (TopicNameStrategy) where the id is registered under it. `registry` is the RegistryServer."""
    schemas: dict[int, dict] = {}
    for _, raw in records:
        schema_id = split(raw)[0]
        if schema_id not in schemas:
            schemas[schema_id] = await _schema_for_decoding(registry, principal, peer, schema_id)

    def decode_all() -> list[dict]:
        return [_decoded(schemas, topic, kind, raw) for kind, raw in records]

    return await asyncio.to_thread(decode_all)


def _decoded(schemas: dict[int, dict], topic: str, kind: str, raw: bytes) -> dict:
    schema_id, data = split(raw)
    known = schemas[schema_id]
    subjects = known.get("subjects", [])
    own = f"{topic}-{kind}"
    subject = own if own in subjects else (subjects[0] if subjects else None)
    shown = {"id": schema_id, "subject": subject, "version": known.get("versions", {}).get(subject),
             "type": known.get("type")}
    if "error" in known:
        return {**shown, "error": known["error"], "message": known["message"]}
    try:
        value, name = decode(known["parsed"], data)
    except DecodeError as exc:
        why = str(exc)
    except Exception as exc:  # what a schema library raises on bytes it did not expect
        logger.debug("schema id %d: decoding a record failed", schema_id, exc_info=True)
        why = f"{type(exc).__name__}: {exc}"
    else:
        return {**shown, "name": name, "value": value}
    return {**shown, "error": "UNDECODABLE",
            "message": f"The bytes after schema id {schema_id} do not read as its {known['type']} schema: {why}"}


async def _schema_for_decoding(registry, principal: str, peer: str, schema_id: int) -> dict:
    """{type, subjects, versions, parsed} of a schema id as this user may read it, or {error, message}
    (with what is known)."""
    status, answer = await registry.read(principal, peer, ["schemas", "ids", str(schema_id)])
    if status != 200:
        code = answer.get("error_code") if isinstance(answer, dict) else None
        if status == 403:
            return {"error": "SCHEMA_REGISTRY_AUTHORIZATION_FAILED",
                    "message": f"Schema id {schema_id}: this user may read none of its subjects"}
        if code == 40403:
            return {"error": "SCHEMA_NOT_FOUND",
                    "message": f"Schema id {schema_id} is not registered in this broker's Schema Registry"}
        return {"error": "SCHEMA_REGISTRY_UNAVAILABLE",
                "message": f"Schema id {schema_id} could not be read: "
                           f"{answer.get('message') if isinstance(answer, dict) else answer}"}
    status, versions = await registry.read(principal, peer, ["schemas", "ids", str(schema_id), "versions"])
    versions = versions if status == 200 and isinstance(versions, list) else []
    known = {"type": answer.get("schemaType", AVRO), "subjects": [v["subject"] for v in versions],
             "versions": {v["subject"]: v["version"] for v in versions}}
    try:
        parsed = registry.api.parsed_by_id(schema_id)
    except InvalidSchema as exc:
        return {**known, "error": "SCHEMA_NOT_READABLE",
                "message": f"Schema id {schema_id} does not parse on this broker: {exc}"}
    if parsed is None:  # a cluster's replica of _schemas behind the leader's answer
        return {**known, "error": "SCHEMA_NOT_FOUND",
                "message": f"Schema id {schema_id} is not yet in this broker's copy of _schemas"}
    try:
        prepare(parsed)
    except DecodeError as exc:
        return {**known, "error": "SCHEMA_NOT_READABLE", "message": f"Schema id {schema_id}: {exc}"}
    return {**known, "parsed": parsed}


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
