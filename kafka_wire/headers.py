"""Request and response headers, and how a frame's body is located and answered.

Request header v1 carries api_key, api_version, correlation_id and client_id; v2 (flexible APIs)
adds tagged fields. Response header v0 is the correlation id; v1 (flexible) adds tagged fields,
except ApiVersions, whose response header is always v0 so that a client that does not yet know
our versions can read it.
"""

from __future__ import annotations

from .primitives import DecodeError, read_int16, read_int32
from .schema import INT16, INT16_STRING, INT32, Field, Message, Writer

API_VERSIONS_KEY = 18

REQUEST_HEADER = Message(
    "RequestHeader",
    [
        Field("request_api_key", INT16),
        Field("request_api_version", INT16),
        Field("correlation_id", INT32),
        Field("client_id", INT16_STRING, "1+", nullable="1+", default=None),
    ],
    flexible=(2, 2),
)

RESPONSE_HEADER = Message("ResponseHeader", [Field("correlation_id", INT32)], flexible=(1, 1))


def peek_api(frame) -> tuple[int, int, int]:
    """api_key, api_version and correlation_id of a request frame (all header versions share them)."""
    api_key, pos = read_int16(frame, 0)
    api_version, pos = read_int16(frame, pos)
    correlation_id, _ = read_int32(frame, pos)
    return api_key, api_version, correlation_id


def request_header_version(flexible: bool) -> int:
    """v2 for a flexible version of an API, v1 otherwise."""
    return 2 if flexible else 1


def response_header_version(api_key: int, flexible: bool) -> int:
    """v1 for a flexible version of an API, v0 otherwise and always for ApiVersions."""
    return 1 if flexible and api_key != API_VERSIONS_KEY else 0


def decode_request_header(frame, flexible: bool):
    """Decode the request header; returns (header, body_position)."""
    if len(frame) < 8:
        raise DecodeError("request frame shorter than its header")
    return REQUEST_HEADER.decode_from(frame, request_header_version(flexible))


def encode_response_header(w: Writer, correlation_id: int, api_key: int, flexible: bool) -> None:
    RESPONSE_HEADER.encode({"correlation_id": correlation_id}, response_header_version(api_key, flexible), w)


def decode_response_header(frame, api_key: int, flexible: bool):
    """Decode the response header of an answer to `api_key`; returns (header, body_position)."""
    return RESPONSE_HEADER.decode_from(frame, response_header_version(api_key, flexible))


def encode_request_header(w: Writer, api_key: int, api_version: int, correlation_id: int,
                          client_id: str | None, flexible: bool) -> None:
    """Used by our own clients (kafka_wire.framing) and by tests that write requests byte by byte."""
    REQUEST_HEADER.encode(
        {
            "request_api_key": api_key,
            "request_api_version": api_version,
            "correlation_id": correlation_id,
            "client_id": client_id,
        },
        request_header_version(flexible),
        w,
    )
