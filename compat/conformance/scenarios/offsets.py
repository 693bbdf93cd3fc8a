"""OffsetCommit (8) and OffsetFetch (9) outside a group's membership: standalone commits
(generation -1, no member id, as admin tools and assign()-only consumers make them), metadata,
unknown topics and partitions, the metadata size limit, several groups per OffsetFetch (v8+)."""

from __future__ import annotations

import threading
import uuid

from ..scenario import ALL, Session, scenario
from .groups_classic import coordinator_ready


# A topic id no topic has (OffsetCommit/OffsetFetch v10 name topics by id).
UNKNOWN_TOPIC_ID = uuid.UUID("00000000-0000-4000-8000-00000000c0de")
# Learnt per thread: a case plays on the reference Kafka (in a thread) and on kafka-wire at the
# same time (run.py), and the same topic name has a different id on each broker.
_LEARNT = threading.local()


def _topic_ids() -> dict[str, uuid.UUID]:
    ids = getattr(_LEARNT, "ids", None)
    if ids is None:
        ids = _LEARNT.ids = {}
    return ids


def topic_ids(s: Session, *topics: str) -> None:
    """Learns the topics' ids (unrecorded) for the v10+ requests, which name topics by id."""
    answer = s.call("Metadata", 12, {"topics": [{"name": t} for t in topics], "allow_auto_topic_creation": False,
                                     "include_cluster_authorized_operations": False,
                                     "include_topic_authorized_operations": False}, record=False)
    for topic in answer.topics:
        if topic.error_code == 0:
            _topic_ids()[topic.name] = topic.topic_id


def _id(topic: str) -> uuid.UUID:
    return _topic_ids().get(topic, UNKNOWN_TOPIC_ID)


def commit_body(group: str, partitions_by_topic: dict[str, list[tuple[int, int, str | None]]], *,
                generation: int = -1, member_id: str = "", leader_epoch: int = -1):
    return {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member_id,
            "group_instance_id": None, "retention_time_ms": -1,
            "topics": [{"name": topic, "topic_id": _id(topic), "partitions": [
                {"partition_index": p, "committed_offset": offset, "committed_leader_epoch": leader_epoch,
                 "committed_metadata": metadata} for p, offset, metadata in partitions]}
                for topic, partitions in partitions_by_topic.items()]}


def fetch_body(v: int, groups: dict[str, dict[str, list[int]] | None], require_stable: bool = False):
    """OffsetFetch at any version: v8+ asks for several groups; older versions take one."""
    if v >= 8:
        return {"groups": [{"group_id": g, "topics": None if topics is None else [
            {"name": t, "topic_id": _id(t), "partition_indexes": p} for t, p in topics.items()]}
            for g, topics in groups.items()],
            "require_stable": require_stable}
    (group, topics), = groups.items()
    return {"group_id": group, "topics": None if topics is None else [
        {"name": t, "partition_indexes": p} for t, p in topics.items()], "require_stable": require_stable}


@scenario("OffsetCommit", versions=ALL, covers=["UNKNOWN_TOPIC_OR_PARTITION"])
def offset_commit_standalone(s: Session, v: int):
    """A standalone commit (generation -1, no member): metadata, null metadata, a leader epoch (v6+),
    an unknown topic and a partition the topic lacks; read back with OffsetFetch v7."""
    group, topic = s.group(), s.topic()
    s.create_topic(topic, partitions=2)
    topic_ids(s, topic)
    coordinator_ready(s, group)
    s.call("OffsetCommit", v, commit_body(group, {
        topic: [(0, 10, "first"), (1, 20, None), (7, 1, "")],
        s.topic("missing"): [(0, 5, "")]}, leader_epoch=3))
    s.call("OffsetFetch", 7, fetch_body(7, {group: {topic: [0, 1, 7], s.topic("missing"): [0]}}),
           label="OffsetFetch v7")
    s.call("OffsetCommit", v, commit_body(group, {topic: [(0, 11, "second")]}), label="commit again")
    s.call("OffsetFetch", 7, fetch_body(7, {group: None}), label="OffsetFetch v7 all")


@scenario("OffsetCommit", versions=ALL, covers=["OFFSET_METADATA_TOO_LARGE"])
def offset_commit_metadata_too_large(s: Session, v: int):
    """offset.metadata.max.bytes is 4096 by default: 4096 characters pass, 4097 do not."""
    group, topic = s.group(), s.topic()
    s.create_topic(topic, partitions=2)
    topic_ids(s, topic)
    coordinator_ready(s, group)
    s.call("OffsetCommit", v, commit_body(group, {topic: [(0, 1, "m" * 4096), (1, 2, "m" * 4097)]}))
    answer = s.call("OffsetFetch", 7, fetch_body(7, {group: None}), record=False)
    s.record("committed (metadata length)", sorted((p.partition_index, p.committed_offset, len(p.metadata or ""))
                                                   for t in answer.topics for p in t.partitions))


@scenario("OffsetCommit", versions=(2, 7, 8, 9), covers=["INVALID_GROUP_ID", "ILLEGAL_GENERATION",
                                                        "UNKNOWN_MEMBER_ID"])
def offset_commit_no_such_member(s: Session, v: int):
    """An empty group id; a member id and generation in a group that does not exist; a member id
    with generation -1; negative offsets."""
    group, topic = s.group(), s.topic()
    s.create_topic(topic)
    topic_ids(s, topic)
    coordinator_ready(s, group)
    s.call("OffsetCommit", v, commit_body("", {topic: [(0, 1, "")]}), label="empty group id")
    s.call("OffsetCommit", v, commit_body(s.group("none"), {topic: [(0, 1, "")]}, generation=1,
                                          member_id="conformance-0000"), label="member of a group that does not exist")
    s.call("OffsetCommit", v, commit_body(s.group("none2"), {topic: [(0, 1, "")]}, generation=-1,
                                          member_id="conformance-0000"), label="member id, generation -1")
    s.call("OffsetCommit", v, commit_body(s.group("none3"), {topic: [(0, 1, "")]}, generation=3, member_id=""),
           label="generation 3, no member id")
    s.call("OffsetCommit", v, commit_body(group, {topic: [(0, -1, "")]}), label="offset -1")
    s.call("OffsetFetch", 7, fetch_body(7, {g: None for g in [group]}), label="OffsetFetch")


@scenario("OffsetFetch", versions=ALL, covers=["UNKNOWN_TOPIC_OR_PARTITION"])
def offset_fetch_committed(s: Session, v: int):
    """Committed offsets, a partition never committed, an unknown topic, every partition (v2+ null
    topics), a group that does not exist; v8+ several groups in one request."""
    group, topic = s.group(), s.topic()
    s.create_topic(topic, partitions=3)
    topic_ids(s, topic)
    coordinator_ready(s, group)
    s.setup("OffsetCommit", 8, commit_body(group, {topic: [(0, 10, "zero"), (2, 30, "")]}, leader_epoch=4))
    s.call("OffsetFetch", v, fetch_body(v, {group: {topic: [0, 1, 2, 9], s.topic("missing"): [0]}}),
           label="listed partitions")
    if v >= 2:
        s.call("OffsetFetch", v, fetch_body(v, {group: None}), label="all partitions")
    s.call("OffsetFetch", v, fetch_body(v, {s.group("none"): {topic: [0]}}), label="unknown group, listed")
    if v >= 2:
        s.call("OffsetFetch", v, fetch_body(v, {s.group("none"): None}), label="unknown group, all")
    if v >= 8:
        s.call("OffsetFetch", v, fetch_body(v, {group: {topic: [0]}, s.group("none"): None, s.group("x"): {topic: [2]}}),
               label="three groups")
    s.call("OffsetFetch", v, fetch_body(v, {"": None if v >= 2 else {topic: [0]}}), label="empty group id")


@scenario("OffsetFetch", versions=(7, 8, 9))
def offset_fetch_require_stable(s: Session, v: int):
    """require_stable with no pending transactional offsets: answered like a plain fetch."""
    group, topic = s.group(), s.topic()
    s.create_topic(topic)
    topic_ids(s, topic)
    coordinator_ready(s, group)
    s.setup("OffsetCommit", 8, commit_body(group, {topic: [(0, 7, "")]}))
    s.call("OffsetFetch", v, fetch_body(v, {group: {topic: [0]}}, require_stable=True))
    s.call("OffsetFetch", v, fetch_body(v, {group: None}, require_stable=True), label="all partitions")
