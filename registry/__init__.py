"""The Schema Registry (`schema.registry.port`): Confluent's Schema Registry REST API served from the
broker process, its state in the broker's own compacted topic `_schemas`.

`kafka-wire serve` imports this package only when `schema.registry.port` is set, so a broker without
the registry starts as before; with several worker processes worker 0 serves it (it owns `_schemas`,
broker/workers/ownership.py). The pieces: `server` (HTTP/1.1 in the broker's event loop), `api`
(Confluent's paths, answers and error codes), `store` (the `_schemas` records, their replay into the
registry's state, appends through the broker's internal append path as the group coordinator writes
`__consumer_offsets`), `schemas` (parsing and compatibility of Avro and JSON Schema), `contexts`
(Confluent's `:.ctx:subject` qualified subjects and their per-context ids and settings), `cluster` (in a
ZooKeeper cluster every broker's registry serves reads from its replica and forwards writes to the
registry of the leader of `_schemas`-0), `exporters` (Confluent's Schema Linking: `/exporters`, copying
schemas to another registry, kept in the compacted topic `_schema_exporters`).
"""

from __future__ import annotations


async def start_registry(broker, host: str, port: int):
    """Serve the Schema Registry of this broker on host:port (port 0 picks a free one); returns the
    running RegistryServer (its `address`, and `stop()`)."""
    from .server import RegistryServer

    server = RegistryServer(broker)
    await server.start(host, port)
    broker.schema_registry = server  # what the console shows (console/registry_views.py)
    return server
