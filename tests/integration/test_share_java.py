"""Share groups (KIP-932) with Kafka's own Java KafkaShareConsumer (kafka-clients 4.3.0, explicit
acknowledgement mode), several consumer processes sharing one partition, against kafka-wire and,
for the same scenario, against the reference Apache Kafka 4.3.0.

Each consumer is a JVM running compat/peers/src/ShareConsumerApp.java, which prints every record it
is given (offset, delivery count, value) and every acknowledgement commitSync() confirmed; the test
reads those lines.

- Three consumers acknowledge by the record's value: "accept" records are each delivered exactly
  once, to one of them; a "release" record is released on its first delivery and comes again (to
  any of them) with delivery count 2; a "reject" record is archived and never delivered again; a
  "poison" record released every time is archived at the group's delivery count limit (2).
- A consumer SIGKILLed while holding records without acknowledging them: once their acquisition
  locks run out (the group's share.record.lock.duration.ms, 2 s) two other consumers get exactly
  those records again, with delivery count 2, and every other record once.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from compat import peers
from tests.integration.peers_helpers import require_peers
# The same broker settings as the confluent-kafka scenarios (so a session shares one reference Kafka).
from tests.integration.test_share_groups import SHARE_CONFIG, wire  # noqa: F401 (wire: a fixture)

pytestmark = pytest.mark.timeout(300)

VERSION = "4.3.0"
WAIT_S = 60.0


@pytest.fixture(params=["kafka-wire", "kafka-4.3.0"])
def bootstrap(request, wire):
    require_peers(VERSION)
    if request.param == "kafka-wire":
        return wire.bootstrap
    return request.getfixturevalue("reference_kafka")(VERSION, SHARE_CONFIG).bootstrap


# -- helpers ------------------------------------------------------------------------------------------


def new_topic(bootstrap: str) -> str:
    topic = f"share-java-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    return topic


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    """One batch per record: a ShareFetch for max.poll.records (4) then takes 4 batches, never more
    (the default acquire mode gives whole batches), leaving the rest to the other members."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value=value.encode(), partition=0)
        assert producer.flush(30) == 0


def new_group(bootstrap: str, **configs: object) -> str:
    """A share group reading from the earliest offset, with the given group configs."""
    group = f"sgj-{uuid.uuid4().hex[:8]}"
    settings = {"share.auto.offset.reset": "earliest", **configs}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource("GROUP", group, incremental_configs=[
        ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in settings.items()])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    return group


def assigned_members(bootstrap: str, group: str) -> int:
    """How many members of the share group have a partition assigned (ShareGroupDescribe)."""
    from client import WireClient

    with WireClient(bootstrap) as client:
        described = client.call("ShareGroupDescribe", 1, {"group_ids": [group],
                                                          "include_authorized_operations": False}).groups[0]
    if described.error_code != 0:
        return 0
    return sum(1 for m in described.members if any(t.partitions for t in m.assignment.topic_partitions))


class Member:
    """One ShareConsumerApp process and what it printed."""

    def __init__(self, tmp_path, name: str, bootstrap: str, group: str, topic: str, mode: str,
                 max_poll_records: int = 4, gate: Path | None = None):
        self.name = name
        command = peers.java_command(VERSION, peers.SHARE_CONSUMER_APP, bootstrap, group, topic, mode,
                                     # Small polls, so that the records spread over the members.
                                     f"max.poll.records={max_poll_records}",
                                     # Subscribes only once the file `gate` exists.
                                     *([f"start.gate={gate}"] if gate else []))
        self.process = peers.JavaProcess(f"share consumer {name}", command, tmp_path / f"{name}.log").start()

    def lines(self, kind: str) -> list[list[str]]:
        out = []
        for line in self.process.output().splitlines():
            words = line.split(" ", 5)
            if len(words) >= 2 and words[0] == "SHARE" and words[1] == kind:
                out.append(words[2:])
        return out

    def records(self) -> list[tuple[int, int, str]]:
        """(offset, delivery count, value) of each record it was given."""
        return [(int(offset), int(count), value) for _, offset, count, value in self.lines("RECORD")]

    def acked(self) -> list[tuple[int, str]]:
        """(offset, type) of each acknowledgement commitSync() confirmed."""
        return [(int(offset), kind) for _, offset, kind in self.lines("ACKED")]

    def check(self) -> None:
        if not self.process.is_running():
            pytest.fail(f"{self.process.name} exited\n{self.process.log_report()}", pytrace=False)
        failed = self.lines("COMMIT-FAILED")
        assert not failed, f"{self.name}: commitSync failed: {failed}\n{self.process.log_report()}"


def wait_for(what: str, members: list[Member], done, seconds: float = WAIT_S) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        for m in members:
            m.check()
        if time.monotonic() > deadline:
            reports = "\n".join(m.process.log_report() for m in members)
            pytest.fail(f"no {what} within {seconds:.0f} s\n{reports}", pytrace=False)
        time.sleep(0.3)


def stop_all(members: list[Member]) -> None:
    for m in members:
        m.process.stop()


def deliveries(members: list[Member]) -> dict[int, list[int]]:
    """Offset -> the delivery counts it came with, over all members."""
    out: dict[int, list[int]] = defaultdict(list)
    for m in members:
        for offset, count, _ in m.records():
            out[offset].append(count)
    return {offset: sorted(counts) for offset, counts in out.items()}


# -- scenarios ----------------------------------------------------------------------------------------

KINDS = ("accept", "accept", "release", "accept", "reject", "accept", "poison", "accept")
RECORDS = 24
# The acknowledgements each kind of record ends with, in order (release: RELEASE at delivery 1,
# ACCEPT at 2; poison: RELEASE at 1 and at 2, the limit, which archives it).
ACKS = {"accept": ["ACCEPT"], "release": ["RELEASE", "ACCEPT"], "reject": ["REJECT"], "poison": ["RELEASE", "RELEASE"]}
COUNTS = {"accept": [1], "release": [1, 2], "reject": [1], "poison": [1, 2]}


def test_three_consumers_accept_release_reject_and_the_delivery_limit(bootstrap, tmp_path):
    topic = new_topic(bootstrap)
    group = new_group(bootstrap, **{"share.delivery.count.limit": 2, "share.record.lock.duration.ms": 15000})
    members = [Member(tmp_path, f"m{i}", bootstrap, group, topic, "rules") for i in range(3)]
    try:
        # Every member holds the partition before the records come (a member that joins gets it at its
        # next heartbeat once the group's target assignment is recomputed).
        # (The first share group of a reference Kafka waits for __share_group_state to be created.)
        wait_for("the partition assigned to all 3 members", members, lambda: assigned_members(bootstrap, group) == 3,
                 seconds=3 * WAIT_S)
        kinds = [KINDS[i % len(KINDS)] for i in range(RECORDS)]
        for start in range(0, RECORDS, 8):
            produce(bootstrap, topic, [f"{kinds[i]} {i}" for i in range(start, start + 8)])
            time.sleep(0.3)
        want_acks = sum(len(ACKS[k]) for k in kinds)
        wait_for("final acknowledgements", members, lambda: sum(len(m.acked()) for m in members) >= want_acks)
        # A record after all of them: once it is accepted, a wrongly redelivered rejected or archived
        # record (a lower offset, acquired first) would have come too.
        produce(bootstrap, topic, [f"accept {RECORDS}"])
        wait_for("the last record's acknowledgement", members,
                 lambda: any(offset == RECORDS for m in members for offset, _ in m.acked()))
        time.sleep(1)
    finally:
        stop_all(members)

    assert deliveries(members) == {**{i: COUNTS[k] for i, k in enumerate(kinds)}, RECORDS: [1]}
    acks: dict[int, list[str]] = defaultdict(list)
    for m in members:
        for offset, kind in m.acked():
            acks[offset].append(kind)
    assert {o: sorted(a) for o, a in acks.items()} == {
        **{i: sorted(ACKS[k]) for i, k in enumerate(kinds)}, RECORDS: ["ACCEPT"]}
    # The partition was shared: more than one member was given records.
    assert sum(1 for m in members if m.records()) >= 2, [len(m.records()) for m in members]


def test_consumers_started_together_share_records_produced_at_once(bootstrap, tmp_path):
    """Three members start together and the records come right away, before any holds the partition:
    as on Kafka 4.3, the first member's join assigns nothing (the partition's share state is not
    initialized yet), the target assignment is computed again no sooner than the group's
    share.assignment.interval.ms (10 s here; the three subscribe at once, when all their JVMs are up), and then each
    member takes it at its next heartbeat (every second here): every member is given some of the
    records, not the first to join all of them. One record per poll keeps any one member from
    taking them all within a heartbeat interval."""
    topic = new_topic(bootstrap)
    group = new_group(bootstrap, **{"share.assignment.interval.ms": 10000, "share.heartbeat.interval.ms": 1000})
    gate = tmp_path / "subscribe"
    members = [Member(tmp_path, f"m{i}", bootstrap, group, topic, "rules", max_poll_records=1, gate=gate)
               for i in range(3)]
    try:
        produce(bootstrap, topic, [f"accept {i}" for i in range(TOGETHER_RECORDS)])
        # The JVMs start at their own speeds (seconds apart on a loaded machine); they subscribe together.
        wait_for("every member's consumer created", members, lambda: all(m.lines("READY") for m in members),
                 seconds=2 * WAIT_S)
        gate.touch()
        # JVMs starting, a first share group of a reference Kafka creating __share_group_state, the
        # 10 s interval: more than the usual wait.
        wait_for("every record accepted", members,
                 lambda: sorted(o for m in members for o, _ in m.acked()) == list(range(TOGETHER_RECORDS)),
                 seconds=3 * WAIT_S)
        time.sleep(1)
    finally:
        stop_all(members)
    assert deliveries(members) == {i: [1] for i in range(TOGETHER_RECORDS)}
    assert all(m.records() for m in members), [len(m.records()) for m in members]


TOGETHER_RECORDS = 120


def test_sigkilled_consumer_records_are_redelivered_after_the_lock_timeout(bootstrap, tmp_path):
    topic = new_topic(bootstrap)
    produce(bootstrap, topic, [f"accept {i}" for i in range(12)])
    group = new_group(bootstrap, **{"share.record.lock.duration.ms": 2000})
    holder = Member(tmp_path, "holder", bootstrap, group, topic, "hold")
    try:
        wait_for("records held", [holder], lambda: holder.lines("HOLDING"))
    finally:
        holder.process.kill()
    held = sorted(offset for offset, _, _ in holder.records())
    assert held and [c for _, c, _ in holder.records()] == [1] * len(held)

    members = [Member(tmp_path, f"m{i}", bootstrap, group, topic, "rules") for i in range(2)]
    try:
        wait_for("every record accepted", members,
                 lambda: sorted(o for m in members for o, _ in m.acked()) == list(range(12)))
        time.sleep(1)
    finally:
        stop_all(members)
    # Each record once more, the held ones a second time (their locks ran out), none twice.
    assert deliveries(members) == {i: [2] if i in held else [1] for i in range(12)}
    assert all(kind == "ACCEPT" for m in members for _, kind in m.acked())
