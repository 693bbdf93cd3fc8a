"""Partition reassignment's decisions (KIP-455), as Kafka's controller makes them; pure functions.

Kafka 4.x: ReplicationControlManager.alterPartitionReassignments (validateManualPartitionAssignment,
validatePartitionReplicationFactorUnchanged for KIP-860), PartitionReassignmentReplicas and
PartitionReassignmentRevert. A reassignment of a partition with replicas R to a target T:
- starts by making the replicas T followed by the members of R not in T (the union), recording
  adding = T - R and removing = R - T; the new replicas then fetch from the leader;
- completes once every member of T is in the ISR (without the removing ones, which must leave
  at least one): replicas = T, ISR = ISR minus removing, and a new leader, the first member of T
  in the ISR, if the leader is being removed; a move that only removes completes at once;
- is cancelled (target null) by dropping the adding replicas from the replicas and the ISR, which
  brings back the original ones; NO_REASSIGNMENT_IN_PROGRESS when none is ongoing.
The embedded single node and the ZooKeeper controller both validate with these.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_wire.errors import ErrorCode

NO_LEADER = -1


class ReassignmentRefused(Exception):
    """A partition's request Kafka refuses: its error code and message."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


@dataclass(frozen=True)
class Reassignment:
    """A partition's replicas with the ongoing reassignment's adding and removing replicas."""

    replicas: list[int]
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)

    @property
    def in_progress(self) -> bool:
        return bool(self.adding or self.removing)

    def target(self) -> list[int]:
        """Where the partition is going: the replicas without the removing ones."""
        return [r for r in self.replicas if r not in self.removing]


def validate_target(target: list[int], registered: Iterable[int]) -> None:
    """Kafka's validateManualPartitionAssignment: not empty, registered brokers, each once."""
    if not target:
        raise ReassignmentRefused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                  "The manual partition assignment includes an empty replica list.")
    known = set(registered)
    previous = None
    for broker in sorted(target):
        if broker not in known:
            raise ReassignmentRefused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                      f"The manual partition assignment includes broker {broker}, but no such "
                                      "broker is registered.")
        if broker == previous:
            raise ReassignmentRefused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                      f"The manual partition assignment includes the broker {broker} more than once.")
        previous = broker


def validate_replication_factor_unchanged(current: Reassignment, target: list[int]) -> None:
    """KIP-860 (AllowReplicationFactorChange=false): the count of replicas the partition is heading
    for (its target while a reassignment is ongoing) must stay as it is."""
    count = len(current.target())
    if count != len(target):
        raise ReassignmentRefused(ErrorCode.INVALID_REPLICATION_FACTOR,
                                  f"The replication factor is changed from {count} to {len(target)}")


def start(current: Reassignment, target: list[int]) -> Reassignment:
    """Kafka's PartitionReassignmentReplicas: replicas = target + the current ones not in it."""
    kept = set(target)
    existing = set(current.replicas)
    removing = [r for r in current.replicas if r not in kept]
    adding = [r for r in target if r not in existing]
    return Reassignment(list(target) + removing, adding, removing)


def maybe_complete(current: Reassignment, isr: list[int]) -> tuple[list[int], list[int]] | None:
    """(replicas, ISR) once every target replica is in the ISR; None while some are not."""
    if not current.in_progress:
        return None
    new_isr = [r for r in isr if r not in current.removing]
    new_replicas = current.target()
    if not new_isr or any(r not in new_isr for r in new_replicas):
        return None
    return new_replicas, new_isr


def revert(current: Reassignment, isr: list[int]) -> tuple[list[int], list[int]]:
    """Kafka's PartitionReassignmentRevert: (replicas, ISR) without the adding replicas. An ISR
    that would be empty (only adding replicas were in sync) needs an unclean election: the
    caller refuses unless unclean leader election is enabled for the topic."""
    replicas = [r for r in current.replicas if r not in current.adding]
    return replicas, [r for r in isr if r not in current.adding]


def choose_leader(leader: int, replicas: list[int], isr: list[int], live: set[int]) -> int:
    """The leader after a change of replicas: the current one if it stays in the ISR, else the
    first replica (in assignment order) that is live and in the ISR (PartitionChangeBuilder)."""
    if leader in replicas and leader in isr and leader in live:
        return leader
    for replica in replicas:
        if replica in isr and replica in live:
            return replica
    return NO_LEADER


def single_node_outcomes(metadata, node_id: int, requested: list[tuple[str, int, list[int] | None]],
                         allow_replication_factor_change: bool) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
    """The embedded single node: the only registered broker is this one, every partition is
    already on it, so the one valid target ([node id]) changes nothing and nothing is ever
    in progress to cancel. (error, message) per partition."""
    results = {}
    for topic, partition, target in requested:
        meta = metadata.topic(topic)
        try:
            if meta is None:
                raise ReassignmentRefused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                          f"Unable to find a topic named {topic}.")
            if not 0 <= partition < meta.partitions:
                raise ReassignmentRefused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                          f"Unable to find partition {topic}:{partition}.")
            if target is None:
                # Kafka 4.3's controller answers this one without a message (conformance suite).
                raise ReassignmentRefused(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
            validate_target(target, [node_id])
            if not allow_replication_factor_change:
                validate_replication_factor_unchanged(Reassignment([node_id]), target)
            results[(topic, partition)] = (ErrorCode.NONE, None)
        except ReassignmentRefused as refused:
            results[(topic, partition)] = (refused.error, refused.message)
    return results
