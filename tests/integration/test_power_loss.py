"""A power cut under one broker: its log.dirs on compat/faults/lazyfs.py (file data held in memory
until fsynced, dropped by the cut), two real producers writing (librdkafka: one idempotent at
acks=all, one at acks=1), the broker SIGKILLed with every process of it and its unsynced writes
dropped while they write, then started again on what the disk kept. With log.flush.on.ack (the
default) every acknowledged record is there, in the order it was produced, none twice. With the
key off (Kafka's behaviour: acknowledged from the page cache) the same cut loses acknowledged
records: nothing fsyncs them before the cut.

Runs with one worker process or several (KAFKA_WIRE_TEST_WORKERS=2). Needs /dev/fuse, libfuse2 and
fusepy (compat/setup-faults.sh) and root to mount; skips without them, fails under CI=true.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from client import WireClient
from compat.faults.cluster import LazyMount
from compat.faults.lazyfs import WHY_UNAVAILABLE
from testing.broker_process import BrokerProcess
from test_durability import create_topic, read_partition
from tests.conftest import in_ci

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.timeout(180)

PARTITIONS = 3
ACKED_BEFORE_THE_CUT = 300   # per producer: the cut comes while both still have requests in flight
TOPIC = "power"


@pytest.fixture
def lazyfs_broker(tmp_path):
    """A BrokerProcess (not started) whose log.dirs is a lazyfs mount, and the mount."""
    if WHY_UNAVAILABLE or os.geteuid() != 0:
        why = WHY_UNAVAILABLE or "mounting lazyfs (FUSE) needs root"
        if in_ci():
            pytest.fail(f"CI=true, yet the power-loss test cannot run: {why}", pytrace=False)
        pytest.skip(why)
    made: list[tuple[BrokerProcess, LazyMount]] = []

    def make(config: dict) -> tuple[BrokerProcess, LazyMount]:
        broker = BrokerProcess(tmp_path / "broker", config=config)
        mount = LazyMount(tmp_path / "disk", broker.log_dir)
        mount.start()
        made.append((broker, mount))
        return broker, mount

    yield make
    for broker, mount in made:
        broker.kill_group()  # no worker left holding the mount
        mount.stop()


def cut_power(broker: BrokerProcess, mount: LazyMount) -> int:
    """SIGKILL of every process of the broker (workers included), then, once none can write any
    more, every unsynced write dropped; the bytes dropped."""
    broker.kill_group()
    return mount.power_loss()


class Writer:
    """One confluent-kafka producer writing `<name>:<sequence>` round-robin over the partitions; what
    was acknowledged, in order, and what failed."""

    def __init__(self, name: str, bootstrap: str, config: dict) -> None:
        self.name = name
        self.producer = confluent_kafka.Producer({
            "bootstrap.servers": bootstrap, "linger.ms": 1, "message.timeout.ms": 30000,
            "retry.backoff.ms": 20, "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200,
            "log_level": 2, **config})  # quiet: refused connections while the broker is down are expected
        self.acknowledged: list[tuple[int, int]] = []   # (sequence, partition) in acknowledgement order
        self.failed: list[str] = []
        self.sent = 0

    def _delivered(self, error, message) -> None:
        sequence = int(message.value().split(b":")[1])
        if error is None:
            self.acknowledged.append((sequence, message.partition()))
        else:
            self.failed.append(f"{message.value()!r}: {error}")

    def send_one(self) -> None:
        value = f"{self.name}:{self.sent}".encode()
        try:
            self.producer.produce(TOPIC, value=value, partition=self.sent % PARTITIONS, on_delivery=self._delivered)
        except BufferError:
            self.producer.poll(0.01)
            return
        self.sent += 1
        self.producer.poll(0)
        while len(self.producer) > 500:
            self.producer.poll(0.005)  # a bounded backlog: the flush after the restart stays short


def write_until_cut(broker: BrokerProcess, mount: LazyMount) -> tuple[list[Writer], int]:
    """Both writers running, the power cut once each has ACKED_BEFORE_THE_CUT acknowledgements (they
    keep writing through the cut), the broker started again and their backlogs flushed into it."""
    writers = [
        # librdkafka's idempotent producer: acks=all, retries with sequence numbers (no duplicates).
        Writer("idempotent", broker.bootstrap, {"enable.idempotence": True, "acks": "all"}),
        # acks=1 without retries: what failed is not sent again, so nothing can be written twice.
        Writer("acks1", broker.bootstrap, {"acks": 1, "retries": 0, "max.in.flight.requests.per.connection": 5}),
    ]
    stop = threading.Event()

    def write() -> None:
        while not stop.is_set():
            for writer in writers:
                writer.send_one()

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while min(len(w.acknowledged) for w in writers) < ACKED_BEFORE_THE_CUT:
            assert thread.is_alive() and time.monotonic() < deadline, \
                [(w.name, len(w.acknowledged), w.failed[:3]) for w in writers]
            time.sleep(0.005)
        dropped = cut_power(broker, mount)
        time.sleep(0.3)  # the writers go on against a dead broker
    finally:
        stop.set()
        thread.join(10)
    broker.start()
    for writer in writers:
        writer.producer.flush(60)
    return writers, dropped


def stored_offsets(broker: BrokerProcess) -> dict[str, dict[int, list[tuple[int, int]]]]:
    """writer name -> partition -> (sequence, offset) of every record in the log, in offset order."""
    found: dict[str, dict[int, list[tuple[int, int]]]] = {}
    with WireClient(broker.bootstrap) as client:
        for partition in range(PARTITIONS):
            for offset, value in read_partition(client, TOPIC, partition):
                name, sequence = value.decode().split(":")
                found.setdefault(name, {}).setdefault(partition, []).append((int(sequence), offset))
    return found


def losses(writer: Writer, stored: dict[int, list[tuple[int, int]]]) -> tuple[list[int], list[int], list[str]]:
    """(acknowledged sequences missing from the log, sequences stored twice, acknowledged records
    stored out of their produce order)."""
    present = {sequence for records in stored.values() for sequence, _ in records}
    lost = sorted(sequence for sequence, _ in writer.acknowledged if sequence not in present)
    all_stored = [sequence for records in stored.values() for sequence, _ in records]
    duplicated = sorted({s for s in all_stored if all_stored.count(s) > 1}) if len(all_stored) != len(present) else []
    acknowledged = {sequence for sequence, _ in writer.acknowledged}
    out_of_order = []
    for partition, records in stored.items():
        # The acknowledged ones, in offset order, have increasing sequences (produce order).
        sequences = [sequence for sequence, _ in records if sequence in acknowledged]
        out_of_order += [f"partition {partition}: {a} before {b}" for a, b in zip(sequences, sequences[1:]) if a >= b]
    return lost, duplicated, out_of_order


def test_every_acknowledged_record_survives_a_power_cut(lazyfs_broker):
    broker, mount = lazyfs_broker({})  # log.flush.on.ack: the default
    broker.start()
    with WireClient(broker.bootstrap) as client:
        create_topic(client, TOPIC, partitions=PARTITIONS)
    writers, dropped = write_until_cut(broker, mount)
    assert dropped >= 0, "lazyfs did not report the power loss"
    stored = stored_offsets(broker)
    for writer in writers:
        lost, duplicated, out_of_order = losses(writer, stored.get(writer.name, {}))
        print(f"{writer.name}: {writer.sent} sent, {len(writer.acknowledged)} acknowledged, "
              f"{len(writer.failed)} failed, {sum(map(len, stored.get(writer.name, {}).values()))} stored; "
              f"{dropped} unsynced bytes dropped by the cut")
        assert len(writer.acknowledged) >= ACKED_BEFORE_THE_CUT
        assert lost == [], f"{writer.name}: {len(lost)} acknowledged records lost, e.g. {lost[:10]}"
        assert duplicated == [], f"{writer.name}: stored twice: {duplicated[:10]}"
        assert out_of_order == [], f"{writer.name}: {out_of_order[:10]}"
    # The idempotent producer's requests in flight at the cut are sent again and land once.
    assert writers[0].failed == [], writers[0].failed[:5]
    broker.stop()
    assert broker.unclean_exits == []


def test_with_the_key_off_a_power_cut_loses_acknowledged_records(lazyfs_broker):
    """Kafka's behaviour (flush.messages and flush.ms at their defaults): the acknowledgement comes
    from the page cache, and nothing syncs the log before the cut, so what both writers had
    acknowledged is gone."""
    broker, mount = lazyfs_broker({"log.flush.on.ack": "false"})
    broker.start()
    with WireClient(broker.bootstrap) as client:
        create_topic(client, TOPIC, partitions=PARTITIONS)
    writers, dropped = write_until_cut(broker, mount)
    assert dropped > 0
    stored = stored_offsets(broker)
    for writer in writers:
        lost, _, _ = losses(writer, stored.get(writer.name, {}))
        print(f"{writer.name}: {len(writer.acknowledged)} acknowledged, {len(lost)} of them lost, "
              f"{len(writer.failed)} failed; {dropped} unsynced bytes dropped by the cut")
        assert len(lost) >= ACKED_BEFORE_THE_CUT, f"{writer.name}: only {len(lost)} acknowledged records lost"
