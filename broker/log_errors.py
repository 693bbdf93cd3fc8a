"""Maps the storage layer's exceptions to the Kafka error codes a response carries."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import InvalidRecord
from kafka_wire.records import CorruptBatch, InvalidRecordBatch, UnsupportedMagic


def error_code_of(exc: BaseException) -> ErrorCode | None:
    """The Kafka error for a log-layer exception, or None when it is not one (a bug of ours)."""
    name = getattr(exc, "error_name", None)
    if name is not None:
        return ErrorCode[name]
    if isinstance(exc, (UnsupportedMagic, InvalidRecord)):
        return ErrorCode.INVALID_RECORD
    if isinstance(exc, (CorruptBatch, InvalidRecordBatch)):
        return ErrorCode.CORRUPT_MESSAGE
    if isinstance(exc, OSError):
        return ErrorCode.KAFKA_STORAGE_ERROR
    return None
