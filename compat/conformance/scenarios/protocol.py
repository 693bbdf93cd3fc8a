"""ApiVersions (18) and what happens to a connection on unsupported versions and malformed frames."""

from __future__ import annotations

import struct

from kafka_wire.framing import size_prefixed
from kafka_wire.headers import encode_request_header
from kafka_wire.schema import Writer

from ..scenario import ALL, Session, scenario


def _api_versions_body(name: str = "conformance", version: str = "1.0") -> dict:
    return {"client_software_name": name, "client_software_version": version}


@scenario("ApiVersions", versions=ALL)
def api_versions(s: Session, v: int):
    """The version table (compared: every API, its range, the features)."""
    s.call("ApiVersions", v, _api_versions_body())


@scenario("ApiVersions", versions=(3,), covers=["INVALID_REQUEST"])
def api_versions_invalid_software_name(s: Session, v: int):
    """KIP-511: a client software name Kafka's pattern rejects."""
    s.call("ApiVersions", v, _api_versions_body("bad name!", "1.0"), conn="a")
    s.call("ApiVersions", v, _api_versions_body("ok", "-1.0"), conn="b")


def _request_bytes(api_key: int, version: int, correlation_id: int, body: bytes, flexible: bool) -> bytes:
    w = Writer()
    encode_request_header(w, api_key, version, correlation_id, "conformance", flexible)
    return size_prefixed(w.to_bytes() + body)


@scenario("ApiVersions", covers=["UNSUPPORTED_VERSION"])
def api_versions_unknown_version(s: Session):
    """ApiVersions at a version the broker does not know: a v0 answer with UNSUPPORTED_VERSION and
    ApiVersions' own range, so the client retries (KIP-511)."""
    s.raw(_request_bytes(18, 127, 1, b"", True), label="ApiVersions v127", api="ApiVersions", version=0)


@scenario("Metadata")
def unsupported_version_of_another_api(s: Session):
    """Metadata at a version the broker does not serve: what happens to the connection."""
    body = struct.pack(">i", -1)
    s.raw(_request_bytes(3, 99, 1, body, False), label="Metadata v99")


@scenario("ApiVersions")
def unknown_api_key(s: Session):
    """An API key no broker serves."""
    s.raw(_request_bytes(9999 % 32768, 0, 1, b"", False), label="api key 9999")


@scenario("ApiVersions")
def malformed_frames(s: Session):
    """Frames no client sends: each on its own connection; what happens to it."""
    s.raw(struct.pack(">i", -5), conn="negative", label="negative size")
    s.raw(struct.pack(">i", 200 * 1024 * 1024) + b"x" * 16, conn="huge", label="size above socket.request.max.bytes")
    s.raw(size_prefixed(b"\x00\x03"), conn="short", label="frame shorter than a header")
    s.raw(_request_bytes(3, 12, 1, b"\xff" * 7, True), conn="garbage", label="Metadata v12 with a garbage body")
    # After all that, the broker still answers a well-formed request on a new connection.
    after = s.call("ApiVersions", 3, _api_versions_body(), conn="after", record=False)
    s.record("a new connection is answered afterwards", after is not None and after.error_code == 0)
