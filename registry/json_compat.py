"""JSON Schema compatibility as Confluent's registry defines it: can a reader schema accept every
document a writer schema accepts? BACKWARD asks it with the new schema as reader and the old one as
writer, FORWARD the other way round, FULL both.

No maintained library answers this, so these are our own rules, one per construct, each named by
Confluent's difference type (what `?verbose=true` shows):

- types: every type the writer allows must be one the reader allows (`integer` is read as a
  `number`, not the other way round: TYPE_NARROWED); a reader with a type where the writer had
  none, or another type, is TYPE_CHANGED.
- objects: a property both have is checked recursively. A property the reader requires and the
  writer did not is REQUIRED_ATTRIBUTE_ADDED (unless the reader gives it a default). A property
  only the writer has is fine when the reader's content model is open (no `additionalProperties`
  or `true`), must fit the reader's `additionalProperties` schema when it has one, and is
  PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL when it is `false`. A property only the reader has
  is PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL when the writer's model was open (the writer may have
  written anything under that name), must read the writer's `additionalProperties` schema when
  it has one, and is fine when the writer's model was closed. A reader that closes
  (ADDITIONAL_PROPERTIES_REMOVED) or narrows (ADDITIONAL_PROPERTIES_NARROWED) what the writer
  left open is incompatible.
- enums: every value the writer allows must be in the reader's enum (ENUM_ARRAY_NARROWED); `const`
  likewise.
- bounds: a maximum / maxLength / maxItems / maxProperties / exclusiveMaximum the reader adds
  (..._ADDED) or lowers (..._DECREASED), a minimum-kind bound it adds or raises (..._INCREASED), a
  pattern it adds or changes, a multipleOf it adds or that does not divide the writer's, and
  uniqueItems it adds are incompatible; dropping or loosening any of them is compatible.
- arrays: `items` checked recursively (per position for tuples).
- combinations: each branch of a writer's anyOf/oneOf must be read by the reader (by one of the
  reader's branches when it has them); a reader's allOf must read the writer in every branch.
- `$ref`s are followed: local pointers (`#/definitions/...`, `#/$defs/...`) into the schema's own
  document, and names of the schema's references (optionally with a pointer after `#`).
"""

from __future__ import annotations

from urllib.parse import unquote

# What each bound may do to be compatible, from the reader's side: a maximum-kind bound must not be
# lower than the writer's, a minimum-kind bound not higher.
UPPER_BOUNDS = {"maximum": "MAXIMUM", "exclusiveMaximum": "EXCLUSIVE_MAXIMUM", "maxLength": "MAX_LENGTH",
                "maxItems": "MAX_ITEMS", "maxProperties": "MAX_PROPERTIES"}
LOWER_BOUNDS = {"minimum": "MINIMUM", "exclusiveMinimum": "EXCLUSIVE_MINIMUM", "minLength": "MIN_LENGTH",
                "minItems": "MIN_ITEMS", "minProperties": "MIN_PROPERTIES"}
OBJECT_KEYWORDS = ("properties", "additionalProperties", "required", "patternProperties", "minProperties",
                   "maxProperties")
ARRAY_KEYWORDS = ("items", "additionalItems", "minItems", "maxItems", "uniqueItems", "prefixItems")
MAX_DEPTH = 64
# Keywords that do not constrain a document: left out when a `$ref` or a combination's branch is
# merged with the keywords beside it (so a recursive schema resolves to the same objects each time).
ANNOTATIONS = frozenset({"$defs", "definitions", "$schema", "$id", "id", "title", "description", "$comment",
                         "examples", "default", "$anchor", "readOnly", "writeOnly", "deprecated"})
# How many (reader, writer) schema pairs one check compares at most: recursive `$ref`s and nested
# combinations could otherwise make a small schema cost exponential time.
MAX_STEPS = 20000


class _Side:
    """One schema with what its `$ref`s may point at."""

    def __init__(self, root, named: dict) -> None:
        self.root, self.named = root, named

    def resolve(self, schema, depth: int = 0):
        """Follow `$ref` until a schema without one; an unresolvable reference is left as is."""
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and depth < MAX_DEPTH:
            target = self._target(schema["$ref"])
            if target is None:
                return schema
            # Keywords beside $ref (allowed since 2019-09) stay with the resolved schema.
            rest = _constraints(schema, "$ref")
            schema = {**target, **rest} if isinstance(target, dict) and rest else target
            depth += 1
        return schema

    def _target(self, ref: str):
        document, _, pointer = ref.partition("#")
        if document:
            if document not in self.named:
                return None
            base = self.named[document]
        else:
            base = self.root
        for token in [t for t in pointer.split("/") if t]:
            token = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(base, dict) and token in base:
                base = base[token]
            elif isinstance(base, list) and token.isdigit() and int(token) < len(base):
                base = base[int(token)]
            else:
                return None
        return base


def read_errors(reader, writer, *, reader_named: dict, writer_named: dict) -> list[str]:
    """Why `reader` does not accept every document `writer` accepts ("TYPE at #/path: why");
    empty when it does."""
    errors: list[str] = []
    check = _Check(_Side(reader, reader_named), _Side(writer, writer_named), errors)
    check.schema(reader, writer, "#", 0)
    if check.budget[0] < 0:  # some comparisons were not made: not proven compatible
        errors = [e for e in errors if not e.startswith("TOO_COMPLEX")]
        errors.append(f"TOO_COMPLEX at #: comparing the schemas takes more than {MAX_STEPS} steps")
    return errors


def _types(schema: dict) -> set[str] | None:
    """The types a schema allows, None for any (an absent `type` that no other keyword implies)."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    if "enum" in schema or "const" in schema:
        return None
    if any(k in schema for k in OBJECT_KEYWORDS):
        return {"object"}
    if any(k in schema for k in ARRAY_KEYWORDS):
        return {"array"}
    return None


def _is_open(value) -> bool:
    return value is None or value is True or value == {}


class _Check:
    def __init__(self, reader: _Side, writer: _Side, errors: list[str], budget: list[int] | None = None,
                 active: set | None = None) -> None:
        self.reader, self.writer, self.errors = reader, writer, errors
        self.budget = budget if budget is not None else [MAX_STEPS]
        # The (reader, writer) pairs being compared further up: met again (a recursive schema), the
        # comparison assumes they are compatible, which holds when nothing else on the way is not.
        self.active = active if active is not None else set()

    def fork(self, errors: list[str]) -> "_Check":
        """A comparison whose errors are collected apart (trying one branch of a combination)."""
        return _Check(self.reader, self.writer, errors, self.budget, self.active)

    def add(self, kind: str, path: str, message: str) -> None:
        self.errors.append(f"{kind} at {path}: {message}")

    def schema(self, reader, writer, path: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            self.add("TOO_COMPLEX", path, f"the schemas nest deeper than {MAX_DEPTH} levels here")
            return
        self.budget[0] -= 1
        if self.budget[0] < 0:  # read_errors reports it
            self.add("TOO_COMPLEX", path, "")
            return
        reader = self.reader.resolve(reader)
        writer = self.writer.resolve(writer)
        if isinstance(reader, dict) and isinstance(writer, dict):
            pair = (id(reader), id(writer))
            if pair in self.active:
                return
            self.active.add(pair)
            try:
                self._compare(reader, writer, path, depth)
            finally:
                self.active.discard(pair)
            return
        self._compare(reader, writer, path, depth)

    def _compare(self, reader, writer, path: str, depth: int) -> None:
        if reader is True or reader == {} or writer is False:
            return
        if reader is False:
            self.add("SCHEMA_REMOVED", path, "the reader accepts nothing here")
            return
        if not isinstance(reader, dict):
            return
        if writer is True:
            writer = {}
        if not isinstance(writer, dict):
            return
        if self.combinations(reader, writer, path, depth):
            return
        self.types(reader, writer, path)
        self.enums(reader, writer, path)
        self.bounds(reader, writer, path)
        writer_types = _types(writer)
        if writer_types is None or "object" in writer_types:
            self.objects(reader, writer, path, depth)
        if writer_types is None or "array" in writer_types:
            self.arrays(reader, writer, path, depth)
        if "not" in reader and reader.get("not") != writer.get("not"):
            self.add("NOT_TYPE_EXTENDED", path, "the reader's `not` excludes what the writer may have written")

    def combinations(self, reader: dict, writer: dict, path: str, depth: int) -> bool:
        """anyOf/oneOf/allOf on either side; True when they decided this schema."""
        for keyword in ("anyOf", "oneOf"):
            branches = writer.get(keyword)
            if isinstance(branches, list) and branches:
                rest = _constraints(writer, keyword)
                for n, branch in enumerate(branches):
                    merged = _merge(rest, branch)
                    self.schema(reader, merged, f"{path}/{keyword}/{n}", depth + 1)
                return True
        branches = reader.get("allOf")
        if isinstance(branches, list) and branches:
            rest = _constraints(reader, "allOf")
            for n, branch in enumerate(branches):
                self.schema(_merge(rest, branch), writer,
                            f"{path}/allOf/{n}", depth + 1)
            return True
        for keyword in ("anyOf", "oneOf"):
            branches = reader.get(keyword)
            if isinstance(branches, list) and branches:
                rest = _constraints(reader, keyword)
                for branch in branches:
                    attempt: list[str] = []
                    merged = _merge(rest, branch)
                    self.fork(attempt).schema(merged, writer, path, depth + 1)
                    if not attempt:
                        return True
                self.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED", f"{path}/{keyword}",
                         "no branch of the reader accepts what the writer may have written")
                return True
        branches = writer.get("allOf")
        if isinstance(branches, list) and branches:
            # The writer's documents satisfy every branch: reading one branch's documents suffices.
            rest = _constraints(writer, "allOf")
            for branch in branches:
                attempt = []
                self.fork(attempt).schema(
                    reader, _merge(rest, branch), path, depth + 1)
                if not attempt:
                    return True
            self.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED", f"{path}/allOf",
                     "the reader accepts no branch of the writer's allOf")
            return True
        return False

    def types(self, reader: dict, writer: dict, path: str) -> None:
        reader_types, writer_types = _types(reader), _types(writer)
        if reader_types is None:
            return
        if writer_types is None:
            if "enum" in writer or "const" in writer:
                return  # the values are checked against the reader's types below
            self.add("TYPE_CHANGED", path,
                     f"the reader requires {sorted(reader_types)} where the writer allowed any type")
            return
        for kind in sorted(writer_types - reader_types):
            if kind == "integer" and "number" in reader_types:
                continue
            if kind == "number" and "integer" in reader_types:
                self.add("TYPE_NARROWED", path, "the writer's numbers are not all integers")
                continue
            self.add("TYPE_CHANGED", path, f"type {kind} is not compatible with {sorted(reader_types)}")

    def enums(self, reader: dict, writer: dict, path: str) -> None:
        if "const" in reader:
            if writer.get("const", object()) != reader["const"] and writer.get("enum") != [reader["const"]]:
                self.add("ENUM_ARRAY_NARROWED", f"{path}/const", "the reader allows one value the writer did not limit "
                                                                 "itself to")
            return
        allowed = reader.get("enum")
        if not isinstance(allowed, list):
            return
        if "const" in writer:
            written = [writer["const"]]
        elif isinstance(writer.get("enum"), list):
            written = writer["enum"]
        else:
            self.add("ENUM_ARRAY_NARROWED", f"{path}/enum", "the reader allows only an enum's values where the "
                                                           "writer allowed any")
            return
        missing = [value for value in written if value not in allowed]
        if missing:
            self.add("ENUM_ARRAY_NARROWED", f"{path}/enum", f"the values {missing} are no longer allowed")

    def bounds(self, reader: dict, writer: dict, path: str) -> None:
        for keyword, name in UPPER_BOUNDS.items():
            self._bound(reader, writer, path, keyword, name, "DECREASED", lambda r, w: r < w)
        for keyword, name in LOWER_BOUNDS.items():
            self._bound(reader, writer, path, keyword, name, "INCREASED", lambda r, w: r > w)
        pattern = reader.get("pattern")
        if pattern is not None and pattern != writer.get("pattern"):
            kind = "PATTERN_ADDED" if "pattern" not in writer else "PATTERN_CHANGED"
            self.add(kind, f"{path}/pattern", f"the reader requires the pattern {pattern!r}")
        multiple = reader.get("multipleOf")
        if _number(multiple):
            written = writer.get("multipleOf")
            if not _number(written):
                self.add("MULTIPLE_OF_ADDED", f"{path}/multipleOf", f"the reader requires multiples of {multiple}")
            elif multiple > written:
                self.add("MULTIPLE_OF_EXPANDED", f"{path}/multipleOf", f"multipleOf grew from {written} to {multiple}")
            elif (written / multiple) != int(written / multiple):
                self.add("MULTIPLE_OF_CHANGED", f"{path}/multipleOf", f"{written} is not a multiple of {multiple}")

    def _bound(self, reader, writer, path, keyword, name, tighter, is_tighter) -> None:
        bound = reader.get(keyword)
        if not _number(bound):
            return
        written = writer.get(keyword)
        if not _number(written):
            self.add(f"{name}_ADDED", f"{path}/{keyword}", f"the reader adds {keyword} {bound}")
        elif is_tighter(bound, written):
            self.add(f"{name}_{tighter}", f"{path}/{keyword}", f"{keyword} changed from {written} to {bound}")

    def objects(self, reader: dict, writer: dict, path: str, depth: int) -> None:
        reader_properties = reader.get("properties") if isinstance(reader.get("properties"), dict) else {}
        writer_properties = writer.get("properties") if isinstance(writer.get("properties"), dict) else {}
        reader_additional, writer_additional = reader.get("additionalProperties"), writer.get("additionalProperties")
        reader_open = _is_open(reader_additional) and not reader.get("patternProperties")
        writer_open = _is_open(writer_additional) and not writer.get("patternProperties")
        for name in sorted(set(reader_properties) & set(writer_properties)):
            self.schema(reader_properties[name], writer_properties[name], f"{path}/properties/{name}", depth + 1)
        for name in sorted(set(writer_properties) - set(reader_properties)):
            if reader_open:
                continue
            if reader_additional is False:
                self.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", f"{path}/properties/{name}",
                         f"the property {name} is not accepted any more")
            elif isinstance(reader_additional, dict):
                self.schema(reader_additional, writer_properties[name], f"{path}/properties/{name}", depth + 1)
        for name in sorted(set(reader_properties) - set(writer_properties)):
            if writer_open:
                self.add("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", f"{path}/properties/{name}",
                         f"the writer's open content model may have written {name} with any value")
            elif isinstance(writer_additional, dict):
                self.schema(reader_properties[name], writer_additional, f"{path}/properties/{name}", depth + 1)
        reader_required = set(reader.get("required") or []) if isinstance(reader.get("required"), list) else set()
        writer_required = set(writer.get("required") or []) if isinstance(writer.get("required"), list) else set()
        for name in sorted(reader_required - writer_required, key=str):
            own = reader_properties.get(name)
            if not (isinstance(own, dict) and "default" in own):
                self.add("REQUIRED_ATTRIBUTE_ADDED", f"{path}/required", f"the property {name} became required")
        if not reader_open and writer_open:
            kind = "ADDITIONAL_PROPERTIES_REMOVED" if reader_additional is False else "ADDITIONAL_PROPERTIES_NARROWED"
            if reader_additional is False or reader.get("patternProperties") or isinstance(reader_additional, dict):
                self.add(kind, f"{path}/additionalProperties",
                         "the reader limits the properties the writer left open")
        elif isinstance(reader_additional, dict) and reader_additional != {}:
            if isinstance(writer_additional, dict):
                self.schema(reader_additional, writer_additional, f"{path}/additionalProperties", depth + 1)

    def arrays(self, reader: dict, writer: dict, path: str, depth: int) -> None:
        if reader.get("uniqueItems") is True and writer.get("uniqueItems") is not True:
            self.add("UNIQUE_ITEMS_ADDED", f"{path}/uniqueItems", "the reader requires unique items")
        reader_items, writer_items = reader.get("items"), writer.get("items")
        if reader_items is None:
            return
        if isinstance(reader_items, list) or isinstance(writer_items, list):
            reader_list = reader_items if isinstance(reader_items, list) else None
            writer_list = writer_items if isinstance(writer_items, list) else None
            count = max(len(reader_list or []), len(writer_list or []))
            for n in range(count):
                mine = reader_list[n] if reader_list is not None and n < len(reader_list) else (
                    reader.get("additionalItems", True) if reader_list is not None else reader_items)
                theirs = writer_list[n] if writer_list is not None and n < len(writer_list) else (
                    writer.get("additionalItems", True) if writer_list is not None else writer_items)
                self.schema(mine, theirs, f"{path}/items/{n}", depth + 1)
            return
        self.schema(reader_items, True if writer_items is None else writer_items, f"{path}/items", depth + 1)


def _constraints(schema: dict, without: str) -> dict:
    return {k: v for k, v in schema.items() if k != without and k not in ANNOTATIONS}


def _merge(rest: dict, branch):
    """A combination's branch with the constraints beside the combination (the branch itself when
    there are none, so that it keeps its identity)."""
    return {**rest, **branch} if rest and isinstance(branch, dict) else branch


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
