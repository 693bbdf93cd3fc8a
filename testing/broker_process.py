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
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LOG_TAIL_LINES = 80
LOG_TAIL_CHARS = 12_000


class BrokerFailure(AssertionError):
    """The broker process did something a test did not ask for: failed to start, died, or did not
    stop cleanly. An AssertionError so pytest reports it as a test failure, with the broker's log."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (the OS picks it; another process could still take
    it before the broker binds, in which case the broker fails to start and says so)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def signal_and_wait(process: subprocess.Popen, sig: int, timeout: float) -> bool:
    """Sends `sig` to a running process and waits for it to exit; SIGKILLs it after `timeout`
    seconds. True when it exited by itself within the time."""
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(sig)
    try:
        process.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return False


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last `lines` lines of a process's log (at most LOG_TAIL_CHARS), for failure reports."""
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        return f"(no log: {error})"
    return "\n".join(text.splitlines()[-lines:])[-LOG_TAIL_CHARS:]


def _die_with_parent() -> None:
    """Runs in the broker's child process before exec (Linux): SIGKILL it when the test process
    dies, so a killed test run leaves no broker holding a port and a data directory."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _child_setup(open_files_limit: int | None):
    """What the broker's child process does before exec: die with its parent, and run under a
    lowered RLIMIT_NOFILE when asked (tests of many partitions with few file descriptors)."""
    def setup() -> None:
        if sys.platform == "linux":
            _die_with_parent()
        if open_files_limit is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files_limit, open_files_limit))
    return setup


def _property_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # Kafka's spelling, not Python's
    return str(value)


class BrokerProcess:
    """One broker process on 127.0.0.1:`port` with its data under `data_dir`; restartable."""

    def __init__(self, data_dir: Path, port: int | None = None, config: Mapping[str, object] | None = None,
                 startup_timeout: float = 20.0, stop_timeout: float = 15.0, open_files_limit: int | None = None):
        self.data_dir = Path(data_dir)
        # RLIMIT_NOFILE (soft and hard) of the broker process; None keeps the test process's.
        self.open_files_limit = open_files_limit
        self.port = port or free_port()
        self.config = dict(config or {})
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.log_path = self.data_dir / "broker.log"
        self.log_dir = self.data_dir / "logs"
        self.process: subprocess.Popen | None = None
        self.starts = 0
        # Set while a stop we asked for is under way or done, so a dead process is not reported
        # as a crash; cleared by start().
        self._stopping = False
        # Exit codes of stops that were not clean (SIGTERM must end the broker with status 0).
        self.unclean_exits: list[str] = []

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def command(self) -> list[str]:
        settings = {"listeners": f"PLAINTEXT://{self.bootstrap}", "log.dirs": str(self.log_dir), **self.config}
        command = [sys.executable, "-m", "cli", "serve"]
        for key, value in settings.items():
            command += ["--set", f"{key}={_property_value(value)}"]
        return command

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def died_unexpectedly(self) -> bool:
        return self.process is not None and self.process.poll() is not None and not self._stopping

    def start(self) -> None:
        if self.is_running():
            raise RuntimeError("broker already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(self.log_path, "ab") as log:
            log.write(f"=== start #{self.starts}: {' '.join(self.command)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(self.command, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                            preexec_fn=_child_setup(self.open_files_limit))
        self._stopping = False
        self._wait_until_accepting()

    def _wait_until_accepting(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.process.poll() is not None:
                raise BrokerFailure(f"broker exited with status {self.process.returncode} before accepting "
                                    f"connections on {self.bootstrap}\n{self.log_report()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    pass
            except OSError:
                if time.monotonic() >= deadline:
                    self.stop(signal.SIGKILL)
                    raise BrokerFailure(f"broker did not accept connections on {self.bootstrap} within "
                                        f"{self.startup_timeout:.0f}s\n{self.log_report()}") from None
                time.sleep(0.05)
                continue
            # Something accepts: make sure it is our broker, not another process that got the port.
            if self.process.poll() is None:
                return

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        """Sends `sig` and waits for the exit (SIGKILL after stop_timeout). Returns the exit status.
        After a SIGTERM anything but status 0 is recorded in `unclean_exits`."""
        if self.process is None:
            return None
        self._stopping = True
        if self.process.poll() is None:
            if not signal_and_wait(self.process, sig, self.stop_timeout):
                self.unclean_exits.append(f"no exit {self.stop_timeout:.0f}s after signal {sig}; killed")
            elif sig == signal.SIGTERM and self.process.returncode != 0:
                self.unclean_exits.append(f"exit status {self.process.returncode} after SIGTERM")
        return self.process.returncode

    def kill(self) -> int | None:
        """SIGKILL: the broker gets no chance to flush or close anything (crash-recovery tests)."""
        return self.stop(signal.SIGKILL)

    def restart(self, sig: int = signal.SIGTERM) -> None:
        """Stops the broker (with `sig`) and starts it again on the same port with the same data."""
        self.stop(sig)
        self.start()

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return log_tail(self.log_path, lines)

    def log_report(self) -> str:
        return f"--- last lines of {self.log_path} ---\n{self.log_tail()}\n--- end of broker log ---"

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
    own_dir = tmp_dir is None
    data_dir = Path(tempfile.mkdtemp(prefix="kafka-wire-test-")) if own_dir else Path(tmp_dir)
    broker = BrokerProcess(data_dir, port=port, config=config, startup_timeout=startup_timeout,
                           open_files_limit=open_files_limit)
    failed = False
    try:
        broker.start()
        try:
            yield broker
        except BaseException as error:
            failed = True
            if not isinstance(error, (KeyboardInterrupt, GeneratorExit)):
                error.add_note(broker.log_report())  # pytest shows notes with the failure
            raise
        problems = broker.finish(require_clean_exit)
        if problems:
            failed = True
            raise BrokerFailure("\n".join(problems) + "\n" + broker.log_report())
    except BaseException:
        failed = True
        raise
    finally:
        broker.stop()
        if own_dir:
            if failed:
                print(f"kafka-wire test broker data kept in {data_dir}", file=sys.stderr)
            else:
                shutil.rmtree(data_dir, ignore_errors=True)
