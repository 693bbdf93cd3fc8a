"""Which brokers hold a partition's replicas: Kafka's rack-unaware assignment (AdminUtils).

Replicas spread over the brokers sorted by id: partition p's first replica is broker
(p + start) mod n, and the others follow at a shift that grows every n partitions, so leaders
(first replicas) are balanced and no two partitions share the same follower order needlessly.
"""

from __future__ import annotations

import random


class InvalidReplicationFactor(ValueError):
    """More replicas asked for than there are live brokers (INVALID_REPLICATION_FACTOR)."""


def _replica_index(first_replica_index: int, second_replica_shift: int, replica_index: int, brokers: int) -> int:
    shift = 1 + (second_replica_shift + replica_index) % (brokers - 1)
    return (first_replica_index + shift) % brokers


def assign_replicas(broker_ids: list[int], partitions: int, replication_factor: int, *,
                    start_index: int = -1, start_partition: int = 0, next_replica_shift: int = -1,
                    rng: random.Random | None = None) -> dict[int, list[int]]:
    """Partition -> replica list for partitions start_partition .. start_partition+partitions-1.

    start_index / next_replica_shift of -1 are chosen at random, as Kafka does."""
    if replication_factor <= 0:
        raise InvalidReplicationFactor("Replication factor must be larger than 0.")
    brokers = sorted(broker_ids)
    count = len(brokers)
    if replication_factor > count:
        raise InvalidReplicationFactor(
            f"Replication factor: {replication_factor} larger than available brokers: {count}.")
    rng = rng or random.Random()
    start = start_index if start_index >= 0 else rng.randrange(count)
    shift = next_replica_shift if next_replica_shift >= 0 else rng.randrange(count)
    assignment: dict[int, list[int]] = {}
    partition = max(0, start_partition)
    for _ in range(partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        first = (partition + start) % count
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[_replica_index(first, shift, j, count)])
        assignment[partition] = replicas
        partition += 1
    return assignment
