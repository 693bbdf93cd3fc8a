"""The fault harness end to end: `kafka-wire compat faults --quick` (brokers and a ZooKeeper ensemble
in network namespaces, nemeses under real librdkafka clients, histories checked) finds no anomaly,
its faults bite (leaders move), and it leaves no namespace or bridge behind, also when stopped
halfway. Needs root (ip netns); skips without it, and fails under CI=true when root cannot make
namespaces."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testing.broker_process import REPO_ROOT
from client import WireClient
from compat.faults.cluster import fault_cluster
from compat.faults.nemesis import QUICK
from compat.faults.netns import why_unavailable
from compat.faults.workloads import ClusterState
from kafka_wire.errors import ErrorCode
from tests.conftest import in_ci

pytestmark = pytest.mark.usefixtures("zookeeper_installed")


@pytest.fixture(scope="module", autouse=True)
def namespaces_possible():
    reason = why_unavailable()
    if reason is None:
        return
    if in_ci() and os.geteuid() == 0:
        pytest.fail(f"CI runs as root, yet the fault harness cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def leftovers(pid: int) -> list[str]:
    """Namespaces and links a fault run of process `pid` made and did not remove (netns.py names them
    kwf<pid % 100000, 5 digits><2 hex>...)."""
    prefix = f"kwf{pid % 100000:05d}"
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in namespaces.splitlines() if line.startswith(prefix)] + \
           [line.split()[1] for line in links.splitlines() if prefix in line]


def faults_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "cli", "compat", "faults", *args]


def leader_epochs(history: Path, topic: str = "queue") -> set[int]:
    epochs = set()
    for line in history.read_text().splitlines():
        op = json.loads(line)
        if op["f"] == "leader" and op["topic"] == topic:
            epochs.add(op["epoch"])
    return epochs


def test_quick_form_finds_no_anomaly_and_its_faults_bite(tmp_path, request):
    """The quick form's runs go side by side (`--parallel`, each in its own process and networks):
    they mostly wait (20 s of faults each), so together they take about as long as one. Beside them
    runs test_franz_go.py's command, when that test is to run in this session (it judges it)."""
    from tests.integration import test_franz_go

    test_franz_go.start_beside(request.session, tmp_path / "franz-go")
    report = tmp_path / "FAULTS.md"
    process = subprocess.Popen(faults_command("--quick", "--parallel", str(len(QUICK)), "--out-dir",
                                              str(tmp_path / "runs"), "--results", str(report)),
                               cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output, _ = process.communicate(timeout=600)
    children = [int(line.rsplit(" ", 1)[1]) for line in output.splitlines() if ": process " in line]
    assert len(children) == len(QUICK), output
    assert process.returncode == 0, output
    assert output.strip().splitlines()[-1] == f"faults: {len(QUICK)} runs, 0 anomalies", output
    table = report.read_text()
    assert table.strip().splitlines()[-1] == f"faults: {len(QUICK)} runs, 0 anomalies"
    for nemesis, workload in QUICK:
        row = next(line for line in table.splitlines() if line.startswith(f"| {nemesis} | {workload} |"))
        cells = [c.strip() for c in row.split("|")]
        assert int(cells[3]) >= 1 and int(cells[4]) > 0 and cells[7] == "yes" and cells[8] == "none", row
    # Cutting the leader from ZooKeeper and killing it both move leadership: new leader epochs.
    for nemesis in ("partition-leader-zk", "kill-leader"):
        assert max(leader_epochs(tmp_path / "runs" / f"{nemesis}-queue.jsonl")) >= 1, nemesis
    # The share workload's consumers accepted records, and the group's state was read at the end.
    share_ops = [json.loads(line) for line in (tmp_path / "runs" / "kill-leader-share.jsonl").read_text().splitlines()]
    assert any(op["f"] == "share-accept" and op["status"] == "ok" for op in share_ops)
    assert any(op["f"] == "share-final" for op in share_ops)
    assert max(leader_epochs(tmp_path / "runs" / "kill-leader-share.jsonl", "shared")) >= 1
    assert [name for pid in (process.pid, *children) for name in leftovers(pid)] == []


def test_a_run_stopped_halfway_removes_its_namespaces(tmp_path):
    process = subprocess.Popen(faults_command("--nemesis", "partition-leader-clients", "--time", "60",
                                              "--out-dir", str(tmp_path)),
                               cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        history = tmp_path / "partition-leader-clients-queue.jsonl"
        deadline = time.monotonic() + 120
        while not (history.exists() and '"f": "send"' in history.read_text()):
            assert process.poll() is None, process.stdout.read()
            assert time.monotonic() < deadline, "no send recorded"
            time.sleep(0.5)
        assert leftovers(process.pid), "the run made no namespace to remove"
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert leftovers(process.pid) == [], output


# One process making `threads` networks at once; prints each one's tag, bridge and subnet as JSON,
# keeps them until a line arrives on stdin, then removes them.
NETWORKS_AT_ONCE = """
import json, sys, threading
from compat.faults.netns import private_network
threads = int(sys.argv[1])
made, release = [], threading.Event()
ready = threading.Barrier(threads + 1)
def make():
    with private_network(["a", "b"]) as net:
        made.append({"tag": net.tag, "bridge": net.bridge, "subnet": str(net.subnet),
                     "namespaces": [net.namespace("a"), net.namespace("b")]})
        ready.wait()
        release.wait()
workers = [threading.Thread(target=make) for _ in range(threads)]
for worker in workers:
    worker.start()
ready.wait()
print(json.dumps(made), flush=True)
sys.stdin.readline()
release.set()
for worker in workers:
    worker.join()
"""


def test_networks_made_at_once_by_processes_and_threads_do_not_collide():
    """`--parallel N` runs networks side by side: tags (hence bridge, veth and namespace names) and
    subnets are allocated under netns.py's lock, so two processes of three threads each get six
    distinct ones, all existing at the same time, and remove all of them."""
    processes = [subprocess.Popen([sys.executable, "-c", NETWORKS_AT_ONCE, "3"], cwd=REPO_ROOT, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for _ in range(2)]
    try:
        made = [net for process in processes for net in json.loads(process.stdout.readline() or "[]")]
        existing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        for process in processes:
            process.stdin.write("\n")
            process.stdin.flush()
        errors = [process.communicate(timeout=120)[1] for process in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert [process.returncode for process in processes] == [0, 0], errors
    assert len(made) == 6, (made, errors)
    assert len({net["tag"] for net in made}) == 6 and len({net["subnet"] for net in made}) == 6, made
    subnets = [ipaddress.ip_network(net["subnet"]) for net in made]
    assert not any(a.overlaps(b) for i, a in enumerate(subnets) for b in subnets[i + 1:]), made
    assert all(namespace in existing for net in made for namespace in net["namespaces"]), (made, existing)
    for process in processes:
        assert leftovers(process.pid) == []


# A TCP echo server on port 7000 of the namespace it runs in; `who` answers the peer address it sees.
ECHO_SERVER = """
import socket, threading
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("0.0.0.0", 7000))
server.listen(50)
print("ready", flush=True)
def serve(conn):
    while data := conn.recv(4096):
        conn.sendall(repr(conn.getpeername()[0]).encode() if data == b"who" else data)
    conn.close()
while True:
    threading.Thread(target=serve, args=(server.accept()[0],), daemon=True).start()
"""


@contextlib.contextmanager
def echo_server(net):
    """ECHO_SERVER in the namespace "node"; yields its address, kills it at the end."""
    server = subprocess.Popen(net.command("node", [sys.executable, "-c", ECHO_SERVER]), stdout=subprocess.PIPE,
                              text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        yield (net.address("node"), 7000)
    finally:
        server.kill()
        server.wait()


def round_trip(conn) -> float:
    started = time.monotonic()
    conn.sendall(b"x")
    assert conn.recv(16) == b"x"
    return time.monotonic() - started


def peer_seen(conn) -> str:
    conn.sendall(b"who")
    return conn.recv(100).decode().strip("'")


def test_delay_through_nfqueue_delays_every_packet_a_namespace_sends_until_healed():
    """The delay nemesis where the kernel has no sch_netem: iptables queues every packet the node sends
    (NFQUEUE) to delay_queue.py, which accepts it 200 ms later. Measured from the root namespace to an
    echo server in the node: during the fault every round trip takes at least 200 ms, on a connection
    opened before the fault (it is delayed, not cut, as with netem) and on a new one; after heal the
    fastest of five round trips on each is under 200 ms again."""
    from compat.faults.netns import private_network, queue_unavailable

    reason = queue_unavailable()
    if reason is not None:
        pytest.skip(f"NFQUEUE cannot delay here: {reason}")
    with private_network(["node"]) as net:
        with echo_server(net) as address:
            before = socket.create_connection(address, timeout=10)
            round_trip(before)
            net.delay_through_queue(["node"], 200)
            during = socket.create_connection(address, timeout=10)
            delayed = [round_trip(conn) for conn in (before, during) for _ in range(3)]
            assert min(delayed) >= 0.2, delayed
            net.heal()
            healed = [round_trip(conn) for conn in (before, during) for _ in range(5)]
            assert min(healed[:5]) < 0.2 and min(healed[5:]) < 0.2, healed
            print(f"round trips during the fault {[round(t, 3) for t in delayed]}, "
                  f"after heal {[round(t, 3) for t in healed]}")
            before.close()
            during.close()


def test_delay_relay_delays_what_a_namespace_sends_until_healed():
    """The delay nemesis where the kernel has neither sch_netem nor NFQUEUE: a relay in the node's namespace gets its TCP
    connections (iptables REDIRECT) and sends what the node sends 200 ms late. Measured from the root
    namespace to an echo server in the node: every round trip during the fault takes at least 200 ms;
    a connection opened before the fault is reset (clients reconnect through the relay); after heal a
    new connection goes straight to the server again (it sees the client's address, not the relay's)."""
    from compat.faults.netns import private_network, relay_unavailable

    reason = relay_unavailable()
    if reason is not None:
        pytest.skip(f"the delay relay cannot run here: {reason}")
    with private_network(["node"]) as net:
        with echo_server(net) as address:
            before = socket.create_connection(address, timeout=10)
            assert peer_seen(before) == net.host_address
            net.delay_through_relay(["node"], 200)
            during = socket.create_connection(address, timeout=10)
            delayed = [round_trip(during) for _ in range(5)]
            assert min(delayed) >= 0.2, delayed
            assert peer_seen(during) == net.address("node")  # through the relay in the node's namespace
            with pytest.raises(OSError):  # reset at the fault's start
                before.sendall(b"x")
                assert before.recv(16) == b""  # or closed
                raise ConnectionResetError("closed")
            net.heal()
            with pytest.raises(OSError):  # the relayed connection is closed at heal
                during.sendall(b"x")
                assert during.recv(16) == b""
                raise ConnectionResetError("closed")
            after = socket.create_connection(address, timeout=10)
            healed = [round_trip(after) for _ in range(5)]
            assert peer_seen(after) == net.host_address  # direct again: nothing left to delay it
            print(f"round trips during the fault {[round(t, 3) for t in delayed]}, "
                  f"after heal {[round(t, 3) for t in healed]}")
            for conn in (before, during, after):
                conn.close()


def list_offsets_error(bootstrap: str, topic: str, partition: int) -> int:
    """What a broker answers a ListOffsets for the partition (it checks leadership as Produce and Fetch do)."""
    with WireClient(bootstrap, timeout=5) as client:
        response = client.call("ListOffsets", 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                            "timestamp": -1}]}]})
    return response.topics[0].partitions[0].error_code


def wait_until(condition, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = condition()
        except OSError:
            found = None
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_a_leader_cut_from_zookeeper_stops_leading_before_another_is_elected(tmp_path):
    """Bug found by partition-coordinator-zk: a broker cut from ZooKeeper kept serving as leader (and
    group coordinator) after the controller had elected another, until it could reach ZooKeeper again,
    so reads of committed offsets went backwards. It now steps down when its ZooKeeper connection drops
    (before its session can expire) and takes leadership up again from the states when it is back."""
    with fault_cluster(3, {"min.insync.replicas": 2}, keep_dir=tmp_path / "cluster") as cluster:
        first = next(iter(cluster.brokers.values()))
        with WireClient(first.bootstrap, timeout=15) as client:
            created = client.call("CreateTopics", 5, {
                "topics": [{"name": "fenced", "num_partitions": 1, "replication_factor": 3, "assignments": [],
                            "configs": []}], "timeout_ms": 10000, "validate_only": False})
        assert created.topics[0].error_code == 0
        state = ClusterState(cluster)
        try:
            old = wait_until(lambda: state.leader_of("fenced", 0) > 0 and state.leader_of("fenced", 0), "a leader")
            victim = cluster.brokers[cluster.node_of(old)]
            wait_until(lambda: list_offsets_error(victim.bootstrap, "fenced", 0) == 0, "the leader serving")
            cluster.net.cut(victim.name, cluster.zookeeper_nodes)
            new = wait_until(lambda: state.leader_of("fenced", 0) not in (-1, old) and state.leader_of("fenced", 0),
                             "ZooKeeper naming another leader")
            # Still cut from ZooKeeper, reachable by clients: it must not answer as the leader.
            assert list_offsets_error(victim.bootstrap, "fenced", 0) == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert list_offsets_error(cluster.brokers[cluster.node_of(new)].bootstrap, "fenced", 0) == 0
            cluster.net.heal()
            # Back on ZooKeeper it follows, and leads again when the controller gives it leadership back.
            wait_until(lambda: set(state.partition_state("fenced", 0)["isr"]) == {1, 2, 3}, "a full ISR again")
        finally:
            state.close()


def test_lazyfs_loses_exactly_what_was_not_fsynced(tmp_path):
    """The power-loss layer under log.dirs: after a power loss a file holds what was fsynced and no
    more; renames, deletes and new directories stay (metadata goes to the disk at once)."""
    from compat.faults.cluster import LazyMount
    from compat.faults.lazyfs import WHY_UNAVAILABLE

    if WHY_UNAVAILABLE:
        if in_ci():
            pytest.fail(WHY_UNAVAILABLE, pytrace=False)
        pytest.skip(WHY_UNAVAILABLE)
    mount = LazyMount(tmp_path / "disk", tmp_path / "mnt")
    mount.start()
    try:
        root = tmp_path / "mnt"
        (root / "queue-0").mkdir()
        with open(root / "queue-0" / "a.log", "ab") as out:
            out.write(b"synced ")
            out.flush()
            os.fsync(out.fileno())
            out.write(b"unsynced")
            out.flush()
        assert (root / "queue-0" / "a.log").read_bytes() == b"synced unsynced"  # the process sees its writes
        assert (tmp_path / "disk" / "queue-0" / "a.log").read_bytes() == b"synced "  # the disk does not yet
        (root / "queue-0" / "b.tmp").write_bytes(b"checkpoint")
        os.rename(root / "queue-0" / "b.tmp", root / "queue-0" / "b.checkpoint")
        assert mount.power_loss() == len(b"unsynced") + len(b"checkpoint")
        assert (root / "queue-0" / "a.log").read_bytes() == b"synced "
        assert (root / "queue-0" / "b.checkpoint").read_bytes() == b""
        assert sorted(os.listdir(root / "queue-0")) == ["a.log", "b.checkpoint"]
    finally:
        mount.stop()
    assert not os.path.ismount(tmp_path / "mnt")
