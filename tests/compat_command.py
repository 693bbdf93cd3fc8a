"""Runs a `kafka-wire compat ...` command the way the CI tests of the compat suites do."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


def run_compat(args: list[str], timeout: float) -> tuple[subprocess.CompletedProcess, str]:
    """`kafka-wire compat <args>` from the repository root; the test fails if it does not finish in
    `timeout` seconds. Returns the finished process and its printed output (stdout, then stderr's tail)."""
    command = [sys.executable, "-m", "cli", "compat", *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, cwd=REPO_ROOT)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"`kafka-wire compat {' '.join(args)}` did not finish in {timeout}s:\n{expired.stdout}",
                    pytrace=False)
    output = done.stdout + (f"\n--- stderr ---\n{done.stderr[-5000:]}" if done.stderr.strip() else "")
    print(output)
    return done, output
