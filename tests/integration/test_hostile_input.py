"""Bad frames close only their own connection; the broker keeps serving everyone else."""

from __future__ import annotations

import socket
import struct

import pytest

from client import ConnectionClosed, WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.headers import encode_request_header
from kafka_wire.schema import Writer


def _header(api_key: int, version: int, correlation_id: int = 1, flexible: bool = False) -> bytes:
    w = Writer()
    encode_request_header(w, api_key, version, correlation_id, "hostile", flexible)
    return bytes(w.out)


def _assert_closed(sock: socket.socket) -> None:
    sock.settimeout(10)
    try:
        data = sock.recv(1)
    except ConnectionResetError:
        return
    assert data == b"", f"expected the broker to close the connection, got {data!r}"


def _assert_still_serving(bootstrap: str) -> None:
    with WireClient(bootstrap) as client:
        response = client.call("ApiVersions", 3, {"client_software_name": "check",
                                                  "client_software_version": "1"})
        assert response.error_code == 0
        assert any(k.api_key == 0 for k in response.api_keys)


def _raw(bootstrap: str) -> socket.socket:
    host, _, port = bootstrap.rpartition(":")
    return socket.create_connection((host, int(port)), timeout=10)


@pytest.mark.parametrize("size", [2**31 - 1, 104857601, -1, -2**31])
def test_size_prefix_outside_limits_closes_connection(shared_broker, size):
    sock = _raw(shared_broker.bootstrap)
    sock.sendall(struct.pack(">i", size) + b"\x00" * 16)
    _assert_closed(sock)
    _assert_still_serving(shared_broker.bootstrap)


def test_truncated_frame_then_disconnect(shared_broker):
    sock = _raw(shared_broker.bootstrap)
    sock.sendall(struct.pack(">i", 100) + _header(18, 0))
    sock.close()
    _assert_still_serving(shared_broker.bootstrap)


def test_frame_shorter_than_a_header_closes_connection(shared_broker):
    sock = _raw(shared_broker.bootstrap)
    sock.sendall(struct.pack(">i", 3) + b"\x00\x12\x00")
    _assert_closed(sock)
    _assert_still_serving(shared_broker.bootstrap)


def test_unknown_api_key_closes_connection(shared_broker):
    sock = _raw(shared_broker.bootstrap)
    body = _header(9999 % 32768, 0)
    sock.sendall(struct.pack(">i", len(body)) + body)
    _assert_closed(sock)
    _assert_still_serving(shared_broker.bootstrap)


def test_unsupported_api_versions_version_gets_v0_answer_with_our_versions(shared_broker):
    """Kafka answers an ApiVersions request it does not know with a v0 body: UNSUPPORTED_VERSION
    plus ApiVersions' own version range (ApiVersionsRequest.getErrorResponse), so the client can
    retry with a version both sides know."""
    with WireClient(shared_broker.bootstrap) as client:
        body = _header(18, 99, correlation_id=42, flexible=True) + b"\x00"
        client.send_raw(struct.pack(">i", len(body)) + body)
        frame = client.read_frame()
        client.correlation_id = 42
        response = client.decode_response("ApiVersions", 0, frame)
        assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
        keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        from kafka_wire.messages import APIS_BY_NAME

        assert keys == {18: (0, APIS_BY_NAME["ApiVersions"].max_version)}
        # The connection stays usable after that answer.
        again = client.call("ApiVersions", 0, {})
        assert again.error_code == 0


def test_unsupported_version_of_other_api_closes_connection(shared_broker):
    sock = _raw(shared_broker.bootstrap)
    body = _header(3, 99, flexible=True) + b"\x00" * 8
    sock.sendall(struct.pack(">i", len(body)) + body)
    _assert_closed(sock)
    _assert_still_serving(shared_broker.bootstrap)


@pytest.mark.parametrize("garbage", [
    b"\x00\x00\x00\x05\x7f\xff",           # 5 topics, the first named by a 32767-byte string that is not there
    b"\x00\x00\x00\x01\xff\xfe",           # a topic name of length -2
    b"\x7f\xff\xff\xff" + b"\x00" * 8,  # an array claiming 2^31-1 elements
    b"\x00\x01",                       # truncated body
])
def test_garbage_body_closes_connection(shared_broker, garbage):
    sock = _raw(shared_broker.bootstrap)
    body = _header(3, 8) + garbage  # Metadata v8, non-flexible
    sock.sendall(struct.pack(">i", len(body)) + body)
    _assert_closed(sock)
    _assert_still_serving(shared_broker.bootstrap)


def test_absurd_flexible_array_length_closes_connection(shared_broker):
    sock = _raw(shared_broker.bootstrap)
    # Metadata v12: topics as a compact array whose varint length says ~2^35 elements.
    body = _header(3, 12, flexible=True) + b"\xff\xff\xff\xff\x7f" + b"\x00" * 4
    sock.sendall(struct.pack(">i", len(body)) + body)
    _assert_closed(sock)
    _assert_still_serving(shared_broker.bootstrap)


def test_pipelined_requests_are_answered_in_order(shared_broker):
    with WireClient(shared_broker.bootstrap) as client:
        frames = b""
        for _ in range(20):
            frames += client.frame("ApiVersions", 2, {})
        for _ in range(20):
            frames += client.frame("Metadata", 9, {"topics": [], "allow_auto_topic_creation": False})
        client.send_raw(frames)
        seen = []
        for _ in range(40):
            frame = client.read_frame()
            seen.append(struct.unpack(">i", frame[:4])[0])
        assert seen == list(range(1, 41))


def test_broker_survives_a_client_vanishing_mid_long_poll(shared_broker):
    with WireClient(shared_broker.bootstrap) as client:
        client.call("Metadata", 9, {"topics": [{"name": "hostile-longpoll"}],
                                    "allow_auto_topic_creation": True})
        client.send_raw(client.frame("Fetch", 12, {
            "replica_id": -1, "max_wait_ms": 5000, "min_bytes": 1, "max_bytes": 1 << 20,
            "topics": [{"topic": "hostile-longpoll", "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}))
    _assert_still_serving(shared_broker.bootstrap)


def test_wire_client_sees_closed_connection(shared_broker):
    with WireClient(shared_broker.bootstrap) as client:
        body = _header(3, 99, flexible=True)
        client.send_raw(struct.pack(">i", len(body)) + body)
        with pytest.raises(ConnectionClosed):
            client.read_frame()
