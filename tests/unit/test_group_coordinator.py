"""The group coordinator without a server: join/sync/heartbeat/leave flows, sessions, static
membership, offsets, and replay of __consumer_offsets by a new coordinator over the same log dir."""

from __future__ import annotations

import asyncio
import contextlib
import struct

import pytest

from broker.config import BrokerConfig
from broker.node import Broker
from kafka_wire.consumer_protocol import assigned_partitions, subscribed_topics
from coordinator.group_coordinator import GroupCoordinator
from coordinator.offsets_store import OFFSETS_TOPIC, java_string_hashcode, partition_for
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import build_control_batch
from log.producer_state import AppendOrigin

NONE = int(ErrorCode.NONE)


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0, as Java consumers send it."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        raw = t.encode()
        out += struct.pack(">h", len(raw)) + raw
    return out + struct.pack(">i", -1)


def assignment(*pairs: tuple[str, list[int]]) -> bytes:
    out = struct.pack(">hi", 0, len(pairs))
    for topic, partitions in pairs:
        raw = topic.encode()
        out += struct.pack(">h", len(raw)) + raw + struct.pack(">i", len(partitions))
        out += b"".join(struct.pack(">i", p) for p in partitions)
    return out + struct.pack(">i", -1)


class Clock:
    """Wall-clock milliseconds that a test can move forward."""

    def __init__(self) -> None:
        import time
        self.offset = 0
        self._time = time

    def __call__(self) -> int:
        return self._time.time_ns() // 1_000_000 + self.offset


BASE_CONFIG = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "10",
    "offsets.topic.num.partitions": "5",
    "offsets.retention.check.interval.ms": "3600000",
}


@contextlib.asynccontextmanager
async def running(path, clock=None, **config):
    """A Broker over `path` with a started coordinator; stopped and closed afterwards."""
    props = {"log.dirs": str(path), **BASE_CONFIG, **{k.replace("_", "."): str(v) for k, v in config.items()}}
    broker = Broker(BrokerConfig(props))
    broker.load()
    coordinator = GroupCoordinator(clock_ms=clock) if clock else GroupCoordinator()
    broker.groups = coordinator
    await coordinator.start(broker)
    try:
        yield coordinator
    finally:
        await coordinator.stop()
        broker.close()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


async def join(coordinator, group="g", member_id="", *, instance=None, topics=("t",), protocol="range",
               protocol_type="consumer", session=10_000, rebalance=None, client_id="client", v4=True):
    return await coordinator.join_group(
        group_id=group, member_id=member_id, group_instance_id=instance, protocol_type=protocol_type,
        protocols=[(protocol, subscription(*topics))], session_timeout_ms=session,
        rebalance_timeout_ms=rebalance if rebalance is not None else session, client_id=client_id,
        client_host="/127.0.0.1", require_known_member_id=v4)


async def join_new(coordinator, group="g", **kwargs):
    """KIP-394: first JoinGroup gets MEMBER_ID_REQUIRED and an id, the second joins with it."""
    first = await join(coordinator, group, **kwargs)
    assert first["error_code"] == int(ErrorCode.MEMBER_ID_REQUIRED)
    assert first["member_id"].startswith(kwargs.get("client_id", "client") + "-")
    return await join(coordinator, group, first["member_id"], **kwargs)


async def sync(coordinator, response, assignments=(), group="g", instance=None):
    return await coordinator.sync_group(
        group_id=group, generation_id=response["generation_id"], member_id=response["member_id"],
        group_instance_id=instance, protocol_type="consumer", protocol_name=response["protocol_name"],
        assignments=list(assignments))


def heartbeat(coordinator, response, group="g", instance=None, generation=None):
    return coordinator.heartbeat(
        group_id=group, generation_id=response["generation_id"] if generation is None else generation,
        member_id=response["member_id"], group_instance_id=instance)


async def stable_pair(coordinator, group="g", **kwargs):
    """Two members A (leader) and B in a Stable group: A gets t-0, B gets t-1."""
    a = await join_new(coordinator, group, client_id="a", **kwargs)
    sa = await sync(coordinator, a, [(a["member_id"], assignment(("t", [0, 1])))], group)
    assert sa["error_code"] == NONE
    b_task = asyncio.create_task(join_new(coordinator, group, client_id="b", **kwargs))
    await asyncio.sleep(0.05)
    assert heartbeat(coordinator, a, group) == ErrorCode.REBALANCE_IN_PROGRESS
    a = await join(coordinator, group, a["member_id"], client_id="a", **kwargs)
    b = await b_task
    assert a["generation_id"] == b["generation_id"] == 2
    assert a["leader"] == a["member_id"] and b["leader"] == a["member_id"]
    assert {m["member_id"] for m in a["members"]} == {a["member_id"], b["member_id"]}
    assert b["members"] == []
    b_sync = asyncio.create_task(sync(coordinator, b, group=group))
    await asyncio.sleep(0.02)
    assert not b_sync.done()  # followers wait for the leader's assignment
    plan = [(a["member_id"], assignment(("t", [0]))), (b["member_id"], assignment(("t", [1])))]
    sa = await sync(coordinator, a, plan, group)
    sb = await b_sync
    assert sa["assignment"] == assignment(("t", [0]))
    assert sb["assignment"] == assignment(("t", [1]))
    return a, b


# -- partitioning ---------------------------------------------------------------------------------

def test_partition_for_matches_java_string_hashcode():
    # Values printed by Java 17: String.hashCode() and Utils.abs(hash) % 50.
    cases = {"": (0, 0), "hello": (99162322, 22), "my-group": (-1906497762, 12),
             "console-consumer-36051": (160418856, 6), "gr\u00fcppe-\U0001F600": (-1039948164, 14),
             "polygenelubricants": (-2147483648, 0)}
    for group_id, (hashcode, partition) in cases.items():
        assert java_string_hashcode(group_id) == hashcode
        assert partition_for(group_id, 50) == partition


def test_consumer_protocol_parsing():
    assert subscribed_topics(subscription("a", "b")) == ["a", "b"]
    assert subscribed_topics(b"\x00") is None
    assert assigned_partitions(assignment(("a", [0, 2]))) == [("a", [0, 2])]
    assert assigned_partitions(b"") == []


# -- join / sync / heartbeat ----------------------------------------------------------------------

def test_single_member_join_sync_heartbeat(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            joined = await join_new(c)
            assert joined["error_code"] == NONE
            assert joined["generation_id"] == 1
            assert joined["protocol_type"] == "consumer" and joined["protocol_name"] == "range"
            assert joined["leader"] == joined["member_id"]
            assert joined["members"] == [{"member_id": joined["member_id"], "group_instance_id": None,
                                          "metadata": subscription("t")}]
            assert c.describe_group("g")["group_state"] == "CompletingRebalance"
            # Heartbeats between JoinGroup and SyncGroup are fine.
            assert heartbeat(c, joined) == ErrorCode.NONE
            synced = await sync(c, joined, [(joined["member_id"], assignment(("t", [0])))])
            assert synced == {"throttle_time_ms": 0, "error_code": NONE, "protocol_type": "consumer",
                              "protocol_name": "range", "assignment": assignment(("t", [0]))}
            assert heartbeat(c, joined) == ErrorCode.NONE
            assert heartbeat(c, joined, generation=0) == ErrorCode.ILLEGAL_GENERATION
            assert c.heartbeat(group_id="g", generation_id=1, member_id="nobody",
                               group_instance_id=None) == ErrorCode.UNKNOWN_MEMBER_ID
            assert c.heartbeat(group_id="other", generation_id=1, member_id="x",
                               group_instance_id=None) == ErrorCode.UNKNOWN_MEMBER_ID
            described = c.describe_group("g")
            assert described["group_state"] == "Stable" and described["protocol_data"] == "range"
            assert described["members"][0]["member_assignment"] == assignment(("t", [0]))
            assert described["members"][0]["client_host"] == "/127.0.0.1"
    run(scenario())


def test_join_errors(tmp_path):
    async def scenario():
        async with running(tmp_path, group_max_session_timeout_ms=30_000) as c:
            r = await join(c, session=5)
            assert r["error_code"] == int(ErrorCode.INVALID_SESSION_TIMEOUT)
            r = await join(c, session=30_001)
            assert r["error_code"] == int(ErrorCode.INVALID_SESSION_TIMEOUT)
            r = await join(c, group="")
            assert r["error_code"] == int(ErrorCode.INVALID_GROUP_ID)
            r = await join(c, member_id="ghost")
            assert r["error_code"] == int(ErrorCode.UNKNOWN_MEMBER_ID)
            r = await join(c, group="g2", protocol_type="")
            assert r["error_code"] == int(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            await join_new(c)
            r = await join(c, protocol_type="connect")
            assert r["error_code"] == int(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            r = await join(c, protocol="roundrobin")
            assert r["error_code"] == int(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            # JoinGroup v3 and older: no MEMBER_ID_REQUIRED round trip.
            r = await join(c, group="old", v4=False)
            assert r["error_code"] == NONE and r["generation_id"] == 1
    run(scenario())


def test_new_member_triggers_rebalance_and_leader_assigns(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a, b = await stable_pair(c)
            assert c.describe_group("g")["group_state"] == "Stable"
            assert heartbeat(c, a) == heartbeat(c, b) == ErrorCode.NONE
            # A follower rejoining with the same metadata in Stable gets the current generation back.
            again = await join(c, member_id=b["member_id"], client_id="b")
            assert again["generation_id"] == 2 and again["members"] == []
            assert heartbeat(c, a) == ErrorCode.NONE
    run(scenario())


def test_leave_group_rebalances(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a, b = await stable_pair(c)
            error, members = c.leave_group(group_id="g", members=[(b["member_id"], None), ("ghost", None)])
            assert error == ErrorCode.NONE
            assert members == [(b["member_id"], None, ErrorCode.NONE), ("ghost", None, ErrorCode.UNKNOWN_MEMBER_ID)]
            assert heartbeat(c, a) == ErrorCode.REBALANCE_IN_PROGRESS
            a = await join(c, member_id=a["member_id"], client_id="a")
            assert a["generation_id"] == 3 and [m["member_id"] for m in a["members"]] == [a["member_id"]]
            await sync(c, a, [(a["member_id"], assignment(("t", [0, 1])))])
            # The last member leaving empties the group (and bumps the generation).
            c.leave_group(group_id="g", members=[(a["member_id"], None)])
            described = c.describe_group("g")
            assert described["group_state"] == "Empty" and described["members"] == []
            assert c.groups["g"].generation_id == 4
            error, members = c.leave_group(group_id="nope", members=[("x", None)])
            assert members == [("x", None, ErrorCode.UNKNOWN_MEMBER_ID)]
    run(scenario())


def test_session_expiry_removes_member(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a = await join_new(c, client_id="a", session=5000)
            await sync(c, a, [(a["member_id"], b"x")])
            b_task = asyncio.create_task(join_new(c, client_id="b", session=300))
            await asyncio.sleep(0.02)
            a = await join(c, member_id=a["member_id"], client_id="a", session=5000)
            b = await b_task
            plan = [(a["member_id"], b"A"), (b["member_id"], b"B")]
            sb = asyncio.create_task(sync(c, b))
            await sync(c, a, plan)
            assert (await sb)["assignment"] == b"B"
            # A keeps heartbeating; B goes silent (killed without LeaveGroup).
            for _ in range(8):
                await asyncio.sleep(0.1)
                error = heartbeat(c, a)
                if error == ErrorCode.REBALANCE_IN_PROGRESS:
                    break
            assert error == ErrorCode.REBALANCE_IN_PROGRESS
            assert heartbeat(c, b) == ErrorCode.UNKNOWN_MEMBER_ID
            a = await join(c, member_id=a["member_id"], client_id="a", session=5000)
            assert [m["member_id"] for m in a["members"]] == [a["member_id"]]
    run(scenario())


def test_pending_member_expires_and_member_not_rejoining_is_dropped(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            first = await join(c, session=100)
            assert first["error_code"] == int(ErrorCode.MEMBER_ID_REQUIRED)
            await asyncio.sleep(0.3)
            assert first["member_id"] not in c.groups["g"].pending_join_members
            late = await join(c, member_id=first["member_id"], session=100)
            assert late["error_code"] == int(ErrorCode.UNKNOWN_MEMBER_ID)
            # A member that does not rejoin within the rebalance timeout is removed from the group.
            a = await join_new(c, client_id="a", session=5000, rebalance=300)
            await sync(c, a, [(a["member_id"], b"")])
            b = asyncio.create_task(join_new(c, client_id="b", session=5000, rebalance=300))
            b = await b  # A never rejoins: after 300 ms B is alone in generation 2
            assert b["generation_id"] == 2 and b["leader"] == b["member_id"]
            assert [m["member_id"] for m in b["members"]] == [b["member_id"]]
            assert heartbeat(c, a) == ErrorCode.UNKNOWN_MEMBER_ID
    run(scenario())


def test_group_max_size(tmp_path):
    async def scenario():
        async with running(tmp_path, group_max_size=1) as c:
            a = await join_new(c, client_id="a")
            await sync(c, a, [(a["member_id"], b"")])
            r = await join(c, client_id="b")
            assert r["error_code"] == int(ErrorCode.GROUP_MAX_SIZE_REACHED) and r["member_id"] == ""
            assert heartbeat(c, a) == ErrorCode.NONE  # the full group did not rebalance
    run(scenario())


def test_initial_rebalance_delay_collects_members(tmp_path):
    async def scenario():
        async with running(tmp_path, group_initial_rebalance_delay_ms=300) as c:
            tasks = [asyncio.create_task(join_new(c, client_id=f"m{i}", session=5000, rebalance=2000))
                     for i in range(3)]
            responses = await asyncio.gather(*tasks)
            assert {r["generation_id"] for r in responses} == {1}
            leaders = [r for r in responses if r["members"]]
            assert len(leaders) == 1 and len(leaders[0]["members"]) == 3
    run(scenario())


def test_sync_errors(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a = await join_new(c)
            r = await c.sync_group(group_id="g", generation_id=7, member_id=a["member_id"], group_instance_id=None,
                                   protocol_type=None, protocol_name=None, assignments=[])
            assert r["error_code"] == int(ErrorCode.ILLEGAL_GENERATION)
            r = await c.sync_group(group_id="g", generation_id=1, member_id=a["member_id"], group_instance_id=None,
                                   protocol_type="consumer", protocol_name="roundrobin", assignments=[])
            assert r["error_code"] == int(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            r = await c.sync_group(group_id="g", generation_id=1, member_id="ghost", group_instance_id=None,
                                   protocol_type=None, protocol_name=None, assignments=[])
            assert r["error_code"] == int(ErrorCode.UNKNOWN_MEMBER_ID)
            # The leader forgets a member in its assignment: that member gets an empty one.
            r = await sync(c, a, [])
            assert r["error_code"] == NONE and r["assignment"] == b""
    run(scenario())


# -- static membership ----------------------------------------------------------------------------

def test_static_member_restart_rejoins_without_rebalance(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a = await join(c, instance="inst-a", client_id="a")  # static members skip MEMBER_ID_REQUIRED
            assert a["error_code"] == NONE and a["member_id"].startswith("inst-a-")
            await sync(c, a, [(a["member_id"], b"A")], instance="inst-a")
            b_task = asyncio.create_task(join(c, instance="inst-b", client_id="b"))
            await asyncio.sleep(0.02)
            a = await join(c, member_id=a["member_id"], instance="inst-a", client_id="a")
            b = await b_task
            sb = asyncio.create_task(sync(c, b, instance="inst-b"))
            await sync(c, a, [(a["member_id"], b"A"), (b["member_id"], b"B")], instance="inst-a")
            await sb
            generation = a["generation_id"]
            # B restarts: it lost its member id but keeps its group.instance.id.
            b2 = await join(c, instance="inst-b", client_id="b")
            assert b2["error_code"] == NONE and b2["member_id"] != b["member_id"]
            assert b2["generation_id"] == generation
            assert b2["leader"] == a["member_id"] and b2["members"] == []
            s2 = await sync(c, b2, instance="inst-b")
            assert s2["assignment"] == b"B"  # its old assignment, no rebalance
            assert heartbeat(c, a, instance="inst-a") == ErrorCode.NONE
            assert c.describe_group("g")["group_state"] == "Stable"
            # The old incarnation (a zombie with the old member id) is fenced everywhere.
            assert heartbeat(c, b, instance="inst-b") == ErrorCode.FENCED_INSTANCE_ID
            r = await join(c, member_id=b["member_id"], instance="inst-b", client_id="b")
            assert r["error_code"] == int(ErrorCode.FENCED_INSTANCE_ID)
            r = await sync(c, b, instance="inst-b")
            assert r["error_code"] == int(ErrorCode.FENCED_INSTANCE_ID)
            errors = c.commit_offsets(group_id="g", generation_id=generation, member_id=b["member_id"],
                                      group_instance_id="inst-b", offsets=[("t", 0, 5, -1, None)])
            assert errors == {("t", 0): ErrorCode.FENCED_INSTANCE_ID}
            # The admin client removes a static member by instance id.
            error, results = c.leave_group(group_id="g", members=[("", "inst-b"), ("", "inst-x")])
            assert results == [("", "inst-b", ErrorCode.NONE), ("", "inst-x", ErrorCode.UNKNOWN_MEMBER_ID)]
            assert heartbeat(c, a, instance="inst-a") == ErrorCode.REBALANCE_IN_PROGRESS
    run(scenario())


def test_static_member_waiting_join_is_fenced_by_new_incarnation(tmp_path):
    async def scenario():
        async with running(tmp_path, group_initial_rebalance_delay_ms=500) as c:
            first = asyncio.create_task(join(c, instance="i", client_id="x"))
            await asyncio.sleep(0.05)
            second = asyncio.create_task(join(c, instance="i", client_id="x"))
            r1 = await first
            assert r1["error_code"] == int(ErrorCode.FENCED_INSTANCE_ID)
            r2 = await second
            assert r2["error_code"] == NONE and r2["generation_id"] == 1
    run(scenario())


# -- offsets --------------------------------------------------------------------------------------

def test_offset_commit_checks_and_fetch(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a, b = await stable_pair(c)
            gen = a["generation_id"]
            ok = c.commit_offsets(group_id="g", generation_id=gen, member_id=a["member_id"], group_instance_id=None,
                                  offsets=[("t", 0, 42, 3, "meta"), ("t", 1, 7, -1, None)])
            assert ok == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NONE}
            bad = c.commit_offsets(group_id="g", generation_id=gen - 1, member_id=a["member_id"],
                                   group_instance_id=None, offsets=[("t", 0, 1, -1, None)])
            assert bad == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
            bad = c.commit_offsets(group_id="g", generation_id=gen, member_id="ghost", group_instance_id=None,
                                   offsets=[("t", 0, 1, -1, None)])
            assert bad == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
            # A consumer outside the group (assign()) cannot commit while the group has members...
            bad = c.commit_offsets(group_id="g", generation_id=-1, member_id="", group_instance_id=None,
                                   offsets=[("t", 0, 1, -1, None)])
            assert bad == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
            big = c.commit_offsets(group_id="g", generation_id=gen, member_id=a["member_id"], group_instance_id=None,
                                   offsets=[("t", 0, 1, -1, "x" * 5000)])
            assert big == {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}
            # ...but can for a group that does not exist or is empty ("simple" consumers).
            simple = c.commit_offsets(group_id="solo", generation_id=-1, member_id="", group_instance_id=None,
                                      offsets=[("t", 0, 100, -1, "")])
            assert simple == {("t", 0): ErrorCode.NONE}
            assert c.commit_offsets(group_id="nogroup", generation_id=3, member_id="m", group_instance_id=None,
                                    offsets=[("t", 0, 1, -1, "")]) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}

            error, rows = c.fetch_offsets(group_id="g", partitions=[("t", 0), ("t", 1), ("t", 9)])
            assert error == ErrorCode.NONE
            assert rows == [("t", 0, 42, 3, "meta", ErrorCode.NONE), ("t", 1, 7, -1, "", ErrorCode.NONE),
                            ("t", 9, -1, -1, "", ErrorCode.NONE)]
            error, rows = c.fetch_offsets(group_id="g", partitions=None)
            assert [(t, p, o) for t, p, o, *_ in rows] == [("t", 0, 42), ("t", 1, 7)]
            assert c.fetch_offsets(group_id="unknown", partitions=None) == (ErrorCode.NONE, [])
            assert c.fetch_offsets(group_id="solo", partitions=[("t", 0)])[1][0][2] == 100
            _, listed = c.list_groups()
            assert {(g["group_id"], g["protocol_type"], g["group_state"]) for g in listed} == {
                ("g", "consumer", "Stable"), ("solo", "", "Empty")}
            _, listed = c.list_groups(["empty"])
            assert [g["group_id"] for g in listed] == ["solo"]
            # A commit during CompletingRebalance is told to wait for the rebalance.
            rejoin = asyncio.create_task(join(c, member_id=a["member_id"], client_id="a"))
            await asyncio.sleep(0.02)
            b2 = await join(c, member_id=b["member_id"], client_id="b")
            await rejoin
            early = c.commit_offsets(group_id="g", generation_id=b2["generation_id"], member_id=b["member_id"],
                                     group_instance_id=None, offsets=[("t", 1, 8, -1, None)])
            assert early == {("t", 1): ErrorCode.REBALANCE_IN_PROGRESS}
    run(scenario())


def test_state_survives_restart(tmp_path):
    async def first_life():
        async with running(tmp_path) as c:
            a, b = await stable_pair(c)
            c.commit_offsets(group_id="g", generation_id=a["generation_id"], member_id=a["member_id"],
                             group_instance_id=None, offsets=[("t", 0, 10, 1, "m0"), ("t", 1, 20, 1, "m1")])
            c.commit_offsets(group_id="g", generation_id=a["generation_id"], member_id=b["member_id"],
                             group_instance_id=None, offsets=[("t", 1, 21, 2, "m1b")])
            c.commit_offsets(group_id="solo", generation_id=-1, member_id="", group_instance_id=None,
                             offsets=[("u", 0, 5, -1, "")])
            c.commit_offsets(group_id="doomed", generation_id=-1, member_id="", group_instance_id=None,
                             offsets=[("u", 0, 6, -1, "")])
            assert c.delete_groups(["doomed"]) == [("doomed", ErrorCode.NONE)]
            return a, b

    a, b = run(first_life())

    async def second_life():
        async with running(tmp_path) as c:
            error, rows = c.fetch_offsets(group_id="g", partitions=None)
            assert rows == [("t", 0, 10, 1, "m0", ErrorCode.NONE), ("t", 1, 21, 2, "m1b", ErrorCode.NONE)]
            assert c.fetch_offsets(group_id="solo", partitions=[("u", 0)])[1][0][2] == 5
            assert "doomed" not in c.groups
            assert c.fetch_offsets(group_id="doomed", partitions=[("u", 0)])[1][0][2] == -1
            described = c.describe_group("g")
            assert described["group_state"] == "Stable"
            assert {m["member_id"] for m in described["members"]} == {a["member_id"], b["member_id"]}
            assert c.groups["g"].generation_id == a["generation_id"]
            # Members that kept running carry on with their generation: no rebalance needed.
            assert heartbeat(c, a) == ErrorCode.NONE and heartbeat(c, b) == ErrorCode.NONE
            r = await sync(c, b)
            assert r["assignment"] == assignment(("t", [1]))
            # The topic is there, internal and compacted, as Kafka creates it.
            broker = c.offsets_topic.broker
            meta = broker.metadata.topic(OFFSETS_TOPIC)
            assert meta.internal and meta.partitions == 5 and meta.configs["cleanup.policy"] == ["compact"]
            # Each group's records are in the partition Kafka would pick, keyed as Kafka keys them.
            used = {p for p in range(5) if broker.partition_log(OFFSETS_TOPIC, p).log_end_offset > 0}
            assert used == {partition_for(g, 5) for g in ("g", "solo", "doomed")}
            keys = [(int.from_bytes(r.key[:2], "big"), r.value is None)
                    for _, records in c.offsets_topic.read_batches(partition_for("doomed", 5)) for r in records
                    if b"doomed" in r.key]
            # OffsetCommitKey v1, then its tombstone and the GroupMetadataKey (v2) tombstone.
            assert keys == [(1, False), (1, True), (2, True)]

    run(second_life())


def test_records_are_kafka_4s_new_group_and_offset_commit_with_topic_id(tmp_path):
    """As Kafka 4.x's coordinator: a JoinGroup that creates a group writes an empty GroupMetadata record
    (v3: no protocol type, generation 0, no members) at once, even though it answers MEMBER_ID_REQUIRED, so
    the group is still listed after a restart; an OffsetCommit writes OffsetCommitValue v4 with the topic's
    id (tagged field 0), a TxnOffsetCommit v4 without one; batches carry base sequence 0."""
    from kafka_wire.internal_records import decode_internal_key, decode_offset_commit_value

    def records_of(c, group):
        return [(header, r) for header, records in c.offsets_topic.read_batches(partition_for(group, 5))
                for r in records if not header.is_control and group.encode() in r.key]

    async def first_life():
        async with running(tmp_path) as c:
            first = await join(c, "fresh")
            assert first["error_code"] == int(ErrorCode.MEMBER_ID_REQUIRED)
            [(header, record)] = records_of(c, "fresh")
            assert decode_internal_key(record.key).group == "fresh"
            state_timestamp = c.groups["fresh"].state_timestamp
            assert record.value == (b"\x00\x03" + b"\x00\x00" + b"\x00" * 4 + b"\xff\xff" * 2
                                    + state_timestamp.to_bytes(8, "big") + b"\x00" * 4)
            assert header.base_sequence == 0 and header.producer_id == -1
            topic = c.broker.create_topic("committed", 1, 1, {})
            c.commit_offsets(group_id="solo", generation_id=-1, member_id="", group_instance_id=None,
                             offsets=[("committed", 0, 7, -1, "")])
            [(header, record)] = records_of(c, "solo")
            assert record.value[:2] == b"\x00\x04" and header.base_sequence == 0
            assert record.value.endswith(b"\x01\x00\x10" + topic.topic_id.bytes)
            assert decode_offset_commit_value(record.value).topic_id == topic.topic_id
            # A commit for a topic this broker does not know has no id to write: no tagged field.
            c.commit_offsets(group_id="nameless", generation_id=-1, member_id="", group_instance_id=None,
                             offsets=[("unknown-topic", 0, 7, -1, "")])
            [(_, record)] = records_of(c, "nameless")
            assert record.value[:2] == b"\x00\x04" and record.value.endswith(b"\x00")
            assert len(record.value) == 24

    run(first_life())

    async def second_life():
        async with running(tmp_path) as c:
            _, groups = c.list_groups()
            assert {"group_id": "fresh", "group_state": "Empty"}.items() <= \
                next(g for g in groups if g["group_id"] == "fresh").items()

    run(second_life())


def test_restarted_group_members_expire_if_gone(tmp_path):
    async def first_life():
        async with running(tmp_path) as c:
            a = await join_new(c, session=300)
            await sync(c, a, [(a["member_id"], b"")])

    run(first_life())

    async def second_life():
        async with running(tmp_path) as c:
            assert c.describe_group("g")["group_state"] == "Stable"
            await asyncio.sleep(0.6)
            assert c.describe_group("g")["group_state"] == "Empty"

    run(second_life())


def test_delete_groups_and_offset_delete(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a = await join_new(c, topics=("t",))
            await sync(c, a, [(a["member_id"], b"")])
            c.commit_offsets(group_id="g", generation_id=1, member_id=a["member_id"], group_instance_id=None,
                             offsets=[("t", 0, 1, -1, ""), ("old", 0, 2, -1, "")])
            assert c.delete_groups(["g", "missing"]) == [("g", ErrorCode.NON_EMPTY_GROUP),
                                                         ("missing", ErrorCode.GROUP_ID_NOT_FOUND)]
            error, results = c.delete_offsets("g", [("t", 0), ("old", 0)])
            assert error == ErrorCode.NONE
            assert results == {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("old", 0): ErrorCode.NONE}
            assert c.fetch_offsets(group_id="g", partitions=[("old", 0)])[1][0][2] == -1
            assert c.delete_offsets("missing", [("t", 0)]) == (ErrorCode.GROUP_ID_NOT_FOUND, {})
            c.leave_group(group_id="g", members=[(a["member_id"], None)])
            error, results = c.delete_offsets("g", [("t", 0)])
            assert results == {("t", 0): ErrorCode.NONE}
            assert c.delete_groups(["g"]) == [("g", ErrorCode.NONE)]
            assert c.describe_group("g")["group_state"] == "Dead"
            _, listed = c.list_groups()
            assert listed == []
    run(scenario())


def test_offsets_expire_after_retention(tmp_path):
    clock = Clock()

    async def scenario():
        async with running(tmp_path, clock=clock, offsets_retention_minutes=1) as c:
            c.commit_offsets(group_id="solo", generation_id=-1, member_id="", group_instance_id=None,
                             offsets=[("t", 0, 5, -1, "")])
            a = await join_new(c)
            await sync(c, a, [(a["member_id"], b"")])
            c.commit_offsets(group_id="g", generation_id=1, member_id=a["member_id"], group_instance_id=None,
                             offsets=[("t", 0, 9, -1, "")])
            clock.offset += 61_000
            # A Stable consumer group keeps the offsets of topics it subscribes to.
            assert c.expire_offsets() == 1
            assert "solo" not in c.groups
            assert c.fetch_offsets(group_id="g", partitions=[("t", 0)])[1][0][2] == 9
            c.leave_group(group_id="g", members=[(a["member_id"], None)])
            assert c.expire_offsets() == 0  # retention counts from when the group became empty
            clock.offset += 61_000
            assert c.expire_offsets() == 1
            assert "g" not in c.groups

    run(scenario())

    async def after_restart():
        async with running(tmp_path, clock=clock) as c:
            assert c.groups == {}

    run(after_restart())


def test_transactional_offsets_commit_on_marker_and_replay(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            c.commit_offsets(group_id="tx", generation_id=-1, member_id="", group_instance_id=None,
                             offsets=[("t", 0, 1, -1, "")])
            errors = c.commit_transactional_offsets(group_id="tx", producer_id=7, producer_epoch=0,
                                                    generation_id=-1, member_id="", group_instance_id=None,
                                                    offsets=[("t", 0, 50, -1, "")])
            assert errors == {("t", 0): ErrorCode.NONE}
            assert c.fetch_offsets(group_id="tx", partitions=[("t", 0)])[1][0][2] == 1
            unstable = c.fetch_offsets(group_id="tx", partitions=[("t", 0)], require_stable=True)[1][0]
            assert unstable[2] == -1 and unstable[5] == ErrorCode.UNSTABLE_OFFSET_COMMIT
            # The transaction coordinator writes the COMMIT marker, then tells the group coordinator.
            partition = c.partition_for("tx")
            plog = c.offsets_topic.broker.partition_log(OFFSETS_TOPIC, partition)
            plog.append(bytearray(build_control_batch(True, 7, 0, 0)), leader_epoch=0,
                        origin=AppendOrigin.COORDINATOR)
            c.complete_transaction(7, [partition], committed=True)
            assert c.fetch_offsets(group_id="tx", partitions=[("t", 0)], require_stable=True)[1][0][2] == 50
            # An aborted transaction's offsets never count.
            c.commit_transactional_offsets(group_id="tx", producer_id=8, producer_epoch=0, generation_id=-1,
                                           member_id="", group_instance_id=None, offsets=[("t", 0, 99, -1, "")])
            plog.append(bytearray(build_control_batch(False, 8, 0, 0)), leader_epoch=0,
                        origin=AppendOrigin.COORDINATOR)
            c.complete_transaction(8, [partition], committed=False)
            assert c.fetch_offsets(group_id="tx", partitions=[("t", 0)])[1][0][2] == 50

    run(scenario())

    async def after_restart():
        async with running(tmp_path) as c:
            assert c.fetch_offsets(group_id="tx", partitions=[("t", 0)], require_stable=True)[1][0][2] == 50
            assert c.groups["tx"].pending_txn_offsets == {}

    run(after_restart())


def test_loading_and_stopped_coordinator_errors(tmp_path):
    async def scenario():
        c = GroupCoordinator()
        r = await join(c)
        assert r["error_code"] == int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        async with running(tmp_path, group_initial_rebalance_delay_ms=5000) as c:
            c.loading = True
            assert heartbeat(c, {"generation_id": 1, "member_id": "m"}) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            assert c.fetch_offsets(group_id="g", partitions=None)[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            c.loading = False
            waiting = asyncio.create_task(join_new(c))
            await asyncio.sleep(0.05)
            assert not waiting.done()  # parked for the initial rebalance delay
        # Stopping answers members parked in JoinGroup/SyncGroup.
        r = await waiting
        assert r["error_code"] == int(ErrorCode.NOT_COORDINATOR)

    run(scenario())


# -- handlers: responses encode at every version ----------------------------------------------------

@pytest.mark.parametrize("api_name", ["FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup",
                                      "OffsetCommit", "OffsetFetch", "DescribeGroups", "ListGroups",
                                      "DeleteGroups", "OffsetDelete"])
def test_handlers_answer_every_version(tmp_path, api_name):
    from broker.handlers import HANDLERS
    from broker.server import RequestContext
    from kafka_wire.messages import APIS_BY_NAME

    api = APIS_BY_NAME[api_name]
    handler = HANDLERS[api.key]
    topic_ids = {}  # OffsetCommit v10 names the topic by id

    def request_for(version):
        cls = api.request.cls
        builders = {
            "FindCoordinator": lambda: dict(key="g", key_type=0, coordinator_keys=["g", "h"]),
            "JoinGroup": lambda: dict(group_id=f"join-v{version}", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                                      member_id="", protocol_type="consumer", protocols=[
                                          cls.JoinGroupRequestProtocol(name="range", metadata=subscription("t"))]),
            "SyncGroup": lambda: dict(group_id="g", generation_id=1, member_id="nobody"),
            "Heartbeat": lambda: dict(group_id="g", generation_id=1, member_id="nobody"),
            "LeaveGroup": lambda: dict(group_id="g", member_id="nobody",
                                       members=[cls.MemberIdentity(member_id="nobody")]),
            "OffsetCommit": lambda: dict(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
                cls.OffsetCommitRequestTopic(name="t", topic_id=topic_ids["t"], partitions=[
                    cls.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=3, committed_metadata=None)])]),
            "OffsetFetch": lambda: dict(group_id="g", topics=[cls.OffsetFetchRequestTopic(
                name="t", partition_indexes=[0])], groups=[cls.OffsetFetchRequestGroup(group_id="g", topics=None)]),
            "DescribeGroups": lambda: dict(groups=["g", "x"], include_authorized_operations=True),
            "ListGroups": lambda: dict(states_filter=["Stable"]),
            "DeleteGroups": lambda: dict(groups_names=["x"]),
            "OffsetDelete": lambda: dict(group_id="g", topics=[cls.OffsetDeleteRequestTopic(
                name="t", partitions=[cls.OffsetDeleteRequestTopic.OffsetDeleteRequestPartition(partition_index=0)])]),
        }
        req = cls()
        for k, v in builders[api_name]().items():
            setattr(req, k, v)
        return req

    async def scenario():
        async with running(tmp_path) as c:
            c.offsets_topic.broker.create_topic("t", 1, 1, {})
            topic_ids["t"] = c.offsets_topic.broker.metadata.topic("t").topic_id
            for version in range(handler.min_version, handler.max_version + 1):
                ctx = RequestContext(api.key, version, 1, "client", "PLAINTEXT", ("127.0.0.1", 5555), 1)
                response = await handler.handle(c.offsets_topic.broker, ctx, request_for(version))
                data = api.response.encode(response, version).to_bytes()
                decoded = api.response.decode(data, version)
                if api_name == "FindCoordinator":
                    if version >= 4:
                        assert [x.key for x in decoded.coordinators] == ["g", "h"]
                        # Kafka 4.3: an empty message for a found coordinator at v4 ("NONE" at v1-3).
                        assert decoded.coordinators[0].error_message == ""
                    else:
                        assert decoded.error_code == 0 and decoded.port == 9092
                if api_name == "JoinGroup" and version >= 4:
                    assert decoded.error_code == int(ErrorCode.MEMBER_ID_REQUIRED)
                if api_name == "OffsetCommit":
                    assert decoded.topics[0].partitions[0].error_code == 0

    run(scenario())


# -- answers compared with Kafka 4.3.0 (compat/conformance/scenarios/groups_classic.py) --------------

def test_describe_group_shows_assignments_while_rebalancing(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            a, b = await stable_pair(c)
            c_task = asyncio.create_task(join_new(c, client_id="c"))
            await asyncio.sleep(0.05)
            described = c.describe_group("g")
            assert described["group_state"] == "PreparingRebalance"
            # Kafka's describeNoMetadata: no metadata outside Stable, but the last generation's assignment.
            by_id = {m["member_id"]: m for m in described["members"]}
            assert by_id[a["member_id"]]["member_assignment"] == assignment(("t", [0]))
            assert by_id[b["member_id"]]["member_assignment"] == assignment(("t", [1]))
            assert all(m["member_metadata"] == b"" for m in described["members"])
            c_task.cancel()
    run(scenario())


def test_offset_delete_with_an_empty_group_id_is_invalid(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            assert c.delete_offsets("", [("t", 0)]) == (ErrorCode.INVALID_GROUP_ID, {})
    run(scenario())


def test_sync_group_v5_requires_protocol_type_and_name(tmp_path):
    from broker.handlers import HANDLERS
    from broker.server import RequestContext
    from kafka_wire.messages import APIS_BY_NAME

    api = APIS_BY_NAME["SyncGroup"]

    async def scenario():
        async with running(tmp_path) as c:
            a = await join_new(c)
            for version, protocol_type, protocol_name, expected in [
                    (5, None, "range", ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
                    (5, "consumer", None, ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
                    (4, None, None, ErrorCode.NONE), (5, "consumer", "range", ErrorCode.NONE)]:
                request = api.request.cls(group_id="g", generation_id=a["generation_id"], member_id=a["member_id"],
                                          protocol_type=protocol_type, protocol_name=protocol_name, assignments=[])
                ctx = RequestContext(api.key, version, 1, "client", "PLAINTEXT", ("127.0.0.1", 5555), 1)
                response = await HANDLERS[api.key].handle(c.offsets_topic.broker, ctx, request)
                assert response["error_code"] == int(expected), (version, protocol_type, protocol_name)
    run(scenario())


def test_offset_commit_of_a_member_of_an_unknown_group_by_version(tmp_path):
    async def scenario():
        async with running(tmp_path) as c:
            for version, expected in [(8, ErrorCode.ILLEGAL_GENERATION), (9, ErrorCode.GROUP_ID_NOT_FOUND)]:
                assert c.commit_offsets(group_id="gone", generation_id=1, member_id="m", group_instance_id=None,
                                        offsets=[("t", 0, 1, -1, "")], api_version=version) == {("t", 0): expected}
    run(scenario())
