"""Errors the log layer raises, each naming the Kafka error code the broker answers with.

The log never imports the protocol's error enum (dependencies point one way), so every class
carries `error_name`, the name of the Kafka error code (as in Kafka's `Errors` enum) that a
broker should put in the response. Malformed or corrupt batches raise `InvalidRecordBatch` /
`CorruptBatch` from `kafka_wire.records` (CORRUPT_MESSAGE), and batches breaking a rule Kafka
enforces on client appends raise `kafka_wire.record_codec.InvalidRecord` (INVALID_RECORD).
"""

from __future__ import annotations

import errno


class LogError(Exception):
    """Base of the log layer's errors."""

    error_name = "UNKNOWN_SERVER_ERROR"


class OffsetOutOfRange(LogError):
    """The requested offset is below the log start offset or above the log end offset."""

    error_name = "OFFSET_OUT_OF_RANGE"


class RecordTooLarge(LogError):
    """A batch larger than the topic's max.message.bytes."""

    error_name = "MESSAGE_TOO_LARGE"


class RecordBatchTooLarge(LogError):
    """An append larger than the topic's segment.bytes: it could never fit in a segment."""

    error_name = "RECORD_LIST_TOO_LARGE"


class UnexpectedAppendOffset(LogError):
    """A follower append whose offsets start below the log end offset or go backwards."""

    error_name = "UNKNOWN_SERVER_ERROR"


class OutOfOrderSequence(LogError):
    """An idempotent batch whose sequence does not follow the producer's last one."""

    error_name = "OUT_OF_ORDER_SEQUENCE_NUMBER"


class InvalidProducerEpoch(LogError):
    """A batch from a producer epoch older than the one this partition has seen (a zombie)."""

    error_name = "INVALID_PRODUCER_EPOCH"


class InvalidTxnState(LogError):
    """A non-transactional batch from a producer whose transaction is still open."""

    error_name = "INVALID_TXN_STATE"


class RecordValidationError(LogError):
    """Records of a batch refused one by one (Kafka's RecordValidationException, log/validator.py):
    INVALID_TIMESTAMP or INVALID_RECORD; the response carries `record_errors` (batch index,
    message) and the exception's message."""

    def __init__(self, error_name: str, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(message)
        self.error_name = error_name
        self.record_errors = record_errors


class KafkaStorageError(LogError):
    """The disk failed under us (write, fsync or truncate raised OSError)."""

    error_name = "KAFKA_STORAGE_ERROR"


class LogDirFailure(KafkaStorageError):
    """A whole log dir that cannot be created, written or loaded at start (Kafka's
    LogDirFailureChannel; Kafka stops serving the dir, and with every dir failed shuts down)."""

    def __init__(self, log_dir: str, reason: str) -> None:
        super().__init__(reason)
        self.log_dir = log_dir


# Errors that say the machine is short of something, not that the disk under a log dir failed:
# the write is answered KAFKA_STORAGE_ERROR and the next one works once there is room again.
_SHORTAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EMFILE, errno.ENFILE, errno.ENOMEM,
                              errno.EAGAIN, errno.EINTR})


def is_log_dir_failure(exc: BaseException) -> bool:
    """Whether an error (or the OSError behind it) means the log dir itself failed (EIO, EROFS, the
    directory gone, ...): Kafka's LogDirFailureChannel then takes the dir offline. Shortages (a
    full disk, too many open files) are not: kafka-wire answers them and heals when they pass."""
    while exc is not None:
        if isinstance(exc, OSError):
            return exc.errno not in _SHORTAGE_ERRNOS
        exc = exc.__cause__
    return False
