"""coordinator/share_group.py: share group membership as Kafka 4.3's group coordinator keeps it:
ShareGroupHeartbeat joins, epochs, leaves, subscription changes, session expiry, the group size limit,
the errors Kafka answers (with its messages), the records written to __consumer_offsets, describe,
and the SimpleAssignor's balanced, sticky target assignment.
"""

from __future__ import annotations

import uuid

import pytest

from coordinator.share_group import (
    ShareGroupCoordinator,
    ShareGroupError,
    ShareGroupMember,
    ShareGroupState,
    simple_assign,
)
from kafka_wire import internal_records as ir
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

API = APIS_BY_NAME["ShareGroupHeartbeat"]
T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
TOPICS = {"t1": (T1, 4), "t2": (T2, 2)}


def coordinator(**kwargs) -> ShareGroupCoordinator:
    topics = kwargs.pop("topics", TOPICS)
    return ShareGroupCoordinator(lambda name: topics.get(name), **kwargs)


def hb(c, member, epoch, topics=None, now=0, group="g", rack=None):
    request = API.request(group_id=group, member_id=member, member_epoch=epoch,
                          subscribed_topic_names=topics, rack_id=rack)
    result = c.heartbeat(request, now, client_id="cid", client_host="/127.0.0.1")
    # Every answer encodes as a ShareGroupHeartbeat v1 response.
    API.response.decode(API.response.encode_bytes(result.response, 1), 1)
    return result


def assigned(response) -> dict:
    if response["assignment"] is None:
        return None
    return {tp["topic_id"]: set(tp["partitions"]) for tp in response["assignment"]["topic_partitions"]}


def record_types(records) -> list[tuple[int, bool]]:
    return [(int.from_bytes(k[:2], "big"), v is None) for k, v in records]


# -- joining and heartbeating ---------------------------------------------------------------------------


def test_first_member_joins_and_gets_every_partition():
    c = coordinator()
    result = hb(c, "m1", 0, ["t1"])
    r = result.response
    assert (r["error_code"], r["member_id"], r["member_epoch"], r["heartbeat_interval_ms"]) == (0, "m1", 1, 5000)
    assert assigned(r) == {T1: {0, 1, 2, 3}}
    assert c.groups["g"].state == ShareGroupState.STABLE
    # Member metadata, group epoch, target assignment (member, metadata), current assignment.
    assert record_types(result.records) == [
        (ir.SHARE_GROUP_MEMBER_METADATA, False), (ir.SHARE_GROUP_METADATA, False),
        (ir.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, False), (ir.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, False),
        (ir.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, False)]
    _, group, member, value = ir.decode_share_group_record(*result.records[0])
    assert (group, member, value.client_id, value.client_host, value.subscribed_topic_names) == \
        ("g", "m1", "cid", "/127.0.0.1", ["t1"])
    _, _, _, epoch = ir.decode_share_group_record(*result.records[1])
    assert epoch.epoch == 1
    _, _, _, current = ir.decode_share_group_record(*result.records[-1])
    assert (current.member_epoch, current.previous_member_epoch, current.state) == (1, 0, 0)
    assert [(tp.topic_id, tp.partitions) for tp in current.assigned_partitions] == [(T1, [0, 1, 2, 3])]


def test_second_member_splits_the_partitions_and_the_first_catches_up():
    c = coordinator()
    hb(c, "m1", 0, ["t1"])
    r2 = hb(c, "m2", 0, ["t1"]).response
    assert r2["member_epoch"] == 2
    r1 = hb(c, "m1", 1).response
    assert r1["member_epoch"] == 2
    a1, a2 = assigned(r1), assigned(r2)
    assert a1[T1] | a2[T1] == {0, 1, 2, 3} and not a1[T1] & a2[T1]
    assert len(a1[T1]) == len(a2[T1]) == 2
    # A steady heartbeat: same epoch, no assignment, no records.
    steady = hb(c, "m1", 2)
    assert steady.response["member_epoch"] == 2 and steady.response["assignment"] is None
    assert steady.records == []


def test_more_members_than_partitions_share_partitions():
    c = coordinator(topics={"t": (T1, 1)})
    responses = [hb(c, f"m{i}", 0, ["t"]).response for i in range(3)]
    for i in range(3):
        responses[i] = hb(c, f"m{i}", responses[i]["member_epoch"]).response
    # One partition, three members: every member gets it (a share group shares partitions).
    for r in responses:
        assert r["member_epoch"] == 3
    assert all(m.assigned_partitions == {T1: {0}} for m in c.groups["g"].members.values())


def test_subscription_change_bumps_the_group_epoch():
    c = coordinator()
    hb(c, "m1", 0, ["t1"])
    r = hb(c, "m1", 1, ["t1", "t2"]).response
    assert r["member_epoch"] == 2
    assert assigned(r) == {T1: {0, 1, 2, 3}, T2: {0, 1}}
    # The same subscription again changes nothing.
    same = hb(c, "m1", 2, ["t2", "t1"])
    assert same.response["member_epoch"] == 2 and same.records == []


def test_topic_created_later_is_assigned():
    topics = {}
    c = coordinator(topics=topics)
    r = hb(c, "m1", 0, ["later"]).response
    assert r["member_epoch"] == 1 and assigned(r) == {}
    topics["later"] = (T2, 2)
    r = hb(c, "m1", 1).response
    assert r["member_epoch"] == 2 and assigned(r) == {T2: {0, 1}}


def test_previous_epoch_is_accepted_once_bumped():
    c = coordinator()
    hb(c, "m1", 0, ["t1"])
    hb(c, "m2", 0, ["t1"])
    hb(c, "m1", 1)  # m1 now at epoch 2, previous 1
    r = hb(c, "m1", 1).response  # the answer with epoch 2 was lost
    assert r["error_code"] == 0 and r["member_epoch"] == 2


# -- errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("member,group,epoch,topics,rack,message", [
    ("", "g", 0, ["t1"], None, "MemberId can't be empty."),
    ("m", " ", 0, ["t1"], None, "GroupId can't be empty."),
    ("m", "g", 0, ["t1"], "", "RackId can't be empty."),
    ("m", "g", 0, None, None, "SubscribedTopicNames must be set in first request."),
    ("m", "g", 0, [], None, "SubscribedTopicNames must be set in first request."),
    ("m", "g", -2, None, None, "MemberEpoch is invalid."),
])
def test_invalid_requests(member, group, epoch, topics, rack, message):
    c = coordinator()
    result = hb(c, member, epoch, topics, group=group, rack=rack)
    assert (result.response["error_code"], result.response["error_message"]) == (int(ErrorCode.INVALID_REQUEST), message)
    assert result.records == [] and "g" not in c.groups


def test_unknown_member_and_unknown_group():
    c = coordinator()
    r = hb(c, "ghost", 3, group="nope").response
    assert (r["error_code"], r["error_message"]) == (int(ErrorCode.GROUP_ID_NOT_FOUND), "Share group nope not found.")
    hb(c, "m1", 0, ["t1"])
    r = hb(c, "ghost", 1).response
    assert (r["error_code"], r["error_message"]) == (int(ErrorCode.UNKNOWN_MEMBER_ID),
                                                    "Member ghost is not a member of group g.")
    r = hb(c, "ghost", -1).response
    assert r["error_code"] == int(ErrorCode.UNKNOWN_MEMBER_ID)


def test_fenced_member_epoch():
    c = coordinator()
    hb(c, "m1", 0, ["t1"])
    r = hb(c, "m1", 5).response
    assert r["error_code"] == int(ErrorCode.FENCED_MEMBER_EPOCH)
    assert r["error_message"] == ("The share group member has a greater member epoch (5) than the one known by "
                                  "the group coordinator (1). The member must abandon all its partitions and rejoin.")
    hb(c, "m2", 0, ["t1"])
    hb(c, "m1", 1)
    hb(c, "m2", 2)
    hb(c, "m3", 0, ["t1"])
    hb(c, "m1", 2)  # m1 at 3, previous 2
    r = hb(c, "m1", 1).response
    assert r["error_code"] == int(ErrorCode.FENCED_MEMBER_EPOCH)
    assert "smaller member epoch (1)" in r["error_message"] and "(3)" in r["error_message"]


def test_group_max_size():
    c = coordinator(max_size=2)
    hb(c, "m1", 0, ["t1"])
    hb(c, "m2", 0, ["t1"])
    r = hb(c, "m3", 0, ["t1"]).response
    assert (r["error_code"], r["error_message"]) == (
        int(ErrorCode.GROUP_MAX_SIZE_REACHED), "The share group has reached its maximum capacity of 2 members.")
    # Members already in keep heartbeating.
    assert hb(c, "m2", 2).response["error_code"] == 0


def test_a_group_of_another_type_is_not_a_share_group():
    c = coordinator()
    c.other_groups = lambda group_id: group_id == "classic"
    r = hb(c, "m", 0, ["t1"], group="classic").response
    assert (r["error_code"], r["error_message"]) == (int(ErrorCode.GROUP_ID_NOT_FOUND),
                                                    "Group classic is not a share group.")


# -- leaving and session expiry ---------------------------------------------------------------------------


def test_leave_rebalances_the_rest():
    c = coordinator()
    hb(c, "m1", 0, ["t1"])
    hb(c, "m2", 0, ["t1"])
    assert len(assigned(hb(c, "m1", 1).response)[T1]) == 2
    result = hb(c, "m2", -1)
    assert (result.response["member_id"], result.response["member_epoch"]) == ("m2", -1)
    assert record_types(result.records) == [
        (ir.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, True), (ir.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, True),
        (ir.SHARE_GROUP_MEMBER_METADATA, True), (ir.SHARE_GROUP_METADATA, False)]
    r = hb(c, "m1", 2).response
    assert r["member_epoch"] == 3 and assigned(r) == {T1: {0, 1, 2, 3}}
    hb(c, "m1", -1)
    assert c.groups["g"].state == ShareGroupState.EMPTY


def test_session_timeout_fences_silent_members():
    c = coordinator(session_timeout_ms=45_000)
    hb(c, "m1", 0, ["t1"], now=0)
    hb(c, "m2", 0, ["t1"], now=0)
    hb(c, "m1", 1, now=30_000)
    assert c.expire_sessions(44_999) == []
    records = c.expire_sessions(45_000)
    assert [m for _, _, m, _ in map(lambda kv: ir.decode_share_group_record(*kv), records) if m] == ["m2"] * 3
    assert set(c.groups["g"].members) == {"m1"}
    r = hb(c, "m1", 2, now=50_000).response
    assert r["member_epoch"] == 3 and assigned(r) == {T1: {0, 1, 2, 3}}
    assert c.expire_sessions(95_000) != []
    assert c.groups["g"].state == ShareGroupState.EMPTY


def test_assignment_is_computed_at_most_once_per_interval():
    c = coordinator(assignment_interval_ms=1000)
    assert hb(c, "m1", 0, ["t1"], now=5000).response["member_epoch"] == 1
    # Within the interval the group epoch moves on but the target assignment stays: the new member
    # joins at the last assignment epoch with nothing.
    r2 = hb(c, "m2", 0, ["t1"], now=5500).response
    assert (r2["member_epoch"], assigned(r2)) == (1, {})
    assert (c.groups["g"].group_epoch, c.groups["g"].assignment_epoch) == (2, 1)
    r1 = hb(c, "m1", 1, now=5999).response
    assert r1["member_epoch"] == 1 and r1["assignment"] is None
    # Once the interval has passed, the next heartbeat computes it.
    result = hb(c, "m2", 1, now=6000)
    assert result.response["member_epoch"] == 2 and len(assigned(result.response)[T1]) == 2
    metadata = [ir.decode_share_group_record(k, v)[3] for k, v in result.records
                if int.from_bytes(k[:2], "big") == ir.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA]
    assert [(m.assignment_epoch, m.assignment_timestamp) for m in metadata] == [(2, 6000)]


def test_heartbeat_interval_is_the_configured_one():
    c = coordinator(heartbeat_interval_ms=1234)
    assert hb(c, "m1", 0, ["t1"]).response["heartbeat_interval_ms"] == 1234


# -- describe and delete ------------------------------------------------------------------------------------


def test_describe():
    c = coordinator()
    hb(c, "m1", 0, ["t1"], rack="r1")
    described = c.describe("g", {T1: "t1"}.get)
    assert (described["group_state"], described["group_epoch"], described["assignment_epoch"],
            described["assignor_name"]) == ("Stable", 1, 1, "simple")
    [member] = described["members"]
    assert (member["member_id"], member["rack_id"], member["member_epoch"], member["client_id"]) == ("m1", "r1", 1, "cid")
    assert member["assignment"]["topic_partitions"] == [{"topic_id": T1, "topic_name": "t1", "partitions": [0, 1, 2, 3]}]
    describe = APIS_BY_NAME["ShareGroupDescribe"].response
    describe.decode(describe.encode_bytes({"groups": [described]}, 1), 1)
    missing = c.describe("none", {}.get)
    assert (missing["error_code"], missing["error_message"]) == (int(ErrorCode.GROUP_ID_NOT_FOUND),
                                                                "Share group none not found.")
    describe.decode(describe.encode_bytes({"groups": [missing]}, 1), 1)
    c.other_groups = lambda group_id: group_id == "classic"
    assert c.describe("classic", {}.get)["error_message"] == "Group classic is not a share group."


def test_delete_only_an_empty_group():
    c = coordinator()
    hb(c, "m1", 0, ["t1"])
    with pytest.raises(ShareGroupError) as info:
        c.delete_group("g")
    assert info.value.error == ErrorCode.NON_EMPTY_GROUP
    hb(c, "m1", -1)
    records = c.delete_group("g")
    assert all(v is None for _, v in records)
    assert "g" not in c.groups
    with pytest.raises(ShareGroupError):
        c.delete_group("g")


# -- SimpleAssignor ---------------------------------------------------------------------------------------


def members(*ids, topics=("t1",)):
    return {i: ShareGroupMember(i, subscribed_topic_names=list(topics)) for i in ids}


def counts(assignment):
    return {m: sum(len(p) for p in a.values()) for m, a in assignment.items()}


def test_assignor_balances_partitions():
    result = simple_assign(members("a", "b", "c"), {"t1": (T1, 7)})
    assert sorted(counts(result).values()) == [2, 2, 3]
    every = [p for a in result.values() for p in a[T1]]
    assert sorted(every) == list(range(7))


def test_assignor_shares_partitions_when_members_outnumber_them():
    result = simple_assign(members("a", "b", "c", "d", "e"), {"t1": (T1, 2)})
    # ceil(5 / 2) = 3 members per partition; 6 assignments over 5 members.
    holders = {p: sorted(m for m, a in result.items() if p in a.get(T1, ())) for p in (0, 1)}
    assert [len(holders[0]), len(holders[1])] == [3, 3]
    assert sorted(counts(result).values()) == [1, 1, 1, 1, 2]


def test_assignor_is_sticky():
    old = simple_assign(members("a", "b"), {"t1": (T1, 6)})
    new = simple_assign(members("a", "b", "c"), {"t1": (T1, 6)}, old)
    assert sorted(counts(new).values()) == [2, 2, 2]
    for m in ("a", "b"):
        assert new[m][T1] <= old[m][T1]  # a and b only gave partitions up
    # Stable input, stable output.
    assert simple_assign(members("a", "b", "c"), {"t1": (T1, 6)}, new) == new


def test_assignor_heterogeneous_subscriptions():
    group = members("a", "b", topics=("t1",))
    group.update(members("c", topics=("t1", "t2")))
    result = simple_assign(group, {"t1": (T1, 3), "t2": (T2, 2)})
    assert result["c"][T2] == {0, 1}
    assert T2 not in result["a"] and T2 not in result["b"]
    assert sorted(p for a in result.values() for p in a.get(T1, ())) == [0, 1, 2]


def test_assignor_skips_missing_topics_and_unassignable_partitions():
    result = simple_assign(members("a", topics=("t1", "gone")), {"t1": (T1, 4)},
                           assignable=lambda topic, partition: partition != 2)
    assert result == {"a": {T1: {0, 1, 3}}}
    assert simple_assign({}, {"t1": (T1, 4)}) == {}


# -- share state initialization (Kafka's initializedAssignmentPending) ------------------------------------


def test_a_partition_is_assigned_once_its_state_is_initialized_to_members_that_joined_meanwhile():
    c = coordinator(await_state_initialization=True, assignment_interval_ms=1000)
    joined = hb(c, "m1", 0, ["t2"], now=1000)
    # Nothing to assign yet: the join asks for the state of both partitions, recorded as initializing.
    assert (joined.response["member_epoch"], assigned(joined.response)) == (1, {})
    assert (joined.initialize, joined.state_epoch) == ({T2: {0, 1}}, 1)
    _, _, _, meta = ir.decode_share_group_record(*joined.records[-1])
    assert [(t.topic_id, t.topic_name, t.partitions) for t in meta.initializing_topics] == [(T2, "t2", [0, 1])]
    assert meta.initialized_topics == []
    # A second member joins within the assignment interval: nothing for it either, nothing asked again.
    second = hb(c, "m2", 0, ["t2"], now=1500)
    assert (second.response["member_epoch"], assigned(second.response), second.initialize) == (1, {}, {})
    records = c.state_initialized("g", {T2: {0, 1}})
    _, _, _, meta = ir.decode_share_group_record(*records[-1])
    assert (meta.initializing_topics, [(t.topic_id, t.partitions) for t in meta.initialized_topics]) == \
        ([], [(T2, [0, 1])])
    # The next heartbeat after the interval computes the assignment pending since m2 joined (epoch
    # 2), with the initialized partitions, one each; the other member gets its own at its next
    # heartbeat.
    r1 = hb(c, "m1", 1, now=6000).response
    assert (r1["member_epoch"], c.groups["g"].group_epoch) == (2, 2)
    r2 = hb(c, "m2", 1, now=6500).response
    assert r2["member_epoch"] == 2
    assert sorted([assigned(r1)[T2], assigned(r2)[T2]], key=sorted) == [{0}, {1}]
    # Nothing pending any more: the epoch stays.
    assert hb(c, "m1", 2, now=12000).response["member_epoch"] == 2 and c.groups["g"].group_epoch == 2


def test_initialized_partitions_missing_from_the_target_bump_the_group_epoch():
    c = coordinator(await_state_initialization=True, assignment_interval_ms=1000)
    assert assigned(hb(c, "m1", 0, ["t2"], now=1000).response) == {}
    c.state_initialized("g", {T2: {0, 1}})
    # The target (epoch 1) lacks what is initialized now: the next heartbeat bumps to 2 and assigns.
    r = hb(c, "m1", 1, now=6000).response
    assert (r["member_epoch"], c.groups["g"].group_epoch, assigned(r)) == (2, 2, {T2: {0, 1}})


def test_a_failed_initialization_is_asked_again_and_replayed_initialized_state_is_kept():
    c = coordinator(await_state_initialization=True, assignment_interval_ms=0)
    records = list(hb(c, "m1", 0, ["t2"], now=1000).records)
    records += c.state_initialization_failed("g", {T2: {0, 1}})
    again = hb(c, "m1", 1, ["t2"], now=2000)
    assert again.initialize == {T2: {0, 1}} and assigned(again.response) == {}
    records += again.records + c.state_initialized("g", {T2: {0, 1}})
    assert assigned(hb(c, "m1", 1, now=3000).response) == {T2: {0, 1}}
    # After a restart the initialized partitions are assigned at once to a member that joins.
    replayed = coordinator(await_state_initialization=True, assignment_interval_ms=0)
    for key, value in records:
        replayed.replay(*ir.decode_share_group_record(key, value), 5000)
    replayed.loaded()
    joined = hb(replayed, "m2", 0, ["t2"], now=6000)
    assert joined.initialize == {} and sum(len(p) for p in assigned(joined.response).values()) == 1
    # Deleting the group tombstones the record.
    replayed.groups["g"].members.clear()
    assert ir.SHARE_GROUP_STATE_PARTITION_METADATA in [t for t, _ in record_types(replayed.delete_group("g"))]


def test_an_initialization_left_unanswered_is_asked_again_after_the_retry_interval():
    c = coordinator(await_state_initialization=True, assignment_interval_ms=0)
    assert hb(c, "m1", 0, ["t2"], now=1000).initialize == {T2: {0, 1}}
    assert hb(c, "m1", 1, ["t2"], now=30_999).initialize == {}
    assert hb(c, "m1", 1, ["t2"], now=31_000).initialize == {T2: {0, 1}}
