"""The cost of handing requests between worker processes (issue 25): broker CPU per GB produced by
one broker of W workers against one process, alternated in one run.

    .venv/bin/python -m bench.handover [--rounds 3] [--workers 2] [--records 400000] [--flush-on-ack false]
                                       [--connections 8] [--partitions 16]

Each round starts a one-process broker and a broker of W workers (the order alternating by round),
creates a 16-partition topic and runs one franz-go load process (bench/loadgen, 8 producer
connections, 1 KiB records, acks=1; `--connections` and `--partitions` change the two counts, e.g.
1,000 connections into 10 partitions as bench.run's `connections` scenario), reading the CPU time of every process of the broker from
/proc (bench.scaling.run_loads). Prints each measurement, then the medians and their ratio (the
issue's target on 2 cores: W=2 at most 1.1x W=1). `--flush-on-ack false` (the default here) leaves
the durable acknowledgements' syncs (log.flush.on.ack) out of the comparison: their kernel
writeback is charged to whichever process syncs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from .admin import create_topic
from .brokers import OurBroker
from .scaling import OUR_SETTINGS, PARTITIONS, RECORD_SIZE, WORKERS_KEY, Load, run_loads


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument("--flush-on-ack", default="false", choices=("true", "false"))
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=PARTITIONS)
    args = parser.parse_args(argv)
    cpu: dict[int, list[float]] = {1: [], args.workers: []}
    for round_no in range(args.rounds):
        order = (1, args.workers) if round_no % 2 == 0 else (args.workers, 1)
        for workers in order:
            with tempfile.TemporaryDirectory(prefix="kafka-wire-handover-") as data:
                broker = OurBroker(Path(data), {**OUR_SETTINGS, WORKERS_KEY: str(workers),
                                                "log.flush.on.ack": args.flush_on_ack})
                broker.start()
                try:
                    create_topic(broker.bootstrap, "handover", args.partitions)
                    measured = run_loads([broker], [Load(broker, "produce", (
                        "-topic", "handover", "-connections", str(args.connections), "-records", str(args.records),
                        "-size", str(RECORD_SIZE)))])
                finally:
                    broker.stop()
            cpu[workers].append(measured.cpu_per_gb)
            print(f"round {round_no} W={workers}: {measured.mb_per_s:.0f} MB/s, {measured.cpu_per_gb:.2f} broker CPU s "
                  f"per GB", flush=True)
    one, many = statistics.median(cpu[1]), statistics.median(cpu[args.workers])
    print(f"median broker CPU s per GB: W=1 {one:.2f}, W={args.workers} {many:.2f} ({many / one:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
