"""Schema GUIDs and schema metadata as Confluent's Schema Registry defines them.

A schema's GUID names its content across contexts: the MD5 of the schema text (UTF-8), then of each
reference's name, subject and version (a 4-byte big-endian int), then, where the schema has
metadata, a byte 1 and its tags (each key, then its values), properties (each key, then its value)
and sensitive names, all in sorted order, then, where it has a rule set, a byte 1 and its rules
(registry/rules.py); the 16 bytes are written as a UUID. A record another
registry wrote with an `md5` (base64) keeps that one.

Metadata (`{"tags": {name: [tag]}, "properties": {name: value}, "sensitive": [name]}`) is kept as
Confluent keeps it: keys, tags and sensitive names sorted, nothing else.
"""

from __future__ import annotations

import hashlib
import uuid


CONFLUENT_VERSION = "confluent:version"  # (the metadata property Confluent keeps a version's number in)


class InvalidMetadata(ValueError):
    """A request's `metadata` is not the object Confluent's registry takes."""


def metadata_arg(value) -> dict | None:
    """A request's `metadata`, checked and put in Confluent's order; None where there is none."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidMetadata("metadata must be an object")
    unknown = set(value) - {"tags", "properties", "sensitive"}
    if unknown:
        raise InvalidMetadata(f"Unrecognized field in metadata: {sorted(unknown)[0]}")
    tags, properties, sensitive = value.get("tags"), value.get("properties"), value.get("sensitive")
    if tags is not None and not (isinstance(tags, dict) and all(
            isinstance(v, list) and all(isinstance(t, str) for t in v) for v in tags.values())):
        raise InvalidMetadata("metadata tags must map names to lists of strings")
    if properties is not None and not (isinstance(properties, dict)
                                       and all(isinstance(v, str) for v in properties.values())):
        raise InvalidMetadata("metadata properties must map names to strings")
    if sensitive is not None and not (isinstance(sensitive, list) and all(isinstance(v, str) for v in sensitive)):
        raise InvalidMetadata("metadata sensitive must be a list of strings")
    return _ordered(tags, properties, sensitive)


def stored_metadata(value) -> dict | None:
    """The metadata of a `_schemas` record, ordered; None where it has none or it is not readable."""
    try:
        return metadata_arg(value)
    except InvalidMetadata:
        return None


def _ordered(tags, properties, sensitive) -> dict:
    metadata = {}
    if tags:
        metadata["tags"] = {key: sorted(set(tags[key])) for key in sorted(tags)}
    if properties:
        metadata["properties"] = {key: properties[key] for key in sorted(properties)}
    if sensitive:
        metadata["sensitive"] = sorted(set(sensitive))
    return metadata


def md5_of(schema: str, references: list, metadata: dict | None, rule_set: dict | None = None) -> bytes:
    digest = hashlib.md5(schema.encode("utf-8"))
    for ref in references:
        for part in ("name", "subject"):
            if isinstance(ref.get(part), str):
                digest.update(ref[part].encode("utf-8"))
        if isinstance(ref.get("version"), int):
            digest.update((ref["version"] & 0xFFFFFFFF).to_bytes(4, "big"))
    if metadata is not None:
        digest.update(b"\x01")
        for key, values in metadata.get("tags", {}).items():
            digest.update(key.encode("utf-8"))
            for value in values:
                digest.update(value.encode("utf-8"))
        for key, value in metadata.get("properties", {}).items():
            digest.update(key.encode("utf-8"))
            digest.update(value.encode("utf-8"))
        for name in metadata.get("sensitive", []):
            digest.update(name.encode("utf-8"))
    if rule_set is not None:
        digest.update(b"\x01")
        _rule_set_hash(digest, rule_set)
    return digest.digest()


def _rule_set_hash(digest, rule_set: dict) -> None:
    """A rule set's part (registry/rules.py) of the MD5, in Confluent's order: each phase's rules,
    each rule's name, doc, kind, mode, type, tags, params (key, value), expr, onSuccess, onFailure,
    a byte 1 when disabled; then enableAt."""
    for phase in ("migrationRules", "domainRules", "encodingRules"):
        for rule in rule_set.get(phase, []):
            for name in ("name", "doc", "kind", "mode", "type"):
                if rule.get(name) is not None:
                    digest.update(rule[name].encode("utf-8"))
            for tag in rule.get("tags", []):
                digest.update(tag.encode("utf-8"))
            for key, value in rule.get("params", {}).items():
                digest.update(key.encode("utf-8"))
                digest.update(value.encode("utf-8"))
            for name in ("expr", "onSuccess", "onFailure"):
                if rule.get(name) is not None:
                    digest.update(rule[name].encode("utf-8"))
            if rule.get("disabled"):
                digest.update(b"\x01")
    if rule_set.get("enableAt") is not None:
        digest.update(rule_set["enableAt"].encode("utf-8"))


def guid_of(entry) -> str:
    """The GUID of a stored schema version (store.SchemaVersion)."""
    md5 = entry.md5 if entry.md5 is not None else md5_of(entry.schema, entry.references, entry.metadata, entry.rule_set)
    return str(uuid.UUID(bytes=md5))


def parse_guid(text: str) -> str | None:
    """A GUID as a request names it (a UUID, or the MD5 in hex, as Confluent reads it) in the
    UUID form; None for anything else."""
    try:
        return str(uuid.UUID(text)) if "-" in text else str(uuid.UUID(bytes=bytes.fromhex(text)))
    except ValueError:
        return None
