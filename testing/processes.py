"""Runs a child process for tests, compat suites and benchmarks: spawn, wait until ready, stop, restart.

    server = ManagedProcess("echo server", [sys.executable, "echo.py", str(port)], tmp / "echo.log",
                            ready=lambda: accepts_connections("127.0.0.1", port))
    server.start()        # back when ready; ProcessFailure, with the end of its log, if it died or never got ready
    server.spawn(); server.wait_ready()   # the same in two steps: start several, then wait for each
    server.restart()      # SIGTERM and wait (SIGKILL after stop_timeout), then start again
    server.kill()         # SIGKILL

The process's stdout and stderr are appended to `log_path`, after a line `=== start #N: <command>`
for each start. It runs in a session of its own (a Ctrl-C in the terminal reaches the test run,
which then stops it, not the process itself) and, on Linux, is SIGKILLed when the process that
started it dies, so a killed test run leaves nothing holding a port or a data directory.

Every process the project starts and waits on is one of these: testing/broker_process.py's
BrokerProcess and testing/cluster.py's ZooKeeperProcess (subclasses with their own command line,
configuration and readiness check), compat/reference_kafka.py's ReferenceKafka, compat/faults/'s
brokers, ZooKeeper servers and lazyfs mounts in network namespaces, compat/peers.py's JVMs and
bench/brokers.py's brokers under test.
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

LOG_TAIL_LINES = 80
LOG_TAIL_CHARS = 12_000


class ProcessFailure(AssertionError):
    """A managed process did something its user did not ask for: it failed to start or to get
    ready, died, or did not stop cleanly. An AssertionError so pytest reports it as a test
    failure; the message carries the end of the process's log."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (the OS picks it; another process could still take
    it before ours binds, in which case ours fails to start and says so)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def accepts_connections(host: str, port: int, timeout: float = 0.5) -> bool:
    """Something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


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


def processes_in_group(group: int) -> list[int]:
    """The live (not zombie) processes of process group `group`, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # gone meanwhile
            if fields[0] != "Z" and int(fields[2]) == group:
                members.append(int(entry.name))
    return members


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last `lines` lines of a process's log (at most LOG_TAIL_CHARS), for failure reports."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as error:
        return f"(no log: {error})"
    return "\n".join(text.splitlines()[-lines:])[-LOG_TAIL_CHARS:]


def property_value(value) -> str:
    """A Python value as a Kafka property value: booleans spelt as Java spells them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@contextlib.contextmanager
def scratch_directory(given: str | Path | None, prefix: str, what: str) -> Iterator[Path]:
    """`given` as it is, or a fresh temporary directory that is removed after the block: kept,
    and its path printed, when the block fails, so a failed run's logs and data can be read."""
    if given is not None:
        yield Path(given)
        return
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    except BaseException:
        print(f"{what} data kept in {path}", file=sys.stderr)
        raise
    shutil.rmtree(path, ignore_errors=True)


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Runs in a child process before exec (Linux): the kernel sends it `sig` when the process
    that started it dies. Elsewhere it does nothing."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, sig)
    except (OSError, AttributeError):
        pass


def _child_setup(dies_with_parent: bool, open_files_limit: int | None) -> Callable[[], None] | None:
    """What the child does before exec, or None when nothing (then Popen can spawn without a fork
    of the whole parent, which matters to the benchmark's start-to-ready times)."""
    dies_with_parent = dies_with_parent and sys.platform == "linux"
    if not dies_with_parent and open_files_limit is None:
        return None

    def setup() -> None:
        if dies_with_parent:
            die_with_parent()
        if open_files_limit is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files_limit, open_files_limit))
    return setup


class ManagedProcess:
    """One child process, restartable, with its output in `log_path`.

    label: what it is, for messages ("broker on 127.0.0.1:9092"). command: its argv (a subclass
    may instead override the `command` property, read at each start). ready: a check called every
    `poll_interval` seconds after the spawn until it returns true (an exception it raises counts
    as "not yet", and the last one is reported); None: ready once spawned. A subclass may override
    `is_ready()` instead. startup_timeout: seconds from the spawn to ready, after which the process
    is SIGKILLed and ProcessFailure raised. stop_timeout: seconds a stop waits for the exit before
    SIGKILL. cwd, env: the child's (None: this process's). dies_with_parent: SIGKILLed when this
    process dies (Linux). open_files_limit: the child's RLIMIT_NOFILE (None: this process's).
    """

    def __init__(self, label: str, command: Sequence[str] | None, log_path: Path, *,
                 ready: Callable[[], object] | None = None, cwd: Path | str | None = None,
                 env: Mapping[str, str] | None = None, startup_timeout: float = 20.0, stop_timeout: float = 15.0,
                 poll_interval: float = 0.05, dies_with_parent: bool = True, open_files_limit: int | None = None):
        self.label = label
        self._command = None if command is None else list(command)
        self.log_path = Path(log_path)
        self._ready = ready
        self.cwd = cwd
        self.env = None if env is None else dict(env)
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.poll_interval = poll_interval
        self.dies_with_parent = dies_with_parent
        self.open_files_limit = open_files_limit
        self.process: subprocess.Popen | None = None
        self.starts = 0
        self.started_at = 0.0  # time.monotonic() just before the last spawn
        self.seconds_to_ready: float | None = None  # from the last spawn to ready
        # Set while a stop we asked for is under way or done, so a dead process is not reported
        # as a crash; cleared by start().
        self._stopping = False

    @property
    def command(self) -> list[str]:
        if self._command is None:
            raise NotImplementedError(f"{type(self).__name__} gives no command")
        return list(self._command)

    def is_ready(self) -> object:
        return self._ready is None or self._ready()

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def died_unexpectedly(self) -> bool:
        return self.process is not None and self.process.poll() is not None and not self._stopping

    @property
    def returncode(self) -> int | None:
        """The exit status once it has exited (a negative signal number when a signal ended it)."""
        return None if self.process is None else self.process.poll()

    def start(self) -> ManagedProcess:
        """Spawns the process and waits until it is ready (see wait_ready)."""
        self.spawn()
        self.wait_ready()
        return self

    def spawn(self) -> ManagedProcess:
        """Spawns the process without waiting for it to be ready: several processes started at once
        get ready at the same time, each then waited for with wait_ready()."""
        if self.is_running():
            raise RuntimeError(f"{self.label} already running")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        command = self.command
        with open(self.log_path, "ab") as log:
            log.write(f"=== start #{self.starts}: {' '.join(command)}\n".encode())
            log.flush()
            self.started_at = time.monotonic()
            self.process = subprocess.Popen(command, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                            preexec_fn=_child_setup(self.dies_with_parent, self.open_files_limit))
        self._stopping = False
        self.seconds_to_ready = None
        return self

    def wait_ready(self) -> float:
        """Until is_ready() says so while the process still runs (so that another process holding
        its port does not pass for it); the seconds from the spawn. ProcessFailure when it exits
        first, or when startup_timeout passes (it is SIGKILLed then)."""
        deadline = self.started_at + self.startup_timeout
        last_error: Exception | None = None
        while True:
            if self.process.poll() is not None:
                raise ProcessFailure(f"{self.label} exited with status {self.process.returncode} before it was "
                                     f"ready\n{self.log_report()}")
            try:
                ready = self.is_ready()
            except Exception as error:  # not up yet: refused, reset, not answering yet
                ready, last_error = False, error
            if ready:
                if self.process.poll() is None:
                    self.seconds_to_ready = time.monotonic() - self.started_at
                    return self.seconds_to_ready
                continue  # it died just now: reported above
            if time.monotonic() >= deadline:
                self.stop(signal.SIGKILL)
                last = f" (last: {last_error!r})" if last_error is not None else ""
                raise ProcessFailure(f"{self.label} was not ready within {self.startup_timeout:.0f}s{last}\n"
                                     f"{self.log_report()}")
            time.sleep(self.poll_interval)

    def stop(self, sig: int = signal.SIGTERM, timeout: float | None = None) -> int | None:
        """Sends `sig` and waits for the exit, SIGKILL after `timeout` (default stop_timeout)
        seconds. The exit status; None when it was never started."""
        if self.process is None:
            return None
        self._stopping = True
        if self.process.poll() is None:
            timeout = self.stop_timeout if timeout is None else timeout
            exited = signal_and_wait(self.process, sig, timeout)
            self._after_stop(sig, exited, timeout)
        return self.process.returncode

    def _after_stop(self, sig: int, exited: bool, timeout: float) -> None:
        """Called after a stop of a running process: `exited` is False when it had to be SIGKILLed
        after `timeout` seconds. For subclasses that judge how their process stops."""

    def kill(self) -> int | None:
        """SIGKILL: the process gets no chance to flush or close anything."""
        return self.stop(signal.SIGKILL)

    def kill_group(self, timeout: float = 10.0) -> None:
        """SIGKILL of every process of its group (its own session: a broker and its workers at once),
        back once none of them runs any more, so none can write after this returns (a power cut).
        ProcessFailure when one outlives `timeout`."""
        if self.process is None:
            return
        group = self.process.pid
        self.send_signal(signal.SIGKILL)
        self.kill()
        deadline = time.monotonic() + timeout
        while members := processes_in_group(group):
            if time.monotonic() > deadline:
                raise ProcessFailure(f"{self.label}: processes {members} outlived SIGKILL")
            time.sleep(0.02)

    def restart(self, sig: int = signal.SIGTERM) -> None:
        """Stops the process (with `sig`) and starts it again."""
        self.stop(sig)
        self.start()

    def send_signal(self, sig: int) -> None:
        """Sends `sig` if it runs (SIGSTOP to pause it, SIGCONT to let it run again, ...), to its
        whole process group (its own session): a broker with several worker processes pauses as one."""
        if self.is_running():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, sig)

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return log_tail(self.log_path, lines)

    def log_report(self, lines: int = LOG_TAIL_LINES) -> str:
        return (f"--- last lines of {self.log_path} ({self.label}) ---\n{self.log_tail(lines)}\n"
                f"--- end of {self.log_path.name} ---")
