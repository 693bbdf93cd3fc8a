"""Schema contexts, as Confluent's Schema Registry names them: independent namespaces of subjects
and schema ids inside one registry. A subject qualified with a context is written
`:.<context>:<subject>` (`:.staging:orders-value`); an unqualified subject, or one qualified with
the default context `.` (`:.:orders-value`, the same subject), lives in the default context.
`:.<context>:` with no subject stands for the context itself (its compatibility level and mode,
`/config/:.staging:`). Each context counts its schema ids from 1 on its own; a schema reference
without a context names a subject of the referencing schema's context. The subject prefix `:*:`
(`GET /subjects?subjectPrefix=`, Confluent's default) spans every context. A client may also be
given a base context path as its URL (`http://host:port/contexts/.staging`): its requests are
rewritten into that context (base_context_path).

Subjects are stored in `_schemas` with their qualified names, as Confluent stores them.
"""

from __future__ import annotations

DEFAULT_CONTEXT = "."
EVERY_CONTEXT = ":*:"
_DELIMITER = ":"
_PREFIX = ":."


def split(qualified: str) -> tuple[str, str]:
    """(context, unqualified subject) of a subject as a request or a record names it."""
    if qualified.startswith(_PREFIX):
        end = qualified.find(_DELIMITER, len(_PREFIX))
        if end < 0:
            return qualified[1:], ""
        return qualified[1:end], qualified[end + 1:]
    return DEFAULT_CONTEXT, qualified


def qualify(context: str, subject: str) -> str:
    """The subject's name in `context`: as it is in the default context, `:<context>:<subject>`
    in any other (a context's own name when `subject` is empty)."""
    if context == DEFAULT_CONTEXT:
        return subject
    return f"{_DELIMITER}{context}{_DELIMITER}{subject}"


def normalized(subject: str) -> str:
    """One spelling per subject: `:.:orders-value` is `orders-value`."""
    return qualify(*split(subject))


def context_of(subject: str | None) -> str:
    return DEFAULT_CONTEXT if subject is None else split(subject)[0]


def context_key(subject: str | None) -> str | None:
    """Where the settings of the subject's context are kept (`:.staging:`); None for the default
    context, whose settings are the global ones."""
    context = context_of(subject)
    return None if context == DEFAULT_CONTEXT else qualify(context, "")


def with_parent(reference_subject: str, parent_subject: str | None) -> str:
    """The subject a schema reference names: an unqualified one is in the context of the schema
    that references it (Confluent's qualifySubjectWithParent)."""
    if reference_subject.startswith(_DELIMITER) or parent_subject is None:
        return normalized(reference_subject)
    return qualify(context_of(parent_subject), reference_subject)


def matches_prefix(subject: str, prefix: str) -> bool:
    """Whether `subject` is listed for `GET /subjects?subjectPrefix=<prefix>`: `:*:<p>` any
    context's subjects starting with p; otherwise the prefix's context and its subjects starting
    with the rest (a bare prefix: the default context's)."""
    context, name = split(subject)
    if prefix.startswith(EVERY_CONTEXT):
        return name.startswith(prefix[len(EVERY_CONTEXT):])
    wanted_context, wanted = split(prefix)
    return context == wanted_context and name.startswith(wanted)


def context_prefix(context: str) -> str:
    """A context as the prefix of its subjects (Confluent's normalizeContext): `staging`, `.staging`
    and `:.staging:` are `:.staging:`; the default context has none. A colon inside is refused."""
    name = context.removeprefix(_DELIMITER).removesuffix(_DELIMITER)
    if _DELIMITER in name:
        raise ValueError("Context name cannot contain a colon")
    if not name.startswith("."):
        name = "." + name
    return "" if name == DEFAULT_CONTEXT else f"{_DELIMITER}{name}{_DELIMITER}"


def _qualified(text: str) -> bool:
    return text.startswith(_PREFIX) or text.startswith(EVERY_CONTEXT)


def base_context_path(segments: list[str], query: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """A request under a base context path, `/contexts/<context>/...` (a client given
    `http://registry/contexts/.staging` as its URL), as the request it stands for, as Confluent's
    ContextFilter rewrites it: a subject after `subjects`, or after a leading `config` / `mode`, is
    qualified with the context unless it names one; a leading `config` or `mode` without a
    subject is the context's own (`/config/:.staging:`); `schemas/ids/...` looks the id up in the
    context (its `subject` query qualified), `GET /subjects` lists the context's subjects (its
    `subjectPrefix` qualified). Anything else (`/contexts` itself) is returned as it is."""
    if len(segments) < 3 or segments[0] != "contexts":
        return segments, query
    prefix = context_prefix(segments[1])
    rest = segments[2:]
    rewritten: list[str] = []
    subject_next = settings = False
    for index, segment in enumerate(rest):
        if subject_next:
            if not _qualified(segment):
                segment = prefix + segment
            subject_next = False
        elif segment == "subjects" or (index == 0 and segment in ("config", "mode")):
            subject_next = True
            settings = index == 0 and segment != "subjects"
        rewritten.append(segment)
    if settings and subject_next and prefix:
        rewritten.append(prefix)
    query = dict(query)
    if rewritten[:2] == ["schemas", "ids"]:
        subject = query.get("subject", "")
        if not _qualified(subject):
            query["subject"] = prefix + subject
        if not query["subject"]:
            del query["subject"]
    elif rewritten in (["subjects"], ["schemas"]):
        wanted = query.get("subjectPrefix", "")
        if not _qualified(wanted):
            query["subjectPrefix"] = prefix + wanted
    return rewritten, query
