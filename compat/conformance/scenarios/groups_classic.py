"""The classic group protocol (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups, ListGroups, DeleteGroups, OffsetDelete): its state machine and its errors.

Member ids are random on both brokers (normalised): each case first learns each member's id from
that member's own answer, so the placeholders are numbered in the same order on both sides. A
JoinGroup that waits for other members is sent with `s.send` on the member's own connection and
read with `s.receive` once the others have joined; where a step must see the group in a given state
the case waits for it (DescribeGroups, not recorded) instead of sleeping.
"""

from __future__ import annotations

from kafka_wire.consumer_protocol import serialize_assignment, serialize_subscription

from ..scenario import ALL, Session, scenario

SESSION_MS = 10000
REBALANCE_MS = 5000

# The SyncGroup version a client pairs with each JoinGroup version (the same protocol generation).
SYNC_FOR_JOIN = {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4, 7: 5, 8: 5, 9: 5}
HEARTBEAT_FOR_JOIN = {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4, 7: 4, 8: 4, 9: 4}
LEAVE_FOR_JOIN = {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4, 7: 4, 8: 5, 9: 5}


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: what a Java consumer's JoinGroup metadata carries."""
    return serialize_subscription(topics)


def assignment(partitions: dict[str, list[int]]) -> bytes:
    """ConsumerProtocolAssignment v0."""
    return serialize_assignment(partitions.items())


def join_body(group: str, member_id: str = "", *, instance_id: str | None = None, protocol_type: str = "consumer",
              protocols=None, session_ms: int = SESSION_MS, rebalance_ms: int = REBALANCE_MS, topic: str = "t"):
    return {"group_id": group, "session_timeout_ms": session_ms, "rebalance_timeout_ms": rebalance_ms,
            "member_id": member_id, "group_instance_id": instance_id, "protocol_type": protocol_type,
            "protocols": protocols if protocols is not None else [{"name": "range", "metadata": subscription(topic)}],
            "reason": None}


def join(s: Session, v: int, group: str, *, conn: str, label: str, instance_id: str | None = None, **options):
    """A member's first join, recorded: at v4+ (dynamic members) Kafka asks for a member id first
    (MEMBER_ID_REQUIRED, KIP-394) and the member joins again with it. Returns the last answer."""
    answer = s.call("JoinGroup", v, join_body(group, instance_id=instance_id, **options), conn=conn,
                    label=f"{label}: JoinGroup v{v}")
    if answer is not None and answer.error_code == 79:  # MEMBER_ID_REQUIRED
        answer = s.call("JoinGroup", v, join_body(group, answer.member_id, instance_id=instance_id, **options),
                        conn=conn, label=f"{label}: JoinGroup v{v} with its member id")
    return answer


def join_pending(s: Session, v: int, group: str, *, conn: str, label: str, **options):
    """A member's first join into a group that has members: the join waits for the rebalance, so it
    is sent (and read later with s.receive). The MEMBER_ID_REQUIRED step, if any, is recorded."""
    member_id = ""
    if v >= 4 and options.get("instance_id") is None:
        first = s.call("JoinGroup", v, join_body(group, **options), conn=conn, label=f"{label}: JoinGroup v{v}")
        member_id = first.member_id
    return s.send("JoinGroup", v, join_body(group, member_id, **options), conn=conn,
                  label=f"{label}: JoinGroup v{v} (answered when the rebalance completes)")


def sync_body(group: str, generation: int, member_id: str, assignments=(), *, instance_id=None,
              protocol_type: str | None = "consumer", protocol_name: str | None = "range"):
    return {"group_id": group, "generation_id": generation, "member_id": member_id, "group_instance_id": instance_id,
            "protocol_type": protocol_type, "protocol_name": protocol_name,
            "assignments": [{"member_id": m, "assignment": a} for m, a in assignments]}


def heartbeat_body(group: str, generation: int, member_id: str, instance_id: str | None = None):
    return {"group_id": group, "generation_id": generation, "member_id": member_id, "group_instance_id": instance_id}


def coordinator_ready(s: Session, group: str) -> None:
    """Waits (unrecorded) until the group's coordinator serves it: FindCoordinator answers once
    __consumer_offsets exists, but Kafka's coordinator loads its partition a moment later
    (NOT_COORDINATOR meanwhile)."""
    s.find_coordinator(group)

    def serves() -> bool:
        answer = s.call("DescribeGroups", 5, {"groups": [group], "include_authorized_operations": False},
                        record=False)
        return answer is not None and answer.groups[0].error_code == 0

    s.wait_until(serves, timeout=30, what=f"the coordinator of {group}")


def group_state(s: Session, group: str) -> str:
    answer = s.call("DescribeGroups", 5, {"groups": [group], "include_authorized_operations": False}, record=False)
    return answer.groups[0].group_state if answer is not None else "?"


def wait_state(s: Session, group: str, state: str) -> None:
    s.wait_until(lambda: group_state(s, group) == state, timeout=20, what=f"group {group} in {state}")


def describe(s: Session, v: int, groups, label: str, conn: str = "main"):
    return s.call("DescribeGroups", v, {"groups": list(groups), "include_authorized_operations": True}, conn=conn,
                  label=label)


def stable_single_member(s: Session, v: int, group: str, *, conn: str = "a", label: str = "A", record=True,
                         **options):
    """One member joins and syncs (the leader assigns itself a partition): (member id, generation)."""
    if record:
        answer = join(s, v, group, conn=conn, label=label, **options)
    else:
        answer = s.call("JoinGroup", v, join_body(group, **options), conn=conn, record=False)
        if answer.error_code == 79:
            answer = s.call("JoinGroup", v, join_body(group, answer.member_id, **options), conn=conn, record=False)
    sv = SYNC_FOR_JOIN[v]
    body = sync_body(group, answer.generation_id, answer.member_id,
                     [(answer.member_id, assignment({"t": [0]}))], instance_id=options.get("instance_id"))
    if record:
        s.call("SyncGroup", sv, body, conn=conn, label=f"{label}: SyncGroup v{sv} (leader)")
    else:
        s.setup("SyncGroup", sv, body, conn=conn)
    return answer.member_id, answer.generation_id


# -- FindCoordinator ---------------------------------------------------------------------------------


@scenario("FindCoordinator", versions=ALL)
def find_coordinator_group(s: Session, v: int):
    """The coordinator of a group (v4: of two groups in one request)."""
    coordinator_ready(s, s.group())
    coordinator_ready(s, s.group("second"))
    if v >= 4:
        s.call("FindCoordinator", v, {"key_type": 0, "coordinator_keys": [s.group(), s.group("second")]})
    else:
        s.call("FindCoordinator", v, {"key": s.group(), "key_type": 0})


@scenario("FindCoordinator", versions=ALL)
def find_coordinator_transaction(s: Session, v: int):
    """The coordinator of a transactional id (key type 1; v0 has no key type: asks for a group)."""
    s.find_coordinator(s.transactional_id(), key_type=1)
    if v >= 4:
        s.call("FindCoordinator", v, {"key_type": 1, "coordinator_keys": [s.transactional_id()]})
    else:
        s.call("FindCoordinator", v, {"key": s.transactional_id(), "key_type": 1})


@scenario("FindCoordinator", versions=(1, 2, 3, 4), covers=["INVALID_REQUEST"])
def find_coordinator_invalid_key_type(s: Session, v: int):
    """Key type 7 is neither group (0), transaction (1) nor share (2)."""
    coordinator_ready(s, s.group())
    if v >= 4:
        s.call("FindCoordinator", v, {"key_type": 7, "coordinator_keys": [s.group()]})
    else:
        s.call("FindCoordinator", v, {"key": s.group(), "key_type": 7})


@scenario("FindCoordinator", versions=(1, 3, 4), covers=["INVALID_REQUEST"])
def find_coordinator_empty_key(s: Session, v: int):
    """An empty group id and an empty transactional id."""
    coordinator_ready(s, s.group())
    for key_type in (0, 1):
        if v >= 4:
            s.call("FindCoordinator", v, {"key_type": key_type, "coordinator_keys": [""]})
        else:
            s.call("FindCoordinator", v, {"key": "", "key_type": key_type})


# -- JoinGroup ----------------------------------------------------------------------------------------


@scenario("JoinGroup", versions=ALL, covers=["MEMBER_ID_REQUIRED"])
def join_group_single_member(s: Session, v: int):
    """One member: (v4+ MEMBER_ID_REQUIRED, then) generation 1, leader of itself, SyncGroup, Heartbeat."""
    group = s.group()
    coordinator_ready(s, group)
    answer = join(s, v, group, conn="a", label="A")
    sv = SYNC_FOR_JOIN[v]
    s.call("SyncGroup", sv, sync_body(group, answer.generation_id, answer.member_id,
                                      [(answer.member_id, assignment({"t": [0, 1]}))]),
           conn="a", label=f"A: SyncGroup v{sv}")
    hv = HEARTBEAT_FOR_JOIN[v]
    s.call("Heartbeat", hv, heartbeat_body(group, answer.generation_id, answer.member_id), conn="a")
    describe(s, 5, [group], "DescribeGroups v5: Stable")
    # The same member joins again with the same protocols: a new generation.
    s.call("JoinGroup", v, join_body(group, answer.member_id), conn="a", label="A: JoinGroup again")


@scenario("JoinGroup", versions=ALL, covers=["REBALANCE_IN_PROGRESS"])
def join_group_two_members(s: Session, v: int):
    """A second member joins a Stable group: A's heartbeat sees REBALANCE_IN_PROGRESS, A rejoins,
    both are answered (A leads), B's SyncGroup waits for the leader's and gets its assignment."""
    group = s.group()
    coordinator_ready(s, group)
    a_id, generation = stable_single_member(s, v, group)
    pending_b = join_pending(s, v, group, conn="b", label="B")
    wait_state(s, group, "PreparingRebalance")
    hv = HEARTBEAT_FOR_JOIN[v]
    s.call("Heartbeat", hv, heartbeat_body(group, generation, a_id), conn="a",
           label=f"A: Heartbeat v{hv} while B joins")
    pending_a = s.send("JoinGroup", v, join_body(group, a_id), conn="a", label=f"A: JoinGroup v{v} (rejoin)")
    a = s.receive(pending_a)
    b = s.receive(pending_b)
    sv = SYNC_FOR_JOIN[v]
    pending_sync_b = s.send("SyncGroup", sv, sync_body(group, b.generation_id, b.member_id), conn="b",
                            label=f"B: SyncGroup v{sv} (answered after the leader's)")
    leader, follower = (a, b) if a.leader == a.member_id else (b, a)
    s.record("the leader is A", a.leader == a.member_id)
    s.call("SyncGroup", sv, sync_body(group, leader.generation_id, leader.member_id, [
        (leader.member_id, assignment({"t": [0]})), (follower.member_id, assignment({"t": [1]}))]),
        conn="a" if leader is a else "b", label=f"leader: SyncGroup v{sv}")
    s.receive(pending_sync_b)
    describe(s, 5, [group], "DescribeGroups v5: Stable with two members")


@scenario("JoinGroup", versions=(0, 3, 4, 7, 9), covers=["INCONSISTENT_GROUP_PROTOCOL"])
def join_group_inconsistent_protocol(s: Session, v: int):
    """A group of protocol type 'consumer' with protocol 'range': a member of type 'connect', one
    with no protocol in common, and (into a new group) one with an empty protocol type / no protocols."""
    group = s.group()
    coordinator_ready(s, group)
    stable_single_member(s, v, group)
    s.call("JoinGroup", v, join_body(group, protocol_type="connect"), conn="b", label="type connect")
    s.call("JoinGroup", v, join_body(group, protocols=[{"name": "roundrobin", "metadata": subscription("t")}]),
           conn="b", label="no common protocol")
    s.call("JoinGroup", v, join_body(s.group("new"), protocol_type=""), conn="b", label="empty protocol type")
    s.call("JoinGroup", v, join_body(s.group("new"), protocols=[]), conn="b", label="no protocols")
    describe(s, 5, [group, s.group("new")], "DescribeGroups v5")


@scenario("JoinGroup", versions=(0, 4, 9), covers=["INVALID_SESSION_TIMEOUT"], profile="small-groups")
def join_group_invalid_session_timeout(s: Session, v: int):
    """Session timeouts below group.min.session.timeout.ms (6 s) and above the max (30 s)."""
    group = s.group()
    coordinator_ready(s, group)
    for timeout in (5999, 30001, 6000):
        s.call("JoinGroup", v, join_body(group, session_ms=timeout), label=f"session timeout {timeout}")


@scenario("JoinGroup", versions=(3, 4, 9), covers=["GROUP_MAX_SIZE_REACHED"], profile="small-groups")
def join_group_max_size(s: Session, v: int):
    """group.max.size is 2: a third member is refused."""
    group = s.group()
    coordinator_ready(s, group)
    a_id, generation = stable_single_member(s, v, group)
    pending_b = join_pending(s, v, group, conn="b", label="B")
    wait_state(s, group, "PreparingRebalance")
    a = s.call("JoinGroup", v, join_body(group, a_id), conn="a", label="A: rejoin")
    b = s.receive(pending_b)
    sv = SYNC_FOR_JOIN[v]
    pending_sync_b = s.send("SyncGroup", sv, sync_body(group, b.generation_id, b.member_id), conn="b")
    s.setup("SyncGroup", sv, sync_body(group, a.generation_id, a_id, [(a_id, b""), (b.member_id, b"")]), conn="a")
    s.receive(pending_sync_b, record=False)
    c = s.call("JoinGroup", v, join_body(group), conn="c", label="C: JoinGroup")
    if c is not None and c.error_code == 79:
        pending_c = s.send("JoinGroup", v, join_body(group, c.member_id), conn="c", label="C: JoinGroup with its id")
        s.receive(pending_c)
    describe(s, 5, [group], "DescribeGroups v5")


@scenario("JoinGroup", versions=(0, 4, 9), covers=["UNKNOWN_MEMBER_ID"])
def join_group_unknown_member_id(s: Session, v: int):
    """A join with a member id the group never gave: into a group that does not exist and into one
    with a member."""
    group = s.group()
    coordinator_ready(s, group)
    s.call("JoinGroup", v, join_body(s.group("none"), "conformance-0000"), label="unknown group")
    stable_single_member(s, v, group, record=False)
    s.call("JoinGroup", v, join_body(group, "conformance-0000"), conn="b", label="group with a member")


@scenario("JoinGroup", versions=ALL, covers=["INVALID_GROUP_ID"])
def join_group_empty_group_id(s: Session, v: int):
    """An empty group id."""
    coordinator_ready(s, s.group())
    s.call("JoinGroup", v, join_body(""))


@scenario("JoinGroup", versions=(5, 7, 9), covers=["FENCED_INSTANCE_ID"])
def join_group_static_member(s: Session, v: int):
    """A static member (group.instance.id) joins without MEMBER_ID_REQUIRED; the same instance joins
    again with no member id (a restart): it gets a new member id and the old one is fenced."""
    group = s.group()
    coordinator_ready(s, group)
    old_id, generation = stable_single_member(s, v, group, instance_id="instance-1")
    hv = HEARTBEAT_FOR_JOIN[v]
    s.call("Heartbeat", hv, heartbeat_body(group, generation, old_id, "instance-1"), conn="a")
    restarted = s.call("JoinGroup", v, join_body(group, instance_id="instance-1"), conn="b",
                       label="instance-1 restarted: JoinGroup")
    s.call("Heartbeat", hv, heartbeat_body(group, generation, old_id, "instance-1"), conn="a",
           label="old member id: Heartbeat")
    sv = SYNC_FOR_JOIN[v]
    s.call("SyncGroup", sv, sync_body(group, generation, old_id, instance_id="instance-1"), conn="a",
           label="old member id: SyncGroup")
    s.call("OffsetCommit", 7, {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": old_id,
                               "group_instance_id": "instance-1", "topics": []}, conn="a",
           label="old member id: OffsetCommit v7")
    s.call("JoinGroup", v, join_body(group, old_id, instance_id="instance-1"), conn="a",
           label="old member id: JoinGroup")
    if restarted is not None and restarted.error_code == 0:
        s.call("Heartbeat", hv, heartbeat_body(group, restarted.generation_id, restarted.member_id, "instance-1"),
               conn="b", label="new member id: Heartbeat")
    describe(s, 5, [group], "DescribeGroups v5")


@scenario("JoinGroup", versions=(4, 9), covers=["REBALANCE_IN_PROGRESS"])
def join_group_commit_during_rebalance(s: Session, v: int):
    """Between the JoinGroup answer and the leader's SyncGroup (CompletingRebalance) a member's
    heartbeat is fine and its OffsetCommit is REBALANCE_IN_PROGRESS."""
    group, topic = s.group(), s.topic()
    s.create_topic(topic)
    coordinator_ready(s, group)
    answer = join(s, v, group, conn="a", label="A")
    describe(s, 5, [group], "DescribeGroups: CompletingRebalance")
    hv = HEARTBEAT_FOR_JOIN[v]
    s.call("Heartbeat", hv, heartbeat_body(group, answer.generation_id, answer.member_id), conn="a")
    for cv in (7, 8):
        s.call("OffsetCommit", cv, {"group_id": group, "generation_id_or_member_epoch": answer.generation_id,
                                    "member_id": answer.member_id, "topics": [
                                        {"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                                        "committed_metadata": ""}]}]}, conn="a")


@scenario("JoinGroup", versions=(4, 9), covers=["ILLEGAL_GENERATION"])
def join_group_illegal_generation(s: Session, v: int):
    """SyncGroup, Heartbeat and OffsetCommit of a known member with a wrong generation."""
    group, topic = s.group(), s.topic()
    s.create_topic(topic)
    coordinator_ready(s, group)
    member_id, generation = stable_single_member(s, v, group, record=False)
    sv, hv = SYNC_FOR_JOIN[v], HEARTBEAT_FOR_JOIN[v]
    s.call("SyncGroup", sv, sync_body(group, generation + 1, member_id), conn="a", label="SyncGroup generation+1")
    s.call("Heartbeat", hv, heartbeat_body(group, generation + 1, member_id), conn="a", label="Heartbeat generation+1")
    s.call("Heartbeat", hv, heartbeat_body(group, 0, member_id), conn="a", label="Heartbeat generation 0")
    for cv in (2, 8):
        s.call("OffsetCommit", cv, {"group_id": group, "generation_id_or_member_epoch": generation + 5,
                                    "member_id": member_id, "topics": [
                                        {"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                                        "committed_metadata": ""}]}]}, conn="a",
               label=f"OffsetCommit v{cv} generation+5")
    s.call("SyncGroup", sv, sync_body(group, generation, member_id), conn="a", label="SyncGroup right generation")


# -- SyncGroup ----------------------------------------------------------------------------------------


@scenario("SyncGroup", versions=ALL, covers=["UNKNOWN_MEMBER_ID", "INCONSISTENT_GROUP_PROTOCOL"])
def sync_group_checks(s: Session, v: int):
    """A leader's SyncGroup; then one by an unknown member, one in a group that does not exist, and
    (v5) with the wrong protocol type and protocol name."""
    group = s.group()
    coordinator_ready(s, group)
    jv = {0: 2, 1: 2, 2: 3, 3: 5, 4: 6, 5: 7}[v]
    answer = s.call("JoinGroup", jv, join_body(group), conn="a", label=f"JoinGroup v{jv}")
    if answer.error_code == 79:
        answer = s.call("JoinGroup", jv, join_body(group, answer.member_id), conn="a", label=f"JoinGroup v{jv} again")
    member_id, generation = answer.member_id, answer.generation_id
    if v >= 5:
        s.call("SyncGroup", v, sync_body(group, generation, member_id, protocol_type="connect"), conn="a",
               label="wrong protocol type")
        s.call("SyncGroup", v, sync_body(group, generation, member_id, protocol_name="roundrobin"), conn="a",
               label="wrong protocol name")
        s.call("SyncGroup", v, sync_body(group, generation, member_id, protocol_type=None, protocol_name=None),
               conn="a", label="no protocol type or name")
    s.call("SyncGroup", v, sync_body(group, generation, member_id, [(member_id, assignment({"t": [3]}))]), conn="a",
           label="leader")
    s.call("SyncGroup", v, sync_body(group, generation, member_id), conn="a", label="leader again (Stable)")
    s.call("SyncGroup", v, sync_body(group, generation, "conformance-0000"), conn="b", label="unknown member")
    s.call("SyncGroup", v, sync_body(s.group("none"), 1, "conformance-0000"), conn="b", label="unknown group")
    s.call("SyncGroup", v, sync_body("", 1, "conformance-0000"), conn="b", label="empty group id")


# -- Heartbeat ----------------------------------------------------------------------------------------


@scenario("Heartbeat", versions=ALL, covers=["UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "INVALID_GROUP_ID"])
def heartbeat_checks(s: Session, v: int):
    """A member's heartbeat; an unknown member, a wrong generation, a group that does not exist, an
    empty group id."""
    group = s.group()
    coordinator_ready(s, group)
    member_id, generation = stable_single_member(s, 7, group, record=False)
    s.call("Heartbeat", v, heartbeat_body(group, generation, member_id), conn="a", label="member")
    s.call("Heartbeat", v, heartbeat_body(group, generation, "conformance-0000"), conn="b", label="unknown member")
    s.call("Heartbeat", v, heartbeat_body(group, generation + 1, member_id), conn="a", label="wrong generation")
    s.call("Heartbeat", v, heartbeat_body(s.group("none"), 1, "conformance-0000"), conn="b", label="unknown group")
    s.call("Heartbeat", v, heartbeat_body("", 1, "conformance-0000"), conn="b", label="empty group id")


# -- LeaveGroup ---------------------------------------------------------------------------------------


@scenario("LeaveGroup", versions=ALL, covers=["UNKNOWN_MEMBER_ID"])
def leave_group_members(s: Session, v: int):
    """Leaving: v0-2 one member id; v3+ a batch of a known member, an unknown member id and a static
    member by instance id; then the group is Empty. An unknown group and an empty group id too."""
    group = s.group()
    coordinator_ready(s, group)
    a_id, generation = stable_single_member(s, 7, group, label="A")
    if v < 3:
        s.call("LeaveGroup", v, {"group_id": group, "member_id": "conformance-0000"}, conn="b", label="unknown member")
        s.call("LeaveGroup", v, {"group_id": group, "member_id": a_id}, conn="a", label="A leaves")
        s.call("LeaveGroup", v, {"group_id": s.group("none"), "member_id": "conformance-0000"}, conn="b",
               label="unknown group")
        s.call("LeaveGroup", v, {"group_id": "", "member_id": "conformance-0000"}, conn="b", label="empty group id")
    else:
        static_group = s.group("static")
        stable_single_member(s, 7, static_group, conn="c", label="static", instance_id="instance-1")
        s.call("LeaveGroup", v, {"group_id": group, "members": [
            {"member_id": a_id, "reason": "done"}, {"member_id": "conformance-0000"}]}, conn="a",
            label="A and an unknown member")
        s.call("LeaveGroup", v, {"group_id": static_group, "members": [
            {"member_id": "", "group_instance_id": "instance-1"},
            {"member_id": "", "group_instance_id": "instance-2"}]}, conn="c",
            label="static members by instance id (one unknown)")
        s.call("LeaveGroup", v, {"group_id": s.group("none"), "members": [{"member_id": "conformance-0000"}]},
               conn="b", label="unknown group")
        s.call("LeaveGroup", v, {"group_id": "", "members": [{"member_id": "conformance-0000"}]}, conn="b",
               label="empty group id")
    describe(s, 5, [group] + ([s.group("static")] if v >= 3 else []), "DescribeGroups v5: Empty")


# -- DescribeGroups -----------------------------------------------------------------------------------


@scenario("DescribeGroups", versions=ALL)
def describe_groups_states(s: Session, v: int):
    """A group in each state: none (Dead), CompletingRebalance, Stable, PreparingRebalance, Empty."""
    group = s.group()
    coordinator_ready(s, group)
    describe(s, v, [s.group("none"), ""], "no such group, empty id")
    answer = s.call("JoinGroup", 7, join_body(group), conn="a", record=False)
    a = s.call("JoinGroup", 7, join_body(group, answer.member_id), conn="a", label="A: JoinGroup")
    describe(s, v, [group], "CompletingRebalance")
    s.setup("SyncGroup", 5, sync_body(group, a.generation_id, a.member_id, [(a.member_id, assignment({"t": [0]}))]),
            conn="a")
    describe(s, v, [group], "Stable")
    pending_b = join_pending(s, 7, group, conn="b", label="B")
    wait_state(s, group, "PreparingRebalance")
    describe(s, v, [group], "PreparingRebalance")
    pending_a = s.send("JoinGroup", 7, join_body(group, a.member_id), conn="a")
    s.receive(pending_a, record=False)
    b = s.receive(pending_b)
    s.setup("LeaveGroup", 4, {"group_id": group, "members": [{"member_id": a.member_id},
                                                             {"member_id": b.member_id}]}, conn="a")
    describe(s, v, [group], "Empty")


# -- ListGroups ---------------------------------------------------------------------------------------


def list_own_groups(s: Session, v: int, body, label: str):
    """ListGroups answers every group on the broker: only this case's are recorded."""
    answer = s.call("ListGroups", v, body, record=False)
    prefix = s.group()
    own = [g.to_dict() for g in answer.groups if g.group_id.startswith(prefix)]
    s.record(label, {"error_code": answer.error_code, "groups": sorted(own, key=lambda g: g["group_id"])})


@scenario("ListGroups", versions=ALL)
def list_groups_states_and_types(s: Session, v: int):
    """A Stable classic group and an Empty one (offsets only); v4 filters by state, v5 by type."""
    coordinator_ready(s, s.group())
    topic = s.topic()
    s.create_topic(topic)
    stable_single_member(s, 7, s.group("stable"), record=False)
    s.setup("OffsetCommit", 8, {"group_id": s.group("empty"), "generation_id_or_member_epoch": -1, "member_id": "",
                                "topics": [{"name": topic, "partitions": [
                                    {"partition_index": 0, "committed_offset": 3, "committed_metadata": ""}]}]})
    list_own_groups(s, v, {"states_filter": [], "types_filter": []}, "all")
    if v >= 4:
        list_own_groups(s, v, {"states_filter": ["Stable"], "types_filter": []}, "states Stable")
        list_own_groups(s, v, {"states_filter": ["empty"], "types_filter": []}, "states empty (lower case)")
        list_own_groups(s, v, {"states_filter": ["NoSuchState"], "types_filter": []}, "unknown state")
    if v >= 5:
        list_own_groups(s, v, {"states_filter": [], "types_filter": ["classic"]}, "types classic")
        list_own_groups(s, v, {"states_filter": [], "types_filter": ["Consumer"]}, "types Consumer")
        list_own_groups(s, v, {"states_filter": [], "types_filter": ["share"]}, "types share")


# -- DeleteGroups -------------------------------------------------------------------------------------


@scenario("DeleteGroups", versions=ALL, covers=["NON_EMPTY_GROUP", "GROUP_ID_NOT_FOUND", "INVALID_GROUP_ID"])
def delete_groups_each_kind(s: Session, v: int):
    """A group with a member (NON_EMPTY_GROUP), one that does not exist, an empty one with offsets
    (deleted: its offsets are gone), and an empty group id."""
    topic = s.topic()
    s.create_topic(topic)
    coordinator_ready(s, s.group())
    stable_single_member(s, 7, s.group("busy"), record=False)
    s.setup("OffsetCommit", 8, {"group_id": s.group("idle"), "generation_id_or_member_epoch": -1, "member_id": "",
                                "topics": [{"name": topic, "partitions": [
                                    {"partition_index": 0, "committed_offset": 3, "committed_metadata": "m"}]}]})
    s.call("DeleteGroups", v, {"groups_names": [s.group("busy"), s.group("none"), s.group("idle"), ""]})
    s.call("OffsetFetch", 7, {"group_id": s.group("idle"), "topics": None, "require_stable": False},
           label="OffsetFetch of the deleted group")
    describe(s, 5, [s.group("idle")], "DescribeGroups of the deleted group")
    s.call("DeleteGroups", v, {"groups_names": [s.group("idle")]}, label="DeleteGroups again")


# -- OffsetDelete -------------------------------------------------------------------------------------


@scenario("OffsetDelete", versions=ALL, covers=["GROUP_SUBSCRIBED_TO_TOPIC", "GROUP_ID_NOT_FOUND"])
def offset_delete_subscribed(s: Session, v: int):
    """Offsets of a topic the group's member subscribes to cannot be deleted; of another topic they
    can; an unknown group, an unknown topic."""
    group, topic, other = s.group(), s.topic(), s.topic("other")
    s.create_topic(topic)
    s.create_topic(other)
    coordinator_ready(s, group)
    member_id, generation = stable_single_member(s, 7, group, record=False, topic=topic)
    s.setup("OffsetCommit", 8, {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member_id,
                                "topics": [{"name": t, "partitions": [
                                    {"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}]}
                                    for t in (topic, other)]}, conn="a")
    s.call("OffsetDelete", v, {"group_id": group, "topics": [{"name": topic, "partitions": [{"partition_index": 0}]},
                                                             {"name": other, "partitions": [{"partition_index": 0}]}]})
    s.call("OffsetFetch", 7, {"group_id": group, "topics": None, "require_stable": False}, label="OffsetFetch after")
    s.call("OffsetDelete", v, {"group_id": s.group("none"), "topics": [
        {"name": topic, "partitions": [{"partition_index": 0}]}]}, label="unknown group")
    s.call("OffsetDelete", v, {"group_id": group, "topics": [
        {"name": s.topic("missing"), "partitions": [{"partition_index": 0}]}]}, label="unknown topic")
    s.call("OffsetDelete", v, {"group_id": "", "topics": []}, label="empty group id")
