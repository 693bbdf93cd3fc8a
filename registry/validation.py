"""What schema id validation on produce (broker/schema_validation.py) asks of `_schemas`: the live
subjects an id is registered under, and each schema's record names (for the RecordNameStrategy and
TopicRecordNameStrategy subjects).

`kafka-wire serve` installs `SchemaSubjects` as the broker's `schema_lookup_factory`, registry port
or not: the ids are read from `_schemas` on this broker, whoever wrote it (the built-in registry, or
Confluent's registry or Karapace pointed at kafka-wire). No `_schemas` topic: no id is registered.
"""

from __future__ import annotations

import json
import re

from broker.workers.ownership import SCHEMAS_TOPIC

from .store import SchemasLog, SchemaVersion

_PROTO_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.MULTILINE)
_PROTO_MESSAGE = re.compile(r"^message\s+(\w+)", re.MULTILINE)  # top-level: not indented


class SchemaSubjects:
    def __init__(self, broker) -> None:
        self.broker = broker
        self.log = SchemasLog(broker)
        self._names: dict[int, list[str]] = {}  # schema id -> record names (a schema never changes)

    def subjects_of(self, schema_id: int) -> list[tuple[str, list[str]]]:
        if self.broker.metadata.topic(SCHEMAS_TOPIC) is None:
            return []
        self.log.catch_up()
        found = [entry for entry in self.log.state.by_id(schema_id) if not entry.deleted]
        if not found:
            return []
        if schema_id not in self._names:
            self._names[schema_id] = record_names(found[0])
        return [(entry.subject, self._names[schema_id]) for entry in found]


def record_names(entry: SchemaVersion) -> list[str]:
    """The names a record-name subject strategy derives from the schema: Avro's full name of a named
    type, a JSON schema's title, a Protobuf schema's top-level messages (package-qualified)."""
    if entry.schema_type == "PROTOBUF":
        package = _PROTO_PACKAGE.search(entry.schema)
        prefix = f"{package.group(1)}." if package else ""
        return [prefix + name for name in _PROTO_MESSAGE.findall(entry.schema)]
    try:
        schema = json.loads(entry.schema)
    except ValueError:
        return []
    if not isinstance(schema, dict):
        return []
    if entry.schema_type == "JSON":
        title = schema.get("title")
        return [title] if isinstance(title, str) else []
    name = schema.get("name")
    if not isinstance(name, str):
        return []
    namespace = schema.get("namespace")
    if "." in name or not isinstance(namespace, str) or not namespace:
        return [name]
    return [f"{namespace}.{name}"]
