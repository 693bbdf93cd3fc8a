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

Schemas and records come from whoever may write `_schemas` and the topic, so what a page costs is
bounded: a schema (with its references) over MAX_SCHEMA_CHARS is not parsed here (Apache Avro's
Python parser takes seconds on tens of thousands of fields), the others are parsed in a worker
thread, never on the broker's event loop (Protobuf ones by protoc in a child process,
registry/protobuf.py), and kept (PARSED_CACHE of them); a record over
MAX_RECORD_BYTES is not decoded; an Avro record may nest MAX_DEPTH values deep and hold
MAX_VALUES values (an array of nulls costs no bytes per item, so its byte count bounds nothing),
and the Avro records of one page MAX_PAGE_VALUES together. Each limit answers a note that says
which one it is.
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

from .api import SchemaPlan, parse_planned
from .schemas import AVRO, JSON, PROTOBUF, InvalidSchema, ParsedSchema

logger = logging.getLogger("kafka_wire.registry")

MAGIC = 0
HEADER = 5  # the magic byte and the schema id
MAX_SCHEMA_CHARS = 256 * 1024
MAX_RECORD_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_VALUES = 100_000
MAX_PAGE_VALUES = 200_000
PARSED_CACHE = 32


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


class ValueBudget:
    """How many more Avro values may be decoded (a page's MAX_PAGE_VALUES)."""

    def __init__(self, left: int) -> None:
        self.left = left


def decode(parsed: ParsedSchema, data: bytes, budget: ValueBudget | None = None) -> tuple[object, str | None]:
    """The record `data` (what follows the header) as a JSON value, and the name of its type where
    the schema gives one (an Avro named type's full name, the Protobuf message, a JSON Schema title).
    An Avro record's values count against `budget` (at most MAX_VALUES of them either way)."""
    if len(data) > MAX_RECORD_BYTES:
        raise DecodeError(f"the record is {len(data)} bytes; records over {MAX_RECORD_BYTES} bytes are not decoded "
                          "here")
    if parsed.schema_type == AVRO:
        return _avro(parsed, data, budget or ValueBudget(MAX_VALUES)), getattr(parsed.parsed, "fullname", None)
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
    SCHEMA_REGISTRY_UNAVAILABLE, SCHEMA_TOO_LARGE, UNDECODABLE). The subject named is the topic's own
    (TopicNameStrategy) where the id is registered under it. `registry` is the RegistryServer."""
    schemas: dict[int, dict] = {}
    for _, raw in records:
        schema_id = split(raw)[0]
        if schema_id not in schemas:
            schemas[schema_id] = await _schema_for_decoding(registry, principal, peer, schema_id)

    def decode_all() -> list[dict]:
        budget = ValueBudget(MAX_PAGE_VALUES)
        return [_decoded(schemas, topic, kind, raw, budget) for kind, raw in records]

    return await asyncio.to_thread(decode_all)


def _decoded(schemas: dict[int, dict], topic: str, kind: str, raw: bytes, budget: ValueBudget) -> dict:
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
        value, name = decode(known["parsed"], data, budget)
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
        plan = registry.api.schema_plan_by_id(schema_id)
    except InvalidSchema as exc:
        return {**known, "error": "SCHEMA_NOT_READABLE",
                "message": f"Schema id {schema_id} does not parse on this broker: {exc}"}
    if plan is None:  # a cluster's replica of _schemas behind the leader's answer
        return {**known, "error": "SCHEMA_NOT_FOUND",
                "message": f"Schema id {schema_id} is not yet in this broker's copy of _schemas"}
    if plan.size() > MAX_SCHEMA_CHARS:
        return {**known, "error": "SCHEMA_TOO_LARGE",
                "message": f"Schema id {schema_id} is {plan.size()} characters with its references; schemas over "
                           f"{MAX_SCHEMA_CHARS} are not decoded here"}
    parsed, problem = await asyncio.to_thread(_parse_for_decoding, plan)
    if parsed is None:
        return {**known, "error": "SCHEMA_NOT_READABLE",
                "message": f"Schema id {schema_id} does not parse on this broker: {problem}"}
    try:
        prepare(parsed)
    except DecodeError as exc:
        return {**known, "error": "SCHEMA_NOT_READABLE", "message": f"Schema id {schema_id}: {exc}"}
    return {**known, "parsed": parsed}


@functools.lru_cache(maxsize=PARSED_CACHE)
def _parse_for_decoding(plan: SchemaPlan) -> tuple[ParsedSchema | None, str | None]:
    """(the parsed schema, None) or (None, why not); kept either way, so a schema that takes long
    to parse, or to fail, costs that once."""
    try:
        return parse_planned(plan), None
    except InvalidSchema as exc:
        return None, str(exc)


# -- Avro ------------------------------------------------------------------------------------------

class DecodeLimit(DecodeError):
    """The record goes past one of the limits on what is decoded here."""


@functools.cache
def _bounded_reader_class():
    """avro's DatumReader counting what it reads (Avro is imported only when a record is read)."""
    import avro.io

    class BoundedDatumReader(avro.io.DatumReader):
        def __init__(self, schema, budget: ValueBudget) -> None:
            super().__init__(schema)
            self.budget = budget
            self.depth = self.values = 0

        def read_data(self, writers_schema, readers_schema, decoder):
            self.values += 1
            if self.values > MAX_VALUES:
                raise DecodeLimit(f"the record holds more than {MAX_VALUES} values; larger ones are not decoded here")
            self.budget.left -= 1
            if self.budget.left < 0:
                raise DecodeLimit(f"the records before it on this page held {MAX_PAGE_VALUES} values, as many as "
                                  "one page decodes; read it on a page of its own")
            if self.depth >= MAX_DEPTH:
                raise DecodeLimit(f"the record nests deeper than {MAX_DEPTH} values; deeper ones are not decoded here")
            self.depth += 1
            try:
                return super().read_data(writers_schema, readers_schema, decoder)
            finally:
                self.depth -= 1

    return BoundedDatumReader


def _avro(parsed: ParsedSchema, data: bytes, budget: ValueBudget):
    import avro.errors
    import avro.io

    stream = io.BytesIO(data)
    try:
        value = _bounded_reader_class()(parsed.parsed, budget).read(avro.io.BinaryDecoder(stream))
    except DecodeLimit:
        raise
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
