"""Produce (0): validate each partition's batch, append it, answer with its base offset.

acks=0 gets no response at all; acks=-1 is refused with NOT_ENOUGH_REPLICAS when the in-sync
replica set is smaller than min.insync.replicas. Errors are per partition, as Kafka sends them.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.records import InvalidRecordBatch, UnsupportedMagic, iter_batch_headers

from ..log_errors import error_code_of

API = APIS_BY_NAME["Produce"]


def _partition_error(index: int, error: ErrorCode, message: str | None = None) -> dict:
    return {"index": index, "error_code": int(error), "base_offset": -1, "log_append_time_ms": -1,
            "log_start_offset": -1, "record_errors": [], "error_message": message}


def _count_batches(records) -> int:
    count = 0
    consumed = 0
    for pos, header in iter_batch_headers(records):
        count += 1
        consumed = pos + header.size
    if consumed != len(records):
        raise InvalidRecordBatch("records end in a partial batch")
    return count


def produce_partition(broker, topic: str, index: int, records, acks: int, transactional_id) -> dict:
    meta = broker.metadata.topic(topic)
    if meta is None or not 0 <= index < meta.partitions:
        return _partition_error(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if meta.internal:
        return _partition_error(index, ErrorCode.INVALID_TOPIC_EXCEPTION,
                                f"Cannot append to internal topic {topic}")
    if records is None or len(records) == 0:
        return _partition_error(index, ErrorCode.CORRUPT_MESSAGE, "Produce request has no records")
    try:
        batches = _count_batches(records)
    except UnsupportedMagic as exc:
        return _partition_error(index, ErrorCode.INVALID_RECORD, str(exc))
    except InvalidRecordBatch as exc:
        return _partition_error(index, ErrorCode.CORRUPT_MESSAGE, str(exc))
    if batches != 1:
        return _partition_error(index, ErrorCode.INVALID_RECORD,
                                "Produce requests with version 3 and above are only allowed to contain "
                                "exactly one record batch")
    if acks == -1:
        state = broker.metadata.partition_state(topic, index)
        min_isr = int(broker.topic_config(meta)["min.insync.replicas"])
        if len(state.isr) < min_isr:
            return _partition_error(index, ErrorCode.NOT_ENOUGH_REPLICAS,
                                    f"The size of the current ISR {state.isr} is insufficient to satisfy "
                                    f"the min.isr requirement of {min_isr}")
    try:
        result = broker.append_records(topic, index, records, transactional_id=transactional_id)
    except Exception as exc:  # the log's errors name the Kafka code they map to
        code = error_code_of(exc)
        if code is None:
            raise
        return _partition_error(index, code, str(exc) or None)
    return {"index": index, "error_code": 0, "base_offset": result.base_offset,
            "log_append_time_ms": result.log_append_time_ms, "log_start_offset": result.log_start_offset,
            "record_errors": [], "error_message": None}


async def handle(broker, ctx, request):
    acks = request.acks
    responses = []
    for topic in request.topic_data:
        partitions = []
        for pd in topic.partition_data:
            if acks not in (-1, 0, 1):
                partitions.append(_partition_error(pd.index, ErrorCode.INVALID_REQUIRED_ACKS))
            else:
                partitions.append(produce_partition(broker, topic.name, pd.index, pd.records, acks,
                                                    request.transactional_id))
        responses.append({"name": topic.name, "partition_responses": partitions})
    if acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": 0}
