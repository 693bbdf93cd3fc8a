"""Data contracts in the Schema Registry against a broker process, as Confluent's current registry
serves them: a schema's `ruleSet` (registered, stored in `_schemas`, part of the schema's identity and
GUID, answered back), the config's defaultMetadata / overrideMetadata / defaultRuleSet /
overrideRuleSet merged in at registration, `confluent:version`, the full register answer,
GET /contexts with offset / limit / contextPrefix, and confluent-kafka's AvroSerializer enforcing a
CEL condition rule read from the registry (its CEL executor: PyPI cel-python + google-re2)."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import Metadata, MetadataProperties, MetadataTags, Rule, RuleKind, RuleMode, \
    RuleParams, RuleSet, Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

from test_schema_registry import USER_V1, USER_V2, produce_and_consume, quote, read_schemas_topic, record, \
    registry_broker

pytestmark = pytest.mark.clients

ORDER = record("Order", {"name": "id", "type": "long"}, {"name": "total", "type": "int"})

CHECK_TOTAL = {"name": "checkTotal", "kind": "CONDITION", "type": "CEL", "mode": "WRITE",
               "expr": "message.total > 0", "tags": ["pii", "money", "pii"], "params": {"b": "2", "a": "1"}}
# As Confluent keeps it: tags sorted without repeats, params by name, disabled written
CHECK_TOTAL_KEPT = {"name": "checkTotal", "kind": "CONDITION", "mode": "WRITE", "type": "CEL",
                    "tags": ["money", "pii"], "params": {"a": "1", "b": "2"}, "expr": "message.total > 0",
                    "disabled": False}


@pytest.fixture
def registry(tmp_path):
    with registry_broker(tmp_path) as registry:
        yield registry


def test_rule_set_is_registered_stored_and_part_of_the_schema(registry):
    with_rules = {"schema": ORDER, "ruleSet": {"domainRules": [CHECK_TOTAL]}}
    first = registry.ok("POST", "/subjects/r-value/versions", with_rules)
    # The register answer echoes the schema as stored (Confluent's RegisterSchemaResponse)
    assert first == {"id": 1, "version": 1, "guid": first["guid"], "schemaType": "AVRO",
                     "ruleSet": {"domainRules": [CHECK_TOTAL_KEPT]}, "schema": first["schema"]}
    assert json.loads(first["schema"]) == json.loads(ORDER)
    got = registry.ok("GET", "/subjects/r-value/versions/1")
    assert got["ruleSet"] == {"domainRules": [CHECK_TOTAL_KEPT]} and got["guid"] == first["guid"]
    assert registry.ok("GET", "/schemas/ids/1")["ruleSet"] == {"domainRules": [CHECK_TOTAL_KEPT]}

    # Without a rule set of its own a registration takes the latest version's: the same version
    assert registry.ok("POST", "/subjects/r-value/versions", {"schema": ORDER})["version"] == 1
    assert registry.ok("POST", "/subjects/r-value", {"schema": ORDER})["version"] == 1
    # Another rule set is another schema: a new version, id and guid
    disabled = {**CHECK_TOTAL, "disabled": True}
    second = registry.ok("POST", "/subjects/r-value/versions", {"schema": ORDER, "ruleSet": {"domainRules": [disabled]}})
    assert (second["id"], second["version"]) == (2, 2) and second["guid"] != first["guid"]
    assert second["ruleSet"]["domainRules"][0]["disabled"] is True
    # Lookup matches the rule set too
    assert registry.ok("POST", "/subjects/r-value", with_rules)["version"] == 1
    other = {"schema": ORDER, "ruleSet": {"migrationRules": [{"name": "up", "type": "JSONATA", "mode": "UPGRADE"}]}}
    assert registry.error("POST", "/subjects/r-value", other) == (404, 40403)
    # The same content in another subject has the same id
    assert registry.ok("POST", "/subjects/r-other/versions", with_rules)["id"] == 1

    # _schemas holds the rule set as Confluent writes it
    records = {(key["subject"], key["version"]): value for key, value in read_schemas_topic(registry.process.bootstrap)
               if key.get("keytype") == "SCHEMA"}
    assert records[("r-value", 1)]["ruleSet"] == {"domainRules": [CHECK_TOTAL_KEPT]}


@pytest.mark.parametrize("rule_set, code", [
    ({"domainRules": [CHECK_TOTAL, CHECK_TOTAL]}, 42210),  # duplicate name
    ({"domainRules": [{"name": "noType"}]}, 42210),
    ({"domainRules": [{"type": "CEL"}]}, 42210),  # no name
    ({"domainRules": [{"name": "9lives", "type": "CEL"}]}, 42210),
    ({"domainRules": [{"name": "a.b", "type": "CEL"}]}, 42210),
    ({"domainRules": [{"name": "up", "type": "CEL", "mode": "UPGRADE"}]}, 42210),
    ({"migrationRules": [{"name": "w", "type": "CEL", "mode": "WRITE"}]}, 42210),
    ({"domainRules": [{"name": "w", "type": "CEL", "mode": "WRITE", "onFailure": "ERROR,NONE"}]}, 42210),
    ({"domainRules": [{"name": "w", "type": "CEL", "kind": "NOPE"}]}, 422),
    ({"domainRules": "not a list"}, 422),
    ("not an object", 422),
])
def test_a_bad_rule_set_is_refused(registry, rule_set, code):
    assert registry.error("POST", "/subjects/bad-value/versions", {"schema": ORDER, "ruleSet": rule_set}) == (422, code)
    assert registry.error("PUT", "/config/bad-value", {"defaultRuleSet": rule_set}) == (422, code)
    # Two actions, one per direction, are fine with WRITEREAD
    fine = {"domainRules": [{"name": "w", "type": "CEL", "onFailure": "ERROR,NONE"}]}
    assert registry.ok("POST", "/subjects/fine-value/versions", {"schema": ORDER, "ruleSet": fine})["ruleSet"] == {
        "domainRules": [{"name": "w", "kind": "TRANSFORM", "mode": "WRITEREAD", "type": "CEL",
                         "onFailure": "ERROR,NONE", "disabled": False}]}


def test_config_defaults_and_overrides_are_merged_in_at_registration(registry):
    config = {"compatibility": "NONE",
              "defaultMetadata": {"properties": {"owner": "platform", "tier": "bronze"}},
              "overrideMetadata": {"properties": {"tier": "gold"}, "tags": {"pii": ["email"]}},
              "defaultRuleSet": {"domainRules": [{"name": "checkTotal", "type": "CEL", "expr": "true"},
                                                 {"name": "other", "type": "CEL", "expr": "true"}]},
              "overrideRuleSet": {"domainRules": [{"name": "forced", "type": "CEL", "mode": "WRITE", "expr": "true"}]}}
    answer = registry.ok("PUT", "/config/c-value", config)
    assert answer["compatibility"] == "NONE" and answer["overrideMetadata"] == {
        "tags": {"pii": ["email"]}, "properties": {"tier": "gold"}}
    got = registry.ok("GET", "/config/c-value")
    assert got["compatibilityLevel"] == "NONE" and got["defaultRuleSet"]["domainRules"][1]["name"] == "other"
    assert set(got) == {"compatibilityLevel", "defaultMetadata", "overrideMetadata", "defaultRuleSet", "overrideRuleSet"}

    # Own metadata and rules over the defaults, the overrides over both
    registered = registry.ok("POST", "/subjects/c-value/versions", {
        "schema": ORDER, "metadata": {"properties": {"owner": "shop", "tier": "silver"}},
        "ruleSet": {"domainRules": [CHECK_TOTAL]}})
    assert registered["metadata"] == {"tags": {"pii": ["email"]}, "properties": {"owner": "shop", "tier": "gold"}}
    assert [rule["name"] for rule in registered["ruleSet"]["domainRules"]] == ["other", "checkTotal", "forced"]
    assert registered["ruleSet"]["domainRules"][1] == CHECK_TOTAL_KEPT
    assert registry.ok("GET", "/subjects/c-value/versions/1")["metadata"] == registered["metadata"]
    # Registering the same again finds it (its metadata and rules merged the same way)
    assert registry.ok("POST", "/subjects/c-value/versions", {
        "schema": ORDER, "metadata": {"properties": {"owner": "shop", "tier": "silver"}},
        "ruleSet": {"domainRules": [CHECK_TOTAL]}})["version"] == 1
    # Lookup merges as registration would
    assert registry.ok("POST", "/subjects/c-value", {"schema": ORDER})["version"] == 1

    # A subject without a config of its own gets the global one's; a subject config replaces it whole
    registry.ok("PUT", "/config", {"defaultMetadata": {"properties": {"owner": "global"}}})
    assert registry.ok("GET", "/config")["defaultMetadata"] == {"properties": {"owner": "global"}}
    assert registry.ok("GET", "/config")["compatibilityLevel"] == "BACKWARD"  # left as it was
    assert registry.ok("POST", "/subjects/g-value/versions", {"schema": USER_V1})["metadata"] == {
        "properties": {"owner": "global"}}
    assert registry.ok("GET", "/config/nothing-value?defaultToGlobal=true")["defaultMetadata"] == {
        "properties": {"owner": "global"}}

    # null unsets a field; what is not named stays
    after = registry.ok("PUT", "/config/c-value", {"overrideRuleSet": None, "defaultMetadata": None})
    assert "overrideRuleSet" not in after and "defaultMetadata" not in after and after["compatibility"] == "NONE"
    assert set(registry.ok("GET", "/config/c-value")) == {"compatibilityLevel", "overrideMetadata", "defaultRuleSet"}
    v2 = registry.ok("POST", "/subjects/c-value/versions", {"schema": USER_V2})
    # (no metadata or rules of its own: the latest version's, under what the config still adds)
    assert v2["version"] == 2 and v2["metadata"] == registered["metadata"]
    assert [rule["name"] for rule in v2["ruleSet"]["domainRules"]] == ["other", "checkTotal", "forced"]
    # Deleting the subject config drops its data-contract fields too
    registry.ok("DELETE", "/config/c-value")
    assert registry.error("GET", "/config/c-value") == (404, 40408)


def test_confluent_version_as_confluent_sets_it(registry):
    subject = "cv-value"
    first = registry.ok("POST", f"/subjects/{subject}/versions", {"schema": USER_V1})
    assert "metadata" not in first
    # version -1: the latest, if it holds this schema
    assert registry.ok("POST", f"/subjects/{subject}/versions", {"schema": USER_V1, "version": -1})["id"] == 1
    # A version named (the next one) is registered with confluent:version
    second = registry.ok("POST", f"/subjects/{subject}/versions", {"schema": USER_V1, "version": 2})
    assert (second["id"], second["version"]) == (2, 2)
    assert second["metadata"] == {"properties": {"confluent:version": "2"}}
    assert registry.ok("POST", f"/subjects/{subject}/versions", {"schema": USER_V1, "version": -1})["id"] == 2
    # Another version than the next one: 42201
    assert registry.error("POST", f"/subjects/{subject}/versions", {"schema": USER_V1, "version": 2}) == (422, 42201)
    # Lookup: without metadata the version without any; confluent:version names a version
    assert registry.ok("POST", f"/subjects/{subject}", {"schema": USER_V1})["version"] == 1
    one = {"schema": USER_V1, "metadata": {"properties": {"confluent:version": "1"}}}
    assert registry.ok("POST", f"/subjects/{subject}", one)["version"] == 1
    two = {"schema": USER_V1, "metadata": {"properties": {"confluent:version": "2"}}}
    assert registry.ok("POST", f"/subjects/{subject}", two)["version"] == 2
    registry.ok("DELETE", f"/subjects/{subject}/versions/1")
    assert registry.ok("POST", f"/subjects/{subject}", {"schema": USER_V1})["version"] == 2
    assert registry.ok("POST", f"/subjects/{subject}/versions", {"schema": USER_V1})["id"] == 2
    # Inherited metadata carrying confluent:version gets the new version's number
    third = registry.ok("POST", f"/subjects/{subject}/versions", {"schema": USER_V2})
    assert third["version"] == 3 and third["metadata"] == {"properties": {"confluent:version": "3"}}
    # confluent:version -1 or 0 in the request: a new version, numbered
    fourth = registry.ok("POST", f"/subjects/{subject}/versions", {
        "schema": USER_V2, "metadata": {"properties": {"confluent:version": "-1"}}})
    assert fourth["version"] == 4 and fourth["metadata"]["properties"]["confluent:version"] == "4"
    # Empty metadata matches the latest (its confluent:version aside); new metadata is a new version
    assert registry.ok("POST", f"/subjects/{subject}/versions", {
        "schema": USER_V2, "metadata": {"properties": {}}})["version"] == 4
    fifth = registry.ok("POST", f"/subjects/{subject}/versions", {
        "schema": USER_V2, "metadata": {"properties": {"mykey": "myvalue"}}})
    assert fifth["version"] == 5 and fifth["metadata"] == {"properties": {"mykey": "myvalue"}}


def test_contexts_are_paged_and_filtered(registry):
    for context in ("beta", "alpha", "gamma", "alpine"):
        registry.register(f":.{context}:s-value", USER_V1)
    assert registry.ok("GET", "/contexts") == [".", ".alpha", ".alpine", ".beta", ".gamma"]
    assert registry.ok("GET", "/contexts?limit=2") == [".", ".alpha"]
    assert registry.ok("GET", "/contexts?offset=2&limit=2") == [".alpine", ".beta"]
    assert registry.ok("GET", "/contexts?offset=4") == [".gamma"]
    assert registry.ok("GET", "/contexts?offset=9") == []
    assert registry.ok("GET", "/contexts?limit=0") == registry.ok("GET", "/contexts?limit=-1") == \
        registry.ok("GET", "/contexts")
    assert registry.ok("GET", "/contexts?contextPrefix=.al") == [".alpha", ".alpine"]
    assert registry.ok("GET", "/contexts?contextPrefix=.al&offset=1&limit=5") == [".alpine"]
    assert registry.ok("GET", "/contexts?contextPrefix=.zzz") == []
    assert registry.ok("GET", "/contexts?contextPrefix=") == registry.ok("GET", "/contexts")
    status, _ = registry.call("GET", "/contexts?limit=many")
    assert status == 404


def test_the_register_answer_echoes_the_stored_schema(registry):
    ref = {"name": "Order", "subject": "ref-order", "version": 1}
    registry.register("ref-order", ORDER)
    holder = json.dumps({"type": "record", "name": "Holder", "fields": [{"name": "o", "type": "Order"}]})
    answer = registry.ok("POST", "/subjects/holder-value/versions", {"schema": holder, "references": [ref]})
    assert answer == {"id": 2, "version": 1, "guid": answer["guid"], "schemaType": "AVRO", "references": [ref],
                      "schema": answer["schema"]}
    again = registry.ok("POST", "/subjects/holder-value/versions", {"schema": holder, "references": [ref]})
    assert again == answer
    json_answer = registry.ok("POST", "/subjects/j-value/versions", {"schema": '{"type": "object"}',
                                                                     "schemaType": "JSON"})
    assert json_answer["schemaType"] == "JSON" and json.loads(json_answer["schema"]) == {"type": "object"}

    # Protobuf: the answer's schema as stored (the .proto text), or in the `format` asked for; one
    # sent serialized (as confluent-kafka's ProtobufSerializer sends it) is answered serialized,
    # since that client caches the answer's text for its deserializer
    proto = 'syntax = "proto3";\nmessage Ping {\n  int32 n = 1;\n}\n'
    as_text = registry.ok("POST", "/subjects/p-value/versions", {"schema": proto, "schemaType": "PROTOBUF"})
    assert as_text["schemaType"] == "PROTOBUF" and "message Ping" in as_text["schema"]
    serialized = registry.ok("GET", "/subjects/p-value/versions/1?format=serialized")["schema"]
    assert registry.ok("POST", "/subjects/p-value/versions?format=serialized",
                       {"schema": proto, "schemaType": "PROTOBUF"})["schema"] == serialized
    sent_serialized = registry.ok("POST", "/subjects/p-value/versions", {"schema": serialized, "schemaType": "PROTOBUF"})
    assert (sent_serialized["id"], sent_serialized["schema"]) == (as_text["id"], serialized)


def test_confluent_kafka_enforces_a_cel_rule_from_the_registry(registry):
    pytest.importorskip("celpy")  # confluent-kafka's CEL executor (PyPI cel-python)
    from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor
    CelExecutor.register()

    client = SchemaRegistryClient({"url": registry.url})
    rule = Rule("checkTotal", None, RuleKind.CONDITION, RuleMode.WRITE, "CEL", None, RuleParams({"k": "v"}),
                "message.total > 0", None, None, False)
    schema = Schema(ORDER, "AVRO", metadata=Metadata(MetadataTags({}), MetadataProperties({"owner": "shop"}), []),
                    rule_set=RuleSet(None, [rule]))
    registered = client.register_schema_full_response("orders-value", schema)
    assert registered.version == 1
    latest = client.get_latest_version("orders-value")
    assert latest.schema.rule_set.domain_rules[0].expr == "message.total > 0"
    assert latest.schema.rule_set.domain_rules[0].params.params == {"k": "v"}
    assert latest.schema.metadata.properties.properties == {"owner": "shop"}
    found = client.lookup_schema("orders-value", schema)
    assert (found.schema_id, found.version) == (registered.schema_id, 1)

    # The serializer reads the latest version (with its rules) and runs the condition
    serialize = AvroSerializer(client, None, conf={"auto.register.schemas": False, "use.latest.version": True})
    context = SerializationContext("orders", MessageField.VALUE)
    good = serialize({"id": 1, "total": 5}, context)
    with pytest.raises(SerializationError):
        serialize({"id": 2, "total": 0}, context)
    got = produce_and_consume(registry.process.bootstrap, "orders", [good])
    deserialize = AvroDeserializer(client)
    assert deserialize(got[0], context) == {"id": 1, "total": 5}


def test_rule_sets_and_config_contracts_survive_a_restart(registry):
    registry.ok("PUT", "/config/s-value", {"overrideRuleSet": {"domainRules": [CHECK_TOTAL]},
                                           "defaultMetadata": {"properties": {"owner": "ops"}}})
    answer = registry.ok("POST", "/subjects/s-value/versions", {"schema": ORDER})
    assert answer["ruleSet"] == {"domainRules": [CHECK_TOTAL_KEPT]}
    registry.process.stop()
    registry.process.start()
    registry.wait_until_serving()
    assert registry.ok("GET", "/config/s-value") == {"overrideRuleSet": {"domainRules": [CHECK_TOTAL_KEPT]},
                                                     "defaultMetadata": {"properties": {"owner": "ops"}}}
    got = registry.ok("GET", "/subjects/s-value/versions/1")
    assert (got["guid"], got["ruleSet"], got["metadata"]) == (answer["guid"], answer["ruleSet"], answer["metadata"])
    assert registry.ok("POST", "/subjects/s-value/versions", {"schema": ORDER}) == answer


def test_confluent_kafka_sets_and_reads_the_data_contract_config(registry):
    from confluent_kafka.schema_registry import ServerConfig

    client = SchemaRegistryClient({"url": registry.url})
    owned = Metadata(MetadataTags({}), MetadataProperties({"owner": "shop"}), [])
    forced = RuleSet(None, [Rule("positive", None, RuleKind.CONDITION, RuleMode.WRITE, "CEL", None, None,
                                 "message.total > 0", None, None, False)])
    client.set_config("cfg-value", ServerConfig(default_metadata=owned, override_rule_set=forced))
    config = client.get_config("cfg-value")
    assert config.default_metadata.properties.properties == {"owner": "shop"}
    assert config.override_rule_set.domain_rules[0].name == "positive"
    registered = client.register_schema_full_response("cfg-value", Schema(ORDER, "AVRO"))
    latest = client.get_latest_version("cfg-value")
    assert latest.schema_id == registered.schema_id
    assert latest.schema.metadata.properties.properties == {"owner": "shop"}
    assert latest.schema.rule_set.domain_rules[0].expr == "message.total > 0"
