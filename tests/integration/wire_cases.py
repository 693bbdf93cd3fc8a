"""Shared helpers of the test_api_* files: exact requests through WireClient, and readable answers."""

from __future__ import annotations

import time
import uuid

from client import WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch, decode_batches, iter_records_with_offsets

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4


def unique(prefix: str) -> str:
    """A topic name no other test uses (tests share a broker)."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def batch(values, *, key: bytes | None = b"k", timestamps: list[int] | None = None, **kwargs) -> bytes:
    """A record batch of these values; timestamps (absolute ms) default to now."""
    base = timestamps[0] if timestamps else now_ms()
    records = [Record(i, (timestamps[i] - base) if timestamps else 0, key, v) for i, v in enumerate(values)]
    return build_batch(records, base_timestamp=base, **kwargs)


def create_topic(client: WireClient, name: str, partitions: int = 1, configs: dict | None = None,
                 version: int = 7) -> None:
    response = client.call("CreateTopics", version, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                    "configs": [{"name": k, "value": str(v)} for k, v in (configs or {}).items()]}],
        "timeout_ms": 10000, "validate_only": False})
    topic = response.topics[0]
    assert topic.error_code == 0, (ErrorCode(topic.error_code), topic.error_message)


def produce(client: WireClient, topic: str, records, *, partition: int = 0, acks: int = -1,
            version: int = 9, transactional_id: str | None = None):
    """One partition's answer to a Produce request."""
    response = client.call("Produce", version, {
        "transactional_id": transactional_id, "acks": acks, "timeout_ms": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}]})
    return response.responses[0].partition_responses[0]


def fetch_request(topic: str, offset: int = 0, *, partition: int = 0, max_wait_ms: int = 0, min_bytes: int = 0,
                  max_bytes: int = 1 << 20, partition_max_bytes: int = 1 << 20, isolation_level: int = 0,
                  session_id: int = 0, session_epoch: int = -1, current_leader_epoch: int = -1,
                  replica_id: int = -1) -> dict:
    return {"replica_id": replica_id, "replica_state": {"replica_id": replica_id, "replica_epoch": -1},
            "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": max_bytes, "isolation_level": isolation_level, "session_id": session_id,
            "session_epoch": session_epoch,
            "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "fetch_offset": offset, "partition_max_bytes": partition_max_bytes,
                 "current_leader_epoch": current_leader_epoch}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def fetch(client: WireClient, topic: str, offset: int = 0, *, version: int = 12, **kwargs):
    """One partition's answer to a Fetch request (see fetch_request for the knobs); from v13 the
    request names the topic by its id."""
    wait = kwargs.get("max_wait_ms", 0) / 1000
    request = fetch_request(topic, offset, **kwargs)
    if version >= 13:
        request["topics"][0]["topic_id"] = topic_id(client, topic)
    response = client.call("Fetch", version, request, wait=wait)
    assert response.error_code == 0, ErrorCode(response.error_code)
    return response.responses[0].partitions[0]


def batches_of(records) -> list:
    """(header, records) of each whole batch in a fetched record set."""
    return list(decode_batches(bytes(records or b"")))


def consumed(records) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(offset, timestamp, key, value) of every record, as a consumer sees them."""
    return [(offset, ts, r.key, r.value)
            for header, rs in batches_of(records) for offset, ts, r in iter_records_with_offsets(header, rs)]


def read_all(client: WireClient, topic: str, partition: int = 0, start: int = 0) -> list:
    out = []
    offset = start
    while True:
        part = fetch(client, topic, offset, partition=partition)
        assert part.error_code == 0, ErrorCode(part.error_code)
        got = [r for r in consumed(part.records) if r[0] >= offset]
        if not got:
            return out
        out += got
        offset = got[-1][0] + 1


def list_offset(client: WireClient, topic: str, timestamp: int, *, partition: int = 0, version: int = 7,
                isolation_level: int = 0, current_leader_epoch: int = -1):
    response = client.call("ListOffsets", version, {
        "replica_id": -1, "isolation_level": isolation_level,
        "topics": [{"name": topic, "partitions": [
            {"partition_index": partition, "timestamp": timestamp, "current_leader_epoch": current_leader_epoch}]}]})
    return response.topics[0].partitions[0]


def log_end_offset(client: WireClient, topic: str, partition: int = 0) -> int:
    answer = list_offset(client, topic, -1, partition=partition)
    assert answer.error_code == 0, ErrorCode(answer.error_code)
    return answer.offset


def init_producer_id(client: WireClient) -> tuple[int, int]:
    response = client.call("InitProducerId", 4, {"transactional_id": None, "transaction_timeout_ms": 60000,
                                                 "producer_id": -1, "producer_epoch": -1})
    assert response.error_code == 0
    return response.producer_id, response.producer_epoch


def describe_topic_configs(client: WireClient, topic: str, keys: list[str] | None = None, *, version: int = 4,
                           synonyms: bool = True, documentation: bool = False) -> dict:
    response = client.call("DescribeConfigs", version, {
        "resources": [{"resource_type": TOPIC_RESOURCE, "resource_name": topic, "configuration_keys": keys}],
        "include_synonyms": synonyms, "include_documentation": documentation})
    result = response.results[0]
    assert result.error_code == 0, (ErrorCode(result.error_code), result.error_message)
    return {c.name: c for c in result.configs}


def topic_id(client: WireClient, topic: str) -> uuid.UUID:
    """The topic's id, as Metadata gives it (the requests of KIP-516 name topics by it)."""
    answer = metadata(client, [topic]).topics[0]
    assert answer.error_code == 0, ErrorCode(answer.error_code)
    return answer.topic_id


def metadata(client: WireClient, topics: list[str] | None, *, version: int = 12, auto_create: bool = False):
    return client.call("Metadata", version, {
        "topics": None if topics is None else [{"name": t} for t in topics],
        "allow_auto_topic_creation": auto_create, "include_topic_authorized_operations": False})


def error_name(code: int) -> str:
    return ErrorCode(code).name
