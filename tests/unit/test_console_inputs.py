"""The console's reading of what users type (console/api.py): timestamps, offsets, and the HTTP
status each Kafka error becomes."""

from __future__ import annotations

import pytest

from console.api import ApiError, _shown, _whole_number, http_status, parse_timestamp
from kafka_wire.errors import ErrorCode


@pytest.mark.parametrize("text, millis", [
    ("1795566705000", 1795566705000),
    ("2026-11-25T01:00:00Z", 1795568400000),
    ("2026-11-25T01:00:00", 1795568400000),  # no zone: UTC
    ("2026-11-25 01:00:00", 1795568400000),
    ("2026-11-25T02:00:00+01:00", 1795568400000),
    ("2026-11-25T02:00:00 01:00", 1795568400000),  # a '+' that arrived as a space
    ("2026-11-25", 1795564800000),
])
def test_timestamps_in_milliseconds_or_iso_8601(text, millis):
    assert parse_timestamp(text) == millis


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01", "-5", "12:00", ""])
def test_a_malformed_timestamp_is_a_clear_400(text):
    with pytest.raises(ApiError) as caught:
        parse_timestamp(text)
    assert caught.value.status == 400 and caught.value.error == "INVALID_REQUEST"
    assert caught.value.message.startswith(f"Malformed timestamp {text!r}")


def test_offsets_are_whole_numbers():
    assert _whole_number("42", "offset") == 42 and _whole_number("", "offset") is None
    for bad in ("4.2", "ten", "-1"):
        with pytest.raises(ApiError) as caught:
            _whole_number(bad, "offset")
        assert caught.value.status == 400


@pytest.mark.parametrize("error, status", [
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 404), (ErrorCode.GROUP_ID_NOT_FOUND, 404),
    (ErrorCode.TOPIC_AUTHORIZATION_FAILED, 403), (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, 403),
    (ErrorCode.TOPIC_ALREADY_EXISTS, 409), (ErrorCode.UNKNOWN_MEMBER_ID, 409),
    (ErrorCode.OFFSET_OUT_OF_RANGE, 416), (ErrorCode.NOT_LEADER_OR_FOLLOWER, 503),
    (ErrorCode.INVALID_PARTITIONS, 400), (ErrorCode.UNKNOWN_SERVER_ERROR, 500),
])
def test_kafka_errors_become_http_statuses(error, status):
    assert http_status(error) == status


def test_bytes_are_shown_as_text_when_utf8_and_always_as_base64():
    assert _shown(None) is None
    assert _shown(b"caf\xc3\xa9") == {"size": 5, "truncated": False, "base64": "Y2Fmw6k=", "text": "café"}
    assert _shown(b"\xff")["text"] is None
    long = _shown(b"a" * 70000)
    assert long["truncated"] and long["size"] == 70000 and len(long["text"]) == 65536
    # Cut inside a two-byte character: the text ends before it.
    split = _shown(b"a" * 65535 + "é".encode() * 10)
    assert split["truncated"] and split["text"] == "a" * 65535
