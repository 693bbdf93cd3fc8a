"""Kafka error codes: numbers, names and the retriable flag match Apache Kafka's Errors table."""

import pytest

from kafka_wire.errors import ErrorCode, KafkaError

# Read from kafka-clients 4.3.0: every Errors member whose exception is a RetriableException.
KAFKA_RETRIABLE = {
    "CORRUPT_MESSAGE",
    "UNKNOWN_TOPIC_OR_PARTITION",
    "LEADER_NOT_AVAILABLE",
    "NOT_LEADER_OR_FOLLOWER",
    "REQUEST_TIMED_OUT",
    "REPLICA_NOT_AVAILABLE",
    "NETWORK_EXCEPTION",
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "NOT_COORDINATOR",
    "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "NOT_CONTROLLER",
    "CONCURRENT_TRANSACTIONS",
    "KAFKA_STORAGE_ERROR",
    "FETCH_SESSION_ID_NOT_FOUND",
    "INVALID_FETCH_SESSION_EPOCH",
    "LISTENER_NOT_FOUND",
    "FENCED_LEADER_EPOCH",
    "UNKNOWN_LEADER_EPOCH",
    "OFFSET_NOT_AVAILABLE",
    "PREFERRED_LEADER_NOT_AVAILABLE",
    "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    "ELECTION_NOT_NEEDED",
    "UNSTABLE_OFFSET_COMMIT",
    "THROTTLING_QUOTA_EXCEEDED",
    "UNKNOWN_TOPIC_ID",
    "INCONSISTENT_TOPIC_ID",
    "FETCH_SESSION_TOPIC_ID_ERROR",
    "SHARE_SESSION_NOT_FOUND",
    "INVALID_SHARE_SESSION_EPOCH",
    "SHARE_SESSION_LIMIT_REACHED",
}


def test_codes_run_from_unknown_server_error_to_share_session_limit_without_gaps():
    assert sorted(int(code) for code in ErrorCode) == list(range(-1, 134))
    assert ErrorCode(-1) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert ErrorCode(0) is ErrorCode.NONE
    assert ErrorCode(133) is ErrorCode.SHARE_SESSION_LIMIT_REACHED


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("OFFSET_OUT_OF_RANGE", 1),
        ("CORRUPT_MESSAGE", 2),
        ("NOT_LEADER_OR_FOLLOWER", 6),
        ("MESSAGE_TOO_LARGE", 10),
        ("NOT_COORDINATOR", 16),
        ("INVALID_TOPIC_EXCEPTION", 17),
        ("NOT_ENOUGH_REPLICAS", 19),
        ("ILLEGAL_GENERATION", 22),
        ("UNKNOWN_MEMBER_ID", 25),
        ("REBALANCE_IN_PROGRESS", 27),
        ("UNSUPPORTED_VERSION", 35),
        ("TOPIC_ALREADY_EXISTS", 36),
        ("OUT_OF_ORDER_SEQUENCE_NUMBER", 45),
        ("INVALID_PRODUCER_EPOCH", 47),
        ("INVALID_TXN_STATE", 48),
        ("CONCURRENT_TRANSACTIONS", 51),
        ("UNKNOWN_PRODUCER_ID", 59),
        ("FETCH_SESSION_ID_NOT_FOUND", 70),
        ("FENCED_LEADER_EPOCH", 74),
        ("MEMBER_ID_REQUIRED", 79),
        ("FENCED_INSTANCE_ID", 82),
        ("INVALID_RECORD", 87),
        ("UNSTABLE_OFFSET_COMMIT", 88),
        ("PRODUCER_FENCED", 90),
        ("UNKNOWN_TOPIC_ID", 100),
        ("TRANSACTION_ABORTABLE", 120),
        ("REBOOTSTRAP_REQUIRED", 129),
    ],
)
def test_names_carry_kafkas_numbers(name, code):
    assert ErrorCode[name] == code


def test_retriable_matches_kafkas_retriable_exceptions():
    assert {code.name for code in ErrorCode if code.retriable} == KAFKA_RETRIABLE


def test_codes_fit_the_int16_wire_field():
    assert all(-(2**15) <= code <= 2**15 - 1 for code in ErrorCode)


def test_unknown_wire_code_reads_as_unknown_server_error():
    assert ErrorCode.from_code(6) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert ErrorCode.from_code(9999) is ErrorCode.UNKNOWN_SERVER_ERROR


def test_every_error_but_none_has_kafkas_message():
    assert ErrorCode.NONE.message == ""
    assert ErrorCode.REQUEST_TIMED_OUT.message == "The request timed out."
    assert all(code.message for code in ErrorCode if code is not ErrorCode.NONE)


def test_kafka_error_carries_code_and_message():
    error = KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
    assert error.code is ErrorCode.UNKNOWN_MEMBER_ID
    assert error.message == "The coordinator is not aware of this member."
    assert not error.retriable
    assert str(error) == "UNKNOWN_MEMBER_ID: The coordinator is not aware of this member."

    custom = KafkaError(3, "topic t has no partition 7")
    assert custom.code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert custom.retriable
    assert custom.message == "topic t has no partition 7"
    with pytest.raises(KafkaError) as raised:
        raise custom
    assert raised.value.code == 3
