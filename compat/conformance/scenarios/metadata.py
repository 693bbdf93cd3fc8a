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
