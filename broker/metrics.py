"""What the broker counts for Prometheus: requests, latency, bytes and connections.

The server reports each request and connection through these calls, cheap enough for every
request (plain counters touched only by the event loop's thread: no locks, no label lookups,
and no prometheus_client import on the data path):

    metrics.observe_request(api_name, version, seconds, bytes_in, bytes_out)
    metrics.connection_opened() / metrics.connection_closed()

broker/metrics_endpoint.py turns these counters, and the broker's state read at scrape time
(partitions, logs, under-replicated partitions, consumer lag), into Prometheus' exposition
format on `metrics.host`:`metrics.port`.
"""

from __future__ import annotations

import bisect

# Request latency buckets (seconds): sub-millisecond answers up to long-polling fetches and joins.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

# Positions in a per-(API, version) statistics list; bucket counts follow FIRST_BUCKET.
COUNT, LATENCY_SUM, BYTES_IN, BYTES_OUT, FIRST_BUCKET = range(5)


class RequestStats:
    """Per (API, version): request count, latency sum and histogram, bytes in and out; connections."""

    def __init__(self) -> None:
        # (api, version) -> [count, latency sum, bytes in, bytes out, one count per bucket, +Inf]
        self.by_api: dict[tuple[str, int], list] = {}
        self.connections_open = 0
        self.connections_created = 0

    def observe(self, api_name: str, version: int, seconds: float, bytes_in: int, bytes_out: int) -> None:
        stats = self.by_api.get((api_name, version))
        if stats is None:
            stats = self.by_api[(api_name, version)] = [0, 0.0, 0, 0] + [0] * (len(LATENCY_BUCKETS) + 1)
        stats[COUNT] += 1
        stats[LATENCY_SUM] += seconds
        stats[BYTES_IN] += bytes_in
        stats[BYTES_OUT] += bytes_out
        # bisect_left: a latency equal to a bound belongs to that bucket (Prometheus' "le").
        stats[FIRST_BUCKET + bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1


# One broker per process, so one set of statistics.
STATS = RequestStats()


def observe_request(api_name: str, version: int, seconds: float, bytes_in: int, bytes_out: int) -> None:
    """One request handled: its API, version, time to answer, and frame sizes (0 out for acks=0)."""
    STATS.observe(api_name, version, seconds, bytes_in, bytes_out)


def connection_opened() -> None:
    STATS.connections_open += 1
    STATS.connections_created += 1


def connection_closed() -> None:
    STATS.connections_open -= 1
