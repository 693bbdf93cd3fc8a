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

import functools
import json
import re
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
        try:
            if level in ("BACKWARD", "FULL"):  # the new schema reads what the old one wrote
                errors += read_errors(reader=self, writer=previous, direction="BACKWARD")
            if level in ("FORWARD", "FULL"):  # the old schema reads what the new one writes
                errors += read_errors(reader=previous, writer=self, direction="FORWARD")
        except RecursionError:  # parsed, but nested deeper than the checkers recurse: not accepted
            errors.append(f"{level}: the schemas nest too deeply to be compared")
        return errors


def _json_read_errors(*, reader: ParsedSchema, writer: ParsedSchema, direction: str) -> list[str]:
    from .json_compat import read_errors

    return [f"{direction}: {error}" for error in read_errors(reader.parsed, writer.parsed,
                                                             reader_named=reader.named, writer_named=writer.named)]


def _protobuf_read_errors(*, reader: ParsedSchema, writer: ParsedSchema, direction: str) -> list[str]:
    from .protobuf import compatibility_errors

    return [f"{direction}: {error}" for error in compatibility_errors(writer.parsed, reader.parsed)]


def _avro_read_errors(*, reader: ParsedSchema, writer: ParsedSchema, direction: str) -> list[str]:
    from avro.compatibility import SchemaCompatibilityType

    result = _avro_checker()().get_compatibility(reader=reader.parsed, writer=writer.parsed)
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    kinds = sorted(kind.name.upper() for kind in result.incompatibilities)
    return [f"{direction}: {', '.join(kinds)}: {message} at {location}"
            for message, location in zip(sorted(result.messages), sorted(result.locations))] or [
        f"{direction}: {', '.join(kinds)}"]


@functools.cache
def _avro_checker():
    """Avro's ReaderWriterCompatibilityChecker with its record-field step made linear in the number of
    fields. Avro's own step finds each reader field's writer field through `RecordSchema.fields_dict`,
    a dict built afresh from every field on each call, and folds the fields' results one `merge` at a
    time, each copying the incompatibilities so far, and its memo of schema pairs collides: quadratic,
    half a minute for a record of 4,000 fields (a registration held the registry's write lock that
    long). Here the writer's fields are
    indexed once per record and the results merged once, with the same rules: a writer field by the
    reader field's name, else by one of its aliases; a field the writer lacks needs a default (or, an
    enum, the enum's default); the result is that of Avro's `merge` folded over the fields."""
    from avro.compatibility import (CompatibleResult, ReaderWriterCompatibilityChecker, SchemaCompatibilityResult,
                                    SchemaCompatibilityType, SchemaIncompatibilityType, SchemaType, incompatible)

    class LinearRecordChecker(ReaderWriterCompatibilityChecker):
        def get_compatibility(self, reader, writer, reference_token="/", location=None):
            # Avro memoizes pairs under a key hashed as id(reader) ^ id(writer), which collides for
            # the many pairs of schemas allocated side by side (a dict lookup walks them all): the
            # same memo here under the pair of ids, hashed as a tuple.
            pair = (id(reader), id(writer))
            known = self.memoize_map.get(pair)
            if known is not None:
                return CompatibleResult if known.compatibility is SchemaCompatibilityType.recursion_in_progress else known
            self.memoize_map[pair] = SchemaCompatibilityResult()
            result = self.calculate_compatibility(reader, writer, (location or []) + [reference_token])
            self.memoize_map[pair] = result
            return result

        def check_reader_writer_record_fields(self, reader, writer, location):
            by_name = {f.name: f for f in writer.fields}
            results = []
            for index, reader_field in enumerate(reader.fields):
                where = location + ["fields", str(index)]
                writer_field = by_name.get(reader_field.name)
                aliases = reader_field.props.get("aliases")
                if writer_field is None and isinstance(aliases, (list, tuple)):
                    writer_field = next((by_name[a] for a in aliases if a in by_name), None)
                if writer_field is not None:
                    results.append(self.get_compatibility(reader_field.type, writer_field.type, "type", where))
                elif reader_field.has_default:
                    continue
                elif reader_field.type.type == SchemaType.ENUM and reader_field.type.props.get("default"):
                    results.append(self.get_compatibility(reader_field.type, writer, "type", where))
                else:
                    results.append(incompatible(SchemaIncompatibilityType.reader_field_missing_default_value,
                                                reader_field.name, where))
            first = next((i for i, r in enumerate(results)
                          if r.compatibility is not SchemaCompatibilityType.compatible), None)
            if first is None:
                return CompatibleResult
            # merge(a, b) keeps b whole while a is compatible, then a's state with the union of both
            kept = results[first:]
            return SchemaCompatibilityResult(
                compatibility=kept[0].compatibility,
                incompatibilities=[kind for r in results for kind in r.incompatibilities],
                messages=set().union(*(r.messages for r in kept)),
                locations=set().union(*(r.locations for r in kept)))

    return LinearRecordChecker


@functools.cache
def _linear_avro_field_parsing() -> None:
    """Apache Avro's parser checks each record field's name against a list of the names before it:
    quadratic, seconds for a record of a few thousand fields and hours for the 100,000 a 4 MiB body can
    hold. Its record-field step is wrapped once in this process: each field goes to Avro's own step
    alone (so each field is built exactly as Avro builds it) and the names are checked in a set, failing
    as Avro fails ("Field name x already in use.")."""
    import avro.errors
    import avro.schema

    original = avro.schema.RecordSchema.make_field_objects

    def make_field_objects(field_data, names, validate_names=True):
        if not isinstance(field_data, (list, tuple)):
            return original(field_data, names, validate_names)
        fields, seen = [], set()
        for data in field_data:
            (built,) = original([data], names, validate_names)
            if built.name in seen:
                raise avro.errors.SchemaParseException(f"Field name {built.name} already in use.")
            seen.add(built.name)
            fields.append(built)
        return fields

    avro.schema.RecordSchema.make_field_objects = staticmethod(make_field_objects)


def parse_schema(schema_type: str, text: str, references: list[tuple[str, "ParsedSchema"]] = (), *,
                 normalize: bool = False, validate_new: bool = False) -> ParsedSchema:
    """Parse `text` as a schema of `schema_type`; raises InvalidSchema naming what is wrong.
    `references` are Confluent's schema references, resolved: (reference name, the referenced
    schema, parsed with its own references). An Avro schema may use the named types they define; a
    JSON Schema may `$ref` a reference by its name; a Protobuf schema imports a reference by its name.
    `normalize` (Confluent's normalize=true) gives equivalent schemas one canonical text: object keys
    sorted for Avro and JSON Schema, imports, options and fields ordered for Protobuf.
    `validate_new` (a schema being registered or tested under the config's `validateNewSchemas`,
    true unless set false, as Confluent's validateAsNew): an Avro schema's namespaces are checked
    and its field defaults must be values of their fields' types (Java Avro's validateDefaults);
    without it (a stored schema, a lookup) only its simple names are checked, not its namespaces."""
    for name, referenced in references:
        if referenced.schema_type != schema_type:
            raise InvalidSchema(f"Invalid schema: reference {name} is a {referenced.schema_type} schema, "
                                f"not {schema_type}")
    if schema_type == AVRO:
        parsed = _parse_avro(text, references, validate_new)
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


def _parse_avro(text: str, references, validate_new: bool = False) -> ParsedSchema:
    import avro.errors
    import avro.name
    import avro.schema

    _linear_avro_field_parsing()
    referenced = {}
    for _, schema in references:
        referenced.update(schema.named)
    names = avro.name.Names(validate_names=validate_new)
    names.names.update(referenced)
    try:
        parsed = avro.schema.make_avsc_object(json.loads(text), names, validate_names=validate_new)
        if validate_new:
            _check_avro_defaults(parsed, set())
        else:
            _check_avro_simple_names(parsed, set())
    except (avro.errors.AvroException, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise InvalidSchema(f"Invalid AVRO schema: {exc}") from None
    # The canonical text names the referenced types rather than writing them out, as it was given.
    known = avro.name.Names()
    known.names.update(referenced)
    return ParsedSchema(AVRO, json.dumps(parsed.to_json(known), separators=(",", ":")), parsed, names.names)


def _check_avro_simple_names(schema, seen: set) -> None:
    """The names of records, enums and fixed types and of record fields, each alone (Confluent's
    AvroSchemaUtils.validateNames, for a schema not validated as new: its namespaces go unchecked)."""
    import avro.name

    if id(schema) in seen:
        return
    seen.add(id(schema))
    kind = getattr(schema, "type", None)
    if kind in ("record", "error", "enum", "fixed"):
        avro.name.validate_basename(schema.name)
    if kind in ("record", "error"):
        for field in schema.fields:
            avro.name.validate_basename(field.name)
            _check_avro_simple_names(field.type, seen)
    for inner in _avro_inner_types(schema):
        _check_avro_simple_names(inner, seen)


def _avro_inner_types(schema) -> list:
    """An array's items, a map's values, a union's branches (a record's fields are walked by hand)."""
    kind = getattr(schema, "type", None)
    if kind == "array":
        return [schema.items]
    if kind == "map":
        return [schema.values]
    if kind == "union":
        return list(schema.schemas)
    return []


_NO_DEFAULT = object()
# What Java's Double.valueOf reads: NaN, Infinity, decimal and hexadecimal floats, a type suffix, blanks around.
_JAVA_DOUBLE = re.compile(r"^[\x00-\x20]*[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?"
                          r"|0[xX]([0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?\d+)[fFdD]?)[\x00-\x20]*$")
_INT_RANGE = {"int": (-2 ** 31, 2 ** 31 - 1), "long": (-2 ** 63, 2 ** 63 - 1)}


def _check_avro_defaults(schema, seen: set) -> None:
    """Each record field's default a value of the field's type, checked where Java Avro's parser
    checks it (a field's type first, then its default), failing as it fails."""
    import avro.errors

    if id(schema) in seen:
        return
    seen.add(id(schema))
    kind = getattr(schema, "type", None)
    if kind in ("record", "error"):
        for field in schema.fields:
            _check_avro_defaults(field.type, seen)
            default = field.default
            floating = getattr(field.type, "type", None) in ("float", "double")
            if field.has_default and floating and isinstance(default, str):
                # Java Avro reads a float or double field's text default as a number (Double.valueOf)
                if not _JAVA_DOUBLE.match(default):
                    raise avro.errors.AvroException(f'For input string: "{default}"')
                continue
            if field.has_default and not _valid_default(field.type, default):
                shown = json.dumps(field.default, separators=(",", ":"))
                raise avro.errors.AvroException(f"Invalid default for field {field.name}: {shown} not a "
                                                f"{json.dumps(field.type.to_json(), separators=(',', ':'))}")
    for inner in _avro_inner_types(schema):
        _check_avro_defaults(inner, seen)


def _valid_default(schema, value) -> bool:
    """Java Avro's Schema.isValidDefault: a union's default may be of any branch; a record's is an
    object whose each field is given or defaulted."""
    if value is _NO_DEFAULT:
        return False
    kind = getattr(schema, "type", None)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind in ("string", "bytes", "enum", "fixed"):
        return isinstance(value, str)
    if kind in _INT_RANGE:
        low, high = _INT_RANGE[kind]
        return type(value) is int and low <= value <= high
    if kind in ("float", "double"):
        return number
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list) and all(_valid_default(schema.items, item) for item in value)
    if kind == "map":
        return isinstance(value, dict) and all(_valid_default(schema.values, item) for item in value.values())
    if kind == "union":
        return any(_valid_default(branch, value) for branch in schema.schemas)
    if kind in ("record", "error"):
        return isinstance(value, dict) and all(
            _valid_default(field.type, value[field.name] if field.name in value
                           else (field.default if field.has_default else _NO_DEFAULT))
            for field in schema.fields)
    return False


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
