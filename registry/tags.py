"""Schema tags embedded in an Avro schema (Confluent's `confluent:tags`): the tags of a record or a
field, added or removed by `POST /subjects/{s}/versions/{v}/tags` (api.py), which registers the
result as a new version.

A tag request names its entities as Confluent's SchemaEntity does: `{"entityPath": "ns.Rec", "entityType":
"sr_record"}` for a record, `{"entityPath": "ns.Rec.field", "entityType": "sr_field"}` for a field of
one. The path's last part (the last two for a field) names the record and the field; what comes
before, when anything does, must be the namespace the schema's top-level `namespace` gives. Records
are searched breadth first from the top: through fields' types, union branches, array items and map
values, as Confluent's registry searches them; a path that finds nothing is an invalid schema
(42201 `No matching path '...' found in the schema`). A record or field's tags stay in the order
they were added, each once; one left without tags loses its `confluent:tags`."""

from __future__ import annotations

import json
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


def modify_avro_tags(schema_text: str, to_add: list[tuple[str, str, list[str]]],
                     to_remove: list[tuple[str, str, list[str]]]) -> str:
    """The Avro schema text with the tags added, then those removed; raises InvalidSchema for a
    path that names no record or field."""
    document = json.loads(schema_text)
    changes: dict[tuple[str, str], tuple[list[str], set[str]]] = {}
    for path, kind, tags in to_add:
        changes.setdefault((path, kind), ([], set()))[0].extend(tags)
    for path, kind, tags in to_remove:
        changes.setdefault((path, kind), ([], set()))[1].update(tags)
    for (path, kind), (adding, removing) in changes.items():
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
