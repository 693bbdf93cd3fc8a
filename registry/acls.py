"""What a principal may do in the Schema Registry, decided by the broker's own Kafka ACLs as
Confluent's Topic ACL authorizer maps them (its documented table): a subject `<topic>-key` or
`<topic>-value` stands for its topic, and

    SUBJECT_READ                 GET /subjects/{s}/versions[/{v}[/schema|/referencedby]],
                                 GET /subjects/{s}/metadata, POST /subjects/{s}       TOPIC READ
    SUBJECT_WRITE                POST /subjects/{s}/versions,
                                 POST /compatibility/subjects/{s}/versions[/{v}]       TOPIC WRITE
    SUBJECT_DELETE               DELETE /subjects/{s}[/versions/{v}]                  TOPIC WRITE
    SCHEMA_READ                  GET /schemas/ids/{id}[/...], GET /schemas/guids/{guid}[/ids]
                                                                TOPIC READ on a topic of one of its subjects
    SUBJECT_COMPATIBILITY_READ   GET /config/{s}, GET /mode/{s}                       TOPIC READ
    SUBJECT_COMPATIBILITY_WRITE  PUT/DELETE /config/{s}, PUT/DELETE /mode/{s}         TOPIC WRITE
    GLOBAL_COMPATIBILITY_READ    GET /config, GET /mode                               super user
    GLOBAL_COMPATIBILITY_WRITE   PUT /config, PUT /mode                               super user
    GLOBAL_SUBJECTS_READ         GET /subjects, GET /contexts                         super user
    CONTEXT_DELETE               DELETE /contexts/{c}                                 super user
    EXPORTER_READ, EXPORTER_WRITE  GET, and POST/PUT/DELETE /exporters[/...]           super user

A subject not named after a topic is a super user's alone. `GET /` and `GET /schemas/types` name
nothing and are anyone's. The super users are the broker's `super.users`. A broker without an
authorizer (`authorizer.class.name` unset) checks nothing, as it checks no Kafka request; with
one, a refusal is 403 `{"error_code": 40301, "message": "User is denied operation <op> on
<resource>"}`, Confluent's shape.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.security.authorizer import AclOperation, ResourceType

from .contexts import split
from .guids import parse_guid

READ, WRITE = AclOperation.READ, AclOperation.WRITE


@dataclass(frozen=True)
class Needed:
    operation: str  # Confluent's operation name
    acl: AclOperation | None  # the topic operation; None: a super user's
    subject: str | None = None
    schema_id: str | None = None
    guid: str | None = None


def needed(method: str, segments: list[str]) -> Needed | None:
    """What the request needs; None: nothing (it names no subject, schema or setting)."""
    method = "GET" if method == "HEAD" else method
    match segments:
        case ["subjects"] | ["contexts"] | ["schemas"]:
            return Needed("GLOBAL_SUBJECTS_READ", None)
        case ["subjects", subject]:
            return Needed("SUBJECT_DELETE", WRITE, subject) if method == "DELETE" else Needed("SUBJECT_READ", READ, subject)
        case ["subjects", subject, "versions"]:
            return Needed("SUBJECT_WRITE", WRITE, subject) if method == "POST" else Needed("SUBJECT_READ", READ, subject)
        case ["subjects", subject, "metadata"]:
            return Needed("SUBJECT_READ", READ, subject)
        case ["subjects", subject, "versions", _, *_]:
            return Needed("SUBJECT_DELETE", WRITE, subject) if method == "DELETE" else Needed("SUBJECT_READ", READ, subject)
        case ["compatibility", "subjects", subject, *_]:
            return Needed("SUBJECT_WRITE", WRITE, subject)
        case ["schemas", "ids", schema_id, *_]:
            return Needed("SCHEMA_READ", READ, schema_id=schema_id)
        case ["schemas", "guids", guid, *_]:
            return Needed("SCHEMA_READ", READ, guid=guid)
        case ["contexts", _]:
            return Needed("CONTEXT_DELETE", None)
        case ["exporters", *_]:  # (the registry cluster's resource in Confluent's RBAC, no subject's)
            return Needed("EXPORTER_READ", None) if method == "GET" else Needed("EXPORTER_WRITE", None)
        case ["config" | "mode"]:
            return (Needed("GLOBAL_COMPATIBILITY_READ", None) if method == "GET"
                    else Needed("GLOBAL_COMPATIBILITY_WRITE", None))
        case ["config" | "mode", subject]:
            return (Needed("SUBJECT_COMPATIBILITY_READ", READ, subject) if method == "GET"
                    else Needed("SUBJECT_COMPATIBILITY_WRITE", WRITE, subject))
    return None


def topic_of(subject: str) -> str | None:
    subject = split(subject)[1]  # a subject of any context (`:.staging:orders-value`) stands for its topic
    for suffix in ("-key", "-value"):
        if subject.endswith(suffix) and len(subject) > len(suffix):
            return subject[:-len(suffix)]
    return None


class RegistryAcls:
    def __init__(self, broker, state) -> None:
        self.broker = broker
        self.state = state  # () -> RegistryState, for the subjects of a schema id

    def refusal(self, principal: str, host: str, method: str, segments: list[str],
                query: dict[str, str] | None = None) -> str | None:
        """Why the request is refused (the 403's message), or None when it may go on. A schema id
        is checked in the context its `subject` query names, the one the answer comes from."""
        authorizer = self.broker.authorizer
        if not authorizer.enabled:
            return None
        need = needed(method, segments)
        if need is None or principal in authorizer.super_users:
            return None
        if need.schema_id is not None:
            try:
                entries, _ = self.state().id_in_context_of(int(need.schema_id), (query or {}).get("subject"))
                subjects = {entry.subject for entry in entries}
            except ValueError:
                return None  # not an id: answered 404 as without ACLs
            if any(self._may(principal, host, READ, subject) for subject in subjects):
                return None
            return f"User is denied operation {need.operation} on Schema: {need.schema_id}"
        if need.guid is not None:
            # Any schema with the guid this principal may read (of any context)
            guid = parse_guid(need.guid)
            state = self.state()
            subjects = {entry.subject for context, schema_id in (state.ids_by_guid(guid) if guid else [])
                        for entry in state.by_id(schema_id, context) if entry.guid == guid}
            if not subjects or any(self._may(principal, host, READ, subject) for subject in subjects):
                return None  # (an unknown guid is answered 404 as without ACLs)
            return f"User is denied operation {need.operation} on Schema: {need.guid}"
        if need.subject is not None and need.acl is not None and self._may(principal, host, need.acl, need.subject):
            return None
        what = f"Subject: {need.subject}" if need.subject is not None else "the registry (a super user's operation)"
        return f"User is denied operation {need.operation} on {what}"

    def _may(self, principal: str, host: str, operation: AclOperation, subject: str) -> bool:
        topic = topic_of(subject)
        return topic is not None and self.broker.authorizer.authorize_principal(
            principal, host, operation, ResourceType.TOPIC, topic)
