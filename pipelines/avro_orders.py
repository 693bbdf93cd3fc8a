"""Orders written in Avro through a Schema Registry (kafka-wire's own, or Confluent's), decoded with
Spark's from_avro (spark-avro, `org.apache.spark:spark-avro_2.13:<pyspark version>`).

A serializer of Confluent's (confluent-kafka's AvroSerializer, the Java KafkaAvroSerializer) writes
each value as the registry's wire format: a zero magic byte, the schema id as a 4-byte big-endian
integer, then the Avro binary encoding of the record under that schema. from_avro reads plain Avro
binary, so the job strips the five bytes and decodes the rest with the schema the id names.

Every version registered under the value subject (`<topic>-value` by default, the TopicNameStrategy)
is fetched when the job starts: a record written with version 1 is decoded with version 1 as the
writer's schema and the latest version as the reader's (from_avro's `avroSchema` option, Avro's
schema resolution), so the view reads old and new orders alike after a compatible evolution. A
value without the magic byte, with an id that is not one of the subject's, or whose bytes do not
decode (from_avro's PERMISSIVE mode gives null) is not an order: it is left out of the view and
listed by the replay job's rejected records, as a malformed JSON order is. A version registered
after the job started is not known to it: its records are rejected until the job is restarted.

The latest version must describe an order: a record with the fields `order_id` (string) and
`amount_cents` (long or int); other fields are ignored. Pure Python here except `order_column`.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
MAGIC_BYTE = 0
HEADER_BYTES = 5  # magic byte + 4-byte schema id
ORDER_FIELDS = {"order_id": ("string",), "amount_cents": ("long", "int")}


class SchemaRegistryError(Exception):
    """The registry could not be asked, or its answer does not describe orders; the message says which."""


@dataclass(frozen=True)
class ValueSchemas:
    """The Avro schemas of a subject: writer schema text by schema id, and the reader schema (the latest)."""
    subject: str
    writers: dict[int, str]
    reader: str


def value_subject(topic: str) -> str:
    """The TopicNameStrategy's subject for a topic's values."""
    return f"{topic}-value"


def _get(url: str, path: str, basic_auth: str | None, timeout: float) -> object:
    request = urllib.request.Request(url.rstrip("/") + path, headers={"Accept": CONTENT_TYPE})
    if basic_auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(basic_auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as error:
        try:
            body = json.loads(error.read())
            detail = f"{body.get('error_code')} {body.get('message')}"
        except (ValueError, AttributeError):
            detail = error.reason
        raise SchemaRegistryError(f"{url}{path}: HTTP {error.code}: {detail}") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise SchemaRegistryError(f"{url}{path}: {getattr(error, 'reason', error)}") from None


def check_order_schema(schema_text: str, subject: str) -> None:
    """SchemaRegistryError unless `schema_text` is an Avro record with the fields an order needs."""
    try:
        schema = json.loads(schema_text)
    except ValueError:
        raise SchemaRegistryError(f"subject {subject}: the latest schema is not JSON") from None
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise SchemaRegistryError(f"subject {subject}: the latest schema is not an Avro record")
    fields = {f.get("name"): f.get("type") for f in schema.get("fields", []) if isinstance(f, dict)}
    for name, types in ORDER_FIELDS.items():
        kind = fields.get(name)
        if isinstance(kind, dict):
            kind = kind.get("type")
        if kind not in types:
            raise SchemaRegistryError(f"subject {subject}: the latest schema has no field {name} of type "
                                      f"{' or '.join(types)} (found {kind!r})")


def fetch_value_schemas(registry_url: str, subject: str, *, basic_auth: str | None = None,
                        timeout: float = 30.0) -> ValueSchemas:
    """Every version of `subject` (GET /subjects/{subject}/versions, then each version), checked:
    Avro only, the latest one an order. `basic_auth` is "user:password" (Confluent's
    basic.auth.user.info)."""
    quoted = urllib.parse.quote(subject, safe="")
    versions = _get(registry_url, f"/subjects/{quoted}/versions", basic_auth, timeout)
    if not isinstance(versions, list) or not versions:
        raise SchemaRegistryError(f"subject {subject}: no versions")
    writers: dict[int, str] = {}
    latest = None
    for version in sorted(versions):
        found = _get(registry_url, f"/subjects/{quoted}/versions/{version}", basic_auth, timeout)
        kind = found.get("schemaType", "AVRO")
        if kind != "AVRO":
            raise SchemaRegistryError(f"subject {subject} version {version} is {kind}, not AVRO")
        if found.get("references"):
            raise SchemaRegistryError(f"subject {subject} version {version} has schema references, "
                                      f"which from_avro cannot resolve")
        writers[int(found["id"])] = found["schema"]
        latest = found["schema"]
    check_order_schema(latest, subject)
    return ValueSchemas(subject, writers, latest)


def order_column(schemas: ValueSchemas, value: str = "value"):
    """The Kafka value column named `value` -> the order struct (order_id, amount_cents, ...) under
    the reader schema, null for a value that is not a decodable order of the subject (see the
    module docstring)."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    column = F.col(value)
    schema_id = F.conv(F.hex(F.substring(column, 2, 4)), 16, 10).cast("long")
    payload = F.expr(f"substring(`{value}`, {HEADER_BYTES + 1})")  # a binary substring: the Avro bytes
    decoded = None
    for writer_id, writer in sorted(schemas.writers.items()):
        this = from_avro(payload, writer, {"mode": "PERMISSIVE", "avroSchema": schemas.reader})
        decoded = F.when(schema_id == writer_id, this) if decoded is None \
            else decoded.when(schema_id == writer_id, this)
    well_framed = (F.length(column) > HEADER_BYTES) & (F.substring(column, 1, 1) == F.unhex(F.lit(f"{MAGIC_BYTE:02X}")))
    return F.when(well_framed, decoded)
