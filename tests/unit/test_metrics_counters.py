"""broker/metrics.py and broker/metrics_endpoint.py without a server: what the counters record,
how a scrape renders them, the broker state read at scrape time, and the HTTP answers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from broker import metrics
from broker.metrics_endpoint import MetricsEndpoint, build_registry, render


def _samples(registry) -> dict[tuple[str, tuple], float]:
    text = render(registry).decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_requests_latency_bytes_and_connections_are_rendered():
    stats = metrics.RequestStats()
    stats.observe("Produce", 9, 0.0005, 1000, 60)   # exactly on a bucket bound: counts in it
    stats.observe("Produce", 9, 0.003, 500, 60)
    stats.observe("Produce", 7, 100.0, 10, 0)       # beyond the last bound: only +Inf
    stats.observe("Fetch", 12, 0.2, 80, 5000)
    stats.connections_open, stats.connections_created = 2, 5
    samples = _samples(build_registry(None, stats))

    def get(name, **labels):
        return samples[(name, tuple(sorted(labels.items())))]

    assert get("kafka_wire_requests_total", api="Produce", version="9") == 2
    assert get("kafka_wire_requests_total", api="Produce", version="7") == 1
    assert get("kafka_wire_request_duration_seconds_bucket", api="Produce", version="9", le="0.0005") == 1
    assert get("kafka_wire_request_duration_seconds_bucket", api="Produce", version="9", le="0.0025") == 1
    assert get("kafka_wire_request_duration_seconds_bucket", api="Produce", version="9", le="0.005") == 2
    assert get("kafka_wire_request_duration_seconds_bucket", api="Produce", version="7", le="30.0") == 0
    assert get("kafka_wire_request_duration_seconds_bucket", api="Produce", version="7", le="+Inf") == 1
    assert get("kafka_wire_request_duration_seconds_count", api="Fetch", version="12") == 1
    assert get("kafka_wire_request_duration_seconds_sum", api="Produce", version="9") == pytest.approx(0.0035)
    assert get("kafka_wire_bytes_in_total", api="Produce") == 1510  # summed over versions
    assert get("kafka_wire_bytes_out_total", api="Fetch") == 5000
    assert get("kafka_wire_connections") == 2
    assert get("kafka_wire_connections_created_total") == 5
    assert ("process_resident_memory_bytes", ()) in samples


def test_module_functions_feed_the_process_statistics(monkeypatch):
    stats = metrics.RequestStats()
    monkeypatch.setattr(metrics, "STATS", stats)
    metrics.observe_request("Metadata", 12, 0.001, 40, 400)
    metrics.connection_opened()
    metrics.connection_opened()
    metrics.connection_closed()
    assert stats.by_api[("Metadata", 12)][:4] == [1, 0.001, 40, 400]
    assert (stats.connections_open, stats.connections_created) == (1, 2)


class _Log(SimpleNamespace):
    pass


def _broker(groups=None, states=None):
    logs = {("orders", 0): _Log(size_in_bytes=4096, log_start_offset=2, log_end_offset=50, high_watermark=48,
                                recovery_point=45),
            ("orders", 1): _Log(size_in_bytes=0, log_start_offset=0, log_end_offset=0, high_watermark=0,
                                recovery_point=0)}
    states = states or {}
    broker = SimpleNamespace(logs=SimpleNamespace(logs=lambda: iter(logs.items())), node_id=1,
                             metadata=SimpleNamespace(topics={"orders": object()},
                                                      partition_state=lambda t, p: states.get((t, p))))
    if groups is not None:
        broker.groups = SimpleNamespace(groups=groups)
    return broker


def test_partitions_logs_and_consumer_lag_are_read_at_scrape_time():
    offset = SimpleNamespace
    group = SimpleNamespace(members={"m1": object()},
                            offsets={("orders", 0): offset(offset=40), ("orders", 1): offset(offset=0),
                                     ("elsewhere", 0): offset(offset=7)})
    samples = _samples(build_registry(_broker({"audit": group}), metrics.RequestStats()))
    assert samples[("kafka_wire_partitions", ())] == 2
    assert samples[("kafka_wire_topics", ())] == 1
    assert samples[("kafka_wire_log_size_bytes", (("partition", "0"), ("topic", "orders")))] == 4096
    assert samples[("kafka_wire_log_end_offset", (("partition", "0"), ("topic", "orders")))] == 50
    assert samples[("kafka_wire_log_start_offset", (("partition", "0"), ("topic", "orders")))] == 2
    assert samples[("kafka_wire_log_recovery_point", (("partition", "0"), ("topic", "orders")))] == 45
    assert samples[("kafka_wire_log_syncs_total", ())] == 0  # no group commit yet
    labels = (("group", "audit"), ("partition", "0"), ("topic", "orders"))
    # Lag is measured from the high watermark (what a consumer can read), not the log end offset.
    assert samples[("kafka_wire_consumer_group_lag", labels)] == 8
    assert samples[("kafka_wire_consumer_group_committed_offset", labels)] == 40
    assert samples[("kafka_wire_consumer_group_lag_sum", (("group", "audit"),))] == 8
    assert samples[("kafka_wire_consumer_group_members", (("group", "audit"),))] == 1
    # A partition this broker does not host has a committed offset but no lag from here.
    elsewhere = (("group", "audit"), ("partition", "0"), ("topic", "elsewhere"))
    assert ("kafka_wire_consumer_group_committed_offset", elsewhere) in samples
    assert ("kafka_wire_consumer_group_lag", elsewhere) not in samples


def test_under_replicated_partitions_are_those_led_here_with_a_short_isr():
    state = SimpleNamespace
    single_node = {("orders", 0): state(leader=1, replicas=[1], isr=[1]),
                   ("orders", 1): state(leader=1, replicas=[1], isr=[1])}
    samples = _samples(build_registry(_broker(states=single_node), metrics.RequestStats()))
    assert samples[("kafka_wire_under_replicated_partitions", ())] == 0
    cluster = {("orders", 0): state(leader=1, replicas=[1, 2, 3], isr=[1, 3]),   # led here, one behind
               ("orders", 1): state(leader=2, replicas=[1, 2, 3], isr=[2])}      # led elsewhere: not counted
    samples = _samples(build_registry(_broker(states=cluster), metrics.RequestStats()))
    assert samples[("kafka_wire_under_replicated_partitions", ())] == 1


def test_a_broker_without_a_group_coordinator_still_scrapes():
    samples = _samples(build_registry(_broker(groups=None), metrics.RequestStats()))
    assert samples[("kafka_wire_partitions", ())] == 2
    assert not [key for key in samples if key[0].startswith("kafka_wire_consumer_group")]


@pytest.mark.parametrize("head, status", [
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "200 OK"),
    (b"GET / HTTP/1.0\r\n\r\n", "200 OK"),
    (b"GET /metrics?name[]=x HTTP/1.1\r\n\r\n", "200 OK"),
    (b"HEAD /metrics HTTP/1.1\r\n\r\n", "200 OK"),
    (b"GET /other HTTP/1.1\r\n\r\n", "404 Not Found"),
    (b"POST /metrics HTTP/1.1\r\n\r\n", "405 Method Not Allowed"),
    (b"nonsense\r\n\r\n", "400 Bad Request"),
    (None, "431 Request Header Fields Too Large"),
])
def test_http_answers(head, status):
    endpoint = MetricsEndpoint(build_registry(None, metrics.RequestStats()))
    answer_status, body, content_type = endpoint.answer(head)
    assert answer_status == status
    if status == "200 OK":
        assert content_type.startswith("text/plain; version=0.0.4")
        assert b"kafka_wire_connections" in body
