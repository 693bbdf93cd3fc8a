"""The Schema Registry's REST API, Confluent's paths and answers, over the state of `_schemas`
(registry/store.py). `RegistryApi.answer(method, segments, query, body)` gives the status and the JSON
body; errors are Confluent's {"error_code": ..., "message": ...} with its codes:

    40401 subject not found      40402 version not found       40403 schema not found
    40404 subject soft-deleted   40405 subject not soft-deleted first
    40406 version soft-deleted   40407 version not soft-deleted first
    40408 no subject-level compatibility configured              40409 no subject-level mode configured
    409   incompatible schema    42201 invalid schema           42202 invalid version
    42203 invalid compatibility level     42204 invalid mode     42205 operation not permitted (mode)
    42206 version referenced by another   42210 invalid rule set      42211 context not empty
    50001 backend store error
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import logging
from typing import NamedTuple
from urllib.parse import parse_qsl

from coordinator.offsets_store import AppendFailed

from .contexts import (
    DEFAULT_CONTEXT,
    EVERY_CONTEXT,
    context_of,
    context_prefix,
    matches_prefix,
    normalized,
    qualify,
    split,
    with_parent,
)
from .guids import CONFLUENT_VERSION, InvalidMetadata, metadata_arg, parse_guid
from .rules import PHASES, InvalidRuleSet, merge_metadata, merge_rule_sets, rule_set_arg, with_confluent_version
from .protobuf import print_proto, serialized as protobuf_serialized
from .reserved import RESTRICTED_PREFIX, reserved_field_errors, restricted_field
from .tags import (TagRequestError, modify_proto_tags, modify_tags, schema_tags_answer, schema_tags_arg,
                   tagged_entities)
from .schemas import AVRO, COMPATIBILITY_LEVELS, PROTOBUF, SCHEMA_TYPES, InvalidSchema, ParsedSchema, parse_schema
from .store import (
    CONFIG_SETTINGS,
    CONTRACT_FIELDS,
    SchemasLog,
    SchemaVersion,
    config_key,
    context_key_record,
    context_value,
    config_value,
    delete_subject_key,
    delete_subject_value,
    mode_key,
    mode_value,
    schema_key,
    schema_value,
)

logger = logging.getLogger("kafka_wire.registry")

MAX_VERSION = (1 << 31) - 1
PARSE_IN_THREAD_CHARS = 16 * 1024
PARSED_CACHE = 64
MODES = ("READWRITE", "READONLY", "IMPORT")
# How deep references may nest (a schema referencing one that references another ...).
MAX_REFERENCE_DEPTH = 32


class Query(dict):
    """A request's query parameters, the last of each name, and every value of a repeated one
    (`?key=a&value=1&key=b&value=2`)."""

    def __init__(self, text: str = "") -> None:
        self.pairs = parse_qsl(text, keep_blank_values=True)
        super().__init__(self.pairs)

    def every(self, name: str) -> list[str]:
        return [value for key, value in self.pairs if key == name]


class NoContent:
    """A 204 answer: no body at all (DELETE /contexts/{context})."""


class RawText(str):
    """An answer sent as it is, not as a JSON value: `.../schema` of a Protobuf schema is its .proto text
    (as Confluent's registry writes the stored string, which for Avro and JSON is a JSON document)."""


class SchemaPlan(NamedTuple):
    """A stored schema and its references (name, plan), as plain values: what parse_planned parses."""
    schema_type: str
    text: str
    references: tuple

    def size(self) -> int:
        """The characters of its text and its references' texts."""
        return len(self.text) + sum(plan.size() for _, plan in self.references)


def parse_planned(plan: SchemaPlan) -> ParsedSchema:
    """Parse a planned schema with its references (any thread: it reads no registry state)."""
    return parse_schema(plan.schema_type, plan.text, [(name, parse_planned(ref)) for name, ref in plan.references])


@functools.lru_cache(maxsize=PARSED_CACHE)
def _parsed_cached(plan: SchemaPlan) -> ParsedSchema:
    return parse_planned(plan)


def _serialized_or_error(plan: SchemaPlan) -> str | InvalidSchema:
    """A Protobuf schema's format=serialized text, or why it does not compile (any thread)."""
    try:
        return protobuf_serialized(_parsed_cached(plan).parsed)
    except InvalidSchema as exc:
        return exc


# Set while a read is answered: a Protobuf schema it needs compiled and does not have is compiled
# in a worker thread, then the read is answered again (_CompileFirst), not on the event loop.
_COMPILES_FIRST: contextvars.ContextVar[bool] = contextvars.ContextVar("compiles_first", default=False)


class _CompileFirst(Exception):
    def __init__(self, plan: SchemaPlan) -> None:
        super().__init__("a Protobuf schema to compile first")
        self.plan = plan


class RegistryError(Exception):
    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.error_code, self.message = status, error_code, message


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id=None) -> RegistryError:
    return RegistryError(404, 40403, "Schema not found" if schema_id is None else f"Schema {schema_id} not found")


def _one_spelling(segments: list[str]) -> list[str]:
    """The path with its subject named one way (`:.:s` is `s`, contexts.py)."""
    match segments:
        case ["subjects" | "config" | "mode", subject, *rest]:
            return [segments[0], normalized(subject), *rest]
        case ["compatibility", "subjects", subject, *rest]:
            return ["compatibility", "subjects", normalized(subject), *rest]
    return segments


def _flag(query: dict, name: str) -> bool:
    return query.get(name, "false").lower() == "true"


def _int_query(query: dict, name: str, default: int) -> int:
    """An int query parameter; one that is not a number is 404, as Confluent's JAX-RS answers it."""
    text = query.get(name)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise RegistryError(404, 404, "HTTP 404 Not Found") from None


def _version_arg(text: str) -> int | None:
    """A path's version: a number in [1, 2^31-1], or None for "latest" (and -1, its alias)."""
    if text in ("latest", "-1"):
        return None
    try:
        version = int(text)
    except ValueError:
        version = 0
    if not 1 <= version <= MAX_VERSION:
        raise RegistryError(422, 42202, f"The specified version '{text}' is not a valid version id. Allowed "
                                        "values are between [1, 2^31-1] and the string \"latest\"")
    return version


def _answer_format(query: dict, parsed: ParsedSchema, body: dict) -> dict:
    """The query a registration's answer formats its schema by: the request's `format`; a
    Protobuf schema sent serialized (base64, as confluent-kafka's ProtobufSerializer sends it)
    is answered serialized too, since that client caches the answer's text under the id and
    its deserializer then reads that text as a serialized FileDescriptorProto."""
    if query.get("format") or parsed.schema_type != PROTOBUF:
        return query
    text = body.get("schema", "").strip()
    if text and not any(c.isspace() or c in ";{" for c in text):
        return {"format": "serialized"}
    return query


def _confluent_version(metadata: dict | None) -> int | None:
    """The metadata's `confluent:version` as a number; None without one (or one that is not)."""
    try:
        return int((metadata or {}).get("properties", {})[CONFLUENT_VERSION])
    except (KeyError, ValueError):
        return None


def _without_version(metadata: dict | None) -> dict:
    properties = {k: v for k, v in (metadata or {}).get("properties", {}).items() if k != CONFLUENT_VERSION}
    return metadata_arg({**(metadata or {}), "properties": properties})


def _same_ignoring_version(metadata: dict | None, entry: SchemaVersion) -> bool:
    """Whether a request's metadata names this version's (the rest of the schema being the same),
    as Confluent's canLookupIgnoringVersion has it: a request without `confluent:version` matches
    the version's metadata without it; one with it, a version without one whose number it names."""
    wanted, stored = _confluent_version(metadata), _confluent_version(entry.metadata)
    if wanted is None and stored is not None:
        return (metadata or {}) == _without_version(entry.metadata)
    if wanted is not None and stored is None:
        return wanted == entry.version and _without_version(metadata) == (entry.metadata or {})
    return metadata == entry.metadata


def _level_arg(body) -> str:
    level = body.get("compatibility") if isinstance(body, dict) else None
    if not isinstance(level, str) or level.upper() not in COMPATIBILITY_LEVELS:
        raise RegistryError(422, 42203, "Invalid compatibility level. Valid values are none, backward, forward, "
                                        "full, backward_transitive, forward_transitive, and full_transitive")
    return level.upper()


class RegistryApi:
    def __init__(self, log: SchemasLog) -> None:
        self.log = log
        # Writes one at a time: a registration's id and version are chosen from the state it sees.
        self.writing = asyncio.Lock()
        # Protobuf schemas as base64 FileDescriptorProtos (format=serialized), or why they do not
        # compile: a read compiles them in a worker thread first (protoc runs in a child process).
        self._serialized: dict[SchemaPlan, str | InvalidSchema] = {}

    @property
    def state(self):
        return self.log.state

    async def answer(self, method: str, segments: list[str], query: dict, body) -> tuple[int, object]:
        self.log.catch_up()
        segments = _one_spelling(segments)
        if method in ("POST", "PUT", "DELETE"):
            async with self.writing:
                try:
                    await self.log.settle()
                except AppendFailed as exc:
                    logger.error("registry: %s", exc)
                    raise RegistryError(500, 50001, f"Error in the backend data store: {exc.error.name}") from None
                return await self._route(method, segments, query, body)
        for _ in range(8):  # (an answer naming several Protobuf schemas compiles each first)
            token = _COMPILES_FIRST.set(True)
            try:
                return await self._route(method, segments, query, body)
            except _CompileFirst as pending:
                plan = pending.plan
            finally:
                _COMPILES_FIRST.reset(token)
            self._remember_serialized(plan, await asyncio.to_thread(_serialized_or_error, plan))
        return await self._route(method, segments, query, body)

    def _remember_serialized(self, plan: SchemaPlan, text: str | InvalidSchema) -> None:
        self._serialized[plan] = text
        while len(self._serialized) > PARSED_CACHE:
            self._serialized.pop(next(iter(self._serialized)))

    async def _route(self, method, segments, query, body) -> tuple[int, object]:
        state = self.state
        match segments:
            case []:
                if method == "GET":
                    return 200, {}
            case ["subjects"]:
                if method == "GET":
                    return 200, state.subject_names(include_deleted=_flag(query, "deleted"),
                                                    prefix=query.get("subjectPrefix", EVERY_CONTEXT))
            case ["contexts"]:
                if method == "GET":
                    return 200, self.contexts(query)
            case ["contexts", context]:
                if method == "DELETE":
                    return 204, await self.delete_context(context)
            case ["subjects", subject]:
                if method == "POST":
                    return 200, await self.lookup(subject, query, body)
                if method == "DELETE":
                    return 200, await self.delete_subject(subject, _flag(query, "permanent"))
            case ["subjects", subject, "metadata"]:
                if method == "GET":
                    return 200, self.latest_with_metadata(subject, query)
            case ["subjects", subject, "versions"]:
                if method == "GET":
                    versions = state.versions(subject, include_deleted=_flag(query, "deleted"))
                    if not versions:
                        raise subject_not_found(subject)
                    return 200, [entry.version for entry in versions]
                if method == "POST":
                    return 200, await self.register(subject, body, query)
            case ["subjects", subject, "versions", version]:
                if method == "GET":
                    entry = self.version(subject, version, _flag(query, "deleted"))
                    return 200, self._with_found_tags(self._schema_body(entry, query), entry, query)
                if method == "DELETE":
                    return 200, await self.delete_version(subject, version, _flag(query, "permanent"))
            case ["subjects", subject, "versions", version, "tags"]:
                if method == "POST":
                    return 200, await self.modify_tags(subject, version, body)
            case ["subjects", subject, "versions", version, "referencedby"]:
                if method == "GET":
                    return 200, self.referenced_by(self.version(subject, version, _flag(query, "deleted")))
            case ["subjects", subject, "versions", version, "schema"]:
                if method == "GET":
                    return 200, self._schema_text(self.version(subject, version, _flag(query, "deleted")), query)
            case ["schemas"]:
                if method == "GET":
                    return 200, self.schemas(query)
            case ["schemas", "types"]:
                if method == "GET":
                    return 200, list(SCHEMA_TYPES)
            case ["schemas", "ids", schema_id, *rest] if rest in ([], ["versions"], ["subjects"], ["schema"]):
                if method == "GET":
                    return 200, self.schema_by_id(schema_id, rest, query)
            case ["schemas", "guids", guid]:
                if method == "GET":
                    return 200, self.schema_by_guid(guid, query)
            case ["schemas", "guids", guid, "ids"]:
                if method == "GET":
                    guid = parse_guid(guid)
                    return 200, [{"context": context, "id": schema_id}
                                 for context, schema_id in (state.ids_by_guid(guid) if guid else [])]
            case ["config"]:
                if method == "GET":
                    return 200, self._config_body(None, state.compatibility(None))
                if method == "PUT":
                    return 200, await self.set_config(None, body)
            case ["config", subject]:
                return await self.subject_config(method, subject, query, body)
            case ["mode"]:
                if method == "GET":
                    return 200, {"mode": state.mode(None)}
                if method == "PUT":
                    return 200, await self.set_mode(None, body, _flag(query, "force"))
            case ["mode", subject]:
                return await self.subject_mode(method, subject, query, body)
            case ["compatibility", "subjects", subject, "versions", *version] if len(version) <= 1:
                if method == "POST":
                    return 200, await self.test_compatibility(subject, version[0] if version else None, query, body)
            case _:
                raise RegistryError(404, 404, "HTTP 404 Not Found")
        raise RegistryError(405, 405, "HTTP 405 Method Not Allowed")

    # -- reads ------------------------------------------------------------------------------------

    def version(self, subject: str, version_text: str, include_deleted: bool = False) -> SchemaVersion:
        number = _version_arg(version_text)
        versions = self.state.versions(subject, include_deleted=include_deleted)
        if not versions:
            raise subject_not_found(subject)
        if number is None:
            return versions[-1]
        for entry in versions:
            if entry.version == number:
                return entry
        raise version_not_found(number)

    def contexts(self, query: dict) -> list[str]:
        """GET /contexts: the default context, then the others by name; those starting with
        `contextPrefix` (`.st`), then `offset` of them skipped and at most `limit` (a limit that is
        not positive is none), as Confluent pages them."""
        offset, limit = _int_query(query, "offset", 0), _int_query(query, "limit", -1)
        prefix = query.get("contextPrefix") or ""
        found = [context for context in self.state.contexts() if context.startswith(prefix)]
        found = found[max(offset, 0):]
        return found[:limit] if limit > 0 else found

    def schemas(self, query: dict) -> list[dict]:
        """GET /schemas: every subject version whose subject starts with `subjectPrefix` (as
        Confluent matches it against its stored keys: empty means every context's, `:*:<p>` any
        context's subjects starting with p, `:.ctx:` one context's), ordered by subject then
        version; `deleted` adds soft-deleted ones, `latestOnly` keeps each subject's last, then
        `offset` and `limit` (ignored unless positive) take a page."""
        prefix = query.get("subjectPrefix", "")
        offset, limit = _int_query(query, "offset", 0), _int_query(query, "limit", -1)
        deleted, latest_only = _flag(query, "deleted"), _flag(query, "latestOnly")
        found = []
        for subject in sorted(self.state.subjects):
            if not (matches_prefix(subject, prefix) if prefix.startswith(EVERY_CONTEXT) else subject.startswith(prefix)):
                continue
            versions = self.state.versions(subject, include_deleted=deleted)
            found += versions[-1:] if latest_only else versions
        page = found[max(offset, 0):offset + limit if limit > 0 else None]
        return [self._schema_body(entry, query) for entry in page]

    def referenced_by(self, entry: SchemaVersion) -> list[int]:
        """Ids of the live schema versions whose references name this subject version."""
        return sorted({other.schema_id for subject in self.state.subject_names()
                       for other in self.state.versions(subject)
                       if any(with_parent(str(ref.get("subject")), other.subject) == entry.subject
                              and ref.get("version") == entry.version for ref in other.references)})

    def _refuse_if_referenced(self, entry: SchemaVersion) -> None:
        if self.referenced_by(entry):
            raise RegistryError(422, 42206, "One or more references exist to the schema {magic=1,keytype=SCHEMA,"
                                            f"subject={entry.subject},version={entry.version}}}.")

    def schema_by_id(self, schema_id_text: str, rest: list[str], query: dict):
        try:
            schema_id = int(schema_id_text)
        except ValueError:
            raise RegistryError(404, 404, "HTTP 404 Not Found") from None
        entries, subject = self.state.id_in_context_of(schema_id, query.get("subject"))
        if not _flag(query, "deleted") and rest in (["versions"], ["subjects"]):
            entries = [entry for entry in entries if not entry.deleted]
        if subject and rest in ([], ["schema"]):
            # The subject picks which registration answers, never hides the id (as in Confluent's
            # default context): a deserializer may name a subject the schema was not registered under.
            entries = sorted(entries, key=lambda entry: entry.subject != subject)
        elif subject and split(subject)[1]:  # (a context alone, `:.ctx:`, picks the context only)
            entries = [entry for entry in entries if entry.subject == subject]
        if not entries and rest in ([], ["schema"]):
            raise schema_not_found(schema_id)
        if rest == ["versions"]:
            return [{"subject": e.subject, "version": e.version} for e in entries]
        if rest == ["subjects"]:
            return sorted({e.subject for e in entries})
        if rest == ["schema"]:
            return self._schema_text(entries[0], query)
        return self._with_found_tags(self._schema_body(entries[0], query, with_subject=False), entries[0], query)

    def schema_by_guid(self, guid_text: str, query: dict) -> dict:
        """GET /schemas/guids/{guid}: the schema with that content, as `GET /schemas/ids/{id}`
        answers it, from the default context where it has the guid, else the first other context
        by name; 40403 for a guid no subject version has (or one that is no guid at all)."""
        guid = parse_guid(guid_text)
        found = self.state.ids_by_guid(guid) if guid else []
        if not found:
            raise RegistryError(404, 40403, f"Schema {guid_text} not found")
        context, schema_id = found[0]
        entries = [entry for entry in self.state.by_id(schema_id, context) if entry.guid == guid]
        entries.sort(key=lambda entry: entry.deleted)
        return self._schema_body(entries[0], query, with_subject=False)

    def latest_with_metadata(self, subject: str, query: dict) -> dict:
        """GET /subjects/{s}/metadata?key=k&value=v[&key=...&value=...]: the latest version whose
        metadata properties hold every pair (`deleted=true`: soft-deleted versions too); 40401
        without the subject, 40403 when no version matches."""
        keys, values = (query.every("key"), query.every("value")) if isinstance(query, Query) else ([], [])
        pairs = list(zip(keys, values))  # (a key without its value is left out, as Confluent does)
        versions = self.state.versions(subject, include_deleted=_flag(query, "deleted"))
        if not versions:
            raise subject_not_found(subject)
        for entry in reversed(versions):
            properties = (entry.metadata or {}).get("properties")
            if entry.metadata is not None and all((properties or {}).get(k) == v for k, v in pairs):
                return self._schema_body(entry, query)
        raise schema_not_found()

    async def lookup(self, subject: str, query: dict, body) -> dict:
        """POST /subjects/{s}: the version holding this schema, its metadata and rule set (a request
        without a `confluent:version` matches a version with one, and the other way round when it
        names that version's number); failing that, as registering would store it: the latest
        version's metadata and rule set where the request has none, under the config's defaults
        and overrides (Confluent's lookUpSchemaUnderSubject)."""
        parsed, references = await self._parse_request(body, subject, self._normalize(subject, query))
        self._check_field_names(subject, parsed, body, references)
        metadata, rule_set = self._metadata_arg(body), self._rule_set_arg(body)
        versions = self.state.versions(subject, include_deleted=_flag(query, "deleted"))
        if not versions:
            raise subject_not_found(subject)
        found = self._matching(versions, parsed, references, metadata, rule_set)
        if found is None:
            latest = self.state.versions(subject)
            merged = self._with_contracts(subject, metadata, rule_set, latest[-1] if latest else None)
            if merged != (metadata, rule_set):
                found = self._matching(versions, parsed, references, *merged)
        if found is None:
            raise schema_not_found()
        return self._schema_body(found, query)

    @staticmethod
    def _matching(versions: list[SchemaVersion], parsed: ParsedSchema, references: list,
                  metadata: dict | None, rule_set: dict | None) -> SchemaVersion | None:
        """The version with this content: an exact match first, then (latest first) one that
        differs only in `confluent:version` as Confluent's canLookupIgnoringVersion allows."""
        same_schema = [entry for entry in versions if entry.schema == parsed.canonical
                       and entry.schema_type == parsed.schema_type and entry.references == references
                       and entry.rule_set == rule_set]
        for entry in reversed(same_schema):
            if entry.metadata == metadata:
                return entry
        for entry in reversed(same_schema):
            if _same_ignoring_version(metadata, entry):
                return entry
        return None

    def _with_contracts(self, subject: str, metadata: dict | None, rule_set: dict | None,
                        previous: SchemaVersion | None, new_version: int | None = None,
                        version_given: bool = False) -> tuple[dict | None, dict | None]:
        """The metadata and rule set a registration stores (Confluent's maybeSetMetadataRuleSet):
        the request's own, else the previous version's, under the config's defaults and under its
        overrides; `confluent:version` set to the new version when the request names a version or
        the merged metadata has one."""
        contracts = self.state.contracts_in_scope(subject)
        if metadata is None and previous is not None:
            metadata = previous.metadata
        if rule_set is None and previous is not None:
            rule_set = previous.rule_set
        metadata = merge_metadata(merge_metadata(contracts.get("defaultMetadata"), metadata),
                                  contracts.get("overrideMetadata"))
        rule_set = merge_rule_sets(merge_rule_sets(contracts.get("defaultRuleSet"), rule_set),
                                   contracts.get("overrideRuleSet"))
        if new_version is not None and (version_given or _confluent_version(metadata) is not None):
            metadata = with_confluent_version(metadata, new_version)
        return metadata, rule_set

    async def modify_tags(self, subject: str, version_text: str, body) -> dict:
        """POST /subjects/{s}/versions/{v}/tags: a new version holding version v's schema with the
        `tagsToAdd` added and the `tagsToRemove` removed (registry/tags.py), under the request's
        `metadata` (else version v's) with `confluent:version` set to the new version, and its
        `ruleSet`, or the previous version's with `rulesToMerge` merged over it and `rulesToRemove`
        (names) left out (Confluent's modifySchemaTags). `newVersion`, when given, must be the next
        version (else 42201). Registered as any schema is: checked for compatibility, and a
        registration that changes nothing answers the version that holds it."""
        if not isinstance(body, dict):
            raise RegistryError(422, 422, "Unrecognized field: the request body must be a JSON object")
        entry = self.version(subject, version_text)
        new_version = body.get("newVersion")
        if new_version is not None and type(new_version) is not int:
            raise RegistryError(422, 42202, f"The specified version '{new_version}' is not a valid version id.")
        try:
            to_add = schema_tags_arg(body.get("tagsToAdd"), "tagsToAdd")
            to_remove = schema_tags_arg(body.get("tagsToRemove"), "tagsToRemove")
        except TagRequestError as exc:
            raise RegistryError(422, 422, str(exc)) from None
        text = entry.schema
        if to_add or to_remove:
            text = await self._tagged_text(subject, entry.schema_type, text, entry.references, to_add, to_remove)
        rule_set = self._rule_set_arg(body)
        merging, removing = body.get("rulesToMerge"), body.get("rulesToRemove")
        if merging is not None or removing is not None:
            if rule_set is not None:
                raise RegistryError(422, 42210, "ruleSet should be omitted if specifying rulesToMerge or "
                                                "rulesToRemove")
            if removing is not None and (not isinstance(removing, list)
                                         or not all(isinstance(name, str) for name in removing)):
                raise RegistryError(422, 422, "rulesToRemove must be a list of rule names")
            live = self.state.versions(subject)
            before = next((e for e in live if e.version == new_version - 1), None) if new_version else (
                live[-1] if live else None)
            rule_set = merge_rule_sets(before.rule_set if before else None,
                                       self._rule_set_arg({"ruleSet": merging}))
            if rule_set is not None and removing:
                kept = {phase: [r for r in rule_set.get(phase, []) if r.get("name") not in removing]
                        for phase in PHASES}
                rule_set = {**{phase: rules for phase, rules in kept.items() if rules},
                            **({"enableAt": rule_set["enableAt"]} if "enableAt" in rule_set else {})}
        metadata = self._metadata_arg(body)
        metadata = with_confluent_version(entry.metadata if metadata is None else metadata, new_version or 0)
        request = {"schema": text, "schemaType": entry.schema_type, "references": entry.references,
                   "metadata": metadata}
        if rule_set is not None:
            request["ruleSet"] = rule_set
        if new_version is not None:
            request["version"] = new_version
        return await self.register(subject, request, {})

    async def test_compatibility(self, subject: str, version_text: str | None, query: dict, body) -> dict:
        parsed, references = await self._parse_request(body, subject, self._normalize(subject, query),
                                                        self._validate_new(subject))
        self._check_field_names(subject, parsed, body, references)
        level = self.state.compatibility(subject)
        metadata = self._metadata_arg(body)
        if version_text is None:
            errors = await self._compatibility_errors(parsed, subject, level, metadata)
        else:
            number = _version_arg(version_text)
            versions = self.state.versions(subject)
            if not versions and number is not None:
                raise subject_not_found(subject)
            # "latest" of a subject without versions: nothing to be incompatible with but its reserved fields
            previous = self.version(subject, version_text) if versions else None
            errors = self._reserved_field_errors(subject, parsed, metadata, previous)
            if previous is not None:
                errors += await self._errors_against(parsed, [previous], level.removesuffix("_TRANSITIVE"))
            errors = self._with_config_note(subject, level, errors)
        answer = {"is_compatible": not errors}
        if _flag(query, "verbose"):
            answer["messages"] = errors
        return answer

    async def subject_config(self, method: str, subject: str, query: dict, body) -> tuple[int, object]:
        configs, normalizes = self.state.configs, self.state.normalizes
        if method == "GET":
            if subject in configs or subject in normalizes or subject in self.state.contracts:
                return 200, self._config_body(subject, configs.get(subject))
            if _flag(query, "defaultToGlobal"):
                # The level in force: its context's where it has one, else the global one
                return 200, self._config_body(subject, self.state.compatibility(subject),
                                              self.state.normalize(subject),
                                              self.state.contracts_in_scope(subject))
            raise RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level compatibility "
                                            "configured")
        if method == "PUT":
            return 200, await self.set_config(subject, body)
        if method == "DELETE":
            if subject not in configs and subject not in normalizes and subject not in self.state.contracts:
                raise subject_not_found(subject)
            previous = self._config_body(subject, configs.get(subject))
            await self._write([(config_key(subject), None)])
            return 200, previous
        raise RegistryError(405, 405, "HTTP 405 Method Not Allowed")

    def _config_body(self, subject: str | None, level: str | None, normalize: bool | None = None,
                     contracts: dict | None = None) -> dict:
        """GET /config[/{subject}]: the level, `normalize`, and the data-contract fields
        (defaultMetadata, overrideMetadata, defaultRuleSet, overrideRuleSet) that are set."""
        body = {"compatibilityLevel": level} if level is not None else {}
        if normalize is None:
            normalize = self.state.normalizes.get(subject)
        if normalize is not None:
            body["normalize"] = normalize
        body.update(self.state.contracts.get(subject, {}) if contracts is None else contracts)
        return body

    async def set_config(self, subject: str | None, body) -> dict:
        """PUT /config[/{subject}]: {"compatibility": level, "normalize": bool, "defaultMetadata",
        "overrideMetadata", "defaultRuleSet", "overrideRuleSet"}, any of them; what is not named
        stays as it was, a data-contract field given as null is unset (Confluent's
        ConfigValue.update). The answer is the config as it now is."""
        contract_named = isinstance(body, dict) and any(name in body for name in (*CONTRACT_FIELDS, *CONFIG_SETTINGS))
        if isinstance(body, dict) and "compatibility" not in body and ("normalize" in body or contract_named):
            level = self.state.configs.get(subject)
        else:
            level = _level_arg(body)
        normalize = body.get("normalize", self.state.normalizes.get(subject))
        if normalize is not None and not isinstance(normalize, bool):
            raise RegistryError(422, 422, "Invalid normalize: true or false")
        contracts = dict(self.state.contracts.get(subject, {}))
        for name in CONTRACT_FIELDS:
            if name not in body:
                continue
            if name.endswith("Metadata"):
                value = self._metadata_arg({"metadata": body[name]})
            else:
                value = self._rule_set_arg({"ruleSet": body[name]})
            if value is None:
                contracts.pop(name, None)
            else:
                contracts[name] = value
        for name, kind in CONFIG_SETTINGS.items():
            if name not in body:
                continue
            if body[name] is None:
                contracts.pop(name, None)
            elif not isinstance(body[name], kind):
                raise RegistryError(422, 422, f"Invalid {name}: " + ("a string" if kind is str else "true or false"))
            else:
                contracts[name] = body[name]
        await self._write([(config_key(subject), config_value(level, normalize, contracts))])
        answer = {"compatibility": level} if level is not None else {}
        if normalize is not None:
            answer["normalize"] = normalize
        answer.update(contracts)
        return answer

    def _normalize(self, subject: str, query: dict) -> bool:
        """normalize=true on the request, or the subject's (or global) config `normalize`."""
        return _flag(query, "normalize") or bool(self.state.normalize(subject))

    async def subject_mode(self, method: str, subject: str, query: dict, body) -> tuple[int, object]:
        modes = self.state.modes
        if method == "GET":
            if subject in modes:
                return 200, {"mode": modes[subject]}
            if _flag(query, "defaultToGlobal"):
                return 200, {"mode": self.state.mode(subject)}
            raise RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")
        if method == "PUT":
            return 200, await self.set_mode(subject, body, _flag(query, "force"))
        if method == "DELETE":
            if subject not in modes:
                raise subject_not_found(subject)
            previous = modes[subject]
            await self._write([(mode_key(subject), None)])
            return 200, {"mode": previous}
        raise RegistryError(405, 405, "HTTP 405 Method Not Allowed")

    async def set_mode(self, subject: str | None, body, force: bool) -> dict:
        mode = body.get("mode") if isinstance(body, dict) else None
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise RegistryError(422, 42204, "Invalid mode. Valid values are READWRITE, READONLY, IMPORT")
        mode = mode.upper()
        if mode == "IMPORT" and not force:
            # Only an empty registry (or subject) goes into IMPORT: soft-deleted schemas count.
            found = (self.state.versions(subject, include_deleted=True) if subject is not None
                     else self.state.subject_names(include_deleted=True))
            if found:
                raise RegistryError(422, 42205, "Cannot import since found existing subjects")
        await self._write([(mode_key(subject), mode_value(mode))])
        return {"mode": mode}

    def _require_writable(self, subject: str) -> None:
        if self.state.mode(subject) == "READONLY":
            raise RegistryError(422, 42205, f"Subject {subject} is in read-only mode")

    # -- writes -----------------------------------------------------------------------------------

    async def delete_context(self, context_text: str) -> NoContent:
        """DELETE /contexts/{context} (`.staging`, `staging` or `:.staging:`): forgets an empty
        context, one without a subject version (soft-deleted ones count); 42211 otherwise. As in
        Confluent's registry a context that was never there is deleted all the same."""
        try:
            prefix = context_prefix(context_text)
        except ValueError as exc:
            raise RegistryError(400, 400, str(exc)) from None
        context = split(prefix)[0] if prefix else DEFAULT_CONTEXT
        if self.state.context_has_subjects(context):
            raise RegistryError(422, 42211, f"The specified context '{prefix or qualify(context, '')}' is not empty.")
        if context != DEFAULT_CONTEXT:
            await self._write([(context_key_record(context), None)])
        return NoContent()

    async def register(self, subject: str, body, query: dict | None = None) -> dict:
        body, tagging = await self._with_request_tags(subject, body)
        # A schema given with its id (IMPORT) is not validated as new (Confluent's validateAsNew)
        validate_new = isinstance(body, dict) and body.get("id") is None and self._validate_new(subject)
        parsed, references = await self._parse_request(body, subject, self._normalize(subject, query or {}),
                                                        validate_new)
        metadata, rule_set = self._metadata_arg(body), self._rule_set_arg(body)
        state = self.state
        mode = state.mode(subject)
        self._require_writable(subject)
        requested = body.get("version")
        if body.get("id") is not None or (mode == "IMPORT" and requested is not None):
            if mode != "IMPORT":
                raise RegistryError(422, 42205, f"Subject {subject} is not in import mode")
            return await self._import(subject, body, parsed, references, metadata, rule_set)
        if mode == "IMPORT":
            raise RegistryError(422, 42205, f"Subject {subject} is not in read-write mode")
        self._check_field_names(subject, parsed, body, references)
        if requested is not None and type(requested) is not int:
            raise RegistryError(422, 42202, f"The specified version '{requested}' is not a valid version id.")
        requested = requested or 0  # 0: the next version; -1: the latest if it holds this schema
        answer_query = _answer_format(query or {}, parsed, body)
        live = state.versions(subject)
        every = state.versions(subject, include_deleted=True)
        version = every[-1].version + 1 if every else 1
        contracts = state.contracts_in_scope(subject)
        if tagging == "tags" and requested == 0:
            requested = -1  # (Confluent's toSchemaWithTags: a new version, its confluent:version set)
        if requested in (0, -1) and not contracts and not tagging:
            # As it is asked for (Confluent's lookup before registering, when no config adds metadata
            # or rules): the latest version only for -1
            found = self._matching(live[-1:] if requested == -1 else live, parsed, references, metadata, rule_set)
            if found is not None:
                return self._registered(found, answer_query)
        if requested not in (0, -1) and requested != version:
            raise RegistryError(422, 42201, "Version is not one more than previous version")
        metadata, rule_set = self._with_contracts(subject, metadata, rule_set, live[-1] if live else None,
                                                  version, version_given=requested != 0)
        if requested == 0:  # (a request adding tags has -1 here: it always makes a version)
            found = self._matching(live, parsed, references, metadata, rule_set)
            if found is not None:
                return self._registered(found, answer_query)
        errors = await self._compatibility_errors(parsed, subject, state.compatibility(subject), metadata)
        if errors:
            raise RegistryError(409, 409, f"Schema being registered is incompatible with an earlier schema for "
                                          f"subject \"{subject}\", details: [{', '.join(errors)}]")
        context = context_of(subject)
        schema_id = state.id_of(parsed.schema_type, parsed.canonical, references, context, metadata, rule_set)
        if schema_id is None:
            schema_id = state.next_id(context)
        entry = SchemaVersion(subject, version, schema_id, parsed.canonical, parsed.schema_type, references,
                              metadata=metadata, rule_set=rule_set)
        await self._write([*self._context_record(context), (schema_key(subject, version), schema_value(entry))])
        return self._registered(entry, answer_query)

    async def _with_request_tags(self, subject: str, body) -> tuple[object, str | None]:
        """A registration's `schemaTagsToAdd` and `schemaTagsToRemove` applied to its schema, then,
        with `propagateSchemaTags`, the tags of the subject's latest version added (Confluent's
        toSchemaWithTags and maybePropagateSchemaTags): the request as it is then registered, and
        "tags" when it added or removed tags, "propagate" when it only asked to propagate (neither
        is looked up as an existing version first, as Confluent's registerOrForward does)."""
        if not isinstance(body, dict):
            return body, None
        propagate = body.get("propagateSchemaTags")
        if propagate is not None and not isinstance(propagate, bool):
            raise RegistryError(422, 422, "propagateSchemaTags must be a boolean")
        try:
            to_add = schema_tags_arg(body.get("schemaTagsToAdd"), "schemaTagsToAdd")
            to_remove = schema_tags_arg(body.get("schemaTagsToRemove"), "schemaTagsToRemove")
        except TagRequestError as exc:
            raise RegistryError(422, 422, str(exc)) from None
        if not (to_add or to_remove or propagate):
            return body, None
        text, schema_type = body.get("schema"), str(body.get("schemaType") or AVRO).upper()
        if not isinstance(text, str) or not text.strip():
            raise RegistryError(422, 42201, "Empty schema")
        references = body.get("references")
        if to_add or to_remove:
            text = await self._tagged_text(subject, schema_type, text, references, to_add, to_remove)
        live = self.state.versions(subject) if propagate else []
        previous = tagged_entities(live[-1].schema_type, live[-1].schema) if live else []
        if previous:
            text = await self._tagged_text(subject, schema_type, text, references, previous, [])
        return {**body, "schema": text}, "tags" if to_add or to_remove else "propagate"

    async def _tagged_text(self, subject: str, schema_type: str, text: str, references, to_add: list,
                           to_remove: list) -> str:
        """The schema text with the tags added, then removed (registry/tags.py): a Protobuf schema
        compiled with its references, changed as a descriptor and printed again."""
        try:
            if schema_type != PROTOBUF:
                return modify_tags(schema_type, text, to_add, to_remove)
            parsed, _ = await self._parse_request({"schema": text, "schemaType": PROTOBUF,
                                                   "references": references}, subject)
            descriptor = type(parsed.parsed)()
            descriptor.CopyFrom(parsed.parsed)
            modify_proto_tags(descriptor, to_add, to_remove)
            return print_proto(descriptor)
        except InvalidSchema as exc:
            raise RegistryError(422, 42201, str(exc)) from None
        except (ValueError, TypeError, AttributeError, RecursionError) as exc:  # (a malformed document)
            raise RegistryError(422, 42201, f"Invalid schema: {type(exc).__name__}: {exc}") from None

    def _with_found_tags(self, answer: dict, entry: SchemaVersion, query: dict) -> dict:
        """`?findTags=T` (repeated, or `*` for every tag): the answer with `schemaTags`, the entities
        of the schema tagged with any of them, where there are some (Confluent's extractSchemaTags)."""
        wanted = query.every("findTags") if isinstance(query, Query) else []
        if wanted:
            try:
                found = schema_tags_answer(tagged_entities(entry.schema_type, entry.schema), wanted)
            except InvalidSchema as exc:
                raise RegistryError(422, 42201, str(exc)) from None
            if found:
                answer["schemaTags"] = found
        return answer

    def _context_record(self, context: str) -> list[tuple[bytes, bytes]]:
        """The CONTEXT record a context's first registration writes, as Confluent's registry does."""
        if context == DEFAULT_CONTEXT or context in self.state.declared_contexts:
            return []
        return [(context_key_record(context), context_value(context))]

    def _registered(self, entry: SchemaVersion, query: dict | None = None) -> dict:
        """A registration's answer, as Confluent's current registry gives it (RegisterSchemaResponse):
        the id, version and guid, then the schema as stored: its type (AVRO too), references where
        it has any, metadata and rule set where it has them, and its text (in the `format` asked
        for, _answer_format)."""
        answer = {"id": entry.schema_id, "version": entry.version, "guid": entry.guid,
                  "schemaType": entry.schema_type}
        if entry.references:
            answer["references"] = entry.references
        if entry.metadata is not None:
            answer["metadata"] = entry.metadata
        if entry.rule_set is not None:
            answer["ruleSet"] = entry.rule_set
        answer["schema"] = self._schema_format(entry, query or {})
        return answer

    async def _import(self, subject: str, body: dict, parsed: ParsedSchema, references: list,
                      metadata: dict | None = None, rule_set: dict | None = None) -> dict:
        """A registration in IMPORT mode: the id (and version) the request names, as a registry the
        schemas are copied from gave them; compatibility is not checked."""
        schema_id, version = body.get("id"), body.get("version")
        if type(schema_id) is not int or not 1 <= schema_id <= MAX_VERSION:
            raise RegistryError(422, 42205, f"Subject {subject}: importing needs an id between 1 and 2^31-1, not "
                                            f"{json.dumps(schema_id)}")
        if version is not None and (type(version) is not int or not 1 <= version <= MAX_VERSION):
            raise RegistryError(422, 42202, f"The specified version '{version}' is not a valid version id. "
                                            "Allowed values are between [1, 2^31-1]")
        same = (parsed.canonical, parsed.schema_type, references, metadata, rule_set)
        for entry in self.state.by_id(schema_id, context_of(subject)):
            if (entry.schema, entry.schema_type, entry.references, entry.metadata, entry.rule_set) != same:
                raise RegistryError(422, 42205, f"Overwrite new schema with id {schema_id} is not permitted.")
        every = self.state.versions(subject, include_deleted=True)
        if version is None:
            version = every[-1].version + 1 if every else 1
        existing = next((e for e in every if e.version == version), None)
        if existing is not None:
            if (existing.schema_id, existing.schema, existing.schema_type, existing.references,
                    existing.metadata, existing.rule_set) == (schema_id, *same):
                return self._registered(existing)
            raise RegistryError(422, 42205, f"Overwrite new schema in subject {subject} version {version} is not "
                                            "permitted.")
        entry = SchemaVersion(subject, version, schema_id, parsed.canonical, parsed.schema_type, references,
                              metadata=metadata, rule_set=rule_set)
        await self._write([*self._context_record(context_of(subject)),
                           (schema_key(subject, version), schema_value(entry))])
        return self._registered(entry)

    async def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        every = self.state.versions(subject, include_deleted=True)
        if not every:
            raise subject_not_found(subject)
        self._require_writable(subject)
        live = [entry for entry in every if not entry.deleted]
        if permanent:
            if live:
                raise RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being "
                                                "permanently deleted")
            await self._write([(schema_key(subject, e.version), None) for e in every])
            return [entry.version for entry in every]
        if not live:
            raise RegistryError(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete "
                                            "permanently")
        for entry in live:
            self._refuse_if_referenced(entry)
        await self._write([(delete_subject_key(subject), delete_subject_value(subject, live[-1].version))])
        return [entry.version for entry in live]

    async def delete_version(self, subject: str, version_text: str, permanent: bool) -> int:
        number = _version_arg(version_text)
        every = self.state.versions(subject, include_deleted=True)
        if not every:
            raise subject_not_found(subject)
        if number is None:
            candidates = every if permanent else [e for e in every if not e.deleted]
            if not candidates:
                raise subject_not_found(subject)
            entry = candidates[-1]
        else:
            entry = next((e for e in every if e.version == number), None)
            if entry is None:
                raise version_not_found(number)
        self._require_writable(subject)
        if permanent and not entry.deleted:
            raise RegistryError(404, 40407, f"Subject '{subject}' Version {entry.version} was not deleted first "
                                            "before being permanently deleted")
        if not permanent and entry.deleted:
            raise RegistryError(404, 40406, f"Subject '{subject}' Version {entry.version} was soft deleted.Set "
                                            "permanent=true to delete permanently")
        if permanent:
            await self._write([(schema_key(subject, entry.version), None)])
        else:
            self._refuse_if_referenced(entry)
            deleted = SchemaVersion(entry.subject, entry.version, entry.schema_id, entry.schema, entry.schema_type,
                                    entry.references, deleted=True, metadata=entry.metadata,
                                    rule_set=entry.rule_set, md5=entry.md5)
            await self._write([(schema_key(subject, entry.version), schema_value(deleted))])
        return entry.version

    async def _write(self, records: list[tuple[bytes, bytes | None]]) -> None:
        try:
            await self.log.append(records)
        except AppendFailed as exc:
            if exc.error.name in ("MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE"):
                raise RegistryError(422, 42209, "Schema is too large") from None
            logger.error("registry: writing to _schemas failed: %s", exc)
            raise RegistryError(500, 50001, f"Error in the backend data store: {exc.error.name}") from None

    # -- helpers ----------------------------------------------------------------------------------

    def _schema_body(self, entry: SchemaVersion, query: dict, *, with_subject: bool = True) -> dict:
        body = {"subject": entry.subject, "version": entry.version, "id": entry.schema_id} if with_subject else {}
        body["guid"] = entry.guid
        if entry.schema_type != "AVRO":
            body["schemaType"] = entry.schema_type
        if entry.references:
            body["references"] = entry.references
        if entry.metadata is not None:
            body["metadata"] = entry.metadata
        if entry.rule_set is not None:
            body["ruleSet"] = entry.rule_set
        body["schema"] = self._schema_format(entry, query)
        return body

    @staticmethod
    def _metadata_arg(body) -> dict | None:
        try:
            return metadata_arg(body.get("metadata") if isinstance(body, dict) else None)
        except InvalidMetadata as exc:
            raise RegistryError(422, 422, f"Invalid metadata: {exc}") from None

    @staticmethod
    def _rule_set_arg(body) -> dict | None:
        try:
            return rule_set_arg(body.get("ruleSet") if isinstance(body, dict) else None)
        except InvalidRuleSet as exc:
            if exc.unreadable:
                raise RegistryError(422, 422, f"Invalid ruleSet: {exc}") from None
            raise RegistryError(422, 42210, f"Invalid rule set: {exc}") from None

    def _schema_text(self, entry: SchemaVersion, query: dict):
        """GET .../schema: the schema itself, a JSON document for Avro and JSON Schema, the .proto text
        (or its serialized form) for Protobuf."""
        if entry.schema_type == PROTOBUF:
            return RawText(self._schema_format(entry, query))
        return json.loads(entry.schema)

    def _schema_format(self, entry: SchemaVersion, query: dict) -> str:
        """The schema text in the `format` asked for: Protobuf's `serialized` is the base64
        FileDescriptorProto (what confluent-kafka's Protobuf deserializer asks for); any other format,
        or another type, answers the stored text."""
        if entry.schema_type == PROTOBUF and query.get("format") == "serialized":
            try:
                plan = self._plan(entry)
            except InvalidSchema as exc:
                raise RegistryError(422, 42201, str(exc)) from None
            text = self._serialized.get(plan)
            if text is None:
                if _COMPILES_FIRST.get():
                    raise _CompileFirst(plan)
                text = _serialized_or_error(plan)
                self._remember_serialized(plan, text)
            if isinstance(text, InvalidSchema):
                raise RegistryError(422, 42201, str(text))
            return text
        return entry.schema

    async def _parse_request(self, body, subject: str | None = None, normalize: bool = False,
                             validate_new: bool = False) -> tuple[ParsedSchema, list]:
        """The request's schema, parsed with its references (in a worker thread: Avro and JSON
        Schema over PARSE_IN_THREAD_CHARS, as Apache Avro's parser takes seconds on a hundred thousand
        fields, which would stall the broker's event loop; Protobuf always, as it waits for protoc's
        child process), and its references."""
        if not isinstance(body, dict):
            raise RegistryError(422, 422, "Unrecognized field: the request body must be a JSON object")
        text = body.get("schema")
        if not isinstance(text, str) or not text.strip():
            raise RegistryError(422, 42201, "Empty schema")
        schema_type = body.get("schemaType") or "AVRO"
        if not isinstance(schema_type, str):
            raise RegistryError(422, 42201, "Invalid schema type")
        references = self._references_arg(body.get("references"), subject)
        kind = schema_type.upper()
        try:
            planned = self._reference_plans(references, subject)
            size = len(text) + sum(plan.size() for _, plan in planned)

            def parse() -> ParsedSchema:
                resolved = [(name, _parsed_cached(plan)) for name, plan in planned]
                return parse_schema(kind, text, resolved, normalize=normalize, validate_new=validate_new)

            if kind == PROTOBUF or size > PARSE_IN_THREAD_CHARS:  # (protoc: a child process to wait for)
                return await asyncio.to_thread(parse), references
            return parse(), references
        except InvalidSchema as exc:
            if schema_type.upper() != PROTOBUF:
                raise RegistryError(422, 42201, str(exc)) from None
            # Confluent's shape: the schema as it was sent, then why it is invalid
            refs = ", ".join(f"{{name='{r['name']}', subject='{r['subject']}', version={r['version']}}}"
                             for r in references)
            raise RegistryError(422, 42201, f"Invalid schema {{subject={subject},version=0,id=-1,"
                                            f"schemaType=PROTOBUF,references=[{refs}],schema={text}}} with refs "
                                            f"[{refs}] of type PROTOBUF, details: {exc}") from None

    def _references_arg(self, references, subject: str | None) -> list[dict]:
        """A request's references, each {"name", "subject", "version"}, a version of -1 (latest)
        replaced with the number it stands for, as stored in `_schemas`."""
        if references is None:
            return []
        if not isinstance(references, list):
            raise RegistryError(422, 42201, "Invalid schema: references must be a list")
        normalized = []
        for ref in references:
            if (not isinstance(ref, dict) or not isinstance(ref.get("name"), str) or not ref["name"]
                    or not isinstance(ref.get("subject"), str) or not ref["subject"]
                    or type(ref.get("version")) is not int):
                raise RegistryError(422, 42201, "Invalid schema: a reference is {\"name\": string, \"subject\": "
                                                f"string, \"version\": integer}}, not {json.dumps(ref)[:200]}")
            version = ref["version"]
            if version == -1:
                live = self.state.versions(with_parent(ref["subject"], subject))
                version = live[-1].version if live else -1
            normalized.append({"name": ref["name"], "subject": ref["subject"], "version": version})
        return normalized

    def _reference_plans(self, references: list[dict], parent: str | None) -> list[tuple[str, SchemaPlan]]:
        """What parsing the referenced schemas takes (their texts, theirs references' too), read from
        the registry's state here so that the parsing can happen in a worker thread; an unqualified
        reference names a subject of the `parent` subject's context."""
        return [(str(ref.get("name")), self._plan(self._referenced(ref, parent), 1)) for ref in references]

    def parsed_by_id(self, schema_id: int) -> ParsedSchema | None:
        """The schema of an id of the default context, parsed with its references; None for an id
        not registered. Raises InvalidSchema for a schema (written by another registry) that does
        not parse here."""
        plan = self.schema_plan_by_id(schema_id)
        return None if plan is None else parse_planned(plan)

    def schema_plan_by_id(self, schema_id: int) -> SchemaPlan | None:
        """What parsing the schema of an id of the default context takes, as plain values (its text
        and its references' texts, theirs too), so that it can be parsed away from the event loop
        (the console's message browser, registry/decode.py); None for an id not registered. Raises
        InvalidSchema for a reference that is not registered or references nested too deep."""
        entries, _ = self.state.id_in_context_of(schema_id, None)
        return self._plan(entries[0]) if entries else None

    def _plan(self, entry: SchemaVersion, depth: int = 0) -> SchemaPlan:
        if depth > MAX_REFERENCE_DEPTH:
            raise InvalidSchema(f"Invalid schema: references nest deeper than {MAX_REFERENCE_DEPTH}")
        return SchemaPlan(entry.schema_type, entry.schema,
                          tuple((str(ref.get("name")), self._plan(self._referenced(ref, entry.subject), depth + 1))
                                for ref in entry.references))

    def _referenced(self, ref: dict, parent: str | None) -> SchemaVersion:
        entry = next((e for e in self.state.versions(with_parent(str(ref.get("subject")), parent), include_deleted=True)
                      if e.version == ref.get("version")), None)
        if entry is None:
            raise InvalidSchema(f"Invalid schema: reference {ref.get('name')} names subject "
                                f"'{ref.get('subject')}' version {ref.get('version')}, which is not registered")
        return entry

    def _parsed(self, entry: SchemaVersion, depth: int = 0) -> ParsedSchema:
        """A stored schema parsed with its references; the last PARSED_CACHE are kept (each
        registration compares with earlier versions, parsed once this way)."""
        return _parsed_cached(self._plan(entry, depth))

    async def _compatibility_errors(self, parsed: ParsedSchema, subject: str, level: str,
                                    metadata: dict | None = None) -> list[str]:
        """Against the latest live version, or every live version for a _TRANSITIVE level; with a
        `compatibilityGroup` in the config in scope, only the versions whose metadata property of that
        name has the value `metadata` has (absent counts as a value), as Confluent's registry does."""
        live = self.state.versions(subject)
        errors = self._reserved_field_errors(subject, parsed, metadata, live[-1] if live else None)
        group = self.state.contracts_in_scope(subject).get("compatibilityGroup")
        if group is not None:
            value = ((metadata or {}).get("properties") or {}).get(group)
            live = [entry for entry in live if ((entry.metadata or {}).get("properties") or {}).get(group) == value]
        if level != "NONE" and live:
            previous = live if level.endswith("_TRANSITIVE") else live[-1:]
            errors += await self._errors_against(parsed, list(reversed(previous)), level.removesuffix("_TRANSITIVE"))
        return self._with_config_note(subject, level, errors)

    def _validate_new(self, subject: str) -> bool:
        """`validateNewSchemas` in the config in scope (true unless set false, Confluent's
        schema.validate.new.schemas default): a schema registered or tested is validated as new
        (registry/schemas.py parse_schema)."""
        return self.state.setting(subject, "validateNewSchemas") is not False

    def _validate_fields(self, subject: str) -> bool:
        """`validateFields` in the config in scope (false unless set, Confluent's
        schema.validate.fields default)."""
        return self.state.setting(subject, "validateFields") is True

    def _reserved_field_errors(self, subject: str, parsed: ParsedSchema, metadata: dict | None,
                               previous: SchemaVersion | None) -> list[str]:
        """With `validateFields`: the reserved fields `metadata` drops from `previous`'s and those the
        schema has at its top level (registry/reserved.py); nothing without it."""
        if not self._validate_fields(subject):
            return []
        return reserved_field_errors(parsed, metadata, previous.metadata if previous else None, previous is not None)

    def _with_config_note(self, subject: str, level: str, errors: list[str]) -> list[str]:
        """Compatibility errors, when there are any, end with the settings they were found under,
        as Confluent's registry writes them."""
        if not errors:
            return errors
        flag = "true" if self._validate_fields(subject) else "false"
        return [*errors, f"{{validateFields: '{flag}', compatibility: '{level}'}}"]

    def _check_field_names(self, subject: str, parsed: ParsedSchema, body: dict, references: list) -> None:
        """With `validateFields`, a JSON object schema's property names may not start with `$$`
        (Confluent's 42201, its shape: the schema as it was sent, then why it is invalid)."""
        if not self._validate_fields(subject):
            return
        name = restricted_field(parsed)
        if name is None:
            return
        refs = ", ".join(f"{{name='{r['name']}', subject='{r['subject']}', version={r['version']}}}"
                         for r in references)
        raise RegistryError(422, 42201, f"Invalid schema {{subject={subject},version=0,id=-1,schemaType=JSON,"
                                        f"references=[{refs}],schema={body.get('schema')}}}, details: #: Field names "
                                        f"cannot start with {RESTRICTED_PREFIX} prefix")

    async def _errors_against(self, parsed: ParsedSchema, entries: list[SchemaVersion], level: str) -> list[str]:
        """Why `parsed` is not compatible under `level` with each of the stored versions. Avro and JSON
        Schema over PARSE_IN_THREAD_CHARS are parsed and compared in a worker thread (Apache Avro's
        parser and compatibility checker take seconds on hundreds of thousands of fields), and Protobuf
        always (protoc runs in a child process, registry/protobuf.py)."""
        planned = []
        for entry in entries:
            try:
                planned.append((entry.version, self._plan(entry), None))
            except InvalidSchema as exc:
                planned.append((entry.version, None, exc))

        def compare() -> list[str]:
            errors = []
            for version, plan, problem in planned:
                try:
                    if problem is not None:
                        raise problem
                    errors += parsed.compatibility_errors(_parsed_cached(plan), level)
                except InvalidSchema as exc:  # a record written by another registry we cannot parse
                    errors.append(f"version {version} does not parse here: {exc}")
            return errors

        size = len(parsed.canonical) + sum(plan.size() for _, plan, _ in planned if plan is not None)
        if parsed.schema_type != PROTOBUF and size <= PARSE_IN_THREAD_CHARS:
            return compare()
        return await asyncio.to_thread(compare)
