"""Schema id validation on produce (broker/schema_validation.py, Confluent Server's topic configs
confluent.{key,value}.schema.validation and .subject.name.strategy) against a broker process with
its Schema Registry: real serializers and producers, and Produce requests whose answers are read
field by field. With two workers the topic's partitions are owned by both, so the worker not owning
`_schemas` asks the one that does."""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from client import WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch
from test_schema_registry import record, registry_broker

PARTITIONS = 4
ORDER = record("Order", {"name": "id", "type": "long"})
RECORD_NAME = "io.confluent.kafka.serializers.subject.RecordNameStrategy"


def _create(bootstrap: str, topic: str, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, PARTITIONS, 1, config=configs)])
    futures[topic].result(30)


def _framed(schema_id: int, payload: bytes = b"\x02") -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + payload


def _produce(client: WireClient, topic: str, partition: int, values: list, key=None):
    batch = build_batch([Record(i, 0, key, value) for i, value in enumerate(values)],
                        base_timestamp=int(time.time() * 1000))
    response = client.call("Produce", 9, {"acks": -1, "timeout_ms": 10000, "topic_data": [{
        "name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
    return response.responses[0].partition_responses[0]


def _end_offset(client: WireClient, topic: str, partition: int) -> int:
    response = client.call("ListOffsets", 7, {"replica_id": -1, "isolation_level": 0, "topics": [{
        "name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                       "timestamp": -1}]}]})
    return response.topics[0].partitions[0].offset


@pytest.fixture(scope="module", params=[1, 2], ids=["one-process", "two-workers"])
def registry(request):
    with registry_broker(**{"num.worker.processes": request.param}) as registry:
        yield registry


def test_values_must_carry_an_id_registered_under_the_topics_subject(registry):
    bootstrap = registry.process.bootstrap
    topic = f"checked-{registry.port}"
    _create(bootstrap, topic, **{"confluent.value.schema.validation": "true"})
    registered = registry.register(f"{topic}-value", ORDER)
    elsewhere = registry.register("elsewhere-value", record("Other", {"name": "x", "type": "int"}))
    with WireClient(bootstrap, timeout=10) as client:
        for partition in range(PARTITIONS):  # both workers' partitions
            before = _end_offset(client, topic, partition)
            answer = _produce(client, topic, partition, [_framed(registered), b"plain", _framed(registered),
                                                         _framed(999_999), _framed(elsewhere)])
            assert ErrorCode(answer.error_code) == ErrorCode.INVALID_RECORD
            assert answer.base_offset == -1
            errors = {e.batch_index: e.batch_index_error_message for e in answer.record_errors}
            assert set(errors) == {1, 3, 4}, errors
            assert "does not start with a Schema Registry schema id" in errors[1]
            assert errors[3] == "Schema id 999999 of the record value is not registered in the Schema Registry"
            assert f"not registered under subject {topic}-value (TopicNameStrategy)" in errors[4]
            assert answer.error_message.startswith("One or more records have been rejected due to 3 record errors")
            # The batch is refused whole: nothing of it was written.
            assert _end_offset(client, topic, partition) == before
            answer = _produce(client, topic, partition, [_framed(registered), None, _framed(registered)],
                              key=b"k")  # a null value (a tombstone) passes
            assert answer.error_code == 0 and answer.record_errors == []
            assert _end_offset(client, topic, partition) == before + 3
        # Keys are not checked unless asked.
        assert _produce(client, topic, 0, [_framed(registered)], key=b"no id").error_code == 0


def test_a_deleted_subject_no_longer_validates(registry):
    bootstrap = registry.process.bootstrap
    topic = f"deleted-{registry.port}"
    _create(bootstrap, topic, **{"confluent.value.schema.validation": "true"})
    schema_id = registry.register(f"{topic}-value", ORDER)
    with WireClient(bootstrap, timeout=10) as client:
        for partition in range(PARTITIONS):  # (each worker has the answer cached)
            assert _produce(client, topic, partition, [_framed(schema_id)]).error_code == 0
        registry.ok("DELETE", f"/subjects/{topic}-value")
        deadline = time.monotonic() + 10  # another worker's cached answer lasts 2 s
        for partition in range(PARTITIONS):
            while (answer := _produce(client, topic, partition, [_framed(schema_id)])).error_code == 0:
                assert time.monotonic() < deadline, "a soft-deleted subject still validates"
                time.sleep(0.2)
            assert ErrorCode(answer.error_code) == ErrorCode.INVALID_RECORD


def test_keys_and_record_name_strategy(registry):
    bootstrap = registry.process.bootstrap
    topic = f"keys-{registry.port}"
    _create(bootstrap, topic, **{"confluent.key.schema.validation": "true",
                                 "confluent.key.subject.name.strategy": RECORD_NAME})
    by_name = record("Key", {"name": "k", "type": "string"})
    keyed = registry.register("com.example.Key", json.dumps({**json.loads(by_name), "namespace": "com.example"}))
    under_topic = registry.register(f"{topic}-key", record("TopicKey", {"name": "t", "type": "string"}))
    with WireClient(bootstrap, timeout=10) as client:
        for partition in range(PARTITIONS):
            assert _produce(client, topic, partition, [b"any value"], key=_framed(keyed)).error_code == 0
            answer = _produce(client, topic, partition, [b"v"], key=_framed(under_topic))
            assert ErrorCode(answer.error_code) == ErrorCode.INVALID_RECORD
            assert "(RecordNameStrategy)" in answer.record_errors[0].batch_index_error_message
            answer = _produce(client, topic, partition, [b"v"], key=b"raw key")
            assert ErrorCode(answer.error_code) == ErrorCode.INVALID_RECORD
            assert _produce(client, topic, partition, [b"v"], key=None).error_code == 0  # a null key passes


def test_confluent_producer_and_serializer_through_validation(registry):
    bootstrap = registry.process.bootstrap
    topic = f"serialized-{registry.port}"
    _create(bootstrap, topic, **{"confluent.value.schema.validation": "true"})
    serialize = AvroSerializer(SchemaRegistryClient({"url": registry.url}), ORDER)  # registers it
    context = SerializationContext(topic, MessageField.VALUE)
    outcomes = {}
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "message.timeout.ms": 20000})
    for name, value in (("good", serialize({"id": 1}, context)), ("bad", b"not avro")):
        producer.produce(topic, value, partition=PARTITIONS - 1,
                         on_delivery=lambda error, message, name=name: outcomes.__setitem__(name, error))
        producer.flush(30)
    assert outcomes["good"] is None
    assert outcomes["bad"] is not None and outcomes["bad"].code() == KafkaError.INVALID_RECORD
    # The topic's configs say what validates it; DescribeConfigs lists the keys set.
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_configs([ConfigResource("TOPIC", topic)])
    entries = next(iter(described.values())).result(30)
    assert entries["confluent.value.schema.validation"].value == "true"
    assert "confluent.key.schema.validation" not in entries  # not set: not listed, as Kafka's internal configs


def test_a_bad_strategy_is_invalid_config(registry):
    admin = AdminClient({"bootstrap.servers": registry.process.bootstrap})
    futures = admin.create_topics([NewTopic(f"bad-{registry.port}", 1, 1,
                                            config={"confluent.value.subject.name.strategy": "Nope"})])
    with pytest.raises(Exception) as refused:
        next(iter(futures.values())).result(30)
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert "confluent.value.subject.name.strategy" in refused.value.args[0].str()
