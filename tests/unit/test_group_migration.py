"""Online migration between classic and KIP-848 members in one group, without a server: the upgrade
of a classic group by a ConsumerGroupHeartbeat, classic members reconciling through
JoinGroup/SyncGroup/Heartbeat inside a consumer group, LeaveGroup, the downgrade when the last
KIP-848 member leaves, the migration policy, and the replay of every conversion."""

from __future__ import annotations

import asyncio
import struct

from coordinator.consumer_group import ConsumerGroup, MemberState
from kafka_wire.consumer_protocol import assigned_partitions, parse_subscription, serialize_assignment
from coordinator.group import ClassicGroup, GroupState
from kafka_wire.errors import ErrorCode

from tests.unit.test_consumer_group import Member, run, running


def _string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def subscription(topics, owned: dict[str, list[int]] | None = None) -> bytes:
    """ConsumerProtocolSubscription: v0 without owned partitions, v1 with them (cooperative)."""
    body = struct.pack(">hi", 0 if owned is None else 1, len(topics)) + b"".join(_string(t) for t in topics)
    body += struct.pack(">i", -1)
    if owned is not None:
        body += struct.pack(">i", len(owned))
        for topic, parts in owned.items():
            body += _string(topic) + struct.pack(">i", len(parts)) + b"".join(struct.pack(">i", p) for p in parts)
    return body


class Classic:
    """A classic consumer as the Java client behaves (KIP-394 member id, JoinGroup, SyncGroup, Heartbeat)."""

    def __init__(self, coordinator, group: str = "g", topics=("t",), session_ms: int = 30000) -> None:
        self.c = coordinator
        self.group = group
        self.topics = list(topics)
        self.session_ms = session_ms
        self.member_id = ""
        self.generation = -1
        self.owned: dict[str, list[int]] = {}

    async def join(self, *, owned: bool = True) -> dict:
        while True:
            response = await self.c.join_group(
                group_id=self.group, member_id=self.member_id, group_instance_id=None, protocol_type="consumer",
                protocols=[("range", subscription(self.topics, self.owned if owned else None))],
                session_timeout_ms=self.session_ms, rebalance_timeout_ms=10000, client_id="classic",
                client_host="/127.0.0.1", require_known_member_id=True)
            if response["error_code"] == ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id = response["member_id"]
                continue
            if response["error_code"] == 0:
                self.member_id = response["member_id"]
                self.generation = response["generation_id"]
            return response

    async def sync(self, assignments=()) -> dict:
        response = await self.c.sync_group(group_id=self.group, generation_id=self.generation,
                                           member_id=self.member_id, group_instance_id=None,
                                           protocol_type="consumer", protocol_name="range",
                                           assignments=list(assignments))
        if response["error_code"] == 0:
            self.owned = dict(assigned_partitions(response["assignment"]))
        return response

    def heartbeat(self) -> ErrorCode:
        return self.c.heartbeat(group_id=self.group, generation_id=self.generation, member_id=self.member_id,
                                group_instance_id=None)


def owned_partitions(classic: Classic) -> set[tuple[str, int]]:
    return {(t, p) for t, parts in classic.owned.items() for p in parts}


def kip848_partitions(c, member: Member) -> set[tuple[str, int]]:
    return {(c._topic_name(t), p) for t, p in member.owned}


async def classic_group_with_one_member(c) -> Classic:
    """A Stable classic group whose only member owns all of topic t's 6 partitions."""
    classic = Classic(c)
    assert (await classic.join())["error_code"] == 0
    assert (await classic.sync([(classic.member_id, serialize_assignment([("t", list(range(6)))]))]))[
        "error_code"] == 0
    assert c.groups["g"].state == GroupState.STABLE
    return classic


def test_consumer_heartbeat_upgrades_a_classic_group_and_partitions_move_without_overlap(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            classic = await classic_group_with_one_member(c)
            generation = classic.generation
            a = Member(c, "a")
            response = a.heartbeat()
            assert response["error_code"] == 0, response
            group = c.groups["g"]
            assert isinstance(group, ConsumerGroup)
            converted = group.members[classic.member_id]
            assert converted.uses_classic_protocol and converted.classic.session_timeout_ms == 30000
            assert converted.member_epoch == generation and len(group.target) == 2
            # The classic member still owns everything: the new member waits.
            assert a.owned == set() and group.group_epoch == generation + 1
            # The classic member is told to rejoin; it joins owning all (cooperative), keeps its
            # generation until it has revoked what it must give up.
            assert classic.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
            joined = await classic.join()
            assert joined["error_code"] == 0 and joined["protocol_name"] == "range" and joined["leader"] == ""
            assert joined["generation_id"] == generation
            assert group.members[classic.member_id].state == MemberState.UNREVOKED_PARTITIONS
            assert (await classic.sync())["error_code"] == 0
            kept = owned_partitions(classic)
            assert 0 < len(kept) < 6
            # Revoked: it joins again with what it kept and reaches the new epoch.
            assert classic.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
            assert (await classic.join())["generation_id"] == group.group_epoch
            assert (await classic.sync())["error_code"] == 0 and owned_partitions(classic) == kept
            assert classic.heartbeat() == ErrorCode.NONE
            a.heartbeat()
            assert kip848_partitions(c, a) == {("t", p) for p in range(6)} - kept
            described = c.consumer_group_describe("g")
            assert sorted(m["member_type"] for m in described["members"]) == [0, 1]
            assert c.describe_group("g")["group_state"] == "Dead"

    run(scenario())


def test_the_upgrading_member_does_not_wait_for_the_assignment_interval(tmp_path):
    """Kafka's ConsumerGroup.fromClassicGroup writes the converted target assignment with timestamp
    0: the heartbeat that upgrades the group computes the next one at once, whatever
    group.consumer.assignment.interval.ms says."""
    async def scenario():
        async with running(tmp_path, **{"group.consumer.assignment.interval.ms": "15000"}) as c:
            classic = await classic_group_with_one_member(c)
            a = Member(c, "a")
            assert a.heartbeat()["error_code"] == 0
            group = c.groups["g"]
            assert group.group_epoch == group.assignment_epoch == classic.generation + 1 == a.epoch
            assert len(group.target["a"]) == 1 and group.assignment_timestamp > 0

    run(scenario())


def test_eager_classic_member_in_a_consumer_group(tmp_path):
    """A classic member whose subscription carries no owned partitions (eager protocols) joins a
    consumer group: it gets what is free, and the rest once its owner released it."""
    async def scenario():
        async with running(tmp_path) as c:
            a = Member(c, "a")
            a.heartbeat()
            a.heartbeat()
            classic = Classic(c)
            joined = await classic.join(owned=False)
            assert joined["error_code"] == 0 and joined["protocol_type"] == "consumer"
            assert (await classic.sync())["error_code"] == 0
            assert owned_partitions(classic) == set()  # still A's
            assert classic.heartbeat() == ErrorCode.NONE  # waiting on A
            a.heartbeat()  # asked to revoke
            a.heartbeat()  # revoked
            assert classic.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
            await classic.join(owned=False)
            await classic.sync()
            assert len(owned_partitions(classic)) == 3 and not owned_partitions(classic) & kip848_partitions(c, a)
            # Errors a classic client can meet.
            assert c.heartbeat(group_id="g", generation_id=classic.generation + 1, member_id=classic.member_id,
                               group_instance_id=None) == ErrorCode.ILLEGAL_GENERATION
            assert c.heartbeat(group_id="g", generation_id=a.epoch, member_id="a",
                               group_instance_id=None) == ErrorCode.UNKNOWN_MEMBER_ID
            sync = await c.sync_group(group_id="g", generation_id=classic.generation, member_id=classic.member_id,
                                      group_instance_id=None, protocol_type="consumer", protocol_name="roundrobin",
                                      assignments=[])
            assert sync["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
            commit = dict(group_id="g", member_id=classic.member_id, group_instance_id=None,
                          offsets=[("t", 0, 3, -1, None)], api_version=8)
            assert c.commit_offsets(generation_id=classic.generation, **commit)[("t", 0)] == ErrorCode.NONE
            assert c.commit_offsets(generation_id=classic.generation - 1, **commit)[("t", 0)] \
                == ErrorCode.ILLEGAL_GENERATION

    run(scenario())


def test_leave_group_of_the_last_kip848_member_downgrades_and_replays(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a = Member(c, "a")
            a.heartbeat()
            classic = Classic(c)
            await classic.join(owned=False)
            a.heartbeat()
            a.heartbeat()
            classic.heartbeat()
            await classic.join(owned=False)
            await classic.sync()
            classic_held = owned_partitions(classic)
            epoch = c.groups["g"].group_epoch
            c.commit_offsets(group_id="g", generation_id=classic.generation, member_id=classic.member_id,
                             group_instance_id=None, offsets=[("t", 1, 9, -1, None)], api_version=9)
            assert a.heartbeat(epoch=-1)["error_code"] == 0
            group = c.groups["g"]
            assert isinstance(group, ClassicGroup) and group.state == GroupState.PREPARING_REBALANCE
            assert group.generation_id == epoch and list(group.members) == [classic.member_id]
            # Each member holds its target assignment (the leaving member's is not redistributed:
            # the rebalance that follows does that), in the classic protocol.
            assert {(t, p) for t, parts in assigned_partitions(group.members[classic.member_id].assignment)
                    for p in parts} == classic_held
            assert classic.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
            assert c.consumer_group_describe("g")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
            assert len(classic_held) == 3
        async with running(tmp_path) as c:
            group = c.groups["g"]
            # Replayed from __consumer_offsets: the classic group the downgrade wrote, offsets kept.
            assert isinstance(group, ClassicGroup) and group.generation_id == epoch
            assert list(group.members) == [classic.member_id] and group.offsets[("t", 1)].offset == 9
            classic.c = c
            joined = await classic.join()
            assert joined["error_code"] == 0 and joined["generation_id"] == epoch + 1
            assert joined["leader"] == classic.member_id

    run(scenario())


def test_upgraded_group_replays_with_its_classic_members(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            classic = await classic_group_with_one_member(c)
            a = Member(c, "a")
            a.heartbeat()
            before = c.consumer_group_describe("g")
            member = c.groups["g"].members[classic.member_id]
        async with running(tmp_path) as c:
            group = c.groups["g"]
            assert isinstance(group, ConsumerGroup)
            assert c.consumer_group_describe("g") == before
            assert group.members[classic.member_id].classic == member.classic
            assert group.members[classic.member_id].assigned == member.assigned
            classic.c = c
            assert classic.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS

    run(scenario())


def test_classic_leave_group_removes_any_member_and_bumps_the_epoch(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a, b = Member(c, "a"), Member(c, "b")
            a.heartbeat()
            b.heartbeat()
            classic = Classic(c)
            await classic.join(owned=False)
            epoch = c.groups["g"].group_epoch
            error, results = c.leave_group(group_id="g", members=[(classic.member_id, None), ("nobody", None)])
            assert error == 0 and [e for _, _, e in results] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
            group = c.groups["g"]
            assert isinstance(group, ConsumerGroup) and group.group_epoch == epoch + 1
            assert classic.member_id not in group.members
            # A KIP-848 member removed by LeaveGroup (an admin removing members): no classic member
            # remains, so no downgrade.
            error, results = c.leave_group(group_id="g", members=[("b", None)])
            assert results[0][2] == ErrorCode.NONE and isinstance(c.groups["g"], ConsumerGroup)

    run(scenario())


def test_migration_policy_disabled_keeps_protocols_apart(tmp_path):
    async def scenario():
        async with running(tmp_path, **{"group.consumer.migration.policy": "disabled"}) as c:
            await classic_group_with_one_member(c)
            refused = Member(c, "a").heartbeat()
            assert refused["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
            assert isinstance(c.groups["g"], ClassicGroup)
        async with running(tmp_path, **{"group.consumer.migration.policy": "upgrade"}) as c:
            a = Member(c, "a", group="h")
            a.heartbeat()
            classic = Classic(c, group="h")
            await classic.join(owned=False)
            # Downgrades are not allowed: the group stays a consumer group with its classic member.
            assert a.heartbeat(epoch=-1)["error_code"] == 0
            assert isinstance(c.groups["h"], ConsumerGroup) and list(c.groups["h"].members) == [classic.member_id]

    run(scenario())


def test_upgrade_respects_the_consumer_group_size_limit(tmp_path):
    async def scenario():
        async with running(tmp_path, **{"group.consumer.max.size": "1"}) as c:
            await classic_group_with_one_member(c)
            refused = Member(c, "a").heartbeat()
            # The classic group fits; the joining member would not.
            assert refused["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED
            assert isinstance(c.groups["g"], ClassicGroup)

    run(scenario())


def test_subscription_versions_parse():
    assert parse_subscription(subscription(["a", "b"])).topics == ("a", "b")
    parsed = parse_subscription(subscription(["a"], {"a": [1, 2]}))
    assert parsed.version == 1 and parsed.owned_partitions == (("a", (1, 2)),)
    v3 = subscription(["a"], {}) + struct.pack(">i", 4) + _string("rack-1")
    v3 = struct.pack(">h", 3) + v3[2:]
    assert parse_subscription(v3).rack_id == "rack-1"
    assert parse_subscription(b"\x00") is None
    assert assigned_partitions(serialize_assignment([("t", [0, 2])], 3)) == [("t", [0, 2])]


def test_session_timeout_of_a_classic_member_is_its_own(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            Member(c, "a").heartbeat()
            classic = Classic(c, session_ms=7000)
            await classic.join(owned=False)
            key = ("consumer-session", "g", classic.member_id)
            assert c.timer.is_scheduled(key)
            assert c.groups["g"].members[classic.member_id].classic.session_timeout_ms == 7000

    run(scenario())


def test_static_classic_member_in_a_consumer_group(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            Member(c, "a").heartbeat()

            async def join(member_id: str) -> dict:
                return await c.join_group(group_id="g", member_id=member_id, group_instance_id="inst",
                                          protocol_type="consumer", protocols=[("range", subscription(["t"]))],
                                          session_timeout_ms=30000, rebalance_timeout_ms=10000, client_id="c",
                                          client_host="h", require_known_member_id=True)

            first = await join("")
            assert first["error_code"] == 0  # static members are not asked for a member id first
            second = await join("")
            assert second["error_code"] == 0 and second["member_id"] != first["member_id"]
            group = c.groups["g"]
            assert first["member_id"] not in group.members and group.static_member("inst").member_id \
                == second["member_id"]
            fenced = await join("someone-else")
            assert fenced["error_code"] == ErrorCode.FENCED_INSTANCE_ID and fenced["member_id"] == ""
            assert c.heartbeat(group_id="g", generation_id=first["generation_id"], member_id=first["member_id"],
                               group_instance_id="inst") == ErrorCode.FENCED_INSTANCE_ID
            error, results = c.leave_group(group_id="g", members=[("", "inst")])
            assert results == [("", "inst", ErrorCode.NONE)] and group.static_member("inst") is None

    run(scenario())


def test_upgrade_during_a_classic_rebalance_sends_waiting_members_back(tmp_path):
    """Members parked in JoinGroup when a KIP-848 member upgrades the group are told
    REBALANCE_IN_PROGRESS (Kafka's completeAllJoinFutures), and carry on in the consumer group."""
    async def scenario():
        async with running(tmp_path) as c:
            first = await classic_group_with_one_member(c)
            second = Classic(c)
            waiting = asyncio.ensure_future(second.join(owned=False))  # the group rebalances: parked
            for _ in range(50):
                await asyncio.sleep(0.01)
                if c.groups["g"].state == GroupState.PREPARING_REBALANCE:
                    break
            assert Member(c, "a").heartbeat()["error_code"] == 0
            assert (await waiting)["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
            group = c.groups["g"]
            # Every classic member converts, the one that was rejoining too (with what it held: nothing).
            assert isinstance(group, ConsumerGroup) and set(group.members) == {first.member_id, second.member_id, "a"}
            assert group.members[second.member_id].assigned == {}
            joined = await second.join(owned=False)
            assert joined["error_code"] == 0 and joined["generation_id"] == group.members[second.member_id].member_epoch

    run(scenario())


def test_classic_member_that_does_not_sync_in_time_is_removed(tmp_path):
    """The sync timeout of a classic member in a consumer group (its rebalance timeout): a member
    that joined and never sent SyncGroup is fenced, its partitions go back to the others."""
    async def scenario():
        async with running(tmp_path) as c:
            a = Member(c, "a")
            a.heartbeat()
            joined = await c.join_group(group_id="g", member_id="late", group_instance_id=None,
                                        protocol_type="consumer", protocols=[("range", subscription(["t"]))],
                                        session_timeout_ms=30000, rebalance_timeout_ms=50, client_id="c",
                                        client_host="h", require_known_member_id=True)
            assert joined["error_code"] == 0 and "late" in c.groups["g"].members
            for _ in range(500):
                if "late" not in c.groups["g"].members:
                    break
                await asyncio.sleep(0.01)
            assert "late" not in c.groups["g"].members
            a.heartbeat()
            a.heartbeat()
            assert len(a.owned) == 6

    run(scenario())


def test_static_member_rolled_back_to_classic_downgrades_the_group(tmp_path):
    """The last KIP-848 member is static; it restarts as a classic consumer with the same instance
    id: the replacement makes every member classic, so the group is classic again (no rebalance when
    the subscription is the same), and the replay says so too."""
    async def scenario():
        async with running(tmp_path) as c:
            a = Member(c, "a", instance_id="inst")
            a.heartbeat()
            other = Classic(c)
            await other.join(owned=False)
            for _ in range(3):  # A revokes what the classic member is to get
                assert a.heartbeat()["error_code"] == 0
            assert a.heartbeat(epoch=-2)["error_code"] == 0
            held = {(c._topic_name(t), p) for t, p in a.owned}
            back = await c.join_group(group_id="g", member_id="", group_instance_id="inst",
                                      protocol_type="consumer", protocols=[("range", subscription(["t"]))],
                                      session_timeout_ms=30000, rebalance_timeout_ms=10000, client_id="c",
                                      client_host="h", require_known_member_id=True)
            assert back["error_code"] == 0
            group = c.groups["g"]
            assert isinstance(group, ClassicGroup) and group.state == GroupState.STABLE
            assert group.generation_id == back["generation_id"] and group.static_member_id("inst") == back["member_id"]
            synced = await c.sync_group(group_id="g", generation_id=back["generation_id"], member_id=back["member_id"],
                                        group_instance_id="inst", protocol_type="consumer", protocol_name="range",
                                        assignments=[])
            assert {(t, p) for t, parts in assigned_partitions(synced["assignment"]) for p in parts} == held
        async with running(tmp_path) as c:
            assert isinstance(c.groups["g"], ClassicGroup) and c.groups["g"].static_member_id("inst") \
                == back["member_id"]

    run(scenario())
