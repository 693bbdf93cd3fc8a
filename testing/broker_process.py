"""Runs a real kafka-wire broker process for tests: its own port and data directory, a clean stop.

    with running_broker(config={"num.partitions": 3}) as broker:
        client = SomeClient(bootstrap_servers=broker.bootstrap)
        broker.restart()          # same port, same data: what a client sees across a restart
        broker.kill()             # SIGKILL: crash recovery

The broker runs as `python -m cli serve --set listeners=... --set log.dirs=...` with the
interpreter running the tests, so it needs no console script on PATH. Its stdout and stderr go
to `broker.log` in the data directory; when the block fails, or the broker dies without being
told to, or does not exit cleanly on SIGTERM, the end of that log is attached to the error.

tests/conftest.py builds the `broker` and `shared_broker` fixtures on this.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

# BrokerFailure is the runner's failure type under the name tests have always imported; free_port,
# free_port is imported from here too, beside running_broker, by tests and compat.
from .processes import ManagedProcess, accepts_connections, free_port, property_value, scratch_directory
from .processes import ProcessFailure as BrokerFailure

REPO_ROOT = Path(__file__).resolve().parent.parent


def default_workers() -> int:
    """Worker processes of a test broker that names none: KAFKA_WIRE_TEST_WORKERS, else the
    broker's default (num.worker.processes=0): one per core it may run on, as this process may."""
    return int(os.environ.get("KAFKA_WIRE_TEST_WORKERS") or 0) or max(1, len(os.sched_getaffinity(0)))


class BrokerProcess(ManagedProcess):
    """One broker process on 127.0.0.1:`port` with its data under `data_dir`; restartable."""

    def __init__(self, data_dir: Path, port: int | None = None, config: Mapping[str, object] | None = None,
                 startup_timeout: float = 20.0, stop_timeout: float = 15.0, open_files_limit: int | None = None,
                 poll_interval: float = 0.05):
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.config = dict(config or {})
        self.log_dir = self.data_dir / "logs"
        # Exit codes of stops that were not clean (SIGTERM must end the broker with status 0).
        self.unclean_exits: list[str] = []
        # open_files_limit: RLIMIT_NOFILE (soft and hard) of the broker process; None keeps the test process's.
        super().__init__(f"broker on {self.bootstrap}", None, self.data_dir / "broker.log", cwd=REPO_ROOT,
                         env=dict(os.environ, PYTHONUNBUFFERED="1"), startup_timeout=startup_timeout,
                         stop_timeout=stop_timeout, poll_interval=poll_interval, open_files_limit=open_files_limit)

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def command(self) -> list[str]:
        settings = {"listeners": f"PLAINTEXT://{self.bootstrap}", "log.dirs": str(self.log_dir), **self.config}
        # KAFKA_WIRE_TEST_WORKERS=N runs every test broker with N worker processes (broker/workers/)
        # unless the test chose.
        workers = os.environ.get("KAFKA_WIRE_TEST_WORKERS")
        if workers and "num.worker.processes" not in settings:
            settings["num.worker.processes"] = workers
        command = [sys.executable, "-m", "cli", "serve"]
        for key, value in settings.items():
            command += ["--set", f"{key}={property_value(value)}"]
        return command

    def is_ready(self) -> bool:
        return accepts_connections(self.host, self.port)

    def task_dump(self, wait: float = 1.0) -> str:
        """What every asyncio task of the running broker waits for (kill -USR1, broker/task_dump.py:
        with workers, each worker's), read back from its log: for the report of a test that saw
        the broker stop answering. Empty when it is not running and serving."""
        if not (self.is_running() and self.is_ready()):
            return ""
        with open(self.log_path, "rb") as log:
            start = log.seek(0, os.SEEK_END)
        os.kill(self.process.pid, signal.SIGUSR1)
        time.sleep(wait)
        with open(self.log_path, "rb") as log:
            log.seek(start)
            dumped = log.read().decode(errors="replace")
        return "\n".join(line for line in dumped.splitlines()
                         if "SIGUSR1" in line or not line[:4].isdigit())  # the dumps, not other log lines

    def _after_stop(self, sig: int, exited: bool, timeout: float) -> None:
        if not exited:
            self.unclean_exits.append(f"no exit {timeout:.0f}s after signal {sig}; killed")
        elif sig == signal.SIGTERM and self.process.returncode != 0:
            self.unclean_exits.append(f"exit status {self.process.returncode} after SIGTERM")

    def finish(self, require_clean_exit: bool = True) -> list[str]:
        """Stops the broker for good and says what went wrong that the test did not ask for:
        it died on its own, or (require_clean_exit) some SIGTERM did not end it with status 0."""
        problems = []
        if self.died_unexpectedly():
            problems.append(f"broker on {self.bootstrap} died unexpectedly (exit status {self.process.returncode})")
        self.stop()
        if require_clean_exit:
            problems += [f"broker on {self.bootstrap} did not stop cleanly: {what}" for what in self.unclean_exits]
        return problems


def serve_until_exit(*settings: str, data_dir, timeout: float = 60) -> subprocess.CompletedProcess:
    """`kafka-wire serve` with its data in `data_dir`, a free port and the given "key=value" settings,
    run to its exit and captured (status, stdout, stderr as text): a broker that must refuse to start."""
    command = [sys.executable, "-m", "cli", "serve", "--set", "listeners=PLAINTEXT://127.0.0.1:0",
               "--set", f"log.dirs={data_dir}"]
    for setting in settings:
        command += ["--set", setting]
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)


@contextlib.contextmanager
def running_broker(tmp_dir: str | os.PathLike | None = None, port: int | None = None,
                   config: Mapping[str, object] | None = None, startup_timeout: float = 20.0,
                   require_clean_exit: bool = True, open_files_limit: int | None = None) -> Iterator[BrokerProcess]:
    """A started broker for the duration of the block; stopped with SIGTERM (then SIGKILL) after.

    tmp_dir: where its data and log go (a fresh temporary directory when None, removed afterwards
    unless something failed). config: extra broker properties, Kafka's names ({"num.partitions": 3}).
    open_files_limit: the broker's RLIMIT_NOFILE (None: the test process's).
    Raises BrokerFailure after the block when the broker died on its own or (require_clean_exit)
    did not exit with status 0 on SIGTERM; an exception from the block gets the broker log attached.
    """
    with scratch_directory(tmp_dir, "kafka-wire-test-", "kafka-wire test broker") as data_dir:
        broker = BrokerProcess(data_dir, port=port, config=config, startup_timeout=startup_timeout,
                               open_files_limit=open_files_limit)
        try:
            broker.start()
            try:
                yield broker
            except BaseException as error:
                if not isinstance(error, (KeyboardInterrupt, GeneratorExit)):
                    error.add_note(broker.log_report())  # pytest shows notes with the failure
                raise
            problems = broker.finish(require_clean_exit)
            if problems:
                raise BrokerFailure("\n".join(problems) + "\n" + broker.log_report())
        finally:
            broker.stop()
