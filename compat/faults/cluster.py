"""A 3-node ZooKeeper ensemble and kafka-wire brokers, each in its own network namespace.

    with fault_cluster(brokers=3, config={"min.insync.replicas": 2}) as cluster:
        cluster.bootstrap                     # "10.213.47.14:9092,..." (reachable from the root namespace)
        cluster.net.cut("b1", cluster.zookeeper_nodes)
        cluster.kill("b1"); cluster.start_broker("b1")

Node names: zk1..zk3 and b1..bN (broker node.id = N). ZooKeeper is testing/cluster.py's
ZooKeeperProcess, here as an ensemble (server.N lines, myid files), each server on its
namespace's address; brokers are testing/broker_process.py's BrokerProcess run through `ip netns exec`,
listening and advertising their namespace's address, so clients in the root namespace and the
other brokers reach them over the bridge, and a partition rule cuts exactly what it names.
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

from testing.broker_process import REPO_ROOT, BrokerProcess
from testing.cluster import CLUSTER_DEFAULTS, ZooKeeperProcess
from testing.processes import ManagedProcess, ProcessFailure

from .lazyfs import CONTROL_PATH
from .netns import PrivateNetwork, private_network

BROKER_PORT = 9092
ZK_CLIENT_PORT = 2181


class NamespacedBroker(BrokerProcess):
    """A BrokerProcess inside a namespace of `net`, on that namespace's address."""

    def __init__(self, net: PrivateNetwork, name: str, data_dir: Path, config: Mapping[str, object]) -> None:
        self.net = net
        self.name = name
        super().__init__(data_dir, port=BROKER_PORT, config=config, startup_timeout=60.0, stop_timeout=30.0,
                         poll_interval=0.1)

    @property
    def host(self) -> str:
        return self.net.address(self.name)

    @property
    def command(self) -> list[str]:
        return self.net.command(self.name, super().command)


class ZooKeeperNode(ZooKeeperProcess):
    """One server of the ensemble, in namespace `name` (zk<id>). Started without waiting: a server
    serves only once a quorum of the ensemble is up (FaultCluster.start waits for that)."""

    def __init__(self, net: PrivateNetwork, name: str, server_id: int, ensemble: list[str], data_dir: Path) -> None:
        self.net = net
        self.name = name
        self.server_id = server_id
        self.ensemble = ensemble
        super().__init__(data_dir, port=ZK_CLIENT_PORT, host=net.address(name),
                         jvm_options=("-Xmx200m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"))
        self.stop_timeout = 15.0

    @property
    def command(self) -> list[str]:
        return self.net.command(self.name, super().command)

    def settings(self) -> list[str]:
        return [*super().settings(), "initLimit=20", "syncLimit=6",
                *(f"server.{i}={self.net.address(node)}:2888:3888" for i, node in enumerate(self.ensemble, 1))]

    def start(self) -> ZooKeeperNode:
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        (self.data_dir / "data" / "myid").write_text(f"{self.server_id}\n")
        return super().start()

    def is_ready(self) -> bool:
        return True

    def serving(self) -> bool:
        """Answers `srvr` as a leader or follower (a server without a quorum answers otherwise)."""
        try:
            with socket.create_connection((self.host, self.port), timeout=2) as sock:
                sock.sendall(b"srvr")
                answer = b""
                while chunk := sock.recv(4096):
                    answer += chunk
            return b"Mode: leader" in answer or b"Mode: follower" in answer
        except OSError:
            return False

    def stop(self, sig: int = signal.SIGTERM, timeout: float | None = None) -> int | None:
        self.send_signal(signal.SIGCONT)  # a paused server cannot stop: let it run again first
        return super().stop(sig, timeout)


class LazyMount(ManagedProcess):
    """compat/faults/lazyfs.py mounted over a broker's log.dirs: its unsynced writes can be lost.
    Ready when the mount is there."""

    def __init__(self, backing: Path, mount_point: Path) -> None:
        self.backing = backing
        self.mount_point = mount_point
        super().__init__(f"lazyfs on {mount_point}",
                         [sys.executable, "-m", "compat.faults.lazyfs", str(backing), str(mount_point)],
                         backing.parent / "lazyfs.log", ready=lambda: os.path.ismount(mount_point), cwd=REPO_ROOT,
                         startup_timeout=30.0, stop_timeout=10.0, poll_interval=0.1)

    def start(self) -> LazyMount:
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mount_point.mkdir(parents=True, exist_ok=True)
        return super().start()

    def power_loss(self) -> int:
        """Drops every unsynced write (call after the broker is dead); the bytes dropped."""
        before = self.log_path.read_text(errors="replace").count("power loss")
        with contextlib.suppress(OSError):  # the mkdir "fails": nothing is created
            os.mkdir(self.mount_point / CONTROL_PATH.lstrip("/"))
        lines = [line for line in self.log_path.read_text(errors="replace").splitlines() if "power loss" in line]
        return int(lines[-1].split(": ")[-1].split()[0]) if len(lines) > before else -1

    def stop(self, sig: int = signal.SIGTERM, timeout: float | None = None) -> int | None:
        if os.path.ismount(self.mount_point):
            if subprocess.run(["umount", str(self.mount_point)], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", str(self.mount_point)], capture_output=True)
        return super().stop(sig, timeout)


class FaultCluster:
    def __init__(self, net: PrivateNetwork, base_dir: Path, brokers: int, config: Mapping[str, object],
                 lazyfs: bool = False) -> None:
        self.net = net
        self.base_dir = base_dir
        self.zookeeper_nodes = [n for n in net.names if n.startswith("zk")]
        self.broker_nodes = [n for n in net.names if n.startswith("b")]
        self.zookeepers = {name: ZooKeeperNode(net, name, i, self.zookeeper_nodes, base_dir / name)
                           for i, name in enumerate(self.zookeeper_nodes, 1)}
        connect = ",".join(z.connect for z in self.zookeepers.values())
        settings = {**CLUSTER_DEFAULTS, **config, "zookeeper.connect": connect}
        self.brokers = {name: NamespacedBroker(net, name, base_dir / name,
                                               {**settings, "node.id": int(name[1:])})
                        for name in self.broker_nodes}
        self.mounts = {name: LazyMount(base_dir / name / "disk", broker.log_dir)
                       for name, broker in self.brokers.items()} if lazyfs else {}

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def node_of(self, broker_id: int) -> str:
        return f"b{broker_id}"

    def start(self, timeout: float = 120.0) -> None:
        for mount in self.mounts.values():
            mount.start()
        for zookeeper in self.zookeepers.values():
            zookeeper.start()
        deadline = time.monotonic() + timeout
        while not all(z.serving() for z in self.zookeepers.values()):
            for z in self.zookeepers.values():
                if not z.is_running():
                    raise ProcessFailure(f"ZooKeeper {z.name} exited:\n{z.log_tail()}")
            if time.monotonic() > deadline:
                raise ProcessFailure("the ZooKeeper ensemble did not form a quorum:\n"
                                     + "\n".join(z.log_tail(20) for z in self.zookeepers.values()))
            time.sleep(0.3)
        for broker in self.brokers.values():
            broker.start()
        self.wait_for_registrations(set(int(name[1:]) for name in self.brokers), deadline)

    def wait_for_registrations(self, node_ids: set[int], deadline: float) -> None:
        """Until every broker is registered in ZooKeeper (before that, CreateTopics with RF=3 fails)."""
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=",".join(z.connect for z in self.zookeepers.values()), timeout=10)
        zk.start(timeout=30)
        try:
            while {int(child) for child in (zk.exists("/brokers/ids") and zk.get_children("/brokers/ids") or [])} \
                    != node_ids:
                if time.monotonic() > deadline:
                    raise ProcessFailure(f"brokers {sorted(node_ids)} did not all register in ZooKeeper")
                time.sleep(0.2)
        finally:
            zk.stop()
            zk.close()

    def start_broker(self, name: str) -> None:
        broker = self.brokers[name]
        if broker.is_running():
            broker.send_signal(signal.SIGCONT)
            return
        broker.start()

    def signal(self, name: str, sig: int) -> None:
        (self.brokers.get(name) or self.zookeepers[name]).send_signal(sig)

    def kill(self, name: str) -> None:
        if name in self.brokers:
            self.brokers[name].kill()
        else:
            self.zookeepers[name].stop(signal.SIGKILL)

    def stop(self) -> None:
        for broker in self.brokers.values():
            broker.send_signal(signal.SIGCONT)  # a paused broker cannot stop: let it run again first
        for broker in self.brokers.values():
            broker.stop()
        for zookeeper in self.zookeepers.values():
            zookeeper.stop()
        for mount in self.mounts.values():
            mount.stop()

    def power_loss(self, name: str) -> int:
        """SIGKILL the broker (with its worker processes, if any), then, once none of them can write,
        drop what it had not fsynced (its log.dirs is a lazyfs mount)."""
        self.brokers[name].kill_group()
        return self.mounts[name].power_loss()

    def log_report(self) -> str:
        return "\n".join(b.log_report() for b in self.brokers.values())


@contextlib.contextmanager
def fault_cluster(brokers: int = 3, config: Mapping[str, object] | None = None,
                  keep_dir: Path | None = None, lazyfs: bool = False) -> Iterator[FaultCluster]:
    """Namespaces, ensemble and brokers for the block; all stopped and removed after (data kept in
    keep_dir when given, else in a temporary directory removed unless the block failed)."""
    base = Path(keep_dir) if keep_dir else Path(tempfile.mkdtemp(prefix="kafka-wire-faults-"))
    base.mkdir(parents=True, exist_ok=True)
    names = ["zk1", "zk2", "zk3", *(f"b{i}" for i in range(1, brokers + 1))]
    failed = False
    with private_network(names) as net:
        cluster = FaultCluster(net, base, brokers, config or {}, lazyfs)
        try:
            cluster.start()
            yield cluster
        except BaseException:
            failed = True
            raise
        finally:
            cluster.stop()
    if keep_dir is None:
        if failed:
            print(f"kafka-wire fault cluster data kept in {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
