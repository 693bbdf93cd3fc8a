"""Schemas as the registry sees them: parsed and checked (Avro with Apache Avro's Python library, JSON
Schema with jsonschema), their canonical text, and the compatibility of one with another.

The canonical text is what the registry stores, answers and compares: two registrations whose
texts differ only in JSON layout (`{"type": "string"}` and `"string"`) are the same schema and get the
same id, as in Confluent's registry (which compares Avro's and JSON Schema's canonical strings).

Avro compatibility uses Avro's own reader/writer rules (`avro.compatibility`, the Python port of
Java Avro's SchemaCompatibility, which Confluent's registry applies): a reader schema can read
data written with a writer schema when types match or promote (int -> long, float, double; long ->
float, double; float -> double; string <-> bytes), record fields the writer lacks have defaults,
enum symbols the writer has exist in the reader (or it has a default), named types match by
name or alias, fixed sizes agree, and every branch of a writer's union can be read. JSON Schema
compatibility follows Confluent's rules for it, our own code in registry/json_compat.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

AVRO = "AVRO"
JSON = "JSON"
PROTOBUF = "PROTOBUF"
# What this registry parses, in the order GET /schemas/types lists them.
SCHEMA_TYPES = (JSON, PROTOBUF, AVRO)

COMPATIBILITY_LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
                        "FULL_TRANSITIVE", "NONE")


class InvalidSchema(ValueError):
    """The schema text does not parse as its type (Confluent's 42201)."""


@dataclass(frozen=True)
class ParsedSchema:
    schema_type: str
    canonical: str
    parsed: object  # avro.schema.Schema, the JSON Schema document, or a Protobuf FileDescriptorProto
    # What a reference may name, this schema's own and its references' (and theirs): Avro's named
    # types by full name; for JSON Schema the documents by reference name (what a `$ref` says); for
    # Protobuf the .proto texts by import path, this schema's imports and theirs.
    named: dict = field(default_factory=dict, compare=False, repr=False)

    def compatibility_errors(self, previous: "ParsedSchema", level: str) -> list[str]:
        """Why this schema, registered after `previous` under `level` (one of COMPATIBILITY_LEVELS
        without _TRANSITIVE: the caller picks which earlier versions to check), is incompatible;
        empty when it is compatible."""
        if level == "NONE":
            return []
        if previous.schema_type != self.schema_type:
            return [f"Incompatible schema type: {self.schema_type} after {previous.schema_type}"]
        if self.canonical == previous.canonical:
            return []
        read_errors = {AVRO: _avro_read_errors, JSON: _json_read_errors,
                       PROTOBUF: _protobuf_read_errors}[self.schema_type]
        errors = []
        if level in ("BACKWARD", "FULL"):  # the new schema reads what the old one wrote
            errors += read_errors(reader=self, writer=previous, direction="BACKWARD")
        if level in ("FORWARD", "FULL"):  # the old schema reads what the new one writes
            errors += read_errors(reader=previous, writer=self, direction="FORWARD")
        return errors


def _json_read_errors(*, reader: ParsedSchema, writer: ParsedSchema, direction: str) -> list[str]:
    from .json_compat import read_errors

    return [f"{direction}: {error}" for error in read_errors(reader.parsed, writer.parsed,
                                                             reader_named=reader.named, writer_named=writer.named)]


def _protobuf_read_errors(*, reader: ParsedSchema, writer: ParsedSchema, direction: str) -> list[str]:
    from .protobuf import compatibility_errors

    return [f"{direction}: {error}" for error in compatibility_errors(writer.parsed, reader.parsed)]


def _avro_read_errors(*, reader: ParsedSchema, writer: ParsedSchema, direction: str) -> list[str]:
    from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

    result = ReaderWriterCompatibilityChecker().get_compatibility(reader=reader.parsed, writer=writer.parsed)
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    kinds = sorted(kind.name.upper() for kind in result.incompatibilities)
    return [f"{direction}: {', '.join(kinds)}: {message} at {location}"
            for message, location in zip(sorted(result.messages), sorted(result.locations))] or [
        f"{direction}: {', '.join(kinds)}"]


def parse_schema(schema_type: str, text: str, references: list[tuple[str, "ParsedSchema"]] = (), *,
                 normalize: bool = False) -> ParsedSchema:
    """Parse `text` as a schema of `schema_type`; raises InvalidSchema naming what is wrong.
    `references` are Confluent's schema references, resolved: (reference name, the referenced
    schema, parsed with its own references). An Avro schema may use the named types they define; a
    JSON Schema may `$ref` a reference by its name; a Protobuf schema imports a reference by its name.
    `normalize` (Confluent's normalize=true) gives equivalent schemas one canonical text: object keys
    sorted for Avro and JSON Schema, imports, options and fields ordered for Protobuf."""
    for name, referenced in references:
        if referenced.schema_type != schema_type:
            raise InvalidSchema(f"Invalid schema: reference {name} is a {referenced.schema_type} schema, "
                                f"not {schema_type}")
    if schema_type == AVRO:
        parsed = _parse_avro(text, references)
    elif schema_type == JSON:
        parsed = _parse_json_schema(text, references)
    elif schema_type == PROTOBUF:
        return _parse_protobuf(text, references, normalize)
    else:
        raise InvalidSchema(f"Invalid schema type {schema_type}")
    if normalize:
        canonical = json.dumps(json.loads(parsed.canonical), separators=(",", ":"), sort_keys=True)
        parsed = ParsedSchema(parsed.schema_type, canonical, parsed.parsed, parsed.named)
    return parsed


def _parse_protobuf(text: str, references, normalize: bool) -> ParsedSchema:
    from .protobuf import ProtobufError, compile_proto, print_proto

    named = {}
    for name, schema in references:
        named.update(schema.named)
        named[name] = schema.canonical
    try:
        descriptor = compile_proto(text, named)
    except ProtobufError as exc:
        raise InvalidSchema(str(exc)) from None
    return ParsedSchema(PROTOBUF, print_proto(descriptor, normalize=normalize), descriptor, named)


def _parse_avro(text: str, references) -> ParsedSchema:
    import avro.errors
    import avro.name
    import avro.schema

    referenced = {}
    for _, schema in references:
        referenced.update(schema.named)
    names = avro.name.Names()
    names.names.update(referenced)
    try:
        parsed = avro.schema.make_avsc_object(json.loads(text), names)
    except (avro.errors.AvroException, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise InvalidSchema(f"Invalid AVRO schema: {exc}") from None
    # The canonical text names the referenced types rather than writing them out, as it was given.
    known = avro.name.Names()
    known.names.update(referenced)
    return ParsedSchema(AVRO, json.dumps(parsed.to_json(known), separators=(",", ":")), parsed, names.names)


def _parse_json_schema(text: str, references) -> ParsedSchema:
    import jsonschema.exceptions
    import jsonschema.validators

    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidSchema(f"Invalid JSON schema: not JSON: {exc}") from None
    if not isinstance(document, (dict, bool)):
        raise InvalidSchema("Invalid JSON schema: a JSON Schema is an object or a boolean")
    try:
        jsonschema.validators.validator_for(document).check_schema(document)
    except (jsonschema.exceptions.SchemaError, jsonschema.exceptions.UnknownType) as exc:
        raise InvalidSchema(f"Invalid JSON schema: {exc.message}") from None
    except RecursionError:
        raise InvalidSchema("Invalid JSON schema: nested too deeply") from None
    named = {}
    for name, schema in references:
        named.update(schema.named)
        named[name] = schema.parsed
    return ParsedSchema(JSON, json.dumps(document, separators=(",", ":")), document, named)
