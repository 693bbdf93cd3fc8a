"""Produce (0): validate each partition's batch, append it, answer with its base offset.

In Kafka's order (KafkaApis.handleProduceRequest, ReplicaManager.appendRecords): an unknown
topic or partition, then the request-level record checks (exactly one magic-2 batch per
partition; zstd needs v7+), then acks (INVALID_REQUIRED_ACKS for the partitions still standing),
then internal topics, min.insync.replicas for acks=-1, and the log's own checks (log/validator.py:
the batch's header and CRC, then its records against the topic's config; RecordValidationError
carries the per-record errors of Produce v8+).

A partition named twice is appended and answered once, at its first place, with the batch named
last (KafkaApis collects the request into a map keyed by partition). A request carrying a
transactional batch (control or not, the first batch of any partition) needs a transactional id
with WRITE on it, else every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, before any other
check (KafkaApis.handleProduceRequest's hasTransactionalRecords).

With `log.flush.on.ack` (the default) acks=1 and acks=all are answered once the appended batches
are on stable storage (Broker.await_synced, log/group_commit.py); in a cluster acks=all waits for
that and for the in-sync replicas at once. acks=0 waits for nothing.

acks=0 gets no response; when any partition failed, the connection is closed instead, which is
how Kafka tells an acks=0 producer that something went wrong.

v13 names topics by id (KIP-516): an id this broker does not know is UNKNOWN_TOPIC_ID, before any
other check, as Kafka answers it. From v10 a NOT_LEADER_OR_FOLLOWER partition carries the current
leader and the response that leader's endpoint (KIP-951, broker/leader_hints.py). v11 and v12 are
v10's bytes: TRANSACTION_ABORTABLE and the implicit AddPartitionsToTxn of transaction.version 2
(KIP-890) are the transaction coordinator's; clients use them only once that feature is finalized.
"""

from __future__ import annotations

import asyncio
import logging

from coordinator.transaction_coordinator import TransactionVerificationFailed, produce_operation
from kafka_wire.compression import CompressionType
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.records import InvalidRecordBatch, UnsupportedMagic, iter_batch_headers, read_batch_header
from log.errors import RecordValidationError

from ..client_quotas import produce_throttle_ms
from ..handler_view import BrokerView
from ..leader_hints import LeaderHints
from ..log_errors import error_code_of
from ..metadata import topic_names_of
from ..schema_validation import check_schema_ids, enabled_parts
from ..security.authorizer import AclOperation, ResourceType
from .closing import CloseConnection

API = APIS_BY_NAME["Produce"]

TOPIC_IDS_VERSION = 13
LEADER_HINTS_VERSION = 10

# Kafka lets its own admin tools write to internal topics (AdminUtils.AdminClientId).
ADMIN_CLIENT_ID = "__admin_client"
logger = logging.getLogger(__name__)

# Append failures Kafka answers without logging them (ReplicaManager.appendToLocalLog's expected
# exceptions); it logs every other one (processFailedRecord), InvalidProducerEpoch at INFO.
_NOT_LOGGED = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.MESSAGE_TOO_LARGE,
               ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR}
# Errors Kafka answers without the partition's log start offset (LogAppendInfo.UNKNOWN_LOG_APPEND_INFO).
_WITHOUT_LOG_START = {ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE,
                      ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def _partition_error(index: int, error: ErrorCode, *, log_start_offset: int = -1, message: str | None = None,
                     record_errors: list | None = None) -> dict:
    return {"index": index, "error_code": int(error), "base_offset": -1, "log_append_time_ms": -1,
            "log_start_offset": log_start_offset, "record_errors": record_errors or [],
            "error_message": message}


def whole_batch(records, version: int) -> tuple[ErrorCode | None, object]:
    """Kafka's ProduceRequest.validateRecords: v3+ carries exactly one record batch of magic 2
    per partition (INVALID_RECORD), zstd only from v7 (UNSUPPORTED_COMPRESSION_TYPE). As in
    Kafka, a partial batch at the end is not a batch; bytes after the whole batch are dropped
    (UnifiedLog.trimInvalidBytes). Returns (error, the batch's bytes)."""
    if not records:
        return ErrorCode.INVALID_RECORD, None
    try:
        first = read_batch_header(records)
        whole = list(iter_batch_headers(records))
    except UnsupportedMagic:
        return ErrorCode.INVALID_RECORD, None
    except InvalidRecordBatch:
        return ErrorCode.CORRUPT_MESSAGE, None
    if len(whole) != 1:
        return ErrorCode.INVALID_RECORD, None
    if version < 7 and first.compression == CompressionType.ZSTD:
        return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, None
    size = first.size
    return None, records if size == len(records) else records[:size]


def append_partition(broker: BrokerView, ctx, topic: str, index: int, records, acks: int, transactional_id,
                     verification_guard=None, refused: RecordValidationError | None = None) -> dict:
    """`refused`: the records' schema id validation failed (broker/schema_validation.py): answered
    where the log's own record checks would answer it."""
    meta = broker.metadata.topic(topic)
    if meta.internal and ctx.client_id != ADMIN_CLIENT_ID:
        return _partition_error(index, ErrorCode.INVALID_TOPIC_EXCEPTION)
    leadership = broker.leadership_error(topic, index)
    if leadership != ErrorCode.NONE:  # a cluster's follower: the client refreshes its metadata
        return _partition_error(index, leadership)
    plog = broker.partition_log(topic, index)
    if acks == -1:
        state = broker.metadata.partition_state(topic, index)
        min_isr = plog.config["min.insync.replicas"]
        if len(state.isr) < min_isr:
            return _partition_error(index, ErrorCode.NOT_ENOUGH_REPLICAS, log_start_offset=plog.log_start_offset)
    try:
        if refused is not None:
            raise refused
        # Produce v12+ (a transaction.version 2 producer) adds the partition to its transaction.
        result = broker.append_records(topic, index, records, transactional_id=transactional_id,
                                       transaction_operation=produce_operation(ctx.api_version),
                                       verification_guard=verification_guard)
    except TransactionVerificationFailed as exc:
        # Refused before the log, as Kafka's ReplicaManager does: no log start offset.
        return _partition_error(index, ErrorCode[exc.error_name], message=exc.custom_message)
    except RecordValidationError as exc:
        return _partition_error(index, ErrorCode[exc.error_name], log_start_offset=plog.log_start_offset,
                                message=str(exc),
                                record_errors=[{"batch_index": i, "batch_index_error_message": m}
                                               for i, m in exc.record_errors])
    except Exception as exc:  # the log's errors name the Kafka code they map to
        code = error_code_of(exc)
        if code is None:
            raise
        if code not in _NOT_LOGGED:
            # Which answer a producer got is what a duplicate or a fatal client error is traced to.
            logger.log(logging.INFO if code == ErrorCode.INVALID_PRODUCER_EPOCH else logging.ERROR,
                       "Error processing append operation on partition %s-%d: %s %s", topic, index, code.name, exc)
        return _partition_error(index, code,
                                log_start_offset=-1 if code in _WITHOUT_LOG_START else plog.log_start_offset)
    return {"index": index, "error_code": 0, "base_offset": result.base_offset,
            "log_append_time_ms": result.log_append_time_ms, "log_start_offset": result.log_start_offset,
            "record_errors": [], "error_message": None}


async def transactional_write_check(broker: BrokerView, transactional_id: str, topic: str, index: int, records,
                                    version: int) -> tuple[dict | None, object | None]:
    """In a cluster the transaction coordinator may be another broker: the leader asks it (verify,
    or for Produce v12 add the partition) before the append. (the partition's error entry, or None
    when the write may go on; the verification's guard for the append). On a single node the
    append itself checks (Broker.append_records)."""
    error, message, guard = await broker.transactions.produce_write_error(
        transactional_id, topic, index, records, broker.partition_log(topic, index), produce_operation(version))
    if error == ErrorCode.NONE:
        return None, guard
    return _partition_error(index, error, message=message), None  # refused before the log: no log start offset


async def _await_in_sync_replicas(broker: BrokerView, timeout_ms: int,
                                  responses: list[tuple[str | None, dict]]) -> None:
    """acks=all in a cluster (Kafka's DelayedProduce): answer once the in-sync replicas have the
    appended batches; REQUEST_TIMED_OUT after the request's timeout, NOT_ENOUGH_REPLICAS_AFTER_APPEND
    when the ISR shrank below min.insync.replicas meanwhile, NOT_LEADER_OR_FOLLOWER when
    leadership moved away."""
    appended = {(name, entry["index"]): entry for name, topic in responses
                for entry in topic["partition_responses"] if entry["error_code"] == 0}
    if not appended:
        return
    errors = await broker.await_replication(list(appended), max(timeout_ms, 0))
    for tp, error in errors.items():
        if error != ErrorCode.NONE:
            appended[tp]["error_code"] = int(error)


async def _await_synced(broker: BrokerView, responses: list[tuple[str | None, dict]]) -> None:
    """log.flush.on.ack: answer once the appended batches are on stable storage (one group commit
    for all of them, log/group_commit.py); KAFKA_STORAGE_ERROR where the sync failed."""
    appended = {(name, entry["index"]): entry for name, topic in responses
                for entry in topic["partition_responses"] if entry["error_code"] == 0}
    if not appended:
        return
    errors = await broker.await_synced(list(appended))
    for tp, error in errors.items():
        if error != ErrorCode.NONE:
            appended[tp]["error_code"] = int(error)


def _has_transactional_batch(request) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords: the first batch of some partition is transactional."""
    for topic in request.topic_data:
        for pd in topic.partition_data:
            try:
                if pd.records and read_batch_header(pd.records).is_transactional:
                    return True
            except InvalidRecordBatch:  # UnsupportedMagic too: old formats carry no transactions
                continue
    return False


def _each_partition_once(request, version: int) -> None:
    """A partition named twice keeps its first place and the batch named last; a topic entry left
    without partitions goes."""
    def key(topic, pd):
        return (topic.topic_id if version >= TOPIC_IDS_VERSION else topic.name), pd.index

    last = {key(topic, pd): pd for topic in request.topic_data for pd in topic.partition_data}
    kept = []
    for topic in request.topic_data:
        named = bool(topic.partition_data)
        topic.partition_data = [chosen for pd in topic.partition_data
                                if (chosen := last.pop(key(topic, pd), None)) is not None]
        if topic.partition_data or not named:
            kept.append(topic)
    request.topic_data = kept


async def handle(broker: BrokerView, ctx, request):
    version = ctx.api_version
    acks = request.acks
    valid_acks = acks in (-1, 0, 1)
    transactional_refused = _has_transactional_batch(request) and (
        request.transactional_id is None or not broker.authorizer.authorize(
            ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id))
    _each_partition_once(request, version)
    names = (topic_names_of(broker.metadata, (t.topic_id for t in request.topic_data)) if version >= TOPIC_IDS_VERSION
             else [t.name for t in request.topic_data])
    responses: list[tuple[str | None, dict]] = []
    failed = False
    writable = broker.authorizer.filter_authorized(ctx, AclOperation.WRITE, ResourceType.TOPIC,
                                                   (name for name in names if name is not None))
    transaction_denied = request.transactional_id is not None and not broker.authorizer.authorize(
        ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id)
    for topic, name in zip(request.topic_data, names):
        partitions = []
        for pd in topic.partition_data:
            meta = broker.metadata.topic(name) if name is not None else None
            if transactional_refused:  # the whole request, as Kafka's error response
                entry = _partition_error(pd.index, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            elif name is None:
                entry = _partition_error(pd.index, ErrorCode.UNKNOWN_TOPIC_ID)
            elif transaction_denied:
                entry = _partition_error(pd.index, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            elif name not in writable:
                entry = _partition_error(pd.index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif meta is None or not 0 <= pd.index < meta.partitions:
                entry = _partition_error(pd.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            elif (checked := whole_batch(pd.records, version))[0] is not None:
                entry = _partition_error(pd.index, checked[0])
            elif not valid_acks:
                entry = _partition_error(pd.index, ErrorCode.INVALID_REQUIRED_ACKS)
            else:
                entry, guard = None, None
                if request.transactional_id is not None:
                    entry, guard = await transactional_write_check(broker, request.transactional_id, name, pd.index,
                                                                   checked[1], version)
                if entry is None:
                    refused = None
                    plog = broker.partition_log(name, pd.index)
                    if plog is not None and enabled_parts(plog.config):
                        refused = await check_schema_ids(broker, name, plog.config, checked[1])
                    entry = append_partition(broker, ctx, name, pd.index, checked[1], acks,
                                             request.transactional_id, guard, refused)
            failed = failed or entry["error_code"] != 0
            partitions.append(entry)
        responses.append((name, {"name": topic.name, "topic_id": topic.topic_id, "partition_responses": partitions}))
    # Answered once durable (log.flush.on.ack) and, for acks=all in a cluster, replicated: both at once.
    waits = []
    if acks != 0 and broker.flush_on_ack:
        waits.append(_await_synced(broker, responses))
    if acks == -1 and broker.waits_for_replicas:
        waits.append(_await_in_sync_replicas(broker, request.timeout_ms, responses))
    if waits:
        # Appended: the connection may start its next Produce while this one waits (broker/server.py).
        ctx.appended = True
        if len(waits) == 1:
            await waits[0]  # a task and a gathering future fewer per request
        else:
            await asyncio.gather(*waits)
    # producer_byte_rate quotas count the records' bytes (Kafka counts the request's size).
    throttle_time_ms = produce_throttle_ms(broker, ctx, sum(
        len(pd.records) for topic in request.topic_data for pd in topic.partition_data if pd.records is not None))
    if acks == 0:
        if failed:
            raise CloseConnection
        return None
    response = {"responses": [topic for _, topic in responses], "throttle_time_ms": throttle_time_ms}
    if version >= LEADER_HINTS_VERSION:
        hints = LeaderHints(broker, ctx.listener)
        for name, topic in responses:
            for entry in topic["partition_responses"]:
                hints.annotate(name, entry["index"], entry)
        response["node_endpoints"] = hints.node_endpoints()
    return response
