"""Schema ID validation on produce: Confluent Server's broker-side schema validation, under its topic
configs (log/config.py SCHEMA_VALIDATION_CONFIGS).

With `confluent.value.schema.validation=true` on a topic (or `confluent.key.schema.validation`),
each record's value (key) must start with the Schema Registry's wire format - magic byte 0, then a
4-byte big-endian schema id - and that id must be registered, not soft-deleted, under the subject
`confluent.value.subject.name.strategy` names:

- TopicNameStrategy (the default): `<topic>-value` (`<topic>-key`);
- RecordNameStrategy: the schema's record name (Avro's full name, a JSON schema's title, a
  Protobuf schema's messages);
- TopicRecordNameStrategy: `<topic>-<record name>`.

A null key or value passes (tombstones in a compacted topic), as Confluent Server lets it. The
records are not introspected beyond the id. When a record fails, the partition's batch is refused
whole with INVALID_RECORD and one record error per refused record, as Kafka refuses a batch whose
records its own checks refuse (log/validator.py): nothing of it is written.

Which subjects hold an id is read from `_schemas`, the registry's topic on this broker (the built-in
registry's, or one an external Confluent registry or Karapace writes to kafka-wire), by
`Broker.schema_subjects`: with several workers at the worker owning `_schemas`, asked through the
`schema_subjects` call and cached for SCHEMA_LOOKUP_CACHE_SECONDS (a record is refused only on a
fresh answer: a subject registered meanwhile counts at once, one deleted meanwhile that much later).
"""

from __future__ import annotations

from kafka_wire.record_codec import InvalidRecord, decode_records
from kafka_wire.records import InvalidRecordBatch
from log.errors import RecordValidationError
from log.validator import invalid_records

WIRE_FORMAT_MAGIC = 0
_STRATEGY_PREFIX = "io.confluent.kafka.serializers.subject."


def enabled_parts(config) -> list[str]:
    """"key" and/or "value": what the topic's config asks to validate."""
    return [part for part in ("key", "value") if config.get(f"confluent.{part}.schema.validation")]


async def check_schema_ids(broker, topic: str, config, batch) -> RecordValidationError | None:
    """The INVALID_RECORD error refusing the batch when some record's key or value fails the topic's
    schema id validation; None when it passes (or the topic does not validate)."""
    parts = enabled_parts(config)
    if not parts:
        return None
    try:
        _, records = decode_records(batch, 0)
    except (InvalidRecord, InvalidRecordBatch):
        return None  # the log's own checks refuse it, with the error Kafka answers
    subjects: dict[int, tuple[list, bool]] = {}  # per batch (its ids are mostly a few): (subjects, fresh)
    errors = []
    for index, record in enumerate(records):
        for part in parts:
            data = record.key if part == "key" else record.value
            if data is None:
                continue
            message = await _failure(broker, topic, part, config[f"confluent.{part}.subject.name.strategy"],
                                     bytes(data[:5]), subjects)
            if message is not None:
                errors.append((index, message))
                break
    return invalid_records(errors) if errors else None


async def _failure(broker, topic: str, part: str, strategy: str, head: bytes, subjects: dict) -> str | None:
    if len(head) < 5 or head[0] != WIRE_FORMAT_MAGIC:
        return (f"Record {part} does not start with a Schema Registry schema id (magic byte 0, then the "
                f"4-byte id): schema id validation is on for topic {topic}")
    schema_id = int.from_bytes(head[1:5], "big")
    name = strategy.removeprefix(_STRATEGY_PREFIX)
    if name == "RecordNameStrategy":
        wanted = lambda subject, records: subject in records  # noqa: E731
        expected = "the schema's record name"
    elif name == "TopicRecordNameStrategy":
        wanted = lambda subject, records: any(subject == f"{topic}-{r}" for r in records)  # noqa: E731
        expected = f"{topic}-<the schema's record name>"
    else:
        wanted = lambda subject, records: subject == f"{topic}-{part}"  # noqa: E731
        expected = f"{topic}-{part}"
    if schema_id not in subjects:
        subjects[schema_id] = (await broker.schema_subjects(schema_id), False)
    registered, fresh = subjects[schema_id]
    if not any(wanted(subject, records) for subject, records in registered) and not fresh:
        # A cached answer may predate the subject's registration: ask again before refusing.
        registered, fresh = await broker.schema_subjects(schema_id, fresh=True), True
        subjects[schema_id] = (registered, fresh)
    if not registered:
        return f"Schema id {schema_id} of the record {part} is not registered in the Schema Registry"
    if any(wanted(subject, records) for subject, records in registered):
        return None
    return (f"Schema id {schema_id} of the record {part} is not registered under subject {expected} "
            f"({name}); it is under {', '.join(sorted(s for s, _ in registered))}")
