"""Schema tags (`POST /subjects/{s}/versions/{v}/tags`), `compatibilityGroup` and the other config
settings Confluent's registry keeps (`validateFields`, `validateRules`), against a real broker over
HTTP and through confluent-kafka's SchemaRegistryClient."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import Metadata, MetadataProperties, Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.common.schema_registry_client import ServerConfig
from confluent_kafka.schema_registry.error import SchemaRegistryError

from test_schema_registry import quote, registry_broker

MYRECORD = json.dumps({"type": "record", "name": "myrecord", "namespace": "com.example",
                       "fields": [{"name": "f1", "type": "string"},
                                  {"name": "inner", "type": {"type": "record", "name": "Inner",
                                                             "fields": [{"name": "secret", "type": "string"}]}}]})


def entity(path: str, kind: str, *tags: str) -> dict:
    return {"schemaEntity": {"entityPath": path, "entityType": kind}, "tags": list(tags)}


@pytest.fixture(scope="module")
def registry():
    with registry_broker() as registry:
        yield registry


def latest(registry, subject: str) -> dict:
    return registry.ok("GET", f"/subjects/{quote(subject)}/versions/latest")


def test_tags_are_added_and_removed_as_a_new_version(registry):
    first = registry.register("tagged-value", MYRECORD)
    answer = registry.ok("POST", "/subjects/tagged-value/versions/1/tags", {
        "newVersion": 2,
        "tagsToAdd": [entity("com.example.myrecord", "sr_record", "TAG1", "TAG2"),
                      entity("com.example.myrecord.f1", "sr_field", "PII"),
                      entity("Inner.secret", "sr_field", "PII", "SECRET")]})
    assert answer["version"] == 2 and answer["id"] != first
    stored = latest(registry, "tagged-value")
    assert stored["version"] == 2
    assert stored["metadata"]["properties"]["confluent:version"] == "2"
    schema = json.loads(stored["schema"])
    assert schema["confluent:tags"] == ["TAG1", "TAG2"]
    assert schema["fields"][0]["confluent:tags"] == ["PII"]
    assert schema["fields"][1]["type"]["fields"][0]["confluent:tags"] == ["PII", "SECRET"]
    # Removing: the rest stay in their order; a field left without tags loses the property.
    registry.ok("POST", "/subjects/tagged-value/versions/latest/tags", {
        "tagsToRemove": [entity("com.example.myrecord", "sr_record", "TAG2"),
                         entity("com.example.myrecord.f1", "sr_field", "PII")]})
    stored = latest(registry, "tagged-value")
    assert stored["version"] == 3 and stored["metadata"]["properties"]["confluent:version"] == "3"
    schema = json.loads(stored["schema"])
    assert schema["confluent:tags"] == ["TAG1"]
    assert "confluent:tags" not in schema["fields"][0]
    # Version 1 is as it was.
    assert "confluent:tags" not in json.loads(registry.ok("GET", "/subjects/tagged-value/versions/1")["schema"])


def test_tag_request_errors(registry):
    registry.register("tag-errors-value", MYRECORD)
    path = "/subjects/tag-errors-value/versions/1/tags"
    status, body = registry.call("POST", path, {"tagsToAdd": [entity("com.example.nothing", "sr_record", "T")]})
    assert (status, body["error_code"]) == (422, 42201)
    assert "No matching path 'com.example.nothing' found in the schema" in body["message"]
    assert registry.error("POST", path, {"tagsToAdd": [entity("other.ns.myrecord", "sr_record", "T")]}) == (422, 42201)
    assert registry.error("POST", path, {"newVersion": 5, "tagsToAdd": [entity("myrecord", "sr_record", "T")]}) == (
        422, 42201)
    assert registry.error("POST", path, {"tagsToAdd": [{"schemaEntity": {"entityPath": "myrecord"}}]}) == (422, 422)
    assert registry.error("POST", path, {"ruleSet": {}, "rulesToRemove": ["x"]}) == (422, 42210)
    assert registry.error("POST", "/subjects/no-such-subject/versions/1/tags", {}) == (404, 40401)
    assert registry.error("POST", "/subjects/tag-errors-value/versions/7/tags", {}) == (404, 40402)
    registry.register("tag-proto-value", 'syntax = "proto3"; message P { int32 x = 1; }', "PROTOBUF")
    assert registry.error("POST", "/subjects/tag-proto-value/versions/1/tags",
                          {"tagsToAdd": [entity("P", "sr_record", "T")]}) == (422, 42201)


def test_a_tag_request_merges_and_removes_rules(registry):
    rule = {"name": "checkLen", "kind": "CONDITION", "type": "CEL", "mode": "WRITE", "expr": "size(message.f1) < 10"}
    other = {"name": "other", "kind": "CONDITION", "type": "CEL", "mode": "WRITE", "expr": "true"}
    registry.ok("POST", "/subjects/tag-rules-value/versions", {"schema": MYRECORD, "ruleSet": {"domainRules": [rule]}})
    registry.ok("POST", "/subjects/tag-rules-value/versions/1/tags", {
        "tagsToAdd": [entity("myrecord", "sr_record", "T")], "rulesToMerge": {"domainRules": [other]}})
    assert [r["name"] for r in latest(registry, "tag-rules-value")["ruleSet"]["domainRules"]] == ["checkLen", "other"]
    registry.ok("POST", "/subjects/tag-rules-value/versions/2/tags", {
        "tagsToRemove": [entity("myrecord", "sr_record", "T")], "rulesToRemove": ["checkLen"]})
    stored = latest(registry, "tag-rules-value")
    assert stored["version"] == 3
    assert [r["name"] for r in stored["ruleSet"]["domainRules"]] == ["other"]


def test_compatibility_group_checks_only_versions_of_the_same_group(registry):
    client = SchemaRegistryClient({"url": registry.url})
    subject = "grouped-value"
    answer = client.set_config(subject, ServerConfig(compatibility_group="application.major.version"))
    assert answer["compatibilityGroup"] == "application.major.version"
    assert registry.ok("GET", f"/config/{subject}")["compatibilityGroup"] == "application.major.version"

    def schema(fields: list, major: str) -> Schema:
        return Schema(json.dumps({"type": "record", "name": "G", "fields": fields}), "AVRO",
                      metadata=Metadata(None, MetadataProperties({"application.major.version": major}), None))

    v1 = [{"name": "a", "type": "string"}]
    breaking = [{"name": "b", "type": "int"}]  # no default: BACKWARD-incompatible with v1
    client.register_schema(subject, schema(v1, "1"))
    # Another major version starts its own line: not checked against major 1.
    client.register_schema(subject, schema(breaking, "2"))
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, schema(breaking + [{"name": "c", "type": "long"}], "1"))
    assert refused.value.http_status_code == 409
    status, body = registry.call("POST", f"/compatibility/subjects/{subject}/versions?verbose=true",
                                 {"schema": json.dumps({"type": "record", "name": "G", "fields": breaking}),
                                  "metadata": {"properties": {"application.major.version": "1"}}})
    assert status == 200 and body["is_compatible"] is False
    # Unset again (null), every version counts.
    assert "compatibilityGroup" not in registry.ok("PUT", f"/config/{subject}", {"compatibilityGroup": None})


def test_validate_fields_and_rules_are_kept_and_checked_for_type(registry):
    answer = registry.ok("PUT", "/config/settings-value", {"validateFields": True, "validateRules": False})
    assert answer["validateFields"] is True and answer["validateRules"] is False
    assert registry.ok("GET", "/config/settings-value") == {"validateFields": True, "validateRules": False}
    assert registry.error("PUT", "/config/settings-value", {"validateRules": "yes"}) == (422, 422)
    assert registry.error("PUT", "/config/settings-value", {"compatibilityGroup": 7}) == (422, 422)
