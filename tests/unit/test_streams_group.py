"""KIP-1071 streams groups without a server: the topology configured against the topics (statuses,
derived partition counts, internal topics to create), the sticky task assignor, a member's way to
its target (revoke before another takes a task), and StreamsGroupHeartbeat flows through the group
coordinator (join, internal topics, two members, fencing, leaving, offsets with member epochs,
StreamsGroupDescribe, ListGroups), and the replay of the records after a restart."""

from __future__ import annotations

import asyncio
import contextlib

from broker.config import BrokerConfig
from broker.node import Broker
from coordinator.group_coordinator import GroupCoordinator
from coordinator.streams_group import (
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    INCORRECTLY_PARTITIONED_TOPICS,
    Assignment,
    MemberState,
    StreamsGroupMember,
    Subtopology,
    TopicInfo,
    Topology,
    configure_topology,
    next_member_assignment,
    sticky_assign,
)
from kafka_wire.errors import ErrorCode
from kafka_wire.internal_records import (
    STREAMS_GROUP_TOPOLOGY,
    decode_streams_group_record,
    encode_streams_group_key,
    encode_streams_group_value,
)
from kafka_wire.messages import APIS_BY_NAME

HB = APIS_BY_NAME["StreamsGroupHeartbeat"]


# -- topology configuration ---------------------------------------------------------------------------

APP = Topology(0, (
    Subtopology("0", source_topics=("in",), repartition_sink_topics=("app-by-user-repartition",)),
    Subtopology("1", source_topics=("users",),
                repartition_source_topics=(TopicInfo("app-by-user-repartition"),),
                state_changelog_topics=(TopicInfo("app-store-changelog", configs=(("cleanup.policy", "compact"),)),),
                copartition_groups=(((0,), (), (0,)),)),
))


def sizes(**topics):
    return lambda name: topics.get(name.replace("-", "_"))


def test_missing_source_topics_are_named_and_nothing_is_configured():
    configured = configure_topology(APP, sizes(users=3), lambda: [])
    assert not configured.ready
    assert configured.statuses == [(MISSING_SOURCE_TOPICS, "Source topics in are missing.")]
    assert configured.to_create == {}


def test_internal_topics_take_derived_partition_counts_and_are_named_for_creation():
    configured = configure_topology(APP, sizes(**{"in": 4, "users": 3}), lambda: [])
    assert not configured.ready
    # The repartition topic is copartitioned with users (3), the changelog follows subtopology 1's tasks.
    assert configured.to_create == {"app-by-user-repartition": (3, 0, {}),
                                    "app-store-changelog": (3, 0, {"cleanup.policy": "compact"})}
    assert configured.statuses == [(MISSING_INTERNAL_TOPICS,
                                    "Internal topics are missing: app-by-user-repartition, app-store-changelog")]


def test_configured_once_internal_topics_exist_and_wrong_counts_are_reported():
    ok = configure_topology(APP, sizes(**{"in": 4, "users": 3, "app_by_user_repartition": 3,
                                          "app_store_changelog": 3}), lambda: [])
    assert ok.ready and ok.task_counts == {"0": 4, "1": 3} and ok.statuses == []
    wrong = configure_topology(APP, sizes(**{"in": 4, "users": 3, "app_by_user_repartition": 3,
                                             "app_store_changelog": 5}), lambda: [])
    assert not wrong.ready and wrong.statuses[0][0] == INCORRECTLY_PARTITIONED_TOPICS


def test_repartition_topic_without_copartitioning_takes_the_upstream_sources_count():
    topology = Topology(0, (Subtopology("0", source_topics=("in",), repartition_sink_topics=("r",)),
                            Subtopology("1", repartition_source_topics=(TopicInfo("r"),))))
    configured = configure_topology(topology, sizes(**{"in": 5}), lambda: [])
    assert configured.to_create == {"r": (5, 0, {})}


# -- the assignor and reconciliation ------------------------------------------------------------------

def members(*ids):
    return {m: StreamsGroupMember(m, process_id=f"p-{m}") for m in ids}


def test_active_tasks_are_balanced_and_sticky():
    group = members("a", "b")
    first = sticky_assign(group, {"0": 3, "1": 3}, 0, {})
    assert sorted(len(a.active) for a in first.values()) == [3, 3]
    assert first["a"].active.isdisjoint(first["b"].active)
    for m in group:
        group[m].assigned = first[m]
    group.update(members("c"))
    second = sticky_assign(group, {"0": 3, "1": 3}, 0, first)
    assert sorted(len(a.active) for a in second.values()) == [2, 2, 2]
    assert second["a"].active <= first["a"].active and second["b"].active <= first["b"].active


def test_standby_replicas_go_to_other_processes_of_stateful_subtopologies_only():
    group = members("a", "b")
    target = sticky_assign(group, {"0": 2, "1": 2}, 1, {}, stateful={"1"})
    for m, assignment in target.items():
        other = target["b" if m == "a" else "a"]
        assert assignment.standby == {t for t in other.active if t[0] == "1"}


def test_a_task_moves_only_after_its_owner_revoked_it():
    owner = StreamsGroupMember("a", member_epoch=2, assigned=Assignment(frozenset({("0", 0), ("0", 1)})))
    target_a = Assignment(frozenset({("0", 0)}))
    revoking = next_member_assignment(owner, 3, target_a, lambda t: False, None)
    assert revoking.state == MemberState.UNREVOKED_TASKS and revoking.member_epoch == 2
    assert revoking.assigned.active == {("0", 0)} and revoking.pending_revocation == {("0", 1)}
    newcomer = StreamsGroupMember("b", member_epoch=0)
    owned_by_a = lambda task: task in revoking.assigned.active | revoking.pending_revocation  # noqa: E731
    waiting = next_member_assignment(newcomer, 3, Assignment(frozenset({("0", 1)})), owned_by_a, frozenset())
    assert waiting.state == MemberState.UNRELEASED_TASKS and waiting.assigned.active == frozenset()
    # a reports the task gone: it moves to epoch 3; then b gets it.
    done = next_member_assignment(revoking, 3, target_a, lambda t: False, frozenset({("0", 0)}))
    assert done.state == MemberState.STABLE and done.member_epoch == 3
    got = next_member_assignment(waiting, 3, Assignment(frozenset({("0", 1)})), lambda t: False, frozenset())
    assert got.state == MemberState.STABLE and got.assigned.active == {("0", 1)}


def test_streams_group_records_round_trip():
    key = encode_streams_group_key(STREAMS_GROUP_TOPOLOGY, "g")
    value = encode_streams_group_value(STREAMS_GROUP_TOPOLOGY, {"epoch": 3, "subtopologies": [{
        "subtopology_id": "0", "source_topics": ["in"], "source_topic_regex": [], "state_changelog_topics": [],
        "repartition_sink_topics": [], "repartition_source_topics": [], "copartition_groups": []}]})
    record_type, group_id, member_id, decoded = decode_streams_group_record(key, value)
    assert (record_type, group_id, member_id, decoded.epoch) == (23, "g", None, 3)
    assert decoded.subtopologies[0].source_topics == ["in"]


# -- through the coordinator ----------------------------------------------------------------------------

BASE_CONFIG = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "3",
               "offsets.retention.check.interval.ms": "3600000", "group.streams.initial.rebalance.delay.ms": "0",
               "group.streams.assignment.interval.ms": "0"}
TOPOLOGY = {"epoch": 0, "subtopologies": [{
    "subtopology_id": "0", "source_topics": ["in"], "source_topic_regex": [],
    "state_changelog_topics": [{"name": "app-store-changelog", "partitions": 0, "replication_factor": 0,
                                "topic_configs": [{"key": "cleanup.policy", "value": "compact"}]}],
    "repartition_sink_topics": [], "repartition_source_topics": [], "copartition_groups": []}]}


def request(**fields):
    body = {"group_id": "app", "member_id": "", "member_epoch": 0, "endpoint_information_epoch": 0,
            "rebalance_timeout_ms": -1, **fields}
    return HB.request.decode(HB.request.encode_bytes(body, 0), 0)


def join(coordinator, member_id: str, **fields):
    return coordinator.streams_group_heartbeat(request(
        member_id=member_id, member_epoch=0, rebalance_timeout_ms=30000, topology=TOPOLOGY, active_tasks=[],
        standby_tasks=[], warmup_tasks=[], process_id=f"process-{member_id}", **fields),
        client_id="c", client_host="/127.0.0.1")


def beat(coordinator, member_id: str, epoch: int, active=None):
    owned = None if active is None else [{"subtopology_id": s, "partitions": sorted(p for ss, p in active if ss == s)}
                                         for s in sorted({s for s, _ in active})]
    return coordinator.streams_group_heartbeat(request(member_id=member_id, member_epoch=epoch, active_tasks=owned),
                                               client_id="c", client_host="/127.0.0.1")[0]


def tasks(response) -> set:
    return {(t["subtopology_id"], p) for t in response["active_tasks"] or [] for p in t["partitions"]}


@contextlib.asynccontextmanager
async def running(path, **config):
    broker = Broker(BrokerConfig({"log.dirs": str(path), **BASE_CONFIG, **config}))
    broker.load()
    if broker.metadata.topic("in") is None:
        broker.create_topic("in", 4, 1, {})
    coordinator = GroupCoordinator()
    broker.groups = coordinator
    await coordinator.start(broker)
    try:
        yield broker, coordinator
    finally:
        await coordinator.stop()
        broker.close()


def test_join_create_internal_topics_share_tasks_commit_and_replay(tmp_path):
    async def scenario():
        async with running(tmp_path) as (broker, coordinator):
            response, to_create = join(coordinator, "a")
            assert response["error_code"] == 0 and response["member_epoch"] == 2
            assert [s["status_code"] for s in response["status"]] == [MISSING_INTERNAL_TOPICS]
            assert to_create == {"app-store-changelog": (4, 0, {"cleanup.policy": "compact"})}
            broker.create_topic("app-store-changelog", 4, 1, {})
            a = beat(coordinator, "a", 2)
            assert a["status"] == [] and a["member_epoch"] == 3 and len(tasks(a)) == 4
            a_tasks = tasks(a)
            beat(coordinator, "a", 3, a_tasks)
            b, _ = join(coordinator, "b")
            assert b["member_epoch"] == 4 and tasks(b) == set()  # a still owns them
            a = beat(coordinator, "a", 3)
            assert a["member_epoch"] == 3 and len(tasks(a)) == 2  # revoke two first
            a_tasks = tasks(a)
            a = beat(coordinator, "a", 3, a_tasks)
            assert a["member_epoch"] == 4
            b = beat(coordinator, "b", 4)
            assert tasks(b) == {("0", p) for p in range(4)} - a_tasks
            # Offsets: the member's epoch, or the error Kafka answers.
            offsets = [("in", 0, 10, -1, None)]
            stale = coordinator.commit_transactional_offsets(group_id="app", producer_id=1, producer_epoch=0,
                                                             generation_id=3, member_id="a", group_instance_id=None,
                                                             offsets=offsets)
            assert stale == {("in", 0): ErrorCode.ILLEGAL_GENERATION}
            assert coordinator.commit_offsets(group_id="app", generation_id=4, member_id="a", group_instance_id=None,
                                              offsets=offsets, api_version=9) == {("in", 0): ErrorCode.NONE}
            assert coordinator.commit_offsets(group_id="app", generation_id=1, member_id="nobody",
                                              group_instance_id=None, offsets=offsets,
                                              api_version=9) == {("in", 0): ErrorCode.UNKNOWN_MEMBER_ID}
            assert beat(coordinator, "a", 9)["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH
            described = coordinator.streams_group_describe("app")
            assert described["group_state"] == "Stable" and len(described["members"]) == 2
            _, listed = coordinator.list_groups(types_filter=["streams"])
            assert listed == [{"group_id": "app", "protocol_type": "streams", "group_state": "Stable",
                               "group_type": "streams"}]
            assert coordinator.describe_group("app", api_version=6)["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
        # A restart: the group comes back from __consumer_offsets as it was.
        async with running(tmp_path) as (broker, coordinator):
            again = coordinator.streams_group_describe("app")
            assert again == described
            assert coordinator.fetch_offsets(group_id="app", partitions=[("in", 0)])[1][0][2] == 10
            left = coordinator.streams_group_heartbeat(request(member_id="b", member_epoch=-1), client_id="c",
                                                       client_host="/127.0.0.1")[0]
            assert left["error_code"] == 0 and left["member_epoch"] == -1
            assert beat(coordinator, "b", 4)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_heartbeat_checks_and_unknown_group(tmp_path):
    async def scenario():
        async with running(tmp_path) as (_, coordinator):
            no_topology = coordinator.streams_group_heartbeat(request(
                member_id="a", member_epoch=0, rebalance_timeout_ms=1000, active_tasks=[], standby_tasks=[],
                warmup_tasks=[], process_id="p"), client_id="c", client_host="h")[0]
            assert (no_topology["error_code"], no_topology["error_message"]) == (
                ErrorCode.INVALID_REQUEST, "Topology must be non-null when (re-)joining.")
            unknown = beat(coordinator, "a", 3)
            assert (unknown["error_code"], unknown["error_message"]) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                                          "Streams group app not found.")

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_a_new_groups_first_assignment_waits_for_the_initial_rebalance_delay(tmp_path):
    async def scenario():
        async with running(tmp_path, **{"group.streams.initial.rebalance.delay.ms": "60000"}) as (broker, coordinator):
            broker.create_topic("app-store-changelog", 4, 1, {})
            response, _ = join(coordinator, "a")
            assert response["member_epoch"] == 1 and tasks(response) == set()
            assert response["status"] == [{"status_code": 5, "status_detail":
                                           "Assignment delayed due to the configured initial rebalance delay."}]
            coordinator.groups["app"].initial_assignment_at = coordinator.clock_ms()  # the delay is over
            response = beat(coordinator, "a", 1)
            assert response["member_epoch"] == 2 and len(tasks(response)) == 4 and response["status"] == []

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_a_target_assignment_waits_for_the_assignment_interval(tmp_path):
    """Kafka 4.3 (KIP-1263): a group computes its target assignment at most once per
    streams.assignment.interval.ms (the group's config, else group.streams.assignment.interval.ms);
    meanwhile members stay on the last one, told why."""
    from broker import group_configs

    async def scenario():
        async with running(tmp_path) as (broker, coordinator):
            assert group_configs.store(broker, "app", {"streams.assignment.interval.ms": "15000"}, False)[0] == 0
            broker.create_topic("app-store-changelog", 4, 1, {})
            a, _ = join(coordinator, "a")
            assert a["member_epoch"] == 2 and len(tasks(a)) == 4 and a["status"] == []  # the first: at once
            beat(coordinator, "a", 2, tasks(a))
            b, _ = join(coordinator, "b")
            assert b["member_epoch"] == 2 and tasks(b) == set()
            assert b["status"] == [{"status_code": 5, "status_detail":
                                    "Assignment delayed due to the configured assignment interval."}]
            group = coordinator.groups["app"]
            assert (group.group_epoch, group.assignment_epoch, group.state) == (3, 2, "Assigning")
            group.assignment_timestamp -= 15000  # the interval is over
            b = beat(coordinator, "b", 2)
            assert b["member_epoch"] == 3 and b["status"] == [] and group.assignment_epoch == 3

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_the_group_metadata_record_carries_the_required_topics_hash_and_assignment_configs(tmp_path):
    """StreamsGroupMetadataValue as Kafka 4.3 writes it: the metadata hash of the topics the topology
    requires (source, repartition source and changelog topics that exist) and the assignment configs;
    a required topic changing (here: deleted and created again, same partitions) or
    streams.num.standby.replicas changing bumps the group epoch."""
    from broker import group_configs
    from coordinator.metadata_hash import group_hash, topic_hash

    def expected(broker) -> int:
        return group_hash({name: topic_hash(broker.metadata.topic(name).topic_id, name, [[] for _ in range(4)])
                           for name in ("app-store-changelog", "in")})

    async def scenario():
        async with running(tmp_path) as (broker, coordinator):
            broker.create_topic("app-store-changelog", 4, 1, {})
            a, _ = join(coordinator, "a")
            group = coordinator.groups["app"]
            assert a["member_epoch"] == 2 and group.metadata_hash == expected(broker) != 0
            assert group.last_assignment_configs == {"num.standby.replicas": "0"}
            assert beat(coordinator, "a", 2, tasks(a))["member_epoch"] == 2  # nothing changed: no bump
            broker.delete_topic("app-store-changelog")
            broker.create_topic("app-store-changelog", 4, 1, {})
            assert beat(coordinator, "a", 2, tasks(a))["member_epoch"] == 3
            assert group.metadata_hash == expected(broker)
            assert group_configs.store(broker, "app", {"streams.num.standby.replicas": "1"}, False)[0] == 0
            assert beat(coordinator, "a", 3, tasks(a))["member_epoch"] == 4
            assert group.last_assignment_configs == {"num.standby.replicas": "1"}
            hashed = group.metadata_hash
        async with running(tmp_path) as (broker, coordinator):
            group = coordinator.groups["app"]
            assert (group.group_epoch, group.metadata_hash) == (4, hashed)
            assert group.last_assignment_configs == {"num.standby.replicas": "1"}

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_the_assignor_gives_no_warmup_tasks_as_kafka_4_3s_sticky_assignor():
    """Kafka 4.3's broker-side StickyTaskAssignor assigns active and standby tasks only (there is no
    group.streams.num.warmup.replicas; warm-up tasks stay empty in every assignment it makes)."""
    members = {m: StreamsGroupMember(m, process_id=f"p-{m}") for m in ("a", "b", "c")}
    assigned = sticky_assign(members, {"0": 4, "1": 2}, 2, {}, {"0", "1"})
    assert all(a.warmup == frozenset() for a in assigned.values())
    assert sum(len(a.standby) for a in assigned.values()) == 12
