"""Client quotas without a server: Kafka's precedence of user / client-id quotas, the rate and
throttle time of a quota sensor, and the validation of AlterClientQuotas."""

from types import SimpleNamespace as NS

from broker.client_quotas import (
    ClientQuotaManager, RateSensor, describe, entity_key, plan_alterations, quota_for,
)
from kafka_wire.errors import ErrorCode


def test_precedence_is_kafkas():
    levels = [
        (((("user", "alice"), ("client-id", "app"))), ("alice", "app")),
        (((("user", "alice"), ("client-id", None))), ("alice", "app")),
        (((("user", "alice"),)), ("alice", "")),
        (((("user", None), ("client-id", "app"))), ("alice", "app")),
        (((("user", None), ("client-id", None))), ("alice", "app")),
        (((("user", None),)), ("alice", "")),
        (((("client-id", "app"),)), ("", "app")),
        (((("client-id", None),)), ("", "app")),
    ]
    quotas = {entity_key(parts): {"producer_byte_rate": float(i)} for i, (parts, _) in enumerate(levels)}
    # Remove the most specific level one at a time: the next one takes over, with its sensor tags.
    for i, (parts, tags) in enumerate(levels):
        assert quota_for(quotas, "producer_byte_rate", "alice", "app") == (float(i), tags)
        del quotas[entity_key(parts)]
    assert quota_for(quotas, "producer_byte_rate", "alice", "app") is None
    # Another key's quota does not count.
    other = {entity_key([("client-id", "app")]): {"consumer_byte_rate": 5.0}}
    assert quota_for(other, "producer_byte_rate", "alice", "app") is None


def test_rate_and_throttle_time():
    sensor = RateSensor()
    sensor.record(11_000, 0)
    # A young sensor counts as if 10 windows had passed (Kafka's Rate.windowSize).
    assert sensor.window_span_ms(0) == 10_000
    assert sensor.rate(0) == 1100.0
    manager = ClientQuotaManager("producer_byte_rate", lambda: {entity_key([("client-id", "app")]):
                                                                 {"producer_byte_rate": 1000.0}})
    assert manager.record_and_get_throttle_ms("u", "app", 5000, now_ms=0) == 0
    # 15 KB in 10 s against 1 KB/s: (1500 - 1000) / 1000 * 10 s.
    assert manager.record_and_get_throttle_ms("u", "app", 10_000, now_ms=0) == 5000
    assert manager.record_and_get_throttle_ms("u", "other", 10_000, now_ms=0) == 0
    # Old windows expire: 30 s later the rate is back under the quota.
    assert manager.record_and_get_throttle_ms("u", "app", 100, now_ms=30_000) == 0


def _entry(entity, **ops):
    return NS(entity=[NS(entity_type=t, entity_name=n) for t, n in entity],
              ops=[NS(key=k, value=v or 0.0, remove=v is None) for k, v in ops.items()])


def test_plan_alterations():
    alice = entity_key([("user", "alice")])
    current = {alice: {"producer_byte_rate": 100.0, "consumer_byte_rate": 5.0}}
    results, changes = plan_alterations(current, [
        _entry([("user", "alice")], producer_byte_rate=100.0, consumer_byte_rate=None, request_percentage=10.0),
        _entry([("client-id", "x")], producer_byte_rate=0.5),
        _entry([("client-id", "y"), ("client-id", "z")], controller_mutation_rate=2.5),
        _entry([("ip", None)], connection_creation_rate=3.0),
    ])
    assert [(e, err) for e, err, _ in results] == [
        (alice, ErrorCode.NONE), (entity_key([("client-id", "x")]), ErrorCode.INVALID_REQUEST),
        (entity_key([("client-id", "z")]), ErrorCode.NONE), (entity_key([("ip", None)]), ErrorCode.NONE)]
    # Unchanged values are not written again; a removal of a key that is set is.
    assert changes == {alice: {"consumer_byte_rate": None, "request_percentage": 10.0},
                       entity_key([("client-id", "z")]): {"controller_mutation_rate": 2.5},
                       entity_key([("ip", None)]): {"connection_creation_rate": 3.0}}


def test_describe_matching():
    quotas = {entity_key([("user", "a")]): {"k": 1.0},
              entity_key([("user", "a"), ("client-id", "c")]): {"k": 2.0},
              entity_key([("user", None)]): {"k": 3.0},
              entity_key([("client-id", "c")]): {"k": 4.0}}

    def names(components, strict=False):
        return sorted(str(e) for e, _ in describe(quotas, [NS(entity_type=t, match_type=m, match=n)
                                                           for t, m, n in components], strict))

    assert len(names([])) == 4
    assert names([], strict=True) == []
    assert names([("client-id", 2, None)]) == sorted([str(entity_key([("user", "a"), ("client-id", "c")])),
                                                      str(entity_key([("client-id", "c")]))])
    assert names([("user", 1, None)]) == [str(entity_key([("user", None)]))]


def test_idle_sensors_are_swept():
    manager = ClientQuotaManager("producer_byte_rate", lambda: {entity_key([("client-id", None)]):
                                                                 {"producer_byte_rate": 10.0}})
    for i in range(3000):  # a new client id every 100 ms: only those of the last 11 s stay
        manager.record_and_get_throttle_ms("u", f"client-{i}", 1, now_ms=i * 100)
    assert len(manager._sensors) <= 1024
    assert ((("", "client-2999"), 10.0)) in manager._sensors


def test_fetch_window_cap_and_unrecord():
    manager = ClientQuotaManager("consumer_byte_rate", lambda: {entity_key([("user", "bob")]):
                                                                 {"consumer_byte_rate": 1000.0}})
    assert manager.max_bytes_in_window("bob", "any") == 10_000
    assert manager.max_bytes_in_window("carol", "any") is None
    assert manager.record_and_get_throttle_ms("bob", "c", 10_000, now_ms=0, unrecord_if_throttled=True) == 0
    throttle = manager.record_and_get_throttle_ms("bob", "c", 10_000, now_ms=0, unrecord_if_throttled=True)
    assert throttle == 10_000
    # The throttled 10 KB were taken back: the same again gives the same answer.
    assert manager.record_and_get_throttle_ms("bob", "c", 10_000, now_ms=0, unrecord_if_throttled=True) == throttle


def test_workers_share_a_clients_windows():
    """Two workers' managers over one SharedRateWindows (as after the fork): a client whose bytes
    are split between them is throttled as if one process had counted them all; in another process
    (a forked child) the same table is seen."""
    import os

    from broker.workers.connection_counts import SharedRateWindows

    quotas = lambda: {entity_key([("client-id", "app")]): {"producer_byte_rate": 1000.0}}  # noqa: E731
    table = SharedRateWindows()
    first = ClientQuotaManager("producer_byte_rate", quotas, table)
    second = ClientQuotaManager("producer_byte_rate", quotas, table)
    assert first.record_and_get_throttle_ms("u", "app", 5000, now_ms=0) == 0
    # 15 KB in 10 s against 1 KB/s, the second 10 KB at the other worker: (1500 - 1000) / 1000 * 10 s.
    assert second.record_and_get_throttle_ms("u", "app", 10_000, now_ms=0) == 5000
    # Per worker, neither would be over: 10 KB in 10 s is 1 KB/s.
    alone = ClientQuotaManager("producer_byte_rate", quotas)
    assert alone.record_and_get_throttle_ms("u", "app", 10_000, now_ms=0) == 0
    pid = os.fork()
    if pid == 0:  # another worker: its 5 KB lands on the same windows
        code = 0 if ClientQuotaManager("producer_byte_rate", quotas, table).record_and_get_throttle_ms(
            "u", "app", 5000, now_ms=0) == 10000 else 1
        os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    # 20 KB in 10 s now, seen here too: (2000 - 1000) / 1000 * 10 s.
    assert first._sensors[(("", "app"), 1000.0)].rate(0) == 2000.0
    # Expired windows free the sensor's slot for the next one; the rate starts again.
    assert first.record_and_get_throttle_ms("u", "app", 100, now_ms=30_000) == 0
