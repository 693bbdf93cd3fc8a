"""`kafka-wire serve` with several workers: the supervisor process and the start of each worker.

The supervisor (the process `kafka-wire serve` started, the one to signal) does, before any worker
exists: checks the log dirs and the stored node id, folds the checkpoint files the workers of the
last run left (log/log_manager.py: merge_worker_checkpoints), binds every listener once per worker
with SO_REUSEPORT (the kernel spreads new connections over the workers; a bind error is one line
and exit 1, as with one process), makes the generation counter the workers share and a socket pair
between every two workers. Then it forks the workers, all modules already imported (a worker is
ready in the time it takes to open its logs).

Each worker opens the logs of the partitions it owns, reports that it is loaded, and starts
accepting connections once every worker has: the supervisor removes the clean-shutdown markers in
between, so a marker is never present while a log is being written.

SIGTERM (or SIGINT) to the supervisor stops every worker as one broker stops: each closes its
listeners and its logs (writing its checkpoint files); when all exited cleanly, the supervisor
folds the checkpoints and writes the clean-shutdown markers.

A worker that dies (killed, or failed) is a broker crash, as Kafka's process dying is: the
supervisor stops the other workers cleanly (killing those still running after
CRASH_STOP_GRACE_SECONDS), then starts all of them again on the same listening sockets
(connections that arrive meanwhile wait in the listen queue). The dead worker's partitions recover from their last recovery point as after any crash; acknowledged records are in the page
cache, which a process's death does not lose, and idempotent producers' retries are recognised by
the producer state rebuilt from the log. More than RESTARTS_ALLOWED restarts within
RESTART_WINDOW_SECONDS end the broker (exit 1), as a service manager would give up.
"""

from __future__ import annotations

import asyncio
import ctypes
import itertools
import logging
import mmap
import os
import select
import signal
import socket
import sys
import time

from log.errors import LogDirFailure
from log.log_manager import (
    LogManager,
    merge_worker_checkpoints,
    remove_clean_shutdown_markers,
    write_clean_shutdown_markers,
)

from ..config import ConfigError
from .. import task_dump
from ..server import BindError
from .connection_counts import SharedConnectionCounts, SharedCounters, SharedRateWindows
from .link import SHARED_REGION_BYTES
from .ownership import Ownership
from .runtime import Generation, WorkerRuntime

logger = logging.getLogger("kafka_wire.workers")

RESTARTS_ALLOWED = 5
RESTART_WINDOW_SECONDS = 60.0
# After a worker died, how long the others have to stop cleanly before they are killed: a restart
# must not wait on a worker that cannot stop (its partitions are unavailable meanwhile).
CRASH_STOP_GRACE_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 60.0
_PR_SET_PDEATHSIG = 1
# What ends a worker's start with one line on stderr and a non-zero exit, as for one process.
START_FAILURES = (LogDirFailure, ConfigError, BindError)


class ListenerSockets:
    """Every listener bound once per worker, all on the same port (SO_REUSEPORT)."""

    def __init__(self, config, count: int) -> None:
        self.per_worker: list[dict[str, list[socket.socket]]] = [{} for _ in range(count)]
        self._all: list[socket.socket] = []
        try:
            for name, host, port in config.listeners():
                try:
                    addresses = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                                   flags=socket.AI_PASSIVE)
                except socket.gaierror as exc:
                    raise BindError("Socket server", host, port, exc) from exc
                seen = set()
                for family, kind, proto, _, address in addresses:
                    if (family, address) in seen:
                        continue
                    seen.add((family, address))
                    bound_port = _claim_port(family, kind, proto, address, port, host)
                    for worker in range(count):
                        sock = socket.socket(family, kind, proto)
                        self._all.append(sock)
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                        if family == socket.AF_INET6:
                            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                        try:
                            # Each worker starts listening when it is ready to serve (asyncio's
                            # create_server(sock=...) does): connections are not taken before.
                            sock.bind((address[0], bound_port, *address[2:]))
                        except OSError as exc:
                            raise BindError("Socket server", host, port, exc) from exc
                        bound_port = sock.getsockname()[1]  # port 0: the others take the one chosen
                        sock.setblocking(False)
                        self.per_worker[worker].setdefault(name, []).append(sock)
        except BaseException:
            self.close()
            raise

    def close_others(self, worker: int) -> None:
        mine = {id(sock) for socks in self.per_worker[worker].values() for sock in socks}
        for sock in self._all:
            if id(sock) not in mine:
                sock.close()

    def close(self) -> None:
        for sock in self._all:
            sock.close()


def _claim_port(family, kind, proto, address, port: int, host: str) -> int:
    """The port to bind the workers' sockets to, checked free first: a socket bound without
    SO_REUSEPORT fails where any process listens already (with SO_REUSEPORT a second broker of the
    same user would otherwise join this one's port silently). Port 0 picks a free one."""
    probe = socket.socket(family, kind, proto)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        try:
            probe.bind((address[0], port, *address[2:]))
        except OSError as exc:
            raise BindError("Socket server", host, port, exc) from exc
        return probe.getsockname()[1]
    finally:
        probe.close()


class Supervisor:
    def __init__(self, config, count: int, started: float, start_console=None, start_registry=None) -> None:
        """`start_console(broker, host, port)`: the web console's start (console/, which the broker's
        room does not import), run by worker 0 when console.port is set; `start_registry` likewise
        the Schema Registry's (registry/), when schema.registry.port is set."""
        self.config = config
        self.start_console = start_console
        self.start_registry = start_registry
        self.count = count
        self.started = started
        self.log_dirs = list(config.log_dirs)
        self.pids: dict[int, int] = {}  # pid -> worker index
        self._stop_requested = False  # SIGTERM or SIGINT
        self._restarts: list[float] = []
        self._start_failure = 1  # the exit status of a worker that could not start

    # -- the run ------------------------------------------------------------------------------

    def run(self) -> int:
        from ..metadata_store import EmbeddedMetadata

        # What a single process checks at its start, checked once here: an unusable log dir, a
        # stored node id that differs, a file that cannot be read (meta.properties, the checkpoint
        # files the last run's workers left) are one line and a non-zero exit (the caller prints them).
        logs = LogManager(self.log_dirs)
        logs.create_and_validate_log_dirs()
        try:
            if not self.config["zookeeper.connect"]:  # (a cluster broker's workers check it in ZooKeeper)
                EmbeddedMetadata(self.log_dirs[0], self.config.node_id).load()
            merge_worker_checkpoints(self.log_dirs)
        except OSError as exc:
            raise logs.load_failure(exc) from exc
        self.listeners = ListenerSockets(self.config, self.count)
        self.connection_counts = SharedConnectionCounts()
        self.dir_counts = SharedCounters(len(self.log_dirs))
        self.offline_dirs = SharedCounters(len(self.log_dirs))
        self.rate_windows = SharedRateWindows()
        signal.signal(signal.SIGTERM, self._on_stop_signal)
        signal.signal(signal.SIGINT, self._on_stop_signal)
        signal.signal(signal.SIGUSR1, self._on_dump_signal)
        try:
            while True:
                outcome = self._run_workers()
                # The checkpoint files the workers just left, folded after every run, whatever
                # comes next (those the broker's last run left were folded above).
                self._merge_checkpoints()
                if outcome == "stopped":
                    self._write_markers()
                    logger.info("shut down cleanly")
                    return 0
                if outcome == "failed-start":
                    return self._start_failure
                # A worker died: restart them all, unless that keeps happening.
                now = time.monotonic()
                self._restarts = [t for t in self._restarts if now - t < RESTART_WINDOW_SECONDS] + [now]
                if self._stop_requested:
                    return 1
                if len(self._restarts) > RESTARTS_ALLOWED:
                    logger.error("workers died %d times within %.0f s; stopping", len(self._restarts),
                                 RESTART_WINDOW_SECONDS)
                    return 1
                logger.warning("restarting the broker's %d workers", self.count)
                self.started = time.monotonic()
        finally:
            self.listeners.close()

    def _each_dir(self, action, what: str, dirs=None) -> None:
        """`action([log dir])` for each log dir; a dir whose disk failed is skipped with a warning
        (its partitions recover at the next start, as on one process)."""
        for log_dir in self.log_dirs if dirs is None else dirs:
            try:
                action([log_dir])
            except OSError as exc:
                logger.warning("could not %s in %s: %s", what, log_dir, exc)

    def _merge_checkpoints(self) -> None:
        self._each_dir(merge_worker_checkpoints, "fold the workers' checkpoint files")

    def _write_markers(self) -> None:
        """The clean-shutdown markers, in the log dirs no worker took offline."""
        live = [d for i, d in enumerate(self.log_dirs) if not self.offline_dirs.get(i)]
        self._each_dir(write_clean_shutdown_markers, "write the clean-shutdown marker", live)

    def _on_stop_signal(self, signum, frame) -> None:
        if not self._stop_requested:
            self._stop_requested = True
            logger.info("shutting down")
        for pid in list(self.pids):
            _signal(pid, signal.SIGTERM)

    def _on_dump_signal(self, signum, frame) -> None:
        for pid in list(self.pids):  # each worker logs its tasks (broker/task_dump.py)
            _signal(pid, signal.SIGUSR1)

    def _run_workers(self) -> str:
        """Start the workers and wait: 'stopped' (all exited cleanly after SIGTERM), 'crashed' (one
        died; the others were stopped), 'failed-start' (one could not start)."""
        generation = Generation()
        self.connection_counts.reset()
        self.dir_counts.reset()
        self.offline_dirs.reset()  # a restart checks every log dir again
        self.rate_windows.reset()
        pairs = {}
        for i, j in itertools.combinations(range(self.count), 2):
            pairs[(i, j)] = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # Per worker, memory every worker maps: its large Produce frames and call bodies (link.py).
        regions = [mmap.mmap(-1, SHARED_REGION_BYTES) for _ in range(self.count)]
        # Per worker, the logs it publishes for the others' read cursors (read_cursors.py), single node only.
        from .read_cursors import new_table

        tables = None if self.config["zookeeper.connect"] else [new_table() for _ in range(self.count)]
        controls = [os.pipe() for _ in range(self.count)]  # supervisor -> worker: go
        reports = [os.pipe() for _ in range(self.count)]  # worker -> supervisor: loaded
        self.pids = {}
        for index in range(self.count):
            pid = os.fork()
            if pid == 0:  # the worker
                code = 1
                try:
                    links = {}
                    for (i, j), (a, b) in pairs.items():
                        if i == index:
                            links[j] = a
                            b.close()
                        elif j == index:
                            links[i] = b
                            a.close()
                        else:
                            a.close()
                            b.close()
                    for k in range(self.count):
                        os.close(controls[k][1])
                        os.close(reports[k][0])
                        if k != index:
                            os.close(controls[k][0])
                            os.close(reports[k][1])
                    self.listeners.close_others(index)
                    code = run_worker(self.config, Ownership(index, self.count), links, generation,
                                      self.listeners.per_worker[index], controls[index][0], reports[index][1],
                                      self.connection_counts, self.dir_counts, self.start_console,
                                      self.offline_dirs, self.rate_windows, regions, self.start_registry, tables)
                except START_FAILURES as exc:  # one line, as a single process says it
                    print(f"kafka-wire: {exc}", file=sys.stderr, flush=True)
                    code = 2 if type(exc).__name__ == "ConfigError" else 1
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
                except BaseException:  # noqa: BLE001 - a worker must never return into the supervisor
                    logging.getLogger("kafka_wire").exception("worker %d failed", index)
                finally:
                    logging.shutdown()
                    os._exit(code)
            self.pids[pid] = index
        for (a, b) in pairs.values():
            a.close()
            b.close()
        for region in regions + (tables or []):
            region.close()  # (the workers have their mappings)
        for k in range(self.count):
            os.close(controls[k][0])
            os.close(reports[k][1])
        try:
            return self._watch([c[1] for c in controls], [r[0] for r in reports])
        finally:
            for k in range(self.count):
                for fd in (controls[k][1], reports[k][0]):
                    try:
                        os.close(fd)
                    except OSError:
                        pass

    def _watch(self, controls: list[int], reports: list[int]) -> str:
        loaded: set[int] = set()
        serving = False  # worker 0 said it serves (its metrics, console and registry are up)
        open_reports = dict(enumerate(reports))
        crashed = False
        failed_start = False
        stopping = False
        kill_at = None  # when the workers still running after a crash are killed
        while self.pids:
            if self._stop_requested and not stopping:
                stopping = True
                for pid in list(self.pids):
                    _signal(pid, signal.SIGTERM)
            # Reap what exited.
            while self.pids:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    self.pids.clear()
                    break
                if pid == 0:
                    break
                index = self.pids.pop(pid, None)
                if index is None:
                    continue
                code = os.waitstatus_to_exitcode(status)
                if code == 0 and stopping:
                    continue  # stopped as asked
                # Worker 0 ending before it serves could not start what it starts alone (the metrics
                # endpoint, console or registry on an address in use): a failed start, not a crash.
                if index not in loaded or (index == 0 and not serving and not stopping):
                    failed_start = True
                    if code > 0:
                        self._start_failure = code
                else:
                    logger.error("worker %d (pid %d) %s", index, pid,
                                 f"was killed by signal {-code}" if code < 0 else f"exited with status {code}")
                crashed = True
                if not stopping:
                    stopping = True  # the others stop cleanly; then a restart, or the end
                    kill_at = time.monotonic() + CRASH_STOP_GRACE_SECONDS
                    for other in list(self.pids):
                        _signal(other, signal.SIGTERM)
            if not self.pids:
                break
            if kill_at is not None and time.monotonic() >= kill_at:
                logger.error("workers %s did not stop within %.0f s after a worker's death; killing them",
                             sorted(self.pids.values()), CRASH_STOP_GRACE_SECONDS)
                for pid in list(self.pids):
                    _signal(pid, signal.SIGKILL)
                kill_at = None
            readable = list(open_reports.values())
            try:
                ready, _, _ = select.select(readable, [], [], 0.05)
            except InterruptedError:
                continue
            for fd in ready:
                index = next(k for k, v in open_reports.items() if v == fd)
                data = os.read(fd, 1)
                if data != b"L" or index != 0:
                    del open_reports[index]  # (worker 0 says once more when it serves)
                if data == b"L":
                    loaded.add(index)
                    if len(loaded) == self.count and not stopping:
                        # Worker 0 first: its metrics endpoint and console are up before any
                        # worker takes a connection (a broker that answers has them).
                        self._each_dir(remove_clean_shutdown_markers, "remove the clean-shutdown marker")
                        os.write(controls[0], b"G")
                elif data == b"S" and index == 0 and not stopping:
                    serving = True
                    for control in controls[1:]:
                        os.write(control, b"G")
                    logger.info("kafka-wire started in %.3f s (node.id=%d, %d workers, log.dirs=%s)",
                                time.monotonic() - self.started, self.config.node_id, self.count,
                                ",".join(self.log_dirs))
        if failed_start:
            return "failed-start"
        return "crashed" if crashed else "stopped"


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _die_with_supervisor() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def run_worker(config, ownership: Ownership, links: dict, generation: Generation, listen_sockets: dict,
               control_fd: int, report_fd: int, connection_counts=None, dir_counts=None, start_console=None,
               offline_dirs=None, rate_windows=None, shared=None, start_registry=None, tables=None) -> int:
    """A worker's life, in the forked child."""
    _die_with_supervisor()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C reaches the supervisor, which stops us
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # until the loop logs its tasks at it (task_dump)
    index = ownership.index
    old_factory = logging.getLogRecordFactory()

    def record(*args, **kwargs):
        rec = old_factory(*args, **kwargs)
        rec.worker = index
        return rec

    logging.setLogRecordFactory(record)
    from .. import server as server_module

    # Connection ids stay unique across the broker's workers (fetch sessions, quotas, logs name them).
    server_module._connection_ids = itertools.count(1 + index * 1_000_000_000_000)
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    return runner(_worker_main(config, ownership, links, generation, listen_sockets, control_fd, report_fd,
                               connection_counts, dir_counts, start_console, offline_dirs, rate_windows, shared,
                               start_registry, tables))


async def _worker_main(config, ownership, links, generation, listen_sockets, control_fd, report_fd,
                       connection_counts, dir_counts, start_console, offline_dirs, rate_windows=None,
                       shared=None, start_registry=None, tables=None) -> int:
    from ..node import Broker
    from ..server import KafkaServer, start_console_on, start_metrics, start_registry_on

    if config["zookeeper.connect"]:  # each worker of a cluster broker has its own ZooKeeper session
        from ..cluster.cluster_broker import ClusterBroker as Broker

    from .calls import answer
    from .read_cursors import PublishedLogs, ReadCursors

    runtime = WorkerRuntime(ownership, links, generation, connection_counts, dir_counts, offline_dirs, rate_windows,
                            shared)
    runtime.answer = answer
    if tables is not None:
        runtime.published = PublishedLogs(tables[ownership.index])
        runtime.cursors = ReadCursors(tables)
    broker = Broker(config, runtime)
    runtime.attach(broker)
    try:
        broker.load()
    except OSError as exc:
        raise broker.logs.load_failure(exc) from exc
    runtime.start()
    await broker.start_coordinators()
    server = KafkaServer(broker)
    server.listen_sockets = listen_sockets
    broker.server = server
    loop = asyncio.get_running_loop()
    os.write(report_fd, b"L")
    go = loop.create_future()

    def on_control() -> None:
        try:
            data = os.read(control_fd, 1)
        except OSError:
            data = b""
        loop.remove_reader(control_fd)
        if not go.done():
            go.set_result(data == b"G")

    loop.add_reader(control_fd, on_control)
    task_dump.install(loop)  # kill -USR1 (the supervisor passes it on): this worker's tasks in the log
    stop = asyncio.Event()
    for sig in (signal.SIGTERM,):
        loop.add_signal_handler(sig, stop.set)
    waiting = asyncio.ensure_future(stop.wait())
    await asyncio.wait([go, waiting], return_when=asyncio.FIRST_COMPLETED)
    started = go.done() and go.result() and not stop.is_set()
    metrics = console = registry = None
    try:
        if started:
            if ownership.is_primary and config["metrics.port"] is not None:
                # Worker 0 serves the broker's metrics, asking the others at each scrape.
                metrics = await start_metrics(broker, config)
            await server.start()
            if ownership.is_primary and config["console.port"] is not None and start_console is not None:
                console = await start_console_on(broker, config, start_console)
            if ownership.is_primary and config["schema.registry.port"] is not None and start_registry is not None:
                # Worker 0 owns _schemas (ownership.py) and serves the registry over it.
                registry = await start_registry_on(broker, config, start_registry)
            if ownership.is_primary:
                os.write(report_fd, b"S")  # serving: the supervisor lets the other workers start
            broker.start_background_tasks()
            gc_freeze()
            await waiting
            # In a cluster, leadership moves to other brokers while this one still answers.
            await broker.controlled_shutdown()
    finally:
        if console is not None:
            await console.stop()
        if registry is not None:
            await registry.stop()
        if metrics is not None:
            await metrics.stop()
    await server.stop()
    await broker.stop_coordinators()
    runtime.stop()
    broker.close()
    return 0


def gc_freeze() -> None:
    import gc

    gc.freeze()


