"""Runs a `kafka-wire compat ...` command the way the CI tests of the compat suites do.

A test may start another test's command early, so that the two run at the same time (both mostly
wait: on timers, on the reference Kafka), with `start_early(name, ...)`; that other test then takes
it over with `started_early(name)` and judges its result as if it had run it itself.
"""

from __future__ import annotations

import atexit
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from testing.processes import die_with_parent
from tests.conftest import REPO_ROOT


class CompatCommand:
    """`kafka-wire compat <args>` from the repository root, started at construction; result()
    waits for it: the test fails if it has not finished `timeout` seconds after its start."""

    def __init__(self, args: list[str], timeout: float):
        self.args = list(args)
        self.timeout = timeout
        self._stdout = tempfile.TemporaryFile()
        self._stderr = tempfile.TemporaryFile()
        self.started_at = time.monotonic()
        self.process = subprocess.Popen([sys.executable, "-m", "cli", "compat", *self.args], stdout=self._stdout,
                                        stderr=self._stderr, stdin=subprocess.DEVNULL, cwd=REPO_ROOT,
                                        preexec_fn=die_with_parent)

    def _read(self) -> tuple[str, str]:
        texts = []
        for file in (self._stdout, self._stderr):
            file.seek(0)
            texts.append(file.read().decode(errors="replace"))
        return texts[0], texts[1]

    def result(self) -> tuple[subprocess.CompletedProcess, str]:
        """The finished process and its printed output (stdout, then stderr's tail)."""
        try:
            self.process.wait(max(1.0, self.started_at + self.timeout - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"`kafka-wire compat {' '.join(self.args)}` did not finish in {self.timeout}s:\n"
                        f"{self._read()[0]}", pytrace=False)
        stdout, stderr = self._read()
        done = subprocess.CompletedProcess(self.process.args, self.process.returncode, stdout, stderr)
        output = stdout + (f"\n--- stderr ---\n{stderr[-5000:]}" if stderr.strip() else "")
        print(output)
        return done, output

    def stop(self) -> None:
        """SIGTERM (the command stops the brokers it started), SIGKILL 30 s later."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def run_compat(args: list[str], timeout: float) -> tuple[subprocess.CompletedProcess, str]:
    """`kafka-wire compat <args>` from the repository root; the test fails if it does not finish in
    `timeout` seconds. Returns the finished process and its printed output (stdout, then stderr's tail)."""
    return CompatCommand(args, timeout).result()


_EARLY: dict[str, CompatCommand] = {}


def selected(session, test: str) -> bool:
    """Whether `test` ("test_module.py::test_name") is among the tests pytest will run in `session`."""
    return any(item.nodeid.endswith(test) for item in session.items)


def start_early(name: str, args: list[str], timeout: float) -> None:
    """Starts the command `name` of a test that runs later in this session (see started_early)."""
    if name not in _EARLY:
        _EARLY[name] = CompatCommand(args, timeout)


def started_early(name: str) -> CompatCommand | None:
    """The command `name` if an earlier test started it (it is then the caller's), else None."""
    return _EARLY.pop(name, None)


@atexit.register
def _stop_unclaimed() -> None:
    for command in _EARLY.values():  # its test did not run (a failure ended the session first)
        command.stop()
