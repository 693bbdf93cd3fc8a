"""KIP-848 consumer groups without a server: ConsumerGroupHeartbeat flows through the coordinator
(join, reconcile, revoke before reassigning, leave, fencing errors, session expiry, new partitions),
offsets with member epochs, ListGroups/ConsumerGroupDescribe answers, and replay of the records."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from broker.config import BrokerConfig
from broker.node import Broker
from coordinator.consumer_group import ConsumerGroup, MemberState
from coordinator.group_coordinator import GroupCoordinator
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.internal_records import CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, decode_consumer_group_record

BASE_CONFIG = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
    "offsets.retention.check.interval.ms": "3600000",
    # Every change computes the target assignment at once (the interval's own tests set it back).
    "group.consumer.assignment.interval.ms": "0",
}

HB = APIS_BY_NAME["ConsumerGroupHeartbeat"]


@contextlib.asynccontextmanager
async def running(path, topics=(("t", 6),), **config):
    props = {"log.dirs": str(path), **BASE_CONFIG, **config}
    broker = Broker(BrokerConfig(props))
    broker.load()
    for name, partitions in topics:
        if broker.metadata.topic(name) is None:
            broker.create_topic(name, partitions, 1, {})
    coordinator = GroupCoordinator()
    broker.groups = coordinator
    await coordinator.start(broker)
    try:
        yield coordinator
    finally:
        await coordinator.stop()
        broker.close()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


class Member:
    """A consumer as the Java client behaves: heartbeats with its epoch, owns what it was given
    (after revoking what it lost) and reports it."""

    def __init__(self, coordinator: GroupCoordinator, member_id: str, group: str = "g", topics=("t",),
                 instance_id: str | None = None, assignor: str | None = None) -> None:
        self.coordinator = coordinator
        self.member_id = member_id
        self.group = group
        self.topics = list(topics)
        self.instance_id = instance_id
        self.assignor = assignor
        self.epoch = 0
        self.owned: set[tuple] = set()
        self.last = None

    def heartbeat(self, *, epoch: int | None = None, full: bool = False, **overrides) -> dict:
        joining = self.epoch == 0 if epoch is None else epoch == 0
        owned = [HB.request.cls.TopicPartitions(topic_id=t, partitions=sorted(p for tt, p in self.owned if tt == t))
                 for t in {t for t, _ in self.owned}]
        args = dict(
            api_version=0, group_id=self.group, member_id=self.member_id,
            member_epoch=self.epoch if epoch is None else epoch, instance_id=self.instance_id, rack_id=None,
            rebalance_timeout_ms=300000 if (joining or full) else -1,
            subscribed_topic_names=self.topics if (joining or full) else None, subscribed_topic_regex=None,
            server_assignor=self.assignor, owned_partitions=[] if joining else owned,
            client_id="client", client_host="/127.0.0.1")
        args.update(overrides)
        response = self.coordinator.consumer_group_heartbeat(**args)
        self.last = response
        if response["error_code"] == 0:
            self.member_id = response["member_id"] or self.member_id
            self.epoch = response["member_epoch"]
            if response["assignment"] is not None:
                # The client revokes what is gone and takes what is new at once.
                self.owned = {(tp["topic_id"], p) for tp in response["assignment"]["topic_partitions"]
                              for p in tp["partitions"]}
        return response


def owners(members) -> dict:
    seen: dict = {}
    for m in members:
        for tp in m.owned:
            assert tp not in seen, f"{tp} owned by {seen[tp]} and {m.member_id}"
            seen[tp] = m.member_id
    return seen


def settle(members, rounds: int = 10) -> None:
    for _ in range(rounds):
        for m in members:
            m.heartbeat()
            owners(members)


def records_of(coordinator, group_id="g"):
    partition = coordinator.partition_for(group_id)
    out = []
    for header, records in coordinator.offsets_topic.read_batches(partition):
        for record in records:
            decoded = decode_consumer_group_record(record.key, record.value)
            if decoded is not None:
                out.append(decoded)
    return out


def test_first_member_gets_every_partition_and_the_group_epoch(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a = Member(c, "a")
            response = a.heartbeat()
            assert response["error_code"] == 0
            # Kafka 4.3 starts a new group at epoch 1 (ModernGroup; its target assignment too): the join bumps it to 2.
            assert response["member_epoch"] == 2
            assert response["heartbeat_interval_ms"] == 5000
            assert len(a.owned) == 6
            group = c.groups["g"]
            assert isinstance(group, ConsumerGroup)
            assert group.state == "Stable"
            types = [r[0] for r in records_of(c)]
            # Kafka 4.3's records for it (dumped from its log): member metadata, group epoch with the
            # metadata hash (no ConsumerGroupPartitionMetadata, KIP-1101), target assignment, its
            # metadata, current assignment.
            assert types[:2] == [5, 3] and 4 not in types and 6 in types and 7 in types and types[-1] == 8
            assert a.heartbeat(epoch=-1)["member_epoch"] == -1
            described = c.consumer_group_describe("g")
            assert (described["group_epoch"], described["assignment_epoch"]) == (3, 2)

    run(scenario())


def test_second_member_waits_for_revocation_and_nobody_shares_a_partition(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a, b = Member(c, "a"), Member(c, "b")
            a.heartbeat()
            b.heartbeat()
            # b has the new epoch but nothing yet: every partition is still a's.
            assert b.epoch == 3 and b.owned == set()
            assert c.groups["g"].members["b"].state == MemberState.UNRELEASED_PARTITIONS
            a.heartbeat()  # told to revoke three partitions, keeping epoch 2
            assert a.epoch == 2 and len(a.owned) == 3
            assert c.groups["g"].state == "Reconciling"
            b.heartbeat()  # a has not confirmed yet: still nothing for b
            assert b.owned == set()
            a.heartbeat()  # a confirms: epoch 3
            assert a.epoch == 3
            b.heartbeat()
            assert len(b.owned) == 3
            assert set(owners([a, b])) == {(tid, p) for tid in [c.broker.metadata.topic("t").topic_id]
                                           for p in range(6)}
            assert c.groups["g"].state == "Stable"

    run(scenario())


def target_metadata_records(coordinator, group_id="g") -> list:
    """The ConsumerGroupTargetAssignmentMetadata values written: one per computed target assignment."""
    return [value for record_type, _, _, value in records_of(coordinator, group_id)
            if record_type == CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA]


def test_members_joining_within_the_assignment_interval_wait_for_one_computation(tmp_path):
    """Kafka 4.3 (KIP-1263): group.consumer.assignment.interval.ms. The first member of a new group
    is assigned at once; members joining within the interval get the last target assignment's epoch
    and nothing, the group Assigning (group epoch ahead of the assignment epoch); the first heartbeat
    after the interval computes one target assignment for all of them."""
    async def scenario():
        async with running(tmp_path, **{"group.consumer.assignment.interval.ms": "15000"}) as c:
            a, b, d = Member(c, "a"), Member(c, "b"), Member(c, "d")
            a.heartbeat()
            assert a.epoch == 2 and len(a.owned) == 6
            b.heartbeat()
            d.heartbeat()
            assert (b.epoch, b.owned, d.epoch, d.owned) == (2, set(), 2, set())
            assert b.last["assignment"] == {"topic_partitions": []}
            a.heartbeat()
            assert a.epoch == 2 and len(a.owned) == 6 and a.last["assignment"] is None
            group = c.groups["g"]
            assert (group.group_epoch, group.assignment_epoch, group.state) == (4, 2, "Assigning")
            described = c.consumer_group_describe("g")
            assert (described["group_state"], described["group_epoch"], described["assignment_epoch"]) == \
                ("Assigning", 4, 2)
            assert {m["member_id"]: m["target_assignment"]["topic_partitions"] != []
                    for m in described["members"]} == {"a": True, "b": False, "d": False}
            assert len(target_metadata_records(c)) == 1
            group.assignment_timestamp -= 15000  # the interval is over
            b.heartbeat()
            assert group.assignment_epoch == 4 and b.epoch == 4
            computed = target_metadata_records(c)
            assert [v.assignment_epoch for v in computed] == [2, 4]
            assert computed[1].assignment_timestamp == group.assignment_timestamp > computed[0].assignment_timestamp
            settle([a, b, d])
            assert sorted(len(m.owned) for m in (a, b, d)) == [2, 2, 2] and len(owners([a, b, d])) == 6
            assert len(target_metadata_records(c)) == 2  # one computation for both joins
            assert c.groups["g"].state == "Stable"

    run(scenario())


def test_the_groups_assignment_interval_overrides_the_brokers(tmp_path):
    """The group config consumer.assignment.interval.ms (IncrementalAlterConfigs on the group) is
    what the group uses; the broker's (0 here) is the default of the others."""
    from broker import group_configs

    async def scenario():
        async with running(tmp_path) as c:
            assert group_configs.store(c.broker, "g", {"consumer.assignment.interval.ms": "15000"}, False)[0] == 0
            a, b = Member(c, "a"), Member(c, "b")
            a.heartbeat()
            b.heartbeat()
            assert (a.epoch, b.epoch, c.groups["g"].group_epoch) == (2, 2, 3)
            other_a, other_b = Member(c, "a", group="h"), Member(c, "b", group="h")
            other_a.heartbeat()
            other_b.heartbeat()
            assert (other_b.epoch, c.groups["h"].assignment_epoch) == (3, 3)
            # Back to the broker's: the next heartbeat computes it.
            assert group_configs.store(c.broker, "g", {}, False)[0] == 0
            b.heartbeat()
            assert b.epoch == 3 and c.groups["g"].assignment_epoch == 3

    run(scenario())


def test_a_dynamic_change_of_the_brokers_assignment_interval_applies_at_the_next_heartbeat(tmp_path):
    """group.consumer.assignment.interval.ms is a dynamic broker config (Kafka 4.3): groups without
    their own interval use the new value from the next heartbeat on."""
    async def scenario():
        async with running(tmp_path) as c:
            c.broker.config.set_dynamic({"group.consumer.assignment.interval.ms": "15000"}, {})
            a, b = Member(c, "a"), Member(c, "b")
            a.heartbeat()
            b.heartbeat()
            assert (b.epoch, c.groups["g"].state) == (2, "Assigning")
            c.broker.config.set_dynamic({}, {})
            b.heartbeat()
            assert (b.epoch, c.groups["g"].assignment_epoch) == (3, 3)

    run(scenario())


def test_a_restart_keeps_when_the_target_assignment_was_computed(tmp_path):
    """The AssignmentTimestamp of ConsumerGroupTargetAssignmentMetadata is replayed: a coordinator
    loading the group still waits for the interval since the last computation."""
    async def scenario():
        config = {"group.consumer.assignment.interval.ms": "15000"}
        async with running(tmp_path, **config) as c:
            a = Member(c, "a")
            a.heartbeat()
            computed_at = c.groups["g"].assignment_timestamp
            assert computed_at > 0
        async with running(tmp_path, **config) as c:
            assert c.groups["g"].assignment_timestamp == computed_at
            a.coordinator = c
            b = Member(c, "b")
            b.heartbeat()
            assert (b.epoch, b.owned, c.groups["g"].state) == (2, set(), "Assigning")

    run(scenario())


def test_a_cluster_coordinator_loading_a_group_serves_it_with_the_groups_configs(tmp_path):
    """A cluster's group coordinator (broker/cluster/group_failover.py) is started without replaying
    anything and loads a group when its broker becomes the leader of the group's __consumer_offsets
    partition (the coordinator moved): it answers with the group's own configs, not the broker's. Here
    the group's heartbeat interval (1 s; the broker's 5 s) and its assignment interval (15 s, counted
    from the stored computation; the broker's 0 would compute at once)."""
    from broker import group_configs
    from broker.cluster.group_failover import ReplicatedGroupCoordinator

    async def scenario():
        broker = Broker(BrokerConfig({"log.dirs": str(tmp_path), **BASE_CONFIG,
                                      "group.consumer.min.heartbeat.interval.ms": "1000"}))
        broker.load()
        try:
            broker.create_topic("t", 6, 1, {})
            assert group_configs.store(broker, "g", {"consumer.assignment.interval.ms": "15000",
                                                     "consumer.heartbeat.interval.ms": "1000"}, False)[0] == 0
            before = GroupCoordinator()
            broker.groups = before
            await before.start(broker)
            a, b = Member(before, "a"), Member(before, "b")
            a.heartbeat()
            assert b.heartbeat()["heartbeat_interval_ms"] == 1000
            assert (a.epoch, b.epoch, len(a.owned), before.groups["g"].state) == (2, 2, 6, "Assigning")
            computed_at = before.groups["g"].assignment_timestamp
            await before.stop()

            moved = ReplicatedGroupCoordinator()
            broker.groups = moved
            await moved.start(broker)
            moved.load_partition(moved.partition_for("g"))
            assert moved.groups["g"].assignment_timestamp == computed_at
            a.coordinator = b.coordinator = moved
            for member in (a, b):
                response = member.heartbeat()
                assert (response["error_code"], response["heartbeat_interval_ms"]) == (0, 1000)
            group = moved.groups["g"]
            assert (group.state, group.group_epoch, group.assignment_epoch) == ("Assigning", 3, 2)
            assert (a.epoch, b.epoch, len(a.owned), b.owned) == (2, 2, 6, set())
            await moved.stop()
        finally:
            broker.close()

    run(scenario())


def test_three_members_join_and_leave_one_at_a_time(tmp_path):
    async def scenario():
        async with running(tmp_path, topics=(("t", 7),)) as c:
            members = []
            for name in ("a", "b", "c"):
                members.append(Member(c, name))
                settle(members)
                counts = sorted(len(m.owned) for m in members)
                assert counts[-1] - counts[0] <= 1 and sum(counts) == 7
            kept_before = {m.member_id: set(m.owned) for m in members}
            leaving = members.pop(0)
            response = leaving.heartbeat(epoch=-1)
            assert response["member_epoch"] == -1
            settle(members)
            assert sorted(len(m.owned) for m in members) == [3, 4]
            for m in members:  # sticky: the others kept what they had
                assert kept_before[m.member_id] <= m.owned
            members.pop(0).heartbeat(epoch=-1)
            settle(members)
            assert len(members[0].owned) == 7
            members[0].heartbeat(epoch=-1)
            assert c.groups["g"].state == "Empty"

    run(scenario())


def test_fencing_and_validation_errors(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a = Member(c, "a")
            a.heartbeat()
            assert a.heartbeat(epoch=5)["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH
            assert Member(c, "ghost").heartbeat(epoch=3)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
            assert Member(c, "x", group="nope").heartbeat(epoch=-1)["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
            assert Member(c, "x", group="nope").heartbeat(epoch=4)["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
            bad = Member(c, "b").heartbeat(rebalance_timeout_ms=-1)
            assert bad["error_code"] == ErrorCode.INVALID_REQUEST
            assert "RebalanceTimeoutMs" in bad["error_message"]
            assert Member(c, "b", assignor="sticky").heartbeat()["error_code"] == ErrorCode.UNSUPPORTED_ASSIGNOR
            assert Member(c, "", group="").heartbeat()["error_code"] == ErrorCode.INVALID_REQUEST
            assert Member(c, "b").heartbeat(epoch=-3)["error_code"] == ErrorCode.INVALID_REQUEST

    run(scenario())


def test_lost_response_with_previous_epoch_is_accepted(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a = Member(c, "a")
            a.heartbeat()
            b = Member(c, "b")
            b.heartbeat()
            a.heartbeat()
            a.heartbeat()  # epoch 3 now, but pretend the answer was lost
            assert a.epoch == 3
            assert a.heartbeat(epoch=2)["error_code"] == 0

    run(scenario())


def test_group_max_size_and_classic_group_conflict(tmp_path):
    async def scenario():
        async with running(tmp_path, **{"group.consumer.max.size": "1"}) as c:
            Member(c, "a").heartbeat()
            assert Member(c, "b").heartbeat()["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED
            # A classic member may join a consumer group (online migration), within its size limit...
            response = await c.join_group(group_id="g", member_id="", group_instance_id=None,
                                          protocol_type="consumer", protocols=[("range", b"")],
                                          session_timeout_ms=10000, rebalance_timeout_ms=10000, client_id="c",
                                          client_host="h", require_known_member_id=True)
            assert response["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED
            # ... and only with the consumer protocol type.
            Member(c, "a", group="g2").heartbeat()
            response = await c.join_group(group_id="g2", member_id="a", group_instance_id=None,
                                          protocol_type="connect", protocols=[("range", b"")],
                                          session_timeout_ms=10000, rebalance_timeout_ms=10000, client_id="c",
                                          client_host="h", require_known_member_id=True)
            assert response["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL

    run(scenario())


def test_static_member_leaves_temporarily_and_comes_back(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a = Member(c, "a1", instance_id="inst")
            a.heartbeat()
            owned = set(a.owned)
            assert a.heartbeat(epoch=-2)["member_epoch"] == -2
            # A second process with the same instance id before the first one left: refused.
            other = Member(c, "x", instance_id="inst-2")
            other.heartbeat()
            assert Member(c, "a3", instance_id="other").heartbeat()["error_code"] == 0
            back = Member(c, "a2", instance_id="inst")
            response = back.heartbeat()
            assert response["error_code"] == 0 and "a1" not in c.groups["g"].members
            assert back.owned <= owned

            c2 = Member(c, "dup", instance_id="inst")
            assert c2.heartbeat()["error_code"] == ErrorCode.UNRELEASED_INSTANCE_ID

    run(scenario())


def test_offsets_need_the_member_epoch(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a = Member(c, "a")
            a.heartbeat()
            commit = dict(group_id="g", member_id="a", group_instance_id=None,
                          offsets=[("t", 0, 42, -1, None)])
            assert c.commit_offsets(generation_id=a.epoch, api_version=9, **commit) == {("t", 0): ErrorCode.NONE}
            assert c.commit_offsets(generation_id=a.epoch - 1, api_version=9, **commit)[("t", 0)] \
                == ErrorCode.STALE_MEMBER_EPOCH
            assert c.commit_offsets(generation_id=a.epoch, api_version=8, **commit)[("t", 0)] \
                == ErrorCode.UNSUPPORTED_VERSION
            assert c.commit_offsets(generation_id=-1, api_version=9, **{**commit, "member_id": ""})[("t", 0)] \
                == ErrorCode.UNKNOWN_MEMBER_ID
            error, rows = c.fetch_offsets(group_id="g", partitions=[("t", 0)], member_id="a", member_epoch=a.epoch)
            assert error == ErrorCode.NONE and rows[0][2] == 42
            error, _ = c.fetch_offsets(group_id="g", partitions=[("t", 0)], member_id="a", member_epoch=0)
            assert error == ErrorCode.STALE_MEMBER_EPOCH
            error, rows = c.fetch_offsets(group_id="g", partitions=None)  # the admin client
            assert error == ErrorCode.NONE and rows[0][2] == 42

    run(scenario())


def test_list_describe_and_delete(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a = Member(c, "a")
            a.heartbeat()
            error, listed = c.list_groups(None, ["consumer"])
            assert listed == [{"group_id": "g", "protocol_type": "consumer", "group_state": "Stable",
                               "group_type": "consumer"}]
            assert c.list_groups(None, ["classic"])[1] == []
            described = c.consumer_group_describe("g")
            assert described["group_state"] == "Stable" and described["assignor_name"] == "uniform"
            member = described["members"][0]
            assert member["member_id"] == "a" and member["subscribed_topic_names"] == ["t"]
            assert member["subscribed_topic_regex"] == ""  # as Kafka 4.3 answers, not null
            assert sorted(member["assignment"]["topic_partitions"][0]["partitions"]) == list(range(6))
            assert c.consumer_group_describe("nope")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
            assert c.describe_group("g")["group_state"] == "Dead"
            assert c.delete_groups(["g"]) == [("g", ErrorCode.NON_EMPTY_GROUP)]
            a.heartbeat(epoch=-1)
            assert c.delete_groups(["g"]) == [("g", ErrorCode.NONE)]
            assert "g" not in c.groups

    run(scenario())


def test_new_partitions_are_assigned(tmp_path):
    async def scenario():
        async with running(tmp_path, topics=(("t", 2),)) as c:
            a, b = Member(c, "a"), Member(c, "b")
            settle([a, b])
            assert len(a.owned) == len(b.owned) == 1
            c.broker.add_partitions("t", 4)
            settle([a, b])
            assert len(a.owned) == len(b.owned) == 2
            assert len(owners([a, b])) == 4

    run(scenario())


def test_session_expiry_frees_partitions(tmp_path):
    async def scenario():
        async with running(tmp_path, **{"group.consumer.session.timeout.ms": "200"}) as c:
            a, b = Member(c, "a"), Member(c, "b")
            settle([a, b])
            for _ in range(8):
                await asyncio.sleep(0.05)
                a.heartbeat()
            assert "b" not in c.groups["g"].members
            settle([a])
            assert len(a.owned) == 6

    run(scenario())


def test_a_groups_own_session_timeout_and_heartbeat_interval(tmp_path):
    """Group configs (broker/group_configs.py): the group's consumer.session.timeout.ms fences its
    silent member, though the broker's is 45 s, and its members get its heartbeat interval."""
    async def scenario():
        async with running(tmp_path, **{"group.consumer.min.session.timeout.ms": "100",
                                        "group.consumer.min.heartbeat.interval.ms": "50"}) as c:
            c.broker.metadata.set_group_configs("g", {"consumer.session.timeout.ms": "200",
                                                      "consumer.heartbeat.interval.ms": "60"})
            a, b = Member(c, "a"), Member(c, "b")
            assert a.heartbeat()["heartbeat_interval_ms"] == 60
            settle([a, b])
            for _ in range(8):
                await asyncio.sleep(0.05)
                a.heartbeat()
            assert "b" not in c.groups["g"].members

    run(scenario())


def test_replay_restores_members_epochs_assignments_and_offsets(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a, b = Member(c, "a"), Member(c, "b")
            settle([a, b])
            c.commit_offsets(group_id="g", generation_id=a.epoch, member_id="a", group_instance_id=None,
                             offsets=[("t", 1, 7, -1, None)], api_version=9)
            before = c.consumer_group_describe("g")
            epochs = (a.epoch, b.epoch)
        async with running(tmp_path) as c:
            group = c.groups["g"]
            assert isinstance(group, ConsumerGroup)
            assert c.consumer_group_describe("g") == before
            assert group.offsets[("t", 1)].offset == 7
            a.coordinator = b.coordinator = c
            assert a.heartbeat()["member_epoch"] == epochs[0]
            assert b.heartbeat()["error_code"] == 0
            owners([a, b])

    run(scenario())


def test_messages_round_trip():
    request = HB.request.cls(group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=1000,
                             subscribed_topic_names=["t"], topic_partitions=[])
    data = HB.request.encode_bytes(request, 0)
    decoded = HB.request.decode(data, 0)
    assert decoded.subscribed_topic_names == ["t"] and decoded.topic_partitions == [] and decoded.instance_id is None
    response = {"throttle_time_ms": 0, "error_code": 0, "member_id": "m", "member_epoch": 1,
                "heartbeat_interval_ms": 5000, "assignment": None}
    assert HB.response.decode(HB.response.encode_bytes(response, 0), 0).assignment is None


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_client_chosen_assignor(tmp_path, assignor):
    async def scenario():
        async with running(tmp_path) as c:
            a = Member(c, "a", assignor=assignor)
            a.heartbeat()
            assert c.consumer_group_describe("g")["assignor_name"] == assignor

    run(scenario())


def test_regex_subscription_picks_up_new_topics(tmp_path):
    async def scenario():
        async with running(tmp_path, topics=(("orders-eu", 2), ("payments", 2))) as c:
            a = Member(c, "a", topics=())
            assert a.heartbeat(api_version=1, subscribed_topic_names=None, subscribed_topic_regex="orders-.*")[
                "error_code"] == 0
            eu = c.broker.metadata.topic("orders-eu").topic_id
            assert a.owned == {(eu, 0), (eu, 1)}
            c.broker.create_topic("orders-us", 1, 1, {})
            a.heartbeat(api_version=1)
            us = c.broker.metadata.topic("orders-us").topic_id
            assert a.owned == {(eu, 0), (eu, 1), (us, 0)}
            described = c.consumer_group_describe("g")["members"][0]
            assert described["subscribed_topic_regex"] == "orders-.*"
            bad = Member(c, "b").heartbeat(api_version=1, subscribed_topic_regex="orders-(")
            assert bad["error_code"] == ErrorCode.INVALID_REGULAR_EXPRESSION
            assert Member(c, "").heartbeat(api_version=1)["error_code"] == ErrorCode.INVALID_REQUEST

    run(scenario())


def test_regex_subscription_matches_internal_and_underscore_topics(tmp_path):
    """Kafka resolves a member's regex against every topic, internal ones included (franz-go's
    Test848RegexBrokerResolves consumes __consumer_offsets that way), and a user topic whose name
    starts with "__" is no internal topic at all."""
    async def scenario():
        async with running(tmp_path, topics=(("__private-orders", 1), ("orders", 1))) as c:
            c.commit_offsets(group_id="other", generation_id=-1, member_id="", group_instance_id=None,
                             offsets=[("orders", 0, 1, -1, None)])  # __consumer_offsets now exists
            offsets_topic = c.broker.metadata.topic("__consumer_offsets")
            assert offsets_topic is not None
            a = Member(c, "a", topics=())
            assert a.heartbeat(api_version=1, subscribed_topic_names=None,
                               subscribed_topic_regex=".*(orders|__consumer_offsets).*")["error_code"] == 0
            owned_topics = {topic for topic, _ in a.owned}
            assert owned_topics == {c.broker.metadata.topic("orders").topic_id,
                                    c.broker.metadata.topic("__private-orders").topic_id,
                                    offsets_topic.topic_id}

    run(scenario())


def test_group_ids_move_between_protocols_only_when_empty(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            # An offsets-only (simple) classic group becomes a consumer group, keeping its offsets.
            c.commit_offsets(group_id="g", generation_id=-1, member_id="", group_instance_id=None,
                             offsets=[("t", 0, 5, -1, None)])
            a = Member(c, "a")
            assert a.heartbeat()["error_code"] == 0
            assert isinstance(c.groups["g"], ConsumerGroup) and c.groups["g"].offsets[("t", 0)].offset == 5
            a.heartbeat(epoch=-1)
            # Empty again: a classic member may take the group id back.
            join = asyncio.ensure_future(c.join_group(
                group_id="g", member_id="", group_instance_id=None, protocol_type="consumer",
                protocols=[("range", b"")], session_timeout_ms=10000, rebalance_timeout_ms=10000, client_id="c",
                client_host="h", require_known_member_id=False))
            response = await join
            assert response["error_code"] == 0 and not isinstance(c.groups["g"], ConsumerGroup)
            assert c.groups["g"].offsets[("t", 0)].offset == 5
            # Now the classic group has a member whose subscription does not parse: it cannot be
            # upgraded online, consumer protocol members are turned away.
            refused = Member(c, "b").heartbeat()
            assert refused["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
            assert "embedded consumer protocol is malformed" in refused["error_message"]
            listed = c.list_groups(None, None)[1]
            assert listed[0]["group_type"] == "classic"

    run(scenario())


def test_transactional_offsets_of_a_consumer_group_member(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a = Member(c, "a")
            a.heartbeat()
            commit = dict(group_id="g", producer_id=7, producer_epoch=0, member_id="a", group_instance_id=None,
                          offsets=[("t", 2, 11, -1, None)])
            assert c.commit_transactional_offsets(generation_id=a.epoch + 1, **commit)[("t", 2)] \
                == ErrorCode.ILLEGAL_GENERATION
            assert c.commit_transactional_offsets(generation_id=a.epoch, **commit)[("t", 2)] == ErrorCode.NONE
            c.complete_transaction(7, [c.partition_for("g")], committed=True)
            assert c.fetch_offsets(group_id="g", partitions=[("t", 2)])[1][0][2] == 11

    run(scenario())


def test_commit_with_an_older_epoch_for_partitions_held_since_then(tmp_path):
    """Kafka 4.3 (KIP-1251): a commit carrying an epoch older than the member's is accepted when
    every partition was assigned to the member at that epoch or earlier (its assignment epoch),
    refused STALE_MEMBER_EPOCH (TxnOffsetCommit: ILLEGAL_GENERATION) otherwise; the assignment
    epochs are in the current assignment records, so a restarted coordinator judges the same."""
    def commit(c, epoch, *partitions):
        return set(c.commit_offsets(group_id="g", generation_id=epoch, member_id="a", group_instance_id=None,
                                    offsets=[("t", p, 5, -1, None) for p in partitions], api_version=9).values())

    def txn_commit(c, epoch, *partitions):
        return set(c.commit_transactional_offsets(
            group_id="g", producer_id=9, producer_epoch=0, generation_id=epoch, member_id="a",
            group_instance_id=None, offsets=[("t", p, 5, -1, None) for p in partitions]).values())

    async def scenario():
        async with running(tmp_path) as c:
            a, b = Member(c, "a"), Member(c, "b")
            a.heartbeat()  # epoch 2: every partition, assigned at epoch 2
            b.heartbeat()
            settle([a, b])  # epoch 3: a keeps three partitions it holds since epoch 2
            assert a.epoch == 3
            kept = sorted(p for _, p in a.owned)
            b.heartbeat(epoch=-1)  # b leaves: a is given b's three at epoch 4
            settle([a])
            assert a.epoch == 4 and len(a.owned) == 6
            new = sorted(set(range(6)) - set(kept))
            assert len(kept) == len(new) == 3
            assert commit(c, 3, *kept) == {ErrorCode.NONE}
            assert commit(c, 2, *kept) == {ErrorCode.NONE}
            assert commit(c, 1, *kept) == {ErrorCode.STALE_MEMBER_EPOCH}
            assert commit(c, 3, new[0]) == {ErrorCode.STALE_MEMBER_EPOCH}
            # One partition assigned after the epoch refuses the whole request.
            assert commit(c, 3, kept[0], new[0]) == {ErrorCode.STALE_MEMBER_EPOCH}
            assert commit(c, 5, *kept) == {ErrorCode.STALE_MEMBER_EPOCH}
            assert commit(c, 4, *new) == {ErrorCode.NONE}
            assert txn_commit(c, 3, *kept) == {ErrorCode.NONE}
            assert txn_commit(c, 3, new[0]) == {ErrorCode.ILLEGAL_GENERATION}
            # OffsetFetch keeps the strict check.
            assert c.fetch_offsets(group_id="g", partitions=[("t", kept[0])], member_id="a",
                                   member_epoch=3)[0] == ErrorCode.STALE_MEMBER_EPOCH
        async with running(tmp_path) as c:
            assert commit(c, 3, *kept) == {ErrorCode.NONE}
            assert commit(c, 3, new[0]) == {ErrorCode.STALE_MEMBER_EPOCH}

    run(scenario())


def test_group_epoch_records_the_metadata_hash_and_a_restart_keeps_it(tmp_path):
    """Kafka 4.1+ (KIP-1101): the group epoch record carries the hash of the subscribed topics' metadata
    (as Kafka computes it) instead of a ConsumerGroupPartitionMetadata record; a restarted coordinator
    compares it with a fresh hash, so a heartbeat after the restart bumps nothing, while partitions added
    to a subscribed topic do (with the new hash). A partition metadata record of an older log (kafka-wire's
    earlier layout, Kafka 3.7-4.0's) gets its tombstone at the group's next metadata check."""
    from coordinator.metadata_hash import group_hash, topic_hash
    from kafka_wire.internal_records import (CONSUMER_GROUP_PARTITION_METADATA, encode_consumer_group_key,
                                             encode_consumer_group_value)

    def epoch_records(c):
        return [(value.epoch, value.metadata_hash) for kind, _, _, value in records_of(c) if kind == 3 and value]

    def hash_of(c, partitions):
        meta = c.offsets_topic.broker.metadata.topic("t")
        return group_hash({"t": topic_hash(meta.topic_id, "t", [[] for _ in range(partitions)])})

    async def first_life():
        async with running(tmp_path) as c:
            a = Member(c, "a")
            a.heartbeat()
            assert epoch_records(c) == [(2, hash_of(c, 6))]
            assert not [r for r in records_of(c) if r[0] == CONSUMER_GROUP_PARTITION_METADATA]
            return a.epoch

    epoch = run(first_life())

    async def second_life():
        async with running(tmp_path) as c:
            a = Member(c, "a")
            a.epoch = epoch
            assert a.heartbeat()["member_epoch"] == epoch  # the same hash: no new epoch
            assert epoch_records(c) == [(2, hash_of(c, 6))]
            # A legacy partition metadata record, as an older log holds it.
            group = c.groups["g"]
            c._append(group, [(encode_consumer_group_key(CONSUMER_GROUP_PARTITION_METADATA, "g"),
                               encode_consumer_group_value(CONSUMER_GROUP_PARTITION_METADATA, {"topics": []}))])

    run(second_life())

    async def third_life():
        async with running(tmp_path) as c:
            assert c.groups["g"].legacy_partition_metadata
            a = Member(c, "a")
            a.epoch = epoch
            a.heartbeat()
            last = records_of(c)[-1]
            assert (last[0], last[3]) == (CONSUMER_GROUP_PARTITION_METADATA, None)
            assert not c.groups["g"].legacy_partition_metadata
            assert epoch_records(c) == [(2, hash_of(c, 6))]
            c.offsets_topic.broker.add_partitions("t", 8)
            a.heartbeat()
            assert epoch_records(c) == [(2, hash_of(c, 6)), (3, hash_of(c, 8))]
            a.heartbeat(epoch=-1)  # the last member leaves: nothing subscribed, Kafka's hash 0
            assert epoch_records(c)[-1] == (4, 0)

    run(third_life())
