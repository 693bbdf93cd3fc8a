"""KIP-1071 streams groups: StreamsGroupHeartbeat (a member joining with its topology, the internal
topics the broker creates, task assignment, revocation between two members, fencing, leaving) and
StreamsGroupDescribe, plus the request checks and errors Kafka documents for them.

Each member heartbeats on its own connection; every step waits for the previous answer. Internal
topics are created by the broker after the heartbeat that found them missing (Kafka creates them
asynchronously): the scenarios wait, unrecorded, until they exist before the next heartbeat.
"""

from __future__ import annotations

from ..scenario import ALL, Session, scenario
from .groups_classic import coordinator_ready
from .offsets import commit_body

PROFILE = "streams-groups"
REBALANCE_MS = 30000


def topology(app: str, source: str, epoch: int = 0, *, stateful: bool = True, sources=None) -> dict:
    """One subtopology "0" reading `source` (or `sources`), with a changelog topic when stateful."""
    changelogs = [{"name": f"{app}-store-changelog", "partitions": 0, "replication_factor": 1,
                   "topic_configs": [{"key": "cleanup.policy", "value": "compact"}]}] if stateful else []
    return {"epoch": epoch, "subtopologies": [{
        "subtopology_id": "0", "source_topics": list(sources or [source]), "source_topic_regex": [],
        "state_changelog_topics": changelogs, "repartition_sink_topics": [], "repartition_source_topics": [],
        "copartition_groups": []}]}


def heartbeat(s: Session, group: str, member_id: str, epoch: int, *, conn: str, label: str, topo=None,
              active=None, standby=None, warmup=None, process_id=None, rebalance_ms: int = -1, record: bool = True,
              instance_id=None, shutdown: bool = False):
    body = {"group_id": group, "member_id": member_id, "member_epoch": epoch, "endpoint_information_epoch": 0,
            "instance_id": instance_id, "rack_id": None, "rebalance_timeout_ms": rebalance_ms, "topology": topo,
            "active_tasks": active, "standby_tasks": standby, "warmup_tasks": warmup, "process_id": process_id,
            "user_endpoint": None, "client_tags": None, "task_offsets": None, "task_end_offsets": None,
            "shutdown_application": shutdown}
    return s.call("StreamsGroupHeartbeat", 0, body, conn=conn, label=label, record=record)


def join(s: Session, group: str, name: str, topo: dict, *, label: str | None = None, record: bool = True):
    return heartbeat(s, group, f"conformance-member-{name}", 0, conn=name, label=label or f"{name}: join",
                     topo=topo, active=[], standby=[], warmup=[], process_id=f"process-{name}",
                     rebalance_ms=REBALANCE_MS, record=record)


def tasks(answer) -> list[dict]:
    """The active tasks an answer assigned, as the member reports them owned next."""
    if answer is None or answer.active_tasks is None:
        return []
    return [{"subtopology_id": t.subtopology_id, "partitions": list(t.partitions)} for t in answer.active_tasks]


def describe(s: Session, groups, label: str):
    return s.call("StreamsGroupDescribe", 0, {"group_ids": list(groups), "include_authorized_operations": True},
                  label=label)


def topic_exists(s: Session, name: str) -> bool:
    answer = s.call("Metadata", 9, {"topics": [{"name": name}], "allow_auto_topic_creation": False,
                                    "include_cluster_authorized_operations": False,
                                    "include_topic_authorized_operations": False}, record=False)
    return answer is not None and any(t.name == name and t.error_code == 0 and t.partitions for t in answer.topics)


def ready(s: Session, topic: str, partitions: int, group: str) -> None:
    s.create_topic(topic, partitions=partitions)
    coordinator_ready(s, group)


def joined_with_tasks(s: Session, group: str, name: str, topo: dict, app: str):
    """A member joins (recorded: MISSING_INTERNAL_TOPICS), the broker creates the changelog topic,
    and the member heartbeats (unrecorded) until its coordinator sees the topic: Kafka's coordinator
    learns of it from its metadata image a moment after Metadata shows it. The heartbeat that got the
    tasks is recorded."""
    first = join(s, group, name, topo)
    s.wait_until(lambda: topic_exists(s, f"{app}-store-changelog"), timeout=30, what="the changelog topic")
    got = []

    def assigned() -> bool:
        answer = heartbeat(s, group, first.member_id, first.member_epoch, conn=name, label="poll", record=False)
        if answer is not None and answer.error_code == 0 and not any(st.status_code == 3 for st in answer.status or ()):
            got.append(answer)
            return True
        return False

    s.wait_until(assigned, timeout=30, what="the member's tasks")
    s.record(f"{name}: the heartbeat that got the tasks", got[0])
    return got[0]


@scenario("StreamsGroupHeartbeat", versions=ALL, profile=PROFILE)
def streams_heartbeat_join_and_leave(s: Session, v: int):
    """One member joins with a stateful topology: the broker names the missing changelog topic and
    creates it; the member then gets every task, reports them owned, and leaves with epoch -1."""
    group, topic = s.group(), s.topic()
    ready(s, topic, 3, group)
    a = joined_with_tasks(s, group, "a", topology(group, topic), group)
    heartbeat(s, group, a.member_id, a.member_epoch, conn="a", label="a: owns its tasks", active=tasks(a),
              standby=[], warmup=[])
    describe(s, [group], "StreamsGroupDescribe with one member")
    heartbeat(s, group, a.member_id, -1, conn="a", label="a: leaves (epoch -1)")
    describe(s, [group], "StreamsGroupDescribe after the leave")


@scenario("StreamsGroupHeartbeat", versions=ALL, profile=PROFILE)
def streams_heartbeat_second_member_revocation(s: Session, v: int):
    """A owns all 4 tasks of a stateless topology; B joins: A is asked to revoke half, B gets them
    once A reports them gone."""
    group, topic = s.group(), s.topic()
    ready(s, topic, 4, group)
    topo = topology(group, topic, stateful=False)
    a = join(s, group, "a", topo)
    heartbeat(s, group, a.member_id, a.member_epoch, conn="a", label="a: owns all", active=tasks(a),
              standby=[], warmup=[])
    b = join(s, group, "b", topo)
    a2 = heartbeat(s, group, a.member_id, a.member_epoch, conn="a", label="a: heartbeat after b joined")
    heartbeat(s, group, b.member_id, b.member_epoch, conn="b", label="b: waits for a's tasks")
    kept = tasks(a2) if a2 is not None and a2.active_tasks is not None else tasks(a)
    a3 = heartbeat(s, group, a.member_id, a.member_epoch, conn="a", label="a: revoked", active=kept,
                   standby=[], warmup=[])
    b2 = heartbeat(s, group, b.member_id, b.member_epoch, conn="b", label="b: gets the released tasks")
    describe(s, [group], "StreamsGroupDescribe with two members")
    if a3 is not None and b2 is not None:
        heartbeat(s, group, b.member_id, b2.member_epoch, conn="b", label="b: leaves", record=False)
        heartbeat(s, group, a.member_id, a3.member_epoch, conn="a", label="a: leaves", record=False)


@scenario("StreamsGroupHeartbeat", versions=ALL, profile=PROFILE)
def streams_heartbeat_errors(s: Session, v: int):
    """INVALID_REQUEST for each check of a joining heartbeat; GROUP_ID_NOT_FOUND for an unknown
    group; UNKNOWN_MEMBER_ID and FENCED_MEMBER_EPOCH in a known one; a group of another type."""
    group, topic = s.group(), s.topic()
    ready(s, topic, 1, group)
    topo = topology(group, topic, stateful=False)
    m = "conformance-member-x"
    heartbeat(s, "", m, 0, conn="x", label="empty group id", topo=topo, active=[], standby=[], warmup=[],
              process_id="p", rebalance_ms=REBALANCE_MS)
    heartbeat(s, group, "", 0, conn="x", label="empty member id", topo=topo, active=[], standby=[], warmup=[],
              process_id="p", rebalance_ms=REBALANCE_MS)
    heartbeat(s, group, m, 0, conn="x", label="no rebalance timeout", topo=topo, active=[], standby=[], warmup=[],
              process_id="p")
    heartbeat(s, group, m, 0, conn="x", label="no topology", active=[], standby=[], warmup=[], process_id="p",
              rebalance_ms=REBALANCE_MS)
    heartbeat(s, group, m, 0, conn="x", label="owned tasks while joining", topo=topo,
              active=[{"subtopology_id": "0", "partitions": [0]}], standby=[], warmup=[], process_id="p",
              rebalance_ms=REBALANCE_MS)
    heartbeat(s, group, m, -3, conn="x", label="epoch -3")
    heartbeat(s, group, m, -2, conn="x", label="static leave without instance id")
    heartbeat(s, group + "-unknown", m, 5, conn="x", label="unknown group, epoch 5")
    a = join(s, group, "a", topo)
    heartbeat(s, group, "conformance-member-nobody", 1, conn="x", label="unknown member")
    heartbeat(s, group, a.member_id, a.member_epoch + 5, conn="a", label="epoch ahead of the coordinator's")
    # A member fenced on its side joins again with epoch 0 under the same member id.
    join(s, group, "a", topo, label="a: joins again with epoch 0")
    heartbeat(s, group, a.member_id, -1, conn="a", label="a: leaves", record=False)
    classic = s.group("classic")
    coordinator_ready(s, classic)
    s.setup("OffsetCommit", 8, commit_body(classic, {topic: [(0, 0, None)]}))
    describe(s, [classic, group + "-unknown"], "StreamsGroupDescribe of a classic group and an unknown one")


@scenario("StreamsGroupHeartbeat", versions=ALL, profile=PROFILE)
def streams_heartbeat_missing_source_topic(s: Session, v: int):
    """A topology reading a topic that does not exist: MISSING_SOURCE_TOPICS, no tasks."""
    group, topic = s.group(), s.topic()
    ready(s, topic, 1, group)
    a = join(s, group, "a", topology(group, topic, stateful=False, sources=[topic, topic + "-absent"]))
    if a is not None:
        heartbeat(s, group, a.member_id, a.member_epoch, conn="a", label="a: heartbeat, still missing")
    describe(s, [group], "StreamsGroupDescribe of a group whose source topic is missing")


@scenario("StreamsGroupHeartbeat", versions=ALL, profile=PROFILE)
def streams_group_meets_other_protocols(s: Session, v: int):
    """A streams group with a member, met by the other group APIs: a classic JoinGroup, a consumer
    group heartbeat, DescribeGroups, ConsumerGroupDescribe, ListGroups by type, OffsetCommit and
    OffsetFetch with the member's epoch (and a stale one), DeleteGroups of the non-empty group; then
    the member leaves and the group is deleted."""
    group, topic = s.group(), s.topic()
    ready(s, topic, 2, group)
    a = join(s, group, "a", topology(group, topic, stateful=False))
    a = heartbeat(s, group, a.member_id, a.member_epoch, conn="a", label="a: owns its tasks", active=tasks(a),
                  standby=[], warmup=[])
    epoch = a.member_epoch
    s.call("JoinGroup", 9, {"group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000,
                            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
                            "protocols": [{"name": "range", "metadata": b""}], "reason": None},
           conn="classic", label="JoinGroup v9 on the streams group")
    s.call("ConsumerGroupHeartbeat", 1, {
        "group_id": group, "member_id": "conformance-consumer", "member_epoch": 0, "instance_id": None,
        "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": [topic],
        "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []},
        conn="consumer", label="ConsumerGroupHeartbeat v1 on the streams group")
    s.call("DescribeGroups", 6, {"groups": [group], "include_authorized_operations": False},
           label="DescribeGroups v6 of the streams group")
    s.call("ConsumerGroupDescribe", 1, {"group_ids": [group], "include_authorized_operations": False},
           label="ConsumerGroupDescribe v1 of the streams group")
    s.call("ListGroups", 5, {"states_filter": [], "types_filter": ["streams"]}, label="ListGroups v5, type streams")
    s.call("OffsetCommit", 9, commit_body(group, {topic: [(0, 5, None)]}, generation=epoch,
                                          member_id=a.member_id), label="OffsetCommit v9 with the member epoch")
    s.call("OffsetCommit", 9, commit_body(group, {topic: [(0, 6, None)]}, generation=epoch - 1,
                                          member_id=a.member_id), label="OffsetCommit v9 with a stale epoch")
    s.call("OffsetFetch", 9, {"groups": [{"group_id": group, "member_id": a.member_id, "member_epoch": epoch,
                                          "topics": None}], "require_stable": True},
           label="OffsetFetch v9 with the member epoch")
    s.call("OffsetDelete", 0, {"group_id": group, "topics": [{"name": topic, "partitions": [{"partition_index": 0}]}]},
           label="OffsetDelete v0 of the topic the group reads")
    s.call("DeleteGroups", 2, {"groups_names": [group]}, label="DeleteGroups v2 of the non-empty group")
    heartbeat(s, group, a.member_id, -1, conn="a", label="a: leaves")
    s.call("ConsumerGroupHeartbeat", 1, {
        "group_id": group, "member_id": "conformance-consumer", "member_epoch": 0, "instance_id": None,
        "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": [topic],
        "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []},
        conn="consumer", label="ConsumerGroupHeartbeat v1 on the empty streams group")
    s.call("JoinGroup", 9, {"group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000,
                            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
                            "protocols": [{"name": "range", "metadata": b""}], "reason": None},
           conn="classic", label="JoinGroup v9 on the empty streams group")
    s.call("DeleteGroups", 2, {"groups_names": [group]}, label="DeleteGroups v2 once empty")
    describe(s, [group], "StreamsGroupDescribe after the delete")


@scenario("StreamsGroupHeartbeat", versions=ALL, covers=["GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED"],
          profile="secure")
def streams_group_authorization(s: Session, v: int):
    """As alice: without READ on the group (GROUP_AUTHORIZATION_FAILED, and for StreamsGroupDescribe
    without DESCRIBE); with it but without DESCRIBE on the topology's topics
    (TOPIC_AUTHORIZATION_FAILED); with those but without CREATE for the internal topic (the status
    says so); then as admin."""
    from kafka_wire.acls import AclOperation as Op
    from kafka_wire.acls import ResourceType as Res

    from .security import _acl, _as, grant

    group, topic = s.group(), s.topic()
    ready(s, topic, 1, group)
    topo = topology(group, topic)
    alice = _as(s, "alice")

    def alice_join(label: str):
        return heartbeat(s, group, "conformance-member-alice", 0, conn=alice, label=label, topo=topo, active=[],
                         standby=[], warmup=[], process_id="process-alice", rebalance_ms=REBALANCE_MS)

    alice_join("alice, no ACLs")
    s.call("StreamsGroupDescribe", 0, {"group_ids": [group], "include_authorized_operations": True}, conn=alice,
           label="alice describes, no ACLs")
    grant(s, _acl(Res.GROUP, group, Op.READ))
    alice_join("alice with READ on the group")
    grant(s, _acl(Res.TOPIC, topic, Op.DESCRIBE), _acl(Res.TOPIC, f"{group}-store-changelog", Op.DESCRIBE))
    answer = alice_join("alice with DESCRIBE on the topics, no CREATE")
    if answer is not None and answer.error_code == 0:
        heartbeat(s, group, answer.member_id, -1, conn=alice, label="alice leaves")
    s.call("StreamsGroupDescribe", 0, {"group_ids": [group], "include_authorized_operations": True},
           label="admin describes")


@scenario("StreamsGroupHeartbeat", versions=ALL, profile=PROFILE)
def streams_heartbeat_shutdown_application(s: Session, v: int):
    """A member asks for the whole application to shut down (ShutdownApplication): it and a member
    joining afterwards hear SHUTDOWN_APPLICATION; once both left, a new member does not."""
    group, topic = s.group(), s.topic()
    ready(s, topic, 2, group)
    topo = topology(group, topic, stateful=False)
    a = join(s, group, "a", topo)
    a = heartbeat(s, group, a.member_id, a.member_epoch, conn="a", label="a: asks for a shutdown", shutdown=True)
    b = join(s, group, "b", topo)
    heartbeat(s, group, a.member_id, a.member_epoch, conn="a", label="a: heartbeat after the request")
    heartbeat(s, group, a.member_id, -1, conn="a", label="a: leaves")
    heartbeat(s, group, b.member_id, -1, conn="b", label="b: leaves")
    join(s, group, "c", topo, label="c: joins the empty group")


@scenario("StreamsGroupHeartbeat", versions=ALL, profile=PROFILE)
def streams_heartbeat_standby_replicas(s: Session, v: int):
    """streams.num.standby.replicas=1 set on the group (IncrementalAlterConfigs): two members of
    different processes each get an active task and the other's as a standby one."""
    from .group_configs import GROUP, _settled

    group, topic = s.group(), s.topic()
    ready(s, topic, 2, group)
    s.setup("IncrementalAlterConfigs", 1, {"resources": [{"resource_type": GROUP, "resource_name": group, "configs": [
        {"name": "streams.num.standby.replicas", "config_operation": 0, "value": "1"}]}], "validate_only": False})
    _settled(s, group, "streams.num.standby.replicas", "1")
    a = joined_with_tasks(s, group, "a", topology(group, topic), group)
    a = heartbeat(s, group, a.member_id, a.member_epoch, conn="a", label="a: owns both", active=tasks(a),
                  standby=[], warmup=[])
    b = join(s, group, "b", topology(group, topic))
    a2 = heartbeat(s, group, a.member_id, a.member_epoch, conn="a", label="a: heartbeat after b joined")
    kept = tasks(a2) if a2 is not None and a2.active_tasks is not None else tasks(a)
    heartbeat(s, group, a.member_id, a.member_epoch, conn="a", label="a: revoked", active=kept, standby=[],
              warmup=[])
    heartbeat(s, group, b.member_id, b.member_epoch, conn="b", label="b: its active and standby tasks")
    describe(s, [group], "StreamsGroupDescribe with standby tasks")


@scenario("StreamsGroupHeartbeat", versions=ALL, profile=PROFILE)
def streams_heartbeat_static_member(s: Session, v: int):
    """Kafka 4.3.0's streams protocol has no static membership: a heartbeat naming an instance id
    (joining, leaving for a while with epoch -2, or an empty one) is INVALID_REQUEST."""
    group, topic = s.group(), s.topic()
    ready(s, topic, 2, group)
    topo = topology(group, topic, stateful=False)
    for label, instance_id, epoch in (("joins with instance-1", "instance-1", 0), ("an empty instance id", "", 0),
                                      ("leaves for a while (epoch -2)", "instance-1", -2)):
        heartbeat(s, group, "conformance-member-a", epoch, conn="a", label=label, topo=topo if epoch == 0 else None,
                  active=[] if epoch == 0 else None, standby=[] if epoch == 0 else None,
                  warmup=[] if epoch == 0 else None, process_id="process-static", rebalance_ms=REBALANCE_MS,
                  instance_id=instance_id)
    describe(s, [group], "StreamsGroupDescribe: no group")


@scenario("StreamsGroupHeartbeat", versions=ALL, profile=PROFILE)
def streams_heartbeat_assignment_interval(s: Session, v: int):
    """streams.assignment.interval.ms=15000 set on the group (Kafka 4.3, KIP-1263): the first target
    assignment comes at once, the next waits out the interval; meanwhile B's join and A's heartbeat
    hear ASSIGNMENT_DELAYED ('...the configured assignment interval.') and stay at the last
    assignment epoch, and the group is Assigning."""
    from .group_configs import GROUP, _settled

    group, topic = s.group(), s.topic()
    ready(s, topic, 2, group)
    s.setup("IncrementalAlterConfigs", 1, {"resources": [{"resource_type": GROUP, "resource_name": group, "configs": [
        {"name": "streams.assignment.interval.ms", "config_operation": 0, "value": "15000"}]}], "validate_only": False})
    _settled(s, group, "streams.assignment.interval.ms", "15000")
    topo = topology(group, topic, stateful=False)
    a = join(s, group, "a", topo)
    if a is None or a.error_code != 0:
        return
    heartbeat(s, group, a.member_id, a.member_epoch, conn="a", label="a: owns its tasks", active=tasks(a),
              standby=[], warmup=[])
    join(s, group, "b", topo, label="b: joins within the interval")
    heartbeat(s, group, a.member_id, a.member_epoch, conn="a", label="a: heartbeat within the interval",
              active=tasks(a), standby=[], warmup=[])
    describe(s, [group], "StreamsGroupDescribe while the assignment waits")
