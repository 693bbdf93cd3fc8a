"""Request and response headers: byte vectors from Kafka's header specs, and kafka-python as a check.

Request header v1: api_key int16, api_version int16, correlation_id int32, client_id as a nullable
int16-length string. v2 (flexible APIs) adds a tagged-field section; client_id stays an int16-length
string. Response header v0: correlation_id; v1 adds tagged fields; ApiVersions always answers v0.
"""

from __future__ import annotations

import pytest

from kafka_wire.headers import (
    decode_request_header,
    encode_request_header,
    encode_response_header,
    peek_api,
)
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.primitives import DecodeError
from kafka_wire.schema import Writer

REQUEST_HEADER_V1 = (
    b"\x00\x03"            # request_api_key = 3 (Metadata)
    + b"\x00\x01"          # request_api_version = 1
    + b"\x00\x00\x00\x07"  # correlation_id = 7
    + b"\x00\x03" b"cli"   # client_id: int16 length + UTF-8
)

REQUEST_HEADER_V2 = (
    b"\x00\x03"            # request_api_key = 3
    + b"\x00\x09"          # request_api_version = 9 (flexible)
    + b"\x00\x00\x00\x07"  # correlation_id = 7
    + b"\x00\x03" b"cli"   # client_id: still an int16-length string, not compact
    + b"\x00"              # tagged fields: none
)


def _request_header(api_key, version, correlation_id, client_id, flexible) -> bytes:
    w = Writer()
    encode_request_header(w, api_key, version, correlation_id, client_id, flexible)
    return w.to_bytes()


def _response_header(correlation_id, api_key, flexible) -> bytes:
    w = Writer()
    encode_response_header(w, correlation_id, api_key, flexible)
    return w.to_bytes()


def test_request_header_v1():
    assert _request_header(3, 1, 7, "cli", False) == REQUEST_HEADER_V1
    header, pos = decode_request_header(REQUEST_HEADER_V1 + b"body", flexible=False)
    assert (header.request_api_key, header.request_api_version, header.correlation_id, header.client_id) == (
        3, 1, 7, "cli")
    assert pos == len(REQUEST_HEADER_V1)


def test_request_header_v1_null_client_id():
    data = b"\x00\x03\x00\x01\x00\x00\x00\x07" + b"\xff\xff"  # client_id = null
    assert _request_header(3, 1, 7, None, False) == data
    header, pos = decode_request_header(data, flexible=False)
    assert header.client_id is None and pos == len(data)


def test_request_header_v2():
    assert _request_header(3, 9, 7, "cli", True) == REQUEST_HEADER_V2
    header, pos = decode_request_header(REQUEST_HEADER_V2 + b"\x00", flexible=True)
    assert (header.request_api_version, header.correlation_id, header.client_id) == (9, 7, "cli")
    assert pos == len(REQUEST_HEADER_V2)


def test_request_header_v2_skips_unknown_tagged_fields():
    data = REQUEST_HEADER_V2[:-1] + b"\x01" + b"\x05" + b"\x02" + b"ab"  # 1 field: tag 5, 2 bytes
    header, pos = decode_request_header(data + b"body", flexible=True)
    assert header.client_id == "cli" and pos == len(data)


def test_truncated_request_headers_are_decode_errors():
    for data, flexible in ((REQUEST_HEADER_V1, False), (REQUEST_HEADER_V2, True)):
        for cut in range(len(data)):
            with pytest.raises(DecodeError):
                decode_request_header(data[:cut], flexible=flexible)


def test_peek_api():
    assert peek_api(REQUEST_HEADER_V2) == (3, 9, 7)


def test_response_headers():
    metadata = APIS_BY_NAME["Metadata"].key
    assert _response_header(7, metadata, flexible=False) == b"\x00\x00\x00\x07"          # v0
    assert _response_header(7, metadata, flexible=True) == b"\x00\x00\x00\x07" + b"\x00"  # v1
    # ApiVersions answers with header v0 even at a flexible version.
    api_versions = APIS_BY_NAME["ApiVersions"].key
    assert _response_header(7, api_versions, flexible=True) == b"\x00\x00\x00\x07"


# -- kafka-python (3.x, JSON-driven classes) frames the same headers --------------------------


def _kafka_python_or_skip():
    try:
        from kafka.protocol.metadata import ApiVersionsResponse, MetadataRequest, MetadataResponse
    except ImportError:
        pytest.skip("needs kafka-python >= 3 (JSON-driven protocol classes); pyproject pins 3.0.12")
    return ApiVersionsResponse, MetadataRequest, MetadataResponse


def test_request_headers_match_kafka_python():
    _, kp_metadata_request, _ = _kafka_python_or_skip()
    metadata = APIS_BY_NAME["Metadata"]
    for version, client_id in ((1, "cli"), (1, None), (9, "cli"), (12, "kafka-python")):
        kp = kp_metadata_request(version=version, topics=None)
        kp.with_header(correlation_id=7, client_id=client_id)
        flexible = metadata.is_flexible(version)
        ours = _request_header(metadata.key, version, 7, client_id, flexible)
        ours += metadata.request.encode_bytes(metadata.request(topics=None), version)
        assert ours == bytes(kp.encode(header=True))


def test_response_headers_match_kafka_python():
    kp_api_versions_response, _, kp_metadata_response = _kafka_python_or_skip()
    for api, kp_cls, version in ((APIS_BY_NAME["Metadata"], kp_metadata_response, 1),
                                 (APIS_BY_NAME["Metadata"], kp_metadata_response, 9),
                                 (APIS_BY_NAME["ApiVersions"], kp_api_versions_response, 0),
                                 (APIS_BY_NAME["ApiVersions"], kp_api_versions_response, 3)):
        kp = kp_cls(version=version)
        kp.with_header(correlation_id=7)
        ours = _response_header(7, api.key, api.is_flexible(version))
        ours += api.response.encode_bytes(api.response(), version)
        assert ours == bytes(kp.encode(header=True)), (api.name, version)
