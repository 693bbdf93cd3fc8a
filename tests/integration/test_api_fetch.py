"""Fetch as Apache Kafka answers it: long polling, byte limits, errors, sessions, leader epochs.

Sources (apache/kafka): core/.../server/ReplicaManager.scala fetchMessages/readFromLog/
handleOffsetOutOfRangeError, core/.../cluster/Partition.scala fetchRecords/followerReplicaOrThrow,
core/.../server/FetchSession.scala FetchManager.newContext, KIP-74, KIP-227.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from client import WireClient

from wire_cases import (
    batch, batches_of, consumed, create_topic, error_name, fetch, fetch_request, produce, topic_id, unique,
)


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap) as c:
        yield c


def _topic_with(client, values, partitions: int = 1) -> str:
    topic = unique("fetch")
    create_topic(client, topic, partitions=partitions)
    for value in values:
        assert produce(client, topic, batch([value])).error_code == 0
    return topic


# -- long polling -------------------------------------------------------------------------------------


def test_long_poll_returns_when_another_connection_appends(shared_broker, client):
    """DelayedFetch completes as soon as an append gives it min_bytes, well before max_wait_ms."""
    topic = _topic_with(client, [])
    result = {}

    def wait_for_data():
        with WireClient(shared_broker.bootstrap) as poller:
            started = time.monotonic()
            result["partition"] = fetch(poller, topic, 0, max_wait_ms=10_000, min_bytes=1)
            result["elapsed"] = time.monotonic() - started

    waiter = threading.Thread(target=wait_for_data)
    waiter.start()
    time.sleep(0.5)
    assert produce(client, topic, batch([b"wake up"])).error_code == 0
    waiter.join(15)
    assert result["elapsed"] < 5, result["elapsed"]
    assert [r[3] for r in consumed(result["partition"].records)] == [b"wake up"]


def test_long_poll_waits_max_wait_when_nothing_arrives(client):
    topic = _topic_with(client, [b"old"])
    started = time.monotonic()
    part = fetch(client, topic, 1, max_wait_ms=1500, min_bytes=1)
    elapsed = time.monotonic() - started
    assert elapsed >= 1.2, elapsed
    assert part.error_code == 0 and part.high_watermark == 1 and not part.records


def test_a_topic_deleted_during_a_long_poll_is_unknown_when_it_ends(shared_broker, client):
    """A v13 fetch waiting at the log end of a topic deleted meanwhile ends with
    UNKNOWN_TOPIC_OR_PARTITION for it (ReplicaManager.readFromLocalLog finds no partition), not a
    failed request (it was an AttributeError once: the read looked the topic up again)."""
    topic = _topic_with(client, [b"old"])
    result = {}

    def poll():
        with WireClient(shared_broker.bootstrap) as poller:
            result["parts"] = [fetch(poller, topic, 1, version=13, max_wait_ms=3000, min_bytes=1)]

    poller = threading.Thread(target=poll)
    poller.start()
    time.sleep(0.5)
    deleted = client.call("DeleteTopics", 6, {"topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}],
                                              "timeout_ms": 5000})
    assert deleted.responses[0].error_code == 0
    poller.join(15)
    assert [error_name(p.error_code) for p in result["parts"]] == ["UNKNOWN_TOPIC_OR_PARTITION"]


def test_min_bytes_holds_the_answer_until_max_wait(client):
    """Fewer bytes than min_bytes: the fetch waits out max_wait_ms, then answers with what it has."""
    topic = _topic_with(client, [b"small"])
    started = time.monotonic()
    part = fetch(client, topic, 0, max_wait_ms=1000, min_bytes=100_000)
    assert time.monotonic() - started >= 0.8
    assert [r[3] for r in consumed(part.records)] == [b"small"]
    started = time.monotonic()
    part = fetch(client, topic, 0, max_wait_ms=5000, min_bytes=1)
    assert time.monotonic() - started < 2.5
    assert [r[3] for r in consumed(part.records)] == [b"small"]


def test_an_error_reading_a_partition_answers_a_long_poll_at_once(client):
    """ReplicaManager.fetchMessages responds immediately when reading a partition fails (here its
    leader epoch check)."""
    topic = _topic_with(client, [], partitions=2)
    request = fetch_request(topic, 0, max_wait_ms=5000, min_bytes=1)
    request["topics"][0]["partitions"].append(
        {"partition": 1, "fetch_offset": 0, "partition_max_bytes": 1024, "current_leader_epoch": 3})
    started = time.monotonic()
    response = client.call("Fetch", 12, request, wait=5)
    assert time.monotonic() - started < 2.5
    ahead = response.responses[0].partitions[1]
    assert (ahead.partition_index, error_name(ahead.error_code)) == (1, "UNKNOWN_LEADER_EPOCH")


@pytest.mark.parametrize("version", [12, 13])
def test_partitions_refused_before_reading_leave_the_long_poll_alone(client, version):
    """KafkaApis answers an unknown topic (or topic id) or partition without reading it, and Kafka
    4.3 still holds the answer for the partitions it reads, up to max_wait_ms; with nothing left to
    read it answers at once."""
    topic = _topic_with(client, [])
    missing = {"topic": unique("missing"), "topic_id": uuid.uuid4(), "partitions": [
        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024, "current_leader_epoch": -1}]}
    request = fetch_request(topic, 0, max_wait_ms=1500, min_bytes=1)
    request["topics"][0]["topic_id"] = topic_id(client, topic)
    request["topics"][0]["partitions"].append({"partition": 5, "fetch_offset": 0, "partition_max_bytes": 1024})
    request["topics"].append(missing)
    started = time.monotonic()
    response = client.call("Fetch", version, request, wait=5)
    assert time.monotonic() - started >= 1.4
    answers = [(p.partition_index, error_name(p.error_code), p.high_watermark)
               for t in response.responses for p in t.partitions]
    unknown_topic = "UNKNOWN_TOPIC_ID" if version >= 13 else "UNKNOWN_TOPIC_OR_PARTITION"
    assert answers == [(0, "NONE", 0), (5, "UNKNOWN_TOPIC_OR_PARTITION", -1), (0, unknown_topic, -1)]
    request["topics"] = [missing]
    started = time.monotonic()
    client.call("Fetch", version, request, wait=5)
    assert time.monotonic() - started < 1


# -- byte limits (KIP-74) ------------------------------------------------------------------------------------


def test_first_batch_is_returned_whole_even_beyond_both_limits(client):
    topic = _topic_with(client, [b"x" * 5000, b"y"])
    part = fetch(client, topic, 0, max_bytes=100, partition_max_bytes=100)
    got = batches_of(part.records)
    assert len(got) == 1 and got[0][0].size > 5000
    assert [r[3] for r in consumed(part.records)] == [b"x" * 5000]


def test_partition_max_bytes_limits_each_partition(client):
    topic = _topic_with(client, [b"a" * 1000, b"b" * 1000, b"c" * 1000, b"d" * 1000])
    part = fetch(client, topic, 0, partition_max_bytes=2500)
    values = [r[3][:1] for r in consumed(part.records)]
    assert values == [b"a", b"b"]  # whole batches within 2500 bytes (Kafka may add a partial third)
    assert len(bytes(part.records)) <= 2500


def test_total_max_bytes_leaves_later_partitions_nothing(client):
    """ReplicaManager.readFromLog: once a partition returned data, the others only get what is left
    of max_bytes, and no longer a whole batch regardless of the limit."""
    topic = unique("fetch-total")
    create_topic(client, topic, partitions=3)
    for partition in range(3):
        assert produce(client, topic, batch([b"p%d" % partition * 1000]), partition=partition).error_code == 0
    request = fetch_request(topic, 0, max_bytes=1500, partition_max_bytes=10_000)
    request["topics"][0]["partitions"] = [
        {"partition": p, "fetch_offset": offset, "partition_max_bytes": 10_000, "current_leader_epoch": -1}
        for p, offset in ((0, 1), (1, 0), (2, 0))]  # partition 0 is read at its end: no data
    response = client.call("Fetch", 12, request)
    parts = {p.partition_index: p for p in response.responses[0].partitions}
    assert not parts[0].records
    assert [r[3][:2] for r in consumed(parts[1].records)] == [b"p1"]  # the first with data: whole batch
    assert not parts[2].records and parts[2].error_code == 0


# -- offsets --------------------------------------------------------------------------------------------------


def test_fetch_at_log_end_is_empty_without_error(client):
    topic = _topic_with(client, [b"a", b"b"])
    part = fetch(client, topic, 2)
    assert part.error_code == 0 and not part.records
    assert (part.high_watermark, part.last_stable_offset, part.log_start_offset) == (2, 2, 0)


@pytest.mark.parametrize("offset", [3, 1000, -5])
def test_offset_out_of_range(client, offset):
    """Out of [log start offset, log end offset]: OFFSET_OUT_OF_RANGE, and Kafka's
    createLogReadResult answers -1 for the high watermark, last stable and log start offsets."""
    topic = _topic_with(client, [b"a", b"b"])
    part = fetch(client, topic, offset)
    assert error_name(part.error_code) == "OFFSET_OUT_OF_RANGE"
    assert (part.high_watermark, part.last_stable_offset, part.log_start_offset) == (-1, -1, -1)


def test_offset_below_log_start_after_delete_records(client):
    topic = _topic_with(client, [b"a", b"b", b"c"])
    response = client.call("DeleteRecords", 2, {"topics": [{"name": topic, "partitions": [
        {"partition_index": 0, "offset": 2}]}], "timeout_ms": 5000})
    assert response.topics[0].partitions[0].low_watermark == 2
    assert error_name(fetch(client, topic, 1).error_code) == "OFFSET_OUT_OF_RANGE"
    part = fetch(client, topic, 2)
    assert part.log_start_offset == 2 and [r[3] for r in consumed(part.records)] == [b"c"]


# -- fetch sessions (KIP-227) ------------------------------------------------------------------------------


@pytest.mark.parametrize("session_id", [0, 12345])
def test_a_full_fetch_at_epoch_minus_1_makes_no_session(client, session_id):
    """FetchManager.newContext: epoch -1 is a full fetch without a session (SessionlessFetchContext):
    session id 0, every partition asked for."""
    topic = _topic_with(client, [b"data"])
    response = client.call("Fetch", 12, fetch_request(topic, 0, session_id=session_id, session_epoch=-1))
    assert (response.error_code, response.session_id) == (0, 0)
    assert [r[3] for r in consumed(response.responses[0].partitions[0].records)] == [b"data"]


def _session_fetch(client, topic, session_id, epoch, parts=(), forget=(), version=12):
    """A fetch in a session: parts [(partition, offset)] added or updated, forget [partition]."""
    request = fetch_request(topic, 0, session_id=session_id, session_epoch=epoch, max_wait_ms=50, min_bytes=1)
    name = ({"topic_id": topic_id(client, topic)} if version >= 13 else {"topic": topic}) if parts or forget else {}
    request["topics"] = [{**name, "partitions": [
        {"partition": p, "fetch_offset": o, "partition_max_bytes": 1 << 20} for p, o in parts]}] if parts else []
    if forget:
        request["forgotten_topics_data"] = [{**name, "partitions": list(forget)}]
    return client.call("Fetch", version, request, wait=0.05)


def _answered(response) -> dict:
    """{partition: (high watermark, record values)} of a fetch answer."""
    return {p.partition_index: (p.high_watermark, [r[3] for r in consumed(p.records)])
            for t in response.responses for p in t.partitions}


@pytest.mark.parametrize("version", [12, 13])
def test_a_fetch_session_answers_only_what_changed(client, version):
    """KIP-227: a full fetch at epoch 0 creates a session (a random positive id, next epoch 1); an
    incremental fetch names only partitions it adds or moves, and the answer carries only partitions
    with records or a new high watermark (CachedPartition.maybeUpdateResponseData); a forgotten
    partition is no longer read; a session left empty ends and answers with session id 0."""
    topic = _topic_with(client, [b"a", b"b"], partitions=2)
    created = _session_fetch(client, topic, 0, 0, parts=[(0, 0), (1, 0)], version=version)
    session = created.session_id
    assert created.error_code == 0 and session > 0
    assert _answered(created) == {0: (2, [b"a", b"b"]), 1: (0, [])}
    assert _answered(_session_fetch(client, topic, session, 1, parts=[(0, 2)], version=version)) == {}
    assert produce(client, topic, batch([b"c"]), partition=1).error_code == 0
    third = _session_fetch(client, topic, session, 2, version=version)
    assert (third.error_code, third.session_id, _answered(third)) == (0, session, {1: (1, [b"c"])})
    _session_fetch(client, topic, session, 3, parts=[(1, 1)], forget=[0], version=version)
    assert produce(client, topic, batch([b"d"]), partition=0).error_code == 0
    assert _answered(_session_fetch(client, topic, session, 4, version=version)) == {}
    ended = _session_fetch(client, topic, session, 5, forget=[1], version=version)
    assert (ended.error_code, ended.session_id, ended.responses) == (0, 0, [])
    gone = _session_fetch(client, topic, session, 6, version=version)
    assert error_name(gone.error_code) == "FETCH_SESSION_ID_NOT_FOUND"


def test_fetch_session_epochs_and_closing(client):
    """A wrong epoch is INVALID_FETCH_SESSION_EPOCH (no partitions, session id 0) and leaves the
    session as it was; a full fetch naming the session closes it (epoch 0 makes another, epoch -1 none);
    a session must keep using topic ids, or not (FETCH_SESSION_TOPIC_ID_ERROR)."""
    topic = _topic_with(client, [b"a"])
    session = _session_fetch(client, topic, 0, 0, parts=[(0, 1)]).session_id
    wrong = _session_fetch(client, topic, session, 7)
    assert (error_name(wrong.error_code), wrong.session_id, wrong.responses) == ("INVALID_FETCH_SESSION_EPOCH", 0, [])
    assert error_name(_session_fetch(client, topic, session, 1, version=13).error_code) == "FETCH_SESSION_TOPIC_ID_ERROR"
    assert _session_fetch(client, topic, session, 1).error_code == 0
    renewed = _session_fetch(client, topic, session, 0, parts=[(0, 1)])
    assert renewed.session_id not in (0, session)
    assert error_name(_session_fetch(client, topic, session, 2).error_code) == "FETCH_SESSION_ID_NOT_FOUND"
    closed = _session_fetch(client, topic, renewed.session_id, -1, parts=[(0, 0)])
    assert closed.session_id == 0 and _answered(closed) == {0: (1, [b"a"])}
    assert error_name(_session_fetch(client, topic, renewed.session_id, 1).error_code) == "FETCH_SESSION_ID_NOT_FOUND"


@pytest.mark.parametrize("session_id", [0, 777])
def test_incremental_fetch_of_an_unknown_session(client, session_id):
    """An incremental fetch (epoch > 0) in a session the broker does not have:
    FETCH_SESSION_ID_NOT_FOUND at the top level, no partitions (SessionErrorContext)."""
    topic = _topic_with(client, [b"data"])
    response = client.call("Fetch", 12, fetch_request(topic, 0, session_id=session_id, session_epoch=3))
    assert error_name(response.error_code) == "FETCH_SESSION_ID_NOT_FOUND"
    assert response.session_id == 0 and response.responses == []


# -- leader epochs and replicas --------------------------------------------------------------------------------


def test_current_leader_epoch_checks(client):
    """Partition.localLogWithEpochOrThrow: a client epoch above the leader's is UNKNOWN_LEADER_EPOCH
    (it knows of a leader we do not), below is FENCED_LEADER_EPOCH; -1 skips the check. A partition
    that never changed leader is at epoch 0, so on one node nothing can be below it."""
    topic = _topic_with(client, [b"a"])
    assert fetch(client, topic, 0, current_leader_epoch=0).error_code == 0
    assert fetch(client, topic, 0, current_leader_epoch=-1).error_code == 0
    ahead = fetch(client, topic, 0, current_leader_epoch=1)
    assert error_name(ahead.error_code) == "UNKNOWN_LEADER_EPOCH"
    assert ahead.high_watermark == -1 and not ahead.records


@pytest.mark.parametrize("replica_id,epoch,expected", [
    (7, -1, "NOT_LEADER_OR_FOLLOWER"),
    (7, 0, "UNKNOWN_LEADER_EPOCH"),
    (1, -1, "NOT_LEADER_OR_FOLLOWER"),  # the broker itself is no follower of its own partition
])
@pytest.mark.parametrize("version", [12, 15, 16])
def test_fetch_from_an_unknown_replica(client, replica_id, epoch, expected, version):
    """Partition.followerReplicaOrThrow: a replica id that is not one of the partition's followers
    gets UNKNOWN_LEADER_EPOCH when it sent a leader epoch, NOT_LEADER_OR_FOLLOWER when not. From
    v15 the replica id travels in the tagged replica state; from v16 NOT_LEADER_OR_FOLLOWER names
    the current leader (KIP-951), but a follower gets no node endpoints (Kafka 4.3 answers so)."""
    topic = _topic_with(client, [b"a"])
    response = client.call("Fetch", version, {
        **fetch_request(topic, 0, replica_id=replica_id, current_leader_epoch=epoch),
        "topics": [{"topic": topic, "topic_id": topic_id(client, topic), "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20, "current_leader_epoch": epoch}]}]})
    part = response.responses[0].partitions[0]
    assert error_name(part.error_code) == expected
    assert not part.records
    hinted = version >= 16 and expected == "NOT_LEADER_OR_FOLLOWER"
    leader = (part.current_leader.leader_id, part.current_leader.leader_epoch)
    assert leader == ((1, 0) if hinted else (-1, -1))
    assert response.node_endpoints == []


def test_fetch_v13_names_topics_by_id(client):
    """KIP-516: from v13 topics go by id, in the request and the answer; an id the broker does not
    know is UNKNOWN_TOPIC_ID with -1 offsets."""
    topic = _topic_with(client, [b"a", b"b"])
    known, unknown = topic_id(client, topic), uuid.uuid4()
    request = fetch_request(topic, 1, max_wait_ms=0, min_bytes=1)
    request["topics"] = [{"topic_id": known, "partitions": [{"partition": 0, "fetch_offset": 1, "partition_max_bytes": 1 << 20}]},
                         {"topic_id": unknown, "partitions": [{"partition": 3, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]
    response = client.call("Fetch", 13, request)
    assert [t.topic_id for t in response.responses] == [known, unknown]
    found, missing = response.responses[0].partitions[0], response.responses[1].partitions[0]
    assert (found.error_code, found.high_watermark) == (0, 2)
    assert [r[3] for r in consumed(found.records) if r[0] >= 1] == [b"b"]
    assert (missing.partition_index, error_name(missing.error_code)) == (3, "UNKNOWN_TOPIC_ID")
    assert (missing.high_watermark, missing.last_stable_offset, missing.log_start_offset) == (-1, -1, -1)
    assert not missing.records


@pytest.mark.parametrize("version", [4, 7, 11, 12, 13, 15, 16, 17, 18])
def test_fetch_versions_read_the_same_records(client, version):
    topic = _topic_with(client, [b"a", b"b"])
    part = fetch(client, topic, 0, version=version)
    assert part.error_code == 0 and part.high_watermark == 2
    assert [r[3] for r in consumed(part.records)] == [b"a", b"b"]



def test_a_session_by_topic_ids_outlives_its_topic(client):
    """A v13 session keeps a partition's topic id and the name it resolved: once the topic is
    deleted the partition is UNKNOWN_TOPIC_OR_PARTITION; re-created under that name (a new id) it is
    INCONSISTENT_TOPIC_ID (ReplicaManager.readFromLocalLog), as Kafka 4.3 answers."""
    topic = _topic_with(client, [b"a"])
    old_id = topic_id(client, topic)
    session = _session_fetch(client, topic, 0, 0, parts=[(0, 1)], version=13).session_id
    assert session > 0
    deleted = client.call("DeleteTopics", 6, {"topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}],
                                              "timeout_ms": 5000})
    assert deleted.responses[0].error_code == 0

    def errors(epoch):
        answer = _session_fetch(client, topic, session, epoch, version=13)
        return [(t.topic_id, error_name(p.error_code)) for t in answer.responses for p in t.partitions]

    assert errors(1) == [(old_id, "UNKNOWN_TOPIC_OR_PARTITION")]
    create_topic(client, topic)
    assert topic_id(client, topic) != old_id
    assert errors(2) == [(old_id, "INCONSISTENT_TOPIC_ID")]


# -- the request as a map ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [4, 12, 13])
def test_a_partition_named_twice_is_read_and_answered_once(client, version):
    """FetchRequest.fetchData collects the partitions into a map: a partition named twice is answered
    once, at its first place, with the fetch offset named last."""
    topic = _topic_with(client, [b"a", b"b"], partitions=2)
    request = fetch_request(topic)
    parts = request["topics"][0]["partitions"]
    parts[:] = [dict(parts[0]), dict(parts[0], partition=1), dict(parts[0], fetch_offset=1)]
    if version >= 13:
        request["topics"][0]["topic_id"] = topic_id(client, topic)
    response = client.call("Fetch", version, request)
    answered = [(p.partition_index, error_name(p.error_code)) for t in response.responses for p in t.partitions]
    assert answered == [(0, "NONE"), (1, "NONE")]
    assert [r[3] for r in consumed(response.responses[0].partitions[0].records)] == [b"b"]


@pytest.mark.parametrize("version", [4, 7, 12, 13, 18])
def test_an_unknown_isolation_level_fails_the_request(client, version):
    """isolation_level 2 (neither read_uncommitted nor read_committed): IsolationLevel.forId throws in
    KafkaApis.handleFetchRequest, so the request is answered with its error response:
    UNKNOWN_SERVER_ERROR at the top (v7+) and, below v13, for every partition with -1 offsets and no
    records; from v13 without partitions."""
    topic = _topic_with(client, [b"a"])
    request = fetch_request(topic, isolation_level=2, session_id=0, session_epoch=0)
    if version >= 13:
        request["topics"][0]["topic_id"] = topic_id(client, topic)
    response = client.call("Fetch", version, request)
    if version >= 7:
        assert error_name(response.error_code) == "UNKNOWN_SERVER_ERROR"
        assert response.session_id == 0
    if version >= 13:
        assert response.responses == []
        return
    [part] = response.responses[0].partitions
    assert (error_name(part.error_code), part.high_watermark, part.last_stable_offset) == ("UNKNOWN_SERVER_ERROR", -1, -1)
    assert (list(part.aborted_transactions), bytes(part.records or b"")) == ([], b"")
    # Nothing to read (an unknown topic): the level is never looked at.
    unknown = fetch_request(unique("missing"), isolation_level=2)
    answer = client.call("Fetch", version, unknown).responses[0].partitions[0]
    assert error_name(answer.error_code) == "UNKNOWN_TOPIC_OR_PARTITION"
