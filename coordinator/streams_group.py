"""Streams groups (KIP-1071) as Kafka 4.3's group coordinator keeps them: the topology a Kafka
Streams application sends when it joins, that topology configured against the topics as they stand
(source topics resolved, partition counts of repartition and changelog topics derived, missing
internal topics named for creation), the tasks it yields, their assignment over the members by the
broker (active tasks spread evenly and kept where they were, standby replicas on other processes),
and each member's way to its target assignment: an active task moves only after its previous owner
has revoked it, as Kafka's streams CurrentAssignmentBuilder does.

Sans-io: topic metadata comes from functions given by the caller; nothing here writes records
(coordinator/streams_group_coordinator.py does). What streams groups share with consumer groups
(epochs, members, offsets) is coordinator/modern_group.py's ModernGroup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Callable

from .modern_group import ModernGroup, ModernGroupMember

STREAMS_GROUP_TYPE = "streams"

# Status codes of StreamsGroupHeartbeatResponse.
STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4
ASSIGNMENT_DELAYED = 5

ASSIGNMENT_DELAYED_DETAIL = "Assignment delayed due to the configured initial rebalance delay."
ASSIGNMENT_INTERVAL_DETAIL = "Assignment delayed due to the configured assignment interval."

SHUTDOWN_DETAIL = ("Streams group member {member} encountered a fatal error and requested a shutdown for the "
                   "entire application.")

Task = tuple[str, int]  # (subtopology id, partition)
Tasks = frozenset  # of Task


class MemberState(IntEnum):
    """Kafka's streams MemberState ids (the CurrentMemberAssignment record's State)."""

    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = 127


class StreamsGroupState:
    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


EMPTY_TASKS: Tasks = frozenset()


@dataclass(frozen=True)
class Assignment:
    active: Tasks = EMPTY_TASKS
    standby: Tasks = EMPTY_TASKS
    warmup: Tasks = EMPTY_TASKS


EMPTY_ASSIGNMENT = Assignment()


@dataclass
class StreamsGroupMember(ModernGroupMember):
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = EMPTY_ASSIGNMENT
    pending_revocation: Tasks = EMPTY_TASKS
    task_offsets: tuple = ()
    task_end_offsets: tuple = ()

    def same_metadata(self, other: "StreamsGroupMember") -> bool:
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.rebalance_timeout_ms,
                self.topology_epoch, self.process_id, self.user_endpoint, self.client_tags) == \
               (other.instance_id, other.rack_id, other.client_id, other.client_host, other.rebalance_timeout_ms,
                other.topology_epoch, other.process_id, other.user_endpoint, other.client_tags)

    def same_assignment(self, other: "StreamsGroupMember") -> bool:
        return (self.member_epoch, self.previous_member_epoch, self.state, self.assigned,
                self.pending_revocation) == (other.member_epoch, other.previous_member_epoch, other.state,
                                             other.assigned, other.pending_revocation)


# -- the topology ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int = 0
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...] = ()


@dataclass(frozen=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]


def _topic_info(item) -> TopicInfo:
    return TopicInfo(item.name, item.partitions, item.replication_factor,
                     tuple((c.key, c.value) for c in item.topic_configs or ()))


def topology_from_wire(wire) -> Topology:
    """A Topology from the heartbeat's (or the topology record's) generated object."""
    return Topology(wire.epoch, tuple(
        Subtopology(
            s.subtopology_id, tuple(s.source_topics or ()), tuple(s.source_topic_regex or ()),
            tuple(_topic_info(t) for t in s.state_changelog_topics or ()),
            tuple(s.repartition_sink_topics or ()),
            tuple(_topic_info(t) for t in s.repartition_source_topics or ()),
            tuple((tuple(g.source_topics or ()), tuple(g.source_topic_regex or ()),
                   tuple(g.repartition_source_topics or ())) for g in s.copartition_groups or ()))
        for s in wire.subtopologies or ()))


def _topic_info_dict(t: TopicInfo) -> dict:
    return {"name": t.name, "partitions": t.partitions, "replication_factor": t.replication_factor,
            "topic_configs": [{"key": k, "value": v} for k, v in t.configs]}


def topology_to_record(topology: Topology) -> dict:
    return {"epoch": topology.epoch, "subtopologies": [{
        "subtopology_id": s.subtopology_id, "source_topics": list(s.source_topics),
        "source_topic_regex": list(s.source_topic_regex),
        "state_changelog_topics": [_topic_info_dict(t) for t in s.state_changelog_topics],
        "repartition_sink_topics": list(s.repartition_sink_topics),
        "repartition_source_topics": [_topic_info_dict(t) for t in s.repartition_source_topics],
        "copartition_groups": [{"source_topics": list(a), "source_topic_regex": list(b),
                                "repartition_source_topics": list(c)} for a, b, c in s.copartition_groups],
    } for s in topology.subtopologies]}


class InvalidTopology(Exception):
    """STREAMS_INVALID_TOPOLOGY with its message."""


def validate_topology(topology: Topology) -> None:
    """Kafka's StreamsGroupHeartbeat topology checks: every repartition sink topic is a repartition
    source topic of some subtopology, and copartition indexes point into their lists."""
    sources = {t.name for s in topology.subtopologies for t in s.repartition_source_topics}
    for s in topology.subtopologies:
        for sink in s.repartition_sink_topics:
            if sink not in sources:
                raise InvalidTopology(f"Repartition sink topic {sink} does not exist in the topology.")
        for names, regexes, repartitions in s.copartition_groups:
            if any(i < 0 or i >= len(s.source_topics) for i in names) \
                    or any(i < 0 or i >= len(s.source_topic_regex) for i in regexes) \
                    or any(i < 0 or i >= len(s.repartition_source_topics) for i in repartitions):
                raise InvalidTopology(f"Copartition group of subtopology {s.subtopology_id} refers to a "
                                      f"topic that is not a source topic of the subtopology.")


@dataclass
class ConfiguredTopology:
    """The topology against the topics as they are: tasks per subtopology (None while it cannot be
    configured), the resolved source topics of each, the statuses to report, and the internal topics
    to create: name -> (partitions, replication factor, configs)."""

    task_counts: dict[str, int] | None
    source_topics: dict[str, tuple[str, ...]] = field(default_factory=dict)
    statuses: list[tuple[int, str]] = field(default_factory=list)
    to_create: dict[str, tuple[int, int, dict[str, str]]] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return self.task_counts is not None


def configure_topology(topology: Topology, partitions_of: Callable[[str], int | None],
                       topic_names: Callable[[], list[str]]) -> ConfiguredTopology:
    """Kafka's InternalTopicManager.configureTopics: resolve source regexes, check the source
    topics exist, derive the partition counts of repartition topics (explicit, else from the
    copartitioned topics, else the most partitions of the subtopologies writing to it) and of
    changelog topics (the subtopology's task count), then name internal topics that are missing
    (to be created) or wrongly partitioned."""
    resolved: dict[str, tuple[str, ...]] = {}
    all_names: list[str] | None = None
    for s in topology.subtopologies:
        names = list(s.source_topics)
        if s.source_topic_regex:
            if all_names is None:
                all_names = sorted(n for n in topic_names() if not n.startswith("__"))
            for regex in s.source_topic_regex:
                try:
                    pattern = re.compile(regex)
                except re.error:
                    continue
                names.extend(n for n in all_names if pattern.fullmatch(n) and n not in names)
        resolved[s.subtopology_id] = tuple(names)
    missing_sources = sorted({n for s in topology.subtopologies for n in s.source_topics if partitions_of(n) is None})
    if missing_sources:
        return ConfiguredTopology(None, resolved, [(MISSING_SOURCE_TOPICS,
                                                    f"Source topics {', '.join(missing_sources)} are missing.")])

    repartition: dict[str, TopicInfo] = {t.name: t for s in topology.subtopologies
                                         for t in s.repartition_source_topics}
    counts: dict[str, int] = {name: t.partitions for name, t in repartition.items() if t.partitions > 0}

    def topic_count(name: str) -> int | None:
        if name in repartition:
            return counts.get(name)
        return partitions_of(name)

    # Copartitioned repartition topics without a count take the count of the group's other topics.
    for s in topology.subtopologies:
        for names_idx, regex_idx, repart_idx in s.copartition_groups:
            external = [s.source_topics[i] for i in names_idx]
            known = [partitions_of(n) for n in external]
            known = [k for k in known if k is not None]
            if len(set(known)) > 1:
                return ConfiguredTopology(None, resolved, [(
                    INCORRECTLY_PARTITIONED_TOPICS,
                    f"Following topics do not have the same number of partitions: "
                    f"[{', '.join(sorted(external))}]")])
            for i in repart_idx:
                name = s.repartition_source_topics[i].name
                if name not in counts and known:
                    counts[name] = known[0]
    # The rest: the most partitions among the sources of the subtopologies writing to it.
    for _ in range(len(topology.subtopologies) + 1):
        progress = False
        for name in repartition:
            if name in counts:
                continue
            best = None
            for s in topology.subtopologies:
                if name not in s.repartition_sink_topics:
                    continue
                for source in resolved[s.subtopology_id] + tuple(t.name for t in s.repartition_source_topics):
                    c = topic_count(source)
                    if c is not None:
                        best = c if best is None else max(best, c)
            if best is not None:
                counts[name] = best
                progress = True
        if not progress:
            break
    for name in repartition:
        if name not in counts:
            return ConfiguredTopology(None, resolved, [(
                INCORRECTLY_PARTITIONED_TOPICS, f"Failed to compute number of partitions for topic {name}.")])

    task_counts: dict[str, int] = {}
    for s in topology.subtopologies:
        sizes = [partitions_of(n) or 0 for n in resolved[s.subtopology_id]]
        sizes += [counts[t.name] for t in s.repartition_source_topics]
        task_counts[s.subtopology_id] = max(sizes, default=0)

    wanted: dict[str, tuple[int, TopicInfo, str]] = {}
    for s in topology.subtopologies:
        for t in s.repartition_source_topics:
            wanted[t.name] = (counts[t.name], t, "repartition")
        for t in s.state_changelog_topics:
            wanted[t.name] = (task_counts[s.subtopology_id], t, "changelog")
    statuses: list[tuple[int, str]] = []
    to_create: dict[str, tuple[int, int, dict[str, str]]] = {}
    wrong = []
    for name, (count, info, _) in sorted(wanted.items()):
        existing = partitions_of(name)
        if existing is None:
            to_create[name] = (count, info.replication_factor, dict(info.configs))
        elif existing != count:
            wrong.append(f"Existing internal topic {name} has invalid number of partitions: expected: {count}; "
                         f"actual: {existing}.")
    if wrong:
        return ConfiguredTopology(None, resolved, [(INCORRECTLY_PARTITIONED_TOPICS, " ".join(wrong))])
    if to_create:
        statuses.append((MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {', '.join(sorted(to_create))}"))
        return ConfiguredTopology(None, resolved, statuses, to_create)
    return ConfiguredTopology(task_counts, resolved, statuses)


# -- the assignor -------------------------------------------------------------------------------------


def all_tasks(task_counts: dict[str, int]) -> list[Task]:
    return [(sub, p) for sub in sorted(task_counts) for p in range(task_counts[sub])]


def sticky_assign(members: dict[str, StreamsGroupMember], task_counts: dict[str, int], num_standby: int,
                  previous: dict[str, Assignment], stateful: set[str] | None = None) -> dict[str, Assignment]:
    """Kafka's StickyTaskAssignor in its shape: active tasks spread so that members' counts differ
    by at most one, each kept by the member that had it (current owner first, then previous target)
    while that member is under its share; then up to `num_standby` standby replicas of each
    stateful task on the least loaded members of other processes; no warm-up tasks, as Kafka 4.3's
    assignor gives none. Deterministic: members and tasks are walked in sorted order."""
    member_ids = sorted(members)
    if not member_ids:
        return {}
    tasks = all_tasks(task_counts)
    n, m = len(tasks), len(member_ids)
    floor, extra = n // m, n % m  # `extra` members may hold one task more than `floor`
    active: dict[str, set[Task]] = {mid: set() for mid in member_ids}
    owner: dict[Task, str] = {}

    def prior_owners(task: Task) -> list[str]:
        found = [mid for mid in member_ids
                 if task in members[mid].assigned.active or task in members[mid].pending_revocation]
        found += [mid for mid in member_ids if task in previous.get(mid, EMPTY_ASSIGNMENT).active
                  and mid not in found]
        return found

    # Stickiness within balance: a task stays with its owner while that owner is under `floor`,
    # then while members holding floor + 1 are fewer than `extra`.
    for limit in (floor, floor + 1):
        for task in tasks:
            if task in owner:
                continue
            for mid in prior_owners(task):
                if len(active[mid]) >= limit:
                    continue
                if limit > floor and sum(1 for x in member_ids if len(active[x]) > floor) >= extra:
                    break
                active[mid].add(task)
                owner[task] = mid
                break
    for task in tasks:
        if task in owner:
            continue
        mid = min(member_ids, key=lambda x: (len(active[x]), x))
        active[mid].add(task)
        owner[task] = mid

    standby: dict[str, set[Task]] = {mid: set() for mid in member_ids}
    if num_standby > 0:
        for task in tasks:
            if stateful is not None and task[0] not in stateful:
                continue
            process = members[owner[task]].process_id
            used = {process}
            for _ in range(num_standby):
                candidates = [mid for mid in member_ids if members[mid].process_id not in used]
                if not candidates:
                    break
                previous_holders = [mid for mid in candidates
                                    if task in members[mid].assigned.standby
                                    or task in previous.get(mid, EMPTY_ASSIGNMENT).standby]
                pool = previous_holders or candidates
                mid = min(pool, key=lambda x: (len(active[x]) + len(standby[x]), x))
                standby[mid].add(task)
                used.add(members[mid].process_id)
    return {mid: Assignment(frozenset(active[mid]), frozenset(standby[mid]), EMPTY_TASKS) for mid in member_ids}


# -- reconciliation -----------------------------------------------------------------------------------


def next_member_assignment(member: StreamsGroupMember, target_epoch: int, target: Assignment,
                           owned_elsewhere: Callable[[Task], bool],
                           reported_active: frozenset | None,
                           active_in_process: Callable[[Task], bool] = lambda task: False) -> StreamsGroupMember:
    """Kafka's streams CurrentAssignmentBuilder: the member's next step towards its target.

    A member owning active tasks its target does not have keeps only the rest and must revoke them
    (UNREVOKED_TASKS, its epoch unchanged) until a heartbeat reports them gone; then it moves to the
    target epoch with every target task not still owned elsewhere (UNRELEASED_TASKS while some are)
    and takes those on a later heartbeat once released: an active task owned by another member, a
    standby or warm-up task still active in the member's own process (`active_in_process`, as the
    group stood before this heartbeat)."""
    def standby_and_warmup(exclude: frozenset) -> tuple[frozenset, frozenset, bool]:
        withheld = frozenset(t for t in target.standby | target.warmup if active_in_process(t))
        return (target.standby - exclude - withheld, target.warmup - exclude - withheld, bool(withheld))

    if member.state == MemberState.UNREVOKED_TASKS:
        if reported_active is None or (reported_active & member.pending_revocation):
            return member
        member = replace(member, pending_revocation=EMPTY_TASKS)
    revoke = member.assigned.active - target.active
    if revoke:
        standby, warmup, _ = standby_and_warmup(member.assigned.active)
        return replace(member, state=MemberState.UNREVOKED_TASKS, pending_revocation=frozenset(revoke),
                       assigned=Assignment(member.assigned.active & target.active, standby, warmup))
    unreleased = frozenset(t for t in target.active - member.assigned.active if owned_elsewhere(t))
    active = target.active - unreleased
    standby, warmup, withheld = standby_and_warmup(active)
    previous = member.previous_member_epoch if member.member_epoch == target_epoch else member.member_epoch
    return replace(member, member_epoch=target_epoch, previous_member_epoch=previous,
                   state=MemberState.UNRELEASED_TASKS if unreleased or withheld else MemberState.STABLE,
                   assigned=Assignment(active, standby, warmup), pending_revocation=EMPTY_TASKS)


# -- the group ----------------------------------------------------------------------------------------


class StreamsGroup(ModernGroup):
    """A streams group's topology, members, epochs, target assignment and committed offsets."""

    group_type = STREAMS_GROUP_TYPE

    def __init__(self, group_id: str, now_ms: int) -> None:
        super().__init__(group_id, now_ms)
        self.topology: Topology | None = None
        self.configured: ConfiguredTopology | None = None
        self.validated_task_counts: dict[str, int] | None = None  # what the group epoch was bumped for
        self.members: dict[str, StreamsGroupMember] = {}
        self.target: dict[str, Assignment] = {}
        self.shutdown_requested: str | None = None  # the member that asked the application to shut down
        # A new group's first assignment waits for streams.initial.rebalance.delay.ms (more members
        # may join); until then (a wall-clock ms deadline) members stay at the initial epoch.
        self.initial_assignment_at: int | None = None
        self.endpoint_information_epoch = 0
        # Kafka 4.1+ (KIP-1101): the hash of the required topics' metadata the group epoch was last
        # bumped for (StreamsGroupMetadataValue.metadataHash, coordinator/metadata_hash.py), and the
        # assignment configs (num.standby.replicas) it was bumped with (LastAssignmentConfigs).
        self.metadata_hash = 0
        self.last_assignment_configs: dict[str, str] = {}

    def state_with_members(self) -> str:
        if self.configured is None or not self.configured.ready:
            return StreamsGroupState.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return StreamsGroupState.ASSIGNING
        if any(m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE
               for m in self.members.values()):
            return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE

    def uses_consumer_protocol(self) -> bool:
        return False

    def subscribed_topic_names(self) -> set[str]:
        """Source and repartition source topics of the topology (offsets of those do not expire
        while the group has members)."""
        if self.topology is None:
            return set()
        names = {t.name for s in self.topology.subtopologies for t in s.repartition_source_topics}
        if self.configured is not None:
            names |= {n for sources in self.configured.source_topics.values() for n in sources}
        names |= {n for s in self.topology.subtopologies for n in s.source_topics}
        return names

    def required_topics(self) -> set[str]:
        """Kafka's StreamsTopology.requiredTopics, what the metadata hash covers: the source topics
        the topology names (not those its regexes match), its repartition source topics and its
        changelog topics."""
        if self.topology is None:
            return set()
        return {name for s in self.topology.subtopologies
                for name in (*s.source_topics, *(t.name for t in s.repartition_source_topics),
                             *(t.name for t in s.state_changelog_topics))}

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """An empty group reads nothing (its offsets may be deleted, as Kafka allows)."""
        return bool(self.members) and topic in self.subscribed_topic_names()

    def owned_elsewhere(self, member_id: str) -> Callable[[Task], bool]:
        owned: dict[Task, str] = {}
        for m in self.members.values():
            if m.member_id == member_id:
                continue
            for t in m.assigned.active | m.pending_revocation:
                owned[t] = m.member_id
        return lambda task: task in owned

    def active_in_process(self, process_id: str) -> Callable[[Task], bool]:
        """Whether a task is active (assigned or being revoked) on a member of that process."""
        owned = {t for m in self.members.values() if m.process_id == process_id
                 for t in m.assigned.active | m.pending_revocation}
        return lambda task: task in owned
