"""Where a client's request is served when the broker runs several workers.

- Connection-level requests (ApiVersions, SASL) are answered by the worker holding the connection,
  and so is Fetch, whose session lives with the connection (its reads go to the owners,
  broker/workers/fetch.py).
- Requests naming partitions (Produce, ListOffsets, OffsetForLeaderEpoch, DeleteRecords,
  DescribeProducers) go to the partitions' owners: when one worker owns them all, the frame is
  handed to it as the client sent it (no re-encoding; the owner's answer goes back as its bytes);
  otherwise the request is split per owner, each part keeping its topics and partitions in the
  client's order, the parts run at once, and the answers are put back together in the order of the
  request, as one worker would have answered it.
- Everything else (Metadata, groups, transactions, topic and ACL administration, configs, quotas,
  SCRAM, tokens, features, cluster description) goes to worker 0, which holds the metadata and the
  coordinators, as its frame.

A request handed to another worker carries the client's context (listener, address, principal,
client id, correlation id): the owner authorizes and answers it as the worker holding the
connection would.
"""

from __future__ import annotations

import asyncio
import copy

from kafka_wire.errors import ErrorCode
from kafka_wire.framing import SIZE_BYTES, decode_response_frame, encode_request_frame

from .ownership import PRIMARY

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE, FETCH = 18, 17, 36, 1
PRODUCE, LIST_OFFSETS, DELETE_RECORDS, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_PRODUCERS = 0, 2, 21, 23, 61

LOCAL = frozenset({API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE, FETCH})


class Split:
    """How a request names its partitions and its answer answers them."""

    def __init__(self, topics: str, name: str, partitions: str, index: str | None, answer_topics: str,
                 answer_name: str, answer_partitions: str, answer_index: str) -> None:
        self.topics, self.name, self.partitions, self.index = topics, name, partitions, index
        self.answer_topics, self.answer_name = answer_topics, answer_name
        self.answer_partitions, self.answer_index = answer_partitions, answer_index


SPLITS = {
    PRODUCE: Split("topic_data", "name", "partition_data", "index",
                   "responses", "name", "partition_responses", "index"),
    LIST_OFFSETS: Split("topics", "name", "partitions", "partition_index",
                        "topics", "name", "partitions", "partition_index"),
    DELETE_RECORDS: Split("topics", "name", "partitions", "partition_index",
                          "topics", "name", "partitions", "partition_index"),
    OFFSET_FOR_LEADER_EPOCH: Split("topics", "topic", "partitions", "partition",
                                   "topics", "topic", "partitions", "partition"),
    DESCRIBE_PRODUCERS: Split("topics", "name", "partition_indexes", None,
                              "topics", "name", "partitions", "partition_index"),
}

PRODUCE_TOPIC_IDS_VERSION = 13


def _get(obj, name: str):
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


def destination(api_key: int, index: int) -> int | None:
    """The worker to hand a whole request to without looking inside (None: look, or serve here)."""
    if api_key in LOCAL or api_key in SPLITS:
        return None
    return PRIMARY if index != PRIMARY else None


def _topic_name(broker, api_key: int, version: int, topic) -> str | None:
    if api_key == PRODUCE and version >= PRODUCE_TOPIC_IDS_VERSION:
        meta = broker.metadata.topic_by_id(topic.topic_id)
        return None if meta is None else meta.name
    return getattr(topic, SPLITS[api_key].name)


def split(broker, api_key: int, version: int, request) -> dict[int, object] | None:
    """{owner: the part of the request it owns} when the request's partitions span workers or
    belong to another one; None when this worker owns them all (or the request names none)."""
    spec = SPLITS[api_key]
    workers = broker.workers
    here = workers.index
    parts: dict[int, list] = {}
    for topic in getattr(request, spec.topics):
        name = _topic_name(broker, api_key, version, topic)
        by_owner: dict[int, list] = {}
        for partition in getattr(topic, spec.partitions):
            number = partition if spec.index is None else getattr(partition, spec.index)
            # A topic id not known here is answered here (UNKNOWN_TOPIC_ID), as any worker would.
            owner = here if name is None else workers.owner(name, number)
            by_owner.setdefault(owner, []).append(partition)
        for owner, partitions in by_owner.items():
            piece = copy.copy(topic)
            setattr(piece, spec.partitions, partitions)
            parts.setdefault(owner, []).append(piece)
    if not parts or set(parts) == {here}:
        return None
    requests = {}
    for owner, topics in parts.items():
        part = copy.copy(request)
        setattr(part, spec.topics, topics)
        requests[owner] = part
    return requests


async def run_split(broker, handler, ctx, request, parts: dict[int, object]):
    """Run each owner's part (this worker's with its own handler) and put the answers together."""
    api = handler.api
    version = ctx.api_version
    workers = broker.workers
    runs = {}
    for owner, part in parts.items():
        if owner == workers.index:
            runs[owner] = asyncio.ensure_future(handler.handle(broker, ctx, part))
        else:
            runs[owner] = asyncio.ensure_future(_remote(workers, owner, api, ctx, part))
    await asyncio.wait(runs.values())
    answers = {}
    for owner, run in runs.items():
        try:
            answers[owner] = run.result()
        except Exception as exc:  # noqa: BLE001 - a worker gone fails its part, not the request
            answers[owner] = exc
    acks_zero = ctx.api_key == PRODUCE and request.acks == 0
    if acks_zero:
        return None
    return merge(broker, ctx.api_key, version, request, parts, answers)


async def _remote(workers, owner: int, api, ctx, part):
    frame = encode_request_frame(api, ctx.api_version, ctx.correlation_id, ctx.client_id, part)
    forwarded = await workers.forward(owner, ctx, memoryview(frame)[SIZE_BYTES:])
    if forwarded is None:
        return None
    body = forwarded.parts[0]
    return decode_response_frame(api, ctx.api_version, memoryview(body)[SIZE_BYTES:], ctx.correlation_id)


def merge(broker, api_key: int, version: int, request, parts: dict[int, object], answers: dict[int, object]):
    """One answer from the owners' answers, topics and partitions in the order of the request."""
    spec = SPLITS[api_key]
    found: dict[tuple, list] = {}
    first = None
    throttle = 0
    endpoints = {}
    for owner, answer in answers.items():
        if isinstance(answer, BaseException):
            continue
        if first is None:
            first = answer
        throttle = max(throttle, _get(answer, "throttle_time_ms") or 0)
        if api_key == PRODUCE:
            for endpoint in _get_optional(answer, "node_endpoints") or ():
                endpoints.setdefault(_get(endpoint, "node_id"), endpoint)
        for topic in _get(answer, spec.answer_topics):
            key = _answer_topic_key(api_key, version, topic, spec)
            for partition in _get(topic, spec.answer_partitions):
                found.setdefault((key, _get(partition, spec.answer_index)), []).append(partition)
    topics = []
    for topic in getattr(request, spec.topics):
        key = _request_topic_key(api_key, version, topic, spec)
        entry = None
        for partition in getattr(topic, spec.partitions):
            number = partition if spec.index is None else getattr(partition, spec.index)
            answered = found.get((key, number))
            if answered:
                result = answered.pop(0)
            else:  # its owner failed: the worker is gone
                result = _failed_partition(api_key, number)
            if entry is None:
                entry = _topic_entry(api_key, version, topic, spec)
                topics.append(entry)
            entry[spec.answer_partitions].append(result)
    response = {"throttle_time_ms": throttle, spec.answer_topics: topics}
    if api_key == PRODUCE and endpoints:
        response["node_endpoints"] = list(endpoints.values())
    return response


def _get_optional(obj, name: str):
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _request_topic_key(api_key: int, version: int, topic, spec: Split):
    if api_key == PRODUCE and version >= PRODUCE_TOPIC_IDS_VERSION:
        return topic.topic_id
    return getattr(topic, spec.name)


def _answer_topic_key(api_key: int, version: int, topic, spec: Split):
    if api_key == PRODUCE and version >= PRODUCE_TOPIC_IDS_VERSION:
        return _get(topic, "topic_id")
    return _get(topic, spec.answer_name)


def _topic_entry(api_key: int, version: int, topic, spec: Split) -> dict:
    entry = {spec.answer_name: getattr(topic, spec.name), spec.answer_partitions: []}
    if api_key == PRODUCE:
        entry["topic_id"] = topic.topic_id
    return entry


def _failed_partition(api_key: int, number: int) -> dict:
    """A partition whose owner could not answer (the worker died): a retriable storage error."""
    error = int(ErrorCode.KAFKA_STORAGE_ERROR)
    if api_key == PRODUCE:
        return {"index": number, "error_code": error, "base_offset": -1, "log_append_time_ms": -1,
                "log_start_offset": -1, "record_errors": [], "error_message": None}
    if api_key == OFFSET_FOR_LEADER_EPOCH:
        return {"partition": number, "error_code": error, "leader_epoch": -1, "end_offset": -1}
    if api_key == DELETE_RECORDS:
        return {"partition_index": number, "error_code": error, "low_watermark": -1}
    if api_key == DESCRIBE_PRODUCERS:
        return {"partition_index": number, "error_code": error, "error_message": None, "active_producers": []}
    return {"partition_index": number, "error_code": error, "timestamp": -1, "offset": -1, "leader_epoch": -1,
            "old_style_offsets": []}
