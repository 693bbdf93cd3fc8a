"""Runs load generator processes (bench.load) together: all connect, then all start at once."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from testing.broker_process import REPO_ROOT


class LoadFailed(RuntimeError):
    pass


def run_together(jobs: list[tuple[str, dict]], timeout: float = 600.0, go_delay: float = 0.0) -> list[dict]:
    """Start one process per (role, params); when all are ready say go; return their results.

    Processes listed first are released first (a latency consumer before its producer), with
    `go_delay` seconds between them.
    """
    processes = []
    try:
        for role, params in jobs:
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "bench.load", role, json.dumps(params)], cwd=REPO_ROOT,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for process in processes:
            line = process.stdout.readline().strip()
            if line != "ready":
                raise LoadFailed(f"load process said {line!r}: {process.stderr.read()[-2000:]}")
        for process in processes:
            process.stdin.write("go\n")
            process.stdin.flush()
            if go_delay:
                time.sleep(go_delay)
        results = []
        deadline = time.monotonic() + timeout
        for process in processes:
            out, err = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
            lines = [line for line in out.splitlines() if line.startswith("{")]
            if process.returncode != 0 or not lines:
                raise LoadFailed(f"load process failed ({process.returncode}): {err[-2000:]}")
            result = json.loads(lines[-1])
            if "error" in result:
                raise LoadFailed(result["error"])
            results.append(result)
        return results
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def throughput(results: list[dict]) -> tuple[float, int, int]:
    """(seconds from the first start to the last end, messages, bytes) over processes."""
    start = min(r["start"] for r in results)
    end = max(r["end"] for r in results)
    return end - start, sum(r["messages"] for r in results), sum(r["bytes"] for r in results)
