"""Kafka's error answer to a request the broker failed to handle: one error code for everything asked.

When a handler fails unexpectedly Kafka does not drop the connection: KafkaApis.handle catches
the exception and answers with the request's `getErrorResponse(throttle, e)`, which echoes every
topic/partition/group/resource entry of the request with the error code (UNKNOWN_SERVER_ERROR for
an unexpected exception), or sets the top-level error code where the API has one. Each API
builds that answer its own way (which entries it echoes, which fields it sets to -1, which
carry a message), so each API's shape is written down here as data, from the request classes of
apache/kafka (clients/.../common/requests/*Request.java, getErrorResponse); one builder turns
a shape, a decoded request and an error into a response that encodes with the API's schema.

A shape lists the response's fields to fill (`fill`) and its arrays to build from a request
array (`Each`: one response entry per request entry, copying the entry's identity fields). A
fill value is a constant, ERROR (the error code), MESSAGE (Kafka's ApiError message: null for
UNKNOWN_SERVER_ERROR, so nothing about our failure reaches the client), DESCRIPTION (Kafka's
default text of the error, for the APIs that send `error.message()`), or a function of
(request, version). Fields a version lacks are ignored by the encoder.

`error_response` returns None where Kafka's getErrorResponse does (Produce with acks=0): Kafka
then closes the connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import ErrorCode
from .schema import Api, parse_versions

ERROR = object()
MESSAGE = object()
DESCRIPTION = object()
ITEM = "."  # in `copy`: the request entry itself (arrays of strings or ints)

# Kafka's Node.noNode(), RecordBatch.NO_PRODUCER_ID/EPOCH, AUTHORIZED_OPERATIONS_OMITTED.
NO_NODE = {"node_id": -1, "host": "", "port": -1}
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


@dataclass(frozen=True)
class Each:
    """Response array `into` gets one entry per entry of the request's `source` (a field name of
    the enclosing request struct, or a function of it), in the request's order."""

    into: str
    source: str | Callable[[Any], list]
    copy: dict[str, str | Callable[[Any], Any]] = field(default_factory=dict)
    fill: dict[str, Any] = field(default_factory=dict)
    inner: tuple[Each, ...] = ()
    versions: str = "0+"


@dataclass(frozen=True)
class Shape:
    """How one API answers an error: top-level fields, and arrays echoing the request."""

    fill: dict[str, Any] = field(default_factory=dict)
    entries: tuple[Each, ...] = ()
    answers: Callable[[Any], bool] | None = None  # False: Kafka has no answer (closes)


def _same(*names: str) -> dict[str, str]:
    return {name: name for name in names}


TOP_ERROR = Shape(fill={"error_code": ERROR})
TOP_ERROR_AND_MESSAGE = Shape(fill={"error_code": ERROR, "error_message": MESSAGE})


def _topics_partitions(topics: str, partitions: str, *, topic_copy: dict, partition_copy: dict,
                       partition_fill: dict, into_topics: str | None = None,
                       into_partitions: str | None = None, versions: str = "0+") -> Each:
    return Each(into_topics or topics, topics, copy=topic_copy, versions=versions, inner=(
        Each(into_partitions or partitions, partitions, copy=partition_copy, fill=partition_fill),))


SHAPES: dict[str, Shape] = {
    "Produce": Shape(
        answers=lambda request: request.acks != 0,
        entries=(_topics_partitions(
            "topic_data", "partition_data", into_topics="responses", into_partitions="partition_responses",
            topic_copy=_same("name", "topic_id"), partition_copy=_same("index"),
            partition_fill={"error_code": ERROR, "base_offset": -1, "log_append_time_ms": -1,
                            "log_start_offset": -1, "error_message": MESSAGE}),)),
    # v13+: only the top-level error; before, every partition too (FetchRequest.getErrorResponse).
    "Fetch": Shape(
        fill={"error_code": ERROR, "session_id": lambda request, version: request.session_id},
        entries=(_topics_partitions(
            "topics", "partitions", into_topics="responses", versions="0-12",
            topic_copy=_same("topic", "topic_id"), partition_copy={"partition_index": "partition"},
            partition_fill={"error_code": ERROR, "high_watermark": -1}),)),
    "ListOffsets": Shape(entries=(_topics_partitions(
        "topics", "partitions", topic_copy=_same("name"), partition_copy=_same("partition_index"),
        partition_fill={"error_code": ERROR, "offset": -1, "timestamp": -1}),)),
    # Every topic asked for (none for "all topics"), no top-level error even at v13.
    "Metadata": Shape(entries=(Each(
        "topics", "topics", copy={"name": lambda topic: topic.name or "", "topic_id": "topic_id"},
        fill={"error_code": ERROR, "is_internal": False, "partitions": []}),)),
    "OffsetCommit": Shape(entries=(_topics_partitions(
        "topics", "partitions", topic_copy=_same("name", "topic_id"), partition_copy=_same("partition_index"),
        partition_fill={"error_code": ERROR}),)),
    # v1: every partition; v2-7: the top-level error only; v8+: every group.
    "OffsetFetch": Shape(
        fill={"error_code": ERROR},
        entries=(
            Each("topics", "topics", copy=_same("name"), versions="0-1", inner=(
                Each("partitions", "partition_indexes", copy={"partition_index": ITEM},
                     fill={"committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
                           "error_code": ERROR}),)),
            Each("groups", "groups", copy=_same("group_id"), versions="8+",
                 fill={"error_code": ERROR, "topics": []}),
        )),
    "FindCoordinator": Shape(
        fill={"error_code": ERROR, "error_message": DESCRIPTION, **NO_NODE},
        entries=(Each("coordinators", "coordinator_keys", copy={"key": ITEM}, versions="4+",
                      fill={"error_code": ERROR, "error_message": DESCRIPTION, **NO_NODE}),)),
    "JoinGroup": Shape(fill={
        "error_code": ERROR, "generation_id": -1, "leader": "", "member_id": "", "members": [],
        "protocol_type": lambda request, version: None,
        "protocol_name": lambda request, version: None if version >= 7 else ""}),
    "Heartbeat": TOP_ERROR,
    "LeaveGroup": Shape(fill={"error_code": ERROR, "members": []}),
    "SyncGroup": Shape(fill={"error_code": ERROR, "assignment": b"", "protocol_type": None, "protocol_name": None}),
    "DescribeGroups": Shape(entries=(Each(
        "groups", "groups", copy={"group_id": ITEM},
        fill={"error_code": ERROR, "group_state": "", "protocol_type": "", "protocol_data": "",
              "members": [], "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}),)),
    "ListGroups": Shape(fill={"error_code": ERROR, "groups": []}),
    "SaslHandshake": Shape(fill={"error_code": ERROR, "mechanisms": []}),
    "ApiVersions": Shape(fill={"error_code": ERROR, "api_keys": []}),
    "CreateTopics": Shape(entries=(Each(
        "topics", "topics", copy=_same("name"), fill={"error_code": ERROR, "error_message": MESSAGE}),)),
    # v6 names topics (or ids); before, a list of names.
    "DeleteTopics": Shape(entries=(
        Each("responses", "topics", copy=_same("name", "topic_id"), fill={"error_code": ERROR}, versions="6+"),
        Each("responses", "topic_names", copy={"name": ITEM}, fill={"error_code": ERROR}, versions="0-5"),
    )),
    "DeleteRecords": Shape(entries=(_topics_partitions(
        "topics", "partitions", topic_copy=_same("name"), partition_copy=_same("partition_index"),
        partition_fill={"error_code": ERROR, "low_watermark": -1}),)),
    "InitProducerId": Shape(fill={"error_code": ERROR, "producer_id": -1, "producer_epoch": -1}),
    "OffsetForLeaderEpoch": Shape(entries=(_topics_partitions(
        "topics", "partitions", topic_copy=_same("topic"), partition_copy=_same("partition"),
        partition_fill={"error_code": ERROR, "leader_epoch": -1, "end_offset": -1}),)),
    # v4+ (the broker-to-broker batched form): the top-level error; before, every partition.
    "AddPartitionsToTxn": Shape(
        fill={"error_code": ERROR},
        entries=(Each("results_by_topic_v3_and_below", "v3_and_below_topics", copy=_same("name"),
                      versions="0-3", inner=(
                          Each("results_by_partition", "partitions", copy={"partition_index": ITEM},
                               fill={"partition_error_code": ERROR}),)),)),
    "AddOffsetsToTxn": TOP_ERROR,
    "EndTxn": TOP_ERROR,
    "WriteTxnMarkers": Shape(entries=(Each("markers", "markers", copy=_same("producer_id"), inner=(
        Each("topics", "topics", copy=_same("name"), inner=(
            Each("partitions", "partition_indexes", copy={"partition_index": ITEM},
                 fill={"error_code": ERROR}),)),)),)),
    "TxnOffsetCommit": Shape(entries=(_topics_partitions(
        "topics", "partitions", topic_copy=_same("name"), partition_copy=_same("partition_index"),
        partition_fill={"error_code": ERROR}),)),
    "DescribeAcls": Shape(fill={"error_code": ERROR, "error_message": MESSAGE, "resources": []}),
    "CreateAcls": Shape(entries=(Each("results", "creations",
                                      fill={"error_code": ERROR, "error_message": MESSAGE}),)),
    "DeleteAcls": Shape(entries=(Each("filter_results", "filters",
                                      fill={"error_code": ERROR, "error_message": MESSAGE, "matching_acls": []}),)),
    "DescribeConfigs": Shape(entries=(Each(
        "results", "resources", copy=_same("resource_type", "resource_name"),
        fill={"error_code": ERROR, "error_message": DESCRIPTION, "configs": []}),)),
    "AlterConfigs": Shape(entries=(Each(
        "responses", "resources", copy=_same("resource_type", "resource_name"),
        fill={"error_code": ERROR, "error_message": MESSAGE}),)),
    # One result per topic of every log dir asked about.
    "AlterReplicaLogDirs": Shape(entries=(Each(
        "results", lambda request: [topic for log_dir in request.dirs for topic in log_dir.topics],
        copy={"topic_name": "name"}, inner=(
            Each("partitions", "partitions", copy={"partition_index": ITEM}, fill={"error_code": ERROR}),)),)),
    "DescribeLogDirs": Shape(fill={"error_code": ERROR, "results": []}),
    "SaslAuthenticate": Shape(fill={"error_code": ERROR, "error_message": MESSAGE, "auth_bytes": b""}),
    "CreatePartitions": Shape(entries=(Each(
        "results", "topics", copy=_same("name"), fill={"error_code": ERROR, "error_message": MESSAGE}),)),
    # CreateDelegationTokenResponse.prepareResponse with KafkaPrincipal.ANONYMOUS as owner and requester.
    "CreateDelegationToken": Shape(fill={
        "error_code": ERROR, "principal_type": "User", "principal_name": "ANONYMOUS",
        "token_requester_principal_type": "User", "token_requester_principal_name": "ANONYMOUS",
        "issue_timestamp_ms": -1, "expiry_timestamp_ms": -1, "max_timestamp_ms": -1, "token_id": "", "hmac": b""}),
    "RenewDelegationToken": TOP_ERROR,
    "ExpireDelegationToken": TOP_ERROR,
    "DescribeDelegationToken": Shape(fill={"error_code": ERROR, "tokens": []}),
    "DeleteGroups": Shape(entries=(Each("results", "groups_names", copy={"group_id": ITEM},
                                        fill={"error_code": ERROR}),)),
    "ElectLeaders": Shape(
        fill={"error_code": ERROR},
        entries=(Each("replica_election_results", "topic_partitions", copy=_same("topic"), inner=(
            Each("partition_result", "partitions", copy={"partition_id": ITEM},
                 fill={"error_code": ERROR, "error_message": MESSAGE}),)),)),
    "IncrementalAlterConfigs": Shape(entries=(Each(
        "responses", "resources", copy=_same("resource_type", "resource_name"),
        fill={"error_code": ERROR, "error_message": MESSAGE}),)),
    "AlterPartitionReassignments": Shape(
        fill={"error_code": ERROR, "error_message": MESSAGE},
        entries=(_topics_partitions(
            "topics", "partitions", into_topics="responses", topic_copy=_same("name"),
            partition_copy=_same("partition_index"),
            partition_fill={"error_code": ERROR, "error_message": MESSAGE}),)),
    # The partitions asked about are echoed without an error of their own.
    "ListPartitionReassignments": Shape(
        fill={"error_code": ERROR, "error_message": MESSAGE},
        entries=(Each("topics", "topics", copy=_same("name"), inner=(
            Each("partitions", "partition_indexes", copy={"partition_index": ITEM}),)),)),
    "OffsetDelete": Shape(fill={"error_code": ERROR, "topics": []}),
    "DescribeClientQuotas": Shape(fill={"error_code": ERROR, "error_message": MESSAGE, "entries": None}),
    "AlterClientQuotas": Shape(entries=(Each(
        "entries", "entries", fill={"error_code": ERROR, "error_message": DESCRIPTION}, inner=(
            Each("entity", "entity", copy=_same("entity_type", "entity_name")),)),)),
    # One result per user asked about, its name left empty (as Kafka leaves it).
    "DescribeUserScramCredentials": Shape(
        fill={"error_code": ERROR, "error_message": MESSAGE},
        entries=(Each("results", "users", fill={"error_code": ERROR, "error_message": MESSAGE}),)),
    # One result per distinct user of the deletions and upsertions, sorted.
    "AlterUserScramCredentials": Shape(entries=(Each(
        "results", lambda request: sorted({d.name for d in request.deletions} | {u.name for u in request.upsertions}),
        copy={"user": ITEM}, fill={"error_code": ERROR, "error_message": MESSAGE}),)),
    "UpdateFeatures": Shape(fill={"error_code": ERROR, "error_message": MESSAGE, "results": []}),
    "DescribeCluster": TOP_ERROR_AND_MESSAGE,
    # DescribeQuorumRequest.getTopLevelErrorResponse: the error and its default text, no topics.
    "DescribeQuorum": Shape(fill={"error_code": ERROR, "error_message": DESCRIPTION, "topics": [], "nodes": []}),
    "DescribeProducers": Shape(entries=(Each("topics", "topics", copy=_same("name"), inner=(
        Each("partitions", "partition_indexes", copy={"partition_index": ITEM}, fill={"error_code": ERROR}),)),)),
    "DescribeTransactions": Shape(entries=(Each(
        "transaction_states", "transactional_ids", copy={"transactional_id": ITEM}, fill={"error_code": ERROR}),)),
    "ListTransactions": TOP_ERROR,
    "ConsumerGroupHeartbeat": TOP_ERROR,
    "ConsumerGroupDescribe": Shape(entries=(Each(
        "groups", "group_ids", copy={"group_id": ITEM}, fill={"error_code": ERROR}),)),
    "ListConfigResources": TOP_ERROR,
    # Share groups (KIP-932): Share*Request.getErrorResponse.
    "ShareGroupHeartbeat": TOP_ERROR,
    "ShareGroupDescribe": Shape(entries=(Each(
        "groups", "group_ids", copy={"group_id": ITEM}, fill={"error_code": ERROR}),)),
    "ShareFetch": Shape(fill={"error_code": ERROR, "responses": [], "node_endpoints": []}),
    "ShareAcknowledge": Shape(fill={"error_code": ERROR, "responses": [], "node_endpoints": []}),
    "DescribeShareGroupOffsets": Shape(entries=(Each(
        "groups", "groups", copy=_same("group_id"), fill={"error_code": ERROR, "error_message": MESSAGE, "topics": []}),)),
    "AlterShareGroupOffsets": TOP_ERROR_AND_MESSAGE,
    "DeleteShareGroupOffsets": TOP_ERROR_AND_MESSAGE,
    # The share coordinator's state APIs: each partition of the request answers the error.
    **{name: Shape(entries=(_topics_partitions(
        "topics", "partitions", topic_copy=_same("topic_id"), partition_copy=_same("partition"),
        partition_fill={"error_code": ERROR, "error_message": MESSAGE}, into_topics="results"),))
       for name in ("InitializeShareGroupState", "ReadShareGroupState", "WriteShareGroupState",
                    "DeleteShareGroupState", "ReadShareGroupStateSummary")},
    # Streams groups (KIP-1071): StreamsGroup*Request.getErrorResponse.
    "StreamsGroupHeartbeat": TOP_ERROR,
    "StreamsGroupDescribe": Shape(entries=(Each(
        "groups", "group_ids", copy={"group_id": ITEM}, fill={"error_code": ERROR}),)),
    "DescribeTopicPartitions": Shape(entries=(Each(
        "topics", "topics", copy=_same("name"), fill={"error_code": ERROR, "is_internal": False, "partitions": []}),)),
}

# An API without a shape of its own: the top-level error code (and message), where it has them.
DEFAULT_SHAPE = TOP_ERROR_AND_MESSAGE


def error_response(api: Api, version: int, request, error: int = ErrorCode.UNKNOWN_SERVER_ERROR,
                   message: str | None = None) -> dict | None:
    """The response Kafka sends for `request` when handling it failed with `error`, as a dict the
    response schema encodes; None where Kafka sends nothing and closes the connection.

    `message` is the error message for the fields that carry Kafka's ApiError message (Kafka
    sends none for UNKNOWN_SERVER_ERROR, so leave it None for an unexpected exception)."""
    shape = SHAPES.get(api.name, DEFAULT_SHAPE)
    if shape.answers is not None and not shape.answers(request):
        return None
    code = ErrorCode.from_code(int(error))
    values = {ERROR: int(error), MESSAGE: message, DESCRIPTION: code.message or None}
    return _build(shape.fill, shape.entries, request, request, version, values)


def _build(fill: dict, entries: tuple[Each, ...], source, request, version: int, values: dict) -> dict:
    out = {}
    for name, value in fill.items():
        out[name] = _value(value, request, version, values)
    for each in entries:
        lo, hi = parse_versions(each.versions)
        if not lo <= version <= hi:
            continue
        items = each.source(source) if callable(each.source) else getattr(source, each.source, None)
        built = []
        for item in items or ():
            entry = {}
            for name, origin in each.copy.items():
                if origin == ITEM:
                    entry[name] = item
                elif callable(origin):
                    entry[name] = origin(item)
                else:
                    entry[name] = getattr(item, origin)
            entry.update(_build(each.fill, each.inner, item, request, version, values))
            built.append(entry)
        out[each.into] = built
    return out


def _value(value, request, version: int, values: dict):
    if value is ERROR or value is MESSAGE or value is DESCRIPTION:
        return values[value]
    if callable(value):
        return value(request, version)
    if isinstance(value, list):
        return list(value)
    return value
