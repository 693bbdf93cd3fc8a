"""Group APIs at Apache Kafka 4.3's versions, request by request, as Kafka 4.3 answers them
(answers compared with a Kafka 4.3.0 broker through the wire client): FindCoordinator v5-6,
DescribeGroups v6, OffsetCommit and OffsetFetch v10 (topics by id, KIP-848's follow-up).
"""

from __future__ import annotations

import time
import uuid

import pytest

from client import WireClient

from wire_cases import create_topic, error_name, topic_id, unique

ZERO_ID = uuid.UUID(int=0)


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap) as c:
        yield c


def _group(client) -> str:
    """A fresh group id whose coordinator is ready (__consumer_offsets is created on first use)."""
    group = unique("offsets-v10")
    deadline = time.monotonic() + 20
    while client.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": [group]}).coordinators[0].error_code:
        assert time.monotonic() < deadline, "no group coordinator"
        time.sleep(0.2)
    return group


def _partition(index: int, offset: int, metadata: str = "m") -> dict:
    return {"partition_index": index, "committed_offset": offset, "committed_leader_epoch": -1,
            "committed_metadata": metadata}


def _commit(client, version: int, group: str, topics: list[dict]):
    return client.call("OffsetCommit", version, {"group_id": group, "generation_id_or_member_epoch": -1,
                                                 "member_id": "", "group_instance_id": None, "topics": topics})


def _fetch(client, version: int, group: str, topics: list[dict] | None):
    response = client.call("OffsetFetch", version, {"groups": [{"group_id": group, "member_id": None,
                                                                "member_epoch": -1, "topics": topics}],
                                                    "require_stable": False})
    return response.groups[0]


INVALID_REQUEST_MESSAGE = ("This most likely occurs because of a request being malformed by the client library or "
                           "the message was sent to an incompatible broker. See the broker logs for more details.")


@pytest.mark.parametrize("version", [4, 5, 6])
def test_find_coordinator_v5_v6(client, version):
    """v5 and v6 are v4's bytes. A group or transactional id finds this broker (empty message); a
    share group's key (type 2, v6) is INVALID_REQUEST: kafka-wire runs no share coordinator that other
    brokers find (the share groups' worker keeps their state itself, broker/share_groups.py), which is
    Kafka's answer without a share coordinator and below v6 (Kafka 4.3, which runs one even with
    share.version 0, answers COORDINATOR_NOT_AVAILABLE and creates __share_group_state); an unknown
    key type fails the whole request, with the error's message in every entry."""
    group = _group(client)
    for key_type, key in ((0, group), (1, unique("txn"))):
        deadline = time.monotonic() + 20
        while True:
            [found] = client.call("FindCoordinator", version, {"key_type": key_type, "coordinator_keys": [key]}).coordinators
            if found.error_code == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert (found.key, found.error_code, found.node_id, found.error_message) == (key, 0, 1, "")
    share = client.call("FindCoordinator", version, {"key_type": 2, "coordinator_keys": [
        "share-group:AAAAAAAAAAAAAAAAAAAAAQ:0", "not-a-share-key"]}).coordinators
    assert [(c.error_code, c.node_id, c.host, c.port, c.error_message) for c in share] == [(42, -1, "", -1, "")] * 2
    unknown = client.call("FindCoordinator", version, {"key_type": 3, "coordinator_keys": ["a", "b"]}).coordinators
    assert [(c.key, error_name(c.error_code), c.error_message) for c in unknown] == \
        [("a", "INVALID_REQUEST", INVALID_REQUEST_MESSAGE), ("b", "INVALID_REQUEST", INVALID_REQUEST_MESSAGE)]


@pytest.mark.parametrize("version", [5, 6])
def test_describe_groups_v6_says_group_id_not_found(client, version):
    """KIP-1043: from v6 a group that does not exist, or a KIP-848 consumer group (not a classic
    group), is GROUP_ID_NOT_FOUND with Kafka's message, still Dead; v5 says Dead with no error. A
    classic group with only committed offsets is Empty at every version."""
    topic = unique("describe")
    create_topic(client, topic)
    empty, consumer_group, missing = _group(client), unique("kip848"), unique("missing")
    assert _commit(client, 9, empty, [{"name": topic, "partitions": [_partition(0, 1)]}]).topics[0] \
        .partitions[0].error_code == 0
    joined = client.call("ConsumerGroupHeartbeat", 1, {
        "group_id": consumer_group, "member_id": str(uuid.uuid4()), "member_epoch": 0, "instance_id": None,
        "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": [topic],
        "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []})
    assert joined.error_code == 0
    response = client.call("DescribeGroups", version, {"groups": [missing, consumer_group, empty],
                                                       "include_authorized_operations": False})
    answers = [(g.group_id, error_name(g.error_code), g.error_message, g.group_state, g.members) for g in response.groups]
    if version >= 6:
        assert answers == [(missing, "GROUP_ID_NOT_FOUND", f"Group {missing} not found.", "Dead", []),
                           (consumer_group, "GROUP_ID_NOT_FOUND", f"Group {consumer_group} is not a classic group.",
                            "Dead", []),
                           (empty, "NONE", None, "Empty", [])]
    else:
        assert answers == [(missing, "NONE", None, "Dead", []), (consumer_group, "NONE", None, "Dead", []),
                           (empty, "NONE", None, "Empty", [])]


def test_v10_commits_and_fetches_by_topic_id(client):
    """An id the broker does not know (or the zero id) is UNKNOWN_TOPIC_ID, in OffsetCommit and in
    OffsetFetch; a partition the topic does not have is UNKNOWN_TOPIC_OR_PARTITION when committed
    and answers -1 (no error) when fetched; the same offsets read by name at v9."""
    topic = unique("by-id")
    create_topic(client, topic, partitions=2)
    known, unknown = topic_id(client, topic), uuid.uuid4()
    group = _group(client)

    committed = _commit(client, 10, group, [
        {"topic_id": known, "partitions": [_partition(0, 5), _partition(9, 1)]},
        {"topic_id": unknown, "partitions": [_partition(0, 1)]},
        {"topic_id": ZERO_ID, "partitions": [_partition(0, 1)]}])
    assert [(t.topic_id, [(p.partition_index, error_name(p.error_code)) for p in t.partitions])
            for t in committed.topics] == [
        (known, [(0, "NONE"), (9, "UNKNOWN_TOPIC_OR_PARTITION")]),
        (unknown, [(0, "UNKNOWN_TOPIC_ID")]),
        (ZERO_ID, [(0, "UNKNOWN_TOPIC_ID")])]

    fetched = _fetch(client, 10, group, [{"topic_id": known, "partition_indexes": [0, 1, 9]},
                                         {"topic_id": unknown, "partition_indexes": [0]}])
    assert fetched.error_code == 0
    assert [(t.topic_id, [(p.partition_index, p.committed_offset, p.metadata, error_name(p.error_code))
                          for p in t.partitions]) for t in fetched.topics] == [
        (known, [(0, 5, "m", "NONE"), (1, -1, "", "NONE"), (9, -1, "", "NONE")]),
        (unknown, [(0, -1, "", "UNKNOWN_TOPIC_ID")])]

    # Every committed offset (null topics): at v10 each topic by its id, at v9 by its name.
    everything = _fetch(client, 10, group, None)
    assert [(t.topic_id, t.name, [(p.partition_index, p.committed_offset) for p in t.partitions])
            for t in everything.topics] == [(known, "", [(0, 5)])]
    by_name = _fetch(client, 9, group, None)
    assert [(t.topic_id, t.name, [(p.partition_index, p.committed_offset) for p in t.partitions])
            for t in by_name.topics] == [(ZERO_ID, topic, [(0, 5)])]


def test_v10_commit_overwrites_a_v9_commit(client):
    """Topic ids are only how the request names the topic: the offsets are the group's, whatever
    version committed them."""
    topic = unique("mixed")
    create_topic(client, topic)
    group = _group(client)
    assert _commit(client, 9, group, [{"name": topic, "partitions": [_partition(0, 3)]}]).topics[0] \
        .partitions[0].error_code == 0
    assert _commit(client, 10, group, [{"topic_id": topic_id(client, topic), "partitions": [_partition(0, 7, "v10")]}]) \
        .topics[0].partitions[0].error_code == 0
    [entry] = _fetch(client, 8, group, [{"name": topic, "partition_indexes": [0]}]).topics
    assert [(p.committed_offset, p.metadata) for p in entry.partitions] == [(7, "v10")]
