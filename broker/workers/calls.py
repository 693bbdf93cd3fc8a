"""How a worker answers the other workers' calls (broker/workers/link.py): `forward`, a client's
request to run here as the worker holding the connection would; `read` and `wait`, for a Fetch
served by another worker (fetch.py); `markers` and `verify`, for transactions (transactions.py);
`replicated` and `synced`, the waits for the in-sync replicas and for the disk of partitions owned
here; `log_offsets` and `share_leadership`, for worker 0's share groups (broker/share_groups.py);
`schema_subjects`, the subjects of a schema id, at the worker owning `_schemas`; `end_offsets`, for the
console's rate and lag samples (console/sampler.py)."""

from __future__ import annotations

import logging

from kafka_wire.error_responses import error_response
from kafka_wire.errors import ErrorCode
from kafka_wire.framing import encode_response_frame
from kafka_wire.headers import decode_request_header
from log.partition_log import LATEST_TIMESTAMP

from ..handlers import HANDLERS
from ..handlers.closing import CloseConnection
from ..server import RequestContext
from .fetch import serve_reads, serve_wait
from .runtime import CLOSE
from .transactions import serve_markers, serve_verify

logger = logging.getLogger("kafka_wire.workers")


async def answer(broker, op: str, meta, body, fds: list[int]):
    if op == "forward":
        return await serve_forward(broker, meta, body)
    if op == "read":
        return serve_reads(broker, meta)
    if op == "wait":
        return await serve_wait(broker, meta)
    if op == "markers":
        return await serve_markers(broker, meta)
    if op == "verify":
        return await serve_verify(broker, meta)
    if op == "replicated":  # a cluster broker's acks=-1 wait, at the partitions' owner
        parts, timeout_ms = meta
        errors = await broker.leadership.await_replication([tuple(tp) for tp in parts], timeout_ms)
        return [int(errors[tuple(tp)]) for tp in parts], b"", ()
    if op == "synced":  # log.flush.on.ack's wait, at the partitions' owner
        parts = [tuple(tp) for tp in meta]
        errors = await broker.synced_here(parts)
        return [int(errors[tp]) for tp in parts], b"", ()
    if op == "schema_subjects":  # schema id validation at another worker (broker/schema_validation.py)
        return await broker.schema_subjects(meta), b"", ()
    if op == "log_offsets":  # a share-partition's start, at the partition's owner (broker/share_groups.py)
        from ..share_groups import local_log_offsets

        return [local_log_offsets(broker, topic, partition, timestamp) for topic, partition, timestamp in meta], b"", ()
    if op == "share_leadership":  # whether this broker leads partitions owned here, for worker 0's share groups
        from ..share_groups import local_leadership

        return [local_leadership(broker, topic, partition) for topic, partition in meta], b"", ()
    if op == "open":  # (the refresh that serve() made opened them)
        return broker.unopened_partitions(meta), b"", ()
    if op == "end_offsets":  # the console's rate and lag samples (console/sampler.py), at the owner
        return [end_offset(broker, topic, partition) for topic, partition in meta], b"", ()
    if op == "stats":
        from ..metrics_endpoint import worker_snapshot

        return worker_snapshot(broker), b"", ()
    raise ValueError(f"unknown worker call {op!r}")


def end_offset(broker, topic: str, partition: int) -> int | None:
    """A partition's log end offset as ListOffsets' latest gives it (the high watermark), None where
    this broker cannot answer for it (not its leader, unknown, offline)."""
    error, offset, _, _ = broker.list_offset(topic, partition, LATEST_TIMESTAMP, read_committed=False)
    return offset if error == ErrorCode.NONE and offset >= 0 else None


async def serve_forward(broker, meta, frame: bytearray):
    """Run a request another worker received, with its client's context; its response frame."""
    api_key, version, correlation_id, client_id, listener, peer, connection_id, principal, extra, records_at = meta
    handler = HANDLERS[api_key]
    api = handler.api
    header, pos = decode_request_header(frame, api.is_flexible(version))
    request = api.request.decode(frame, version, pos, exact=False)
    if records_at is not None:  # a Produce part whose batches lie in the caller's region
        _place_records(request, broker.workers.regions[records_at[0]], records_at[1])
    ctx = RequestContext(api_key, version, correlation_id, client_id, listener, tuple(peer), connection_id,
                         principal, dict(extra))
    try:
        response = await handler.handle(broker, ctx, request)
    except CloseConnection:  # the handler closes the client's connection, as Kafka does
        return CLOSE, b"", ()
    except Exception:  # noqa: BLE001 - answered as KafkaApis answers a failed request
        # Worded as the server logs a failed handler (one line per failure, whichever worker ran it).
        logging.getLogger("kafka_wire.server").exception(
            "error handling %s v%d (correlation id %d, client %s)", api.name, version, correlation_id, client_id)
        response = error_response(api, version, request)
        if response is None:
            raise
    if response is None:
        return None, b"", ()
    parts = encode_response_frame(api, version, correlation_id, response)
    return True, _join(parts), ()


def _place_records(request, region, places: list) -> None:
    """Each partition's batches, read (and patched by the log) where they lie in `region`."""
    places = iter(places)
    for topic in request.topic_data:
        for partition in topic.partition_data:
            place = next(places)
            if place is not None:
                offset, size = place
                partition.records = region[offset : offset + size]


def _join(parts: list) -> bytes:
    out = bytearray()
    for part in parts:
        if hasattr(part, "read_bytes"):
            out += part.read_bytes()
            part.close()
        else:
            out += part
    return bytes(out)


