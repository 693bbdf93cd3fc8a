"""registry/tags.py: Confluent's confluent:tags added to and removed from Avro records and fields,
found the way Confluent's registry finds them (breadth first, through unions, arrays and maps)."""

import json

import pytest

from registry.schemas import InvalidSchema
from registry.tags import TagRequestError, modify_avro_tags, schema_tags_arg

SCHEMA = json.dumps({
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": ["null", {"type": "record", "name": "Customer",
                                               "fields": [{"name": "email", "type": "string"}]}]},
        {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line",
                                                               "fields": [{"name": "sku", "type": "string"}]}}},
        {"name": "extra", "type": {"type": "map", "values": {"type": "record", "name": "Extra",
                                                              "fields": [{"name": "note", "type": "string"}]}}},
    ]})


def test_tags_reach_records_and_fields_through_unions_arrays_and_maps():
    text = modify_avro_tags(SCHEMA, [
        ("shop.Order", "sr_record", ["A"]),
        ("shop.Customer.email", "sr_field", ["PII"]),
        ("Line.sku", "sr_field", ["X", "Y"]),
        ("Extra", "sr_record", ["M"]),
    ], [])
    schema = json.loads(text)
    assert schema["confluent:tags"] == ["A"]
    assert schema["fields"][1]["type"][1]["fields"][0]["confluent:tags"] == ["PII"]
    assert schema["fields"][2]["type"]["items"]["fields"][0]["confluent:tags"] == ["X", "Y"]
    assert schema["fields"][3]["type"]["values"]["confluent:tags"] == ["M"]


def test_tags_keep_their_order_once_each_and_an_empty_list_goes():
    once = modify_avro_tags(SCHEMA, [("Order.id", "sr_field", ["B", "A", "B"])], [])
    assert json.loads(once)["fields"][0]["confluent:tags"] == ["B", "A"]
    twice = modify_avro_tags(once, [("Order.id", "sr_field", ["C"])], [("Order.id", "sr_field", ["B"])])
    assert json.loads(twice)["fields"][0]["confluent:tags"] == ["A", "C"]
    gone = modify_avro_tags(twice, [], [("Order.id", "sr_field", ["A", "C"])])
    assert "confluent:tags" not in json.loads(gone)["fields"][0]


@pytest.mark.parametrize("path, kind", [("shop.Nope", "sr_record"), ("other.Order", "sr_record"),
                                        ("Order.nope", "sr_field"), ("Order", "sr_field")])
def test_a_path_naming_nothing_is_an_invalid_schema(path, kind):
    with pytest.raises(InvalidSchema, match=f"No matching path '{path}' found in the schema"):
        modify_avro_tags(SCHEMA, [(path, kind, ["T"])], [])


def test_tag_entities_are_read_in_confluents_shape():
    assert schema_tags_arg([{"schemaEntity": {"entityPath": "a.B", "entityType": "SR_RECORD"}, "tags": ["T"]}],
                           "tagsToAdd") == [("a.B", "sr_record", ["T"])]
    assert schema_tags_arg(None, "tagsToAdd") == []
    for bad in ({"x": 1}, [{"schemaEntity": {"entityPath": "a"}, "tags": ["T"]}],
                [{"schemaEntity": {"entityPath": "a", "entityType": "sr_topic"}, "tags": ["T"]}],
                [{"schemaEntity": {"entityPath": "a", "entityType": "sr_field"}, "tags": "T"}]):
        with pytest.raises(TagRequestError):
            schema_tags_arg(bad, "tagsToAdd")
