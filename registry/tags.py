"""Schema tags embedded in a schema (Confluent's `confluent:tags` keyword in Avro and JSON Schema, the
tags of its meta options in Protobuf): the tags of a record or a field, added or removed by
`POST /subjects/{s}/versions/{v}/tags` and by a registration's `schemaTagsToAdd` /
`schemaTagsToRemove` / `propagateSchemaTags` (api.py), and found again for `?findTags=`
(tagged_entities).

A tag request names its entities as Confluent's SchemaEntity does. Avro: `{"entityPath": "ns.Rec",
"entityType": "sr_record"}` for a record, `{"entityPath": "ns.Rec.field", "entityType": "sr_field"}`
for a field of one. The path's last part (the last two for a field) names the record and the field; what comes
before, when anything does, must be the namespace the schema's top-level `namespace` gives. Records
are searched breadth first from the top: through fields' types, union branches, array items and map
values, as Confluent's registry searches them; a path that finds nothing is an invalid schema
(42201 `No matching path '...' found in the schema`). A record or field's tags stay in the order
they were added, each once; one left without tags loses its `confluent:tags`.

JSON Schema names its entities by the shape of the schema, as Confluent's registry reads it (its
JSON Schema library, everit, loads a schema object into one typed schema or several): `object` for
the top object, `object.f1` a property of it, `object.f1.array.object` an object in that property's
items, `object.definitions.D.object` an object under `definitions` (or `$defs`; a name may hold
dots), `not.`,
`conditional.if.` / `.then.` / `.else.`, and `allof.N.` / `anyof.N.` / `oneof.N.` for the Nth
subschema of a combination in everit's order of schemas (by kind: array, boolean, combined,
conditional, const, empty, enum, false, not, null, number, object, reference, string, true; then by
title, description and default). A schema object that holds several kinds at once (`"type":
["null", "object"]` is `anyof.0` and `anyof.1`; `type` with `if`/`then` is `allof.0.conditional`
and `allof.1.object`) is named the same way. A path naming nothing is 42201 as for Avro. Protobuf's
paths are described with its functions below."""

from __future__ import annotations

import functools
import json
import re
from collections import deque

from .schemas import InvalidSchema

TAGS = "confluent:tags"
ENTITY_TYPES = ("sr_record", "sr_field")


class TagRequestError(ValueError):
    """A tagsToAdd / tagsToRemove list that is not Confluent's shape (422)."""


def schema_tags_arg(value, name: str) -> list[tuple[str, str, list[str]]]:
    """A request's `tagsToAdd` or `tagsToRemove`: [{"schemaEntity": {"entityPath", "entityType"},
    "tags": [...]}] as (path, type, tags); None is no entities."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TagRequestError(f"{name} must be a list of {{\"schemaEntity\", \"tags\"}}")
    found = []
    for item in value:
        entity = item.get("schemaEntity") if isinstance(item, dict) else None
        tags = item.get("tags") if isinstance(item, dict) else None
        if (not isinstance(entity, dict) or not isinstance(entity.get("entityPath"), str)
                or not entity["entityPath"] or str(entity.get("entityType")).lower() not in ENTITY_TYPES
                or not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags)):
            raise TagRequestError(f"{name}: each item is {{\"schemaEntity\": {{\"entityPath\": string, "
                                  f"\"entityType\": \"sr_record\" or \"sr_field\"}}, \"tags\": [string]}}, "
                                  f"not {json.dumps(item)[:200]}")
        found.append((entity["entityPath"], entity["entityType"].lower(), list(tags)))
    return found


def _changes(to_add: list[tuple[str, str, list[str]]],
             to_remove: list[tuple[str, str, list[str]]]) -> dict[tuple[str, str], tuple[list[str], set[str]]]:
    """(path, entity type) -> (tags to add in order, tags to remove), from a tags request's lists."""
    changes: dict[tuple[str, str], tuple[list[str], set[str]]] = {}
    for path, kind, tags in to_add:
        changes.setdefault((path, kind), ([], set()))[0].extend(tags)
    for path, kind, tags in to_remove:
        changes.setdefault((path, kind), ([], set()))[1].update(tags)
    return changes


def modify_avro_tags(schema_text: str, to_add: list[tuple[str, str, list[str]]],
                     to_remove: list[tuple[str, str, list[str]]]) -> str:
    """The Avro schema text with the tags added, then those removed; raises InvalidSchema for a
    path that names no record or field."""
    document = json.loads(schema_text)
    for (path, kind), (adding, removing) in _changes(to_add, to_remove).items():
        node = _find_entity(document, path, kind)
        tags = list(dict.fromkeys([*(node.get(TAGS) or []), *adding]))
        tags = [tag for tag in tags if tag not in removing]
        if tags:
            node[TAGS] = tags
        else:
            node.pop(TAGS, None)
    return json.dumps(document, separators=(",", ":"))


def _find_entity(document, path: str, kind: str) -> dict:
    parts = path.split(".")
    if kind == "sr_record":
        namespace, record, field = ".".join(parts[:-1]), parts[-1], None
    else:
        if len(parts) < 2:
            raise InvalidSchema(f"No matching path '{path}' found in the schema")
        namespace, record, field = ".".join(parts[:-2]), parts[-2], parts[-1]
    top_namespace = document.get("namespace") if isinstance(document, dict) else None
    queue = deque([document])
    while queue:
        node = queue.popleft()
        if isinstance(node, list):  # a union
            queue.extend(node)
            continue
        if not isinstance(node, dict) or "type" not in node:
            continue
        kind_of = node["type"]
        if kind_of == "record" and isinstance(node.get("fields"), list):
            if (not namespace or namespace == top_namespace) and node.get("name") == record:
                if field is None:
                    return node
                for candidate in node["fields"]:
                    if isinstance(candidate, dict) and candidate.get("name") == field:
                        return candidate
            else:
                queue.extend(node["fields"])
        elif kind_of == "array":
            queue.append(node.get("items"))
        elif kind_of == "map":
            queue.append(node.get("values"))
        else:  # a field, or a type written as an object: what its `type` holds
            queue.append(kind_of)
    raise InvalidSchema(f"No matching path '{path}' found in the schema")


def modify_tags(schema_type: str, schema_text: str, to_add: list[tuple[str, str, list[str]]],
                to_remove: list[tuple[str, str, list[str]]]) -> str:
    """The schema text with the tags added, then those removed (AVRO or JSON: a Protobuf schema is
    changed as its descriptor, modify_proto_tags); raises InvalidSchema for a path that names
    nothing."""
    if schema_type == "AVRO":
        return modify_avro_tags(schema_text, to_add, to_remove)
    if schema_type == "JSON":
        return modify_json_tags(schema_text, to_add, to_remove)
    raise InvalidSchema(f"Invalid schema type {schema_type}")


def tagged_entities(schema_type: str, schema_text: str) -> list[tuple[str, str, list[str]]]:
    """Every tagged record and field of a schema (its stored text) as (path, type, tags), in the
    order Confluent's registry lists them (its inlineTaggedEntities)."""
    found: dict[tuple[str, str], list[str]] = {}
    try:
        document = json.loads(schema_text) if schema_type != "PROTOBUF" else None
        if schema_type == "PROTOBUF":
            return _proto_entities(schema_text)
        if schema_type == "AVRO":
            _avro_entities(document, None, set(), found)
        elif schema_type == "JSON":
            _json_entities(_load(document), "", False, set(), found)
    except ValueError:  # (not a JSON document: nothing to list)
        return []
    except RecursionError:
        raise InvalidSchema("Invalid schema: nested too deeply to list its tags") from None
    return [(path, kind, tags) for (path, kind), tags in found.items()]


def schema_tags_answer(entities: list[tuple[str, str, list[str]]], wanted: list[str]) -> list[dict]:
    """`schemaTags` for `?findTags=`: the entities carrying any of the tags wanted (`*`: every one),
    each as Confluent writes a SchemaTags."""
    every = "*" in wanted
    return [{"schemaEntity": {"entityPath": path, "entityType": kind}, "tags": tags}
            for path, kind, tags in entities if every or set(tags) & set(wanted)]


def _tags_of(node) -> list[str]:
    tags = node.get(TAGS) if isinstance(node, dict) else None
    if not isinstance(tags, list):
        return []
    return list(dict.fromkeys(tag if isinstance(tag, str) else json.dumps(tag) for tag in tags))


# -- Avro ------------------------------------------------------------------------------------------

def _avro_entities(node, namespace: str | None, visited: set, found: dict) -> None:
    """Depth first, as Apache Avro's Schema is walked: a record, its own tags, then each field's
    tags and what the field's type holds; a named type referred to again is not walked twice."""
    if isinstance(node, list):
        for branch in node:
            _avro_entities(branch, namespace, visited, found)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind == "array":
        _avro_entities(node.get("items"), namespace, visited, found)
    elif kind == "map":
        _avro_entities(node.get("values"), namespace, visited, found)
    elif kind in ("record", "error") and isinstance(node.get("name"), str):
        name = node["name"]
        if "." not in name and node.get("namespace") is not None:
            namespace = node["namespace"] or None
        full = name if "." in name or not namespace else f"{namespace}.{name}"
        if full in visited:
            return
        visited.add(full)
        inner_namespace = full.rpartition(".")[0] or None
        if tags := _tags_of(node):
            found[(full, "sr_record")] = tags
        for field in node.get("fields") or []:
            if not isinstance(field, dict):
                continue
            if tags := _tags_of(field):
                found[(f"{full}.{field.get('name')}", "sr_field")] = tags
            _avro_entities(field.get("type"), inner_namespace, visited, found)
    elif isinstance(kind, (dict, list)):  # a type written as {"type": {...}}
        _avro_entities(kind, namespace, visited, found)


# -- JSON Schema -----------------------------------------------------------------------------------

# everit's kinds of schema, in the order it sorts them (alphabetical)
KINDS = ("ARRAY", "BOOLEAN", "COMBINED", "CONDITIONAL", "CONST", "EMPTY", "ENUM", "FALSE", "NOT", "NULL",
         "NUMBER", "OBJECT", "REFERENCE", "STRING", "TRUE")
TYPE_KINDS = {"string": "STRING", "integer": "NUMBER", "number": "NUMBER", "boolean": "BOOLEAN",
              "null": "NULL", "array": "ARRAY", "object": "OBJECT"}
# keywords that make everit read a schema without `type` as that kind
SNIFFED = (("OBJECT", ("properties", "patternProperties", "additionalProperties", "required", "minProperties",
                       "maxProperties", "dependencies", "propertyNames")),
           ("ARRAY", ("items", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains")),
           ("STRING", ("minLength", "maxLength", "pattern", "format")),
           ("NUMBER", ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")))


class _Loaded:
    """One schema as everit loads it: its kind, the object it came from, the keywords it keeps
    beside its own (`own`: where `confluent:tags` and `definitions` are read), and its parts."""

    __slots__ = ("kind", "node", "own", "criterion", "parts")

    def __init__(self, kind: str, node, own: dict, criterion: str | None = None, parts: list | None = None):
        self.kind, self.node, self.own, self.criterion, self.parts = kind, node, own, criterion, parts or []


def _load(node) -> _Loaded:
    if node is True:
        return _Loaded("TRUE", node, {})
    if node is False:
        return _Loaded("FALSE", node, {})
    if not isinstance(node, dict):
        return _Loaded("EMPTY", node, {})
    if "$ref" in node:
        return _Loaded("REFERENCE", node, node)
    kinds: list[_Loaded] = []
    if "enum" in node:
        kinds.append(_Loaded("ENUM", node, {}))
    for keyword in ("allOf", "anyOf", "oneOf"):
        if isinstance(node.get(keyword), list):
            kinds.append(_Loaded("COMBINED", node, {}, keyword.lower(), [_load(sub) for sub in node[keyword]]))
    if "not" in node:
        kinds.append(_Loaded("NOT", node, {}, parts=[_load(node["not"])]))
    if "const" in node:
        kinds.append(_Loaded("CONST", node, {}))
    types = node.get("type")
    if isinstance(types, str) and types in TYPE_KINDS:
        kinds.append(_Loaded(TYPE_KINDS[types], node, {}))
    elif isinstance(types, list) and types:
        each = [_Loaded(TYPE_KINDS[t], node, {}) for t in types if isinstance(t, str) and t in TYPE_KINDS]
        kinds += each if len(each) == 1 else [_Loaded("COMBINED", node, {}, "anyof", each)]
    elif types is None:
        kinds += [_Loaded(kind, node, {}) for kind, keywords in SNIFFED if any(k in node for k in keywords)]
    if any(keyword in node for keyword in ("if", "then", "else")):
        kinds.append(_Loaded("CONDITIONAL", node, {}))
    if not kinds:
        return _Loaded("EMPTY", node, node)
    if len(kinds) == 1:
        kinds[0].own = node
        return kinds[0]
    return _Loaded("COMBINED", node, node, "allof", kinds)  # everit's synthetic allOf


def _text(value) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _compare_text(a: str | None, b: str | None) -> int:
    if a == b:
        return 0
    if a is None:
        return -1
    if b is None:
        return 1
    # Java compares strings by UTF-16 code units
    a16, b16 = a.encode("utf-16-be"), b.encode("utf-16-be")
    return -1 if a16 < b16 else 1


def _compare_collections(a: list, b: list) -> int:
    if len(a) != len(b):
        return len(a) - len(b)
    for x, y in zip(sorted(map(_text, a), key=_java_key), sorted(map(_text, b), key=_java_key)):
        if cmp := _compare_text(x, y):
            return cmp
    return 0


def _java_key(text: str | None):
    return (text is not None, (text or "").encode("utf-16-be"))


def _compare(a: _Loaded, b: _Loaded) -> int:
    """everit's JsonSchemaComparator, as Confluent's registry orders a combination's subschemas."""
    if cmp := KINDS.index(a.kind) - KINDS.index(b.kind):
        return cmp
    for keyword in ("title", "description", "default"):
        if cmp := _compare_text(_text(a.own.get(keyword)), _text(b.own.get(keyword))):
            return cmp
    if a.kind == "CONST":
        return _compare_text(_text(a.node.get("const")), _text(b.node.get("const")))
    if a.kind == "ENUM":
        return _compare_collections(_listed(a.node.get("enum")), _listed(b.node.get("enum")))
    if a.kind == "COMBINED":
        if cmp := _compare_text(a.criterion, b.criterion):
            return cmp
        if cmp := len(a.parts) - len(b.parts):
            return cmp
        for x, y in zip(_sorted(a.parts), _sorted(b.parts)):
            if cmp := _compare(x, y):
                return cmp
        return 0
    if a.kind == "NOT":
        return _compare(a.parts[0], b.parts[0])
    if a.kind == "CONDITIONAL":
        for keyword in ("if", "then", "else"):
            if cmp := _compare(_load(a.node.get(keyword, {})), _load(b.node.get(keyword, {}))):
                return cmp
        return 0
    if a.kind == "OBJECT":
        props_a, props_b = a.node.get("properties"), b.node.get("properties")
        if cmp := _compare_collections(list(props_a or {}) if isinstance(props_a, dict) else [],
                                       list(props_b or {}) if isinstance(props_b, dict) else []):
            return cmp
        return _compare_collections(_listed(a.node.get("required")), _listed(b.node.get("required")))
    if a.kind == "ARRAY":
        items_a, items_b = a.node.get("items"), b.node.get("items")
        if not isinstance(items_a, (dict, bool)) or not isinstance(items_b, (dict, bool)):
            return (items_a is not None) - (items_b is not None) if items_a is None or items_b is None else 0
        return _compare(_load(items_a), _load(items_b))
    return 0


def _listed(value) -> list:
    return value if isinstance(value, list) else []


def _sorted(parts: list[_Loaded]) -> list[_Loaded]:
    return sorted(parts, key=functools.cmp_to_key(_compare))


def _java_hash_order(names) -> list[str]:
    """The names in the order a java.util.HashMap built one by one iterates them (everit keeps an
    object's properties, and org.json its keywords, in HashMaps)."""
    names = list(names)
    capacity = 16
    while len(names) > capacity * 3 // 4:
        capacity *= 2

    def bucket(name: str) -> int:
        h = 0
        units = name.encode("utf-16-be")
        for i in range(0, len(units), 2):
            h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return [name for _, _, name in sorted((bucket(name), i, name) for i, name in enumerate(names))]


def _json_entities(schema: _Loaded, scope: str, in_field: bool, visited: set, found: dict) -> None:
    """Confluent's JSON Schema inlineTaggedEntities, over the schema as everit loads it."""
    if schema.kind == "COMBINED":
        for index, part in enumerate(_sorted(schema.parts)):
            _json_entities(part, f"{scope}{schema.criterion}.{index}.", False, visited, found)
    elif schema.kind == "ARRAY":
        items = schema.node.get("items")
        if isinstance(items, (dict, bool)):
            _json_entities(_load(items), scope + "array.", False, visited, found)
    elif schema.kind == "OBJECT":
        scoped = scope + "object"
        if scoped in visited:
            return
        visited.add(scoped)
        if not in_field and (tags := _tags_of(schema.own)):
            found[(scoped, "sr_record")] = tags
        properties = schema.node.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        for name in _java_hash_order(properties):
            field = _load(properties[name])
            if tags := _tags_of(field.own):
                found[(f"{scoped}.{name}", "sr_field")] = tags
            _json_entities(field, f"{scoped}.{name}.", True, visited, found)
        definitions = schema.own.get("definitions")
        if isinstance(definitions, dict):
            for name in _java_hash_order(definitions):
                if isinstance(definitions[name], dict):
                    _json_entities(_load(definitions[name]), f"{scoped}.definitions.{name}.", False, visited, found)
    elif schema.kind == "CONDITIONAL":
        for keyword in ("if", "then", "else"):
            if keyword in schema.node:
                _json_entities(_load(schema.node[keyword]), f"{scope}conditional.{keyword}.", False, visited, found)
    elif schema.kind == "NOT":
        _json_entities(schema.parts[0], scope + "not.", False, visited, found)


def modify_json_tags(schema_text: str, to_add: list[tuple[str, str, list[str]]],
                     to_remove: list[tuple[str, str, list[str]]]) -> str:
    """The JSON Schema text with the tags added, then those removed; raises InvalidSchema for a path
    that names nothing (or names something that is not a schema object)."""
    document = json.loads(schema_text)
    for (path, kind), (adding, removing) in _changes(to_add, to_remove).items():
        node = _json_node(document, deque(path.split(".")), kind)
        if not isinstance(node, dict):
            raise InvalidSchema(f"No matching path '{path}' found in the schema")
        tags = [tag for tag in dict.fromkeys([*_tags_of(node), *adding]) if tag not in removing]
        if tags:
            node[TAGS] = tags
        else:
            node.pop(TAGS, None)
    return json.dumps(document, separators=(",", ":"))


def _json_node(node, parts: deque, kind: str):
    """Follow an entity path down the JSON document (Confluent's findMatchingEntity): None when it
    leads nowhere."""
    if not parts or not isinstance(node, dict):
        return None
    step = parts.popleft()
    if step == "object":
        if kind == "sr_record" and not parts:
            return node
        if not parts:
            return None
        if parts[0] in ("definitions", "$defs"):
            found = _named(node.get(parts.popleft()), parts)
        else:
            found = _named(node.get("properties"), parts)
        return found if found is None or not parts else _json_node(found, parts, kind)
    if step == "array":
        return _json_node(node.get("items"), parts, kind)
    if step in ("anyof", "allof", "oneof"):
        keyword = {"anyof": "anyOf", "allof": "allOf", "oneof": "oneOf"}[step]
        if isinstance(node.get(keyword), list):
            if not parts or not parts[0].isdigit():
                return None
            index = int(parts.popleft())
            subschemas = [sub for _, sub in sorted(((_load(sub), sub) for sub in node[keyword]),
                                                   key=functools.cmp_to_key(lambda x, y: _compare(x[0], y[0])))]
            return _json_node(subschemas[index], parts, kind) if index < len(subschemas) else None
        if step == "oneof":
            return None
        if parts:
            parts.popleft()  # one of the kinds this object holds: the object itself
        if step == "allof" and parts and parts[0] == "conditional":
            parts.popleft()
            return _json_node(node.get(parts.popleft()) if parts else None, parts, kind)
        return _json_node(node, parts, kind)
    if step == "not":
        return _json_node(node.get("not"), parts, kind)
    return None


def _named(container, parts: deque):
    """The member of `properties` (or `definitions`) the next parts name: a name may hold dots, so
    parts are joined until a member has the name (Confluent's findNodeFromNameBuilder)."""
    if not isinstance(container, dict) or not parts:
        return None
    name = parts.popleft()
    while name not in container and parts:
        name += "." + parts.popleft()
    return container.get(name)


# -- Protobuf ---------------------------------------------------------------------------------------
# A message is named by its name and those of the messages it is nested in (no package): `Order`,
# `Order.Line`; a field by its message's path and its name, `Order.Line.sku`, or, in a oneof, also
# with the oneof's name: `Order.payment.card`. A leading `.` is ignored. The tags are those of the
# (confluent.message_meta) and (confluent.field_meta) options (confluent/meta.proto).

def modify_proto_tags(fd, to_add: list[tuple[str, str, list[str]]],
                      to_remove: list[tuple[str, str, list[str]]]) -> None:
    """Add, then remove, the tags of the messages and fields named, in the FileDescriptorProto
    itself (which then imports confluent/meta.proto); raises InvalidSchema with Confluent's
    messages for a path that names nothing."""
    from .protobuf import META_IMPORT, meta_of, meta_tags, meta_with_tags, set_meta

    changes: dict[tuple[str, str], tuple[list[str], set[str]]] = {}
    for path, kind, tags in to_add:
        changes.setdefault((path.removeprefix("."), kind), ([], set()))[0].extend(tags)
    for path, kind, tags in to_remove:
        changes.setdefault((path.removeprefix("."), kind), ([], set()))[1].update(tags)
    for (path, kind), (adding, removing) in changes.items():
        options = _proto_element(fd, path.split("."), kind == "sr_field").options
        meta = meta_of(options)
        tags = [tag for tag in dict.fromkeys([*meta_tags(meta), *adding]) if tag not in removing]
        set_meta(options, meta_with_tags(meta, tags))
    if changes and META_IMPORT not in fd.dependency:
        fd.dependency.append(META_IMPORT)


def _proto_element(fd, names: list[str], is_field: bool):
    """The message (or field) a path names, found as Confluent's findMatchingElement finds it."""
    end = len(names) - 1 if is_field else len(names)
    message, at = None, 0
    while at < end:
        candidates = fd.message_type if message is None else message.nested_type
        found = next((m for m in candidates if m.name == names[at] and not m.options.map_entry), None)
        if found is None:
            if is_field and at == end - 1:
                break  # the last name before the field's may be a oneof's
            raise InvalidSchema(f"No matching Message with name '{names[at]}' found in the schema")
        message, at = found, at + 1
    if not is_field:
        if message is None:
            raise InvalidSchema(f"No matching Message with name '{names[-1]}' found in the schema")
        return message
    field_name = names[-1]
    if message is not None:
        if at == end:
            for field in message.field:
                if field.name == field_name:
                    return field
        else:
            oneofs = [i for i, oneof in enumerate(message.oneof_decl) if oneof.name == names[at]]
            for field in message.field:
                if (field.name == field_name and oneofs and field.HasField("oneof_index")
                        and field.oneof_index == oneofs[-1] and not field.proto3_optional):
                    return field
    raise InvalidSchema(f"No matching Field with name '{field_name}' found in the schema")


_PROTO_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]]|[^\s"{}\[\]]+')
_FIELD_HEAD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*) = -?\d+(?: \[|;)")


def _meta_tags_in(line: str, option: str) -> list[str]:
    """The tags of the Meta option written on one line of our .proto text (protobuf.print_proto)."""
    at = line.find(option + " = {")
    if at < 0:
        return []
    tokens = _PROTO_TOKENS.findall(line, at + len(option) + 3)
    depth, tags, reading = 0, [], False
    for i, token in enumerate(tokens):
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0:
                break
        elif reading:
            if token == "]":
                reading = False
            elif token.startswith('"'):
                tags.append(json.loads(token))
        elif depth == 1 and token == "tags:" and i + 1 < len(tokens) and tokens[i + 1] == "[":
            reading = True
    return list(dict.fromkeys(tags))


def _proto_entities(text: str) -> list[tuple[str, str, list[str]]]:
    """The tagged messages and fields of a Protobuf schema as the registry stores it (our printed
    .proto text: one statement a line, a block's braces on its own lines), listed as Confluent's
    registry lists them: a message's tags, its oneofs' fields, its other fields, then its nested
    messages."""
    root: dict = {"nested": []}
    stack: list[tuple[str, dict | None]] = [("file", root)]
    for raw in text.splitlines():
        line = raw.strip()
        kind, element = stack[-1]
        if line == "}":
            if len(stack) > 1:
                stack.pop()
            continue
        if line.endswith("{"):
            words = line.split()
            if words[0] == "message" and element is not None and kind in ("file", "message"):
                message = {"name": words[1], "tags": [], "oneof_fields": [], "fields": [], "nested": []}
                element["nested"].append(message)
                stack.append(("message", message))
            elif words[0] == "oneof" and kind == "message":
                stack.append(("oneof", element))
            else:
                stack.append(("other", None))
            continue
        if kind == "message" and line.startswith("option (confluent.message_meta) = "):
            element["tags"] = _meta_tags_in(line, "(confluent.message_meta)")
        elif kind in ("message", "oneof") and not line.startswith(("option ", "reserved ", "extensions ")):
            head = _FIELD_HEAD.search(line)
            tags = _meta_tags_in(line, "(confluent.field_meta)")
            if head and tags:
                element["oneof_fields" if kind == "oneof" else "fields"].append((head.group(1), tags))
    found: list[tuple[str, str, list[str]]] = []

    def walk(message: dict, scope: str) -> None:
        path = scope + message["name"]
        if message["tags"]:
            found.append((path, "sr_record", message["tags"]))
        for name, tags in message["oneof_fields"] + message["fields"]:
            found.append((f"{path}.{name}", "sr_field", tags))
        for nested in message["nested"]:
            walk(nested, path + ".")

    for message in root["nested"]:
        walk(message, "")
    return found
