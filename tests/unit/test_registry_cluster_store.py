"""The registry's `_schemas` replay and writes as a cluster needs them (registry/store.py,
registry/cluster.py): a replicated replica is read up to its high watermark only, a broker that does
not lead `_schemas` never appends to it, and which requests count as writes (forwarded to the leader)."""

from __future__ import annotations

import asyncio

import pytest

from coordinator.offsets_store import AppendFailed
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch
from log.partition_log import PartitionLog
from registry.cluster import is_write
from registry.store import SchemaVersion, SchemasLog, schema_key, schema_value


class FakeLeadership:
    def __init__(self, waits_for_replicas: bool) -> None:
        self.waits_for_replicas = waits_for_replicas


class FakeBroker:
    def __init__(self, plog, replicated: bool, leads: bool) -> None:
        self.plog = plog
        self.leadership = FakeLeadership(replicated)
        self.leads = leads
        self.durable_waits = 0

    def partition_log(self, topic, partition):
        return self.plog if (topic, partition) == ("_schemas", 0) else None

    def leadership_error(self, topic, partition):
        return ErrorCode.NONE if self.leads else ErrorCode.NOT_LEADER_OR_FOLLOWER


def schema_record(subject: str, schema_id: int) -> tuple[bytes, bytes]:
    entry = SchemaVersion(subject, 1, schema_id, '"string"', "AVRO")
    return schema_key(subject, 1), schema_value(entry)


def append(plog, *records) -> None:
    plog.append(bytearray(build_batch([Record(i, 0, k, v) for i, (k, v) in enumerate(records)])), leader_epoch=0)


@pytest.fixture
def plog(tmp_path):
    log = PartitionLog(str(tmp_path / "_schemas-0"))
    append(log, schema_record("a-value", 1))
    append(log, schema_record("b-value", 2), schema_record("c-value", 3))
    yield log
    log.close()


def test_a_replicated_replica_is_read_up_to_its_high_watermark(plog):
    log = SchemasLog(FakeBroker(plog, replicated=True, leads=False))
    plog.high_watermark = 1
    log.catch_up()
    assert log.state.subject_names() == ["a-value"] and log.next_offset == 1
    plog.high_watermark = 3
    log.catch_up()
    assert log.state.subject_names() == ["a-value", "b-value", "c-value"] and log.state.max_id == 3


def test_a_single_node_reads_to_the_log_end(plog):
    log = SchemasLog(FakeBroker(plog, replicated=False, leads=True))
    plog.high_watermark = 0
    log.catch_up()
    assert log.state.subject_names() == ["a-value", "b-value", "c-value"]


def test_no_replica_no_state(plog):
    broker = FakeBroker(None, replicated=True, leads=False)
    log = SchemasLog(broker)
    log.catch_up()
    assert log.state.subject_names() == [] and log.next_offset == 0


def test_a_broker_that_does_not_lead_never_appends(plog):
    log = SchemasLog(FakeBroker(plog, replicated=True, leads=False))
    with pytest.raises(AppendFailed) as failed:
        asyncio.run(log.append([schema_record("d-value", 4)]))
    assert failed.value.error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert plog.log_end_offset == 3


@pytest.mark.parametrize(("method", "path", "write"), [
    ("POST", "subjects/s/versions", True),
    ("PUT", "config", True),
    ("PUT", "mode/s", True),
    ("DELETE", "subjects/s", True),
    ("DELETE", "subjects/s/versions/1", True),
    ("POST", "subjects/s", False),  # lookup
    ("POST", "compatibility/subjects/s/versions/latest", False),
    ("GET", "subjects/s/versions", False),
    ("HEAD", "subjects", False),
])
def test_which_requests_are_writes(method, path, write):
    assert is_write(method, path.split("/")) is write
