"""Kafka's framing, sans-io: size-prefixed frames, the header each one starts with, correlation ids.

Every request and response is a frame: a 4-byte big-endian signed size, then that many bytes. A
request frame holds a request header and the request body, a response frame a response header
and the response body; which header version goes with which API version is kafka_wire.headers'
rule (request v1/v2, response v0/v1, ApiVersions always v0).

As in h11, nothing here owns a socket. `FrameReader` is fed the bytes one direction of a
connection received and gives back whole frames; `ClientConnection` numbers a client's requests
and checks that an answer carries the correlation id of the request it was read for. Blocking
code feeds a FrameReader from `sock.recv(reader.bytes_needed)`, asyncio code from
`stream.readexactly(reader.bytes_needed)`: asking for what the frame still lacks never reads into
the next one. The broker keeps its own receive buffers (whole-frame reads into pooled buffers,
no copy per frame) and takes the size rule from `read_frame_size` and the response frame from
`encode_response_frame`.
"""

from __future__ import annotations

import struct

from .headers import decode_response_header, encode_request_header, encode_response_header
from .primitives import DecodeError
from .schema import Api, Writer

SIZE_BYTES = 4
# The largest size an int32 prefix can state: a reader without a limit of its own.
NO_LIMIT = 0x7FFFFFFF

_SIZE = struct.Struct(">i")
_SIZE_NOT_YET_KNOWN = bytes(SIZE_BYTES)


class FrameSizeError(DecodeError):
    """A size prefix below 0 or above the receiver's limit (the broker's socket.request.max.bytes):
    the connection cannot be framed any further and is closed."""

    def __init__(self, size: int, limit: int) -> None:
        self.size, self.limit = size, limit
        super().__init__(f"frame size {size} outside 0..{limit}")


class CorrelationIdMismatch(ValueError):
    """A response that does not answer the request it was read for."""

    def __init__(self, got: int, expected: int) -> None:
        self.got, self.expected = got, expected
        super().__init__(f"correlation id {got}, expected {expected}")


def read_frame_size(buffer, pos: int, limit: int = NO_LIMIT) -> int:
    """The size prefix at `pos` of `buffer` (SIZE_BYTES must be there); FrameSizeError when it is
    negative or above `limit`."""
    size = _SIZE.unpack_from(buffer, pos)[0]
    if size < 0 or size > limit:
        raise FrameSizeError(size, limit)
    return size


def size_prefixed(payload) -> bytes:
    """A frame of `payload` as it is: SASL's raw tokens (SaslHandshake v0) and hand-made frames."""
    return _SIZE.pack(len(payload)) + payload


def _frame_parts(w: Writer) -> list:
    """The parts of a message written after a SIZE_BYTES placeholder, the placeholder set."""
    parts = w.parts()
    parts[0][:SIZE_BYTES] = _SIZE.pack(len(w) - SIZE_BYTES)
    return parts


def encode_request_frame(api: Api, version: int, correlation_id: int, client_id: str | None, body) -> bytes:
    """Size prefix, request header and body of one request."""
    w = Writer()
    w.out += _SIZE_NOT_YET_KNOWN
    encode_request_header(w, api.key, version, correlation_id, client_id, api.is_flexible(version))
    api.request.encode(body, version, w)
    return b"".join(_frame_parts(w))


def encode_request_frame_parts(api: Api, version: int, correlation_id: int, client_id: str | None, body) -> list:
    """encode_request_frame as the parts to send: record data the body holds as something other
    than a bytes-like object stays a part of its own, uncopied."""
    w = Writer()
    w.out += _SIZE_NOT_YET_KNOWN
    encode_request_header(w, api.key, version, correlation_id, client_id, api.is_flexible(version))
    api.request.encode(body, version, w)
    return _frame_parts(w)


def encode_response_frame(api: Api, version: int, correlation_id: int, response) -> list:
    """Size prefix, response header and body of one response, as the parts to send (record data
    the body refers to, such as a log's file slices, stays a part of its own, uncopied)."""
    w = Writer()
    w.out += _SIZE_NOT_YET_KNOWN
    encode_response_header(w, correlation_id, api.key, api.is_flexible(version))
    api.response.encode(response, version, w)
    return _frame_parts(w)


def decode_response_frame(api: Api, version: int, frame, correlation_id: int | None):
    """The response in a frame (size prefix removed) that answers `api` at `version`.
    `correlation_id`: the one the answer must carry (CorrelationIdMismatch otherwise), or None for
    the answer to a hand-made request that no ClientConnection numbered."""
    header, pos = decode_response_header(frame, api.key, api.is_flexible(version))
    if correlation_id is not None and header.correlation_id != correlation_id:
        raise CorrelationIdMismatch(header.correlation_id, correlation_id)
    return api.response.decode(frame, version, pos)


class FrameReader:
    """Cuts frames out of the bytes one direction of a connection delivers: `feed(data)` what
    arrived, then `next_frame()` (or iterate) for each frame all of whose bytes are in. A frame is
    a bytearray without its size prefix, the reader's no longer. A size prefix outside 0..limit
    raises FrameSizeError: the stream cannot be framed past it."""

    def __init__(self, limit: int = NO_LIMIT) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._size = -1  # the size of the frame being received, once its prefix is in

    def feed(self, data) -> None:
        self._buffer += data

    @property
    def bytes_needed(self) -> int:
        """How many more bytes the next frame needs (its size prefix first; 0 when it is in)."""
        have = len(self._buffer)
        size = self._size
        if size < 0:
            if have < SIZE_BYTES:
                return SIZE_BYTES - have
            size, have = read_frame_size(self._buffer, 0, self.limit), have - SIZE_BYTES
        return max(size - have, 0)

    def next_frame(self) -> bytearray | None:
        buffer = self._buffer
        size = self._size
        if size < 0:
            if len(buffer) < SIZE_BYTES:
                return None
            size = self._size = read_frame_size(buffer, 0, self.limit)
            del buffer[:SIZE_BYTES]  # deleting from the front of a bytearray moves no bytes
        if len(buffer) < size:
            return None
        self._size = -1
        if len(buffer) == size:
            # The frame is all there is (a blocking reader asks for no more): hand the buffer over.
            self._buffer = bytearray()
            return buffer
        frame = buffer[:size]
        del buffer[:size]
        return frame

    def __iter__(self):
        while (frame := self.next_frame()) is not None:
            yield frame


class ClientConnection:
    """The client side of one connection: numbers requests (correlation ids 1, 2, ...), frames them,
    cuts the answers out of the bytes received (`frames`), and decodes an answer only if it carries
    the correlation id of the request it was read for (by default the last one framed)."""

    def __init__(self, client_id: str | None, limit: int = NO_LIMIT) -> None:
        self.client_id = client_id
        self.correlation_id = 0  # the last request's
        self.frames = FrameReader(limit)

    def request(self, api: Api, version: int, body) -> bytes:
        self.correlation_id += 1
        return encode_request_frame(api, version, self.correlation_id, self.client_id, body)

    def response(self, api: Api, version: int, frame, correlation_id: int | None = None):
        """Decode the answer to the request numbered `correlation_id` (default: the last)."""
        expected = self.correlation_id if correlation_id is None else correlation_id
        return decode_response_frame(api, version, frame, expected)
