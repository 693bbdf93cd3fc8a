"""Metadata (3): topics that exist, that do not, auto-creation, invalid names, all topics."""

from __future__ import annotations

from ..scenario import ALL, Session, scenario


def _metadata(s: Session, v: int, topics, auto_create: bool = False, label: str | None = None):
    body = {"topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": auto_create,
            "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}
    return s.call("Metadata", v, body, label=label)


@scenario("Metadata", versions=ALL)
def metadata_existing_topic(s: Session, v: int):
    """A topic with 3 partitions: leaders, replicas, ISR, epochs."""
    s.create_topic(s.topic(), partitions=3)
    _metadata(s, v, [s.topic()])


@scenario("Metadata", versions=ALL, covers=["UNKNOWN_TOPIC_OR_PARTITION"])
def metadata_unknown_topic(s: Session, v: int):
    """A topic that does not exist, auto-creation not allowed."""
    _metadata(s, v, [s.topic("missing")])


@scenario("Metadata", versions=ALL, covers=["INVALID_TOPIC_EXCEPTION"])
def metadata_invalid_topic_name(s: Session, v: int):
    """Names Kafka rejects: illegal characters, too long, '.' and '..'."""
    _metadata(s, v, ["bad name!", "x" * 250, ".", ".."], auto_create=True)


def _known_to_metadata(s: Session, topic: str) -> bool:
    answer = s.call("Metadata", 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": False}, record=False)
    return answer is not None and answer.topics[0].error_code == 0


@scenario("Metadata", versions=ALL, covers=["UNKNOWN_TOPIC_OR_PARTITION"])
def metadata_auto_create(s: Session, v: int):
    """allow_auto_topic_creation (always on below v4): the first answer (Kafka 4.3: UNKNOWN_TOPIC_OR_PARTITION
    while the controller creates it, not LEADER_NOT_AVAILABLE), then the topic once it has a leader."""
    _metadata(s, v, [s.topic()], auto_create=True, label="first ask")
    s.wait_for_leaders(s.topic(), 1)
    _metadata(s, v, [s.topic()], auto_create=True, label="once it has a leader")


@scenario("Metadata", versions=ALL, covers=["UNKNOWN_TOPIC_OR_PARTITION"])
def metadata_deleted_topic(s: Session, v: int):
    """A topic deleted (DeleteTopics), once Metadata no longer lists it; then created again under its name."""
    s.create_topic(s.topic(), partitions=2)
    s.call("Metadata", 12, {"topics": [{"name": s.topic()}], "allow_auto_topic_creation": False,
                            "include_topic_authorized_operations": False}, label="before (topic id)")
    s.setup("DeleteTopics", 5, {"topic_names": [s.topic()], "timeout_ms": 10000})
    s.wait_until(lambda: not _known_to_metadata(s, s.topic()), timeout=15, what="the topic gone from Metadata")
    _metadata(s, v, [s.topic()], label="deleted")
    s.create_topic(s.topic(), partitions=1)
    _metadata(s, v, [s.topic()], label="created again (a new topic id)")


@scenario("Metadata", versions=ALL)
def metadata_all_topics(s: Session, v: int):
    """topics=None (all topics; an empty list at v0): recorded is only what is deterministic, the case's own
    topics among them, the brokers and the controller; other cases' topics come and go."""
    s.create_topic(s.topic("a"), partitions=2)
    s.create_topic(s.topic("b"))
    answer = s.call("Metadata", v, {"topics": [] if v == 0 else None, "allow_auto_topic_creation": False,
                                    "include_cluster_authorized_operations": False,
                                    "include_topic_authorized_operations": False}, record=False)
    data = answer.to_dict()
    mine = sorted((t for t in data["topics"] if t["name"] and t["name"].startswith(s.topic())),
                  key=lambda t: t["name"])
    s.record("all topics, this case's", {**{k: val for k, val in data.items() if k != "topics"}, "topics": mine})
