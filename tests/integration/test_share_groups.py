"""Share groups (KIP-932) with a real share consumer: confluent-kafka's ShareConsumer (librdkafka
2.16) against kafka-wire and, for the same scenario, against the reference Apache Kafka 4.3.0,
comparing what the consumers see.

Scenarios: two consumers of one share group split one partition's records with none delivered to
both; a RELEASE redelivers the record (delivery count 2); an acquisition lock that runs out
redelivers to another consumer; the delivery count limit archives a record released too often;
read_committed (share.isolation.level) skips aborted transactions and stops at the last stable
offset, with a real transactional producer; a ShareFetch at the record-lock limit waits for locks
to free (raw ShareFetch / ShareAcknowledge); the share coordinator's inter-broker APIs (83-87)
initialize, write, read, fence and delete a share-partition's state; and (kafka-wire) a restart keeps accepted records accepted and redelivers unacknowledged ones.
Runs with 1 worker and with KAFKA_WIRE_TEST_WORKERS=2.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
if not hasattr(confluent_kafka, "ShareConsumer"):
    pytest.skip("confluent-kafka without ShareConsumer (needs 2.16+)", allow_module_level=True)

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer  # noqa: E402
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic  # noqa: E402

from testing.broker_process import BrokerProcess  # noqa: E402

pytestmark = pytest.mark.timeout(300)

LOCK_MS = 2000
# Both brokers: a short acquisition lock (Kafka's lower bound is group.share.min.record.lock.duration.ms),
# and a group may heartbeat every second (share.heartbeat.interval.ms, test_share_java.py).
SHARE_CONFIG = {"group.share.min.record.lock.duration.ms": 1000, "group.share.record.lock.duration.ms": LOCK_MS,
                "group.share.min.heartbeat.interval.ms": 1000}


@pytest.fixture(scope="module")
def wire(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("share-broker"), config=SHARE_CONFIG)
    broker.start()
    yield broker
    problems = broker.finish()
    assert not problems, "\n".join(problems) + broker.log_report()


@pytest.fixture(params=["kafka-wire", "kafka-4.3.0"])
def bootstrap(request, wire):
    if request.param == "kafka-wire":
        return wire.bootstrap
    return request.getfixturevalue("reference_kafka")("4.3.0", SHARE_CONFIG).bootstrap


# -- helpers ------------------------------------------------------------------------------------------


def new_topic(bootstrap: str, records: int, partitions: int = 1) -> str:
    topic = f"share-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    produce(bootstrap, topic, range(records))
    return topic


def produce(bootstrap: str, topic: str, values) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in values:
        producer.produce(topic, value=f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0


def new_group(bootstrap: str, **configs: str) -> str:
    """A share group reading from the earliest offset, with the given group configs."""
    group = f"sg-{uuid.uuid4().hex[:8]}"
    settings = {"share.auto.offset.reset": "earliest", **{k.replace("_", "."): v for k, v in configs.items()}}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource("GROUP", group, incremental_configs=[
        ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in settings.items()])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    return group


def consumer(bootstrap: str, group: str, topic: str, explicit: bool = False) -> ShareConsumer:
    config = {"bootstrap.servers": bootstrap, "group.id": group}
    if explicit:
        config["share.acknowledgement.mode"] = "explicit"
    c = ShareConsumer(config)
    c.subscribe([topic])
    return c


def poll_until(c: ShareConsumer, want: int, timeout: float = 30.0) -> list:
    """Messages from polls until `want` came or the time is up (errors fail the test)."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        for m in c.poll(0.5):
            assert m.error() is None, m.error()
            got.append(m)
    return got


def describe_share_group(bootstrap: str, group: str) -> dict:
    """ShareGroupDescribe of one group: state and members (id, epoch, assignment)."""
    from client import WireClient

    with WireClient(bootstrap) as client:
        described = client.call("ShareGroupDescribe", 1, {"group_ids": [group],
                                                          "include_authorized_operations": False}).groups[0]
    assert described.error_code == 0, described
    return {"state": described.group_state, "members": sorted(
        (m.member_id, m.member_epoch, [(t.topic_name, list(t.partitions)) for t in m.assignment.topic_partitions])
        for m in described.members)}


def offsets(messages) -> list[int]:
    return [m.offset() for m in messages]


# -- scenarios ----------------------------------------------------------------------------------------


def test_two_consumers_split_a_partition_without_duplicates(bootstrap):
    topic = new_topic(bootstrap, 40)
    group = new_group(bootstrap)
    a, b = consumer(bootstrap, group, topic), consumer(bootstrap, group, topic)
    try:
        seen = {"a": [], "b": []}
        deadline = time.monotonic() + 40
        while len(seen["a"]) + len(seen["b"]) < 40 and time.monotonic() < deadline:
            for name, c in (("a", a), ("b", b)):
                for m in c.poll(0.3):
                    assert m.error() is None, m.error()
                    seen[name].append(m.offset())
        # Implicit acknowledgement accepts each poll's records on the next poll: none comes twice.
        assert sorted(seen["a"] + seen["b"]) == list(range(40))
        assert not set(seen["a"]) & set(seen["b"])
    finally:
        a.close()
        b.close()


def test_one_consumer_reads_every_partition(bootstrap):
    """Partitions spread over workers (KAFKA_WIRE_TEST_WORKERS=2): the share state's worker reads
    the others' logs."""
    topic = new_topic(bootstrap, 0, partitions=4)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % 4)
    assert producer.flush(30) == 0
    c = consumer(bootstrap, new_group(bootstrap), topic)
    try:
        got = poll_until(c, 20)
        assert sorted((m.partition(), m.offset()) for m in got) == [(p, o) for p in range(4) for o in range(5)]
    finally:
        c.close()


def test_release_redelivers_with_a_higher_delivery_count(bootstrap):
    topic = new_topic(bootstrap, 5)
    group = new_group(bootstrap)
    c = consumer(bootstrap, group, topic, explicit=True)
    try:
        first = poll_until(c, 5)
        assert offsets(first) == [0, 1, 2, 3, 4]
        assert [m.delivery_count() for m in first] == [1] * 5
        for m in first:
            c.acknowledge(m, AcknowledgeType.RELEASE if m.offset() == 2 else AcknowledgeType.ACCEPT)
        c.commit_sync(30)
        again = poll_until(c, 1)
        assert [(m.offset(), m.delivery_count()) for m in again] == [(2, 2)]
        for m in again:
            c.acknowledge(m, AcknowledgeType.ACCEPT)
        c.commit_sync(30)
        assert poll_until(c, 1, timeout=3) == []
    finally:
        c.close()


def test_lock_timeout_redelivers_to_another_consumer(bootstrap):
    topic = new_topic(bootstrap, 3)
    group = new_group(bootstrap)
    holder = consumer(bootstrap, group, topic, explicit=True)
    try:
        held = poll_until(holder, 3)
        assert offsets(held) == [0, 1, 2]
        # The holder neither acknowledges nor polls: its locks run out (2 s) and the records go to
        # the next consumer that asks, delivered a second time.
        other = consumer(bootstrap, group, topic)
        try:
            started = time.monotonic()
            again = poll_until(other, 3, timeout=30)
            assert [(m.offset(), m.delivery_count()) for m in again] == [(0, 2), (1, 2), (2, 2)]
            assert time.monotonic() - started >= (LOCK_MS - 500) / 1000 * 0.5
        finally:
            other.close()
    finally:
        holder.close()


def test_delivery_count_limit_archives(bootstrap):
    topic = new_topic(bootstrap, 2)
    group = new_group(bootstrap, **{"share.delivery.count.limit": "2"})
    c = consumer(bootstrap, group, topic, explicit=True)
    try:
        deliveries = []
        for _ in range(2):
            got = poll_until(c, 2)
            deliveries.append([(m.offset(), m.delivery_count()) for m in got])
            for m in got:
                c.acknowledge(m, AcknowledgeType.RELEASE)
            c.commit_sync(30)
        assert deliveries == [[(0, 1), (1, 1)], [(0, 2), (1, 2)]]
        # Released at the limit: archived, never delivered again; a new record still is.
        assert poll_until(c, 1, timeout=3) == []
        produce(bootstrap, topic, [2])
        last = poll_until(c, 1)
        assert [(m.offset(), m.delivery_count()) for m in last] == [(2, 1)]
        for m in last:
            c.acknowledge(m, AcknowledgeType.ACCEPT)
        c.commit_sync(30)
    finally:
        c.close()


def _transaction(producer: Producer, topic: str, values, commit: bool | None) -> None:
    """One transaction of `values` to partition 0: committed, aborted, or (None) left open."""
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value=value.encode(), partition=0)
    assert producer.flush(30) == 0
    if commit is True:
        producer.commit_transaction(30)
    elif commit is False:
        producer.abort_transaction(30)


def values(messages) -> list[str]:
    return [m.value().decode() for m in messages]


def test_read_committed_skips_aborted_transactions_and_stops_at_the_last_stable_offset(bootstrap):
    """share.isolation.level=read_committed: records of an aborted transaction are never delivered
    (Kafka archives them), nor records of a transaction still open; they come once it commits. A
    read_uncommitted group of the same topic gets everything, aborted records included."""
    topic = new_topic(bootstrap, 0)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    _transaction(producer, topic, ["c0", "c1"], True)
    _transaction(producer, topic, ["a0", "a1", "a2"], False)
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic, value=b"p0", partition=0)
    assert plain.flush(30) == 0
    _transaction(producer, topic, ["c2"], True)
    _transaction(producer, topic, ["o0", "o1"], None)

    committed_group = new_group(bootstrap, **{"share.isolation.level": "read_committed"})
    c = consumer(bootstrap, committed_group, topic)
    try:
        assert values(poll_until(c, 4)) == ["c0", "c1", "p0", "c2"]
        assert poll_until(c, 1, timeout=3) == []
        producer.commit_transaction(30)
        assert values(poll_until(c, 2)) == ["o0", "o1"]
        assert poll_until(c, 1, timeout=2) == []
    finally:
        c.close()

    uncommitted = consumer(bootstrap, new_group(bootstrap), topic)
    try:
        assert values(poll_until(uncommitted, 9)) == ["c0", "c1", "a0", "a1", "a2", "p0", "c2", "o0", "o1"]
    finally:
        uncommitted.close()


def _join_share_group(client, group: str, topic: str, member_id: str) -> None:
    """ShareGroupHeartbeat until the member is in the group and assigned the topic's partition."""
    deadline = time.monotonic() + 30
    epoch = 0
    while time.monotonic() < deadline:
        found = client.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": [group]}).coordinators[0]
        if found.error_code == 0:
            break
        time.sleep(0.2)
    while time.monotonic() < deadline:
        beat = client.call("ShareGroupHeartbeat", 1, {
            "group_id": group, "member_id": member_id, "member_epoch": epoch, "rack_id": None,
            "subscribed_topic_names": [topic] if epoch == 0 else None})
        if beat.error_code == 0:
            epoch = beat.member_epoch
            if beat.assignment is not None and beat.assignment.topic_partitions:
                return
        elif beat.error_code not in (14, 15, 16):
            raise AssertionError(f"ShareGroupHeartbeat: error {beat.error_code}")
        time.sleep(0.3)
    raise AssertionError("the member was not assigned the partition")


def _share_fetch(client, group: str, member_id: str, epoch: int, topic_id, max_wait_ms: int, acks=()):
    """One ShareFetch v1 of partition 0: the response's partition entries."""
    answer = client.call("ShareFetch", 1, {
        "group_id": group, "member_id": member_id, "share_session_epoch": epoch, "max_wait_ms": max_wait_ms,
        "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 1000, "batch_size": 1000,
        "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": list(acks)}]}],
        "forgotten_topics_data": []}, wait=max_wait_ms / 1000)
    assert answer.error_code == 0, answer
    return [p for t in answer.responses for p in t.partitions]


def test_fetch_at_the_record_lock_limit_waits_until_locks_free(bootstrap):
    """group.share.partition.max.record.locks reached: another member's ShareFetch waits (up to its
    max wait) until locks free up, as Kafka's delayed share fetch does, and then gets the records
    that were held back, instead of an empty answer at once."""
    from client import WireClient

    topic = new_topic(bootstrap, 100)
    group = new_group(bootstrap, **{"share.partition.max.record.locks": "100", "share.record.lock.duration.ms": "60000"})
    with WireClient(bootstrap) as client:
        topic_id = client.call("Metadata", 12, {"topics": [{"name": topic}]}).topics[0].topic_id
    holder_id, waiter_id = "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg"
    with WireClient(bootstrap, timeout=60) as holder, WireClient(bootstrap, timeout=60) as waiter:
        _join_share_group(holder, group, topic, holder_id)
        _join_share_group(waiter, group, topic, waiter_id)
        held, epoch = [], 0
        deadline = time.monotonic() + 30
        while not held and time.monotonic() < deadline:  # until the share-partition is initialized
            held = [a for p in _share_fetch(holder, group, holder_id, epoch, topic_id, 500) for a in p.acquired_records]
            epoch += 1
        assert [(a.first_offset, a.last_offset) for a in held] == [(0, 99)]
        produce(bootstrap, topic, range(100, 105))  # offsets 100-104: past the limit while 0-99 are held

        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(_share_fetch, waiter, group, waiter_id, 0, topic_id, 30_000)
            time.sleep(2)  # the waiter's fetch is in the broker before the holder lets go
            assert not waiting.done(), waiting.result()
            answer = holder.call("ShareAcknowledge", 1, {
                "group_id": group, "member_id": holder_id, "share_session_epoch": epoch,
                "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                    {"first_offset": 0, "last_offset": 99, "acknowledge_types": [1]}]}]}]})
            assert answer.error_code == 0 and answer.responses[0].partitions[0].error_code == 0, answer
            got = [(a.first_offset, a.last_offset) for p in waiting.result(60) for a in p.acquired_records]
        assert got == [(100, 104)]


def test_a_share_fetch_of_a_large_partition_acquires_max_records(wire):
    """ShareFetch asking for 500 records with a 50 MiB max_bytes (what franz-go and the Java share
    consumer send) over 3,000 records of 1 KiB: 500 or more are acquired (whole batches) and only
    their batches come back. kafka-wire sizes its read to what it may acquire (64 KiB first, then
    500 records at the size per record seen there) instead of reading 50 MiB; that must not make it
    deliver fewer."""
    from client import WireClient

    topic = new_topic(wire.bootstrap, 0)
    producer = Producer({"bootstrap.servers": wire.bootstrap, "linger.ms": 0, "batch.num.messages": 7})
    for _ in range(3000):
        producer.produce(topic, value=b"x" * 1024, partition=0)
    assert producer.flush(30) == 0
    group = new_group(wire.bootstrap)
    with WireClient(wire.bootstrap) as client:
        topic_id = client.call("Metadata", 12, {"topics": [{"name": topic}]}).topics[0].topic_id
    member_id = "AAAAAAAAAAAAAAAAAAAAAw"
    with WireClient(wire.bootstrap, timeout=60) as client:
        _join_share_group(client, group, topic, member_id)
        parts = []
        for epoch in range(30):  # until the share-partition is initialized
            answer = client.call("ShareFetch", 1, {
                "group_id": group, "member_id": member_id, "share_session_epoch": epoch, "max_wait_ms": 500,
                "min_bytes": 1, "max_bytes": 50 << 20, "max_records": 500, "batch_size": 500,
                "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0,
                                                                    "acknowledgement_batches": []}]}],
                "forgotten_topics_data": []}, wait=0.5)
            assert answer.error_code == 0, answer
            parts = [p for t in answer.responses for p in t.partitions if p.acquired_records]
            if parts:
                break
    acquired = [(a.first_offset, a.last_offset) for a in parts[0].acquired_records]
    count = sum(last - first + 1 for first, last in acquired)
    assert acquired[0][0] == 0 and 500 <= count < 3000, acquired
    assert 500 * 1024 <= len(parts[0].records) < 3000 * 1024


def _state_call(client, api: str, version: int, group: str, topic_id, **fields):
    """One share state request (83-87) for partition 0 of the topic: that partition's result."""
    answer = client.call(api, version, {"group_id": group, "topics": [
        {"topic_id": topic_id, "partitions": [{"partition": 0, **fields}]}]})
    return answer.results[0].partitions[0]


def test_share_coordinator_apis_initialize_write_read_fence_and_delete_state(bootstrap):
    """The share coordinator's inter-broker APIs, as a share-partition leader uses them: the
    coordinator of "group:topicId:0" is found (FindCoordinator v6, key type 2); InitializeShareGroupState
    starts the state at offset 5, WriteShareGroupState lays batches over it, ReadShareGroupState and
    ReadShareGroupStateSummary read it back, a write from an older leader epoch is fenced, and
    DeleteShareGroupState removes it."""
    from client import WireClient
    from coordinator.share_state import kafka_uuid_string

    topic = new_topic(bootstrap, 0)
    group = f"sg-{uuid.uuid4().hex[:8]}"
    with WireClient(bootstrap) as client:
        topic_id = client.call("Metadata", 12, {"topics": [{"name": topic}]}).topics[0].topic_id
        key = f"{group}:{kafka_uuid_string(topic_id)}:0"
        deadline = time.monotonic() + 30
        while True:  # Kafka creates __share_group_state on the first lookup
            [found] = client.call("FindCoordinator", 6, {"key_type": 2, "coordinator_keys": [key]}).coordinators
            if found.error_code == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert found.error_code == 0, found
    with WireClient(f"{found.host}:{found.port}") as coordinator:
        def call(api, version, **fields):
            deadline = time.monotonic() + 30
            while True:  # the coordinator may still be loading its state partition
                result = _state_call(coordinator, api, version, group, topic_id, **fields)
                # Kafka 4.3.0: NOT_COORDINATOR while its shard loads, UNKNOWN_TOPIC_OR_PARTITION until
                # its metadata has the new topic.
                if result.error_code not in (3, 14, 15, 16) or time.monotonic() > deadline:
                    return result
                time.sleep(0.3)

        initialized = call("InitializeShareGroupState", 0, state_epoch=0, start_offset=5)
        assert initialized.error_code == 0, initialized
        batches = [{"first_offset": 5, "last_offset": 7, "delivery_state": 2, "delivery_count": 1},
                   {"first_offset": 8, "last_offset": 8, "delivery_state": 4, "delivery_count": 2}]
        written = call("WriteShareGroupState", 1, state_epoch=0, leader_epoch=1, start_offset=5,
                       delivery_complete_count=4, state_batches=batches)
        assert written.error_code == 0, written
        read = call("ReadShareGroupState", 0, leader_epoch=1)
        assert (read.error_code, read.state_epoch, read.start_offset) == (0, 0, 5), read
        assert [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in read.state_batches] == \
            [(5, 7, 2, 1), (8, 8, 4, 2)]
        summary = call("ReadShareGroupStateSummary", 1, leader_epoch=1)
        assert (summary.error_code, summary.state_epoch, summary.leader_epoch, summary.start_offset,
                summary.delivery_complete_count) == (0, 0, 1, 5, 4), summary
        stale = call("WriteShareGroupState", 1, state_epoch=0, leader_epoch=0, start_offset=9,
                     delivery_complete_count=0, state_batches=[])
        assert stale.error_code == 74, stale  # FENCED_LEADER_EPOCH
        assert call("ReadShareGroupState", 0, leader_epoch=1).start_offset == 5
        deleted = call("DeleteShareGroupState", 0)
        assert deleted.error_code == 0, deleted
        # Writing a share-partition never initialized is refused; initializing one of a topic that
        # does not exist too.
        uninitialized = _state_call(coordinator, "WriteShareGroupState", 1, group, uuid.uuid4(), state_epoch=0,
                                    leader_epoch=1, start_offset=0, delivery_complete_count=0, state_batches=[])
        assert (uninitialized.error_code, uninitialized.error_message) == \
            (42, "Write operation on uninitialized share partition not allowed."), uninitialized
        unknown = _state_call(coordinator, "InitializeShareGroupState", 0, group, uuid.uuid4(), state_epoch=0,
                              start_offset=0)
        assert unknown.error_code == 3, unknown  # UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("reset, first", [("latest", 3), ("by_duration:PT1H", 0), ("earliest", 0)])
def test_share_auto_offset_reset_places_the_start(bootstrap, reset, first):
    """share.auto.offset.reset, read when the share-partition is first used: latest skips the three
    records already there; a duration reaching back before them, and earliest, deliver them. (A
    record goes in every 2 s until one comes back: Kafka starts the share-partition when it assigns
    it, a moment after the consumer joined.)"""
    topic = new_topic(bootstrap, 3)
    group = new_group(bootstrap, **{"share.auto.offset.reset": reset})
    c = consumer(bootstrap, group, topic)
    try:
        got = []
        next_value = 3
        deadline = time.monotonic() + 40
        while not any(o >= 3 for o in offsets(got)) and time.monotonic() < deadline:
            got += poll_until(c, 100, timeout=2)
            if not any(o >= 3 for o in offsets(got)):
                produce(bootstrap, topic, [next_value])
                next_value += 1
        seen = offsets(got)
        assert seen and seen == sorted(seen) and max(seen) >= 3
        if first == 0:
            assert seen[:3] == [0, 1, 2]
        else:
            assert min(seen) >= 3
    finally:
        c.close()


def test_group_heartbeat_interval_is_the_groups_own(bootstrap):
    """share.heartbeat.interval.ms set on the group is what ShareGroupHeartbeat tells its members."""
    from client import WireClient

    topic = new_topic(bootstrap, 0)
    group = new_group(bootstrap, **{"share.heartbeat.interval.ms": "6000"})
    with WireClient(bootstrap) as client:
        deadline = time.monotonic() + 30
        while True:  # the group's coordinator may still be loading (COORDINATOR_NOT_AVAILABLE)
            found = client.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": [group]}).coordinators[0]
            if found.error_code == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        while True:  # Kafka: NOT_COORDINATOR until the group's partition is loaded
            joined = client.call("ShareGroupHeartbeat", 1, {
                "group_id": group, "member_id": "AAAAAAAAAAAAAAAAAAAAAQ", "member_epoch": 0, "rack_id": None,
                "subscribed_topic_names": [topic]})
            if joined.error_code not in (14, 15, 16) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert (joined.error_code, joined.heartbeat_interval_ms) == (0, 6000)
        left = client.call("ShareGroupHeartbeat", 1, {
            "group_id": group, "member_id": "AAAAAAAAAAAAAAAAAAAAAQ", "member_epoch": -1, "rack_id": None,
            "subscribed_topic_names": None})
        assert (left.error_code, left.member_epoch) == (0, -1)


def test_restart_keeps_accepted_records_accepted(tmp_path):
    broker = BrokerProcess(tmp_path / "broker", config=SHARE_CONFIG)
    broker.start()
    try:
        topic = new_topic(broker.bootstrap, 10)
        group = new_group(broker.bootstrap)
        c = consumer(broker.bootstrap, group, topic, explicit=True)
        got = poll_until(c, 10)
        assert offsets(got) == list(range(10))
        for m in got[:4]:
            c.acknowledge(m, AcknowledgeType.ACCEPT)
        c.commit_sync(30)
        # 4..9 stay acquired, unacknowledged, when the broker dies.
        member = describe_share_group(broker.bootstrap, group)["members"]
        assert len(member) == 1 and member[0][1] > 0 and member[0][2] == [(topic, [0])]
        broker.kill()
        c.close()  # its leave cannot reach the broker
        broker.start()
        # The membership came back from __consumer_offsets: the same member, epoch and assignment.
        assert describe_share_group(broker.bootstrap, group)["members"] == member
        again = consumer(broker.bootstrap, group, topic)
        try:
            redelivered = poll_until(again, 6, timeout=40)
            assert offsets(redelivered) == [4, 5, 6, 7, 8, 9]
            assert poll_until(again, 1, timeout=3) == []
        finally:
            again.close()
        # Accepted by the implicit acknowledgement of that consumer's close: nothing after another restart.
        broker.restart()
        last = consumer(broker.bootstrap, group, topic)
        try:
            produce(broker.bootstrap, topic, [10])
            assert offsets(poll_until(last, 1, timeout=40)) == [10]
            assert poll_until(last, 1, timeout=3) == []
        finally:
            last.close()
    finally:
        broker.stop()


# -- kafka-share-groups.sh against both brokers ----------------------------------------------------------

SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"


def _tool_session(bootstrap: str) -> list[tuple[str, int, str]]:
    """Kafka 4.3.0's kafka-share-groups.sh over a group that accepted 0..3 and released 4..9 of ten
    records: list, describe offsets and state, reset to earliest, delete the offsets, delete the
    group. Each command's (first argument, exit status, output with names and ports made generic).
    The commands run one after another in one tool JVM (compat/tool_compare.py's ToolSession)."""
    import re

    from compat.reference_kafka import KAFKA_4
    from compat.tool_compare import ToolSession

    topic = new_topic(bootstrap, 10)
    group = new_group(bootstrap)
    c = consumer(bootstrap, group, topic, explicit=True)
    got = poll_until(c, 10)
    assert offsets(got) == list(range(10))
    for m in got:
        c.acknowledge(m, AcknowledgeType.ACCEPT if m.offset() < 4 else AcknowledgeType.RELEASE)
    c.commit_sync(30)
    c.close()
    session = []
    with ToolSession(KAFKA_4) as tools:
        for args in (["--list"], ["--describe", "--group", group, "--offsets"],
                     ["--describe", "--group", group, "--state"],
                     ["--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"],
                     ["--describe", "--group", group, "--offsets"],
                     ["--delete-offsets", "--group", group, "--topic", topic],
                     ["--describe", "--group", group, "--offsets"], ["--delete", "--group", group], ["--list"]):
            done = tools.run(SHARE_GROUP_COMMAND, "--bootstrap-server", bootstrap, *args, timeout=120)
            out = (done.stdout + done.stderr).replace(group, "GROUP").replace(topic, "TOPIC")
            out = re.sub(r"127\.0\.0\.1:\d+", "HOST:PORT", re.sub(r"[ \t]+", " ", out)).strip()
            if args[0] == "--list":  # other tests' groups share these brokers
                out = "\n".join(line for line in out.splitlines() if line == "GROUP")
            session.append((args[0], done.exit, out))
    return session


def test_kafka_share_groups_tool_sees_what_it_sees_on_kafka(wire, reference_kafka):
    from compat.reference_kafka import ReferenceKafkaUnavailable, install

    try:
        install("4.3.0")
    except ReferenceKafkaUnavailable as error:
        pytest.skip(f"Kafka 4.3.0's tools: {error}")
    kafka = reference_kafka("4.3.0", SHARE_CONFIG)  # started by the module's earlier tests, in a whole run
    # The two sessions (a tool JVM each, its commands one after another) run at the same time.
    with ThreadPoolExecutor(2) as pool:
        ours, theirs = [future.result() for future in [pool.submit(_tool_session, wire.bootstrap),
                                                       pool.submit(_tool_session, kafka.bootstrap)]]
    # The first offsets description: the same lag (10 records, 4 accepted), but Kafka 4.3 shows the
    # start offset of its persisted state, which trails by one write (0: the write of the
    # acknowledgements carries the start offset from before them); kafka-wire shows where the
    # share-partition starts now, 4.
    assert ours[1][2].splitlines()[-1] == "GROUP TOPIC 0 4 6"
    assert theirs[1][2].splitlines()[-1] in ("GROUP TOPIC 0 0 6", "GROUP TOPIC 0 4 6")
    assert ours[:1] + ours[2:] == theirs[:1] + theirs[2:]
