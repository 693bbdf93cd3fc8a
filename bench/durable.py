"""Durable acknowledgements (log.flush.on.ack, issue 29): produce throughput with the key on and off,
brokers alternated in one run.

    .venv/bin/python -m bench.durable [--rounds 4] [--count 300000]

Each round starts a fresh kafka-wire broker with `log.flush.on.ack=true`, then one with `false`
(Kafka's behaviour: answers from the page cache), and runs rdkafka_performance (bench.tools,
linger.ms=5) against a one-partition topic: 1 KiB records at acks=1 and at acks=all, 100-byte
records at acks=1. Prints each measurement, then per row the median MB/s of each setting and
their ratio (on / off).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from client import WireClient
from testing.broker_process import running_broker

from . import tools

ROWS = (("1 KiB, acks=1", 1024, 1), ("1 KiB, acks=all", 1024, -1), ("100 B, acks=1", 100, 1))


def _create(bootstrap: str, topic: str) -> None:
    with WireClient(bootstrap) as client:
        response = client.call("CreateTopics", 5, {"topics": [{
            "name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout_ms": 10000, "validate_only": False})
        if response.topics[0].error_code:
            raise RuntimeError(f"CreateTopics {topic}: error {response.topics[0].error_code}")


def measure(rounds: int, count: int) -> dict[tuple[str, bool], list[float]]:
    results: dict[tuple[str, bool], list[float]] = {}
    for round_no in range(rounds):
        for durable in (True, False):
            with tempfile.TemporaryDirectory(prefix="kafka-wire-durable-") as data:
                with running_broker(Path(data), config={"log.flush.on.ack": durable}) as broker:
                    for i, (name, size, acks) in enumerate(ROWS):
                        topic = f"durable-{i}"
                        _create(broker.bootstrap, topic)
                        rows = count if size >= 1024 else count * 3
                        mbs = tools.rdkafka_produce(broker.bootstrap, topic, rows, size, acks)["MB/s"]
                        results.setdefault((name, durable), []).append(mbs)
                        print(f"round {round_no} log.flush.on.ack={str(durable).lower()} {name}: {mbs:.0f} MB/s",
                              flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--count", type=int, default=300000, help="1 KiB records per row (100 B rows: 3x)")
    args = parser.parse_args(argv)
    results = measure(args.rounds, args.count)
    print("\n| row | key on (median MB/s) | key off | on/off |\n| --- | ---: | ---: | ---: |")
    for name, _, _ in ROWS:
        on = statistics.median(results[(name, True)])
        off = statistics.median(results[(name, False)])
        print(f"| {name} | {on:.0f} | {off:.0f} | {on / off:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
