"""Qualified subjects of the Schema Registry's contexts (registry/contexts.py), as Confluent's
QualifiedSubject reads them, and the per-context state they give (registry/store.py)."""

from __future__ import annotations

import pytest

from registry.contexts import base_context_path, context_key, matches_prefix, normalized, qualify, split, \
    with_parent
from registry.store import RegistryState, SchemaVersion, config_key, config_value, mode_key, mode_value, \
    schema_key, schema_value


@pytest.mark.parametrize("qualified, parts", [
    ("orders-value", (".", "orders-value")),
    (":.staging:orders-value", (".staging", "orders-value")),
    (":.staging:", (".staging", "")),
    (":.staging", (".staging", "")),
    (":.:orders-value", (".", "orders-value")),
    (":.a:b:c", (".a", "b:c")),
    (":x:orders", (".", ":x:orders")),  # not a context (a context name starts with a dot)
    ("", (".", "")),
])
def test_split(qualified, parts):
    assert split(qualified) == parts


def test_qualify_and_normalize():
    assert qualify(".", "s") == "s"
    assert qualify(".staging", "s") == ":.staging:s"
    assert qualify(".staging", "") == ":.staging:"
    assert normalized(":.:s") == "s" and normalized(":.ctx:s") == ":.ctx:s"
    assert context_key("s") is None and context_key(":.ctx:s") == ":.ctx:" and context_key(":.ctx:") == ":.ctx:"


def test_a_reference_without_a_context_is_in_its_parents():
    assert with_parent("address", ":.shop:customer") == ":.shop:address"
    assert with_parent("address", "customer") == "address"
    assert with_parent(":.other:address", ":.shop:customer") == ":.other:address"
    assert with_parent(":.:address", ":.shop:customer") == "address"


@pytest.mark.parametrize("prefix, listed", [
    (":*:", ["a", "b", ":.x:a", ":.y:b"]),
    (":*:a", ["a", ":.x:a"]),
    ("", ["a", "b"]),
    ("a", ["a"]),
    (":.x:", [":.x:a"]),
    (":.x", [":.x:a"]),
    (":.y:b", [":.y:b"]),
])
def test_subject_prefixes(prefix, listed):
    assert [s for s in ["a", "b", ":.x:a", ":.y:b"] if matches_prefix(s, prefix)] == listed


def state_of(*records) -> RegistryState:
    state = RegistryState()
    for key, value in records:
        state.apply(key, value)
    return state


def version(subject: str, number: int, schema_id: int, schema: str = '"string"') -> tuple[bytes, bytes]:
    return schema_key(subject, number), schema_value(SchemaVersion(subject, number, schema_id, schema, "AVRO"))


def test_ids_settings_and_contexts_per_context():
    state = state_of(version("a", 1, 1), version("a", 2, 2, '"int"'), version(":.x:a", 1, 1, '"long"'),
                     (config_key(":.x:"), config_value("NONE")), (mode_key(":.x:"), mode_value("READONLY")),
                     (config_key(":.x:b"), config_value("FULL")))
    assert state.contexts() == [".", ".x"]
    assert state.max_id == 2 and state.next_id(".") == 3 and state.next_id(".x") == 2 and state.next_id(".y") == 1
    assert [e.subject for e in state.by_id(1)] == ["a"] and [e.subject for e in state.by_id(1, ".x")] == [":.x:a"]
    assert state.id_of("AVRO", '"long"', []) is None and state.id_of("AVRO", '"long"', [], ".x") == 1
    assert state.compatibility("a") == "BACKWARD" and state.compatibility(":.x:a") == "NONE"
    assert state.compatibility(":.x:b") == "FULL" and state.compatibility(None) == "BACKWARD"
    assert state.mode(":.x:a") == "READONLY" and state.mode("a") == "READWRITE"
    assert state.subject_names() == [":.x:a", "a"] and state.subject_names(prefix="a") == ["a"]


@pytest.mark.parametrize("path, query, rewritten, rewritten_query", [
    ("contexts/.staging/subjects/orders-value/versions", {}, "subjects/:.staging:orders-value/versions", {}),
    ("contexts/staging/subjects/orders-value/versions/1/referencedby", {},
     "subjects/:.staging:orders-value/versions/1/referencedby", {}),
    ("contexts/.staging/subjects/:.other:s", {}, "subjects/:.other:s", {}),
    ("contexts/.staging/compatibility/subjects/s/versions/latest", {},
     "compatibility/subjects/:.staging:s/versions/latest", {}),
    ("contexts/.staging/config", {}, "config/:.staging:", {}),
    ("contexts/.staging/mode/s", {}, "mode/:.staging:s", {}),
    ("contexts/.staging/subjects", {}, "subjects", {"subjectPrefix": ":.staging:"}),
    ("contexts/.staging/subjects", {"subjectPrefix": "ord"}, "subjects", {"subjectPrefix": ":.staging:ord"}),
    ("contexts/.staging/subjects", {"subjectPrefix": ":*:"}, "subjects", {"subjectPrefix": ":*:"}),
    ("contexts/./subjects", {}, "subjects", {"subjectPrefix": ""}),
    ("contexts/./config", {}, "config", {}),
    ("contexts/.staging/schemas/ids/3", {}, "schemas/ids/3", {"subject": ":.staging:"}),
    ("contexts/.staging/schemas/ids/3/versions", {"subject": "s"}, "schemas/ids/3/versions",
     {"subject": ":.staging:s"}),
    ("contexts/./schemas/ids/3", {}, "schemas/ids/3", {}),
    ("contexts/.staging/schemas/types", {}, "schemas/types", {}),
    ("contexts", {}, "contexts", {}),
])
def test_base_context_paths(path, query, rewritten, rewritten_query):
    assert base_context_path(path.split("/"), query) == (rewritten.split("/"), rewritten_query)


def test_a_context_name_with_a_colon_is_refused():
    with pytest.raises(ValueError, match="colon"):
        base_context_path(["contexts", ".a:b", "subjects"], {})
