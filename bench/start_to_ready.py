"""Start-to-ready of `kafka-wire serve` alone: exec to the first ApiVersions answer, N times.

The same measurement as bench/run.py's start-to-ready section (bench/brokers.py OurBroker), without
a peer broker or the other workloads, for checking a start-up change quickly:

    .venv/bin/python -m bench.start_to_ready --runs 15
    .venv/bin/python -m bench.start_to_ready --runs 15 --source /tmp/kw-head   # another checkout

Prints the median, minimum and maximum (seconds and CPU seconds) for an empty data directory and
for a restart on the directory the first start left behind. The machine is shared and noisy:
compare medians of many runs taken back to back.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench import brokers
from bench.brokers import OurBroker


def measure(runs: int, source: str | None = None) -> dict[str, list[tuple[float, float]]]:
    results: dict[str, list[tuple[float, float]]] = {"empty data directory": [], "restart": []}
    if source is not None:
        # `python -m cli` imports from the working directory first: run another checkout
        # (e.g. `git archive HEAD | tar -x -C /tmp/kw-head`) with the same interpreter.
        brokers.REPO_ROOT = Path(source)
    with tempfile.TemporaryDirectory(prefix="kw-ready-") as scratch:
        for i in range(runs):
            broker = OurBroker(Path(scratch) / f"ready-{i}")
            for label in results:
                try:
                    seconds = broker.start()
                    results[label].append((seconds, broker.cpu_to_ready))
                finally:
                    broker.stop()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--source", help="run the broker from this source tree instead of this one")
    args = parser.parse_args(argv)
    for label, samples in measure(args.runs, args.source).items():
        wall = [s for s, _ in samples]
        cpu = [c for _, c in samples]
        print(f"start-to-ready ({label}), {len(samples)} runs: median {statistics.median(wall):.3f} s "
              f"(min {min(wall):.3f}, max {max(wall):.3f}); CPU median {statistics.median(cpu):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
