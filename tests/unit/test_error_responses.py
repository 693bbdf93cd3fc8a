"""Kafka's error answer to a failed request (kafka_wire/error_responses.py), for every API and version we serve."""

from __future__ import annotations

import random
import uuid

import pytest

from broker.handlers import HANDLERS
from compat.request_fuzz import Known, RequestGenerator
from kafka_wire.error_responses import SHAPES, error_response
from kafka_wire.messages import APIS_BY_NAME

UNKNOWN_SERVER_ERROR = -1
SERVED = [(handler.api, version) for handler in HANDLERS.values()
          for version in range(handler.min_version, handler.max_version + 1)]


def _codes(value, version: int) -> list[int]:
    """Every error code the answer carries at this version (not tagged ones: CreateTopics'
    topic_config_error_code stays 0 in Kafka's answer too)."""
    found = []
    if isinstance(value, list):
        for item in value:
            found += _codes(item, version)
    elif hasattr(value, "_fields"):
        for f in value._fields:
            if not f.versions[0] <= version <= f.versions[1] or f.tag is not None:
                continue
            item = getattr(value, f.name)
            if f.name.endswith("error_code") and isinstance(item, int):
                found.append(item)
            else:
                found += _codes(item, version)
    return found


def test_every_served_api_has_a_shape_of_its_own():
    assert sorted(api.name for api, _ in SERVED if api.name not in SHAPES) == []


@pytest.mark.parametrize("api, version", SERVED, ids=[f"{api.name}-v{version}" for api, version in SERVED])
def test_error_answer_encodes_and_parses_for_random_requests(api, version):
    """Random well-typed requests (the fuzzer's generator): the error answer encodes with the
    response schema, parses back, and every error code in it is UNKNOWN_SERVER_ERROR."""
    for seed in range(8):
        request = RequestGenerator(random.Random(seed), Known(topic_id=uuid.uuid4())).request(api, version)
        answer = error_response(api, version, request)
        if answer is None:
            assert api.name == "Produce" and request.acks == 0
            continue
        decoded = api.response.decode(api.response.encode_bytes(answer, version), version)
        if api.name == "Metadata":  # MetadataRequest.getErrorResponse leaves v13's top-level error_code 0
            assert decoded.error_code == 0
            decoded.error_code = UNKNOWN_SERVER_ERROR
        assert set(_codes(decoded, version)) <= {UNKNOWN_SERVER_ERROR}


def _answer(name, version, body, **kw):
    api = APIS_BY_NAME[name]
    request = api.request.decode(api.request.encode_bytes(body, version), version)
    answer = error_response(api, version, request, **kw)
    return api.response.decode(api.response.encode_bytes(answer, version), version)


def test_produce_echoes_every_partition_and_has_no_answer_for_acks_0():
    body = {"acks": -1, "timeout_ms": 10, "topic_data": [
        {"name": "a", "partition_data": [{"index": 0, "records": None}, {"index": 2, "records": None}]}]}
    answer = _answer("Produce", 9, body)
    assert [(t.name, [(p.index, p.error_code, p.base_offset, p.log_start_offset, p.error_message)
                      for p in t.partition_responses]) for t in answer.responses] == [
        ("a", [(0, -1, -1, -1, None), (2, -1, -1, -1, None)])]
    api = APIS_BY_NAME["Produce"]
    request = api.request.decode(api.request.encode_bytes({**body, "acks": 0}, 9), 9)
    assert error_response(api, 9, request) is None


def test_fetch_echoes_partitions_before_v13_and_only_the_top_level_error_after():
    topic_id = uuid.uuid4()
    body = {"max_wait_ms": 0, "min_bytes": 1, "session_id": 7, "session_epoch": 1, "topics": [
        {"topic": "a", "topic_id": topic_id, "partitions": [{"partition": 3, "fetch_offset": 0, "partition_max_bytes": 1}]}]}
    old = _answer("Fetch", 12, body)
    assert (old.error_code, old.session_id) == (-1, 7)
    assert [(t.topic, [(p.partition_index, p.error_code, p.high_watermark) for p in t.partitions])
            for t in old.responses] == [("a", [(3, -1, -1)])]
    new = _answer("Fetch", 13, body)
    assert (new.error_code, new.responses) == (-1, [])


def test_metadata_names_each_topic_asked_and_none_for_all_topics():
    answer = _answer("Metadata", 12, {"topics": [{"name": None, "topic_id": uuid.UUID(int=5)}, {"name": "b"}]})
    assert [(t.name, t.topic_id, t.error_code) for t in answer.topics] == [("", uuid.UUID(int=5), -1),
                                                                          ("b", uuid.UUID(int=0), -1)]
    assert _answer("Metadata", 12, {"topics": None}).topics == []


def test_group_and_offset_answers_follow_kafka():
    join = _answer("JoinGroup", 7, {"group_id": "g", "session_timeout_ms": 10, "member_id": "", "protocol_type": "c",
                                    "protocols": []})
    assert (join.error_code, join.generation_id, join.protocol_name, join.member_id) == (-1, -1, None, "")
    assert _answer("JoinGroup", 6, {"group_id": "g"}).protocol_name == ""
    fetched = _answer("OffsetFetch", 1, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [4]}]})
    assert [(p.partition_index, p.committed_offset, p.error_code) for p in fetched.topics[0].partitions] == [(4, -1, -1)]
    assert _answer("OffsetFetch", 5, {"group_id": "g", "topics": None}).error_code == -1
    grouped = _answer("OffsetFetch", 9, {"groups": [{"group_id": "g1"}, {"group_id": "g2"}]})
    assert [(g.group_id, g.error_code) for g in grouped.groups] == [("g1", -1), ("g2", -1)]
    found = _answer("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": ["x", "y"]})
    assert [(c.key, c.node_id, c.error_code, c.error_message) for c in found.coordinators] == [
        ("x", -1, -1, "The server experienced an unexpected error when processing the request."),
        ("y", -1, -1, "The server experienced an unexpected error when processing the request.")]


def test_api_error_messages_are_not_sent_for_unknown_server_error_but_are_for_others():
    """ApiError.fromThrowable leaves UNKNOWN_SERVER_ERROR without a message (nothing of our failure
    reaches the client); the builder passes a message given for another error."""
    body = {"topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1}], "timeout_ms": 10}
    assert [(t.name, t.error_code, t.error_message) for t in _answer("CreateTopics", 5, body).topics] == [("t", -1, None)]
    answer = _answer("CreateTopics", 5, body, error=42, message="bad")
    assert [(t.error_code, t.error_message) for t in answer.topics] == [(42, "bad")]


def test_scram_alterations_answer_each_distinct_user_once_in_order():
    body = {"deletions": [{"name": "b", "mechanism": 1}], "upsertions": [
        {"name": "a", "mechanism": 1, "iterations": 4096, "salt": b"s", "salted_password": b"p"},
        {"name": "b", "mechanism": 2, "iterations": 4096, "salt": b"s", "salted_password": b"p"}]}
    assert [(r.user, r.error_code) for r in _answer("AlterUserScramCredentials", 0, body).results] == [
        ("a", -1), ("b", -1)]
