"""Durable acknowledgements (log.flush.on.ack, issue 29): produce throughput with the key on and off,
brokers alternated in one run.

    .venv/bin/python -m bench.durable [--rounds 4] [--count 300000]

Each round starts a fresh kafka-wire broker with `log.flush.on.ack=true`, then one with `false`
(Kafka's behaviour: answers from the page cache), and runs rdkafka_performance (bench.tools,
linger.ms=5) against a one-partition topic: 1 KiB records at acks=1 and at acks=all, 100-byte
records at acks=1. Prints each measurement with the broker's CPU seconds per GB produced and the
bytes this machine wrote to its disks meanwhile (/proc/vmstat nr_written, every process's: with
the key off a run shorter than the kernel's dirty_background threshold writes next to nothing,
the page cache keeps it all), then per row the median MB/s and CPU s/GB of each setting and their
ratio (on / off). `--count 4000000` (4 GB per 1 KiB row) runs past that threshold on a 24 GiB
machine, so that the key off pays for its writeback during the run too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from client import WireClient
from testing.broker_process import running_broker

from .brokers import _cpu_ticks

from . import tools

ROWS = (("1 KiB, acks=1", 1024, 1), ("1 KiB, acks=all", 1024, -1), ("100 B, acks=1", 100, 1))


def _create(bootstrap: str, topic: str) -> None:
    with WireClient(bootstrap) as client:
        response = client.call("CreateTopics", 5, {"topics": [{
            "name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout_ms": 10000, "validate_only": False})
        if response.topics[0].error_code:
            raise RuntimeError(f"CreateTopics {topic}: error {response.topics[0].error_code}")


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def disk_bytes_written() -> int:
    """Bytes written to this machine's disks so far (/proc/vmstat nr_written, in pages)."""
    with open("/proc/vmstat") as f:
        for line in f:
            if line.startswith("nr_written "):
                return int(line.split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return 0


def measure(rounds: int, count: int) -> dict[tuple[str, bool], list[tuple[float, float]]]:
    """(MB/s, broker CPU s per GB) per (row, key on) and round."""
    results: dict[tuple[str, bool], list[tuple[float, float]]] = {}
    for round_no in range(rounds):
        for durable in (True, False):
            with tempfile.TemporaryDirectory(prefix="kafka-wire-durable-") as data:
                with running_broker(Path(data), config={"log.flush.on.ack": durable}) as broker:
                    for i, (name, size, acks) in enumerate(ROWS):
                        topic = f"durable-{i}"
                        _create(broker.bootstrap, topic)
                        rows = count if size >= 1024 else count * 3
                        ticks, written = _cpu_ticks(broker.process.pid), disk_bytes_written()
                        mbs = tools.rdkafka_produce(broker.bootstrap, topic, rows, size, acks)["MB/s"]
                        gb = rows * size / 1e9
                        cpu = (_cpu_ticks(broker.process.pid) - ticks) / _CLOCK_TICKS / gb
                        written = (disk_bytes_written() - written) / 1e6
                        results.setdefault((name, durable), []).append((mbs, cpu))
                        print(f"round {round_no} log.flush.on.ack={str(durable).lower()} {name}: {mbs:.0f} MB/s, "
                              f"broker CPU {cpu:.2f} s/GB, {written:.0f} MB written to disk", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--count", type=int, default=300000, help="1 KiB records per row (100 B rows: 3x)")
    args = parser.parse_args(argv)
    results = measure(args.rounds, args.count)
    print("\n| row | key on (median MB/s) | key off | on/off | CPU s/GB on | off |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, _, _ in ROWS:
        on = statistics.median(mbs for mbs, _ in results[(name, True)])
        off = statistics.median(mbs for mbs, _ in results[(name, False)])
        cpu_on = statistics.median(cpu for _, cpu in results[(name, True)])
        cpu_off = statistics.median(cpu for _, cpu in results[(name, False)])
        print(f"| {name} | {on:.0f} | {off:.0f} | {on / off:.2f}x | {cpu_on:.2f} | {cpu_off:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
