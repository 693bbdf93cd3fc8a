"""KIP-848 consumer groups: ConsumerGroupHeartbeat (joins, assignments, revocation, fencing, leaves,
static members), ConsumerGroupDescribe, OffsetCommit/OffsetFetch with member epochs, and a classic
member meeting a consumer group.

ConsumerGroupHeartbeat v1 wants the member id chosen by the consumer (KIP-1082); v0 lets the
coordinator choose it. Each member heartbeats on its own connection; every step waits for the
previous answer, so the group's epochs advance the same way on both brokers.
"""

from __future__ import annotations

from types import SimpleNamespace

from ..scenario import ALL, CaseFailed, Session, scenario
from .groups_classic import assignment, coordinator_ready, join_body
from .offsets import commit_body, topic_ids

REBALANCE_MS = 5000
PROFILE = "consumer-groups"


def heartbeat(s: Session, v: int, group: str, member_id: str, epoch: int, *, conn: str, label: str,
              topics=None, owned=None, assignor=None, instance_id=None, rebalance_ms: int | None = None,
              record: bool = True):
    body = {"group_id": group, "member_id": member_id, "member_epoch": epoch, "instance_id": instance_id,
            "rack_id": None, "rebalance_timeout_ms": -1 if rebalance_ms is None else rebalance_ms,
            "subscribed_topic_names": topics, "subscribed_topic_regex": None, "server_assignor": assignor,
            "topic_partitions": owned}
    return s.call("ConsumerGroupHeartbeat", v, body, conn=conn, label=label, record=record)


def first_member_id(v: int, name: str) -> str:
    """v1: the consumer's own id (a Java consumer uses a random UUID); v0: the coordinator's."""
    return f"conformance-member-{name}" if v >= 1 else ""


def join(s: Session, v: int, group: str, name: str, topics, *, conn: str | None = None, record: bool = True,
         label: str | None = None, **options):
    return heartbeat(s, v, group, first_member_id(v, name), 0, conn=conn or name, label=label or f"{name}: join",
                     topics=list(topics), owned=[], rebalance_ms=REBALANCE_MS, record=record, **options)


def owned(answer) -> list[dict]:
    """The partitions an answer assigned, as the member reports them owned in its next heartbeat."""
    if answer is None or answer.assignment is None:
        return []
    return [{"topic_id": tp.topic_id, "partitions": list(tp.partitions)} for tp in answer.assignment.topic_partitions]


def owning_member(s: Session, group: str, name: str, topics, partitions: int):
    """A member (v1, unrecorded) that joined and owns `partitions` partitions at an epoch the
    coordinator no longer moves. Kafka's coordinator can answer the join before its metadata image
    holds a topic created a moment ago: the join's assignment is then empty and a later heartbeat
    bumps the epoch, so a step that reuses the join's epoch would race it."""
    answer = join(s, 1, group, name, topics, record=False)
    member = SimpleNamespace(member_id=answer.member_id, member_epoch=answer.member_epoch, held=owned(answer))

    def settled() -> bool:
        beat = heartbeat(s, 1, group, member.member_id, member.member_epoch, conn=name, label=f"{name}: owns",
                         owned=member.held, record=False)
        if beat is None or beat.error_code != 0:
            raise CaseFailed(f"{name}'s heartbeat failed: {beat and beat.error_code}")
        stable = beat.member_epoch == member.member_epoch
        member.member_epoch = beat.member_epoch
        if beat.assignment is not None and owned(beat) != member.held:
            member.held = owned(beat)
            stable = False
        return stable and sum(len(tp["partitions"]) for tp in member.held) == partitions

    s.wait_until(settled, timeout=30, what=f"{name} owning {partitions} partitions")
    return member


def describe(s: Session, v: int, groups, label: str):
    return s.call("ConsumerGroupDescribe", v, {"group_ids": list(groups), "include_authorized_operations": True},
                  label=label)


def ready_group(s: Session, topic: str, partitions: int, group: str) -> None:
    s.create_topic(topic, partitions=partitions)
    topic_ids(s, topic)
    coordinator_ready(s, group)


@scenario("ConsumerGroupHeartbeat", versions=ALL, profile=PROFILE)
def consumer_heartbeat_join_and_leave(s: Session, v: int):
    """One member joins at epoch 0 and gets every partition of its topic, acknowledges them, and
    leaves with epoch -1."""
    group, topic = s.group(), s.topic()
    ready_group(s, topic, 3, group)
    a = join(s, v, group, "a", [topic])
    heartbeat(s, v, group, a.member_id, a.member_epoch, conn="a", label="a: owns its partitions", owned=owned(a))
    heartbeat(s, v, group, a.member_id, -1, conn="a", label="a: leaves (epoch -1)")
    describe(s, 0, [group], "ConsumerGroupDescribe v0 after the leave")


@scenario("ConsumerGroupHeartbeat", versions=ALL, profile=PROFILE)
def consumer_heartbeat_second_member(s: Session, v: int):
    """A owns all 4 partitions; B joins: A is asked to revoke half, B gets them once A has."""
    group, topic = s.group(), s.topic()
    ready_group(s, topic, 4, group)
    a = join(s, v, group, "a", [topic])
    a_owned = owned(a)
    heartbeat(s, v, group, a.member_id, a.member_epoch, conn="a", label="a: owns all", owned=a_owned)
    b = join(s, v, group, "b", [topic])
    a2 = heartbeat(s, v, group, a.member_id, a.member_epoch, conn="a", label="a: heartbeat after b joined",
                   owned=a_owned)
    if a2 is not None and a2.assignment is not None:
        a_owned = owned(a2)
    heartbeat(s, v, group, a.member_id, a2.member_epoch, conn="a", label="a: revoked", owned=a_owned)
    heartbeat(s, v, group, b.member_id, b.member_epoch, conn="b", label="b: heartbeat after a revoked",
                   owned=owned(b))
    describe(s, 1, [group], "ConsumerGroupDescribe v1")


@scenario("ConsumerGroupHeartbeat", versions=ALL, profile=PROFILE)
def consumer_heartbeat_assignment_interval(s: Session, v: int):
    """consumer.assignment.interval.ms=15000 set on the group (Kafka 4.3, KIP-1263): the first target
    assignment comes at once, the next waits out the interval; meanwhile B and C join at the last
    assignment epoch with no partitions, A keeps all of them, and the group is Assigning (group
    epoch ahead of the assignment epoch, B and C with empty target assignments)."""
    from .group_configs import GROUP, _settled

    group, topic = s.group(), s.topic()
    ready_group(s, topic, 4, group)
    configs = [{"name": "consumer.assignment.interval.ms", "config_operation": 0, "value": "15000"}]
    s.setup("IncrementalAlterConfigs", 1, {"resources": [{"resource_type": GROUP, "resource_name": group,
                                                          "configs": configs}], "validate_only": False})
    _settled(s, group, "consumer.assignment.interval.ms", "15000")
    a = join(s, v, group, "a", [topic])
    if a is None or a.error_code != 0:
        return
    heartbeat(s, v, group, a.member_id, a.member_epoch, conn="a", label="a: owns all", owned=owned(a))
    join(s, v, group, "b", [topic], label="b: joins within the interval")
    join(s, v, group, "c", [topic], label="c: joins within the interval")
    heartbeat(s, v, group, a.member_id, a.member_epoch, conn="a", label="a: heartbeat within the interval",
              owned=owned(a))
    describe(s, 1, [group], "ConsumerGroupDescribe while the assignment waits")


@scenario("ConsumerGroupHeartbeat", versions=ALL, profile=PROFILE, covers=["FENCED_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID",
                                                           "UNSUPPORTED_ASSIGNOR", "INVALID_REQUEST"])
def consumer_heartbeat_errors(s: Session, v: int):
    """A wrong member epoch, an unknown member, an assignor the broker lacks, and joins missing what
    a join must carry."""
    group, topic = s.group(), s.topic()
    ready_group(s, topic, 2, group)
    a = join(s, v, group, "a", [topic])
    heartbeat(s, v, group, a.member_id, a.member_epoch + 5, conn="a", label="epoch ahead", owned=owned(a))
    heartbeat(s, v, group, a.member_id, a.member_epoch, conn="a", label="after the fence", owned=owned(a))
    heartbeat(s, v, group, "conformance-unknown", 1, conn="b", label="unknown member", owned=[])
    heartbeat(s, v, s.group("none"), "conformance-unknown", 1, conn="b", label="unknown group", owned=[])
    heartbeat(s, v, s.group("other"), first_member_id(v, "x"), 0, conn="b", label="assignor nonexistent",
              topics=[topic], owned=[], rebalance_ms=REBALANCE_MS, assignor="nonexistent")
    heartbeat(s, v, s.group("other"), first_member_id(v, "x"), 0, conn="b", label="join without subscription",
              owned=[], rebalance_ms=REBALANCE_MS)
    heartbeat(s, v, s.group("other"), first_member_id(v, "x"), 0, conn="b", label="join without rebalance timeout",
              topics=[topic], owned=[])
    heartbeat(s, v, s.group("other"), first_member_id(v, "x"), 0, conn="b", label="join without owned partitions",
              topics=[topic], rebalance_ms=REBALANCE_MS)
    heartbeat(s, v, "", first_member_id(v, "x"), 0, conn="b", label="empty group id", topics=[topic], owned=[],
              rebalance_ms=REBALANCE_MS)
    heartbeat(s, v, s.group("other"), first_member_id(v, "x"), -3, conn="b", label="epoch -3", topics=[topic],
              owned=[], rebalance_ms=REBALANCE_MS)
    heartbeat(s, v, s.group("other"), "", 1, conn="b", label="no member id, epoch 1", owned=[])
    describe(s, 0, [s.group("other")], "the other group was not created")


@scenario("ConsumerGroupHeartbeat", versions=ALL, profile=PROFILE)
def consumer_heartbeat_static_member(s: Session, v: int):
    """A static member (instance id) leaves with epoch -2 (it will be back) and a new incarnation
    takes its place and its assignment; the old member id is then unknown."""
    group, topic = s.group(), s.topic()
    ready_group(s, topic, 2, group)
    a = join(s, v, group, "a", [topic], instance_id="instance-1")
    heartbeat(s, v, group, a.member_id, a.member_epoch, conn="a", label="a: owns", owned=owned(a),
              instance_id="instance-1")
    heartbeat(s, v, group, a.member_id, -2, conn="a", label="a: leaves for now (epoch -2)", instance_id="instance-1")
    describe(s, 0, [group], "ConsumerGroupDescribe v0 while away")
    a2 = join(s, v, group, "a2", [topic], instance_id="instance-1")
    heartbeat(s, v, group, a.member_id, a.member_epoch, conn="a", label="old member id", owned=owned(a),
              instance_id="instance-1")
    heartbeat(s, v, group, a2.member_id, -1, conn="a2", label="a2: leaves for good (epoch -1)",
              instance_id="instance-1")


@scenario("ConsumerGroupDescribe", versions=ALL, profile=PROFILE, covers=["GROUP_ID_NOT_FOUND"])
def consumer_group_describe_groups(s: Session, v: int):
    """A consumer group with one member, a group that does not exist, a classic group, an empty id."""
    group, topic = s.group(), s.topic()
    ready_group(s, topic, 2, group)
    coordinator_ready(s, s.group("classic"))
    a = owning_member(s, group, "a", [topic], 2)
    first = s.call("JoinGroup", 9, join_body(s.group("classic")), conn="c", record=False)
    s.call("JoinGroup", 9, join_body(s.group("classic"), first.member_id), conn="c", record=False)
    describe(s, v, [group, s.group("none"), s.group("classic"), ""], f"ConsumerGroupDescribe v{v}")


def commit(s: Session, v: int, group: str, topic: str, member_id: str, epoch: int, label: str, conn: str = "a"):
    return s.call("OffsetCommit", v, commit_body(group, {topic: [(0, 5, "")]}, generation=epoch, member_id=member_id),
                  conn=conn, label=label)


@scenario("OffsetCommit", versions=(8, 9, 10), profile=PROFILE, covers=["STALE_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"])
def offset_commit_consumer_group_epochs(s: Session, v: int):
    """Commits by a member of a consumer group: its epoch, an older one, a newer one, an unknown
    member, and a standalone commit (generation -1) while the group has members."""
    group, topic = s.group(), s.topic()
    ready_group(s, topic, 1, group)
    a = owning_member(s, group, "a", [topic], 1)
    commit(s, v, group, topic, a.member_id, a.member_epoch, "current epoch")
    commit(s, v, group, topic, a.member_id, a.member_epoch - 1, "older epoch")
    commit(s, v, group, topic, a.member_id, a.member_epoch + 1, "newer epoch")
    commit(s, v, group, topic, "conformance-unknown", a.member_epoch, "unknown member")
    commit(s, v, group, topic, "", -1, "standalone commit")


def partitions_of(answer) -> list[int]:
    return sorted(p for tp in owned(answer) for p in tp["partitions"])


@scenario("OffsetCommit", versions=(9, 10), profile=PROFILE, covers=["STALE_MEMBER_EPOCH"])
def offset_commit_consumer_group_older_epoch(s: Session, v: int):
    """Kafka 4.3 (KIP-1251): a commit with an epoch older than the member's is accepted for the
    partitions the member holds since that epoch or earlier, refused STALE_MEMBER_EPOCH when one
    of them was assigned to it later. A holds partition 0 and 1 from epoch 2, revokes one for B
    (epoch 3), gets it back when B leaves (epoch 4), then commits with epochs 3, 2 and 1."""
    group, topic = s.group(), s.topic()
    ready_group(s, topic, 2, group)
    a = join(s, 1, group, "a", [topic], record=False)
    heartbeat(s, 1, group, a.member_id, a.member_epoch, conn="a", label="a: owns both", owned=owned(a), record=False)
    b = join(s, 1, group, "b", [topic], record=False)
    a2 = heartbeat(s, 1, group, a.member_id, a.member_epoch, conn="a", label="a: told to revoke one",
                   owned=owned(a), record=False)
    a3 = heartbeat(s, 1, group, a.member_id, a2.member_epoch, conn="a", label="a: revoked", owned=owned(a2),
                   record=False)
    kept = partitions_of(a2)
    b2 = heartbeat(s, 1, group, b.member_id, b.member_epoch, conn="b", label="b: gets the other", owned=[],
                   record=False)
    heartbeat(s, 1, group, b.member_id, b2.member_epoch, conn="b", label="b: owns it", owned=owned(b2), record=False)
    heartbeat(s, 1, group, b.member_id, -1, conn="b", label="b: leaves", record=False)
    a4 = heartbeat(s, 1, group, a.member_id, a3.member_epoch, conn="a", label="a: gets it back", owned=owned(a2),
                   record=False)
    later = sorted(set(partitions_of(a4)) - set(kept))
    epoch = a4.member_epoch

    def commit_partitions(partitions, member_epoch, label):
        s.call("OffsetCommit", v, commit_body(group, {topic: [(p, 5, "") for p in partitions]},
                                              generation=member_epoch, member_id=a.member_id),
               conn="a", label=label)

    commit_partitions(kept, epoch - 1, "previous epoch, partition held since before it")
    commit_partitions(later, epoch - 1, "previous epoch, partition assigned after it")
    commit_partitions(kept + later, epoch - 1, "previous epoch, both partitions")
    commit_partitions(kept, epoch - 2, "epoch the kept partition was assigned at")
    commit_partitions(kept, epoch - 3, "epoch before any assignment")
    commit_partitions(kept + later, epoch, "current epoch, both partitions")
    describe(s, 0, [group], "ConsumerGroupDescribe v0 at the end")


@scenario("OffsetFetch", versions=(8, 9, 10), profile=PROFILE, covers=["STALE_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"])
def offset_fetch_consumer_group_epochs(s: Session, v: int):
    """OffsetFetch v9 carries the member id and epoch (checked); v8 does not."""
    group, topic = s.group(), s.topic()
    ready_group(s, topic, 1, group)
    a = owning_member(s, group, "a", [topic], 1)
    s.setup("OffsetCommit", 9, commit_body(group, {topic: [(0, 5, "m")]}, generation=a.member_epoch,
                                           member_id=a.member_id), conn="a")
    for label, member_id, epoch in [("member, its epoch", a.member_id, a.member_epoch),
                                    ("member, older epoch", a.member_id, a.member_epoch - 1),
                                    ("unknown member", "conformance-unknown", 1),
                                    ("no member (admin)", None, -1)]:
        s.call("OffsetFetch", v, {"groups": [{"group_id": group, "member_id": member_id, "member_epoch": epoch,
                                              "topics": None}], "require_stable": False}, conn="a", label=label)


@scenario("JoinGroup", versions=(4, 9), profile=PROFILE, covers=["INCONSISTENT_GROUP_PROTOCOL"])
def join_group_into_consumer_group(s: Session, v: int):
    """Classic JoinGroups into a group of KIP-848 members: of protocol type 'connect', and of type
    'consumer' (Kafka's online migration lets classic consumers join), then a DescribeGroups."""
    group, topic = s.group(), s.topic()
    ready_group(s, topic, 2, group)
    a = owning_member(s, group, "a", [topic], 2)
    s.call("JoinGroup", v, join_body(group, protocol_type="connect"), conn="c", label="JoinGroup type connect")
    s.call("JoinGroup", v, join_body(group, "conformance-unknown", topic=topic), conn="c",
           label="JoinGroup with an unknown member id")
    s.call("DescribeGroups", 5, {"groups": [group], "include_authorized_operations": False}, label="DescribeGroups v5")


@scenario("ConsumerGroupHeartbeat", versions=(1,), profile=PROFILE, covers=["GROUP_ID_NOT_FOUND"])
def consumer_heartbeat_into_classic_group(s: Session, v: int):
    """A KIP-848 member joins a group whose classic member is Stable."""
    group, topic = s.group(), s.topic()
    ready_group(s, topic, 1, group)
    first = s.call("JoinGroup", 9, join_body(group, topic=topic), conn="c", record=False)
    classic = s.call("JoinGroup", 9, join_body(group, first.member_id, topic=topic), conn="c", record=False)
    # The leader assigns itself the partition: the upgrade keeps it there, so where the partition is
    # does not depend on how either broker orders two random member ids.
    s.setup("SyncGroup", 5, {"group_id": group, "generation_id": classic.generation_id, "member_id": classic.member_id,
                             "protocol_type": "consumer", "protocol_name": "range",
                             "assignments": [{"member_id": classic.member_id,
                                              "assignment": assignment({topic: [0]})}]}, conn="c")
    join(s, v, group, "a", [topic])
    s.call("DescribeGroups", 5, {"groups": [group], "include_authorized_operations": False}, label="DescribeGroups v5")



# -- online migration: classic members inside a consumer group, and back --------------------------

def _classic_join(s: Session, group: str, topic: str, *, conn: str, label: str, member_id: str = ""):
    """A classic consumer's JoinGroup v9 (with its member id once Kafka gave one, KIP-394)."""
    answer = s.call("JoinGroup", 9, join_body(group, member_id, topic=topic), conn=conn, label=f"{label}: JoinGroup")
    if answer is not None and answer.error_code == 79:  # MEMBER_ID_REQUIRED
        answer = s.call("JoinGroup", 9, join_body(group, answer.member_id, topic=topic), conn=conn,
                        label=f"{label}: JoinGroup with its member id")
    return answer


def _classic_sync(s: Session, group: str, joined, *, conn: str, label: str, assignments=()):
    return s.call("SyncGroup", 5, {"group_id": group, "generation_id": joined.generation_id,
                                   "member_id": joined.member_id, "group_instance_id": None,
                                   "protocol_type": "consumer", "protocol_name": "range",
                                   "assignments": list(assignments)}, conn=conn, label=label)


def _classic_heartbeat(s: Session, group: str, joined, *, conn: str, label: str, generation: int | None = None):
    return s.call("Heartbeat", 4, {"group_id": group, "member_id": joined.member_id, "group_instance_id": None,
                                   "generation_id": joined.generation_id if generation is None else generation},
                  conn=conn, label=label)


def _mixed_group(s: Session, group: str, topic: str):
    """A KIP-848 member A owning both partitions, then a classic member C joining: A revokes one,
    C is told to rejoin (Heartbeat) once it is free and gets it from its next JoinGroup/SyncGroup."""
    a = join(s, 1, group, "a", [topic])
    heartbeat(s, 1, group, a.member_id, a.member_epoch, conn="a", label="a: owns both", owned=owned(a))
    c = _classic_join(s, group, topic, conn="c", label="c")
    _classic_sync(s, group, c, conn="c", label="c: SyncGroup (its partition is still A's)")
    _classic_heartbeat(s, group, c, conn="c", label="c: Heartbeat while A owns its partition")
    a2 = heartbeat(s, 1, group, a.member_id, a.member_epoch, conn="a", label="a: asked to revoke", owned=owned(a))
    a3 = heartbeat(s, 1, group, a.member_id, a2.member_epoch, conn="a", label="a: revoked", owned=owned(a2))
    _classic_heartbeat(s, group, c, conn="c", label="c: Heartbeat once its partition is free")
    c = _classic_join(s, group, topic, conn="c", label="c: rejoins", member_id=c.member_id)
    _classic_sync(s, group, c, conn="c", label="c: SyncGroup with its partition")
    _classic_heartbeat(s, group, c, conn="c", label="c: Heartbeat, reconciled")
    return a3, c


@scenario("SyncGroup", versions=(5,), profile=PROFILE, covers=["ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS"])
def classic_member_in_consumer_group(s: Session, v: int):
    """Online migration: a classic member (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) shares a consumer
    group with a KIP-848 member; both describe calls show the mixed group; the classic member commits
    with its generation; its LeaveGroup gives its partition back."""
    group, topic = s.group(), s.topic()
    ready_group(s, topic, 2, group)
    a, c = _mixed_group(s, group, topic)
    describe(s, 1, [group], "ConsumerGroupDescribe v1 of the mixed group")
    s.call("DescribeGroups", 5, {"groups": [group], "include_authorized_operations": False},
           label="DescribeGroups v5 of the mixed group")
    _classic_heartbeat(s, group, c, conn="c", label="c: Heartbeat with another generation",
                       generation=c.generation_id + 1)
    s.call("OffsetCommit", 9, commit_body(group, {topic: [(1, 5, None)]}, generation=c.generation_id + 1,
                                          member_id=c.member_id), conn="c", label="c: OffsetCommit, wrong generation")
    s.call("OffsetCommit", 9, commit_body(group, {topic: [(1, 5, None)]}, generation=c.generation_id,
                                          member_id=c.member_id), conn="c", label="c: OffsetCommit")
    s.call("LeaveGroup", 5, {"group_id": group, "members": [{"member_id": a.member_id, "group_instance_id": None,
                                                             "reason": None}]},
           conn="c", label="LeaveGroup of the KIP-848 member")
    s.call("LeaveGroup", 5, {"group_id": group, "members": [{"member_id": c.member_id, "group_instance_id": None,
                                                             "reason": None}]}, conn="c", label="c: LeaveGroup")
    heartbeat(s, 1, group, a.member_id, a.member_epoch, conn="a", label="a: after c left", owned=owned(a))
    describe(s, 1, [group], "ConsumerGroupDescribe v1 after c left")


@scenario("ConsumerGroupHeartbeat", versions=(1,), profile=PROFILE)
def consumer_group_downgrade(s: Session, v: int):
    """Online downgrade: the last KIP-848 member leaves a group whose other member is classic, so the
    group becomes a classic group again, rebalancing; the classic member rejoins it and leads."""
    group, topic = s.group(), s.topic()
    ready_group(s, topic, 2, group)
    a, c = _mixed_group(s, group, topic)
    heartbeat(s, v, group, a.member_id, -1, conn="a", label="a: leaves (epoch -1)")
    s.call("DescribeGroups", 5, {"groups": [group], "include_authorized_operations": False},
           label="DescribeGroups v5 after the downgrade")
    describe(s, 1, [group], "ConsumerGroupDescribe v1 after the downgrade")
    _classic_heartbeat(s, group, c, conn="c", label="c: Heartbeat after the downgrade")
    joined = _classic_join(s, group, topic, conn="c", label="c: rejoins the classic group", member_id=c.member_id)
    _classic_sync(s, group, joined, conn="c", label="c: SyncGroup as leader",
                  assignments=[{"member_id": joined.member_id, "assignment": b""}])
    s.call("DescribeGroups", 5, {"groups": [group], "include_authorized_operations": False},
           label="DescribeGroups v5, Stable again")


@scenario("JoinGroup", versions=(9,), profile=PROFILE, covers=["FENCED_INSTANCE_ID"])
def classic_static_member_in_consumer_group(s: Session, v: int):
    """A static classic member (group.instance.id) inside a consumer group: it joins without a member
    id, comes back under a new one (its predecessor is fenced), a wrong member id is fenced, and an
    admin LeaveGroup by instance id removes it."""
    group, topic = s.group(), s.topic()
    ready_group(s, topic, 2, group)
    a = join(s, 1, group, "a", [topic])
    heartbeat(s, 1, group, a.member_id, a.member_epoch, conn="a", label="a: owns both", owned=owned(a))
    first = s.call("JoinGroup", v, join_body(group, instance_id="inst-c", topic=topic), conn="c",
                   label="static c: JoinGroup")
    _classic_sync(s, group, first, conn="c", label="static c: SyncGroup")
    second = s.call("JoinGroup", v, join_body(group, instance_id="inst-c", topic=topic), conn="c2",
                    label="static c again, without its member id")
    _classic_heartbeat(s, group, first, conn="c", label="the replaced static member: Heartbeat")
    s.call("JoinGroup", v, join_body(group, "conformance-wrong-id", instance_id="inst-c", topic=topic), conn="c",
           label="static c with a wrong member id")
    _classic_sync(s, group, second, conn="c2", label="static c: SyncGroup as its new self")
    describe(s, 1, [group], "ConsumerGroupDescribe v1 with the static classic member")
    s.call("LeaveGroup", 5, {"group_id": group, "members": [{"member_id": "", "group_instance_id": "inst-c",
                                                             "reason": None}]},
           conn="c2", label="admin LeaveGroup by instance id")
    heartbeat(s, 1, group, a.member_id, a.member_epoch, conn="a", label="a: after the static member left",
              owned=owned(a))


@scenario("JoinGroup", versions=(9,), profile=PROFILE)
def consumer_group_downgrade_by_static_classic_member(s: Session, v: int):
    """A static KIP-848 member restarts as a classic consumer with the same group.instance.id (rolled
    back): once it replaces the group's last KIP-848 member, the group is classic again."""
    group, topic = s.group(), s.topic()
    ready_group(s, topic, 2, group)
    a = join(s, 1, group, "a", [topic], instance_id="inst-a")
    heartbeat(s, 1, group, a.member_id, a.member_epoch, conn="a", label="a: owns both", owned=owned(a),
              instance_id="inst-a")
    c = _classic_join(s, group, topic, conn="c", label="c")
    a2 = heartbeat(s, 1, group, a.member_id, a.member_epoch, conn="a", label="a: asked to revoke", owned=owned(a),
                   instance_id="inst-a")
    heartbeat(s, 1, group, a.member_id, a2.member_epoch, conn="a", label="a: revoked", owned=owned(a2),
              instance_id="inst-a")
    heartbeat(s, 1, group, a.member_id, -2, conn="a", label="a: leaves for a restart (epoch -2)",
              instance_id="inst-a")
    back = s.call("JoinGroup", v, join_body(group, instance_id="inst-a", topic=topic), conn="a2",
                  label="a back as a classic static member")
    s.call("DescribeGroups", 5, {"groups": [group], "include_authorized_operations": False},
           label="DescribeGroups v5 after the replacement")
    describe(s, 1, [group], "ConsumerGroupDescribe v1 after the replacement")
    _classic_sync(s, group, back, conn="a2", label="a: SyncGroup in the classic group")
    _classic_heartbeat(s, group, c, conn="c", label="c: Heartbeat in the classic group")
