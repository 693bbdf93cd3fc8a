"""Schema contexts, as Confluent's Schema Registry names them: independent namespaces of subjects
and schema ids inside one registry. A subject qualified with a context is written
`:.<context>:<subject>` (`:.staging:orders-value`); an unqualified subject, or one qualified with
the default context `.` (`:.:orders-value`, the same subject), lives in the default context.
`:.<context>:` with no subject stands for the context itself (its compatibility level and mode,
`/config/:.staging:`). Each context counts its schema ids from 1 on its own; a schema reference
without a context names a subject of the referencing schema's context. The subject prefix `:*:`
(`GET /subjects?subjectPrefix=`, Confluent's default) spans every context.

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
