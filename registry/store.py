"""The registry's state and its log: the compacted topic `_schemas` (one partition), with records keyed
and shaped as Confluent's Schema Registry and Karapace write them, so an existing `_schemas` topic
reads as is. Keys are JSON objects in Confluent's key order:

    {"keytype":"SCHEMA","subject":s,"version":v,"magic":1}  -> {"subject","version","id","schema",
                                                                ["schemaType"],["references"],"deleted"}
                                                               null: version permanently deleted
    {"keytype":"CONFIG","subject":s|null,"magic":0}          -> {"compatibilityLevel": level, ["normalize": b]};
                                                               null: unset
    {"keytype":"MODE","subject":s|null,"magic":0}            -> {"mode": m}; null: unset
    {"keytype":"DELETE_SUBJECT","subject":s,"magic":0}       -> {"subject": s, "version": v}: versions
                                                               up to v soft-deleted
    {"keytype":"CONTEXT","tenant":"default","context":".ctx","magic":0}
                                                            -> {"tenant","context"}: the context exists
                                                               (written with its first subject);
                                                               null: deleted (DELETE /contexts/{c})
    {"keytype":"NOOP","magic":0}                             -> (Confluent's leader election marker)

A SCHEMA value may carry Confluent's `metadata` ({"tags", "properties", "sensitive"}), `ruleSet`
(registry/rules.py) and `md5` (base64 of the MD5 its guid is made of, registry/guids.py); all are
read as written. A CONFIG value may carry `defaultMetadata`, `overrideMetadata`, `defaultRuleSet`
and `overrideRuleSet` (Confluent's data-contract config).

A subject of a context other than the default one is stored under its qualified name
(`:.staging:orders-value`, contexts.py), and a context's own settings under `:.staging:`.

The state is the replay of the log: `SchemasLog.catch_up` applies whatever was appended since the
last read (our own writes and anything produced to `_schemas` by a Kafka client), so the log is the
one truth and ids survive restarts.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from dataclasses import dataclass, field

from broker.workers.ownership import SCHEMAS_TOPIC
from coordinator.offsets_store import AppendFailed, append_internal_batch, read_internal_batches
from kafka_wire.record_codec import Record, build_batch

from .guids import guid_of, stored_metadata
from .rules import stored_rule_set
from .contexts import DEFAULT_CONTEXT, EVERY_CONTEXT, context_key, context_of, matches_prefix, normalized, qualify

logger = logging.getLogger("kafka_wire.registry")

DEFAULT_COMPATIBILITY = "BACKWARD"
DEFAULT_MODE = "READWRITE"
DEFAULT_TENANT = "default"  # (Confluent's tenant of a registry that is not multi-tenant)


@dataclass
class SchemaVersion:
    subject: str
    version: int
    schema_id: int
    schema: str
    schema_type: str
    references: list = field(default_factory=list)
    deleted: bool = False
    metadata: dict | None = None
    rule_set: dict | None = None  # (registry/rules.py)
    md5: bytes | None = None  # as another registry wrote it; None: computed (guids.py)
    _guid: str | None = field(default=None, repr=False, compare=False)

    @property
    def guid(self) -> str:
        if self._guid is None:
            self._guid = guid_of(self)
        return self._guid


def schema_key(subject: str, version: int) -> bytes:
    return _json({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1})


def schema_value(entry: SchemaVersion) -> bytes:
    value = {"subject": entry.subject, "version": entry.version, "id": entry.schema_id, "schema": entry.schema}
    if entry.references:
        value["references"] = entry.references
    if entry.metadata is not None:
        value["metadata"] = entry.metadata
    if entry.rule_set is not None:
        value["ruleSet"] = entry.rule_set
    if entry.md5 is not None:  # (another registry's, kept as it wrote it)
        value["md5"] = base64.b64encode(entry.md5).decode()
    if entry.schema_type != "AVRO":
        value["schemaType"] = entry.schema_type
    value["deleted"] = entry.deleted
    return _json(value)


def config_key(subject: str | None) -> bytes:
    return _json({"keytype": "CONFIG", "subject": subject, "magic": 0})


def config_value(level: str | None, normalize: bool | None = None, contracts: dict | None = None) -> bytes:
    """A CONFIG record's value; `contracts`: its defaultMetadata, overrideMetadata, defaultRuleSet
    and overrideRuleSet, those it has."""
    value = {"compatibilityLevel": level} if level is not None else {}
    if normalize is not None:
        value["normalize"] = normalize
    value.update(contracts or {})
    return _json(value)


def mode_key(subject: str | None) -> bytes:
    return _json({"keytype": "MODE", "subject": subject, "magic": 0})


def mode_value(mode: str) -> bytes:
    return _json({"mode": mode})


def context_key_record(context: str) -> bytes:
    """The key of a context's own record (`.staging`, as Confluent names it there)."""
    return _json({"keytype": "CONTEXT", "tenant": DEFAULT_TENANT, "context": context, "magic": 0})


def context_value(context: str) -> bytes:
    return _json({"tenant": DEFAULT_TENANT, "context": context})


def delete_subject_key(subject: str) -> bytes:
    return _json({"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0})


def delete_subject_value(subject: str, version: int) -> bytes:
    return _json({"subject": subject, "version": version})


CONTRACT_FIELDS = ("defaultMetadata", "overrideMetadata", "defaultRuleSet", "overrideRuleSet")
# The other settings a CONFIG value may carry, by the type of their value: `compatibilityGroup` (a
# metadata property: versions are checked only against those with the same value of it), and
# `validateFields` (reserved fields and `$$` JSON property names checked, registry/reserved.py),
# `validateNewSchemas` (a new Avro schema's namespaces and defaults checked, registry/schemas.py) and
# `validateRules` (kept and answered: Confluent's open-source registry keeps it and acts on nothing).
CONFIG_SETTINGS = {"compatibilityGroup": str, "validateFields": bool, "validateNewSchemas": bool,
                   "validateRules": bool}


def _contracts(value: dict) -> dict:
    """The data-contract fields of a CONFIG record's value, as read (one unreadable is left out)."""
    found = {}
    for name in CONTRACT_FIELDS:
        read = stored_metadata(value.get(name)) if name.endswith("Metadata") else stored_rule_set(value.get(name))
        if read is not None:
            found[name] = read
    for name, kind in CONFIG_SETTINGS.items():
        if isinstance(value.get(name), kind):
            found[name] = value[name]
    return found


def _json(value: dict) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class RegistryState:
    """Subjects, their versions, schemas by id and compatibility levels, as the records say.
    Subjects go by their qualified names (contexts.py); schema ids are counted per context."""

    def __init__(self) -> None:
        self.subjects: dict[str, dict[int, SchemaVersion]] = {}
        self.configs: dict[str | None, str] = {}
        self.normalizes: dict[str | None, bool] = {}  # the config's `normalize`, where it is set
        # The config's defaultMetadata, overrideMetadata, defaultRuleSet, overrideRuleSet, where set
        self.contracts: dict[str | None, dict] = {}
        self.modes: dict[str | None, str] = {}
        self.max_ids: dict[str, int] = {}  # the highest schema id of each context
        self.declared_contexts: set[str] = set()  # contexts with a CONTEXT record

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """One record of `_schemas`; a record this registry does not understand is skipped."""
        if key is None:
            return
        try:
            k = json.loads(key)
            v = json.loads(value) if value is not None else None
        except (ValueError, UnicodeDecodeError):
            logger.warning("_schemas: skipping a record whose key or value is not JSON")
            return
        if not isinstance(k, dict) or (v is not None and not isinstance(v, dict)):
            return
        keytype = k.get("keytype")
        subject = k.get("subject")
        try:
            if keytype == "SCHEMA":
                self._apply_schema(subject, int(k["version"]), v)
            elif keytype == "CONFIG":  # a config record replaces the one before
                self.configs.pop(subject, None)
                self.normalizes.pop(subject, None)
                self.contracts.pop(subject, None)
                if v is not None and v.get("compatibilityLevel"):
                    self.configs[subject] = str(v["compatibilityLevel"]).upper()
                if v is not None and isinstance(v.get("normalize"), bool):
                    self.normalizes[subject] = v["normalize"]
                if v is not None and any(v.get(name) is not None for name in (*CONTRACT_FIELDS, *CONFIG_SETTINGS)):
                    self.contracts[subject] = _contracts(v)
            elif keytype == "MODE":
                if v is None:
                    self.modes.pop(subject, None)
                elif v.get("mode"):
                    self.modes[subject] = str(v["mode"]).upper()
            elif keytype == "CONTEXT":
                context = k.get("context")
                if isinstance(context, str) and context.startswith(".") and context != DEFAULT_CONTEXT:
                    if v is None:
                        self.declared_contexts.discard(context)
                    else:
                        self.declared_contexts.add(context)
            elif keytype == "DELETE_SUBJECT" and v is not None:
                upto = int(v["version"])
                for entry in self.subjects.get(subject, {}).values():
                    if entry.version <= upto:
                        entry.deleted = True
        except (KeyError, TypeError, ValueError) as exc:
            logger.warning("_schemas: skipping a %s record that lacks what it needs: %r", keytype, exc)

    def _apply_schema(self, subject: str, version: int, v: dict | None) -> None:
        versions = self.subjects.setdefault(subject, {})
        if v is None:  # permanently deleted
            versions.pop(version, None)
            if not versions:
                del self.subjects[subject]
            return
        schema_id = int(v["id"])
        md5 = None
        if isinstance(v.get("md5"), str):
            try:
                md5 = base64.b64decode(v["md5"], validate=True)
            except ValueError:
                md5 = None
        versions[version] = SchemaVersion(subject, version, schema_id, str(v["schema"]),
                                          str(v.get("schemaType") or "AVRO").upper(),
                                          [ref for ref in v.get("references") or [] if isinstance(ref, dict)],
                                          bool(v.get("deleted", False)), stored_metadata(v.get("metadata")),
                                          stored_rule_set(v.get("ruleSet")),
                                          md5 if md5 is not None and len(md5) == 16 else None)
        context = context_of(subject)
        self.max_ids[context] = max(self.max_ids.get(context, 0), schema_id)

    # -- queries --------------------------------------------------------------------------------

    def versions(self, subject: str, *, include_deleted: bool = False) -> list[SchemaVersion]:
        found = self.subjects.get(subject, {})
        return [found[v] for v in sorted(found) if include_deleted or not found[v].deleted]

    def subject_names(self, *, include_deleted: bool = False, prefix: str = EVERY_CONTEXT) -> list[str]:
        return sorted(s for s in self.subjects
                      if matches_prefix(s, prefix) and self.versions(s, include_deleted=include_deleted))

    @property
    def max_id(self) -> int:
        """The default context's highest schema id."""
        return self.max_ids.get(DEFAULT_CONTEXT, 0)

    def next_id(self, context: str) -> int:
        return self.max_ids.get(context, 0) + 1

    def contexts(self) -> list[str]:
        """The default context, then every other context: those with a CONTEXT record (Confluent
        writes one with a context's first subject and keeps it until the context is deleted) and
        those a subject is registered in (soft-deleted too)."""
        found = {context_of(s) for s in self.subjects} | self.declared_contexts
        return [DEFAULT_CONTEXT, *sorted(found - {DEFAULT_CONTEXT})]

    def context_has_subjects(self, context: str) -> bool:
        """Whether any subject of the context has a version, soft-deleted ones too."""
        return any(context_of(s) == context and versions for s, versions in self.subjects.items())

    def by_id(self, schema_id: int, context: str = DEFAULT_CONTEXT) -> list[SchemaVersion]:
        """Every subject version (soft-deleted ones too) of the context registered with this id."""
        return [entry for subject, versions in self.subjects.items() if context_of(subject) == context
                for entry in versions.values() if entry.schema_id == schema_id]

    def id_in_context_of(self, schema_id: int, subject: str | None) -> tuple[list[SchemaVersion], str | None]:
        """(the versions registered with the id, the subject qualified) in the context of
        `subject` as a request names it (`GET /schemas/ids/{id}?subject=`): the default context
        without one; an unqualified subject without the id in the default context is tried in
        each other context (Confluent's getSchemaKeyUsingContexts)."""
        qualified = normalized(subject) if subject else None
        entries = self.by_id(schema_id, context_of(qualified))
        if not entries and subject and not subject.startswith(":"):
            for context in self.contexts()[1:]:
                found = self.by_id(schema_id, context)
                if any(entry.subject == qualify(context, subject) for entry in found):
                    return found, qualify(context, subject)
        return entries, qualified

    def id_of(self, schema_type: str, canonical: str, references: list,
              context: str = DEFAULT_CONTEXT, metadata: dict | None = None,
              rule_set: dict | None = None) -> int | None:
        """The id this schema (with its metadata) already has in any subject of the context (ids
        are the context's)."""
        for subject, versions in self.subjects.items():
            if context_of(subject) != context:
                continue
            for entry in versions.values():
                if (entry.schema == canonical and entry.schema_type == schema_type
                        and entry.references == references and entry.metadata == metadata
                        and entry.rule_set == rule_set):
                    return entry.schema_id
        return None

    def ids_by_guid(self, guid: str) -> list[tuple[str, int]]:
        """(context, schema id) of each context where a subject version (soft-deleted ones too) has
        this guid, the default context first, then by context name; of several ids in a context
        the highest (as Confluent's cache keeps the last one it read)."""
        found: dict[str, int] = {}
        for subject, versions in self.subjects.items():
            for entry in versions.values():
                if entry.guid == guid:
                    context = context_of(subject)
                    found[context] = max(found.get(context, 0), entry.schema_id)
        return sorted(found.items(), key=lambda item: (item[0] != DEFAULT_CONTEXT, item[0]))

    def _setting(self, settings: dict, subject: str | None, default):
        """The subject's own, else its context's (`:.ctx:`), else the global one."""
        if subject is not None and subject in settings:
            return settings[subject]
        context = context_key(subject)
        if context is not None and context in settings:
            return settings[context]
        return settings.get(None, default)

    def compatibility(self, subject: str | None) -> str:
        return self._setting(self.configs, subject, DEFAULT_COMPATIBILITY)

    def normalize(self, subject: str | None) -> bool | None:
        return self._setting(self.normalizes, subject, None)

    def setting(self, subject: str | None, name: str):
        """A CONFIG_SETTINGS value in force for `subject`: the subject's own, else its context's,
        else the global one (as `normalize`); None where none sets it."""
        return self._setting({scope: contracts[name] for scope, contracts in self.contracts.items()
                              if name in contracts}, subject, None)

    def contracts_in_scope(self, subject: str | None) -> dict:
        """The defaultMetadata, overrideMetadata, defaultRuleSet and overrideRuleSet a registration
        under `subject` gets: those of the subject's own config record where it has one (Confluent
        takes them from that record alone), else its context's, else the global one's."""
        scopes = [scope for scope in (subject, context_key(subject)) if scope is not None]
        for scope in [*scopes, None]:
            if self._has_config(scope):
                return self.contracts.get(scope, {})
        return {}

    def _has_config(self, scope: str | None) -> bool:
        return scope in self.configs or scope in self.normalizes or scope in self.contracts

    def mode(self, subject: str | None) -> str:
        return self._setting(self.modes, subject, DEFAULT_MODE)


# Confluent's kafkastore.topic.replication.factor default; fewer when fewer brokers are alive.
SCHEMAS_REPLICATION_FACTOR = 3
# How long a write waits for the in-sync replicas (and the disk, with log.flush.on.ack).
DURABLE_TIMEOUT_MS = 10_000


class SchemasLog:
    """`_schemas` on this broker: created when missing, replayed into `state`, appended to.

    On a single node everything appended counts. In a cluster (the broker's appends wait for
    replicas) the replay stops at the high watermark, so that the state holds only what the in-sync
    replicas have (what a new leader will have too), a follower's replica as far as it has it; only
    the partition's leader appends, and answers once the in-sync replicas have the write."""

    def __init__(self, broker, topic: str = SCHEMAS_TOPIC, state=None) -> None:
        self.broker = broker
        # Another compacted one-partition topic of the registry's (`_schema_exporters`, exporters.py)
        # is kept the same way, replayed into its own state (anything with `apply(key, value)`).
        self.topic = topic
        self.state = RegistryState() if state is None else state
        self.next_offset = 0

    @property
    def replicated(self) -> bool:
        return bool(getattr(self.broker.leadership, "waits_for_replicas", False))

    def ensure_created(self, *, at_start: bool = False) -> None:
        """Create `_schemas` when missing, as Confluent's registry does: compacted, one partition,
        replication factor min(3, live brokers). In a cluster whoever comes first creates it (the
        others find it exists); at a broker's start it waits for three live brokers (the brokers of a
        cluster start one by one), and the first request creates it with what is alive then."""
        metadata = self.broker.metadata
        if metadata.topic(self.topic) is not None:
            return
        if not self.replicated:
            self.broker.create_topic(self.topic, 1, 1, {"cleanup.policy": ["compact"]})
            return
        from broker.cluster.replica_assignment import InvalidReplicationFactor
        from broker.cluster.zk_metadata import BROKER_IDS_PATH, TopicExists

        live = len(metadata.live_brokers())
        try:  # the registrations themselves: this broker's view of them may lag a moment
            registered = len(self.broker.zk.get_children(BROKER_IDS_PATH))
        except Exception:
            registered = live
        if live == 0 or live < registered:
            return  # (the next request tries again)
        if at_start and live < SCHEMAS_REPLICATION_FACTOR:
            logger.info("%s: created at the first request (%d of %d brokers alive)", self.topic, live,
                        SCHEMAS_REPLICATION_FACTOR)
            return

        try:
            self.broker.create_topic(self.topic, 1, min(SCHEMAS_REPLICATION_FACTOR, live),
                                     {"cleanup.policy": ["compact"]})
        except TopicExists:
            pass  # another broker's registry created it first
        except InvalidReplicationFactor as exc:
            logger.warning("%s: not created: %s", self.topic, exc)

    def readable_end(self) -> int | None:
        """Where the replay may read to: the log end offset on a single node, the high watermark in
        a cluster; None without a replica here."""
        plog = self.broker.partition_log(self.topic, 0)
        if plog is None:
            return None
        return plog.high_watermark if self.replicated else plog.log_end_offset

    def catch_up(self) -> None:
        """Apply the records appended since the last read (up to readable_end)."""
        end = self.readable_end()
        if end is None or end <= self.next_offset:
            return
        for header, records in read_internal_batches(self.broker, self.topic, 0, self.next_offset):
            if header.next_offset > end:
                break
            if not header.is_control:
                for record in records:
                    if header.base_offset + record.offset_delta >= self.next_offset:
                        self.state.apply(record.key, record.value)
            self.next_offset = header.next_offset

    def leads(self) -> bool:
        """This broker leads `_schemas`-0 (and so writes it)."""
        return self.broker.leadership_error(self.topic, 0).value == 0

    async def settle(self) -> None:
        """Before a write chooses ids and versions: the in-sync replicas have everything in this
        leader's log (a leader that just took over may hold records its predecessor appended and the
        others have not fetched yet), and the state has applied it. Raises AppendFailed."""
        if self.replicated:
            plog = self.broker.partition_log(self.topic, 0)
            if plog is not None and plog.high_watermark < plog.log_end_offset:
                errors = await self.broker.await_replication([(self.topic, 0)], DURABLE_TIMEOUT_MS)
                self._raise_for(errors.get((self.topic, 0)), "the in-sync replicas did not catch up")
        self.catch_up()

    async def append(self, records: list[tuple[bytes, bytes | None]]) -> None:
        """Write the records as one batch as the leader of `_schemas`-0, wait until it is as safe as
        an acknowledged produce with acks=all (the in-sync replicas have it in a cluster; on stable
        storage with log.flush.on.ack), and apply it. Raises AppendFailed."""
        error = self.broker.leadership_error(self.topic, 0)
        self._raise_for(error, f"this broker does not lead {self.topic}")
        batch = bytearray(build_batch([Record(i, 0, key, value) for i, (key, value) in enumerate(records)],
                                      base_timestamp=int(time.time() * 1000)))
        append_internal_batch(self.broker, self.topic, 0, batch)
        errors = await self.broker.await_durable([(self.topic, 0)], DURABLE_TIMEOUT_MS)
        self._raise_for(errors.get((self.topic, 0)), f"the write to {self.topic} is not durable")
        self.catch_up()

    @staticmethod
    def _raise_for(error, message: str) -> None:
        if error is not None and error.value != 0:
            raise AppendFailed(error, f"{message} ({error.name})")
