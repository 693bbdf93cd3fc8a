"""Schema id validation's rules (broker/schema_validation.py) over a table of registered ids, and the
record names a record-name subject strategy derives (registry/validation.py). The broker process
with its registry and real clients: tests/integration/test_schema_validation.py."""

from __future__ import annotations

import asyncio
import json

import pytest

from broker.schema_validation import check_schema_ids, enabled_parts
from kafka_wire.record_codec import Record, build_batch
from log.config import LogConfig
from registry.store import SchemaVersion
from registry.validation import record_names

TOPIC_RECORD = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"


class Registered:
    """What `_schemas` says, seen as a worker not owning it sees it: `stale` answers until asked fresh."""

    def __init__(self, subjects: dict[int, list], stale: dict[int, list] | None = None) -> None:
        self.subjects = subjects
        self.stale = stale or {}
        self.asked: list[tuple[int, bool]] = []

    async def schema_subjects(self, schema_id: int, fresh: bool = False):
        self.asked.append((schema_id, fresh))
        if not fresh and schema_id in self.stale:
            return self.stale[schema_id]
        return self.subjects.get(schema_id, [])


def framed(schema_id: int) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + b"payload"


def check(broker, config: dict, values: list, keys: list | None = None):
    batch = build_batch([Record(i, 0, (keys or [None] * len(values))[i], value) for i, value in enumerate(values)])
    return asyncio.run(check_schema_ids(broker, "orders", LogConfig(config), batch))


def test_only_what_the_topic_asks_is_checked():
    assert enabled_parts(LogConfig({})) == []
    assert enabled_parts(LogConfig({"confluent.key.schema.validation": "true"})) == ["key"]
    broker = Registered({})
    assert check(broker, {}, [b"anything"]) is None and broker.asked == []


def test_topic_name_strategy_refuses_records_one_by_one():
    broker = Registered({7: [("orders-value", ["Order"])], 8: [("payments-value", ["Payment"])]})
    error = check(broker, {"confluent.value.schema.validation": "true"},
                  [framed(7), b"\x01bad", framed(8), framed(9), None, b"\x00\x00"])
    assert error.error_name == "INVALID_RECORD"
    found = dict(error.record_errors)
    assert set(found) == {1, 2, 3, 5}  # a null value passes
    assert "magic byte 0" in found[1] and "magic byte 0" in found[5]
    assert found[2].startswith("Schema id 8 of the record value is not registered under subject orders-value")
    assert found[3] == "Schema id 9 of the record value is not registered in the Schema Registry"
    assert str(error).startswith("One or more records have been rejected due to 4 record errors in total")


def test_a_stale_answer_is_asked_again_before_a_record_is_refused():
    # Registered under orders-value since the cached answer: it passes, after one fresh question.
    broker = Registered({7: [("other-value", []), ("orders-value", [])]}, stale={7: [("other-value", [])]})
    assert check(broker, {"confluent.value.schema.validation": "true"}, [framed(7)] * 5) is None
    assert broker.asked == [(7, False), (7, True)]  # once per batch, not per record


def test_record_name_strategies_and_keys():
    broker = Registered({1: [("com.example.Key", ["com.example.Key"])],
                         2: [("orders-com.example.Key", ["com.example.Key"])]})
    record_name = {"confluent.key.schema.validation": "true",
                   "confluent.key.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy"}
    assert check(broker, record_name, [b"v"], keys=[framed(1)]) is None
    assert check(broker, record_name, [b"v"], keys=[framed(2)]).record_errors[0][0] == 0
    topic_record = {"confluent.key.schema.validation": "true", "confluent.key.subject.name.strategy": TOPIC_RECORD}
    assert check(broker, topic_record, [b"v"], keys=[framed(2)]) is None
    assert check(broker, topic_record, [b"v"], keys=[framed(1)]) is not None
    assert check(broker, topic_record, [b"v"], keys=[None]) is None


def test_a_strategy_kafka_wire_does_not_know_is_invalid_config():
    with pytest.raises(ValueError, match="confluent.value.subject.name.strategy"):
        LogConfig({"confluent.value.subject.name.strategy": "com.example.Mine"})


@pytest.mark.parametrize("schema_type, schema, names", [
    ("AVRO", {"type": "record", "name": "Order", "namespace": "com.shop", "fields": []}, ["com.shop.Order"]),
    ("AVRO", {"type": "record", "name": "com.shop.Order", "namespace": "ignored", "fields": []}, ["com.shop.Order"]),
    ("AVRO", {"type": "record", "name": "Order", "fields": []}, ["Order"]),
    ("AVRO", "string", []),
    ("JSON", {"title": "Order", "type": "object"}, ["Order"]),
    ("JSON", {"type": "object"}, []),
    ("PROTOBUF", 'syntax = "proto3";\npackage shop.v1;\nmessage Order {\n  message Line { int32 n = 1; }\n}\n'
                 "message Refund { string id = 1; }\n", ["shop.v1.Order", "shop.v1.Refund"]),
    ("PROTOBUF", 'syntax = "proto3";\nmessage Order { int32 id = 1; }\n', ["Order"]),
])
def test_record_names(schema_type, schema, names):
    text = schema if isinstance(schema, str) and schema_type == "PROTOBUF" else json.dumps(schema)
    assert record_names(SchemaVersion("s", 1, 1, text, schema_type)) == names
