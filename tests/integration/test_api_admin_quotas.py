"""DescribeClientQuotas and AlterClientQuotas as Apache Kafka answers them, through WireClient and
Java's Admin (what kafka-configs.sh --entity-type users/clients/ips and the Kafka UIs call), and the
quotas taking effect: a producer over its producer_byte_rate is told to wait (throttle_time_ms).

Sources (apache/kafka): metadata/.../controller/ClientQuotaControlManager.java (validation),
metadata/.../image/ClientQuotasImage.java describe (filters), core/.../server/ClientQuotaManager.scala
(precedence of user / client-id quotas, throttle time).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from testing.broker_process import running_broker
from client import WireClient

from wire_cases import batch, create_topic, error_name, unique

CLIENTS = Path(__file__).resolve().parent.parent / "clients"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


@pytest.fixture(scope="module")
def quota_broker(tmp_path_factory):
    with running_broker(tmp_path_factory.mktemp("quotas")) as broker:
        yield broker


@pytest.fixture
def client(quota_broker):
    with WireClient(quota_broker.bootstrap) as c:
        yield c


def _entity(**names) -> list[dict]:
    return [{"entity_type": kind.replace("_", "-"), "entity_name": name} for kind, name in names.items()]


def alter(client, entries: list[tuple[list[dict], dict]], validate_only: bool = False, version: int = 1):
    """entries: (entity, {key: value or None to remove})."""
    response = client.call("AlterClientQuotas", version, {"entries": [
        {"entity": entity, "ops": [{"key": k, "value": v or 0.0, "remove": v is None} for k, v in ops.items()]}
        for entity, ops in entries], "validate_only": validate_only})
    return [(error_name(e.error_code), e.error_message) for e in response.entries]


def describe(client, components: list[tuple[str, int, str | None]] = (), strict: bool = False, version: int = 1):
    response = client.call("DescribeClientQuotas", version, {"components": [
        {"entity_type": t, "match_type": m, "match": n} for t, m, n in components], "strict": strict})
    if response.error_code:
        return error_name(response.error_code), response.error_message, response.entries
    return {tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)):
            {v.key: v.value for v in entry.values} for entry in response.entries}


def produce_throttle(client, topic: str, nbytes: int = 4000) -> int:
    response = client.call("Produce", 9, {"transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch([b"v" * nbytes])}]}]})
    assert response.responses[0].partition_responses[0].error_code == 0
    return response.throttle_time_ms


def test_alter_then_describe_with_filters(client):
    user, app = unique("alice"), unique("app")
    assert alter(client, [
        (_entity(user=user), {"producer_byte_rate": 1024, "consumer_byte_rate": 2048}),
        (_entity(user=user, client_id=app), {"request_percentage": 12.5}),
        (_entity(user=None), {"controller_mutation_rate": 3.0}),
        (_entity(client_id=None), {"producer_byte_rate": 1e6}),
        (_entity(ip="10.1.2.3"), {"connection_creation_rate": 5}),
    ]) == [("NONE", None)] * 5
    everything = describe(client)
    assert everything[(("user", user),)] == {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}
    assert everything[(("client-id", app), ("user", user))] == {"request_percentage": 12.5}
    assert everything[(("user", None),)] == {"controller_mutation_rate": 3.0}
    assert everything[(("ip", "10.1.2.3"),)] == {"connection_creation_rate": 5.0}
    # Exact user: its own entity and the user+client one; strict: only its own.
    assert set(describe(client, [("user", MATCH_EXACT, user)])) == {(("user", user),),
                                                                    (("client-id", app), ("user", user))}
    assert set(describe(client, [("user", MATCH_EXACT, user)], strict=True)) == {(("user", user),)}
    assert set(describe(client, [("user", MATCH_DEFAULT, None)], strict=True)) == {(("user", None),)}
    assert set(describe(client, [("user", MATCH_EXACT, user), ("client-id", MATCH_SPECIFIED, None)])) == {
        (("client-id", app), ("user", user))}
    assert set(describe(client, [("ip", MATCH_SPECIFIED, None)], version=0)) == {(("ip", "10.1.2.3"),)}
    # Removing a key, and the last key of an entity removes the entity.
    assert alter(client, [(_entity(user=user), {"consumer_byte_rate": None})]) == [("NONE", None)]
    assert alter(client, [(_entity(user=user, client_id=app), {"request_percentage": None})]) == [("NONE", None)]
    after = describe(client, [("user", MATCH_EXACT, user)])
    assert after == {(("user", user),): {"producer_byte_rate": 1024.0}}
    # validate_only changes nothing.
    assert alter(client, [(_entity(user=user), {"producer_byte_rate": 1})], validate_only=True) == [("NONE", None)]
    assert describe(client, [("user", MATCH_EXACT, user)]) == after
    alter(client, [(_entity(user=None), {"controller_mutation_rate": None}),
                   (_entity(client_id=None), {"producer_byte_rate": None}),
                   (_entity(ip="10.1.2.3"), {"connection_creation_rate": None})])


def test_alter_errors_as_kafka(client):
    name = unique("bad")
    results = alter(client, [
        (_entity(user=name), {"no_such_quota": 1}),
        (_entity(client_id=name), {"producer_byte_rate": 10.5}),
        (_entity(client_id=name + "x"), {"consumer_byte_rate": -1}),
        (_entity(ip="10.0.0.1", user=name), {"connection_creation_rate": 1}),
        (_entity(ip="10.0.0.2"), {"producer_byte_rate": 1}),
        (_entity(ip="not a host name!"), {"connection_creation_rate": 1}),
        ([{"entity_type": "group", "entity_name": name}], {"producer_byte_rate": 1}),
        ([], {"producer_byte_rate": 1}),
        (_entity(user=""), {"producer_byte_rate": 1}),
        (_entity(client_id=name + "y"), {"request_percentage": 1.0}),
    ])
    assert results == [
        ("INVALID_REQUEST", "Invalid configuration key no_such_quota"),
        ("INVALID_REQUEST", "producer_byte_rate cannot be a fractional value."),
        ("INVALID_REQUEST", "Quota consumer_byte_rate must be greater than 0"),
        ("INVALID_REQUEST", "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
        ("INVALID_REQUEST", "Invalid configuration key producer_byte_rate"),
        ("INVALID_REQUEST", "not a host name! is not a valid IP or resolvable host."),
        ("INVALID_REQUEST", "Unhandled client quota entity type: group"),
        ("INVALID_REQUEST", "Invalid empty client quota entity"),
        ("INVALID_REQUEST", "Empty user not supported"),
        ("NONE", None),
    ]
    # Only the valid entry was stored.
    assert describe(client, [("client-id", MATCH_EXACT, name + "y")]) == {
        (("client-id", name + "y"),): {"request_percentage": 1.0}}
    assert describe(client, [("client-id", MATCH_EXACT, name)]) == {}


def test_describe_filter_errors(client):
    assert describe(client, [("user", MATCH_EXACT, None)])[:2] == (
        "INVALID_REQUEST", "Request specified MATCH_TYPE_EXACT, but set match string to null.")
    assert describe(client, [("user", MATCH_DEFAULT, "x")])[:2] == (
        "INVALID_REQUEST", "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
    assert describe(client, [("user", MATCH_SPECIFIED, None), ("user", MATCH_SPECIFIED, None)])[:2] == (
        "INVALID_REQUEST", "Entity type user cannot appear more than once in the filter.")
    assert describe(client, [("group", MATCH_SPECIFIED, None)]) == (
        "UNSUPPORTED_VERSION", "Unsupported entity type group", None)
    assert describe(client, [("ip", MATCH_SPECIFIED, None), ("user", MATCH_SPECIFIED, None)])[0] == "INVALID_REQUEST"


def test_producer_quota_throttles_live_with_kafkas_precedence(quota_broker, client):
    """A client-id quota throttles that client's produce requests (throttle_time_ms > 0), not
    another client's; a user-level quota outranks the client-id one; removing it brings the
    client-id quota back."""
    topic, slow = unique("throttled"), unique("slow-client")
    create_topic(client, topic)
    assert alter(client, [(_entity(client_id=slow), {"producer_byte_rate": 1024})]) == [("NONE", None)]
    with WireClient(quota_broker.bootstrap, client_id=slow) as slow_client, \
            WireClient(quota_broker.bootstrap, client_id=unique("free-client")) as free_client:
        # The rate is measured over an 11 s span: ~12 KB in a burst is well over 1 KB/s.
        throttles = [produce_throttle(slow_client, topic) for _ in range(4)]
        assert throttles[-1] > 0
        assert [produce_throttle(free_client, topic) for _ in range(4)] == [0] * 4
        # A quota for the user (ANONYMOUS here) comes before any client-id quota.
        assert alter(client, [(_entity(user="ANONYMOUS"), {"producer_byte_rate": 1e9})]) == [("NONE", None)]
        assert [produce_throttle(slow_client, topic) for _ in range(4)] == [0] * 4
        assert alter(client, [(_entity(user="ANONYMOUS"), {"producer_byte_rate": None})]) == [("NONE", None)]
        assert max(produce_throttle(slow_client, topic) for _ in range(4)) > 0
        # The default client-id quota applies to clients without one of their own.
        assert alter(client, [(_entity(client_id=slow), {"producer_byte_rate": None}),
                              (_entity(client_id=None), {"producer_byte_rate": 2048})]) == [("NONE", None)] * 2
        assert max(produce_throttle(free_client, topic) for _ in range(6)) > 0
        assert alter(client, [(_entity(client_id=None), {"producer_byte_rate": None})]) == [("NONE", None)]
        assert produce_throttle(free_client, topic) == 0


def test_quotas_survive_restart_and_java_admin(broker, java_kafka_clients):
    command = [*java_kafka_clients("4.3.0").program(CLIENTS / "java" / "AdminConfigsCheck.java"), broker.bootstrap]

    def java(*args) -> list[str]:
        done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout.splitlines()

    assert java("alter-quota", "user=alice,client-id=<default>", "producer_byte_rate=4096",
                "consumer_byte_rate=8192") == ["ALTERED"]
    assert java("alter-quota", "client-id=reports", "request_percentage=50.5") == ["ALTERED"]
    assert java("alter-quota", "ip=127.0.0.1", "connection_creation_rate=10") == ["ALTERED"]
    refused = java("alter-quota", "user=bob", "no_such_quota=1")
    assert refused == ["ERROR InvalidRequestException Invalid configuration key no_such_quota"]
    expected = [
        "QUOTA {client-id=<default>,user=alice} {consumer_byte_rate=8192.0, producer_byte_rate=4096.0}",
        "QUOTA {client-id=reports} {request_percentage=50.5}",
        "QUOTA {ip=127.0.0.1} {connection_creation_rate=10.0}",
    ]
    assert java("describe-quotas") == expected
    broker.restart()
    assert java("describe-quotas") == expected
    assert java("alter-quota", "client-id=reports", "request_percentage=-") == ["ALTERED"]
    assert java("describe-quotas") == [expected[0], expected[2]]


def test_consumer_quota_throttles_fetches(quota_broker, client):
    """A consumer over its consumer_byte_rate gets Kafka's throttled answer: empty, with the time
    to wait; its fetches are never larger than the quota allows in a window (10 s of it)."""
    topic, reader = unique("fetch-throttled"), unique("reader")
    create_topic(client, topic)
    for _ in range(6):
        produce_throttle(client, topic, nbytes=8000)
    assert alter(client, [(_entity(client_id=reader), {"consumer_byte_rate": 1024})]) == [("NONE", None)]

    def fetch(c):
        return c.call("Fetch", 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                                    "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                                        {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                                         "partition_max_bytes": 1 << 20,
                                                                         "current_leader_epoch": -1}]}]})

    with WireClient(quota_broker.bootstrap, client_id=reader) as slow, \
            WireClient(quota_broker.bootstrap, client_id=unique("other-reader")) as other:
        first = fetch(slow)
        assert first.throttle_time_ms == 0
        # Capped at 10 KB (one 8 KB batch) instead of all six batches.
        assert 8000 < len(first.responses[0].partitions[0].records) < 10240
        throttled = [fetch(slow) for _ in range(3)]
        assert throttled[0].throttle_time_ms > 0 and throttled[0].responses == []
        # The throttled fetches were not counted: the throttle time does not grow with each
        # (counting another 8 KB would add about 8 s).
        times = [r.throttle_time_ms for r in throttled]
        assert max(times) - min(times) < 1000
        unthrottled = fetch(other)
        assert unthrottled.throttle_time_ms == 0 and len(unthrottled.responses[0].partitions[0].records) > 6 * 8000
