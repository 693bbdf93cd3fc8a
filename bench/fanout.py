"""Many connections and many consumer groups from one compiled load process (bench/loadgen, franz-go).

Two scenarios of bench.run (issue 17), measured on each broker in turn like the others:

- `connections`: one loadgen process opens N franz-go producer clients (N = 1, 10, 100, 1,000;
  each sends one record first, so its connections exist before the clock starts), then they
  produce the same total of 1 KiB records at acks=1 between them into a topic of 10 partitions.
  Target: 1,000 connections >= 80% of the 10-connection throughput. The broker's CPU time over
  each measurement gives "broker CPU per GB produced" per connection count.
- `groups`: a topic of 10 partitions is filled, then one loadgen process opens 100 clients, each
  the only member of its own consumer group, and all subscribe at once; each reads the same
  records from the start. Rows: aggregate MB/s, seconds until the last group was assigned its
  partitions (both brokers run with the quickstart's group.initial.rebalance.delay.ms=0, so a
  new group's first rebalance is not held) and until the last group had read them all, broker
  CPU per GB consumed.

A connection count here is a producer client: franz-go holds a producing connection to the
broker plus a general one (Metadata) per client, so the broker holds about 2 x N sockets. The
load process raises its RLIMIT_NOFILE soft limit to the hard limit; the brokers inherit the
bench's (20,000 here), which is enough for 1,000 clients.
"""

from __future__ import annotations

import json
import resource
import subprocess
from dataclasses import dataclass, field

from testing.broker_process import REPO_ROOT

from .admin import create_topic, delete_topic

LOADGEN = REPO_ROOT / ".deps" / "bench" / "loadgen"
SETUP = REPO_ROOT / "bench" / "setup-loadgen.sh"
MB, GB = 1e6, 1e9
PARTITIONS = 10


@dataclass
class FanoutSizes:
    connections: list[int] = field(default_factory=lambda: [1, 10, 100, 1000])
    produce_records: int = 1_000_000  # 1 KiB records per connections measurement, all clients together
    groups: int = 100
    group_records: int = 100_000  # records each group reads


# bench.run's Sizes carry one of these (FULL by default).
QUICK = FanoutSizes(produce_records=300_000, group_records=20_000)
# produce_records: enough that the broker works for a few 10 ms clock ticks (/proc/<pid>/stat counts
# CPU in ticks): with 2,000 records it sometimes counted none, and the per-CPU rows were left out.
SMOKE = FanoutSizes(connections=[1, 10], produce_records=50_000, groups=2, group_records=500)


class LoadgenFailed(RuntimeError):
    pass


def loadgen() -> str:
    """The loadgen binary, built on first use by bench/setup-loadgen.sh (a no-op when up to date)."""
    done = subprocess.run(["bash", str(SETUP)], capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise LoadgenFailed(f"bench/setup-loadgen.sh failed: {done.stdout[-1500:]}{done.stderr[-1500:]}")
    return str(LOADGEN)


@dataclass
class Run:
    result: dict
    broker_cpu: float  # broker CPU seconds between "go" and the end
    load_cpu: float  # the load process's own CPU seconds, all of its life

    @property
    def mb_per_s(self) -> float:
        return self.result["bytes"] / self.result["end"] / MB

    @property
    def cpu_per_gb(self) -> float:
        return self.broker_cpu / (self.result["bytes"] / GB)


def run_loadgen(broker, mode: str, *args: str, timeout: float = 900) -> Run:
    """Start loadgen, wait for "ready" (clients connected), read the broker's CPU time, say "go",
    read the broker's CPU time again when it reports."""
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = subprocess.Popen([loadgen(), mode, "-brokers", broker.bootstrap, "-timeout", f"{int(timeout)}s",
                                *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=REPO_ROOT)
    try:
        line = process.stdout.readline().strip()
        if line != "ready":
            process.kill()
            _, err = process.communicate()
            raise LoadgenFailed(f"loadgen {mode} said {line!r}: {err[-1500:]}")
        cpu_before = broker.cpu_seconds()
        out, err = process.communicate("go\n", timeout=timeout + 60)
        broker_cpu = broker.cpu_seconds() - cpu_before
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {"error": f"no result (exit {process.returncode}): {err[-1500:]}"}
    if "error" in result or process.returncode != 0:
        raise LoadgenFailed(f"loadgen {mode}: {result.get('error')}")
    if result.get("error_count"):
        raise LoadgenFailed(f"loadgen {mode}: {result['error_count']} records failed: {result.get('errors')}")
    load_cpu = (after_children.ru_utime + after_children.ru_stime
                - before_children.ru_utime - before_children.ru_stime)
    return Run(result, broker_cpu, load_cpu)


def connections(broker, sizes, results, round_no: int) -> None:
    """Produce 1 KiB records at acks=1 from 1..1,000 producer clients in one process."""

    fanout = sizes.fanout
    for count in fanout.connections:
        topic = f"fanout-c{count}-{round_no}"
        create_topic(broker.bootstrap, topic, PARTITIONS)
        run = run_loadgen(broker, "produce", "-topic", topic, "-connections", str(count),
                          "-records", str(fanout.produce_records), "-size", "1024")
        label = f"produce 1 KiB from {count:,} connections, one process (franz-go)"
        results.add(f"fanout-connections-{count}", label, "MB/s", broker.name, run.mb_per_s)
        results.add(f"fanout-connections-{count}-load-cpu", f"load process CPU, {count:,} connections (franz-go)",
                    "s", broker.name, run.load_cpu, higher_is_better=False)
        # Broker CPU per GB depends less on how loaded the machine is than MB/s does.
        results.add(f"fanout-connections-{count}-cpu",
                    f"broker CPU per GB produced (franz-go, {count:,} connections, 1 KiB, acks=1)", "CPU s/GB",
                    broker.name, run.cpu_per_gb, higher_is_better=False)
        # What one core of the broker answers: Produce requests per broker CPU second (kafka-wire
        # serves on one core; for Kafka, the CPU of all its threads), and records per request.
        requests = run.result.get("produce_requests") or 0
        if requests and run.broker_cpu > 0:
            results.add(f"fanout-connections-{count}-requests-per-cpu-s",
                        f"Produce requests per broker CPU second ({count:,} connections)", "req/CPU s",
                        broker.name, requests / run.broker_cpu)
            results.add(f"fanout-connections-{count}-records-per-request",
                        f"records per Produce request ({count:,} connections)", "records",
                        broker.name, run.result["messages"] / requests)
        delete_topic(broker.bootstrap, topic)


def groups(broker, sizes, results, round_no: int) -> None:
    """100 consumer groups (one member each, one process) read the same topic from the start."""

    fanout = sizes.fanout
    topic = f"fanout-groups-{round_no}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    run_loadgen(broker, "produce", "-topic", topic, "-connections", "10", "-records", str(fanout.group_records),
                "-size", "1024")
    n = fanout.groups
    run = run_loadgen(broker, "groups", "-topic", topic, "-groups", str(n), "-records", str(fanout.group_records))
    label = f"{n} consumer groups polling at once, {fanout.group_records:,} x 1 KiB each (franz-go)"
    results.add("fanout-groups-mb", f"{label}: aggregate", "MB/s", broker.name, run.mb_per_s)
    results.add("fanout-groups-assigned", f"{label}: until the last group was assigned", "s", broker.name,
                run.result["last_assigned"], higher_is_better=False)
    results.add("fanout-groups-done", f"{label}: until the last group had read all", "s", broker.name,
                run.result["end"], higher_is_better=False)
    results.add("fanout-consume-cpu", f"broker CPU per GB consumed ({n} groups, franz-go)", "CPU s/GB",
                broker.name, run.cpu_per_gb, higher_is_better=False)
    delete_topic(broker.bootstrap, topic)


SCENARIOS = {"connections": connections, "groups": groups}


def target_rows(results, brokers: tuple[str, ...] = ("kafka-wire", "kafka")) -> list[str]:
    """Issue 17's targets these rows measure, one table row each per broker measured: 1,000
    connections >= 80% of 10, and log size 1 -> 10 GB flat within 20% (produce and consume)."""
    rows = []

    def flat_row(first_key: str, last_key: str, what: str, goal: float) -> None:
        for broker in brokers:
            first, last = results.median(first_key, broker), results.median(last_key, broker)
            if first and last is not None:
                ratio = last / first
                rows.append(f"| {what} ({broker}) | {last:.0f} vs {first:.0f} MB/s = {ratio:.2f} | "
                            f"{'met' if ratio >= goal else 'MISSED'} |")

    counts = sorted(int(k.rsplit("-", 1)[1]) for k in results.metrics
                    if k.startswith("fanout-connections-") and k.rsplit("-", 1)[1].isdigit())
    if 10 in counts and counts[-1] > 10:
        flat_row("fanout-connections-10", f"fanout-connections-{counts[-1]}",
                 f"produce from {counts[-1]:,} connections >= 80% of 10", 0.8)
    for direction in ("produce", "fetch"):
        sizes = sorted(float(k.rsplit("-", 1)[1]) for k in results.metrics if k.startswith(f"logsize-{direction}-"))
        if len(sizes) >= 2:
            flat_row(f"logsize-{direction}-{sizes[0]:g}", f"logsize-{direction}-{sizes[-1]:g}",
                     f"{'produce into' if direction == 'produce' else 'consume'} a {sizes[-1]:g} GB log "
                     f"within 20% of {sizes[0]:g} GB", 0.8)
    return rows
