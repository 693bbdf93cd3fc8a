"""The Schema Registry's requests mapped to Confluent's operations and the topic ACL each needs
(registry/acls.py, after Confluent's Topic ACL authorizer table)."""

from __future__ import annotations

import pytest

from broker.security.authorizer import AclOperation
from registry.acls import needed, topic_of

R, W = AclOperation.READ, AclOperation.WRITE


@pytest.mark.parametrize("method, path, operation, acl, subject", [
    ("GET", "subjects", "GLOBAL_SUBJECTS_READ", None, None),
    ("GET", "contexts", "GLOBAL_SUBJECTS_READ", None, None),
    ("POST", "subjects/t-value", "SUBJECT_READ", R, "t-value"),
    ("DELETE", "subjects/t-value", "SUBJECT_DELETE", W, "t-value"),
    ("GET", "subjects/t-value/versions", "SUBJECT_READ", R, "t-value"),
    ("POST", "subjects/t-value/versions", "SUBJECT_WRITE", W, "t-value"),
    ("GET", "subjects/t-key/versions/latest", "SUBJECT_READ", R, "t-key"),
    ("HEAD", "subjects/t-key/versions/1/schema", "SUBJECT_READ", R, "t-key"),
    ("GET", "subjects/t-key/versions/1/referencedby", "SUBJECT_READ", R, "t-key"),
    ("DELETE", "subjects/t-key/versions/1", "SUBJECT_DELETE", W, "t-key"),
    ("POST", "compatibility/subjects/t-value/versions/latest", "SUBJECT_WRITE", W, "t-value"),
    ("POST", "compatibility/subjects/t-value/versions", "SUBJECT_WRITE", W, "t-value"),
    ("GET", "config", "GLOBAL_COMPATIBILITY_READ", None, None),
    ("PUT", "mode", "GLOBAL_COMPATIBILITY_WRITE", None, None),
    ("GET", "config/t-value", "SUBJECT_COMPATIBILITY_READ", R, "t-value"),
    ("DELETE", "mode/t-value", "SUBJECT_COMPATIBILITY_WRITE", W, "t-value"),
    ("PUT", "config/t-value", "SUBJECT_COMPATIBILITY_WRITE", W, "t-value"),
    ("GET", "subjects/t-value/metadata", "SUBJECT_READ", R, "t-value"),
    ("DELETE", "contexts/.staging", "CONTEXT_DELETE", None, None),
])
def test_each_endpoint_needs_confluents_operation(method, path, operation, acl, subject):
    need = needed(method, path.split("/"))
    assert (need.operation, need.acl, need.subject) == (operation, acl, subject)


def test_schema_ids_and_what_names_nothing():
    need = needed("GET", ["schemas", "ids", "7", "subjects"])
    assert (need.operation, need.schema_id) == ("SCHEMA_READ", "7")
    for path in (["schemas", "guids", "g"], ["schemas", "guids", "g", "ids"]):
        need = needed("GET", path)
        assert (need.operation, need.guid, need.acl) == ("SCHEMA_READ", "g", R)
    assert needed("GET", []) is None
    assert needed("GET", ["schemas", "types"]) is None


@pytest.mark.parametrize("subject, topic", [
    ("orders-value", "orders"), ("orders-key", "orders"), ("a-b-value", "a-b"),
    ("orders", None), ("-value", None), ("com.example.Order", None), ("orders-values", None),
    (":.staging:orders-value", "orders"), (":.staging:", None),
])
def test_subjects_name_their_topic(subject, topic):
    assert topic_of(subject) == topic
