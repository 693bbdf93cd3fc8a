"""The message browser decodes keys and values in the Schema Registry's wire format through the
broker's own registry: records written by confluent-kafka's AvroSerializer, JSONSerializer and
ProtobufSerializer (with a referenced .proto, a well-known import and a message that is not the
file's first) come back as JSON with their schema id, subject and version; an unknown id, bytes that
do not read as their schema, and a schema the console user may not read come back as the bytes with
a note, never an error page."""

from __future__ import annotations

import base64
import json

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kafka_wire.primitives import write_varlong
from tests.console.conftest import create_topic, sasl_config
from tests.console.test_console_browser import browse, browser_env  # noqa: F401 (a fixture, used by name)
from tests.console.test_console_registry import avro_record, login, registry_console, \
    secure_registry_console  # noqa: F401 (fixtures, used by name)
from tests.integration.test_schema_registry_protobuf import MONEY_PROTO, ORDER_PROTO, message_classes

pytestmark = pytest.mark.timeout(180)

ORDER_AVRO = json.dumps({"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}}]})
EVENT_JSON = json.dumps({"type": "object", "title": "Event",
                         "properties": {"kind": {"type": "string"}, "count": {"type": "integer"}}})


def write(config: dict, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> None:
    producer = Producer(config)
    for key, value in records:
        producer.produce(topic, key=key, value=value, partition=0)
    assert producer.flush(30) == 0


def wire(schema_id: int, data: bytes) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + data


def page_of(console, topic: str, **kwargs) -> list[dict]:
    return console.get(f"topics/{topic}/messages?offset=0", **kwargs)["messages"]


def test_avro_json_and_protobuf_records_are_decoded(registry_console, tmp_path):  # noqa: F811 (the fixture)
    console, client = registry_console, registry_console.registry
    admin = AdminClient({"bootstrap.servers": console.bootstrap})
    for topic in ("decode-avro", "decode-json", "decode-proto"):
        create_topic(admin, topic, 1)

    avro_value = AvroSerializer(client, ORDER_AVRO)
    avro_key = AvroSerializer(client, json.dumps("string"))
    key_context = SerializationContext("decode-avro", MessageField.KEY)
    value_context = SerializationContext("decode-avro", MessageField.VALUE)
    order = {"id": 7, "note": "gift wrap", "tags": ["a", "b"]}
    written = avro_value(order, value_context)
    avro_id = int.from_bytes(written[1:5], "big")
    write({"bootstrap.servers": console.bootstrap}, "decode-avro", [
        (avro_key("order-7", key_context), written),
        (b"plain key", b'{"not": "registry framed"}'),
        (None, wire(avro_id, b"\x0e\x02")),  # the record ends before its fields do
        (None, wire(avro_id, written[5:] + b"\x00")),  # a byte more than the record
        (None, wire(4242, b"anything")),
    ])
    first, plain, short, long_, unknown = page_of(console, "decode-avro")
    assert first["value"]["schema"] == {"id": avro_id, "subject": "decode-avro-value", "version": 1, "type": "AVRO",
                                        "name": "shop.Order", "value": order}
    key_schema = first["key"]["schema"]
    assert (key_schema["subject"], key_schema["type"], key_schema["value"]) == ("decode-avro-key", "AVRO", "order-7")
    # The bytes are still there for the other formats
    assert base64.b64decode(first["value"]["base64"]) == written and "raw" not in first["value"]
    assert "schema" not in plain["key"] and "schema" not in plain["value"]
    assert plain["value"]["text"] == '{"not": "registry framed"}'
    for broken in (short, long_):
        assert broken["value"]["schema"]["error"] == "UNDECODABLE", broken
        assert broken["value"]["schema"]["subject"] == "decode-avro-value"
        assert f"schema id {avro_id}" in broken["value"]["schema"]["message"]
    assert "left over" in long_["value"]["schema"]["message"]
    assert unknown["value"]["schema"] == {"id": 4242, "subject": None, "type": None, "version": None,
                                          "error": "SCHEMA_NOT_FOUND", "message":
                                          "Schema id 4242 is not registered in this broker's Schema Registry"}
    assert base64.b64decode(unknown["value"]["base64"]) == wire(4242, b"anything")

    json_serialize = JSONSerializer(EVENT_JSON, client)
    event = {"kind": "click", "count": 3}
    json_bytes = json_serialize(event, SerializationContext("decode-json", MessageField.VALUE))
    write({"bootstrap.servers": console.bootstrap}, "decode-json", [(None, json_bytes)])
    (decoded,) = page_of(console, "decode-json")
    assert decoded["value"]["schema"] == {"id": int.from_bytes(json_bytes[1:5], "big"), "subject": "decode-json-value",
                                          "version": 1, "type": "JSON", "name": "Event", "value": event}

    classes = message_classes(tmp_path, {"money.proto": MONEY_PROTO, "order.proto": ORDER_PROTO}, "order.proto")
    Order = classes["Order"]
    serialize = ProtobufSerializer(Order, client, {"use.deprecated.format": False})
    record = Order(id=5, items=["tea", "cup"], counts={"tea": 2}, card="4111", status=1)
    record.total.currency, record.total.cents = "EUR", 250
    record.placed.seconds = 1_700_000_000
    proto_bytes = serialize(record, SerializationContext("decode-proto", MessageField.VALUE))
    assert proto_bytes[5] != 0  # Order is not the file's first message: its index is written out
    write({"bootstrap.servers": console.bootstrap}, "decode-proto", [(None, proto_bytes)])
    (decoded,) = page_of(console, "decode-proto")
    schema = decoded["value"]["schema"]
    assert (schema["subject"], schema["version"], schema["type"], schema["name"]) == (
        "decode-proto-value", 1, "PROTOBUF", "shop.Order")
    assert schema["value"] == {"id": "5", "items": ["tea", "cup"], "total": {"currency": "EUR", "cents": "250"},
                               "counts": {"tea": 2}, "placed": "2023-11-14T22:13:20Z", "card": "4111",
                               "status": "PAID"}


def zigzag_varint(n: int) -> bytes:
    """Avro's long encoding (Kafka's varlong: zigzag, then a varint)."""
    out = bytearray()
    write_varlong(out, n)
    return bytes(out)


def test_hostile_avro_gets_a_note_and_the_broker_keeps_serving(registry_console):  # noqa: F811 (the fixture)
    """Records and schemas anyone with WRITE on a topic and `_schemas` can make: a record nested
    thousands of values deep (a recursive schema), an array of five million nulls (no bytes per
    item), a schema over 256 KiB. Each is shown as its bytes with a note naming the limit; the page
    comes back, and the broker goes on serving Kafka clients and the registry."""
    console, client = registry_console, registry_console.registry
    create_topic(AdminClient({"bootstrap.servers": console.bootstrap}), "decode-hostile", 1)
    linked = client.register_schema("decode-hostile-value", Schema(json.dumps({
        "type": "record", "name": "Link", "fields": [{"name": "next", "type": ["null", "Link"]}]}), "AVRO"))
    nulls = client.register_schema("nulls-value", Schema(json.dumps({"type": "array", "items": "null"}), "AVRO"))
    padded = json.dumps({"type": "record", "name": "Padded", "doc": "x" * (300 * 1024),
                         "fields": [{"name": "id", "type": "long"}]})
    large = client.register_schema("padded-value", Schema(padded, "AVRO"))
    write({"bootstrap.servers": console.bootstrap}, "decode-hostile", [
        (None, wire(linked, b"\x02" * 5000 + b"\x00")),  # 5000 links, one byte each
        (None, wire(linked, b"\x02" * 3 + b"\x00")),  # a short list decodes
        (None, wire(nulls, zigzag_varint(5_000_000) + b"\x00")),
        (None, wire(large, b"\x02")),
    ])
    deep, short, many, too_large = (message["value"]["schema"] for message in page_of(console, "decode-hostile"))
    assert deep["error"] == "UNDECODABLE" and "nests deeper than 64 values" in deep["message"], deep
    assert short["value"] == {"next": {"next": {"next": {"next": None}}}}  # three links, four records
    assert many["error"] == "UNDECODABLE" and "more than 100000 values" in many["message"], many
    assert too_large["error"] == "SCHEMA_TOO_LARGE" and "over 262144" in too_large["message"], too_large
    # Still serving: the registry and a Kafka client
    assert client.get_schema(linked).schema_str
    write({"bootstrap.servers": console.bootstrap}, "decode-hostile", [(b"k", b"after")])
    assert page_of(console, "decode-hostile")[-1]["value"]["text"] == "after"


def test_a_user_who_may_not_read_the_schema_sees_the_bytes(secure_registry_console):  # noqa: F811 (the fixture)
    console = secure_registry_console
    client = console.registry
    create_topic(AdminClient(sasl_config(console, "admin")), "alice-visible", 1)
    seen = client.register_schema("alice-visible-value", Schema(avro_record("Seen", ("a", "int")), "AVRO"))
    secret = client.register_schema("secret-value", Schema(avro_record("Secret", ("b", "int")), "AVRO"))
    write(sasl_config(console, "admin"), "alice-visible", [(None, wire(seen, b"\x54")), (None, wire(secret, b"\x02"))])

    alice = login(console, "alice")
    visible, hidden = page_of(console, "alice-visible", cookie=alice)
    assert visible["value"]["schema"]["value"] == {"a": 42}
    assert visible["value"]["schema"]["subject"] == "alice-visible-value"
    assert hidden["value"]["schema"]["error"] == "SCHEMA_REGISTRY_AUTHORIZATION_FAILED"
    assert hidden["value"]["schema"]["subject"] is None and "value" not in hidden["value"]["schema"]
    assert base64.b64decode(hidden["value"]["base64"]) == wire(secret, b"\x02")
    # The super user reads both
    admin_page = page_of(console, "alice-visible", cookie=login(console, "admin"))
    assert [m["value"]["schema"]["value"] for m in admin_page] == [{"a": 42}, {"b": 1}]
    assert admin_page[1]["value"]["schema"]["subject"] == "secret-value"


def test_decoded_records_in_a_browser(browser_env, registry_console):  # noqa: F811 (the fixture)
    console, client = registry_console, registry_console.registry
    create_topic(AdminClient({"bootstrap.servers": console.bootstrap}), "browser-decoded", 1)
    serialize = AvroSerializer(client, ORDER_AVRO)
    written = serialize({"id": 9, "note": None, "tags": []}, SerializationContext("browser-decoded",
                                                                                   MessageField.VALUE))
    schema_id = int.from_bytes(written[1:5], "big")
    write({"bootstrap.servers": console.bootstrap}, "browser-decoded", [(b"k", written), (None, wire(9999, b"?"))])
    shown = browse(browser_env, "decoded", url=console.url, topic="browser-decoded")
    assert shown["format"] == "schema"
    assert shown["decoded"] == [str(schema_id)]
    value_cell = shown["rows"][0][3]
    assert value_cell.startswith(f"schema id {schema_id} · browser-decoded-value v1 · AVRO · shop.Order")
    assert json.loads(value_cell.split("\n", 1)[1]) == {"id": 9, "note": None, "tags": []}
    assert shown["notes"] == ["Schema id 9999 is not registered in this broker's Schema Registry: shown in hex"]
    assert shown["rows"][1][3].endswith("00 00 00 27 0f 3f")
    assert shown["decoded_in_hex"] == 0 and shown["rows_hex"][0][3].startswith("00 " + " ".join(
        f"{b:02x}" for b in written[1:5]))
