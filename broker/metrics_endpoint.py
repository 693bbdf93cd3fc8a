"""The Prometheus endpoint (`metrics.port`, `metrics.host`): GET /metrics in the text format.

Served by a small asyncio HTTP server in the broker's event loop, so a scrape reads the broker's
state from the thread that changes it. What it reports, all prefixed `kafka_wire_`:

- requests_total, request_duration_seconds (histogram), by API and version; bytes_in_total and
  bytes_out_total (request and response frames) by API; connections, connections_created_total
  (broker/metrics.py counts these as they happen);
- read at scrape time, so the data path never pays for them: partitions, topics, and per
  partition log_size_bytes, log_start_offset, log_end_offset; under_replicated_partitions (those
  led here whose ISR is smaller than their replica set: Kafka's UnderReplicatedPartitions, 0 on a
  single node);
- per consumer group (when the group coordinator runs): consumer_group_committed_offset and
  consumer_group_lag (high watermark of the local replica minus committed offset) per partition,
  consumer_group_lag_sum, consumer_group_members;
- the Python process: CPU, memory, open fds, garbage collection (prometheus_client's collectors;
  with several workers CPU, memory and fds are the sums over the supervisor and every worker).
"""

from __future__ import annotations

import asyncio
import logging
import os

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import generate_latest

from .http_listener import close_server, start_http
from .metrics import BYTES_IN, BYTES_OUT, COUNT, FIRST_BUCKET, LATENCY_BUCKETS, LATENCY_SUM, STATS, RequestStats

logger = logging.getLogger("kafka_wire.metrics")

PREFIX = "kafka_wire"
# What generate_latest writes: Prometheus' text format 0.0.4, which every Prometheus version reads.
TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"
MAX_HTTP_HEAD = 8192
HTTP_READ_TIMEOUT = 5.0


def worker_snapshot(broker) -> tuple:
    """What one worker of a multi-worker broker adds to the broker's metrics (the `stats` call):
    its request counters, connections, partitions, fetch sessions and group commits."""
    cache = broker.fetch_sessions
    return (dict(STATS.by_api), STATS.connections_open, STATS.connections_created, _partition_logs(broker),
            (len(cache), cache.partitions_cached(), cache.incremental_fetches), _group_commits(broker))


def _partition_logs(broker) -> list[tuple]:
    return [(topic, partition, plog.size_in_bytes, plog.log_start_offset, plog.log_end_offset, plog.high_watermark,
             plog.recovery_point) for (topic, partition), plog in broker.logs.logs()]


def _group_commits(broker) -> tuple[int, int, int]:
    """(syncs, logs synced, syncfs calls) of the broker's group commit (log.flush.on.ack)."""
    commits = getattr(broker, "group_commit", None)
    return (0, 0, 0) if commits is None else (commits.syncs, commits.synced_logs, commits.filesystem_syncs)


class WorkerSnapshots:
    """With several workers (broker/workers/) worker 0 serves the endpoint: before each answer it
    asks every other worker for its snapshot, and the collectors add them to its own numbers."""

    def __init__(self, broker) -> None:
        self.broker = broker
        self.snapshots: list[tuple] = []

    async def refresh(self) -> None:
        links = self.broker.workers.links
        calls = [asyncio.ensure_future(link.call("stats")) for link in links.values()]
        if calls:
            await asyncio.wait(calls)
        self.snapshots = [call.result()[0] for call in calls if call.exception() is None]

    def request_stats(self) -> RequestStats:
        combined = RequestStats()
        for by_api, open_, created in [(STATS.by_api, STATS.connections_open, STATS.connections_created)] + [
                snapshot[:3] for snapshot in self.snapshots]:
            for key, stats in by_api.items():
                mine = combined.by_api.setdefault(key, [0] * len(stats))
                for i, value in enumerate(stats):
                    mine[i] += value
            combined.connections_open += open_
            combined.connections_created += created
        return combined


class RequestStatsCollector:
    """broker/metrics.py's counters as metric families (a callable: its RequestStats at each scrape)."""

    def __init__(self, stats) -> None:
        self._stats = stats

    @property
    def stats(self) -> RequestStats:
        return self._stats() if callable(self._stats) else self._stats

    def collect(self):
        requests = CounterMetricFamily(f"{PREFIX}_requests", "Requests handled, by API and version",
                                       labels=["api", "version"])
        latency = HistogramMetricFamily(
            f"{PREFIX}_request_duration_seconds",
            "Time from a request's arrival to its response being ready to send, by API and version",
            labels=["api", "version"])
        totals_in: dict[str, int] = {}
        totals_out: dict[str, int] = {}
        current = self.stats
        for (api, version), stats in sorted(current.by_api.items()):
            labels = [api, str(version)]
            requests.add_metric(labels, stats[COUNT])
            cumulative, buckets = 0, []
            for bound, count in zip(LATENCY_BUCKETS, stats[FIRST_BUCKET:]):
                cumulative += count
                buckets.append((repr(float(bound)), cumulative))
            buckets.append(("+Inf", stats[COUNT]))
            latency.add_metric(labels, buckets, stats[LATENCY_SUM])
            totals_in[api] = totals_in.get(api, 0) + stats[BYTES_IN]
            totals_out[api] = totals_out.get(api, 0) + stats[BYTES_OUT]
        bytes_in = CounterMetricFamily(f"{PREFIX}_bytes_in", "Request bytes received (whole frames), by API",
                                       labels=["api"])
        bytes_out = CounterMetricFamily(f"{PREFIX}_bytes_out", "Response bytes sent (whole frames), by API",
                                        labels=["api"])
        for api, total in totals_in.items():
            bytes_in.add_metric([api], total)
        for api, total in totals_out.items():
            bytes_out.add_metric([api], total)
        yield requests
        yield latency
        yield bytes_in
        yield bytes_out
        yield GaugeMetricFamily(f"{PREFIX}_connections", "Open client connections", value=current.connections_open)
        yield CounterMetricFamily(f"{PREFIX}_connections_created", "Client connections accepted",
                                  value=current.connections_created)


class BrokerStateCollector:
    """Partitions, logs and consumer groups, read from the broker at scrape time."""

    def __init__(self, broker, workers: WorkerSnapshots | None = None) -> None:
        self.broker = broker
        self.workers = workers

    def collect(self):
        partitions = GaugeMetricFamily(f"{PREFIX}_partitions", "Partitions this broker hosts")
        topics = GaugeMetricFamily(f"{PREFIX}_topics", "Topics in the cluster metadata")
        size = GaugeMetricFamily(f"{PREFIX}_log_size_bytes", "Size of a partition's log segments on disk",
                                 labels=["topic", "partition"])
        start = GaugeMetricFamily(f"{PREFIX}_log_start_offset", "First offset still in a partition's log",
                                  labels=["topic", "partition"])
        end = GaugeMetricFamily(f"{PREFIX}_log_end_offset", "Offset the next record appended to a partition gets",
                                labels=["topic", "partition"])
        recovery = GaugeMetricFamily(f"{PREFIX}_log_recovery_point", "Offset below which a partition's log is "
                                     "known to be on stable storage (fsynced)", labels=["topic", "partition"])
        metadata = getattr(self.broker, "metadata", None)
        node_id = getattr(self.broker, "node_id", None)
        high_watermarks: dict[tuple[str, int], int] = {}
        under_replicated = 0
        logs = _partition_logs(self.broker)
        for snapshot in self.workers.snapshots if self.workers is not None else ():
            logs += snapshot[3]
        for topic, partition, log_size, log_start, log_end, high_watermark, recovery_point in sorted(logs):
            labels = [topic, str(partition)]
            size.add_metric(labels, log_size)
            start.add_metric(labels, log_start)
            end.add_metric(labels, log_end)
            recovery.add_metric(labels, recovery_point)
            high_watermarks[(topic, partition)] = high_watermark
            state = metadata.partition_state(topic, partition) if metadata is not None else None
            if state is not None and state.leader == node_id and len(state.isr) < len(state.replicas):
                under_replicated += 1
        partitions.add_metric([], len(high_watermarks))
        topics.add_metric([], len(getattr(metadata, "topics", None) or {}))
        yield partitions
        yield topics
        yield GaugeMetricFamily(f"{PREFIX}_under_replicated_partitions",
                                "Partitions led here whose ISR is smaller than their replica set",
                                value=under_replicated)
        yield size
        yield start
        yield end
        yield recovery
        yield from self._group_commits()
        yield from self._fetch_sessions()
        yield from self._consumer_groups(high_watermarks)

    def _group_commits(self):
        """log.flush.on.ack's syncs (log/group_commit.py): each covers every append that came while
        the one before ran, so syncs_total grows with the disk's speed, not with the appends."""
        syncs, logs, filesystem = _group_commits(self.broker)
        for snapshot in self.workers.snapshots if self.workers is not None else ():
            syncs, logs, filesystem = syncs + snapshot[5][0], logs + snapshot[5][1], filesystem + snapshot[5][2]
        yield CounterMetricFamily(f"{PREFIX}_log_syncs", "Group commits: syncs acknowledged appends waited for",
                                  value=syncs)
        yield CounterMetricFamily(f"{PREFIX}_log_synced_partitions", "Partition logs made durable by the "
                                  "group commits (one per partition per sync)", value=logs)
        yield CounterMetricFamily(f"{PREFIX}_log_filesystem_syncs", "Group commits' syncfs calls (several "
                                  "dirty partitions in a log dir) rather than fdatasync of each segment",
                                  value=filesystem)

    def _fetch_sessions(self):
        """Kafka's NumIncrementalFetchSessions and NumIncrementalFetchPartitionsCached, and how many
        fetches a session served (KIP-227, broker/fetch_sessions.py)."""
        cache = getattr(self.broker, "fetch_sessions", None)
        if cache is None:
            return
        sessions, cached, fetches = len(cache), cache.partitions_cached(), cache.incremental_fetches
        for snapshot in self.workers.snapshots if self.workers is not None else ():
            sessions, cached, fetches = sessions + snapshot[4][0], cached + snapshot[4][1], fetches + snapshot[4][2]
        yield GaugeMetricFamily(f"{PREFIX}_incremental_fetch_sessions", "Fetch sessions in the cache",
                                value=sessions)
        yield GaugeMetricFamily(f"{PREFIX}_incremental_fetch_partitions_cached",
                                "Partitions the fetch sessions hold", value=cached)
        yield CounterMetricFamily(f"{PREFIX}_incremental_fetches", "Incremental fetches served in a session",
                                  value=fetches)

    def _consumer_groups(self, high_watermarks: dict[tuple[str, int], int]):
        committed = GaugeMetricFamily(f"{PREFIX}_consumer_group_committed_offset", "A group's committed offset",
                                      labels=["group", "topic", "partition"])
        lag = GaugeMetricFamily(f"{PREFIX}_consumer_group_lag", "High watermark minus the group's committed offset",
                                labels=["group", "topic", "partition"])
        lag_sum = GaugeMetricFamily(f"{PREFIX}_consumer_group_lag_sum", "A group's lag over all its partitions",
                                    labels=["group"])
        members = GaugeMetricFamily(f"{PREFIX}_consumer_group_members", "Members of a group", labels=["group"])
        # The group coordinator may not exist (a broker built without it, or not started yet).
        coordinator = getattr(self.broker, "groups", None)
        groups = getattr(coordinator, "groups", None) or {}
        for group_id, group in sorted(groups.items()):
            members.add_metric([group_id], len(getattr(group, "members", None) or {}))
            total = 0
            for (topic, partition), offset in sorted((getattr(group, "offsets", None) or {}).items()):
                labels = [group_id, topic, str(partition)]
                committed.add_metric(labels, offset.offset)
                high_watermark = high_watermarks.get((topic, partition))
                if high_watermark is None:
                    continue  # no replica here (cluster mode), or deleted: not ours to say
                partition_lag = max(high_watermark - offset.offset, 0)
                lag.add_metric(labels, partition_lag)
                total += partition_lag
            lag_sum.add_metric([group_id], total)
        yield committed
        yield lag
        yield lag_sum
        yield members


class BrokerProcessesCollector:
    """With several workers: prometheus_client's process metrics (process_*) for the whole broker, the
    supervisor and every worker: CPU seconds, resident and virtual memory and open descriptors
    summed, the start time and the descriptor limit the supervisor's."""

    SUMMED = ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
              "process_open_fds")

    def collect(self):
        supervisor = os.getppid()
        pids = [supervisor] + _children(supervisor)
        merged: dict[str, object] = {}
        for pid in pids:
            for family in ProcessCollector(pid=lambda pid=pid: pid, registry=None).collect():
                first = merged.setdefault(family.name, family)
                if first is family:
                    continue
                for i, (mine, theirs) in enumerate(zip(first.samples, family.samples)):
                    if mine.name in self.SUMMED and theirs.name == mine.name:
                        first.samples[i] = mine._replace(value=mine.value + theirs.value)
        yield from merged.values()


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(child) for child in f.read().split()]
    except OSError:
        return []


def build_registry(broker, stats: RequestStats = STATS, workers: WorkerSnapshots | None = None) -> CollectorRegistry:
    """Request statistics, the broker's state (when given), and the broker's processes (with
    several workers, summed over the supervisor and the workers)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RequestStatsCollector(workers.request_stats if workers is not None else stats))
    if broker is not None:
        registry.register(BrokerStateCollector(broker, workers))
    if workers is not None:
        registry.register(BrokerProcessesCollector())
    else:
        ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def render(registry: CollectorRegistry) -> bytes:
    """The registry in Prometheus' text exposition format."""
    return generate_latest(registry)


class MetricsEndpoint:
    """GET (or HEAD) /metrics, also at /, over HTTP/1.1; one request per connection."""

    def __init__(self, registry: CollectorRegistry, workers: WorkerSnapshots | None = None) -> None:
        self.registry = registry
        self.workers = workers
        self.server: asyncio.base_events.Server | None = None

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self.server = await start_http(self._serve, host, port, MAX_HTTP_HEAD)
        address = self.server.sockets[0].getsockname()
        logger.info("metrics on http://%s:%d/metrics", address[0], address[1])
        return address[0], address[1]

    async def stop(self) -> None:
        await close_server(self.server)
        self.server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HTTP_READ_TIMEOUT)
            except asyncio.LimitOverrunError:
                head = None
            if self.workers is not None and head is not None:
                await self.workers.refresh()
            status, body, content_type = self.answer(head)
            if head is not None and head.startswith(b"HEAD "):
                body_sent = b""
            else:
                body_sent = body
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                         f"Connection: close\r\n\r\n".encode() + body_sent)
            await writer.drain()
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            pass
        except Exception:
            logger.exception("metrics request failed")
        finally:
            writer.close()

    def answer(self, head: bytes | None) -> tuple[str, bytes, str]:
        """(status, body, content type) for a request head; None is a head over MAX_HTTP_HEAD."""
        if head is None:
            return "431 Request Header Fields Too Large", b"", "text/plain"
        parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        if len(parts) != 3:
            return "400 Bad Request", b"bad request\n", "text/plain"
        method, target, _ = parts
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", b"only GET\n", "text/plain"
        if target.split("?", 1)[0] not in ("/metrics", "/"):
            return "404 Not Found", b"metrics are at /metrics\n", "text/plain"
        return "200 OK", render(self.registry), TEXT_FORMAT


async def start_metrics_endpoint(broker, host: str, port: int) -> MetricsEndpoint:
    """Serve this broker's metrics on host:port (port 0 picks a free one)."""
    workers = WorkerSnapshots(broker) if getattr(broker, "workers", None) is not None else None
    endpoint = MetricsEndpoint(build_registry(broker, workers=workers), workers)
    await endpoint.start(host, port)
    return endpoint
