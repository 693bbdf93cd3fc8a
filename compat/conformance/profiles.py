"""Broker settings a scenario may ask for, given to both brokers so their answers compare.

A profile names the Kafka properties (Kafka's names) set on both brokers, plus what each side needs
on top (the reference Kafka's KRaft and listener settings are in compat/reference_kafka.py). Only
settings whose defaults differ between the two, or that a scenario needs, appear here.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Profile:
    name: str
    common: dict = field(default_factory=dict)  # set on both brokers
    kafka_only: dict = field(default_factory=dict)  # the reference Kafka's way of doing the same
    ours_only: dict = field(default_factory=dict)  # kafka-wire's way of doing the same
    kafka_format_args: tuple = ()  # extra `kafka-storage format` arguments (e.g. --add-scram)
    doc: str = ""


COMMON = {
    # Kafka's default is 3000 ms (a first JoinGroup waits for more members); both 0 so group
    # scenarios do not wait, and the same on both sides.
    "group.initial.rebalance.delay.ms": 0,
    "num.partitions": 1,
    "default.replication.factor": 1,
    "offsets.topic.replication.factor": 1,
    "offsets.topic.num.partitions": 50,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.num.partitions": 50,
    "transaction.state.log.min.isr": 1,
    "auto.create.topics.enable": True,
    "delete.topic.enable": True,
    # Kafka's log.message.timestamp.*.ms checks are relative to now; the scenarios' records carry a
    # fixed timestamp (2023-11-14), so both accept any.
    "log.message.timestamp.before.max.ms": 9223372036854775807,
    "log.message.timestamp.after.max.ms": 9223372036854775807,
}

PROFILES: dict[str, Profile] = {
    "default": Profile("default", dict(COMMON), doc="a single node with the settings both share"),
    "small-groups": Profile("small-groups", dict(COMMON, **{"group.max.size": 2,
                                                          "group.min.session.timeout.ms": 6000,
                                                          "group.max.session.timeout.ms": 30000}),
                            doc="group.max.size 2 and a narrow session timeout range (GROUP_MAX_SIZE_REACHED, "
                                "INVALID_SESSION_TIMEOUT)"),
    "consumer-groups": Profile("consumer-groups", dict(COMMON),
                               kafka_only={"group.consumer.assignment.interval.ms": 0},
                               doc="Kafka 4.3 computes a KIP-848 group's new target assignment at most once per "
                                   "group.consumer.assignment.interval.ms (1 s) after the heartbeat that changed "
                                   "the group; kafka-wire computes it in that heartbeat, which is Kafka with 0"),
}
