"""Broker settings a scenario may ask for, given to both brokers so their answers compare.

A profile names the Kafka properties (Kafka's names) set on both brokers, plus what each side needs
on top (the reference Kafka's KRaft and listener settings are in compat/reference_kafka.py). Only
settings whose defaults differ between the two, or that a scenario needs, appear here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Ports:
    """The free ports the runner picked for a profile's brokers: each broker's PLAINTEXT listener (its
    own: readiness checks, Kafka's inter-broker traffic), Kafka's controller listener, and the
    listener the scenarios' clients use when the profile has one of its own."""

    kafka: int
    kafka_controller: int
    kafka_client: int
    ours: int
    ours_client: int


@dataclass(frozen=True)
class Profile:
    name: str
    common: dict = field(default_factory=dict)  # set on both brokers
    kafka_only: dict = field(default_factory=dict)  # the reference Kafka's way of doing the same
    ours_only: dict = field(default_factory=dict)  # kafka-wire's way of doing the same
    kafka_format_args: tuple = ()  # extra `kafka-storage format` arguments (e.g. --add-scram)
    # A client listener of the profile's own: Ports -> (Kafka's settings, kafka-wire's settings); the
    # scenarios then talk to kafka_client/ours_client, logged in as `client_login` (a user of scram_users).
    client_listener: Callable[[Ports], tuple[dict, dict]] | None = None
    client_login: tuple[str, str] | None = None  # (SASL mechanism, user)
    # SCRAM-SHA-256 users on both brokers (Kafka: `kafka-storage format --add-scram`; kafka-wire: its
    # credential store, written before it starts): {name: password}.
    scram_users: dict = field(default_factory=dict)
    # False: the scenarios meet the brokers as they start, before any group or transaction coordinator
    # exists (run.py otherwise waits for both coordinators first).
    warm: bool = True
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
    # fixed timestamp (scenario.T0, in 2100), so both accept any.
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
    "consumer-groups": Profile("consumer-groups", dict(COMMON, **{"group.consumer.assignment.interval.ms": 0}),
                               doc="no assignment interval (both compute a KIP-848 group's new target assignment "
                                   "at most once per group.consumer.assignment.interval.ms, 1 s, by default: a "
                                   "scenario's heartbeats come faster; consumer_heartbeat_assignment_interval sets "
                                   "one on its group)"),
    "streams-groups": Profile("streams-groups", dict(COMMON, **{"group.streams.initial.rebalance.delay.ms": 0,
                                                                "group.streams.assignment.interval.ms": 0}),
                              doc="no initial rebalance delay for new streams groups (both brokers delay the "
                                  "first assignment by group.streams.initial.rebalance.delay.ms, 3 s, by "
                                  "default: the secure profile's scenario shows it), and no assignment interval "
                                  "(both compute a new target assignment at most once per "
                                  "group.streams.assignment.interval.ms, 1 s, by default: a scenario's "
                                  "heartbeats come faster)"),
}


# -- secure: SASL_PLAINTEXT for clients, ACLs ---------------------------------------------------------------
SECURE_USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


def _secure_listeners(ports: Ports) -> tuple[dict, dict]:
    """Clients on SASL_PLAINTEXT; each broker keeps its PLAINTEXT listener (Kafka's inter-broker and
    controller traffic is User:ANONYMOUS there, a super user on both so that both answer the same)."""
    kafka_listeners = f"PLAINTEXT://127.0.0.1:{ports.kafka},SASL_PLAINTEXT://127.0.0.1:{ports.kafka_client}"
    plain_users = " ".join(f'user_{name}="{password}"' for name, password in SECURE_USERS.items())
    kafka = {
        "listeners": f"{kafka_listeners},CONTROLLER://127.0.0.1:{ports.kafka_controller}",
        "advertised.listeners": kafka_listeners,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        # Kafka's PLAIN users are the listener's JAAS users; kafka-wire checks PLAIN against the SCRAM store.
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    }
    ours = {"listeners": f"PLAINTEXT://127.0.0.1:{ports.ours},SASL_PLAINTEXT://127.0.0.1:{ports.ours_client}"}
    return kafka, ours


PROFILES["secure"] = Profile(
    "secure", dict(COMMON, **{
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,PLAIN",
        "allow.everyone.if.no.acl.found": False,
    }),
    client_listener=_secure_listeners, client_login=("SCRAM-SHA-256", "admin"), scram_users=dict(SECURE_USERS),
    doc="clients on SASL_PLAINTEXT (SCRAM-SHA-256 and PLAIN; users admin, alice, bob), Kafka's StandardAuthorizer, "
        "super user admin; the scenarios log in as admin unless they say otherwise")

PROFILES["cold"] = Profile("cold", dict(COMMON), warm=False,
                           doc="brokers no client has used yet: no __consumer_offsets, no __transaction_state")
