"""The data path is the Broker's, once, for both modes: what a cluster changes stands behind
PartitionLeadership (broker/leadership.py), never an override of the data path."""

from __future__ import annotations

import asyncio
import inspect
import time

import pytest

from broker.cluster.cluster_broker import ClusterBroker
from broker.cluster.replica_manager import ReplicaManager
from broker.config import BrokerConfig
from broker.leadership import PartitionLeadership, SingleNodeLeadership
from broker.node import Broker
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch

DATA_PATH = ("append_records", "leader_appended", "read_partition", "list_offset", "end_offset_for_epoch",
             "delete_records", "write_txn_markers", "leadership_error", "await_replication", "waits_for_replicas")


def test_the_cluster_broker_overrides_no_part_of_the_data_path():
    assert [name for name in DATA_PATH if name in vars(ClusterBroker)] == []


@pytest.mark.parametrize("cls", [SingleNodeLeadership, ReplicaManager], ids=lambda cls: cls.__name__)
def test_both_leaderships_have_every_member_of_the_protocol(cls):
    assert isinstance(getattr(cls, "waits_for_replicas", None), bool)
    for name, declared in vars(PartitionLeadership).items():
        if not inspect.isfunction(declared) or name.startswith("_"):
            continue
        method = getattr(cls, name, None)
        assert callable(method), f"{cls.__name__} lacks {name}()"
        assert list(inspect.signature(method).parameters) == list(inspect.signature(declared).parameters), name
        assert inspect.iscoroutinefunction(method) == inspect.iscoroutinefunction(declared), name


class Refusing(SingleNodeLeadership):
    """A single node's leadership that leads nothing of topic "led-elsewhere" and counts appends."""

    waits_for_replicas = True

    def __init__(self, logs) -> None:
        super().__init__(logs)
        self.appended: list[tuple[str, int, int]] = []

    def leadership_error(self, topic: str, partition: int) -> ErrorCode:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER if topic == "led-elsewhere" else super().leadership_error(topic, partition)

    def leader_appended(self, topic: str, partition: int, plog) -> None:
        self.appended.append((topic, partition, plog.log_end_offset))  # the high watermark stays


def _batch(*values: bytes) -> bytearray:
    return bytearray(build_batch([Record(i, 0, None, v) for i, v in enumerate(values)],
                                 base_timestamp=int(time.time() * 1000)))


def test_the_data_path_asks_the_leadership_it_was_given(tmp_path):
    broker = Broker(BrokerConfig({"log.dirs": str(tmp_path), "listeners": "PLAINTEXT://127.0.0.1:0"}))
    broker.load()
    try:
        leadership = broker.leadership = Refusing(broker.logs)
        broker.create_topic("led-here", 1, 1, {})
        broker.create_topic("led-elsewhere", 1, 1, {})
        assert broker.waits_for_replicas

        result = broker.append_records("led-here", 0, _batch(b"a", b"b"))
        assert result.base_offset == 0 and leadership.appended == [("led-here", 0, 2)]
        plog = broker.logs.get("led-here", 0)
        assert plog.high_watermark == 0  # the leadership did not move it
        read = broker.read_partition("led-here", 0, 0, max_bytes=1 << 20, min_one=True, read_committed=False)
        assert read.error == ErrorCode.NONE and read.high_watermark == 0

        refused = ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert broker.leadership_error("led-elsewhere", 0) == refused
        assert broker.read_partition("led-elsewhere", 0, 0, max_bytes=100, min_one=True,
                                     read_committed=False).error == refused
        assert broker.list_offset("led-elsewhere", 0, -1, read_committed=False)[0] == refused
        assert broker.end_offset_for_epoch("led-elsewhere", 0, 0)[0] == refused
        assert broker.delete_records("led-elsewhere", 0, 0)[0] == refused
        markers = broker.write_txn_markers(7, 0, 0, True, [("led-elsewhere", 0), ("led-here", 0)])
        assert list(markers.items()) == [(("led-elsewhere", 0), refused), (("led-here", 0), ErrorCode.NONE)]
        assert leadership.appended[-1] == ("led-here", 0, 3)  # the marker, told to the leadership too
        assert asyncio.run(broker.await_replication([("led-here", 0)], 10)) == {("led-here", 0): ErrorCode.NONE}
    finally:
        broker.close()


def test_a_new_leaders_latest_offset_waits_for_its_high_watermark(tmp_path):
    """KAFKA-2334: until the in-sync replicas fetched from a new leader, its latest offset (and a
    timestamp found at or past its high watermark) is OFFSET_NOT_AVAILABLE to consumers."""

    class NewLeader(SingleNodeLeadership):
        def high_watermark_behind_epoch_start(self, topic: str, partition: int) -> bool:
            return True

    broker = Broker(BrokerConfig({"log.dirs": str(tmp_path), "listeners": "PLAINTEXT://127.0.0.1:0"}))
    broker.load()
    try:
        broker.create_topic("t", 1, 1, {})
        broker.append_records("t", 0, _batch(b"a"))
        broker.leadership = NewLeader(broker.logs)
        assert broker.list_offset("t", 0, -1, read_committed=False)[0] == ErrorCode.OFFSET_NOT_AVAILABLE
        assert broker.list_offset("t", 0, int(time.time() * 1000) + 60_000,
                                  read_committed=False)[0] == ErrorCode.OFFSET_NOT_AVAILABLE
        assert broker.list_offset("t", 0, -2, read_committed=False)[:2] == (ErrorCode.NONE, 0)
        # A replica's ListOffsets (from_consumer=False) reads the log end offset regardless.
        assert broker.list_offset("t", 0, -1, read_committed=False, from_consumer=False)[:2] == (ErrorCode.NONE, 1)
    finally:
        broker.close()
