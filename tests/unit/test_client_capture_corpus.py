"""The capture of real clients' requests (compat/conformance/capture.py): decoding, placeholders, dedup."""

from __future__ import annotations

import uuid

from compat.conformance.capture import build_corpus
from kafka_wire.framing import encode_request_frame
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.record_codec import Record, build_batch


def frame(api: str, version: int, body, client_id: str = "tester") -> tuple[str, str, int, int, bytes]:
    encoded = encode_request_frame(APIS_BY_NAME[api], version, 7, client_id, body)
    return ("prog", client_id, APIS_BY_NAME[api].key, version, encoded[4:])  # the proxy keeps no size prefix


def metadata(topic: str):
    return frame("Metadata", 12, {"topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}],
                                  "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})


def test_names_become_placeholders_and_repeats_are_kept_once():
    corpus = build_corpus([metadata("orders-1234"), metadata("payments-5678"), metadata("orders-1234")])
    entries = corpus["entries"]
    assert corpus["requests_seen"] == 3
    assert len(entries) == 1  # the same client, API, version and shape
    assert entries[0]["body"]["topics"][0]["name"] == "${topic:0}"
    assert entries[0]["body"]["topics"][0]["topic_id"] == "${uuid:zero}"


def test_topic_ids_named_by_answers_and_groups_and_members_marked():
    topic_id = uuid.uuid4()
    fetch = frame("Fetch", 13, {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20,
                                "isolation_level": 0, "session_id": 99, "session_epoch": 3, "topics": [
                                    {"topic_id": topic_id, "partitions": [
                                        {"partition": 2, "current_leader_epoch": -1, "fetch_offset": 0,
                                         "last_fetched_epoch": -1, "log_start_offset": -1,
                                         "partition_max_bytes": 1 << 20}]}],
                                "forgotten_topics_data": [], "rack_id": ""})
    heartbeat = frame("Heartbeat", 4, {"group_id": "my-group", "generation_id": 3, "member_id": "tester-abc",
                                       "group_instance_id": None})
    corpus = build_corpus([metadata("orders"), fetch, heartbeat], {str(topic_id): "orders"})
    by_api = {e["api"]: e["body"] for e in corpus["entries"]}
    assert by_api["Fetch"]["topics"][0]["topic_id"] == "${topic_id:0}"
    assert (by_api["Fetch"]["session_id"], by_api["Fetch"]["session_epoch"]) == ("${session}", "${session}")
    assert corpus["topics"]["${topic:0}"] == 3  # partition 2 named
    assert by_api["Heartbeat"]["group_id"] == "${group:0}" and by_api["Heartbeat"]["member_id"] == "${member}"


def test_idempotent_and_transactional_batches_marked():
    def produce(transactional_id=None, **batch_options):
        batch = build_batch([Record(0, 0, b"k", b"v")], base_timestamp=0, **batch_options)
        return frame("Produce", 9, {"transactional_id": transactional_id, "acks": -1, "timeout_ms": 1000,
                                    "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}]})

    plain, idem, txn, orphan = (build_corpus([f])["entries"][0] for f in (
        produce(), produce(producer_id=42, producer_epoch=0, base_sequence=0),
        produce("app-txn", producer_id=42, producer_epoch=0, base_sequence=0, is_transactional=True),
        produce(None, producer_id=42, producer_epoch=0, base_sequence=0, is_transactional=True)))
    assert "idempotent" not in plain and "skip" not in plain and "transactional" not in plain
    assert idem.get("idempotent") and "skip" not in idem and "transactional" not in idem
    # The replay begins a transaction of its own for it (client_replay.py).
    assert txn.get("transactional") and "skip" not in txn and txn["body"]["transactional_id"] == "${txn:0}"
    assert "no transactional id" in orphan["skip"]


def test_add_partitions_to_txn_v0_names_marked():
    corpus = build_corpus([frame("AddPartitionsToTxn", 0, {
        "v3_and_below_transactional_id": "app-txn", "v3_and_below_producer_id": 7, "v3_and_below_producer_epoch": 0,
        "v3_and_below_topics": [{"name": "orders-1", "partitions": [0, 2]}]})])
    body = corpus["entries"][0]["body"]
    assert body["v3_and_below_transactional_id"] == "${txn:0}"
    assert body["v3_and_below_topics"][0]["name"] == "${topic:0}"
    assert corpus["topics"] == {"${topic:0}": 3}
