"""ElectLeaders' decisions (broker/leader_election.py) against Kafka's ReplicationControlManager
tests: testElectPreferredLeaders, testElectUncleanLeaders, testPreferredElectionDoesNotTriggerUncleanElection."""

from __future__ import annotations

from types import SimpleNamespace

from broker.leader_election import PREFERRED, UNCLEAN, elect_leaders, election_outcome
from kafka_wire.errors import ErrorCode


def test_preferred_election():
    live = {1, 2, 3, 4}
    assert election_outcome(PREFERRED, 2, [2, 3, 4], [2, 3, 4], live).error == ErrorCode.ELECTION_NOT_NEEDED
    moved = election_outcome(PREFERRED, 2, [1, 2, 3], [1, 2, 3], live)
    assert (moved.error, moved.leader, moved.isr) == (ErrorCode.NONE, 1, [1, 2, 3])
    # The preferred replica is down, or out of the ISR: not available (never an unclean election).
    assert election_outcome(PREFERRED, 2, [1, 2], [1, 2], {2}).error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert election_outcome(PREFERRED, 2, [2, 3], [1, 2, 3], live).error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert election_outcome(PREFERRED, -1, [1], [1, 2, 3], {2, 3}).error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE


def test_unclean_election():
    # A live leader needs no election.
    assert election_outcome(UNCLEAN, 4, [4], [2, 3, 4], {0, 4}).error == ErrorCode.ELECTION_NOT_NEEDED
    # No replica alive: nobody to elect.
    assert election_outcome(UNCLEAN, -1, [1], [1, 2, 3], {0, 4}).error == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    # A live replica outside the ISR becomes leader and the whole ISR.
    unclean = election_outcome(UNCLEAN, -1, [1], [1, 2, 3], {0, 2, 4})
    assert (unclean.error, unclean.leader, unclean.isr) == (ErrorCode.NONE, 2, [2])
    # A live ISR member is preferred over replicas outside the ISR.
    clean = election_outcome(UNCLEAN, -1, [1, 3], [1, 2, 3], {2, 3})
    assert (clean.leader, clean.isr) == (3, [3])


class Metadata:
    def __init__(self, states: dict[str, list[tuple[int, list[int], list[int]]]]) -> None:
        self.states = states
        self.topics = {name: SimpleNamespace(partitions=len(parts)) for name, parts in states.items()}

    def topic(self, name):
        return self.topics.get(name)

    def partition_state(self, topic, partition):
        parts = self.states.get(topic)
        if parts is None or not 0 <= partition < len(parts):
            return None
        leader, isr, replicas = parts[partition]
        return SimpleNamespace(leader=leader, isr=isr, replicas=replicas)


def test_named_partitions_are_all_answered_and_unknown_ones_say_so():
    metadata = Metadata({"foo": [(2, [1, 2, 3], [1, 2, 3]), (2, [2, 3, 4], [2, 3, 4])]})
    written = []

    def elect(topic, partition, outcome):
        written.append((topic, partition, outcome.leader))
        return outcome

    results = elect_leaders(metadata, PREFERRED, [("foo", 0), ("foo", 1), ("foo", 7), ("bar", 0)],
                            {1, 2, 3, 4}, elect)
    assert {tp: (o.error, o.message) for tp, o in results.items()} == {
        ("foo", 0): (ErrorCode.NONE, None),
        ("foo", 1): (ErrorCode.ELECTION_NOT_NEEDED, None),
        ("foo", 7): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as foo-7"),
        ("bar", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as bar"),
    }
    assert written == [("foo", 0, 1)]


def test_all_partitions_leave_out_those_that_needed_no_election():
    metadata = Metadata({"foo": [(2, [1, 2], [1, 2]), (2, [2, 1], [2, 1]), (-1, [3], [3, 1])]})
    results = elect_leaders(metadata, PREFERRED, None, {1, 2})
    assert {tp: o.error for tp, o in results.items()} == {
        ("foo", 0): ErrorCode.NONE, ("foo", 2): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE}
