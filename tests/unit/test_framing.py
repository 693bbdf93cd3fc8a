"""kafka_wire.framing: bytes in, frames out, as h11's tests do it; no socket anywhere.

The expected bytes are written out by hand from Kafka's protocol guide: a frame is an int32 size
then that many bytes; request header v1 is api_key int16, api_version int16, correlation_id int32,
client_id int16-length string; v2 adds a tagged-field count; response header v0 is the correlation
id, v1 adds a tagged-field count, and ApiVersions always answers with v0.
"""

from __future__ import annotations

import pytest

from kafka_wire.framing import (
    NO_LIMIT,
    SIZE_BYTES,
    ClientConnection,
    CorrelationIdMismatch,
    FrameReader,
    FrameSizeError,
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
    read_frame_size,
    size_prefixed,
)
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.primitives import DecodeError

API_VERSIONS = APIS_BY_NAME["ApiVersions"]
SASL_HANDSHAKE = APIS_BY_NAME["SaslHandshake"]
SASL_AUTHENTICATE = APIS_BY_NAME["SaslAuthenticate"]
FETCH = APIS_BY_NAME["Fetch"]

API_VERSIONS_V0_REQUEST = (
    b"\x00\x00\x00\x0b"      # size: 11
    + b"\x00\x12"            # api key 18
    + b"\x00\x00"            # version 0
    + b"\x00\x00\x00\x01"    # correlation id 1
    + b"\x00\x01" b"c"       # client id "c"
)                            # (ApiVersions v0 has no body)

API_VERSIONS_V3_REQUEST = (
    b"\x00\x00\x00\x11"      # size: 17
    + b"\x00\x12\x00\x03"    # api key 18, version 3 (flexible: header v2)
    + b"\x00\x00\x00\x07"    # correlation id 7
    + b"\x00\x01" b"c"       # client id: still an int16-length string
    + b"\x00"                # header tagged fields: none
    + b"\x02" b"a"           # client_software_name: compact string "a"
    + b"\x02" b"1"           # client_software_version: compact string "1"
    + b"\x00"                # body tagged fields: none
)

SASL_HANDSHAKE_V1_RESPONSE = (
    b"\x00\x00\x00\x11"      # size: 17
    + b"\x00\x00\x00\x05"    # correlation id 5 (header v0: not flexible)
    + b"\x00\x00"            # error_code
    + b"\x00\x00\x00\x01"    # mechanisms: 1
    + b"\x00\x05" b"PLAIN"
)

SASL_AUTHENTICATE_V2_RESPONSE = (
    b"\x00\x00\x00\x14"      # size: 20
    + b"\x00\x00\x00\x05"    # correlation id 5
    + b"\x00"                # header v1 (flexible): tagged fields: none
    + b"\x00\x00"            # error_code
    + b"\x00"                # error_message: null compact string
    + b"\x03" b"ok"          # auth_bytes: compact bytes
    + b"\x00" * 8            # session_lifetime_ms
    + b"\x00"                # body tagged fields: none
)


def _frames(*frames: bytes) -> bytes:
    return b"".join(size_prefixed(f) for f in frames)


# -- encoding ---------------------------------------------------------------------------------------


def test_a_request_frame_carries_header_v1_at_a_version_that_is_not_flexible():
    assert encode_request_frame(API_VERSIONS, 0, 1, "c", {}) == API_VERSIONS_V0_REQUEST


def test_a_request_frame_carries_header_v2_at_a_flexible_version():
    body = {"client_software_name": "a", "client_software_version": "1"}
    assert encode_request_frame(API_VERSIONS, 3, 7, "c", body) == API_VERSIONS_V3_REQUEST


def test_a_response_frame_carries_header_v0_or_v1_by_the_version_flexibility():
    handshake = encode_response_frame(SASL_HANDSHAKE, 1, 5, {"error_code": 0, "mechanisms": ["PLAIN"]})
    assert b"".join(handshake) == SASL_HANDSHAKE_V1_RESPONSE
    authenticate = encode_response_frame(SASL_AUTHENTICATE, 2, 5, {
        "error_code": 0, "error_message": None, "auth_bytes": b"ok", "session_lifetime_ms": 0})
    assert b"".join(authenticate) == SASL_AUTHENTICATE_V2_RESPONSE


API_VERSIONS_V3_RESPONSE = (
    b"\x00\x00\x00\x0c"      # size: 12
    + b"\x00\x00\x00\x09"    # correlation id 9, and no tagged-field byte: header v0
    + b"\x00\x00"            # error_code
    + b"\x01"                # api_keys: empty compact array
    + b"\x00\x00\x00\x00"    # throttle_time_ms
    + b"\x00"                # body tagged fields: none
)


def test_api_versions_answers_with_response_header_v0_even_at_a_flexible_version():
    assert API_VERSIONS.is_flexible(3)
    frame = encode_response_frame(API_VERSIONS, 3, 9, {"error_code": 0, "api_keys": [], "throttle_time_ms": 0})
    assert b"".join(frame) == API_VERSIONS_V3_RESPONSE
    answer = decode_response_frame(API_VERSIONS, 3, API_VERSIONS_V3_RESPONSE[SIZE_BYTES:], 9)
    assert (answer.error_code, answer.api_keys, answer.throttle_time_ms) == (0, [], 0)


def test_a_response_frame_keeps_record_data_that_is_not_bytes_as_its_own_part():
    class FileSlice:  # what the log hands the broker for a fetch: sent with sendfile, never copied
        def __len__(self) -> int:
            return 1000

    records = FileSlice()
    parts = encode_response_frame(FETCH, 12, 3, {"responses": [{"topic": "t", "partitions": [
        {"partition_index": 0, "high_watermark": 10, "records": records}]}]})
    assert any(part is records for part in parts)
    assert read_frame_size(parts[0], 0) == sum(len(part) for part in parts) - SIZE_BYTES


def test_size_prefixed_frames_a_raw_token():
    assert size_prefixed(b"\x00alice\x00pw") == b"\x00\x00\x00\x09\x00alice\x00pw"


# -- the size prefix ----------------------------------------------------------------------------------


def test_read_frame_size_reads_at_a_position_and_checks_the_limit():
    buffer = b"junk" + b"\x00\x00\x01\x00" + b"more"
    assert read_frame_size(buffer, 4, limit=256) == 256
    with pytest.raises(FrameSizeError) as raised:
        read_frame_size(buffer, 4, limit=255)
    assert (raised.value.size, raised.value.limit) == (256, 255)
    with pytest.raises(FrameSizeError) as raised:
        read_frame_size(b"\xff\xff\xff\xfb", 0)
    assert raised.value.size == -5
    assert isinstance(raised.value, DecodeError)  # a malformed frame, as a bad body is


# -- reading ------------------------------------------------------------------------------------------


def test_frames_split_at_every_byte_boundary_come_out_whole_and_in_order():
    frames = [b"first", b"", b"x" * 300, b"last one"]
    stream = _frames(*frames)
    for cut in range(len(stream) + 1):
        reader = FrameReader()
        got = []
        for piece in (stream[:cut], stream[cut:]):
            reader.feed(piece)
            got += [bytes(f) for f in reader]
        assert got == frames, cut
        assert reader.bytes_needed == SIZE_BYTES  # nothing left over: the next prefix is awaited


def test_frames_fed_a_byte_at_a_time_appear_once_their_last_byte_is_in():
    stream = _frames(b"abc", b"de")
    reader = FrameReader()
    appeared = []
    for i in range(len(stream)):
        reader.feed(stream[i:i + 1])
        appeared += [(i, bytes(f)) for f in reader]
    assert appeared == [(6, b"abc"), (12, b"de")]


def test_several_frames_in_one_feed_and_the_start_of_the_next():
    reader = FrameReader()
    reader.feed(_frames(b"one", b"two", b"three") + b"\x00\x00\x00\x04fo")
    assert [bytes(f) for f in reader] == [b"one", b"two", b"three"]
    assert reader.next_frame() is None
    assert reader.bytes_needed == 2
    reader.feed(b"ur")
    assert reader.next_frame() == b"four"


def test_a_frame_over_the_limit_is_an_error_before_its_body_arrives():
    reader = FrameReader(limit=100)
    reader.feed(_frames(b"y" * 100))
    assert reader.next_frame() == b"y" * 100
    reader.feed(b"\x00\x00\x00\x65")  # 101: only the prefix has come
    with pytest.raises(FrameSizeError) as raised:
        reader.next_frame()
    assert (raised.value.size, raised.value.limit) == (101, 100)


def test_a_negative_size_is_an_error():
    reader = FrameReader()
    reader.feed(b"\x80\x00\x00\x00anything")
    with pytest.raises(FrameSizeError):
        reader.next_frame()
    with pytest.raises(FrameSizeError):
        reader.bytes_needed


def test_a_reader_without_a_limit_takes_any_int32_size():
    reader = FrameReader()
    assert reader.limit == NO_LIMIT
    reader.feed(b"\x7f\xff\xff\xff")
    assert reader.next_frame() is None
    assert reader.bytes_needed == NO_LIMIT


def test_reading_what_bytes_needed_asks_never_reads_past_a_frame():
    """A blocking reader asking the socket for bytes_needed stops at each frame's end, so the socket
    can change hands (TLS wrapped, passed on after SASL) between frames with nothing lost."""
    frames = [b"a" * 10, b"b" * 70_000, b""]
    stream = _frames(*frames) + b"NEXT"
    pos = 0

    def recv(n: int) -> bytes:  # a socket that returns at most 1,000 bytes a call
        nonlocal pos
        chunk = stream[pos:pos + min(n, 1000)]
        pos += len(chunk)
        return chunk

    reader = FrameReader()
    for expected in frames:
        while (frame := reader.next_frame()) is None:
            reader.feed(recv(reader.bytes_needed))
        assert frame == expected
        assert reader.bytes_needed == SIZE_BYTES
    assert stream[pos:] == b"NEXT"


def test_a_frame_handed_out_is_not_changed_by_later_feeds():
    reader = FrameReader()
    reader.feed(_frames(b"kept"))
    frame = reader.next_frame()
    view = memoryview(frame)  # e.g. a decoded records field still refers to it
    reader.feed(_frames(b"next"))
    assert reader.next_frame() == b"next"
    assert bytes(view) == b"kept"


# -- a client's connection -----------------------------------------------------------------------------


def test_requests_are_numbered_one_two_three():
    connection = ClientConnection("c")
    frames = [connection.request(API_VERSIONS, 0, {}) for _ in range(3)]
    assert frames[0] == API_VERSIONS_V0_REQUEST
    assert [read_frame_size(f, 0) for f in frames] == [11, 11, 11]
    assert [int.from_bytes(f[8:12], "big") for f in frames] == [1, 2, 3]
    assert connection.correlation_id == 3


def test_an_answer_is_decoded_only_if_it_answers_the_request_it_was_read_for():
    connection = ClientConnection("c")
    for _ in range(5):
        connection.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    connection.frames.feed(SASL_HANDSHAKE_V1_RESPONSE)  # answers request 5, the last one
    frame = connection.frames.next_frame()
    assert connection.response(SASL_HANDSHAKE, 1, frame).mechanisms == ["PLAIN"]
    with pytest.raises(CorrelationIdMismatch) as raised:
        connection.response(SASL_HANDSHAKE, 1, frame, correlation_id=4)
    assert (raised.value.got, raised.value.expected) == (5, 4)
    assert str(raised.value) == "correlation id 5, expected 4"
    connection.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})  # now the last is 6
    with pytest.raises(CorrelationIdMismatch):
        connection.response(SASL_HANDSHAKE, 1, frame)


def test_the_response_header_version_follows_the_request_version():
    """Reading a flexible answer with header v0 would take its tagged-field byte for the body."""
    frame = SASL_AUTHENTICATE_V2_RESPONSE[SIZE_BYTES:]
    answer = decode_response_frame(SASL_AUTHENTICATE, 2, frame, 5)
    assert (answer.error_code, answer.error_message, bytes(answer.auth_bytes)) == (0, None, b"ok")
    assert decode_response_frame(SASL_AUTHENTICATE, 2, frame, None).auth_bytes == b"ok"  # unnumbered
    with pytest.raises(DecodeError):
        decode_response_frame(SASL_AUTHENTICATE, 2, frame[:3], 5)


def test_a_hand_made_frame_decodes_without_a_correlation_check():
    frame = SASL_HANDSHAKE_V1_RESPONSE[SIZE_BYTES:]
    assert decode_response_frame(SASL_HANDSHAKE, 1, frame, None).error_code == 0
    with pytest.raises(CorrelationIdMismatch):
        decode_response_frame(SASL_HANDSHAKE, 1, frame, 6)
