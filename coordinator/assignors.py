"""Server-side partition assignors of KIP-848 consumer groups: `uniform` (Kafka's default) and `range`.

The coordinator, not a group leader, computes each member's target assignment from the members'
subscriptions and the subscribed topics' partition counts. Topics are named by topic id.

    uniform  balanced (members subscribed to the same topics differ by at most one partition) and
             sticky: a member keeps the partitions of its previous target assignment that it can
             keep while staying balanced, so a membership change moves as few partitions as it can.
    range    per topic, the subscribed members sorted by member id get contiguous ranges of
             partitions, the first (partitions % members) one more (co-partitioned topics line up).

Both are pure functions: `assign(members, topics)` -> {member id: {topic id: set of partitions}}.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

TopicId = uuid.UUID
Assignment = dict[TopicId, set[int]]

UNIFORM = "uniform"
RANGE = "range"
# Kafka's group.consumer.assignors takes names or class names.
ASSIGNOR_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": UNIFORM,
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": RANGE,
    "org.apache.kafka.coordinator.group.api.assignor.UniformAssignor": UNIFORM,
    "org.apache.kafka.coordinator.group.api.assignor.RangeAssignor": RANGE,
}


@dataclass
class MemberSpec:
    """What an assignor knows of a member: its subscribed topics and its previous target."""

    subscribed_topic_ids: set[TopicId]
    previous: Assignment = field(default_factory=dict)


def assignor_name(configured: str) -> str:
    return ASSIGNOR_CLASS_NAMES.get(configured, configured)


def assign(assignor: str, members: Mapping[str, MemberSpec], topics: Mapping[TopicId, int]) -> dict[str, Assignment]:
    if assignor == UNIFORM:
        return uniform_assign(members, topics)
    if assignor == RANGE:
        return range_assign(members, topics)
    raise ValueError(f"unknown assignor {assignor}")


def _compact(assignment: dict[TopicId, set[int]]) -> Assignment:
    return {topic: parts for topic, parts in assignment.items() if parts}


def uniform_assign(members: Mapping[str, MemberSpec], topics: Mapping[TopicId, int]) -> dict[str, Assignment]:
    member_ids = sorted(members)
    owned: dict[str, set[tuple[TopicId, int]]] = {m: set() for m in member_ids}
    owner: dict[tuple[TopicId, int], str] = {}

    def subscribes(member_id: str, topic: TopicId) -> bool:
        return topic in members[member_id].subscribed_topic_ids and topic in topics

    # Stickiness: every member keeps what it had and still may have (each partition once).
    for member_id in member_ids:
        for topic, partitions in sorted(members[member_id].previous.items(), key=lambda kv: str(kv[0])):
            if not subscribes(member_id, topic):
                continue
            for partition in sorted(partitions):
                if partition < topics[topic] and (topic, partition) not in owner:
                    owner[(topic, partition)] = member_id
                    owned[member_id].add((topic, partition))

    # Members over their fair share give back the excess first, so that moving stays minimal.
    fair = _fair_shares(members, topics, member_ids)
    for member_id in member_ids:
        excess = len(owned[member_id]) - fair[member_id]
        if excess > 0:
            for tp in sorted(owned[member_id], key=lambda tp: (str(tp[0]), -tp[1]))[:excess]:
                owned[member_id].discard(tp)
                del owner[tp]

    # Unassigned partitions go to the least loaded subscribed member.
    for topic in sorted(topics, key=str):
        subscribers = [m for m in member_ids if subscribes(m, topic)]
        if not subscribers:
            continue
        for partition in range(topics[topic]):
            if (topic, partition) in owner:
                continue
            chosen = min(subscribers, key=lambda m: (len(owned[m]), member_ids.index(m)))
            owner[(topic, partition)] = chosen
            owned[chosen].add((topic, partition))

    # Balance: move a partition from a member to a subscribed member with two fewer, until none can.
    moved = True
    while moved:
        moved = False
        for donor in sorted(member_ids, key=lambda m: -len(owned[m])):
            for tp in sorted(owned[donor], key=lambda tp: (str(tp[0]), -tp[1])):
                receivers = [m for m in member_ids if m != donor and subscribes(m, tp[0])
                             and len(owned[m]) + 1 < len(owned[donor])]
                if receivers:
                    receiver = min(receivers, key=lambda m: (len(owned[m]), member_ids.index(m)))
                    owned[donor].discard(tp)
                    owned[receiver].add(tp)
                    owner[tp] = receiver
                    moved = True
                    break
            if moved:
                break

    result: dict[str, Assignment] = {}
    for member_id in member_ids:
        by_topic: dict[TopicId, set[int]] = {}
        for topic, partition in owned[member_id]:
            by_topic.setdefault(topic, set()).add(partition)
        result[member_id] = _compact(by_topic)
    return result


def _fair_shares(members: Mapping[str, MemberSpec], topics: Mapping[TopicId, int],
                 member_ids: list[str]) -> dict[str, int]:
    """Each member's share when every member subscribes to the same topics (quota, plus one for
    the first members as long as extra partitions remain); with different subscriptions, no limit
    (the balancing moves do the work)."""
    subscriptions = {frozenset(t for t in members[m].subscribed_topic_ids if t in topics) for m in member_ids}
    if len(subscriptions) != 1:
        return {m: 1 << 31 for m in member_ids}
    total = sum(topics[t] for t in next(iter(subscriptions)))
    quota, extra = divmod(total, len(member_ids)) if member_ids else (0, 0)
    # Members that already hold more than the quota keep the extra slots: less movement.
    shares = {}
    holding_more = sorted(member_ids, key=lambda m: -sum(
        len(p) for t, p in members[m].previous.items() if t in topics))
    for member_id in holding_more:
        if extra > 0:
            shares[member_id] = quota + 1
            extra -= 1
        else:
            shares[member_id] = quota
    return shares


def range_assign(members: Mapping[str, MemberSpec], topics: Mapping[TopicId, int]) -> dict[str, Assignment]:
    result: dict[str, dict[TopicId, set[int]]] = {m: {} for m in members}
    for topic, num_partitions in topics.items():
        subscribers = sorted(m for m, spec in members.items() if topic in spec.subscribed_topic_ids)
        if not subscribers:
            continue
        quota, extra = divmod(num_partitions, len(subscribers))
        start = 0
        for i, member_id in enumerate(subscribers):
            count = quota + (1 if i < extra else 0)
            if count:
                result[member_id][topic] = set(range(start, start + count))
            start += count
    return {m: _compact(a) for m, a in result.items()}
