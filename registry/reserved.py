"""The config's `validateFields`, acted on as Confluent's registry acts on it.

With `validateFields` true in the config in scope (false by default, Confluent's
`schema.validate.fields`), a schema being registered, looked up or tested for compatibility:
- names its reserved fields in the metadata property `confluent:reserved` (comma-separated, each
  trimmed, empty ones left out); none of them may be a top-level field of the schema, and none of
  the latest live version's reserved fields may be left out. What breaks this is told as Confluent
  tells it, among the compatibility errors (409 on registering, `is_compatible: false` when tested),
  whatever the compatibility level, NONE too;
- a JSON Schema that is an object schema may not have a property whose name starts with `$$`
  (42201, Invalid schema).

A schema's top-level fields, as Confluent's ParsedSchema implementations list them (hasTopLevelField):
Avro, the fields of a record (or error; none for any other type); JSON Schema, the names under the root's
`properties`; Protobuf, the fields of each top-level message of the file (not those of nested
messages, nor those inside a `oneof`; a proto3 `optional` field is a field of its message).
"""

from __future__ import annotations

from .schemas import AVRO, JSON, PROTOBUF, ParsedSchema

RESERVED = "confluent:reserved"

RESERVED_FIELD_REMOVED = ("The new schema has reserved field %s removed from its metadata which is present in the "
                          "old schema's metadata.")
FIELD_CONFLICTS_WITH_RESERVED_FIELD = "The new schema has field that conflicts with the reserved field %s."
RESTRICTED_PREFIX = "$$"


def reserved_fields(metadata: dict | None) -> set[str]:
    """The field names the metadata's `confluent:reserved` property reserves."""
    properties = (metadata or {}).get("properties") or {}
    value = properties.get(RESERVED)
    if not isinstance(value, str):
        return set()
    return {name.strip() for name in value.split(",") if name.strip()}


def top_level_fields(parsed: ParsedSchema) -> set[str]:
    """The schema's top-level field names (see the module's docstring)."""
    if parsed.schema_type == AVRO:
        if getattr(parsed.parsed, "type", None) not in ("record", "error"):
            return set()
        return {field.name for field in parsed.parsed.fields}
    if parsed.schema_type == JSON:
        properties = parsed.parsed.get("properties") if isinstance(parsed.parsed, dict) else None
        return set(properties) if isinstance(properties, dict) else set()
    if parsed.schema_type == PROTOBUF:
        return {field.name for message in parsed.parsed.message_type for field in message.field
                if not field.HasField("oneof_index") or field.proto3_optional}
    return set()


def reserved_field_errors(parsed: ParsedSchema, metadata: dict | None, previous_metadata: dict | None,
                          has_previous: bool) -> list[str]:
    """Confluent's validateReservedFields: a reserved field of the previous version (the latest
    live one, when there is one) that `metadata` no longer reserves, then each reserved field the
    schema has at its top level; each set in name order."""
    reserved = reserved_fields(metadata)
    errors = []
    if has_previous:
        errors += [RESERVED_FIELD_REMOVED % name for name in sorted(reserved_fields(previous_metadata) - reserved)]
    fields = top_level_fields(parsed)
    errors += [FIELD_CONFLICTS_WITH_RESERVED_FIELD % name for name in sorted(reserved & fields)]
    return errors


def restricted_field(parsed: ParsedSchema) -> str | None:
    """A property of a JSON object schema whose name starts with `$$` (Confluent's JsonSchema.validate
    with validateFields), else None. An object schema: one of type "object", or without a type but
    with an object keyword, as the JSON Schema library Confluent uses reads it."""
    if parsed.schema_type != JSON or not isinstance(parsed.parsed, dict):
        return None
    document = parsed.parsed
    kind = document.get("type")
    object_keywords = ("properties", "required", "minProperties", "maxProperties", "dependencies",
                       "patternProperties", "additionalProperties", "propertyNames")
    if kind != "object" and not (kind is None and any(word in document for word in object_keywords)):
        return None
    properties = document.get("properties")
    if not isinstance(properties, dict):
        return None
    return next((name for name in properties if name.startswith(RESTRICTED_PREFIX)), None)
