"""One kafka-wire broker with W worker processes beside W separate single-process brokers (issue 25).

The `workers` scenario of bench.run. For each W (1, 2, 4, 8, 16, as many as the cores this process
may use; `--scaling-workers 1,2` chooses) it measures, in one run, two setups of kafka-wire started
for the measurement:

- one broker run with `num.worker.processes=W` (the workers share its listener port and own a
  share of the partitions each, so requests for another worker's partitions are handed over);
- W separate brokers with one process each (own port, own log dir): the same code with nothing
  handed over, the ceiling the W-worker broker is measured against.

Each setup gets the same load from L franz-go processes (bench/loadgen; L = W unless
`--scaling-loads` says otherwise), load process i talking to broker i mod (number of brokers):

- produce: each process sends `produce_records` 1 KiB records at acks=1 from `connections`
  clients into a 16-partition topic (one topic on each broker); MB/s over all processes;
- consume: each process then runs `groups` consumer groups (one member each) that read as many
  records as one process produced, from the start of every partition: on a separate broker that is
  its whole topic, on the W-worker broker the first 1/L of it, so every group does the same work;
- broker CPU seconds per GB produced and consumed: the CPU of every broker of the setup, each with
  all its descendants (the workers are child processes; bench/brokers.py's cpu_seconds);
- latency at a fixed rate: each process produces `latency_rate / L` records/s (linger 0, acks=1)
  into its own 16-partition topic and reads them back from a second client: end-to-end p50/p99
  (send to receipt) and produce p99 (send to acknowledgement), over every record of every process.

With `--brokers` naming Apache Kafka (or tansu), that broker, already running for the other
scenarios, gets the same loads for each W under the same row keys, so the ratio columns of the main
table compare the W-worker broker with it. No JVM is needed for kafka-wire's rows.

    .venv/bin/python -m bench.run --only workers --brokers kafka-wire --quick --output -
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass

from testing.broker_process import REPO_ROOT

from .admin import OUR_SETTINGS, create_topic, delete_topic
from .brokers import BrokerUnderTest, OurBroker, process_tree
from .fanout import LoadgenFailed, loadgen
from .latency import percentile

OURS = "kafka-wire"
WORKERS_KEY = "num.worker.processes"
DEFAULT_WORKERS = (1, 2, 4, 8, 16)
PARTITIONS = 16
RECORD_SIZE = 1024
MB, GB = 1e6, 1e9
ONE_BROKER, SEPARATE = "workers", "workers-separate"  # row key prefixes of the two setups


@dataclass
class WorkerSizes:
    workers: list[int] | None = None  # None: DEFAULT_WORKERS up to the cores this process may use
    loads: int | None = None  # load processes per measurement; None: W
    produce_records: int = 500_000  # 1 KiB records per load process
    connections: int = 8  # producer clients per load process
    groups: int = 2  # consumer groups per load process
    latency_rate: int = 10_000  # records per second, all load processes together
    latency_seconds: float = 10.0
    latency_warmup: float = 1.0  # records sent in this first stretch are left out of the percentiles

    def worker_counts(self) -> list[int]:
        if self.workers:
            return list(self.workers)
        cores = len(os.sched_getaffinity(0))
        return [w for w in DEFAULT_WORKERS if w <= cores]

    def load_count(self, workers: int) -> int:
        return self.loads or workers


# bench.run's Sizes carry one of these (FULL by default).
QUICK = WorkerSizes(produce_records=100_000, latency_seconds=3.0, latency_warmup=0.5)
# 20,000 records: enough for the broker to span a few 10 ms ticks of /proc/<pid>/stat CPU time.
SMOKE = WorkerSizes(workers=[1, 2], produce_records=20_000, latency_rate=1000, latency_seconds=0.5,
                    latency_warmup=0.1)


@dataclass
class Load:
    """One loadgen process: its mode and flags, and the broker it talks to."""

    broker: BrokerUnderTest
    mode: str
    args: tuple[str, ...]


@dataclass
class Measurement:
    results: list[dict]  # each load process's JSON line
    broker_cpu: float  # CPU seconds of every broker (and its descendants) between "go" and the end

    @property
    def nbytes(self) -> int:
        return sum(r["bytes"] for r in self.results)

    @property
    def mb_per_s(self) -> float:
        return self.nbytes / max(r["end"] for r in self.results) / MB

    @property
    def cpu_per_gb(self) -> float:
        return self.broker_cpu / (self.nbytes / GB)


def run_loads(brokers: list[BrokerUnderTest], loads: list[Load], timeout: float = 900) -> Measurement:
    """Start every load process, wait until each says "ready", read the brokers' CPU time, say
    "go" to all, and read the CPU time again once every one has reported."""
    binary = loadgen()
    processes: list[subprocess.Popen] = []
    try:
        for load in loads:
            processes.append(subprocess.Popen(
                [binary, load.mode, "-brokers", load.broker.bootstrap, "-timeout", f"{int(timeout)}s", *load.args],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT))
        for load, process in zip(loads, processes):
            line = process.stdout.readline().strip()
            if line != "ready":
                process.kill()
                _, err = process.communicate()
                raise LoadgenFailed(f"loadgen {load.mode} said {line!r}: {err[-1500:]}")
        cpu_before = sum(broker.cpu_seconds() for broker in brokers)
        for process in processes:
            process.stdin.write("go\n")
            process.stdin.flush()
        outputs = [process.communicate(timeout=timeout + 60) for process in processes]
        broker_cpu = sum(broker.cpu_seconds() for broker in brokers) - cpu_before
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    results = []
    for load, process, (out, err) in zip(loads, processes, outputs):
        lines = [line for line in out.splitlines() if line.startswith("{")]
        result = json.loads(lines[-1]) if lines else {"error": f"no result (exit {process.returncode}): {err[-1500:]}"}
        if "error" in result or process.returncode != 0:
            raise LoadgenFailed(f"loadgen {load.mode}: {result.get('error')}")
        if result.get("error_count"):
            raise LoadgenFailed(f"loadgen {load.mode}: {result['error_count']} records failed: {result.get('errors')}")
        results.append(result)
    return Measurement(results, broker_cpu)


def measure(setup: str, workers: int, brokers: list[BrokerUnderTest], column: str, sizes: WorkerSizes,
            results, round_no: int) -> None:
    """Produce, consume and latency loads against `brokers` (one broker, or W separate ones), the
    rows filed under `setup`'s key prefix in the `column` broker's column."""
    loads = sizes.load_count(workers) if len(brokers) == 1 else max(sizes.load_count(workers), len(brokers))
    targets = [brokers[i % len(brokers)] for i in range(loads)]
    topic = f"{setup}-w{workers}-r{round_no}"
    for broker in brokers:
        create_topic(broker.bootstrap, topic, PARTITIONS)
    # The one-broker rows of kafka-wire and of any other broker share keys, and so labels.
    where = (f"{workers} separate kafka-wire brokers (one process each)" if setup == SEPARATE
             else f"one broker (kafka-wire: {WORKERS_KEY}={workers})")
    label = f"W={workers}, {where}"
    key = f"{setup}-{workers}"
    records = sizes.produce_records

    produced = run_loads(brokers, [Load(b, "produce", ("-topic", topic, "-connections", str(sizes.connections),
                                                       "-records", str(records), "-size", str(RECORD_SIZE)))
                                   for b in targets])
    processes = f"{loads} franz-go process{'es' if loads > 1 else ''}"
    results.add(f"{key}-produce", f"{label}: produce 1 KiB, acks=1, {PARTITIONS} partitions, {processes} x "
                f"{sizes.connections} connections", "MB/s", column, produced.mb_per_s)
    results.add(f"{key}-produce-cpu", f"{label}: broker CPU per GB produced (all processes)", "CPU s/GB", column,
                produced.cpu_per_gb, higher_is_better=False)

    consumed = run_loads(brokers, [Load(b, "groups", ("-topic", topic, "-groups", str(sizes.groups), "-records",
                                                      str(records), "-group-prefix", f"{topic}-load{i}"))
                                   for i, b in enumerate(targets)])
    results.add(f"{key}-consume", f"{label}: consume from the start, {loads * sizes.groups} groups "
                f"({records:,} records each)", "MB/s", column, consumed.mb_per_s)
    results.add(f"{key}-consume-cpu", f"{label}: broker CPU per GB consumed (all processes)", "CPU s/GB", column,
                consumed.cpu_per_gb, higher_is_better=False)

    rate = max(1, sizes.latency_rate // loads)
    latency_topics = [f"{topic}-latency{i}" for i in range(loads)]
    for broker, latency_topic in zip(targets, latency_topics):
        create_topic(broker.bootstrap, latency_topic, PARTITIONS)
    timed = run_loads(brokers, [Load(b, "latency", ("-topic", t, "-rate", str(rate), "-size", str(RECORD_SIZE),
                                                    "-seconds", f"{sizes.latency_seconds}s",
                                                    "-warmup", f"{sizes.latency_warmup}s"))
                                for b, t in zip(targets, latency_topics)])
    end_to_end = sorted(us for r in timed.results for us in r["e2e_us"] or ())
    acked = sorted(us for r in timed.results for us in r["ack_us"] or ())
    if not end_to_end or not acked:
        raise LoadgenFailed(f"no latency measured past the {sizes.latency_warmup:g} s warm-up")
    at = f"at {rate * loads:,} records/s (1 KiB, {processes})"
    results.add(f"{key}-p50", f"{label}: end-to-end latency p50 {at}", "ms", column,
                percentile(end_to_end, 0.50) / 1000, higher_is_better=False)
    results.add(f"{key}-p99", f"{label}: end-to-end latency p99 {at}", "ms", column,
                percentile(end_to_end, 0.99) / 1000, higher_is_better=False)
    results.add(f"{key}-ack-p99", f"{label}: produce latency (to the acknowledgement) p99 {at}", "ms", column,
                percentile(acked, 0.99) / 1000, higher_is_better=False)
    achieved = sum(r["rate"] for r in timed.results)
    print(f"    W={workers} {setup} on {column}: produce {produced.mb_per_s:,.0f} MB/s "
          f"({produced.cpu_per_gb:.2f} CPU s/GB), consume {consumed.mb_per_s:,.0f} MB/s "
          f"({consumed.cpu_per_gb:.2f} CPU s/GB), p99 {percentile(end_to_end, 0.99) / 1000:.2f} ms at "
          f"{achieved:,.0f} records/s reached", flush=True)
    if column != OURS:  # a broker run for the whole bench keeps its data otherwise
        for broker in brokers:
            for name in (topic, *latency_topics):
                delete_topic(broker.bootstrap, name)


def _our_brokers(workdir, workers: int, separate: bool) -> list[OurBroker]:
    if separate:
        return [OurBroker(workdir / f"broker-{i}", {**OUR_SETTINGS, WORKERS_KEY: "1"}) for i in range(workers)]
    return [OurBroker(workdir / "broker", {**OUR_SETTINGS, WORKERS_KEY: str(workers)})]


def workers(broker, sizes, results, round_no: int) -> None:
    """kafka-wire: for each W, one broker with W workers and W separate brokers, started here in
    turn (the order alternating by round) and removed afterwards. Any other broker: the same
    loads against it, under the one-broker rows."""
    ws: WorkerSizes = sizes.workers
    for count in ws.worker_counts():
        if broker.name != OURS:
            measure(ONE_BROKER, count, [broker], broker.name, ws, results, round_no)
            continue
        setups = [False, True] if (round_no + count) % 2 == 0 else [True, False]
        for separate in setups:
            setup = SEPARATE if separate else ONE_BROKER
            workdir = broker.workdir.parent / f"{setup}-w{count}-r{round_no}"
            started: list[OurBroker] = []
            try:
                for ours in _our_brokers(workdir, count, separate):
                    ours.start()
                    started.append(ours)
                if not separate:
                    processes = len(process_tree(started[0].pid))
                    results.add(f"{setup}-{count}-processes", f"W={count}, one broker (kafka-wire: {WORKERS_KEY}="
                                f"{count}): processes in the broker (itself and its descendants)", "processes", OURS,
                                processes, higher_is_better=False)
                    if processes < count:
                        print(f"    ({WORKERS_KEY}={count}: the broker runs {processes} process(es); "
                              f"a broker that does not know the key runs one)", flush=True)
                measure(setup, count, started, OURS, ws, results, round_no)
            except Exception as exc:  # noqa: BLE001 - one setup failing is a result; the others go on
                results.failed(f"workers W={count} ({setup})", OURS, round_no, exc)
            finally:
                for ours in started:
                    ours.stop()
                shutil.rmtree(workdir, ignore_errors=True)


SCENARIOS = {"workers": workers}


def _ratio(top: float | None, bottom: float | None) -> str:
    return f"{top / bottom:.2f}" if top is not None and bottom else "-"


def _value(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def report_lines(results, sizes: WorkerSizes, kafka: str = "kafka") -> list[str]:
    """The section of the results file: per W, the W-worker broker beside W separate brokers and
    beside itself at W=1, and issue 25's targets that the run measured."""
    counts = sorted(int(k.split("-")[1]) for k in results.metrics
                    if k.startswith(f"{ONE_BROKER}-") and k.endswith("-produce") and k.split("-")[1].isdigit())
    if not counts:
        return []

    def get(setup: str, count: int, what: str, column: str = OURS) -> float | None:
        return results.median(f"{setup}-{count}-{what}", column)

    with_kafka = any(get(ONE_BROKER, c, "produce", kafka) is not None for c in counts)
    rate = sizes.latency_rate
    lines = [
        f"## One broker with W workers beside W separate brokers (issue 25, `{WORKERS_KEY}`)", "",
        f"Load per measurement: W franz-go processes (or `--scaling-loads`), each producing "
        f"{sizes.produce_records:,} x 1 KiB at acks=1 from {sizes.connections} clients into a "
        f"{PARTITIONS}-partition topic, then running {sizes.groups} consumer groups that read as many "
        f"records from the start; latency at {rate:,} records/s in all. Broker CPU counts every process "
        f"of the setup (workers included). \"vs 1\": this W against W=1 of the same setup.", "",
        "| W | produce MB/s: W workers | W separate | workers / separate | workers vs 1 "
        "| consume MB/s: W workers | W separate | workers / separate | workers vs 1"
        + (" | Kafka produce | Kafka consume" if with_kafka else "") + " |",
        "| ---: " * (9 + 2 * with_kafka) + "|",
    ]
    for c in counts:
        row = [str(c)]
        for what in ("produce", "consume"):
            ours, separate, first = get(ONE_BROKER, c, what), get(SEPARATE, c, what), get(ONE_BROKER, 1, what)
            row += [_value(ours), _value(separate), _ratio(ours, separate), _ratio(ours, first)]
        if with_kafka:
            row += [_value(get(ONE_BROKER, c, "produce", kafka)), _value(get(ONE_BROKER, c, "consume", kafka))]
        lines.append("| " + " | ".join(row) + " |")
    lines += [
        "",
        "| W | broker processes | CPU s/GB produced: W workers | W separate | workers vs 1 "
        "| CPU s/GB consumed: W workers | W separate | workers vs 1 | cores used producing: W workers | W separate "
        f"| p99 ms at {rate:,}/s: W workers | W separate" + (" | Kafka p99 ms" if with_kafka else "") + " |",
        "| ---: " * (12 + with_kafka) + "|",
    ]
    for c in counts:
        processes = get(ONE_BROKER, c, "processes")
        row = [str(c), "-" if processes is None else f"{processes:.0f}"]
        for what in ("produce-cpu", "consume-cpu"):
            ours, separate, first = get(ONE_BROKER, c, what), get(SEPARATE, c, what), get(ONE_BROKER, 1, what)
            row += [_value(ours), _value(separate), _ratio(ours, first)]
        for setup in (ONE_BROKER, SEPARATE):  # CPU s per GB x GB per s
            mb, cpu = get(setup, c, "produce"), get(setup, c, "produce-cpu")
            row.append("-" if mb is None or cpu is None else f"{mb * cpu / 1000:.2f}")
        row += [_value(get(ONE_BROKER, c, "p99")), _value(get(SEPARATE, c, "p99"))]
        if with_kafka:
            row.append(_value(get(ONE_BROKER, c, "p99", kafka)))
        lines.append("| " + " | ".join(row) + " |")
    single = [c for c in counts if c > 1 and (get(ONE_BROKER, c, "processes") or 0) < 2]
    if single:
        lines += ["", f"The broker ran one process at W = {', '.join(map(str, single))}: it does not know "
                      f"`{WORKERS_KEY}`, so those \"W workers\" rows measure a single process."]

    targets = []

    def target(what: str, top: float | None, bottom: float | None, goal: float, at_least: bool = True,
               workers: int = 1) -> None:
        if top is None or not bottom:
            return
        ratio = top / bottom
        met = ratio >= goal if at_least else ratio <= goal
        verdict = "not measured: one process ran" if workers in single else "met" if met else "MISSED"
        targets.append(f"| {what} | {_value(top)} vs {_value(bottom)} = {ratio:.2f} | {verdict} |")

    if 8 in counts:
        for what in ("produce", "consume"):
            target(f"{what}: 8 workers >= 0.9x 8 separate brokers (MB/s)", get(ONE_BROKER, 8, what),
                   get(SEPARATE, 8, what), 0.9, workers=8)
        target("produce: 8 workers >= 4x 1 worker (MB/s)", get(ONE_BROKER, 8, "produce"),
               get(ONE_BROKER, 1, "produce"), 4.0, workers=8)
    if 2 in counts:
        for what in ("produce", "consume"):
            target(f"broker CPU per GB {what}d: 2 workers <= 1.1x 1 worker (CPU s/GB)",
                   get(ONE_BROKER, 2, f"{what}-cpu"), get(ONE_BROKER, 1, f"{what}-cpu"), 1.1, at_least=False,
                   workers=2)
    if with_kafka:
        for c in counts:
            for what in ("produce", "consume"):
                target(f"{what}, W={c}: kafka-wire with {c} worker(s) >= 1.0x Kafka at the same load (MB/s)",
                       get(ONE_BROKER, c, what), get(ONE_BROKER, c, what, kafka), 1.0, workers=c)
    if targets:
        lines += ["", "| target (issue 25) | measured | verdict |", "| --- | --- | --- |", *targets]
    return lines + [""]
