"""Protobuf in the Schema Registry against a broker process: confluent-kafka's ProtobufSerializer and
ProtobufDeserializer round-tripping records through the broker with an imported file registered as a
reference (and a well-known type that needs none), the endpoints that take and answer PROTOBUF schemas
(format=serialized, /schema, lookup, compatibility, 42201 with Confluent's message), and normalize=true
on requests and in the subject config. Message classes are built at test time from .proto files
compiled by protoc (grpcio-tools) into a descriptor pool of the test's own. KAFKA_WIRE_TEST_WORKERS=2
runs it with two worker processes; the round trip also runs with two workers whatever that says.
"""

from __future__ import annotations

import base64

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tests.integration.test_schema_registry import produce_and_consume, registry_broker

MONEY_PROTO = """syntax = "proto3";
package shop;
message Money {
  string currency = 1;
  int64 cents = 2;
}
"""

ORDER_PROTO = """syntax = "proto3";
package shop;
import "money.proto";
import "google/protobuf/timestamp.proto";

message Header { string source = 1; }

message Order {
  int64 id = 1;
  repeated string items = 2;
  Money total = 3;
  map<string, int32> counts = 4;
  google.protobuf.Timestamp placed = 5;
  oneof payment {
    string card = 6;
    string iban = 7;
  }
  Status status = 8;
}

enum Status {
  NEW = 0;
  PAID = 1;
}
"""


def message_classes(tmp_path, files: dict[str, str], main: str) -> dict:
    """protoc's descriptors of `files` (name -> .proto text) in a pool of their own: message classes of
    `main` by name."""
    from grpc_tools import protoc

    for name, text in files.items():
        (tmp_path / name).write_text(text)
    include = protoc.__file__.rsplit("/", 1)[0] + "/_proto"
    out = tmp_path / "set.pb"
    assert protoc.main(["protoc", f"-I{tmp_path}", f"-I{include}", "--include_imports",
                        f"--descriptor_set_out={out}", main]) == 0
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file:
        pool.Add(file)
    described = pool.FindFileByName(main)
    return {name: message_factory.GetMessageClass(descriptor)
            for name, descriptor in described.message_types_by_name.items()}


@pytest.mark.parametrize("workers", [None, 2])
def test_protobuf_serializers_round_trip_with_a_reference(tmp_path, workers):
    classes = message_classes(tmp_path, {"money.proto": MONEY_PROTO, "order.proto": ORDER_PROTO}, "order.proto")
    Order = classes["Order"]
    config = {} if workers is None else {"num.worker.processes": workers}
    with registry_broker(**config) as registry:
        client = SchemaRegistryClient({"url": registry.url})
        serialize = ProtobufSerializer(Order, client, {"use.deprecated.format": False})
        context = SerializationContext("orders", MessageField.VALUE)
        values = []
        for n in range(5):
            order = Order(id=n, items=[f"item-{n}", "extra"], status=n % 2)
            order.total.currency, order.total.cents = "EUR", 100 * n
            order.counts["apples"] = n
            order.placed.seconds = 1_700_000_000 + n
            if n % 2:
                order.card = f"card-{n}"
            else:
                order.iban = f"iban-{n}"
            values.append(order)
        encoded = [serialize(value, context) for value in values]
        assert all(data[0] == 0 for data in encoded)
        schema_id = int.from_bytes(encoded[0][1:5], "big")
        assert encoded[0][5:7] == b"\x02\x02"  # message indexes: [1], Order is the file's second message

        # The serializer registered money.proto under its file name, and the order with it as a reference.
        assert sorted(client.get_subjects()) == ["money.proto", "orders-value"]
        latest = client.get_latest_version("orders-value")
        assert latest.schema_id == schema_id and latest.schema.schema_type == "PROTOBUF"
        assert [(r.name, r.subject, r.version) for r in latest.schema.references] == [("money.proto", "money.proto", 1)]
        assert "import \"money.proto\";" in latest.schema.schema_str and "message Order {" in latest.schema.schema_str
        # google/protobuf/timestamp.proto is a well-known type: imported without a reference.
        assert "google/protobuf/timestamp.proto" in latest.schema.schema_str

        received = produce_and_consume(registry.process.bootstrap, "orders", encoded)
        # A fresh client: the deserializer fetches the writer's schema (format=serialized) and its reference.
        deserialize = ProtobufDeserializer(Order, {"use.deprecated.format": False},
                                           schema_registry_client=SchemaRegistryClient({"url": registry.url}))
        assert [deserialize(data, context) for data in received] == values

        # Registering the same schema again (as text now) gives the same id.
        again = registry.ok("POST", "/subjects/orders-value/versions",
                            {"schema": latest.schema.schema_str, "schemaType": "PROTOBUF",
                             "references": [{"name": "money.proto", "subject": "money.proto", "version": 1}]})
        assert again["id"] == schema_id

        # Evolution under BACKWARD: a field added is compatible, a type changed across wire groups is not.
        evolved = ORDER_PROTO.replace("  Status status = 8;\n", "  Status status = 8;\n  string note = 9;\n")
        references = latest.schema.references
        evolved_id = client.register_schema("orders-value", Schema(evolved, "PROTOBUF", references))
        assert evolved_id != schema_id
        assert client.get_versions("orders-value") == [1, 2]
        broken = ORDER_PROTO.replace("int64 id = 1;", "string id = 1;")
        with pytest.raises(SchemaRegistryError) as refused:
            client.register_schema("orders-value", Schema(broken, "PROTOBUF", references))
        assert refused.value.http_status_code == 409 and refused.value.error_code == 409
        assert "FIELD_SCALAR_KIND_CHANGED" in refused.value.error_message
        # Old records still read with the evolved class.
        (tmp_path / "v2").mkdir()
        evolved_classes = message_classes(tmp_path / "v2", {"money.proto": MONEY_PROTO, "order.proto": evolved},
                                          "order.proto")
        read_evolved = ProtobufDeserializer(evolved_classes["Order"], {"use.deprecated.format": False},
                                            schema_registry_client=client)
        assert [read_evolved(data, context).id for data in received] == [0, 1, 2, 3, 4]

        # money.proto is referenced: it cannot be deleted while the order is there.
        with pytest.raises(SchemaRegistryError) as referenced:
            client.delete_version("money.proto", 1)
        assert referenced.value.error_code == 42206


def test_protobuf_endpoints(registry_with_protobuf):
    registry = registry_with_protobuf
    money_id = registry.register("pe-money", MONEY_PROTO, "PROTOBUF")
    ref = {"name": "money.proto", "subject": "pe-money", "version": 1}
    body = {"schema": ORDER_PROTO, "schemaType": "PROTOBUF", "references": [ref]}
    order_id = registry.ok("POST", "/subjects/pe-order/versions", body)["id"]
    assert order_id != money_id

    by_id = registry.ok("GET", f"/schemas/ids/{order_id}")
    assert by_id["schemaType"] == "PROTOBUF" and by_id["references"] == [ref]
    assert by_id["schema"].startswith('syntax = "proto3";\npackage shop;\nimport "money.proto";')
    version = registry.ok("GET", "/subjects/pe-order/versions/1")
    assert (version["subject"], version["version"], version["id"], version["schemaType"]) == (
        "pe-order", 1, order_id, "PROTOBUF")
    # .../schema answers the .proto text itself, as Confluent's registry does (Avro's is a JSON document).
    for path in ("/subjects/pe-order/versions/latest/schema", f"/schemas/ids/{order_id}/schema"):
        status, text, headers = registry.raw("GET", path)
        assert status == 200 and text.decode() == by_id["schema"]

    # format=serialized: the base64 FileDescriptorProto, which imports the reference by its name.
    for path in (f"/schemas/ids/{order_id}?format=serialized", "/subjects/pe-order/versions/1?format=serialized"):
        raw = base64.b64decode(registry.ok("GET", path)["schema"])
        descriptor = descriptor_pb2.FileDescriptorProto.FromString(raw)
        assert descriptor.package == "shop" and list(descriptor.dependency) == [
            "money.proto", "google/protobuf/timestamp.proto"]
        assert [m.name for m in descriptor.message_type] == ["Header", "Order"]
    # A serialized schema registers as the same schema.
    as_base64 = registry.ok("GET", f"/schemas/ids/{order_id}?format=serialized")["schema"]
    assert registry.ok("POST", "/subjects/pe-order/versions",
                       {"schema": as_base64, "schemaType": "PROTOBUF", "references": [ref]})["id"] == order_id

    # Lookup, and lookup of an unregistered variant.
    found = registry.ok("POST", "/subjects/pe-order", body)
    assert (found["id"], found["version"], found["schemaType"]) == (order_id, 1, "PROTOBUF")
    spaced = dict(body, schema=ORDER_PROTO.replace("\n", "\n\n"))
    assert registry.ok("POST", "/subjects/pe-order", spaced)["id"] == order_id  # layout does not matter
    other = dict(body, schema=ORDER_PROTO.replace("string card = 6;", "string card_number = 6;"))
    assert registry.error("POST", "/subjects/pe-order", other) == (404, 40403)

    # Compatibility with verbose reasons.
    assert registry.ok("POST", "/compatibility/subjects/pe-order/versions/latest", other) == {"is_compatible": True}
    removed = dict(body, schema=MONEY_PROTO)  # the Order and Header messages gone
    answer = registry.ok("POST", "/compatibility/subjects/pe-order/versions/latest?verbose=true", removed)
    assert answer["is_compatible"] is False
    assert any("MESSAGE_REMOVED" in message for message in answer["messages"])

    # A missing reference and an invalid schema: 42201 with Confluent's message.
    status, error = registry.call("POST", "/subjects/pe-order/versions", {"schema": ORDER_PROTO,
                                                                         "schemaType": "PROTOBUF"})
    assert (status, error["error_code"]) == (422, 42201) and "money.proto" in error["message"]
    status, error = registry.call("POST", "/subjects/pe-bad/versions",
                                  {"schema": 'syntax = "proto3";\nmessage M { strin a = 1; }',
                                   "schemaType": "PROTOBUF"})
    assert (status, error["error_code"]) == (422, 42201)
    assert error["message"].startswith("Invalid schema {subject=pe-bad,version=0,id=-1,schemaType=PROTOBUF,")
    assert error["message"].endswith('details: schema:2:13: "strin" is not defined.')


def test_normalize_on_requests_and_in_the_subject_config(registry_with_protobuf):
    registry = registry_with_protobuf
    first = 'syntax = "proto3";\nmessage M {\n  string b = 2;\n  int32 a = 1;\n}\n'
    reordered = 'syntax = "proto3";\nmessage M {\n  int32 a = 1;\n  string b = 2;\n}\n'
    plain = registry.ok("POST", "/subjects/norm-a/versions", {"schema": first, "schemaType": "PROTOBUF"})["id"]
    # Without normalize, the field order is kept: another schema, another id.
    other = registry.ok("POST", "/subjects/norm-b/versions", {"schema": reordered, "schemaType": "PROTOBUF"})
    assert other["id"] != plain
    # With it, both are the same normalized schema.
    one = registry.ok("POST", "/subjects/norm-c/versions?normalize=true", {"schema": first, "schemaType": "PROTOBUF"})
    two = registry.ok("POST", "/subjects/norm-c/versions?normalize=true",
                      {"schema": reordered, "schemaType": "PROTOBUF"})
    assert one == two and registry.ok("GET", "/subjects/norm-c/versions") == [1]
    found = registry.ok("POST", "/subjects/norm-c?normalize=true", {"schema": first, "schemaType": "PROTOBUF"})
    assert found["id"] == one["id"]
    assert registry.error("POST", "/subjects/norm-c", {"schema": first, "schemaType": "PROTOBUF"}) == (404, 40403)

    # JSON: key order.
    keyed = '{"type": "object", "properties": {"x": {"type": "integer"}}}'
    rekeyed = '{"properties": {"x": {"type": "integer"}}, "type": "object"}'
    j1 = registry.ok("POST", "/subjects/norm-j/versions?normalize=true", {"schema": keyed, "schemaType": "JSON"})
    assert registry.ok("POST", "/subjects/norm-j/versions?normalize=true",
                       {"schema": rekeyed, "schemaType": "JSON"}) == j1
    # AVRO too.
    avro = '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}'
    reavro = '{"name": "R", "fields": [{"type": "int", "name": "a"}], "type": "record"}'
    a1 = registry.ok("POST", "/subjects/norm-avro/versions?normalize=true", {"schema": avro})
    assert registry.ok("POST", "/subjects/norm-avro/versions?normalize=true", {"schema": reavro}) == a1

    # The subject config's normalize does it without the query parameter.
    assert registry.ok("PUT", "/config/norm-d", {"normalize": True}) == {"normalize": True}
    assert registry.ok("GET", "/config/norm-d") == {"normalize": True}
    d1 = registry.ok("POST", "/subjects/norm-d/versions", {"schema": first, "schemaType": "PROTOBUF"})
    assert registry.ok("POST", "/subjects/norm-d/versions", {"schema": reordered, "schemaType": "PROTOBUF"}) == d1
    assert registry.ok("PUT", "/config/norm-d", {"compatibility": "FULL"}) == {"compatibility": "FULL",
                                                                               "normalize": True}
    assert registry.ok("GET", "/config/norm-d") == {"compatibilityLevel": "FULL", "normalize": True}
    assert registry.ok("DELETE", "/config/norm-d") == {"compatibilityLevel": "FULL", "normalize": True}
    assert registry.error("GET", "/config/norm-d") == (404, 40408)
    assert registry.error("PUT", "/config/norm-d", {"normalize": "yes"}) == (422, 422)


@pytest.fixture(scope="module")
def registry_with_protobuf():
    with registry_broker() as registry:
        yield registry
