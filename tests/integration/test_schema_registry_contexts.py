"""Schema contexts in the Schema Registry (registry/contexts.py) against a broker process, as
Confluent's registry serves them: `:.<context>:<subject>` qualified subjects with their own schema
ids counted from 1, GET /contexts, GET /subjects across contexts and with subjectPrefix, schema ids
looked up in a subject's context, settings per context (`/config/:.ctx:`, `/mode/:.ctx:`),
references within a context, ids kept across a restart, and confluent-kafka's SchemaRegistryClient
with a qualified subject."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from test_schema_registry import USER_NO_DEFAULT, USER_V1, USER_V2, quote, record, registry_broker

pytestmark = pytest.mark.clients

ORDER = record("Order", {"name": "id", "type": "long"})
ORDER_STAGING = record("Order", {"name": "id", "type": "long"}, {"name": "note", "type": "string", "default": ""})


@pytest.fixture
def registry(tmp_path):
    with registry_broker(tmp_path) as registry:
        yield registry


def test_a_context_counts_its_own_schema_ids_and_keeps_its_subjects_apart(registry):
    assert registry.ok("GET", "/contexts") == ["."]
    default_id = registry.register("orders-value", ORDER)
    staging_id = registry.register(":.staging:orders-value", ORDER_STAGING)
    # Each context counts from 1; the same schema again in a context keeps its id there
    assert (default_id, staging_id) == (1, 1)
    assert registry.register(":.staging:payments-value", ORDER) == 2
    assert registry.register("payments-value", ORDER) == 1
    assert registry.ok("GET", "/contexts") == [".", ".staging"]
    assert registry.ok("GET", "/subjects") == [":.staging:orders-value", ":.staging:payments-value",
                                               "orders-value", "payments-value"]
    assert registry.ok("GET", f"/subjects?subjectPrefix={quote(':.staging:')}") == [
        ":.staging:orders-value", ":.staging:payments-value"]
    assert registry.ok("GET", f"/subjects?subjectPrefix={quote(':.staging:pay')}") == [":.staging:payments-value"]
    assert registry.ok("GET", "/subjects?subjectPrefix=orders") == ["orders-value"]
    assert registry.ok("GET", f"/subjects?subjectPrefix={quote(':*:orders')}") == [":.staging:orders-value",
                                                                                   "orders-value"]
    staging = registry.ok("GET", f"/subjects/{quote(':.staging:orders-value')}/versions/latest")
    assert (staging["subject"], staging["version"], staging["id"]) == (":.staging:orders-value", 1, 1)
    assert json.loads(staging["schema"]) == json.loads(ORDER_STAGING)
    # `:.:s` is the default context's s
    assert registry.ok("GET", f"/subjects/{quote(':.:orders-value')}/versions") == [1]
    assert registry.register(":.:orders-value", ORDER) == 1
    assert registry.ok("GET", "/subjects/orders-value/versions") == [1]


def test_schema_ids_are_looked_up_in_the_subjects_context(registry):
    registry.register("orders-value", ORDER)
    registry.register(":.staging:orders-value", ORDER_STAGING)
    registry.register(":.staging:orders-value", record("Order", {"name": "id", "type": "long"},
                                                        {"name": "note", "type": "string", "default": ""},
                                                        {"name": "at", "type": "long", "default": 0}))
    assert json.loads(registry.ok("GET", "/schemas/ids/1")["schema"]) == json.loads(ORDER)
    in_staging = registry.ok("GET", f"/schemas/ids/1?subject={quote(':.staging:orders-value')}")
    assert json.loads(in_staging["schema"]) == json.loads(ORDER_STAGING)
    assert json.loads(registry.ok("GET", f"/schemas/ids/1?subject={quote(':.staging:')}")["schema"]) == \
        json.loads(ORDER_STAGING)
    # Id 2 exists in .staging only: not in the default context, found there through an unqualified
    # subject that has it in another context
    assert registry.error("GET", "/schemas/ids/2") == (404, 40403)
    assert "at" in registry.ok("GET", "/schemas/ids/2?subject=orders-value")["schema"]
    assert registry.ok("GET", f"/schemas/ids/2/versions?subject={quote(':.staging:')}") == [
        {"subject": ":.staging:orders-value", "version": 2}]
    assert registry.ok("GET", f"/schemas/ids/1/subjects?subject={quote(':.staging:')}") == [":.staging:orders-value"]
    assert registry.ok("GET", "/schemas/ids/1/subjects") == ["orders-value"]


def test_a_context_has_its_own_compatibility_level_and_mode(registry):
    registry.register("users-value", USER_V1)
    registry.register(":.dev:users-value", USER_V1)
    assert registry.ok("PUT", f"/config/{quote(':.dev:')}", {"compatibility": "NONE"}) == {"compatibility": "NONE"}
    assert registry.ok("GET", f"/config/{quote(':.dev:')}") == {"compatibilityLevel": "NONE"}
    # BACKWARD (global) refuses a new field without a default; .dev's NONE lets it in
    assert registry.error("POST", "/subjects/users-value/versions", {"schema": USER_NO_DEFAULT}) == (409, 409)
    assert registry.register(":.dev:users-value", USER_NO_DEFAULT) == 2
    assert registry.ok("GET", f"/config/{quote(':.dev:users-value')}?defaultToGlobal=true") == \
        {"compatibilityLevel": "NONE"}
    assert registry.ok("GET", "/config/users-value?defaultToGlobal=true") == {"compatibilityLevel": "BACKWARD"}
    # A subject's own level still comes first
    registry.ok("PUT", f"/config/{quote(':.dev:users-value')}", {"compatibility": "FULL"})
    assert registry.ok("GET", f"/config/{quote(':.dev:users-value')}?defaultToGlobal=true") == \
        {"compatibilityLevel": "FULL"}

    assert registry.ok("PUT", f"/mode/{quote(':.dev:')}", {"mode": "READONLY"}) == {"mode": "READONLY"}
    assert registry.error("POST", f"/subjects/{quote(':.dev:other-value')}/versions", {"schema": USER_V1}) == \
        (422, 42205)
    assert registry.ok("GET", f"/mode/{quote(':.dev:other-value')}?defaultToGlobal=true") == {"mode": "READONLY"}
    assert registry.register("other-value", USER_V2) == 2  # the default context writes on
    assert registry.ok("GET", "/mode") == {"mode": "READWRITE"}


def test_references_name_subjects_of_the_referencing_schemas_context(registry):
    address = record("Address", {"name": "street", "type": "string"})
    other_address = record("Address", {"name": "city", "type": "string"})
    registry.register("address-value", other_address)
    registry.register(":.shop:address-value", address)
    customer = record("Customer", {"name": "home", "type": "Address"})
    answer = registry.ok("POST", f"/subjects/{quote(':.shop:customer-value')}/versions", {
        "schema": customer, "references": [{"name": "Address", "subject": "address-value", "version": 1}]})
    assert (answer["id"], answer["version"]) == (2, 1)
    stored = registry.ok("GET", f"/subjects/{quote(':.shop:customer-value')}/versions/1")
    assert stored["references"] == [{"name": "Address", "subject": "address-value", "version": 1}]
    assert registry.ok("GET", f"/subjects/{quote(':.shop:address-value')}/versions/1/referencedby") == [2]
    assert registry.ok("GET", "/subjects/address-value/versions/1/referencedby") == []
    # A qualified reference names its own context: one where the subject is not registered is refused
    assert registry.error("POST", f"/subjects/{quote(':.shop:customer-value')}/versions", {
        "schema": record("Customer", {"name": "home", "type": "Address"}, {"name": "x", "type": "int"}),
        "references": [{"name": "Address", "subject": ":.nowhere:address-value", "version": 1}]}) == (422, 42201)


def test_context_ids_survive_a_restart(tmp_path):
    with registry_broker(tmp_path) as registry:
        registry.register(":.staging:users-value", USER_V1)
        registry.register("users-value", USER_V1)
        registry.register("users-value", USER_V2)
        registry.process.stop()
        registry.process.start()
        registry.wait_until_serving()
        assert registry.ok("GET", "/contexts") == [".", ".staging"]
        assert registry.register(":.staging:users-value", USER_V2) == 2
        assert registry.register("teams-value", record("Team", {"name": "id", "type": "int"})) == 3


def test_confluent_kafka_client_with_a_qualified_subject(registry):
    client = SchemaRegistryClient({"url": registry.url})
    default_id = client.register_schema("clicks-value", Schema(ORDER, "AVRO"))
    staging_id = client.register_schema(":.staging:clicks-value", Schema(ORDER_STAGING, "AVRO"))
    assert (default_id, staging_id) == (1, 1)
    latest = client.get_latest_version(":.staging:clicks-value")
    assert (latest.subject, latest.schema_id, latest.version) == (":.staging:clicks-value", 1, 1)
    assert json.loads(client.get_schema(1, subject_name=":.staging:clicks-value").schema_str) == \
        json.loads(ORDER_STAGING)
    assert json.loads(client.get_schema(1).schema_str) == json.loads(ORDER)
    assert sorted(client.get_subjects()) == [":.staging:clicks-value", "clicks-value"]


def test_a_client_given_a_base_context_path_works_in_that_context(registry):
    """confluent-kafka's client with http://.../contexts/.staging as its URL: every request lands
    in .staging, as Confluent's ContextFilter rewrites them."""
    registry.register("orders-value", ORDER)
    staging = SchemaRegistryClient({"url": f"{registry.url}/contexts/.staging"})
    assert staging.register_schema("orders-value", Schema(ORDER_STAGING, "AVRO")) == 1
    assert staging.get_subjects() == [":.staging:orders-value"]  # (qualified, as Confluent lists them)
    assert registry.ok("GET", "/subjects") == [":.staging:orders-value", "orders-value"]
    assert json.loads(staging.get_schema(1).schema_str) == json.loads(ORDER_STAGING)
    staging.set_compatibility(level="NONE")
    assert registry.ok("GET", f"/config/{quote(':.staging:')}") == {"compatibilityLevel": "NONE"}
    assert registry.ok("GET", "/config") == {"compatibilityLevel": "BACKWARD"}
    latest = staging.get_latest_version("orders-value")
    assert (latest.subject, latest.schema_id) == (":.staging:orders-value", 1)
    assert registry.ok("GET", "/contexts/.staging/subjects/orders-value/versions") == [1]
    assert registry.error("GET", "/contexts/.a:b/subjects") == (400, 400)
