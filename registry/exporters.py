"""Schema exporters (Confluent's Schema Linking): `/exporters` and what runs behind it. An exporter,
kept on the registry that writes (the leader of `_schema_exporters`-0 in a cluster), copies the
schema versions of the subjects it names to another registry over HTTP(S), in the order they were
registered (the `_schemas` log), each under its own id and version: the destination subject is put in
IMPORT mode (`PUT /mode/{s}?force=true`) and the version registered with `"id"` and `"version"`, as
Confluent's exporter places exported schemas in IMPORT mode. Later registrations follow.

Definitions and progress live in the registry's own compacted topic `_schema_exporters` (one
partition, created as `_schemas` is), not in `_schemas`: Karapace reading `_schemas` in strict mode
stops at a key type it does not know (a CorruptKafkaRecordException), and Confluent's registry keeps
its exporters in topics of their own too. Records (JSON, keys in this order):

    {"keytype":"EXPORTER","name":n,"magic":0}       -> {"name","subjects","subjectRenameFormat",
                                                        "contextType","context","config"}; null: deleted
    {"keytype":"EXPORTER_STATE","name":n,"magic":0} -> {"state": "RUNNING"|"PAUSED", "offset", "ts"}

`offset` is the `_schemas` offset of the last record the exporter has gone past (-1: none), `ts`
when it got there (ms). Confluent's answers and error codes:

    40450 exporter not found (404)
    40950 missing or invalid exporter name   40951 missing or invalid exporter config
    40952 invalid exporter subjects           40960 exporter already exists
    40961 exporter already running (resume)   40963 exporter not paused (reset, update, config)
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import time
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from broker.http_client import HttpForwardError, http_request
from broker.workers.ownership import EXPORTERS_TOPIC, SCHEMAS_TOPIC
from coordinator.offsets_store import AppendFailed, read_internal_batches

from .api import NoContent, RegistryError
from .contexts import DEFAULT_CONTEXT, EVERY_CONTEXT, qualify, split, with_parent
from .store import SchemasLog, SchemaVersion

logger = logging.getLogger("kafka_wire.registry")

CONTEXT_TYPES = ("AUTO", "CUSTOM", "NONE", "DEFAULT")
STARTING, RUNNING, PAUSED, ERROR = "STARTING", "RUNNING", "PAUSED", "ERROR"
SUBJECT_PLACEHOLDER = "${subject}"
URL_KEY = "schema.registry.url"
# How many `_schemas` records an exporter goes through before saving its offset; how long it waits
# between looks at `_schemas` when it has nothing to do, and after a failure before trying again.
RECORDS_PER_STEP = 200
IDLE_INTERVAL = 0.2
RETRY_INTERVAL = 2.0
REQUEST_TIMEOUT = 30.0
# A name as Confluent allows one (letters, digits, `_`, `-`, `.`), not too long for a record key.
NAME_PATTERN = re.compile(r"[A-Za-z0-9_.\-]{1,256}")


def not_found(name: str) -> RegistryError:
    return RegistryError(404, 40450, f"Exporter '{name}' not found.")


def not_paused(name: str) -> RegistryError:
    return RegistryError(409, 40963, f"Exporter '{name}' not paused.")


@dataclass
class Exporter:
    name: str
    subjects: list[str] = field(default_factory=lambda: ["*"])
    subject_rename_format: str | None = None
    context_type: str = "AUTO"
    context: str | None = None
    config: dict[str, str] = field(default_factory=dict)

    def body(self) -> dict:
        """As Confluent answers `GET /exporters/{name}` (and as the EXPORTER record keeps it)."""
        return {"name": self.name, "subjects": list(self.subjects), "subjectRenameFormat": self.subject_rename_format,
                "contextType": self.context_type, "context": self.context, "config": dict(self.config)}

    def matches(self, subject: str) -> bool:
        """Whether a source subject (as stored: qualified outside the default context) is exported:
        an entry names a subject (`orders-value`, `:.ctx:orders-value`), or ends in `*` for every
        subject starting with what comes before it in its context (`*` the default context's,
        `:.ctx:*` a context's), and `:*:` names every subject of every context."""
        context, name = split(subject)
        for entry in self.subjects:
            if entry.startswith(EVERY_CONTEXT):
                pattern_context, pattern = None, entry[len(EVERY_CONTEXT):] or "*"
            else:
                pattern_context, pattern = split(entry)
            if pattern_context is not None and pattern_context != context:
                continue
            if pattern.endswith("*") and name.startswith(pattern[:-1]) or pattern == name:
                return True
        return False

    def destination_context(self, source_context: str, auto_context: str) -> str:
        """Where a source context's subjects go: AUTO and CUSTOM put the source context under a
        context of their own (`auto_context`, or the exporter's `context`), NONE keeps it as it
        is, DEFAULT puts everything into the default context."""
        if self.context_type == "NONE":
            return source_context
        if self.context_type == "DEFAULT":
            return DEFAULT_CONTEXT
        prefix = auto_context if self.context_type == "AUTO" else (self.context or DEFAULT_CONTEXT)
        prefix = prefix if prefix.startswith(".") else "." + prefix
        if source_context == DEFAULT_CONTEXT:
            return prefix
        if prefix == DEFAULT_CONTEXT:
            return source_context
        return prefix + source_context

    def destination_subject(self, subject: str, auto_context: str) -> str:
        context, name = split(subject)
        if self.subject_rename_format:
            name = self.subject_rename_format.replace(SUBJECT_PLACEHOLDER, name)
        return qualify(self.destination_context(context, auto_context), name)


@dataclass
class ExporterStatus:
    state: str = STARTING
    offset: int = -1
    ts: int = 0
    trace: str | None = None

    def body(self, name: str) -> dict:
        answer = {"name": name, "state": self.state, "offset": self.offset, "ts": self.ts}
        if self.trace is not None:
            answer["trace"] = self.trace
        return answer


def exporter_key(name: str) -> bytes:
    return _json({"keytype": "EXPORTER", "name": name, "magic": 0})


def state_key(name: str) -> bytes:
    return _json({"keytype": "EXPORTER_STATE", "name": name, "magic": 0})


def state_value(status: ExporterStatus) -> bytes:
    # A running exporter (STARTING, RUNNING, ERROR) is saved as RUNNING: it runs again after a restart.
    return _json({"state": PAUSED if status.state == PAUSED else RUNNING, "offset": status.offset, "ts": status.ts})


def _json(value: dict) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class ExportersState:
    """Exporters and their progress, as the `_schema_exporters` records say."""

    def __init__(self) -> None:
        self.exporters: dict[str, Exporter] = {}
        self.statuses: dict[str, ExporterStatus] = {}

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        try:
            k = json.loads(key) if key is not None else None
            v = json.loads(value) if value is not None else None
        except (ValueError, UnicodeDecodeError):
            logger.warning("_schema_exporters: skipping a record whose key or value is not JSON")
            return
        if not isinstance(k, dict) or not isinstance(k.get("name"), str) or not (v is None or isinstance(v, dict)):
            return
        name = k["name"]
        try:
            if k.get("keytype") == "EXPORTER":
                if v is None:
                    self.exporters.pop(name, None)
                    self.statuses.pop(name, None)
                else:
                    self.exporters[name] = parse_exporter(v, name)
                    self.statuses.setdefault(name, ExporterStatus())
            elif k.get("keytype") == "EXPORTER_STATE" and v is not None and name in self.exporters:
                saved = str(v.get("state"))
                self.statuses[name] = ExporterStatus(PAUSED if saved == PAUSED else STARTING,
                                                     int(v.get("offset", -1)), int(v.get("ts", 0)))
        except (RegistryError, TypeError, ValueError) as exc:
            logger.warning("_schema_exporters: skipping a record of exporter %r: %s", name, exc)


def parse_exporter(body, name: str | None = None, previous: Exporter | None = None) -> Exporter:
    """An exporter from a request body (POST: all of it; PUT: what it names over `previous`),
    checked as Confluent checks it. Raises RegistryError."""
    if not isinstance(body, dict):
        raise RegistryError(422, 422, "The request body must be a JSON object")
    if previous is None:
        name = body.get("name", name) if name is None else name
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise RegistryError(409, 40950, "Missing or invalid exporter name")
        exporter = Exporter(name)
    else:
        exporter = Exporter(**{**previous.__dict__, "subjects": list(previous.subjects), "config": dict(previous.config)})
    if "subjects" in body and body["subjects"] is not None:
        subjects = body["subjects"]
        if not isinstance(subjects, list) or not subjects or not all(isinstance(s, str) and s for s in subjects):
            raise RegistryError(409, 40952, "Invalid exporter subjects")
        exporter.subjects = list(subjects)
    if "subjectRenameFormat" in body:
        rename = body["subjectRenameFormat"]
        if rename is not None and not isinstance(rename, str):
            raise RegistryError(422, 422, "subjectRenameFormat must be a string")
        exporter.subject_rename_format = rename or None
    if body.get("contextType") is not None:
        context_type = body["contextType"]
        if not isinstance(context_type, str) or context_type.upper() not in CONTEXT_TYPES:
            raise RegistryError(422, 422, f"Invalid contextType {json.dumps(context_type)}; valid values are "
                                          f"{', '.join(CONTEXT_TYPES)}")
        exporter.context_type = context_type.upper()
    if "context" in body:
        context = body["context"]
        if context is not None and (not isinstance(context, str) or ":" in context):
            raise RegistryError(422, 422, "context must be a context name (`.name`) without a colon")
        exporter.context = context or None
    if "config" in body and body["config"] is not None:
        exporter.config = parse_config(body["config"])
    elif previous is None:
        raise RegistryError(409, 40951, "Missing or invalid exporter config")
    if exporter.context_type == "CUSTOM" and not exporter.context:
        raise RegistryError(422, 422, "contextType CUSTOM needs a context")
    return exporter


def parse_config(config) -> dict[str, str]:
    """An exporter's config: string keys and values, with the destination's `schema.registry.url`
    (one or more comma-separated http:// or https:// URLs)."""
    if not isinstance(config, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float, bool))
                                               for k, v in config.items()):
        raise RegistryError(409, 40951, "Missing or invalid exporter config")
    config = {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
    urls = [url.strip() for url in config.get(URL_KEY, "").split(",") if url.strip()]
    if not urls or any(urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname for url in urls):
        raise RegistryError(409, 40951, f"Missing or invalid exporter config: {URL_KEY} must name the destination "
                                        "registry (http:// or https://)")
    return config


class ExportFailed(Exception):
    """Copying to the destination failed; the exporter is in ERROR with this as its trace."""


class Exporters:
    """`/exporters` of one registry and the exporters it runs: on the broker that writes
    `_schema_exporters` (the leader of its partition 0), one task goes through every exporter that
    is not paused, in turn."""

    def __init__(self, broker, schemas: SchemasLog, tls_of) -> None:
        self.broker = broker
        self.schemas = schemas
        self.log = SchemasLog(broker, EXPORTERS_TOPIC, ExportersState())
        self.writing = asyncio.Lock()
        self._task: asyncio.Task | None = None
        # Bumped by every change an API call makes to an exporter: a copying step that began before
        # it does not save its progress over it.
        self._generation: dict[str, int] = {}
        self._traces: dict[str, str] = {}
        self._running: set[str] = set()  # exporters that have made a step since this broker took over
        self._retry_at: dict[str, float] = {}  # when an exporter in ERROR tries again
        self._tls_of = tls_of  # (config) -> SSLContext for https destinations

    @property
    def state(self) -> ExportersState:
        return self.log.state

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="schema exporters")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None

    # -- the API ------------------------------------------------------------------------------------

    async def answer(self, method: str, segments: list[str], body) -> tuple[int, object]:
        self.log.catch_up()
        if method in ("POST", "PUT", "DELETE"):
            async with self.writing:
                try:
                    self.log.ensure_created()
                    await self.log.settle()
                    return await self._route(method, segments, body)
                except AppendFailed as exc:
                    logger.error("registry exporters: %s", exc)
                    raise RegistryError(500, 50001, f"Error in the backend data store: {exc.error.name}") from None
        return await self._route(method, segments, body)

    async def _route(self, method: str, segments: list[str], body) -> tuple[int, object]:
        state = self.state
        match segments:
            case ["exporters"]:
                if method == "GET":
                    return 200, sorted(state.exporters)
                if method == "POST":
                    return 200, await self.create(body)
            case ["exporters", name]:
                if method == "GET":
                    return 200, self._exporter(name).body()
                if method == "PUT":
                    return 200, await self.update(name, body)
                if method == "DELETE":
                    return 204, await self.delete(name)
            case ["exporters", name, "status"]:
                if method == "GET":
                    return 200, self.status(name).body(name)
            case ["exporters", name, "config"]:
                if method == "GET":
                    return 200, dict(self._exporter(name).config)
                if method == "PUT":
                    config = body.get("config") if isinstance(body, dict) and isinstance(body.get("config"), dict) \
                        and len(body) == 1 else body
                    return 200, await self.update(name, {"config": config})
            case ["exporters", name, "pause" | "resume" | "reset" as action]:
                if method == "PUT":
                    return 200, await self.change_state(name, action)
            case _:
                raise RegistryError(404, 404, "HTTP 404 Not Found")
        raise RegistryError(405, 405, "HTTP 405 Method Not Allowed")

    def _exporter(self, name: str) -> Exporter:
        exporter = self.state.exporters.get(name)
        if exporter is None:
            raise not_found(name)
        return exporter

    def status(self, name: str) -> ExporterStatus:
        self._exporter(name)
        saved = self.state.statuses[name]
        status = ExporterStatus(saved.state, saved.offset, saved.ts)
        if status.state != PAUSED:
            if name in self._traces:
                status.state, status.trace = ERROR, self._traces[name]
            elif name in self._running and self._leads():
                status.state = RUNNING
        return status

    async def create(self, body) -> dict:
        exporter = parse_exporter(body)
        if exporter.name in self.state.exporters:
            raise RegistryError(409, 40960, f"Exporter '{exporter.name}' already exists.")
        await self._write(exporter.name, [(exporter_key(exporter.name), _json(exporter.body())),
                                          (state_key(exporter.name), state_value(ExporterStatus(ts=_now())))])
        return {"name": exporter.name}

    async def update(self, name: str, body) -> dict:
        previous = self._exporter(name)
        if self.state.statuses[name].state != PAUSED:
            raise not_paused(name)
        exporter = parse_exporter(body, name, previous)
        await self._write(name, [(exporter_key(name), _json(exporter.body()))])
        return {"name": name}

    async def delete(self, name: str) -> NoContent:
        """Answered 204 without a body, as Confluent's API reference has it."""
        self._exporter(name)
        await self._write(name, [(state_key(name), None), (exporter_key(name), None)])
        self._running.discard(name)
        self._traces.pop(name, None)
        return NoContent()

    async def change_state(self, name: str, action: str) -> dict:
        self._exporter(name)
        status = self.state.statuses[name]
        if action == "pause":
            changed = ExporterStatus(PAUSED, status.offset, _now())
        elif action == "resume":
            if status.state != PAUSED:
                raise RegistryError(409, 40961, f"Exporter '{name}' already running.")
            changed = ExporterStatus(STARTING, status.offset, _now())
        else:  # reset: from the start of `_schemas` again when resumed
            if status.state != PAUSED:
                raise not_paused(name)
            changed = ExporterStatus(PAUSED, -1, _now())
        await self._write(name, [(state_key(name), state_value(changed))])
        self._traces.pop(name, None)
        if changed.state != PAUSED:
            self._running.discard(name)
        return {"name": name}

    async def _write(self, name: str, records: list[tuple[bytes, bytes | None]]) -> None:
        self._generation[name] = self._generation.get(name, 0) + 1
        await self.log.append(records)

    # -- copying ------------------------------------------------------------------------------------

    def _leads(self) -> bool:
        return self.broker.metadata.topic(EXPORTERS_TOPIC) is not None and self.log.leads()

    async def _run(self) -> None:
        while True:
            try:
                busy = await self._round()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("schema exporters: a round failed")
                busy = False
            await asyncio.sleep(0 if busy else IDLE_INTERVAL)

    async def _round(self) -> bool:
        """One step of every exporter that is not paused; whether any had more to do."""
        if not self._leads():
            self._running.clear()
            return False
        self.log.catch_up()
        busy = False
        for name in list(self.state.exporters):
            if self.state.statuses.get(name, ExporterStatus(PAUSED)).state == PAUSED:
                continue
            if name in self._traces and time.monotonic() < self._retry_at.get(name, 0):
                continue
            busy |= await self._step(name)
        return busy

    async def _step(self, name: str) -> bool:
        """Copy what the exporter has not copied yet, up to RECORDS_PER_STEP records of `_schemas`,
        and save how far it got; whether there is more."""
        generation = self._generation.get(name, 0)
        exporter = self.state.exporters[name]
        start = self.state.statuses[name].offset + 1
        self.schemas.catch_up()
        end = self.schemas.readable_end()
        reached, more, seen = start - 1, False, 0
        try:
            if end is not None and start < end:
                for header, records in read_internal_batches(self.broker, SCHEMAS_TOPIC, 0, start):
                    if header.next_offset > end:
                        break
                    if seen >= RECORDS_PER_STEP:
                        more = True
                        break
                    if not header.is_control:
                        for record in records:
                            offset = header.base_offset + record.offset_delta
                            if offset >= start:
                                await self._export_record(exporter, record.key)
                                seen += 1
                    reached = header.next_offset - 1
        except ExportFailed as exc:
            if self._generation.get(name, 0) == generation:
                if self._traces.get(name) != str(exc):
                    logger.warning("schema exporter %s: %s", name, exc)
                self._traces[name] = str(exc)
                self._retry_at[name] = time.monotonic() + RETRY_INTERVAL
            return False
        async with self.writing:
            if self._generation.get(name, 0) != generation or name not in self.state.exporters:
                return False  # paused, reset, changed or deleted meanwhile: its own write stands
            status = self.state.statuses[name]
            first = name not in self._running or name in self._traces
            self._traces.pop(name, None)
            self._running.add(name)
            if reached != status.offset or first or status.state == STARTING:
                try:
                    await self.log.append([(state_key(name), state_value(ExporterStatus(RUNNING, reached, _now())))])
                except AppendFailed as exc:
                    logger.warning("schema exporter %s: its progress not saved: %s", name, exc)
                    return False
        return more

    def auto_context(self) -> str:
        """AUTO's context on the destination: `.` and this cluster's id (Confluent Platform names it
        after the source cluster; Confluent Cloud after its `lsrc-` id)."""
        return "." + str(getattr(self.broker.metadata, "cluster_id", "") or "kafka-wire")

    async def _export_record(self, exporter: Exporter, key: bytes | None) -> None:
        try:
            k = json.loads(key) if key is not None else None
        except (ValueError, UnicodeDecodeError):
            return
        if not isinstance(k, dict) or k.get("keytype") != "SCHEMA" or not isinstance(k.get("subject"), str):
            return
        if not exporter.matches(k["subject"]):
            return
        entry = self.schemas.state.subjects.get(k["subject"], {}).get(k.get("version"))
        if entry is not None and not entry.deleted:  # (as it is now: deleted since, it is not copied)
            await self._export_version(exporter, entry, set())

    async def _export_version(self, exporter: Exporter, entry: SchemaVersion, done: set) -> None:
        """Register one version on the destination (its references first: a referenced version the
        exporter's subjects do not name goes too, as the destination needs it)."""
        if (entry.subject, entry.version) in done:
            return
        done.add((entry.subject, entry.version))
        auto = self.auto_context()
        references = []
        for ref in entry.references:
            ref_subject = with_parent(str(ref.get("subject")), entry.subject)
            target = self.schemas.state.subjects.get(ref_subject, {}).get(ref.get("version"))
            if target is None:
                raise ExportFailed(f"{entry.subject} version {entry.version} refers to {ref_subject} version "
                                   f"{ref.get('version')}, which is not in this registry")
            await self._export_version(exporter, target, done)
            references.append((ref.get("name"), exporter.destination_subject(ref_subject, auto), ref.get("version")))
        subject = exporter.destination_subject(entry.subject, auto)
        # A reference within the schema's own context is named unqualified there, as it was here
        references = [{"name": name, "version": version,
                       "subject": split(ref_subject)[1] if split(ref_subject)[0] == split(subject)[0] else ref_subject}
                      for name, ref_subject, version in references]
        path = "/subjects/" + quote(subject, safe="")
        await self._destination(exporter, "PUT", "/mode/" + quote(subject, safe="") + "?force=true", {"mode": "IMPORT"})
        body = {"schema": entry.schema, "schemaType": entry.schema_type, "id": entry.schema_id,
                "version": entry.version}
        if references:
            body["references"] = references
        if entry.metadata is not None:
            body["metadata"] = entry.metadata
        if entry.rule_set is not None:
            body["ruleSet"] = entry.rule_set
        await self._destination(exporter, "POST", path + "/versions", body)

    async def _destination(self, exporter: Exporter, method: str, target: str, body: dict) -> object:
        """One request to the destination registry (each of its URLs in turn until one answers);
        anything but a 200 is ExportFailed."""
        headers = {"Content-Type": "application/vnd.schemaregistry.v1+json",
                   "Accept": "application/vnd.schemaregistry.v1+json"}
        source = exporter.config.get("basic.auth.credentials.source", "USER_INFO").upper()
        user_info = exporter.config.get("basic.auth.user.info")
        if user_info and source in ("USER_INFO", "SASL_INHERIT", ""):
            headers["Authorization"] = "Basic " + base64.b64encode(user_info.encode()).decode()
        data = json.dumps(body).encode()
        problem = "no destination URL"
        for url in [u.strip() for u in exporter.config.get(URL_KEY, "").split(",") if u.strip()]:
            parts = urlsplit(url)
            base = parts.path.rstrip("/")
            try:
                tls = self._tls_of(exporter.config) if parts.scheme == "https" else None
                status, _, answer = await http_request(parts.hostname, parts.port or (443 if tls else 80), method,
                                                       base + target, headers, data, REQUEST_TIMEOUT, tls=tls)
            except HttpForwardError as exc:
                problem = f"{url}: {exc}"
                continue
            except Exception as exc:  # (a trust store that does not load)
                raise ExportFailed(f"{url}: {exc}") from None
            if status != 200:
                raise ExportFailed(f"{method} {url}{target} answered {status}: "
                                   f"{answer.decode('utf-8', 'replace')[:500]}")
            try:
                return json.loads(answer)
            except ValueError:
                return None
        raise ExportFailed(problem)


def _now() -> int:
    return int(time.time() * 1000)

