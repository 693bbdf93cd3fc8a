"""Runs a ZooKeeper server and a cluster of broker processes on loopback, for tests.

    with running_cluster(3, config={"min.insync.replicas": 2}) as cluster:
        cluster.bootstrap                      # "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
        leader = cluster.leader_of("orders", 0)
        cluster.brokers[leader].kill()         # SIGKILL; .stop() is a controlled shutdown
        cluster.wait_for_leader("orders", 0, not_in={leader})

ZooKeeper is Debian's `zookeeper` package run standalone (QuorumPeerMain with a zoo.cfg of its
own: a free loopback port, its own data dir, a short tick so sessions of dead brokers expire in
seconds). Both are testing/processes.py's ManagedProcess; brokers are testing/broker_process.py's
BrokerProcess with `zookeeper.connect` set.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from kafka_wire.errors import ErrorCode

from .broker_process import BrokerProcess
from .processes import ManagedProcess, free_port, scratch_directory
from client import WireClient

ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"
ZOOKEEPER_CLASSPATH = ["/etc/zookeeper/conf", ZOOKEEPER_JAR]
ZOOKEEPER_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# Short timeouts so that a killed broker's session expires quickly (tickTime bounds them: 2-20 ticks).
TICK_MS = 500
SESSION_TIMEOUT_MS = 4000

CLUSTER_DEFAULTS = {
    "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS,
    "replica.lag.time.max.ms": 3000,
    "replica.fetch.wait.max.ms": 200,
    "replica.fetch.backoff.ms": 200,
    "leader.imbalance.check.interval.seconds": 2,
    "controlled.shutdown.retry.backoff.ms": 200,
    "offsets.topic.num.partitions": 3,
    "offsets.topic.replication.factor": 3,
    "transaction.state.log.num.partitions": 3,
    "default.replication.factor": 3,
    "group.initial.rebalance.delay.ms": 0,
}


def zookeeper_available() -> bool:
    return os.path.exists(ZOOKEEPER_JAR) and shutil.which("java") is not None


class ZooKeeperProcess(ManagedProcess):
    """A standalone ZooKeeper server on `host` with its data under `data_dir`; ready when it answers
    `ruok`."""

    def __init__(self, data_dir: Path, port: int | None = None, host: str = "127.0.0.1",
                 jvm_options: tuple[str, ...] = ("-Xmx256m",)) -> None:
        self.data_dir = Path(data_dir)
        self.host = host
        self.port = port or free_port()
        self.jvm_options = jvm_options
        self.config_path = self.data_dir / "zoo.cfg"
        super().__init__(f"ZooKeeper on {self.connect}", None, self.data_dir / "zookeeper.log", cwd=self.data_dir,
                         startup_timeout=30.0, stop_timeout=10.0, poll_interval=0.1)

    @property
    def connect(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def command(self) -> list[str]:
        return ["java", *self.jvm_options, "-cp", ":".join(ZOOKEEPER_CLASSPATH), ZOOKEEPER_MAIN,
                str(self.config_path)]

    def settings(self) -> list[str]:
        """zoo.cfg's lines: a short tick, so that sessions of dead brokers expire in seconds."""
        return [
            f"tickTime={TICK_MS}",
            f"dataDir={self.data_dir / 'data'}",
            f"clientPort={self.port}",
            f"clientPortAddress={self.host}",
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr",
            f"minSessionTimeout={2 * TICK_MS}",
            f"maxSessionTimeout={20 * TICK_MS}",
        ]

    def start(self) -> ZooKeeperProcess:
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("\n".join([*self.settings(), ""]))
        return super().start()

    def is_ready(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=1) as sock:
                sock.sendall(b"ruok")
                return sock.recv(4) == b"imok"
        except OSError:
            return False


class Cluster:
    """A ZooKeeper and `size` brokers (node ids 1..size), all on loopback."""

    def __init__(self, base_dir: Path, size: int = 3, config: Mapping[str, object] | None = None,
                 broker_configs: Mapping[int, Mapping[str, object]] | None = None) -> None:
        """`config` is every broker's; `broker_configs[node_id]` adds to (or overrides) it for one
        broker (its own schema.registry.port, say)."""
        self.base_dir = Path(base_dir)
        self.zookeeper = ZooKeeperProcess(self.base_dir / "zookeeper")
        self.brokers: dict[int, BrokerProcess] = {}
        settings = {**CLUSTER_DEFAULTS, **(config or {})}
        for node_id in range(1, size + 1):
            broker_config = {**settings, **(broker_configs or {}).get(node_id, {}), "node.id": node_id,
                             "zookeeper.connect": self.zookeeper.connect}
            self.brokers[node_id] = BrokerProcess(self.base_dir / f"broker-{node_id}", config=broker_config,
                                                  startup_timeout=30.0, stop_timeout=30.0)

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def start(self) -> None:
        self.zookeeper.start()
        for broker in self.brokers.values():
            broker.start()
        self.wait_for_brokers(set(self.brokers))
        # Each broker learns the others from ZooKeeper's watch a moment after they register: until
        # then it refuses a replica placed on one it has not seen (INVALID_REPLICA_ASSIGNMENT).
        self.wait_for(lambda: all(self.known_brokers(node) == set(self.brokers) for node in self.brokers),
                      20.0, f"every broker knowing brokers {sorted(self.brokers)}", interval=0.2)

    def stop(self) -> None:
        for broker in self.brokers.values():
            broker.send_signal(signal.SIGCONT)  # a paused broker cannot stop: let it run again first
        for broker in self.brokers.values():
            broker.stop()
        self.zookeeper.stop()

    def running(self) -> list[BrokerProcess]:
        return [b for b in self.brokers.values() if b.is_running()]

    def log_report(self) -> str:
        return "\n".join(b.log_report() for b in self.brokers.values())

    def task_report(self) -> str:
        """Every running broker's asyncio tasks (BrokerProcess.task_dump)."""
        return "\n".join(f"--- tasks of broker {node} ---\n{broker.task_dump()}"
                         for node, broker in self.brokers.items())

    # -- what the cluster says ----------------------------------------------------------------

    def metadata(self, topics: list[str] | None = None, via: int | None = None):
        """A Metadata v12 response from the given broker (or the first one that answers)."""
        candidates = [self.brokers[via]] if via is not None else self.running()
        last_error: Exception | None = None
        for broker in candidates:
            try:
                with WireClient(broker.bootstrap, timeout=5) as client:
                    return client.call("Metadata", 12, {
                        "topics": None if topics is None else [{"name": t} for t in topics],
                        "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
            except OSError as exc:
                last_error = exc
        raise ConnectionError(f"no broker answered Metadata: {last_error}")

    def known_brokers(self, via: int) -> set[int]:
        """The broker ids broker `via` lists in its Metadata."""
        return {b.node_id for b in self.metadata([], via).brokers}

    def partition(self, topic: str, partition: int, via: int | None = None):
        for t in self.metadata([topic], via).topics:
            for p in t.partitions:
                if p.partition_index == partition:
                    return p
        return None

    def leader_of(self, topic: str, partition: int = 0) -> int:
        p = self.partition(topic, partition)
        return -1 if p is None else p.leader_id

    def wait_for(self, condition, timeout: float = 20.0, what: str = "condition", interval: float = 0.1):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = condition()
            except (OSError, ConnectionError) as exc:
                last = exc
            else:
                if last:
                    return last
            time.sleep(interval)
        raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")

    def registered_brokers(self) -> set[int]:
        """The broker ids registered in ZooKeeper now."""
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=self.zookeeper.connect, timeout=5)
        zk.start(timeout=5)
        try:
            return {int(child) for child in zk.get_children("/brokers/ids")}
        finally:
            zk.stop()
            zk.close()

    def wait_for_brokers(self, node_ids: set[int], timeout: float = 20.0) -> None:
        self.wait_for(lambda: self.registered_brokers() == node_ids, timeout,
                      f"brokers {sorted(node_ids)} registered", interval=0.2)

    def serves_as_leader(self, node_id: int, topic: str, partition: int = 0) -> bool:
        """The broker itself answers for the partition as its leader (ListOffsets checks
        leadership as Produce and Fetch do): ZooKeeper may name a leader a moment before that
        broker has applied the change."""
        with WireClient(self.brokers[node_id].bootstrap, timeout=5) as client:
            response = client.call("ListOffsets", 7, {"replica_id": -1, "isolation_level": 0, "topics": [
                {"name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                                "timestamp": -1}]}]})
        return response.topics[0].partitions[0].error_code == 0

    def wait_for_leader(self, topic: str, partition: int = 0, *, not_in: set[int] = frozenset(),
                        timeout: float = 20.0) -> int:
        """A leader outside `not_in` that the metadata names and that serves as leader itself."""
        def found():
            leader = self.leader_of(topic, partition)
            if leader < 0 or leader in not_in or not self.serves_as_leader(leader, topic, partition):
                return None
            return leader
        return self.wait_for(found, timeout, f"a leader of {topic}-{partition} outside {sorted(not_in)}")

    def wait_for_isr(self, topic: str, partition: int, isr: set[int], timeout: float = 20.0) -> None:
        self.wait_for(lambda: set((p := self.partition(topic, partition)) and p.isr_nodes or []) == isr,
                      timeout, f"ISR of {topic}-{partition} = {sorted(isr)}")

    def wait_for_preferred_leaders(self, timeout: float = 60.0) -> None:
        """Every partition led by its preferred replica with a full ISR: leadership settled after the
        restarts of an earlier test (the controller moves leaders back every few seconds)."""
        def settled():
            return all(p.leader_id == p.replica_nodes[0] and len(p.isr_nodes) == len(p.replica_nodes)
                       for t in self.metadata().topics for p in t.partitions)
        self.wait_for(settled, timeout, "preferred leaders with full ISRs", interval=0.5)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     configs: Mapping[str, str] | None = None) -> None:
        """CreateTopics through the first running broker; waits until every partition has a leader.
        INVALID_REPLICATION_FACTOR is retried for a while: a broker restarted by the previous test is
        registered in ZooKeeper before the other brokers' watches have told them so."""
        deadline = time.monotonic() + 15
        while True:
            with WireClient(self.running()[0].bootstrap, timeout=10) as client:
                response = client.call("CreateTopics", 5, {
                    "topics": [{"name": name, "num_partitions": partitions, "replication_factor": replication_factor,
                                "assignments": [],
                                "configs": [{"name": k, "value": str(v)} for k, v in (configs or {}).items()]}],
                    "timeout_ms": 10000, "validate_only": False})
            error = response.topics[0].error_code
            if error != ErrorCode.INVALID_REPLICATION_FACTOR or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if error:
            raise AssertionError(f"CreateTopics {name}: error {error} {response.topics[0].error_message}")
        for partition in range(partitions):
            self.wait_for_leader(name, partition)


@contextlib.contextmanager
def running_cluster(size: int = 3, config: Mapping[str, object] | None = None,
                    tmp_dir: str | os.PathLike | None = None,
                    broker_configs: Mapping[int, Mapping[str, object]] | None = None) -> Iterator[Cluster]:
    """A started ZooKeeper and `size` brokers for the block; everything stopped after. The data is
    kept (and its path printed) when the block fails."""
    with scratch_directory(tmp_dir, "kafka-wire-cluster-", "kafka-wire test cluster") as base:
        cluster = Cluster(base, size, config, broker_configs)
        try:
            cluster.start()
            yield cluster
        except BaseException as error:
            if not isinstance(error, (KeyboardInterrupt, GeneratorExit)):
                error.add_note(cluster.log_report())
            raise
        finally:
            cluster.stop()
