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
from kafka_wire.framing import SIZE_BYTES, decode_response_frame, encode_request_frame, encode_request_frame_parts

from .ownership import PRIMARY

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE, FETCH = 18, 17, 36, 1
PRODUCE, LIST_OFFSETS, DELETE_RECORDS, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_PRODUCERS = 0, 2, 21, 23, 61

DESCRIBE_LOG_DIRS = 35
ALTER_REPLICA_LOG_DIRS = 34

WRITE_TXN_MARKERS = 27

# Served where the connection is: WriteTxnMarkers sends each marker to its partition's owner itself.
LOCAL = frozenset({API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE, FETCH, WRITE_TXN_MARKERS})
# Asked of every worker, the answers put together: each describes the partitions it owns.
FAN_OUT = frozenset({DESCRIBE_LOG_DIRS})


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
    if api_key in LOCAL or api_key in SPLITS or api_key in FAN_OUT or api_key == ALTER_REPLICA_LOG_DIRS:
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
    if api_key == ALTER_REPLICA_LOG_DIRS:
        return _split_log_dir_moves(broker, request)
    if api_key == PRODUCE:
        from ..handlers.p00_produce import _each_partition_once, _has_transactional_batch

        # What Produce decides for the whole request comes first: a partition named twice keeps
        # its first place and its last batch; a transactional batch without a transactional id
        # refuses every partition (one worker answers all, appending nothing).
        _each_partition_once(request, version)
        if request.transactional_id is None and _has_transactional_batch(request):
            return None
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


def _split_log_dir_moves(broker, request) -> dict[int, object] | None:
    """AlterReplicaLogDirs per owner: each keeps the dirs, with the partitions it owns."""
    workers = broker.workers
    parts: dict[int, list] = {}
    for directory in request.dirs:
        pieces: dict[int, list] = {}
        for topic in directory.topics:
            by_owner: dict[int, list] = {}
            for partition in topic.partitions:
                by_owner.setdefault(workers.owner(topic.name, partition), []).append(partition)
            for owner, partitions in by_owner.items():
                piece = copy.copy(topic)
                piece.partitions = partitions
                pieces.setdefault(owner, []).append(piece)
        for owner, topics in pieces.items():
            moved = copy.copy(directory)
            moved.topics = topics
            parts.setdefault(owner, []).append(moved)
    if not parts or set(parts) == {workers.index}:
        return None
    requests = {}
    for owner, dirs in parts.items():
        part = copy.copy(request)
        part.dirs = dirs
        requests[owner] = part
    return requests


def _merge_log_dir_moves(request, answers: dict[int, object]) -> dict:
    """The owners' AlterReplicaLogDirs answers in the order one process gives: each partition once,
    where it was last named, grouped by topic in first-seen order."""
    errors = {}
    for answer in answers.values():
        if isinstance(answer, BaseException):
            continue
        for topic in _get(answer, "results"):
            for partition in _get(topic, "partitions"):
                errors[(_get(topic, "topic_name"), _get(partition, "partition_index"))] = _get(partition, "error_code")
    order: dict[tuple, None] = {}
    for directory in request.dirs:
        for topic in directory.topics:
            for partition in topic.partitions:
                order.pop((topic.name, partition), None)
                order[(topic.name, partition)] = None
    by_topic: dict[str, list] = {}
    for topic, partition in order:
        error = errors.get((topic, partition), int(ErrorCode.KAFKA_STORAGE_ERROR))
        by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": error})
    return {"throttle_time_ms": 0, "results": [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()]}


def served(broker, handler, ctx, request, frame=None):
    """The coroutine that answers a request on a broker of several workers: this worker's handler,
    another worker's (the frame handed over; encoded from the request when none is given), the
    owners' parts put together, or every worker's answers (DescribeLogDirs)."""
    workers = broker.workers
    target = destination(ctx.api_key, workers.index)
    if target is None and (ctx.api_key in SPLITS or ctx.api_key == ALTER_REPLICA_LOG_DIRS):
        parts = split(broker, ctx.api_key, ctx.api_version, request)
        if parts is not None:
            if len(parts) > 1:
                return run_split(broker, handler, ctx, request, parts)
            (target,) = parts
    if frame is None and (target is not None or ctx.api_key in FAN_OUT):
        frame = memoryview(encode_request_frame(handler.api, ctx.api_version, ctx.correlation_id, ctx.client_id,
                                                request))[SIZE_BYTES:]
    if target is None:
        if ctx.api_key in FAN_OUT:
            return run_fan_out(broker, handler, ctx, request, frame)
        return handler.handle(broker, ctx, request)
    if ctx.api_key == PRODUCE and request.acks != 0 and request.transactional_id is None:
        # Handed to its owner as a whole when the call starts, which appends what it gets in that
        # order (no wait before a non-transactional append): the connection may start its next
        # Produce while this one waits (broker/server.py). A split one is not pipelined: its parts
        # go out from tasks, which a later request's whole hand-over would overtake.
        ctx.appended = True
    return workers.forward(target, ctx, frame)


def decoded(api, ctx, response):
    """A response as the handler's would be: another worker's frame decoded."""
    if response is None or not hasattr(response, "parts"):
        return response
    return decode_response_frame(api, ctx.api_version, memoryview(response.parts[0])[SIZE_BYTES:],
                                 ctx.correlation_id)


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
    answers = {owner: run.result() for owner, run in runs.items()}  # WorkerGone: the connection closes
    acks_zero = ctx.api_key == PRODUCE and request.acks == 0
    if acks_zero:
        return None
    if ctx.api_key == ALTER_REPLICA_LOG_DIRS:
        return _merge_log_dir_moves(request, answers)
    return merge(broker, ctx.api_key, version, request, parts, answers)


class _Uncopied:
    """Record data encoded as a part of its own (kafka_wire's RECORDS encodes bytes-likes inline)."""

    __slots__ = ("view",)

    def __init__(self, view) -> None:
        self.view = view

    def __len__(self) -> int:
        return len(self.view)


def _records_in_region(workers, part):
    """(the places of a Produce part's batches in this worker's shared region, one per partition
    in request order (None: none or empty), the batches) when every batch lies there (its frame was
    received there, broker/server.py); else None."""
    region = workers.region
    if region is None:
        return None
    places, held = [], []
    for topic in part.topic_data:
        for partition in topic.partition_data:
            records = partition.records
            if records is None or not len(records):
                places.append(None)
                continue
            place = region.place(records)
            if place is None:
                return None
            places.append(place)
            held.append(records)
    return (places, held) if held else None


async def _remote(workers, owner: int, api, ctx, part):
    records_at = held = None
    if ctx.api_key == PRODUCE:
        # The owner reads the batches where the client's frame was received, when it was received
        # in this worker's region: only their places go with the rest of the request, and the call
        # holds them until it is answered. Else they go as they came, without being copied into the
        # encoded request.
        in_region = _records_in_region(workers, part)
        if in_region is not None:
            records_at, held = in_region
        for topic in part.topic_data:
            for partition in topic.partition_data:
                if partition.records is not None and len(partition.records):
                    partition.records = b"" if records_at is not None else _Uncopied(partition.records)
    parts = encode_request_frame_parts(api, ctx.api_version, ctx.correlation_id, ctx.client_id, part)
    parts = [p.view if type(p) is _Uncopied else p for p in parts]
    parts[0] = memoryview(parts[0])[SIZE_BYTES:]
    forwarded = await workers.forward(owner, ctx, parts, records_at, held)
    if forwarded is None:
        return None
    body = forwarded.parts[0]
    return decode_response_frame(api, ctx.api_version, memoryview(body)[SIZE_BYTES:], ctx.correlation_id)


async def run_fan_out(broker, handler, ctx, request, frame):
    """DescribeLogDirs: every worker describes its own partitions; one answer of them all."""
    workers = broker.workers
    api = handler.api
    runs = [asyncio.ensure_future(handler.handle(broker, ctx, request))]
    frame = bytes(frame)
    for worker in workers.links:
        runs.append(asyncio.ensure_future(_forwarded_answer(workers, worker, api, ctx, frame)))
    await asyncio.wait(runs)
    answers = [run.result() for run in runs]  # a worker gone fails the request (UNKNOWN_SERVER_ERROR)
    return merge_log_dirs(answers)


async def _forwarded_answer(workers, worker: int, api, ctx, frame):
    forwarded = await workers.forward(worker, ctx, frame)
    return decode_response_frame(api, ctx.api_version, memoryview(forwarded.parts[0])[SIZE_BYTES:],
                                 ctx.correlation_id)


def merge_log_dirs(answers: list) -> dict:
    """The workers' DescribeLogDirs answers as one: per log dir (listed in the same order by each),
    the union of their partitions, topics by name and partitions by number as one worker lists them."""
    first = answers[0]
    if _get(first, "error_code"):
        return first
    results = []
    for i, result in enumerate(_get(first, "results")):
        same = [_get(answer, "results")[i] for answer in answers]
        failed = next((r for r in same if _get(r, "error_code")), None)
        if failed is not None:
            results.append(failed)
            continue
        by_topic: dict[str, list] = {}
        for r in same:
            for topic in _get(r, "topics"):
                by_topic.setdefault(_get(topic, "name"), []).extend(_get(topic, "partitions"))
        merged = dict(result) if isinstance(result, dict) else {
            name: getattr(result, name) for name in result.__slots__}
        merged["topics"] = [{"name": name, "partitions": sorted(parts, key=lambda p: (
            _get(p, "partition_index"), _get(p, "is_future_key")))} for name, parts in sorted(by_topic.items())]
        results.append(merged)
    return {"throttle_time_ms": 0, "error_code": 0, "results": results}


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
