"""End-to-end latency at fixed rates (1k, 10k, 50k msg/s) from a compiled client: librdkafka's
rdkafka_performance in latency mode, one producer process and one consumer process.

The producer (`-P -l -r <rate>`) writes its wall-clock send time, in microseconds, into each
record's value ("LATENCY:<us>"); the consumer (`-C -l -A <file>`) subtracts it from its own clock
when the record reaches the application and writes one latency per line to a file. No Python
touches a message: this module only starts the two processes and reads the consumer's file
afterwards for the percentiles. Both processes run on this machine, so they share one clock.

rdkafka_performance paces by sleeping (polling) 1/rate s after each produce() call, so the rate
it reaches is a little under the one asked for; the achieved rate is reported beside the
percentiles. Client settings are the same for every broker: linger.ms=1 (rdkafka_performance's
own default is 1000), acks=1, no compression, 100 B records, a consumer of partition 0 with
librdkafka's fetch defaults (fetch.wait.max.ms=500, fetch.min.bytes=1), so the latency includes
how quickly a broker answers a parked Fetch once records arrive.

    .venv/bin/python -m bench.run --only rate-latency --brokers kafka-wire,kafka
    .venv/bin/python -m bench.latency --rounds 3 --seconds 3 [--source before=/tmp/kw-head]   # these rows alone
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from . import tools
from .admin import OUR_SETTINGS, create_topic, delete_topic

# The producer starts once the consumer's statistics (librdkafka's stats JSON, every
# STATS_INTERVAL_MS) show it fetching the partition; the first WARMUP_S seconds of records are left
# out of the percentiles (the producer's connection set-up and first metadata round trips).
STATS_INTERVAL_MS = 100
CONSUMER_READY_TIMEOUT_S = 60.0
WARMUP_S = 1.0
RECORD_SIZE = 100


def percentile(sorted_values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of an ascending list (what Kafka's EndToEndLatency reports)."""
    if not sorted_values:
        raise ValueError("no values")
    index = min(len(sorted_values) - 1, max(0, int(round(fraction * len(sorted_values))) - 1))
    return sorted_values[index]


class _ConsumerWatcher:
    """Reads the consumer's output on a thread (so its pipe never fills); sets `fetching` when a
    statistics line shows partition 0 of the topic in librdkafka's fetch_state "active"."""

    def __init__(self, process: subprocess.Popen, topic: str):
        self.fetching = threading.Event()
        self._topic = topic
        self._last: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(process.stdout,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            if line.startswith("{"):
                if not self.fetching.is_set():
                    try:
                        stats = json.loads(line)
                        state = stats["topics"][self._topic]["partitions"]["0"]["fetch_state"]
                    except (ValueError, KeyError, TypeError):
                        continue
                    if state == "active":
                        self.fetching.set()
                continue
            self._last = (self._last + [line.rstrip()])[-20:]

    def tail(self) -> str:
        return " | ".join(self._last)[-1500:]

    def join(self) -> None:
        self._thread.join(timeout=10)


def rdkafka_rate_latency(bootstrap: str, topic: str, rate: int, seconds: float) -> dict[str, float]:
    """Produce `rate` msg/s for `seconds` (plus WARMUP_S) to partition 0 of `topic` and consume
    them in a second process: {'p50 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'msg/s', 'records'} over
    the records after the warm-up."""
    binary = tools.rdkafka_performance()
    if binary is None:
        raise tools.ToolFailed("rdkafka_performance is not built: run bash bench/setup.sh")
    warmup = int(rate * WARMUP_S)
    count = warmup + int(rate * seconds)
    with tempfile.TemporaryDirectory(prefix="kw-latency-") as scratch:
        latencies_path = Path(scratch) / "latencies.txt"
        # stdbuf: the statistics reach us line by line, not when a 4 KiB stdio buffer fills.
        consumer = subprocess.Popen(
            [shutil.which("stdbuf") or "stdbuf", "-oL", str(binary), "-C", "-l", "-A", str(latencies_path),
             "-t", topic, "-p", "0", "-b", bootstrap, "-o", "beginning", "-c", str(count), "-u", "-q",
             "-T", str(STATS_INTERVAL_MS)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        watcher = _ConsumerWatcher(consumer, topic)
        try:
            if not watcher.fetching.wait(CONSUMER_READY_TIMEOUT_S):
                raise tools.ToolFailed(f"the latency consumer was not fetching {topic} after "
                                       f"{CONSUMER_READY_TIMEOUT_S:.0f} s: {watcher.tail()}")
            if consumer.poll() is not None:
                raise tools.ToolFailed(f"the latency consumer exited {consumer.returncode}: {watcher.tail()}")
            produced = tools._run(
                [str(binary), "-P", "-l", "-r", str(rate), "-t", topic, "-p", "0", "-b", bootstrap,
                 "-s", str(RECORD_SIZE), "-c", str(count), "-a", "1", "-u", "-q",
                 "-X", "linger.ms=1", "-X", "message.timeout.ms=120000"],
                timeout=seconds + WARMUP_S + 180)
            row = tools._table_row(produced, ["elapsed", "msgs", "dr", "dr_err"])
            if row["dr_err"] or row["dr"] < count:
                raise tools.ToolFailed(f"the latency producer delivered {row['dr']:.0f} of {count} "
                                       f"({row['dr_err']:.0f} errors)")
            consumer.wait(timeout=120)
        finally:
            if consumer.poll() is None:
                consumer.kill()
                consumer.wait()
            watcher.join()
        if consumer.returncode != 0:
            raise tools.ToolFailed(f"the latency consumer exited {consumer.returncode}: {watcher.tail()}")
        # One latency in microseconds per consumed record, in offset order.
        latencies = [int(line) for line in latencies_path.read_text().split()]
    if len(latencies) < count:
        raise tools.ToolFailed(f"the latency consumer measured {len(latencies)} of {count} records")
    measured = sorted(latencies[warmup:count])
    return {"p50 ms": percentile(measured, 0.50) / 1000, "p99 ms": percentile(measured, 0.99) / 1000,
            "p99.9 ms": percentile(measured, 0.999) / 1000, "max ms": measured[-1] / 1000,
            "msg/s": row["msgs"] / (row["elapsed"] / 1000), "records": len(measured)}


def warm_up(broker, create_topic, delete_topic) -> None:
    """One short measurement whose numbers are dropped, before a broker's first round: the first
    records sent to a freshly started Kafka took seconds to reach the consumer (p50 3.5-37 s at 1k
    msg/s in three runs on 2026-11-25, its later rounds tens to hundreds of ms)."""
    topic = "rate-latency-warm-up"
    create_topic(broker.bootstrap, topic, 1)
    try:
        rdkafka_rate_latency(broker.bootstrap, topic, 1000, 1.0)
    except tools.ToolFailed as exc:
        print(f"  warm-up on {broker.name} failed: {exc}", flush=True)
    finally:
        delete_topic(broker.bootstrap, topic)


def rate_latency(broker, sizes, results, round_no: int) -> None:
    """The scenario of bench.run: end-to-end latency p50/p99/p99.9 at each of sizes.rate_latency_rates
    msg/s, on a new one-partition topic per rate (same client settings on every broker)."""

    if round_no == 0 and sizes.rate_latency_warmup:
        warm_up(broker, create_topic, delete_topic)
    for rate in sizes.rate_latency_rates:
        topic = f"rate-latency-{rate}-{round_no}"
        create_topic(broker.bootstrap, topic, 1)
        label_rate = f"{rate // 1000}k" if rate % 1000 == 0 else str(rate)
        try:
            r = rdkafka_rate_latency(broker.bootstrap, topic, rate, sizes.rate_latency_seconds)
        except Exception as exc:  # noqa: BLE001 - a failure against one broker is a result; the run goes on
            results.failed(f"end-to-end latency at {rate} msg/s", broker.name, round_no, exc)
            delete_topic(broker.bootstrap, topic)
            continue
        print(f"  {rate} msg/s (reached {r['msg/s']:.0f}): p50 {r['p50 ms']:.2f} p99 {r['p99 ms']:.2f} "
              f"p99.9 {r['p99.9 ms']:.2f} max {r['max ms']:.1f} ms over {r['records']} records", flush=True)
        for key in ("p50", "p99", "p99.9"):
            results.add(f"rate-e2e-{key}-{rate}", f"end-to-end latency {key} at {label_rate} msg/s "
                        f"(rdkafka_performance)", "ms", broker.name, r[f"{key} ms"], higher_is_better=False)
        delete_topic(broker.bootstrap, topic)


def our_broker_from(workdir, source: str, label: str):
    """kafka-wire from another source tree (e.g. `git archive <commit> | tar -x -C DIR`), named
    `label`, for a before/after comparison in one run: same interpreter and settings, that tree's
    modules."""
    from .brokers import OurBroker

    class FromSource(OurBroker):
        name = label

        def command(self) -> list[str]:
            command = super().command()
            launcher = (f"import sys; sys.path.insert(0, {str(source)!r}); from cli.main import main; "
                        "sys.exit(main(sys.argv[1:]))")
            return [command[0], "-c", launcher, *command[3:]]

    return FromSource(workdir, OUR_SETTINGS)


def main(argv: list[str] | None = None) -> int:
    """Latency rows alone, kafka-wire (this tree, and optionally another) beside Apache Kafka,
    alternating by round; prints each measurement and the medians with their spread."""
    import argparse
    import os
    import shutil
    import statistics
    import sys
    import time

    from .brokers import ApacheKafka, OurBroker, scratch_dir

    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=main.__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per rate")
    parser.add_argument("--rates", default="1000,10000,50000")
    parser.add_argument("--e2e-records", type=int, default=1000,
                        help="Kafka's EndToEndLatency round trips per round (0: not run)")
    parser.add_argument("--source", action="append", default=[], metavar="[LABEL=]DIR",
                        help="also run kafka-wire from this source tree, named LABEL (default 'before'); repeatable")
    parser.add_argument("--no-ours", action="store_true", help="leave out kafka-wire from this tree")
    parser.add_argument("--no-kafka", action="store_true", help="leave Apache Kafka out")
    args = parser.parse_args(argv)
    rates = [int(r) for r in args.rates.split(",") if r]
    scratch = scratch_dir()
    brokers = []
    for source in args.source:
        label, _, directory = source.rpartition("=")
        brokers.append(our_broker_from(scratch / (label or "before"), directory, label or "before"))
    if not args.no_ours:
        brokers.append(OurBroker(scratch / "ours", OUR_SETTINGS))
    if not args.no_kafka and ApacheKafka.installed():
        brokers.append(ApacheKafka(scratch / "kafka"))
    values: dict[tuple[str, str], list[float]] = {}
    try:
        for broker in brokers:
            broker.start()
        time.sleep(5)
        for broker in brokers:
            warm_up(broker, create_topic, delete_topic)
        for round_no in range(args.rounds):
            for broker in brokers if round_no % 2 == 0 else brokers[::-1]:
                for rate in rates:
                    topic = f"latency-{rate}-{round_no}"
                    create_topic(broker.bootstrap, topic, 1)
                    try:
                        r = rdkafka_rate_latency(broker.bootstrap, topic, rate, args.seconds)
                    except tools.ToolFailed as exc:
                        print(f"{round_no} {broker.name} {rate} msg/s failed: {exc}", flush=True)
                        continue
                    finally:
                        delete_topic(broker.bootstrap, topic)
                    print(f"{round_no} {broker.name} {rate} msg/s (reached {r['msg/s']:.0f}): p50 {r['p50 ms']:.2f} "
                          f"p99 {r['p99 ms']:.2f} p99.9 {r['p99.9 ms']:.2f} ms; load average "
                          f"{os.getloadavg()[0]:.1f}", flush=True)
                    for key in ("p50", "p99", "p99.9"):
                        values.setdefault((broker.name, f"{rate} msg/s {key}"), []).append(r[f"{key} ms"])
                if args.e2e_records:
                    topic = f"latency-e2e-{round_no}"
                    create_topic(broker.bootstrap, topic, 1)
                    try:
                        r = tools.java_end_to_end_latency(broker.bootstrap, topic, args.e2e_records)
                        print(f"{round_no} {broker.name} EndToEndLatency: p50 {r['p50 ms']:.0f} p99 {r['p99 ms']:.0f} "
                              f"p99.9 {r['p99.9 ms']:.0f} ms; load average {os.getloadavg()[0]:.1f}", flush=True)
                        for key in ("p50", "p99", "p99.9"):
                            values.setdefault((broker.name, f"EndToEndLatency {key}"), []).append(r[f"{key} ms"])
                    except tools.ToolFailed as exc:
                        print(f"{round_no} {broker.name} EndToEndLatency failed: {exc}", flush=True)
                    delete_topic(broker.bootstrap, topic)
    finally:
        for broker in brokers:
            broker.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    names = [b.name for b in brokers]
    print("\n| ms: median (min-max) | " + " | ".join(names) + " |")
    print("| --- |" + " ---: |" * len(names))
    for what in dict.fromkeys(k for _, k in values):
        cells = []
        for name in names:
            v = values.get((name, what))
            cells.append(f"{statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f})" if v else "-")
        print(f"| {what} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
