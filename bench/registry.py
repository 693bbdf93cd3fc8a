"""The Schema Registry (issue 28): its API's rates, Avro through Confluent's serializers against plain
bytes, and what the registry costs a broker that has it on (validation off), in one run.

    .venv/bin/python -m bench.registry [--rounds 3] [--lookups 20000] [--registrations 300] [--records 50000]

Each round, alternating the order of the two settings:
- start-to-ready (seconds until ApiVersions is answered, bench/brokers.py) of a kafka-wire broker
  with `schema.registry.port` set and without it, on an empty data directory (the registry's
  modules load on a thread once the listeners are open, cli/commands/serve.py);
- produce 1 KiB records at acks=1 with rdkafka_performance (bench.tools) against each of the two
  brokers: the registry must add nothing to the produce path when validation is off;
- on the broker with the registry: `GET /schemas/ids/{id}` from 4 keep-alive HTTP connections (one
  thread each; the rate is bounded by this Python client as much as by the server), `POST
  /subjects/{s}/versions` of new schemas (each one a durable write to `_schemas`) from one
  connection, and confluent-kafka producing and consuming records of a 10-field Avro record through
  AvroSerializer/AvroDeserializer against the same number of plain-bytes records of the encoded
  size (records/s).
Prints each measurement, then per row the median of the rounds and, for the paired rows, the
ratio.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from testing.broker_process import free_port

from . import tools
from .brokers import OurBroker, scratch_dir
from .admin import create_topic

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
LOOKUP_CONNECTIONS = 4
RECORD_SCHEMA = {"type": "record", "name": "Reading", "namespace": "bench", "fields": [
    {"name": "sensor", "type": "string"}, {"name": "site", "type": "string"},
    {"name": "at_ms", "type": "long"}, {"name": "sequence", "type": "long"},
    {"name": "value", "type": "double"}, {"name": "low", "type": "double"}, {"name": "high", "type": "double"},
    {"name": "unit", "type": "string"}, {"name": "ok", "type": "boolean"},
    {"name": "note", "type": ["null", "string"], "default": None}]}


def _reading(i: int) -> dict:
    return {"sensor": f"sensor-{i % 1000}", "site": f"site-{i % 17}", "at_ms": 1_700_000_000_000 + i,
            "sequence": i, "value": i * 0.5, "low": -40.0, "high": 125.0, "unit": "celsius",
            "ok": i % 7 != 0, "note": None if i % 3 else f"checked {i}"}


class Registry:
    def __init__(self, port: int):
        self.port = port
        self.url = f"http://127.0.0.1:{port}"

    def wait(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.call(http.client.HTTPConnection("127.0.0.1", self.port, timeout=5), "GET", "/subjects")
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @staticmethod
    def call(connection: http.client.HTTPConnection, method: str, path: str, body: dict | None = None) -> object:
        payload = None if body is None else json.dumps(body)
        connection.request(method, path, payload, {"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
        answer = connection.getresponse()
        data = answer.read()
        if answer.status != 200:
            raise RuntimeError(f"{method} {path}: HTTP {answer.status} {data[:200]!r}")
        return json.loads(data)

    def connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)


def registrations_per_s(registry: Registry, count: int, round_no: int) -> tuple[float, list[int]]:
    """Registrations per second of `count` new schemas over 50 subjects, and the ids they got: each
    subject's next version adds a field with a default (compatible under the default BACKWARD
    level, so each registration is also checked against the version before)."""
    connection = registry.connect()
    ids = []
    started = time.perf_counter()
    for i in range(count):
        added = [{"name": f"extra{k}", "type": "long", "default": 0} for k in range(i // 50)]
        schema = {**RECORD_SCHEMA, "fields": [*RECORD_SCHEMA["fields"], *added]}
        ids.append(registry.call(connection, "POST", f"/subjects/bench-{round_no}-{i % 50}-value/versions",
                                 {"schema": json.dumps(schema)})["id"])
    elapsed = time.perf_counter() - started
    connection.close()
    return count / elapsed, ids


def lookups_per_s(registry: Registry, ids: list[int], count: int) -> float:
    per_thread = count // LOOKUP_CONNECTIONS
    errors: list[BaseException] = []

    def look_up(offset: int) -> None:
        connection = registry.connect()
        try:
            for i in range(per_thread):
                registry.call(connection, "GET", f"/schemas/ids/{ids[(offset + i) % len(ids)]}")
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=look_up, args=(n * 7,)) for n in range(LOOKUP_CONNECTIONS)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise errors[0]
    return per_thread * LOOKUP_CONNECTIONS / elapsed


def produce_consume(bootstrap: str, topic: str, values, serialize, deserialize) -> tuple[float, float]:
    """records/s producing `values` through `serialize`, then consuming them through `deserialize`."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1})
    context = SerializationContext(topic, MessageField.VALUE)
    started = time.perf_counter()
    for i, value in enumerate(values):
        while True:
            try:
                producer.produce(topic, serialize(value, context))
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("records left unacknowledged")
    produced = len(values) / (time.perf_counter() - started)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                        "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen, started = 0, None  # timed from the first record: the group's join is not the deserializer's
    deadline = time.perf_counter() + 300
    while seen < len(values):
        if time.perf_counter() > deadline:
            raise RuntimeError(f"consumed {seen} of {len(values)} records of {topic}")
        for message in consumer.consume(1000, timeout=0.2):
            if message.error() is None:
                if started is None:
                    started = time.perf_counter()
                deserialize(message.value(), context)
                seen += 1
    consumed = (len(values) - 1) / max(time.perf_counter() - started, 1e-9)
    consumer.close()
    return produced, consumed


def measure(rounds: int, lookups: int, registrations: int, records: int, produce_count: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}

    def add(row: str, value: float, unit: str) -> None:
        results.setdefault(row, []).append(value)
        print(f"  {row}: {value:,.1f} {unit}", flush=True)

    scratch = scratch_dir()
    for round_no in range(rounds):
        settings = (True, False) if round_no % 2 == 0 else (False, True)
        for with_registry in settings:
            label = "registry on" if with_registry else "registry off"
            print(f"round {round_no + 1}/{rounds}: {label}", flush=True)
            port = free_port()
            broker = OurBroker(scratch / f"r{round_no}-{int(with_registry)}",
                               {"schema.registry.port": str(port)} if with_registry else {})
            add(f"start-to-ready, {label} (s)", broker.start(), "s")
            try:
                create_topic(broker.bootstrap, "plain-produce", 1)
                add(f"produce 1 KiB acks=1, {label} (MB/s)",
                    tools.rdkafka_produce(broker.bootstrap, "plain-produce", produce_count, 1024, 1)["MB/s"], "MB/s")
                if not with_registry:
                    continue
                registry = Registry(port)
                registry.wait()
                rate, ids = registrations_per_s(registry, registrations, round_no)
                add("POST /subjects/{s}/versions (registrations/s)", rate, "/s")
                add("GET /schemas/ids/{id} (lookups/s)", lookups_per_s(registry, ids, lookups), "/s")
                client = SchemaRegistryClient({"url": registry.url})
                serializer = AvroSerializer(client, json.dumps(RECORD_SCHEMA))
                deserializer = AvroDeserializer(client)
                values = [_reading(i) for i in range(records)]
                sample = serializer(values[0], SerializationContext("avro", MessageField.VALUE))
                plain = [bytes(len(sample)) for _ in range(records)]
                for topic in ("avro", "plain"):
                    create_topic(broker.bootstrap, topic, 1)
                avro_rates = produce_consume(broker.bootstrap, "avro", values, serializer, deserializer)
                plain_rates = produce_consume(broker.bootstrap, "plain", plain, lambda v, c: v, lambda v, c: v)
                add(f"Avro produce through AvroSerializer, {len(sample)} B (records/s)", avro_rates[0], "/s")
                add(f"plain produce, {len(sample)} B (records/s)", plain_rates[0], "/s")
                add(f"Avro consume through AvroDeserializer, {len(sample)} B (records/s)", avro_rates[1], "/s")
                add(f"plain consume, {len(sample)} B (records/s)", plain_rates[1], "/s")
            finally:
                broker.stop()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lookups", type=int, default=20000)
    parser.add_argument("--registrations", type=int, default=300)
    parser.add_argument("--records", type=int, default=50000, help="Avro and plain records per round")
    parser.add_argument("--produce-count", type=int, default=200000, help="1 KiB records of the produce rows")
    args = parser.parse_args(argv)
    results = measure(args.rounds, args.lookups, args.registrations, args.records, args.produce_count)
    print("\n| row | median of the rounds |\n| --- | ---: |")
    for row, values in results.items():
        print(f"| {row} | {statistics.median(values):,.2f} |")
    pairs = [("start-to-ready, registry on (s)", "start-to-ready, registry off (s)", "start-to-ready on/off"),
             ("produce 1 KiB acks=1, registry on (MB/s)", "produce 1 KiB acks=1, registry off (MB/s)",
              "produce on/off")]
    avro = [row for row in results if row.startswith("Avro")]
    plain = [row for row in results if row.startswith("plain")]
    pairs += [(a, p, f"{a.split(' through')[0]} / plain") for a, p in zip(avro, plain)]
    print("\n| ratio | value |\n| --- | ---: |")
    for first, second, name in pairs:
        if first in results and second in results:
            print(f"| {name} | {statistics.median(results[first]) / statistics.median(results[second]):.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
