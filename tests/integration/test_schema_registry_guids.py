"""Schema GUIDs, schema metadata and context deletion in the Schema Registry against a broker
process, as Confluent's current API serves them: `guid` on registrations and on every answer that
carries a schema, GET /schemas/guids/{guid} (and /ids), metadata on registration with
GET /subjects/{s}/metadata (key/value lookup, 40401/40403), DELETE /contexts/{c} (204, or 42211
while the context has subjects), `_schemas` records as Confluent writes them, a restart, and
confluent-kafka's client and AvroSerializer writing the GUID in a record header instead of the id."""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Metadata, MetadataProperties, MetadataTags, Schema, SchemaRegistryClient, \
    header_schema_id_serializer
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from test_schema_registry import USER_V1, USER_V2, quote, read_schemas_topic, record, registry_broker

pytestmark = pytest.mark.clients

ORDER = record("Order", {"name": "id", "type": "long"})


@pytest.fixture
def registry(tmp_path):
    with registry_broker(tmp_path) as registry:
        yield registry


def test_guids_name_schema_content_across_subjects_and_contexts(registry):
    first = registry.ok("POST", "/subjects/g-value/versions", {"schema": USER_V1})
    assert set(first) == {"id", "version", "guid", "schemaType", "schema"} and first["version"] == 1
    # The same content under another subject, or written differently, has the same guid
    assert registry.ok("POST", "/subjects/g-other/versions", {"schema": USER_V1.replace(",", ", ")})["guid"] == \
        first["guid"]
    second = registry.ok("POST", "/subjects/g-value/versions", {"schema": USER_V2})
    assert second["guid"] != first["guid"]
    # Every answer carrying a schema carries its guid
    assert registry.ok("GET", "/subjects/g-value/versions/1")["guid"] == first["guid"]
    assert registry.ok("GET", f"/schemas/ids/{first['id']}")["guid"] == first["guid"]
    assert registry.ok("POST", "/subjects/g-value", {"schema": USER_V2})["guid"] == second["guid"]
    assert {s["guid"] for s in registry.ok("GET", "/schemas?subjectPrefix=g-value")} == {first["guid"], second["guid"]}

    by_guid = registry.ok("GET", f"/schemas/guids/{first['guid']}")
    assert by_guid == {"guid": first["guid"], "schema": registry.ok("GET", f"/schemas/ids/{first['id']}")["schema"]}
    # The MD5 in hex names it too
    assert registry.ok("GET", f"/schemas/guids/{first['guid'].replace('-', '')}") == by_guid
    assert registry.ok("GET", f"/schemas/guids/{first['guid']}/ids") == [{"context": ".", "id": first["id"]}]
    # A context holding the same content has its own id for it; the default context answers first
    registry.register(":.other:x-value", ORDER)
    in_other = registry.ok("POST", f"/subjects/{quote(':.other:g-value')}/versions", {"schema": USER_V1})
    assert in_other["guid"] == first["guid"] and in_other["id"] == 2
    assert registry.ok("GET", f"/schemas/guids/{first['guid']}/ids") == [
        {"context": ".", "id": first["id"]}, {"context": ".other", "id": 2}]
    # Only in a non-default context: found there
    order_guid = registry.ok("GET", f"/subjects/{quote(':.other:x-value')}/versions/1")["guid"]
    assert json.loads(registry.ok("GET", f"/schemas/guids/{order_guid}")["schema"]) == json.loads(ORDER)
    assert registry.ok("GET", f"/schemas/guids/{order_guid}/ids") == [{"context": ".other", "id": 1}]
    # Soft-deleted versions keep their guid findable, as Confluent keeps their ids
    registry.ok("DELETE", "/subjects/g-value/versions/2")
    assert registry.ok("GET", f"/schemas/guids/{second['guid']}")["guid"] == second["guid"]

    status, answer = registry.call("GET", "/schemas/guids/00000000-0000-0000-0000-000000000000")
    assert (status, answer["error_code"]) == (404, 40403)
    assert registry.error("GET", "/schemas/guids/not-a-guid") == (404, 40403)
    assert registry.ok("GET", "/schemas/guids/not-a-guid/ids") == []


def test_metadata_is_registered_looked_up_and_inherited(registry):
    owned = {"properties": {"owner": "team-a", "tier": "gold"}, "tags": {"pii": ["email"]}}
    v1 = registry.ok("POST", "/subjects/m-value/versions", {"schema": USER_V1, "metadata": owned})
    got = registry.ok("GET", "/subjects/m-value/versions/1")
    assert got["metadata"] == {"tags": {"pii": ["email"]}, "properties": {"owner": "team-a", "tier": "gold"}}
    # The same schema without metadata is another schema: another id and guid
    plain = registry.ok("POST", "/subjects/m-plain/versions", {"schema": USER_V1})
    assert (plain["id"], plain["guid"]) != (v1["id"], v1["guid"])
    # A version registered without metadata takes the latest version's (Confluent's rule)
    v2 = registry.ok("POST", "/subjects/m-value/versions", {"schema": USER_V2})
    assert registry.ok("GET", "/subjects/m-value/versions/2")["metadata"] == got["metadata"]
    v3 = registry.ok("POST", "/subjects/m-value/versions", {"schema": USER_V2, "metadata": {
        "properties": {"owner": "team-b"}}})
    assert v3["version"] == 3 and v3["id"] != v2["id"]
    # Registering v2's content again (no metadata: the latest's, team-b's) is v3
    assert registry.ok("POST", "/subjects/m-value/versions", {"schema": USER_V2})["version"] == 3

    def latest_with(query: str):
        return registry.ok("GET", f"/subjects/m-value/metadata?{query}")

    assert latest_with("key=owner&value=team-b")["version"] == 3
    assert latest_with("key=owner&value=team-a")["version"] == 2
    assert latest_with("key=owner&value=team-a&key=tier&value=gold")["version"] == 2
    assert latest_with("")["version"] == 3  # no pairs: the latest with metadata
    assert registry.error("GET", "/subjects/m-value/metadata?key=owner&value=nobody") == (404, 40403)
    assert registry.error("GET", "/subjects/m-plain/metadata?key=owner&value=team-a") == (404, 40403)
    assert registry.error("GET", "/subjects/no-such/metadata?key=owner&value=team-a") == (404, 40401)
    registry.ok("DELETE", "/subjects/m-value/versions/3")
    assert latest_with("key=owner&value=team-b&deleted=true")["version"] == 3
    assert registry.error("GET", "/subjects/m-value/metadata?key=owner&value=team-b") == (404, 40403)
    # Lookup matches the metadata registration would give
    assert registry.ok("POST", "/subjects/m-value", {"schema": USER_V1, "metadata": owned})["version"] == 1
    assert registry.ok("POST", "/subjects/m-value", {"schema": USER_V2})["version"] == 2

    assert registry.error("POST", "/subjects/m-value/versions", {"schema": USER_V1, "metadata": "x"}) == (422, 422)
    assert registry.error("POST", "/subjects/m-value/versions", {"schema": USER_V1, "metadata": {
        "properties": {"n": 1}}}) == (422, 422)


def test_an_empty_context_is_deleted_and_a_context_with_subjects_is_not(registry):
    registry.register(":.gone:a-value", ORDER)
    registry.register(":.kept:a-value", ORDER)
    assert registry.ok("GET", "/contexts") == [".", ".gone", ".kept"]
    # Soft-deleted subjects still count
    registry.ok("DELETE", f"/subjects/{quote(':.gone:a-value')}")
    status, answer = registry.call("DELETE", "/contexts/.gone")
    assert (status, answer) == (422, {"error_code": 42211, "message": "The specified context ':.gone:' is not empty."})
    registry.ok("DELETE", f"/subjects/{quote(':.gone:a-value')}?permanent=true")
    # Without subjects the context is still listed (its CONTEXT record) until it is deleted
    assert registry.ok("GET", "/contexts") == [".", ".gone", ".kept"]
    status, body, headers = registry.raw("DELETE", "/contexts/.gone")
    assert (status, body) == (204, b"")
    assert registry.ok("GET", "/contexts") == [".", ".kept"]
    # Any spelling of the context; a context that was never there is deleted all the same (Confluent)
    assert registry.raw("DELETE", f"/contexts/{quote(':.never:')}")[0] == 204
    assert registry.raw("DELETE", "/contexts/never")[0] == 204
    assert registry.error("DELETE", "/contexts/.kept") == (422, 42211)
    assert registry.error("DELETE", f"/contexts/{quote('a:b')}") == (400, 400)
    registry.register("default-value", ORDER)
    assert registry.error("DELETE", "/contexts/.") == (422, 42211)
    assert registry.error("GET", "/contexts/.kept") == (405, 405)

    # _schemas holds Confluent's CONTEXT records: written with the first subject, a tombstone on delete
    records = read_schemas_topic(registry.process.bootstrap)
    context_records = [(key, value) for key, value in records if key["keytype"] == "CONTEXT"]
    assert ({"keytype": "CONTEXT", "tenant": "default", "context": ".gone", "magic": 0},
            {"tenant": "default", "context": ".gone"}) in context_records
    assert context_records[-1] == ({"keytype": "CONTEXT", "tenant": "default", "context": ".never", "magic": 0}, None)
    assert sum(1 for key, _ in context_records if key["context"] == ".kept") == 1


def test_guids_metadata_and_deleted_contexts_survive_a_restart(tmp_path):
    with registry_broker(tmp_path) as registry:
        answer = registry.ok("POST", "/subjects/r-value/versions", {"schema": USER_V1, "metadata": {
            "properties": {"owner": "ops"}}})
        registry.register(":.tmp:r-value", ORDER)
        registry.ok("DELETE", f"/subjects/{quote(':.tmp:r-value')}")
        registry.ok("DELETE", f"/subjects/{quote(':.tmp:r-value')}?permanent=true")
        registry.register(":.stays:r-value", ORDER)
        registry.ok("DELETE", f"/subjects/{quote(':.stays:r-value')}")
        registry.ok("DELETE", f"/subjects/{quote(':.stays:r-value')}?permanent=true")
        assert registry.raw("DELETE", "/contexts/.tmp")[0] == 204
        registry.process.stop()
        registry.process.start()
        registry.wait_until_serving()
        assert registry.ok("GET", f"/schemas/guids/{answer['guid']}")["metadata"] == {"properties": {"owner": "ops"}}
        assert registry.ok("GET", "/subjects/r-value/metadata?key=owner&value=ops")["id"] == answer["id"]
        assert registry.ok("GET", "/contexts") == [".", ".stays"]


def test_confluent_kafka_reads_by_guid_and_by_metadata(registry):
    client = SchemaRegistryClient({"url": registry.url})
    schema = Schema(ORDER, "AVRO", metadata=Metadata(tags=MetadataTags({}), properties=MetadataProperties({"owner": "shop"}),
                                                     sensitive=[]))
    registered = client.register_schema_full_response("orders-value", schema)
    assert registered.guid and registered.version == 1
    assert json.loads(client.get_schema_by_guid(registered.guid).schema_str) == json.loads(ORDER)
    latest = client.get_latest_with_metadata("orders-value", {"owner": "shop"})
    assert (latest.schema_id, latest.guid, latest.version) == (registered.schema_id, registered.guid, 1)
    with pytest.raises(SchemaRegistryError) as refused:
        client.get_latest_with_metadata("orders-value", {"owner": "nobody"})
    assert refused.value.error_code == 40403

    # The serializer writes the guid in a header (no id in the payload); the deserializer reads the
    # schema back by guid, through a real producer and consumer
    # (confluent-kafka's deserializer wants more than 5 bytes even with the guid in a header)
    serialize = AvroSerializer(client, USER_V1, conf={"schema.id.serializer": header_schema_id_serializer})
    topic = "guid-orders"
    context = SerializationContext(topic, MessageField.VALUE, headers=[])
    payload = serialize({"name": "guid in a header"}, context)
    assert payload[:1] != b"\x00" and context.headers[0][0] == "__value_schema_id"
    producer = Producer({"bootstrap.servers": registry.process.bootstrap})
    producer.produce(topic, payload, headers=context.headers)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": registry.process.bootstrap, "group.id": "guid-reader",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    deadline, message = time.monotonic() + 30, None
    try:
        while message is None and time.monotonic() < deadline:
            polled = consumer.poll(0.5)
            if polled is not None and polled.error() is None:
                message = polled
    finally:
        consumer.close()
    assert message is not None
    reader = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))  # a fresh client: nothing cached
    assert reader(message.value(), SerializationContext(topic, MessageField.VALUE, headers=message.headers())) == \
        {"name": "guid in a header"}
