"""ElectLeaders' decisions: which replica an admin-requested election makes leader, and Kafka's
answer for each partition (ReplicationControlManager.electLeaders / electLeader in Kafka 4.x).

- preferred (0): the first replica of the assignment leads if it is live and in the ISR;
  ELECTION_NOT_NEEDED when it already leads, PREFERRED_LEADER_NOT_AVAILABLE when it cannot. A
  preferred election never falls back to an unclean one.
- unclean (1): only for a partition without a live leader: the first live ISR member, else the
  first live replica outside the ISR (which becomes the whole ISR); ELECTION_NOT_NEEDED when the
  leader is live, ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is.
- when the request names no partitions (every partition of the cluster), partitions that needed
  no election are left out of the answer.
Pure functions: the embedded broker and the cluster controller both use them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kafka_wire.errors import ErrorCode

PREFERRED, UNCLEAN = 0, 1
ELECTION_TYPES = (PREFERRED, UNCLEAN)
NO_LEADER = -1


@dataclass(frozen=True)
class Outcome:
    error: ErrorCode
    leader: int | None = None  # the new leader and ISR to write, when error is NONE
    isr: list[int] | None = None
    message: str | None = None


def election_outcome(election_type: int, leader: int, isr: list[int], replicas: list[int],
                     live: set[int]) -> Outcome:
    if election_type == PREFERRED:
        preferred = replicas[0] if replicas else NO_LEADER
        if leader == preferred and leader != NO_LEADER:
            return Outcome(ErrorCode.ELECTION_NOT_NEEDED)
        if preferred not in live or preferred not in isr:
            return Outcome(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)
        return Outcome(ErrorCode.NONE, preferred, list(isr))
    if leader != NO_LEADER and leader in live:
        return Outcome(ErrorCode.ELECTION_NOT_NEEDED)
    in_sync = [r for r in replicas if r in isr and r in live]
    if in_sync:
        return Outcome(ErrorCode.NONE, in_sync[0], [r for r in isr if r in live])
    alive = [r for r in replicas if r in live]
    if alive:
        return Outcome(ErrorCode.NONE, alive[0], [alive[0]])
    return Outcome(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)


# (topic, partition) -> the outcome; the caller's `elect` may turn a NONE into an error when the
# write fails (e.g. the controller lost its epoch).
Results = dict[tuple[str, int], Outcome]


def elect_leaders(metadata, election_type: int, requested: Iterable[tuple[str, int]] | None,
                  live: set[int], elect: Callable[[str, int, Outcome], Outcome] | None = None) -> Results:
    """Run the elections asked for against `metadata` (topic(name).partitions and
    partition_state(topic, partition) -> leader, isr, replicas)."""
    every_partition = requested is None
    if every_partition:
        requested = [(name, p) for name, meta in sorted(metadata.topics.items()) for p in range(meta.partitions)]
    results: Results = {}
    for topic, partition in requested:
        meta = metadata.topic(topic)
        if meta is None:
            results[(topic, partition)] = Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                  message=f"No such topic as {topic}")
            continue
        state = metadata.partition_state(topic, partition)
        if state is None:
            results[(topic, partition)] = Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                  message=f"No such partition as {topic}-{partition}")
            continue
        outcome = election_outcome(election_type, state.leader, state.isr, state.replicas, live)
        if outcome.error == ErrorCode.NONE and elect is not None:
            outcome = elect(topic, partition, outcome)
        if every_partition and outcome.error == ErrorCode.ELECTION_NOT_NEEDED:
            continue
        results[(topic, partition)] = outcome
    return results
