"""Hostile bytes into every decoder: only the documented decode errors ever come out.

- every request and response of every API and version in kafka_wire.messages.APIS, and the
  request header: only kafka_wire.primitives.DecodeError;
- record batches (decode_records, decode_batches, the header and CRC checks) and every codec's
  decompression: only kafka_wire.records.InvalidRecordBatch (and its subclasses);
- internal topic records (__consumer_offsets, __transaction_state): only DecodeError;
- SASL: the SCRAM and PLAIN servers raise only SaslAuthenticationFailed; the per-connection
  authenticator never raises at all (it answers or closes).

Each message is attacked two ways: deterministic mutations of a valid encoding (truncated
everywhere, absurd lengths written over every length-sized window), and hypothesis-driven random
bytes and random edits. Decoding is also bounded in memory: nothing decodes into far more
objects than it had bytes.
"""

from __future__ import annotations

import itertools
import os
import random
import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire import internal_records
from kafka_wire.compression import CompressionType, compress, decompress
from kafka_wire.headers import REQUEST_HEADER, decode_request_header
from kafka_wire.messages import APIS
from kafka_wire.primitives import DecodeError
from kafka_wire.record_codec import Record, build_batch, decode_batches, decode_records
from kafka_wire.records import InvalidRecordBatch, iter_batch_headers, verify_crc
from kafka_wire.sasl import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    PlainServer,
    SaslAuthenticationFailed,
    ScramClient,
    ScramCredential,
    ScramServer,
)
from tests.unit.test_messages import populated

# KW_SLOW=1 runs the long form: ten times the random examples.
SCALE = 10 if os.environ.get("KW_SLOW") == "1" else 1


def examples(n: int) -> int:
    return n * SCALE


CASES = [(api, version, side) for api in APIS.values()
         for version in range(api.min_version, api.max_version + 1) for side in ("request", "response")]
CASE_IDS = [f"{api.name}-v{version}-{side}" for api, version, side in CASES]

# Values a hostile length field takes: the limits of int16/int32/varint, negatives, near-misses.
HOSTILE_WORDS = [b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\x80\x00\x00\x00", b"\x00\x0f\xff\xff",
                 b"\xff\xff\xff\xff\x0f", b"\x7f\xff", b"\xff\xfe", b"\xff"]


def _decode(message, data: bytes, version: int) -> None:
    try:
        message.decode(data, version)
    except DecodeError:
        pass


def _valid_encodings(api, version: int, side: str) -> list[bytes]:
    message = getattr(api, side)
    return [message.encode_bytes(populated(message, version), version),
            message.encode_bytes(populated(message, version, nulls=True), version)]


def _mutations(data: bytes, rng: random.Random, budget: int = 120):
    """Truncations and hostile length windows at up to `budget` positions each."""
    positions = list(range(len(data)))
    if len(positions) > budget:
        positions = sorted(rng.sample(positions, budget))
    for end in positions:
        yield data[:end]
    for pos in positions:
        word = HOSTILE_WORDS[pos % len(HOSTILE_WORDS)]
        yield data[:pos] + word + data[pos + len(word):]
        yield data[:pos] + bytes([data[pos] ^ 0xFF]) + data[pos + 1:]


@pytest.mark.parametrize("api, version, side", CASES, ids=CASE_IDS)
def test_mutated_messages_raise_only_decode_errors(api, version, side):
    message = getattr(api, side)
    rng = random.Random(f"{api.key}-{version}-{side}")
    for data in _valid_encodings(api, version, side):
        for mutated in _mutations(data, rng):
            _decode(message, mutated, version)


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), data=st.binary(max_size=200))
def test_random_bytes_raise_only_decode_errors(case, data):
    api, version, side = case
    _decode(getattr(api, side), data, version)


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), edits=st.lists(st.tuples(st.integers(0, 10_000), st.binary(min_size=1, max_size=5)),
                                                   min_size=1, max_size=4))
def test_random_edits_raise_only_decode_errors(case, edits):
    api, version, side = case
    data = bytearray(_valid_encodings(api, version, side)[0])
    for pos, chunk in edits:
        pos %= len(data) + 1
        data[pos:pos + len(chunk)] = chunk
    _decode(getattr(api, side), bytes(data), version)


@settings(max_examples=examples(150), deadline=None)
@given(data=st.binary(max_size=64), flexible=st.booleans())
def test_request_headers_raise_only_decode_errors(data, flexible):
    try:
        decode_request_header(data, flexible)
    except DecodeError:
        pass


def test_request_header_truncations():
    data = REQUEST_HEADER.encode_bytes({"request_api_key": 3, "request_api_version": 12, "correlation_id": 9,
                                        "client_id": "c" * 40}, 2) + b"\x00"
    for mutated in _mutations(data, random.Random(0)):
        for flexible in (False, True):
            try:
                decode_request_header(mutated, flexible)
            except DecodeError:
                pass


def test_absurd_lengths_allocate_nothing_big():
    """Arrays, strings and bytes that claim 2^31 elements or bytes fail before allocating for them."""
    api = APIS[3]  # Metadata
    hostile = [b"\x7f\xff\xff\xff" + b"\x00" * 16,        # v1: 2^31-1 topics
               b"\x00\x00\x00\x01\x7f\xff" + b"a" * 16]  # one topic, 32767-byte name
    tracemalloc.start()
    try:
        for data in hostile:
            with pytest.raises(DecodeError):
                api.request.decode(data, 1)
        compact = b"\xff\xff\xff\xff\x0f" + b"\x00" * 16   # v12: compact array of ~2^32 topics
        with pytest.raises(DecodeError):
            api.request.decode(compact, 12)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_array_counts_are_checked_against_the_element_size():
    from kafka_wire import schema

    message = schema.Message("T", [schema.Field("xs", schema.Array(schema.INT64))], flexible=(1, 0))
    with pytest.raises(DecodeError, match="exceeds"):  # 3 int64s need 24 bytes, 16 are there
        message.decode(struct.pack(">i", 3) + b"\0" * 16, 0)
    assert message.decode(struct.pack(">i", 2) + b"\0" * 16, 0).xs == [0, 0]


# -- record batches and codecs -----------------------------------------------------------------------


def _batches() -> list[bytes]:
    records = [Record(i, i * 3, b"key-%d" % i, b"value-%d" % i * 3, [("h", b"v"), ("n", None)]) for i in range(5)]
    records.append(Record(5, 20, None, None))
    return [build_batch(records, compression=codec, base_offset=100, producer_id=7, producer_epoch=1,
                        base_sequence=0) for codec in CompressionType]


def _decode_batch(data: bytes) -> None:
    try:
        decode_records(data)
    except InvalidRecordBatch:
        pass
    try:
        list(decode_batches(data))
    except InvalidRecordBatch:
        pass
    try:
        list(iter_batch_headers(data))
        verify_crc(data)
    except InvalidRecordBatch:
        pass


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_mutated_batches_raise_only_record_errors(codec):
    batch = _batches()[codec]
    rng = random.Random(int(codec))
    for mutated in _mutations(batch, rng, budget=150):
        _decode_batch(mutated)


def _recrc(data: bytearray) -> bytes:
    """Fix the CRC after an edit, so that the edit reaches the records parser and the codec."""
    from kafka_wire.records import compute_crc

    if len(data) >= 61:
        struct.pack_into(">i", data, 8, len(data) - 12)
        struct.pack_into(">I", data, 17, compute_crc(data, 0, len(data)))
    return bytes(data)


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codec=st.sampled_from(list(CompressionType)),
       edits=st.lists(st.tuples(st.integers(21, 10_000), st.binary(min_size=1, max_size=6)), min_size=1, max_size=4),
       cut=st.integers(0, 40))
def test_random_batch_edits_with_a_valid_crc_raise_only_record_errors(codec, edits, cut):
    data = bytearray(_batches()[codec])
    for pos, chunk in edits:
        pos = 21 + pos % (len(data) - 20)
        data[pos:pos + len(chunk)] = chunk
    if cut:
        del data[-cut:]
    _decode_batch(_recrc(data))


@settings(max_examples=examples(250), deadline=None)
@given(codec=st.sampled_from(list(CompressionType)[1:]), data=st.binary(max_size=300))
def test_random_compressed_payloads_raise_only_record_errors(codec, data):
    try:
        decompress(codec, data, max_output=1 << 20)
    except InvalidRecordBatch:
        pass


@pytest.mark.parametrize("codec", list(CompressionType)[1:], ids=lambda c: c.name)
def test_decompression_bombs_stop_at_the_limit(codec):
    bomb = compress(codec, b"\x00" * (8 << 20))
    assert len(bomb) < 1 << 20
    with pytest.raises(InvalidRecordBatch):
        decompress(codec, bomb, max_output=1 << 20)


# -- internal topic records ----------------------------------------------------------------------------


@settings(max_examples=examples(200), deadline=None)
@given(which=st.sampled_from(["decode_internal_key", "decode_offset_commit_value", "decode_group_metadata_value",
                              "decode_transaction_log_key", "decode_transaction_log_value"]),
       data=st.binary(max_size=120))
def test_internal_records_raise_only_decode_errors(which, data):
    try:
        getattr(internal_records, which)(data)
    except DecodeError:
        pass


# -- SASL ------------------------------------------------------------------------------------------------

_CREDENTIAL = {m.name: ScramCredential.from_password(m, "pw", salt=b"s" * 16) for m in (SCRAM_SHA_256, SCRAM_SHA_512)}


@settings(max_examples=examples(250), deadline=None)
@given(mechanism=st.sampled_from([SCRAM_SHA_256, SCRAM_SHA_512]), first=st.binary(max_size=80),
       final=st.binary(max_size=120), real_first=st.booleans())
def test_scram_server_raises_only_authentication_failures(mechanism, first, final, real_first):
    server = ScramServer(mechanism, lambda user: _CREDENTIAL[mechanism.name] if user == "alice" else None)
    try:
        server.step(ScramClient(mechanism, "alice", "pw").first() if real_first else first)
        server.step(final)
    except SaslAuthenticationFailed:
        pass
    assert not server.complete


@settings(max_examples=examples(150), deadline=None)
@given(token=st.binary(max_size=80))
def test_plain_server_raises_only_authentication_failures(token):
    try:
        PlainServer(lambda user, password: False).step(token)
    except SaslAuthenticationFailed:
        pass


@settings(max_examples=examples(200), deadline=None)
@given(frames=st.lists(st.binary(max_size=60), min_size=1, max_size=4), handshake_first=st.booleans(),
       mechanism=st.sampled_from(["PLAIN", "SCRAM-SHA-256"]), version=st.sampled_from([0, 1]))
def test_authenticator_never_raises(frames, handshake_first, mechanism, version):
    from broker.security.authentication import SaslAuthenticator
    from tests.unit.test_sasl_authentication import frame

    auth = SaslAuthenticator(["PLAIN", "SCRAM-SHA-256"], _STORE, api_versions_supported=lambda v: v <= 4)
    if handshake_first:
        frames = [frame("SaslHandshake", version, {"mechanism": mechanism}), *frames]
    for data in frames:
        step = auth.receive(data)
        if step.close:
            break


class _EmptyStore:
    """A credential store without users (the authenticator only looks things up)."""

    def lookup(self, mechanism):
        return lambda user: None

    def verify_plain(self, user, password):
        return False


_STORE = _EmptyStore()


def test_every_case_is_covered():
    # Guard against the registry growing while the fuzz cases silently stay behind.
    assert len(CASES) == 2 * sum(api.max_version - api.min_version + 1 for api in APIS.values())
    assert {api.key for api, _, _ in CASES} == set(APIS)
    assert len(list(itertools.islice(_mutations(b"x" * 500, random.Random(1)), 10))) == 10
