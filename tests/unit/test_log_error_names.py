"""Every storage error names a real Kafka error code, so the broker can always answer with it."""

import inspect

import log.errors
from broker.log_errors import error_code_of
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import InvalidRecord
from kafka_wire.records import CorruptBatch, InvalidRecordBatch, UnsupportedMagic


def test_every_log_error_names_a_kafka_error_code():
    classes = [c for _, c in inspect.getmembers(log.errors, inspect.isclass)
               if issubclass(c, Exception) and hasattr(c, "error_name")]
    assert classes
    for cls in classes:
        assert cls.error_name in ErrorCode.__members__, cls


def test_batch_errors_map_as_kafka_maps_them():
    assert error_code_of(log.errors.RecordTooLarge("x")) == ErrorCode.MESSAGE_TOO_LARGE
    assert error_code_of(CorruptBatch("x")) == ErrorCode.CORRUPT_MESSAGE
    assert error_code_of(InvalidRecordBatch("x")) == ErrorCode.CORRUPT_MESSAGE
    assert error_code_of(UnsupportedMagic("x")) == ErrorCode.INVALID_RECORD
    assert error_code_of(InvalidRecord("x")) == ErrorCode.INVALID_RECORD
    assert error_code_of(OSError(28, "No space left on device")) == ErrorCode.KAFKA_STORAGE_ERROR
    assert error_code_of(KeyError("bug")) is None
