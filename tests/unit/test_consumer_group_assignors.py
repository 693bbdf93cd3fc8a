"""Server-side assignors (uniform: balanced and sticky; range: contiguous ranges) and the
reconciliation step (a partition only moves once its previous owner revoked it)."""

from __future__ import annotations

import random
import uuid

import pytest

from coordinator.assignors import MemberSpec, assign, range_assign, uniform_assign
from coordinator.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    freeze,
    next_member_assignment,
    partitions_of,
)

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def counts(result) -> list[int]:
    return sorted(sum(len(p) for p in a.values()) for a in result.values())


def all_partitions(result) -> list:
    return sorted((t, p) for a in result.values() for t, parts in a.items() for p in parts)


def test_uniform_spreads_evenly_over_topics():
    members = {m: MemberSpec({T1, T2}) for m in ("a", "b", "c")}
    result = uniform_assign(members, {T1: 4, T2: 3})
    assert counts(result) == [2, 2, 3]
    assert all_partitions(result) == sorted([(T1, p) for p in range(4)] + [(T2, p) for p in range(3)])


def test_uniform_is_sticky_when_members_come_and_go():
    topics = {T1: 12}
    first = uniform_assign({m: MemberSpec({T1}) for m in ("a", "b", "c")}, topics)
    # d joins: everyone keeps at least what it can keep (3 of its 4), d gets one from each.
    second = uniform_assign({m: MemberSpec({T1}, first.get(m, {})) for m in ("a", "b", "c", "d")}, topics)
    assert counts(second) == [3, 3, 3, 3]
    for m in ("a", "b", "c"):
        assert second[m][T1] <= first[m][T1]
    # b leaves: a, c and d keep everything they had.
    third = uniform_assign({m: MemberSpec({T1}, second[m]) for m in ("a", "c", "d")}, topics)
    assert counts(third) == [4, 4, 4]
    for m in ("a", "c", "d"):
        assert second[m][T1] <= third[m][T1]
    assert all_partitions(third) == [(T1, p) for p in range(12)]


def test_uniform_with_different_subscriptions_only_gives_subscribed_topics():
    members = {"a": MemberSpec({T1}), "b": MemberSpec({T1, T2}), "c": MemberSpec({T2})}
    result = uniform_assign(members, {T1: 4, T2: 4})
    assert set(result["a"]) <= {T1} and set(result["c"]) <= {T2}
    assert counts(result) == [2, 3, 3]
    assert all_partitions(result) == sorted([(T1, p) for p in range(4)] + [(T2, p) for p in range(4)])


def test_range_gives_contiguous_ranges_and_lines_up_co_partitioned_topics():
    members = {m: MemberSpec({T1, T2}) for m in ("b", "a", "c")}
    result = range_assign(members, {T1: 7, T2: 7})
    assert result["a"][T1] == {0, 1, 2} and result["b"][T1] == {3, 4} and result["c"][T1] == {5, 6}
    for m in result:
        assert result[m][T1] == result[m][T2]


def test_unknown_assignor():
    with pytest.raises(ValueError):
        assign("sticky", {}, {})


def test_partitions_move_only_after_revocation():
    """Random memberships: members reconcile step by step as the coordinator answers them; a
    partition is never in two members' assignments at once, and everyone converges."""
    rng = random.Random(7)
    for round_ in range(20):
        group = ConsumerGroup("g", 0)
        topics = {T1: rng.randint(1, 10), T2: rng.randint(0, 5)}
        owned: dict[str, set] = {}
        names = [f"m{i}" for i in range(rng.randint(1, 5))]
        alive: list[str] = []
        for step in range(30):
            if names and (not alive or rng.random() < 0.3):
                name = names.pop()
                alive.append(name)
                group.members[name] = ConsumerGroupMember(name, subscribed_topic_names=("x",))
                owned[name] = set()
                bump = True
            elif len(alive) > 1 and rng.random() < 0.1:
                gone = alive.pop(rng.randrange(len(alive)))
                group.remove_member(gone)
                group.target.pop(gone, None)
                owned.pop(gone)
                bump = True
            else:
                bump = False
            if bump:
                group.group_epoch += 1
                specs = {m: MemberSpec({T1, T2}, {t: set(p) for t, p in group.target.get(m, {}).items()})
                         for m in alive}
                computed = uniform_assign(specs, topics)
                group.target = {m: freeze(computed[m]) for m in alive}
                group.assignment_epoch = group.group_epoch
            name = rng.choice(alive)
            member = group.members[name]
            after = next_member_assignment(member, group.assignment_epoch, group.target[name],
                                           group.partition_epoch, owned[name])
            group.put_member_assignment(name, after.member_epoch, after.previous_member_epoch, after.state,
                                        after.assigned, after.pending_revocation)
            # The client drops what it must revoke and takes what it was given.
            owned[name] = partitions_of(after.assigned)
            seen = set()
            for m in alive:
                assert not (owned[m] & seen), f"round {round_} step {step}: a partition is owned twice"
                seen |= owned[m]
        for _ in range(4 * len(alive)):
            for name in alive:
                member = group.members[name]
                after = next_member_assignment(member, group.assignment_epoch, group.target[name],
                                               group.partition_epoch, owned[name])
                group.put_member_assignment(name, after.member_epoch, after.previous_member_epoch, after.state,
                                            after.assigned, after.pending_revocation)
                owned[name] = partitions_of(after.assigned)
        assert all(group.members[m].is_reconciled_to(group.assignment_epoch) for m in alive)
        assert sorted(tp for m in alive for tp in owned[m]) == sorted(
            [(T1, p) for p in range(topics[T1])] + [(T2, p) for p in range(topics[T2])])
        assert group.state == "Stable"


def test_member_keeps_its_epoch_until_it_revokes():
    group = ConsumerGroup("g", 0)
    member = ConsumerGroupMember("a", member_epoch=1, assigned=freeze({T1: {0, 1}}))
    group.members["a"] = member
    group.put_member_assignment("a", 1, 0, MemberState.STABLE, member.assigned, {})
    after = next_member_assignment(member, 2, freeze({T1: {0}}), group.partition_epoch, {(T1, 0), (T1, 1)})
    assert after.state == MemberState.UNREVOKED_PARTITIONS and after.member_epoch == 1
    assert after.pending_revocation == {T1: frozenset({1})}
    # Still owning partition 1: no progress.
    assert next_member_assignment(after, 2, freeze({T1: {0}}), group.partition_epoch,
                                  {(T1, 0), (T1, 1)}) is after
    done = next_member_assignment(after, 2, freeze({T1: {0}}), group.partition_epoch, {(T1, 0)})
    assert done.state == MemberState.STABLE and done.member_epoch == 2
