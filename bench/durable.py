"""Durable acknowledgements (log.flush.on.ack, issue 29): produce throughput and latency with the key
on and off, beside Apache Kafka at its defaults and with flush.messages=1, brokers alternated in one
run.

    .venv/bin/python -m bench.durable [--rounds 2] [--count 300000] [--partitions 10000] [--no-kafka]

Four brokers run at once (each a fresh port and data directory, the settings of bench.run):
kafka-wire with `log.flush.on.ack=true` (the default: answers once the records are on stable
storage), kafka-wire with it false (Kafka's behaviour: answers from the page cache), Apache Kafka
4.3.0 at its defaults (no fsync) and Apache Kafka with `log.flush.interval.messages=1` (an fsync
per append, its durable setting). Each round measures every broker in turn, the order reversed
from round to round:

- produce (rdkafka_performance, bench.tools, linger.ms=5, one partition): 1 KiB and 100 B records
  at acks=1 and at acks=all, with the broker's CPU seconds per GB and the bytes this machine wrote
  to its disks meanwhile (/proc/vmstat nr_written, every process's: with the key off a run shorter
  than the kernel's dirty_background threshold writes next to nothing, the page cache keeps it all;
  `--count 4000000` runs past it on a 24 GiB machine, so the page cache's writeback counts too);
- end-to-end latency p50/p99/p99.9 at 1k, 10k and 50k msg/s of 100 B records (bench.latency:
  rdkafka_performance producer and consumer, acks=1);
- in round 0 only, 1 KiB records over a topic of `--partitions` partitions created just before
  (librdkafka's random partitioner, as bench.run's compiled rows), beside the one-partition row.

Then it prints the medians of every row for every broker and the issue's ratios: kafka-wire with
the key on against Kafka's defaults (target >= 1.0 for throughput, <= 2.0 for p99 at 10k msg/s)
and against itself with the key off (target >= 0.9), and against Kafka with flush.messages=1.
`--no-kafka` leaves Apache Kafka out (the key on against off only).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time

from . import tools
from .admin import OUR_SETTINGS, create_topic, delete_topic
from .brokers import ApacheKafka, OurBroker, scratch_dir
from .latency import rdkafka_rate_latency, warm_up

ROWS = (("1 KiB, acks=1", 1024, 1), ("1 KiB, acks=all", 1024, -1), ("100 B, acks=1", 100, 1),
        ("100 B, acks=all", 100, -1))
RATES = (1000, 10_000, 50_000)
ON, OFF, KAFKA, KAFKA_FSYNC = "kafka-wire", "kafka-wire key off", "kafka", "kafka flush.messages=1"


def disk_bytes_written() -> int:
    """Bytes written to this machine's disks so far (/proc/vmstat nr_written, in pages)."""
    with open("/proc/vmstat") as f:
        for line in f:
            if line.startswith("nr_written "):
                return int(line.split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return 0


def _named(broker, name: str):
    broker.name = name
    return broker


def brokers_to_run(with_kafka: bool):
    scratch = scratch_dir()
    brokers = [_named(OurBroker(scratch / "on", {**OUR_SETTINGS, "log.flush.on.ack": "true"}), ON),
               _named(OurBroker(scratch / "off", {**OUR_SETTINGS, "log.flush.on.ack": "false"}), OFF)]
    if with_kafka and ApacheKafka.installed():
        brokers += [_named(ApacheKafka(scratch / "kafka"), KAFKA),
                    _named(ApacheKafka(scratch / "kafka-fsync", {"log.flush.interval.messages": "1"}), KAFKA_FSYNC)]
    return scratch, brokers


def measure(brokers, rounds: int, count: int, partitions: int, seconds: float) -> dict[tuple[str, str], list[float]]:
    """Every measurement per (row, broker), one value per round."""
    values: dict[tuple[str, str], list[float]] = {}

    def add(row: str, broker, value: float) -> None:
        values.setdefault((row, broker.name), []).append(value)

    for broker in brokers:
        warm_up(broker, create_topic, delete_topic)
    for round_no in range(rounds):
        for broker in brokers if round_no % 2 == 0 else brokers[::-1]:
            for i, (name, size, acks) in enumerate(ROWS):
                topic = f"durable-{round_no}-{i}"
                create_topic(broker.bootstrap, topic, 1)
                records = count if size >= 1024 else count * 3
                cpu, written = broker.cpu_seconds(), disk_bytes_written()
                try:
                    mbs = tools.rdkafka_produce(broker.bootstrap, topic, records, size, acks)["MB/s"]
                except tools.ToolFailed as exc:
                    print(f"round {round_no} {broker.name} {name}: failed: {exc}", flush=True)
                    continue
                finally:
                    delete_topic(broker.bootstrap, topic)
                gb = records * size / 1e9
                cpu = (broker.cpu_seconds() - cpu) / gb
                written = (disk_bytes_written() - written) / 1e6
                add(f"produce {name} (MB/s)", broker, mbs)
                add(f"broker CPU s per GB, {name}", broker, cpu)
                print(f"round {round_no} {broker.name} {name}: {mbs:.0f} MB/s, broker CPU {cpu:.2f} s/GB, "
                      f"{written:.0f} MB written to disk", flush=True)
            for rate in RATES:
                topic = f"durable-latency-{round_no}-{rate}"
                create_topic(broker.bootstrap, topic, 1)
                try:
                    r = rdkafka_rate_latency(broker.bootstrap, topic, rate, seconds)
                except tools.ToolFailed as exc:
                    print(f"round {round_no} {broker.name} {rate} msg/s: failed: {exc}", flush=True)
                    continue
                finally:
                    delete_topic(broker.bootstrap, topic)
                for key in ("p50", "p99", "p99.9"):
                    add(f"end-to-end {key} at {rate // 1000}k msg/s (ms)", broker, r[f"{key} ms"])
                print(f"round {round_no} {broker.name} {rate} msg/s (reached {r['msg/s']:.0f}): p50 "
                      f"{r['p50 ms']:.2f} p99 {r['p99 ms']:.2f} p99.9 {r['p99.9 ms']:.2f} ms", flush=True)
            if round_no == 0 and partitions > 1:
                for count_of in (1, partitions):
                    topic = f"durable-partitions-{count_of}"
                    started = time.monotonic()
                    create_topic(broker.bootstrap, topic, count_of)
                    created = time.monotonic() - started
                    try:
                        mbs = tools.rdkafka_produce(broker.bootstrap, topic, count, 1024, 1, partition=None)["MB/s"]
                    except tools.ToolFailed as exc:
                        print(f"{broker.name} over {count_of} partitions: failed: {exc}", flush=True)
                        continue
                    finally:
                        delete_topic(broker.bootstrap, topic)
                    add(f"produce 1 KiB over {count_of:,} partitions (MB/s)", broker, mbs)
                    print(f"{broker.name} over {count_of} partitions: {mbs:.0f} MB/s (topic created in "
                          f"{created:.1f} s)", flush=True)
    return values


def report(values: dict[tuple[str, str], list[float]], names: list[str], partitions: int) -> str:
    rows = list(dict.fromkeys(row for row, _ in values))
    median = {key: statistics.median(v) for key, v in values.items()}
    lines = ["| row | " + " | ".join(names) + " |", "| --- |" + " ---: |" * len(names)]
    for row in rows:
        cells = [f"{median[(row, name)]:,.2f}" if (row, name) in median else "-" for name in names]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")

    def ratio(row: str, a: str, b: str) -> float | None:
        if (row, a) in median and (row, b) in median and median[(row, b)]:
            return median[(row, a)] / median[(row, b)]
        return None

    lines += ["", "| target | measured | verdict |", "| --- | --- | --- |"]
    for name, _, _ in ROWS:
        row = f"produce {name} (MB/s)"
        for other, target in ((KAFKA, 1.0), (OFF, 0.9)):
            r = ratio(row, ON, other)
            if r is not None:
                lines.append(f"| {name}: key on / {other} >= {target} | {median[(row, ON)]:.0f} vs "
                             f"{median[(row, other)]:.0f} MB/s = {r:.2f} | {'met' if r >= target else 'MISSED'} |")
        r = ratio(row, ON, KAFKA_FSYNC)
        if r is not None:
            lines.append(f"| {name}: key on / {KAFKA_FSYNC} (no target) | {median[(row, ON)]:.0f} vs "
                         f"{median[(row, KAFKA_FSYNC)]:.0f} MB/s = {r:.2f} | - |")
    row = "end-to-end p99 at 10k msg/s (ms)"
    r = ratio(row, ON, KAFKA)
    if r is not None:
        lines.append(f"| p99 at 10k msg/s: key on / kafka <= 2.0 | {median[(row, ON)]:.2f} vs "
                     f"{median[(row, KAFKA)]:.2f} ms = {r:.2f} | {'met' if r <= 2.0 else 'MISSED'} |")
    one, most = "produce 1 KiB over 1 partitions (MB/s)", f"produce 1 KiB over {partitions:,} partitions (MB/s)"
    if (one, ON) in median and (most, ON) in median:
        r = median[(most, ON)] / median[(one, ON)]
        lines.append(f"| key on: {partitions:,} partitions >= 0.5 of one | {median[(most, ON)]:.0f} vs "
                     f"{median[(one, ON)]:.0f} MB/s = {r:.2f} | {'met' if r >= 0.5 else 'MISSED'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.durable", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--count", type=int, default=300000, help="1 KiB records per row (100 B rows: 3x)")
    parser.add_argument("--partitions", type=int, default=10000, help="the many-partitions row (1: none)")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per latency rate")
    parser.add_argument("--no-kafka", action="store_true", help="kafka-wire with the key on and off only")
    args = parser.parse_args(argv)
    scratch, brokers = brokers_to_run(not args.no_kafka)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    try:
        for broker in brokers:
            broker.start(timeout=120.0)
        values = measure(brokers, args.rounds, args.count, args.partitions, args.seconds)
    finally:
        for broker in brokers:
            broker.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n`.venv/bin/python -m bench.durable {' '.join(sys.argv[1:] if argv is None else argv)}`".rstrip() +
          f", started {started}, {args.rounds} round(s), medians\n")
    print(report(values, [b.name for b in brokers], args.partitions))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
