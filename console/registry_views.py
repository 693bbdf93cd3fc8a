"""The console's Schema Registry pages (/api/registry/...): subjects, their versions and schema
text, compatibility level and mode per subject and global, read-only.

Every value comes from the registry this broker serves (registry/, `broker.schema_registry`)
through its own API answers, read as the logged-in console user would read them over HTTP: the
same ACL checks (a subject `<topic>-value` needs READ on the topic; the global config and mode
are the super users'), and in a cluster the `_schemas` leader's answer where this broker's replica
is not in sync. The subject list shows the subjects the user may read. A Confluent error becomes
the console's error body: 404 SUBJECT_NOT_FOUND (40401), VERSION_NOT_FOUND (40402),
SCHEMA_NOT_FOUND (40403), 403 SCHEMA_REGISTRY_AUTHORIZATION_FAILED (40301), with Confluent's
message and `registry_error_code`.

The message browser's keys and values in the registry's wire format (magic byte 0, schema id) are
decoded by the registry too (`decode_messages`, registry/decode.py): the schema is read as the user
would read `GET /schemas/ids/{id}` (a user who may read none of its subjects gets the bytes and a
note), and bytes that do not read as their schema get a note, never an error page.
"""

from __future__ import annotations

import asyncio
import json

from .api import ApiError

REGISTRY_ERRORS = {40401: "SUBJECT_NOT_FOUND", 40402: "VERSION_NOT_FOUND", 40403: "SCHEMA_NOT_FOUND",
                   40301: "SCHEMA_REGISTRY_AUTHORIZATION_FAILED", 42202: "INVALID_VERSION"}
# Not configured at the subject's level: shown as "none of its own", not as an error.
NO_SUBJECT_CONFIG, NO_SUBJECT_MODE = 40408, 40409


class RegistryApiError(ApiError):
    def __init__(self, status: int, error: str, message: str, registry_error_code: int | None) -> None:
        super().__init__(status, error, message)
        self.registry_error_code = registry_error_code
        self.details = {"registry_error_code": registry_error_code}


def _pretty(schema_type: str, text: str) -> str:
    """Avro and JSON Schema indented for reading; Protobuf (.proto text) as registered."""
    if schema_type == "PROTOBUF":
        return text
    try:
        return json.dumps(json.loads(text), indent=2)
    except ValueError:
        return text


class RegistryViews:
    def __init__(self, broker) -> None:
        self.broker = broker

    def available(self) -> bool:
        return getattr(self.broker, "schema_registry", None) is not None

    async def _get(self, principal: str, peer: str, segments: list[str], query: dict | None = None,
                   *, absent: int | None = None):
        """The registry's answer to a GET; None for the error code `absent` (a setting not made)."""
        registry = getattr(self.broker, "schema_registry", None)
        if registry is None:
            raise ApiError(404, "NO_SCHEMA_REGISTRY",
                           "This broker serves no Schema Registry (schema.registry.port is not set)")
        status, answer = await registry.read(principal, peer, segments, query)
        if status == 200:
            return answer
        code = answer.get("error_code") if isinstance(answer, dict) else None
        message = answer.get("message") if isinstance(answer, dict) else str(answer)
        if absent is not None and code == absent:
            return None
        if status >= 500:
            raise RegistryApiError(503, "SCHEMA_REGISTRY_UNAVAILABLE", message or "The Schema Registry failed", code)
        raise RegistryApiError(status, REGISTRY_ERRORS.get(code, f"SCHEMA_REGISTRY_ERROR_{code}"), message or "", code)

    async def _may(self, principal, peer, segments, query=None):
        """The answer, or None where the user may not read it (403)."""
        try:
            return await self._get(principal, peer, segments, query)
        except RegistryApiError as exc:
            if exc.status == 403:
                return None
            raise

    # -- the registry: its global settings and every subject ------------------------------------------

    async def summary(self, principal: str, peer: str, query: dict[str, str]) -> dict:
        """Global compatibility and mode and the contexts (None where the user is not a super user),
        and per subject (of every context, `:.ctx:s`) its latest version and its own settings;
        `deleted=true` lists soft-deleted subjects too."""
        with_deleted = query.get("deleted", "false").lower() == "true"
        config = await self._may(principal, peer, ["config"])
        mode = await self._may(principal, peer, ["mode"])
        active = await self._get(principal, peer, ["subjects"])
        names = await self._get(principal, peer, ["subjects"], {"deleted": "true"}) if with_deleted else active
        subjects = await asyncio.gather(*(self._subject_row(principal, peer, name, name not in active)
                                          for name in sorted(names)))
        return {"compatibility": None if config is None else config.get("compatibilityLevel"),
                "mode": None if mode is None else mode.get("mode"),
                "global_visible": config is not None,
                "contexts": await self._may(principal, peer, ["contexts"]),
                "types": await self._get(principal, peer, ["schemas", "types"]),
                "subjects": [row for row in subjects if row is not None]}

    async def _subject_row(self, principal: str, peer: str, subject: str, deleted: bool) -> dict | None:
        flag = {"deleted": "true"} if deleted else None
        try:
            versions = await self._get(principal, peer, ["subjects", subject, "versions"], flag)
            latest = await self._get(principal, peer, ["subjects", subject, "versions", "latest"], flag)
        except RegistryApiError as exc:
            if exc.status == 404:
                return None  # deleted since the list was read
            raise
        config = await self._get(principal, peer, ["config", subject], absent=NO_SUBJECT_CONFIG)
        mode = await self._get(principal, peer, ["mode", subject], absent=NO_SUBJECT_MODE)
        return {"subject": subject, "deleted": deleted, "versions": len(versions),
                "latest_version": latest["version"], "latest_id": latest["id"],
                "schema_type": latest.get("schemaType", "AVRO"),
                "compatibility": None if config is None else config.get("compatibilityLevel"),
                "mode": None if mode is None else mode.get("mode")}

    # -- one subject --------------------------------------------------------------------------------

    async def subject(self, principal: str, peer: str, subject: str) -> dict:
        """Every version (soft-deleted ones marked), the subject's compatibility level and mode
        (its own, and the one in force), and its latest schema."""
        every = await self._get(principal, peer, ["subjects", subject, "versions"], {"deleted": "true"})
        try:
            live = set(await self._get(principal, peer, ["subjects", subject, "versions"]))
        except RegistryApiError as exc:
            if exc.registry_error_code != 40401:
                raise
            live = set()  # every version soft-deleted
        entries = await asyncio.gather(*(self._get(principal, peer, ["subjects", subject, "versions", str(v)],
                                                   {"deleted": "true"}) for v in every))
        config = await self._get(principal, peer, ["config", subject], absent=NO_SUBJECT_CONFIG)
        in_force = await self._get(principal, peer, ["config", subject], {"defaultToGlobal": "true"})
        mode = await self._get(principal, peer, ["mode", subject], absent=NO_SUBJECT_MODE)
        mode_in_force = await self._get(principal, peer, ["mode", subject], {"defaultToGlobal": "true"})
        versions = [{"version": e["version"], "id": e["id"], "schema_type": e.get("schemaType", "AVRO"),
                     "references": e.get("references", []), "deleted": e["version"] not in live} for e in entries]
        latest_live = max(live) if live else None
        latest = (await self.version(principal, peer, subject, str(latest_live), include_deleted=False)
                  if latest_live is not None else None)
        return {"subject": subject, "deleted": not live, "versions": versions,
                "compatibility": {"subject": None if config is None else config.get("compatibilityLevel"),
                                  "effective": in_force.get("compatibilityLevel"),
                                  "normalize": (config or in_force).get("normalize")},
                "mode": {"subject": None if mode is None else mode.get("mode"),
                         "effective": mode_in_force.get("mode")},
                "latest": latest}

    async def version(self, principal: str, peer: str, subject: str, version: str, *,
                      include_deleted: bool = True) -> dict:
        """One version: its schema id, type, text (as registered and indented), references, and
        the schemas that reference it."""
        flag = {"deleted": "true"} if include_deleted else None
        entry = await self._get(principal, peer, ["subjects", subject, "versions", version], flag)
        referenced_by = await self._get(principal, peer, ["subjects", subject, "versions", str(entry["version"]),
                                                          "referencedby"], flag)
        schema_type = entry.get("schemaType", "AVRO")
        try:
            live = await self._get(principal, peer, ["subjects", subject, "versions"])
        except RegistryApiError as exc:
            if exc.registry_error_code != 40401:
                raise
            live = []
        return {"subject": entry["subject"], "version": entry["version"], "id": entry["id"],
                "schema_type": schema_type, "schema": entry["schema"], "pretty": _pretty(schema_type, entry["schema"]),
                "references": entry.get("references", []), "referenced_by": referenced_by,
                "deleted": entry["version"] not in live}

    # -- the message browser: keys and values written with a registered schema ------------------------

    async def decode_messages(self, principal: str, peer: str, topic: str, messages: list[dict]) -> None:
        """Each key and value of the page kept in the wire format (its `raw` bytes, dropped here)
        gains `schema`, the registry's reading of it (registry/decode.py): {id, subject, version,
        type, name, value} where it decodes, {id, subject, version, type, error, message} where it
        does not."""
        fields = [(kind, message[kind]) for message in messages for kind in ("key", "value")
                  if message[kind] is not None and "raw" in message[kind]]
        raws = [(kind, field.pop("raw")) for kind, field in fields]
        registry = getattr(self.broker, "schema_registry", None)
        if registry is None or not raws:
            return
        for (_, field), schema in zip(fields, await registry.decode_records(principal, peer, topic, raws)):
            field["schema"] = schema
