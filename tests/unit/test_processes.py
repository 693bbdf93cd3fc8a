"""testing/processes.py's runner with real tiny child processes: ready, dead before ready, never
ready, a stop that must escalate to SIGKILL, restart, and a child that dies with its parent."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testing.processes import (ManagedProcess, ProcessFailure, accepts_connections, free_port, log_tail,
                               processes_in_group, property_value, scratch_directory, signal_and_wait)

REPO_ROOT = Path(__file__).resolve().parents[2]

LISTENER = """
import socket, sys, time
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen()
print("listening", flush=True)
time.sleep(60)
"""

# Ignores SIGTERM, so only the SIGKILL after the stop's timeout ends it.
STUBBORN = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("stubborn and ready", flush=True)
time.sleep(60)
"""


def python(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def log_says(path: Path, line: str):
    """A readiness check: `line` is a whole line of the log (the start header quotes the command,
    so a substring test would be true at once)."""
    return lambda: line in path.read_text(errors="replace").splitlines()


def test_a_listener_is_ready_once_its_port_accepts_and_stops_on_sigterm(tmp_path):
    port = free_port()
    assert not accepts_connections("127.0.0.1", port)
    server = ManagedProcess("listener", python(LISTENER, str(port)), tmp_path / "listener.log",
                            ready=lambda: accepts_connections("127.0.0.1", port))
    assert server.start() is server
    try:
        assert server.is_running() and accepts_connections("127.0.0.1", port)
        assert 0 < server.seconds_to_ready < server.startup_timeout
        assert server.returncode is None
    finally:
        status = server.stop()
    assert status == -signal.SIGTERM == server.returncode
    assert not server.is_running() and not server.died_unexpectedly()
    assert server.log_tail().splitlines()[0].startswith("=== start #1: ")


def test_spawned_processes_start_up_together_and_each_is_waited_for(tmp_path):
    ports = [free_port(), free_port()]
    servers = [ManagedProcess(f"listener {n}", python(LISTENER, str(port)), tmp_path / f"listener-{n}.log",
                              ready=lambda port=port: accepts_connections("127.0.0.1", port))
               for n, port in enumerate(ports)]
    try:
        assert [server.spawn() for server in servers] == servers
        assert all(server.is_running() and server.seconds_to_ready is None for server in servers)
        for server, port in zip(servers, ports):
            assert 0 < server.wait_ready() == server.seconds_to_ready
            assert accepts_connections("127.0.0.1", port)
    finally:
        for server in servers:
            server.stop()


def test_ready_when_the_log_says_so(tmp_path):
    log = tmp_path / "stubborn.log"
    process = ManagedProcess("stubborn", python(STUBBORN), log, ready=log_says(log, "stubborn and ready"))
    process.start()
    try:
        assert "stubborn and ready" in process.log_tail()
    finally:
        process.kill()
    assert process.returncode == -signal.SIGKILL


def test_a_process_that_dies_before_ready_is_a_failure_with_its_log(tmp_path):
    crash = ManagedProcess("crasher", python("import sys; print('no config file, giving up'); sys.exit(3)"),
                           tmp_path / "crasher.log", ready=lambda: False)
    with pytest.raises(ProcessFailure) as failure:
        crash.start()
    assert isinstance(failure.value, AssertionError)  # pytest shows it as a test failure
    message = str(failure.value)
    assert "crasher exited with status 3 before it was ready" in message
    assert "no config file, giving up" in message  # the log's tail
    assert crash.died_unexpectedly()


def test_a_process_never_ready_is_killed_after_the_startup_timeout(tmp_path):
    def refuses():
        raise ConnectionRefusedError("nobody home")

    sleeper = ManagedProcess("sleeper", python("import time; print('asleep', flush=True); time.sleep(60)"),
                             tmp_path / "sleeper.log", ready=refuses, startup_timeout=1.0, poll_interval=0.05)
    started = time.monotonic()
    with pytest.raises(ProcessFailure) as failure:
        sleeper.start()
    assert 1.0 <= time.monotonic() - started < 10
    assert "sleeper was not ready within 1s" in str(failure.value)
    assert "nobody home" in str(failure.value)  # the readiness check's last error
    assert sleeper.returncode == -signal.SIGKILL


class Judged(ManagedProcess):
    """Records what each stop of a running process looked like."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.stops: list[tuple[int, bool]] = []

    def _after_stop(self, sig: int, exited: bool, timeout: float) -> None:
        self.stops.append((sig, exited))


def test_stop_escalates_to_sigkill_after_its_timeout(tmp_path):
    log = tmp_path / "stubborn.log"
    process = Judged("stubborn", python(STUBBORN), log, ready=log_says(log, "stubborn and ready"), stop_timeout=30)
    process.start()
    started = time.monotonic()
    status = process.stop(signal.SIGTERM, timeout=0.5)
    assert 0.5 <= time.monotonic() - started < 10
    assert status == -signal.SIGKILL
    assert process.stops == [(signal.SIGTERM, False)]
    assert process.stop() == -signal.SIGKILL and process.stops == [(signal.SIGTERM, False)]  # already gone


def test_restart_runs_the_command_again_and_marks_each_start_in_the_log(tmp_path):
    port = free_port()
    server = Judged("listener", python(LISTENER, str(port)), tmp_path / "listener.log",
                    ready=lambda: accepts_connections("127.0.0.1", port))
    server.start()
    first = server.process.pid
    try:
        server.restart()
        assert server.process.pid != first and server.is_running()
        with pytest.raises(RuntimeError, match="already running"):
            server.start()
    finally:
        server.stop()
    assert server.stops == [(signal.SIGTERM, True), (signal.SIGTERM, True)]
    headers = [line for line in server.log_tail().splitlines() if line.startswith("=== ")]
    assert [h.split(":")[0] for h in headers] == ["=== start #1", "=== start #2"]


def test_a_process_that_exits_by_itself_died_unexpectedly_until_stopped(tmp_path):
    process = ManagedProcess("short-lived", python("import time; time.sleep(0.2)"), tmp_path / "short.log")
    process.start()
    process.process.wait(10)
    assert process.died_unexpectedly() and process.returncode == 0
    process.stop()
    assert not process.died_unexpectedly()


def test_send_signal_pauses_and_resumes_and_is_a_no_op_once_it_exited(tmp_path):
    process = ManagedProcess("sleeper", python("import time; time.sleep(60)"), tmp_path / "sleeper.log")
    process.start()
    try:
        process.send_signal(signal.SIGSTOP)
        _wait_until(lambda: _state(process.process.pid) == "T", "paused")
        process.send_signal(signal.SIGCONT)
        _wait_until(lambda: _state(process.process.pid) != "T", "running again")
    finally:
        process.kill()
    process.send_signal(signal.SIGTERM)  # nothing to signal: no error


# Starts a child in its own process group (as a broker forks its workers) that would outlive it.
FORKER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print("child", child.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_kill_group_returns_once_every_process_of_the_group_is_gone(tmp_path):
    log = tmp_path / "forker.log"
    process = ManagedProcess("forker", python(FORKER), log, ready=lambda: log.read_text().endswith("\n") and
                             log.read_text().splitlines()[-1].startswith("child "))
    process.start()
    child = int(log.read_text().splitlines()[-1].split()[1])
    assert processes_in_group(process.process.pid) == sorted([process.process.pid, child])
    process.kill_group()
    assert process.returncode == -signal.SIGKILL
    assert _state(child) in (None, "Z")  # no PDEATHSIG: only the group's SIGKILL ended it
    assert processes_in_group(process.process.pid) == []


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_the_child_dies_with_the_process_that_started_it(tmp_path):
    starter_code = f"""
import sys, time
sys.path.insert(0, {str(REPO_ROOT)!r})
from testing.processes import ManagedProcess
child = ManagedProcess("orphan", [sys.executable, "-c", "import time; time.sleep(60)"], {str(tmp_path / 'c.log')!r})
child.start()
print(child.process.pid, flush=True)
time.sleep(60)
"""
    starter = subprocess.Popen(python(starter_code), stdout=subprocess.PIPE, text=True)
    try:
        child_pid = int(starter.stdout.readline())
        assert _state(child_pid) not in (None, "Z")
    finally:
        signal_and_wait(starter, signal.SIGKILL, 10)
    _wait_until(lambda: _state(child_pid) in (None, "Z"), "the child gone with the process that started it")


def test_log_tail_keeps_the_last_lines_and_says_when_there_is_no_log(tmp_path):
    log = tmp_path / "some.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert log_tail(log, 3) == "line 97\nline 98\nline 99"
    assert log_tail(tmp_path / "missing.log").startswith("(no log: ")


def _state(pid: int) -> str | None:
    """The process's state letter from /proc (R, S, T, Z, ...); None when there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def _wait_until(condition, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not {what} within {timeout:.0f}s"
        time.sleep(0.02)


def test_a_scratch_directory_is_removed_after_a_block_and_kept_when_it_fails(capsys):
    with scratch_directory(None, "kw-scratch-test-", "test") as path:
        (path / "data").write_text("x")
    assert not path.exists()
    with pytest.raises(RuntimeError), scratch_directory(None, "kw-scratch-test-", "test") as kept:
        (kept / "data").write_text("x")
        raise RuntimeError("the block failed")
    try:
        assert (kept / "data").read_text() == "x"
        assert f"test data kept in {kept}" in capsys.readouterr().err
    finally:
        (kept / "data").unlink()
        kept.rmdir()


def test_a_given_directory_is_left_as_it_is(tmp_path):
    with scratch_directory(tmp_path, "unused-", "test") as path:
        (path / "data").write_text("x")
    assert path == tmp_path and (tmp_path / "data").exists()


def test_property_values_are_spelt_as_kafka_reads_them():
    assert [property_value(v) for v in (True, False, 3, "a")] == ["true", "false", "3", "a"]
