"""A small blocking Kafka protocol client of our own: for the CLI tools and for tests.

It speaks to any Kafka-compatible broker with the message definitions in kafka_wire, one
request at a time on one connection. Real applications use real Kafka clients; this exists so
our tools and tests can send exact requests (including ones real clients never send).
"""

from __future__ import annotations

import socket
import struct

from kafka_wire.headers import RESPONSE_HEADER, encode_request_header
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.schema import Writer


class ConnectionClosed(ConnectionError):
    """The broker closed the connection instead of answering."""


class WireClient:
    """One connection; `call("Metadata", 12, {...})` sends a request and returns the response."""

    def __init__(self, bootstrap: str, timeout: float = 10.0, client_id: str = "kafka-wire-client") -> None:
        host, _, port = bootstrap.rpartition(":")
        self.sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def frame(self, api_name: str, version: int, body) -> bytes:
        """The bytes of one request, size prefix included."""
        api = APIS_BY_NAME[api_name]
        self.correlation_id += 1
        w = Writer()
        encode_request_header(w, api.key, version, self.correlation_id, self.client_id,
                              api.is_flexible(version))
        api.request.encode(body, version, w)
        data = w.to_bytes()
        return struct.pack(">i", len(data)) + data

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read_exactly(4))[0]
        return self._read_exactly(size)

    def _read_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionClosed("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def call(self, api_name: str, version: int, body, *, expect_response: bool = True):
        """Send one request; return the decoded response (None when expect_response is False)."""
        api = APIS_BY_NAME[api_name]
        self.send_raw(self.frame(api_name, version, body))
        if not expect_response:
            return None
        return self.decode_response(api_name, version, self.read_frame())

    def decode_response(self, api_name: str, version: int, frame: bytes):
        api = APIS_BY_NAME[api_name]
        flexible = api.is_flexible(version) and api.key != 18
        header, pos = RESPONSE_HEADER.decode_from(frame, 1 if flexible else 0)
        if header.correlation_id != self.correlation_id:
            raise ValueError(f"correlation id {header.correlation_id}, expected {self.correlation_id}")
        return api.response.decode(frame, version, pos)
