"""Network namespaces on a private bridge, and the faults a network can have between them.

    with private_network(["zk1", "zk2", "zk3", "b1", "b2", "b3"]) as net:
        net.address("b1")                        # "10.213.47.11"
        net.command("b1", ["python", ...])       # runs inside b1's namespace
        net.cut("b1", ["zk1", "zk2", "zk3"])     # b1 <-x-> ZooKeeper, both directions
        net.cut_from_host("b1")                  # clients in the root namespace cannot reach b1
        net.lose("b1", 0.10)                     # 10% of b1's incoming packets dropped
        net.heal()

Each node gets a namespace `kwf<tag>-<name>` with one veth (`eth0`) on a bridge `kwf<tag>` whose
address (.1 of a /24 in 10.200-254.x.0 that no route of the machine uses) is the root namespace's:
clients run there and reach every node directly. Everything is removed on exit, also after an error
or Ctrl-C.

Parallel runs (threads of one process, or processes) never collide: the tag (pid % 100000, five
digits, then two hex digits) and the subnet are chosen while holding an exclusive flock on
ALLOCATION_LOCK, checked against every link, namespace, address and route that exists, and the
bridge is created and addressed before the lock is released, so the next allocator sees both.

Partitions are iptables DROP rules in the INPUT chain of the receiving namespace (each namespace
has its own netfilter tables, so nothing of the machine's own firewall is touched); packet loss is
iptables' `statistic` match; delay is `tc netem` where the kernel has sch_netem, otherwise
delay_queue.py (iptables NFQUEUE: every packet a node sends is accepted 200 ms late), otherwise
delay_relay.py (a TCP relay iptables REDIRECTs the node's connections to).
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import itertools
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

# Held (flock, exclusive) while a run picks its tag and subnet and creates its bridge.
ALLOCATION_LOCK = "/run/lock/kafka-wire-faults.lock" if os.path.isdir("/run/lock") else "/tmp/kafka-wire-faults.lock"
_probes = itertools.count()
REPO_ROOT = Path(__file__).resolve().parent.parent.parent
# The delay relay's ports (in each delayed namespace, which has its own ports) and the SO_MARK of
# its own connections, which its REDIRECT rules leave alone.
RELAY_OUTGOING_PORT = 19801
RELAY_INCOMING_PORT = 19802
RELAY_MARK = 0x2a
DELAY_QUEUE = 7  # the netfilter queue delay_queue.py binds (queues are per namespace)
_netem: bool | None = None


class NamespacesUnavailable(RuntimeError):
    """This machine cannot make network namespaces (not root, no `ip`, no iptables, ...)."""


def _run(command: list[str], check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: exit {result.returncode}: {result.stderr.strip()}")
    return result


def why_unavailable() -> str | None:
    """None when this machine can run the fault harness; otherwise the reason it cannot."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    for tool, package in (("ip", "iproute2"), ("iptables", "iptables")):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (Debian package {package}; compat/setup-faults.sh installs it)"
    probe = f"kwfprobe{os.getpid()}-{threading.get_ident()}-{next(_probes)}"
    made = _run(["ip", "netns", "add", probe], check=False)
    if made.returncode != 0:
        return f"`ip netns add` fails here: {made.stderr.strip()}"
    try:
        rule = _run(["ip", "netns", "exec", probe, "iptables", "-A", "INPUT", "-s", "10.0.0.1", "-j", "DROP"],
                    check=False)
        if rule.returncode != 0:
            return f"iptables does not work in a namespace: {rule.stderr.strip()}"
    finally:
        _run(["ip", "netns", "del", probe], check=False)
    return None


def netem_available() -> bool:
    """Whether the kernel has sch_netem (tc's delay); probed once on a throwaway namespace's loopback."""
    global _netem
    if _netem is None:
        _netem = _probe_netem()
    return _netem


def relay_unavailable() -> str | None:
    """None when delay_relay.py can delay here (iptables nat REDIRECT, connmark and conntrack in a
    namespace); otherwise why not. Probed on a throwaway namespace."""
    probe = f"kwfrelay{os.getpid()}-{threading.get_ident()}-{next(_probes)}"
    made = _run(["ip", "netns", "add", probe], check=False)
    if made.returncode != 0:
        return f"`ip netns add` fails here: {made.stderr.strip()}"
    try:
        for rule in (["-t", "nat", "-A", "OUTPUT", "-o", "lo", "-p", "tcp", "-m", "mark", "!", "--mark", "1",
                      "-j", "REDIRECT", "--to-ports", "1"],
                     ["-A", "OUTPUT", "-p", "tcp", "-m", "mark", "--mark", "1", "-j", "CONNMARK", "--set-mark", "1"],
                     ["-A", "INPUT", "-p", "tcp", "-m", "connmark", "!", "--mark", "1", "-m", "conntrack", "!",
                      "--ctstate", "DNAT", "-j", "REJECT", "--reject-with", "tcp-reset"]):
            added = _run(["ip", "netns", "exec", probe, "iptables", *rule], check=False)
            if added.returncode != 0:
                return f"iptables {' '.join(rule)}: {added.stderr.strip()}"
    finally:
        _run(["ip", "netns", "del", probe], check=False)
    return None


def queue_unavailable() -> str | None:
    """None when delay_queue.py can delay here (it binds a netfilter queue over nfnetlink); otherwise
    why not. Probed on a throwaway namespace."""
    probe = f"kwfqueue{os.getpid()}-{threading.get_ident()}-{next(_probes)}"
    made = _run(["ip", "netns", "add", probe], check=False)
    if made.returncode != 0:
        return f"`ip netns add` fails here: {made.stderr.strip()}"
    try:
        rule = _run(["ip", "netns", "exec", probe, "iptables", "-A", "OUTPUT", "-o", "lo", "-j", "NFQUEUE",
                     "--queue-num", str(DELAY_QUEUE), "--queue-bypass"], check=False)
        if rule.returncode != 0:
            return f"iptables NFQUEUE: {rule.stderr.strip()}"
        bound = subprocess.run(["ip", "netns", "exec", probe, sys.executable, "-c",
                                "from compat.faults.delay_queue import DelayQueue; DelayQueue(7, 0).bind()"],
                               cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
        if bound.returncode != 0:
            return f"nfnetlink_queue: {(bound.stderr.strip().splitlines() or ['?'])[-1]}"
    finally:
        _run(["ip", "netns", "del", probe], check=False)
    return None


def _probe_netem() -> bool:
    probe = f"kwfnetem{os.getpid()}-{threading.get_ident()}-{next(_probes)}"
    if _run(["ip", "netns", "add", probe], check=False).returncode != 0:
        return False
    try:
        return _run(["ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "lo", "root", "netem",
                     "delay", "1ms"], check=False).returncode == 0
    finally:
        _run(["ip", "netns", "del", probe], check=False)


@contextlib.contextmanager
def allocation_lock() -> Iterator[None]:
    """Exclusive across processes and threads (each call opens its own file description, and flock
    locks belong to the description, so two threads of one process exclude each other too)."""
    with open(ALLOCATION_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _tags_in_use() -> str:
    """Every link and namespace name of the machine, one string (a tag is in use if `kwf<tag>` is in it)."""
    return _run(["ip", "-o", "link"]).stdout + "\n" + _run(["ip", "netns", "list"]).stdout


def _free_tag() -> str:
    """`<pid % 100000, 5 digits><2 hex digits>` that no link or namespace uses (call under the lock)."""
    in_use = _tags_in_use()
    start = random.randrange(256)
    for step in range(256):
        tag = f"{os.getpid() % 100000:05d}{(start + step) % 256:02x}"
        if f"kwf{tag}" not in in_use:
            return tag
    raise NamespacesUnavailable(f"no free fault-network tag for process {os.getpid()}")


def _free_subnet() -> ipaddress.IPv4Network:
    """A 10.200-254.x.0/24 no route or address of the machine overlaps (call under the lock)."""
    routes = _run(["ip", "-4", "route", "show", "table", "all"]).stdout
    used = [ipaddress.ip_network(word, strict=False) for line in routes.splitlines()
            for word in line.split()[:2] if word[0].isdigit() and "/" in word]
    addresses = _run(["ip", "-4", "-o", "addr"]).stdout
    used += [ipaddress.ip_network(word, strict=False) for line in addresses.splitlines()
             for word in line.split() if "/" in word and word[0].isdigit()]
    for _ in range(200):
        subnet = ipaddress.ip_network(f"10.{random.randint(200, 254)}.{random.randint(0, 255)}.0/24")
        if not any(subnet.overlaps(other) for other in used):
            return subnet
    raise NamespacesUnavailable("no free 10.200-254.x.0/24 subnet for the fault bridge")


class PrivateNetwork:
    def __init__(self, names: Iterable[str]) -> None:
        # Tag, bridge, subnet and addresses are chosen in create(), under the allocation lock.
        self.tag = ""
        self.bridge = ""
        self.subnet: ipaddress.IPv4Network | None = None
        self.host_address = ""
        self.names = list(names)
        self._addresses: dict[str, str] = {}
        self._made_namespaces: list[str] = []
        self._made_links: list[str] = []
        self._made_bridge = False
        self._netem: set[str] = set()
        self._delayers: dict[str, subprocess.Popen] = {}   # delay_queue.py or delay_relay.py per node
        self._queued: set[str] = set()                      # nodes with a delayer's iptables rules

    # -- names ---------------------------------------------------------------------------------------
    def namespace(self, name: str) -> str:
        return f"kwf{self.tag}-{name}"

    def address(self, name: str) -> str:
        return self._addresses[name]

    def command(self, name: str, argv: list[str]) -> list[str]:
        """argv run inside `name`'s namespace (`ip netns exec` execs it: same pid, signals reach it)."""
        return ["ip", "netns", "exec", self.namespace(name), *argv]

    def _in(self, name: str, argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
        return _run(self.command(name, argv), check)

    # -- life ----------------------------------------------------------------------------------------
    def create(self) -> None:
        with allocation_lock():
            self.tag = _free_tag()
            self.bridge = f"kwf{self.tag}"            # at most 10 characters (interface names: 15)
            self.subnet = _free_subnet()
            hosts = list(self.subnet.hosts())
            self.host_address = str(hosts[0])
            self._addresses = {name: str(hosts[10 + i]) for i, name in enumerate(self.names)}
            _run(["ip", "link", "add", self.bridge, "type", "bridge"])
            self._made_bridge = True
            # Addressed before the lock is released: its route is what the next _free_subnet sees.
            _run(["ip", "addr", "add", f"{self.host_address}/{self.subnet.prefixlen}", "dev", self.bridge])
        _run(["ip", "link", "set", self.bridge, "up"])
        for index, name in enumerate(self.names):
            namespace = self.namespace(name)
            _run(["ip", "netns", "add", namespace])
            self._made_namespaces.append(namespace)
            outer, inner = f"kwf{self.tag}v{index}", f"kwf{self.tag}p{index}"
            _run(["ip", "link", "add", outer, "type", "veth", "peer", "name", inner])
            self._made_links.append(outer)
            _run(["ip", "link", "set", inner, "netns", namespace])
            _run(["ip", "link", "set", outer, "master", self.bridge, "up"])
            self._in(name, ["ip", "link", "set", inner, "name", "eth0"])
            self._in(name, ["ip", "addr", "add", f"{self.address(name)}/{self.subnet.prefixlen}", "dev", "eth0"])
            self._in(name, ["ip", "link", "set", "eth0", "up"])
            self._in(name, ["ip", "link", "set", "lo", "up"])

    def remove(self) -> None:
        """Deletes every veth pair, namespace and the bridge; never raises."""
        self._stop_delayers()
        # Deleting one end of a veth deletes its peer at once; a namespace's deletion takes its end
        # along only when the kernel's deferred namespace clean-up gets to it, which can be seconds.
        for link in reversed(self._made_links):
            _run(["ip", "link", "del", link], check=False)
        self._made_links.clear()
        for namespace in reversed(self._made_namespaces):
            _run(["ip", "netns", "del", namespace], check=False)
        self._made_namespaces.clear()
        if self._made_bridge:
            _run(["ip", "link", "del", self.bridge], check=False)
            self._made_bridge = False

    # -- faults --------------------------------------------------------------------------------------
    def _drop_from(self, name: str, source: str) -> None:
        self._in(name, ["iptables", "-A", "INPUT", "-s", source, "-j", "DROP"])

    def cut(self, name: str, others: Iterable[str]) -> None:
        """No packet between `name` and each of `others`, either way."""
        for other in others:
            if other == name:
                continue
            self._drop_from(name, self.address(other))
            self._drop_from(other, self.address(name))

    def partition(self, groups: list[list[str]]) -> None:
        """Every node hears only the nodes of its own group (nodes in no group hear everyone)."""
        for group in groups:
            for other_group in groups:
                if other_group is not group:
                    for name in group:
                        for other in other_group:
                            self._drop_from(name, self.address(other))

    def cut_from_host(self, name: str) -> None:
        """Clients in the root namespace (the bridge's address) cannot reach `name`, nor it them."""
        self._drop_from(name, self.host_address)

    def lose(self, name: str, probability: float) -> None:
        """Each packet arriving at `name` is dropped with `probability`."""
        self._in(name, ["iptables", "-A", "INPUT", "-m", "statistic", "--mode", "random",
                        "--probability", str(probability), "-j", "DROP"])

    def delay(self, name: str, milliseconds: int, jitter: int = 0) -> None:
        """Packets leaving `name` wait `milliseconds` (tc netem; needs the kernel's sch_netem)."""
        argv = ["tc", "qdisc", "add", "dev", "eth0", "root", "netem", "delay", f"{milliseconds}ms"]
        if jitter:
            argv.append(f"{jitter}ms")
        self._in(name, argv)
        self._netem.add(name)

    def _start_delayers(self, names: list[str], module: str, arguments: list[str]) -> None:
        """One `python -m <module>` per node, in its namespace, each until it prints `ready`."""
        for name in names:
            self._delayers[name] = subprocess.Popen(
                self.command(name, [sys.executable, "-m", module, *arguments]), cwd=REPO_ROOT,
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        for name in names:
            delayer = self._delayers[name]
            ready = select.select([delayer.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]
            if not ready or delayer.stdout.readline().strip() != "ready":
                raise RuntimeError(f"{module} in {self.namespace(name)} did not start (exit status {delayer.poll()})")

    def delay_through_queue(self, names: Iterable[str], milliseconds: int) -> None:
        """Every packet each of `names` sends leaves it `milliseconds` late, without netem: iptables
        queues its outgoing packets (NFQUEUE, on eth0) to delay_queue.py in its namespace, which
        accepts each one `milliseconds` after it was queued, in order. Established connections are
        delayed too, as with netem. `--queue-bypass`: should the delayer die, packets pass."""
        names = [n for n in names if n not in self._delayers]
        self._start_delayers(names, "compat.faults.delay_queue",
                             ["--queue", str(DELAY_QUEUE), "--delay-ms", str(milliseconds)])
        for name in names:
            self._in(name, ["iptables", "-A", "OUTPUT", "-o", "eth0", "-j", "NFQUEUE", "--queue-num",
                            str(DELAY_QUEUE), "--queue-bypass"])
            self._queued.add(name)

    def delay_through_relay(self, names: Iterable[str], milliseconds: int) -> None:
        """Every TCP byte each of `names` sends leaves it `milliseconds` late, without netem nor
        NFQUEUE: a relay in its namespace gets its connections (iptables nat REDIRECT: OUTPUT for
        connections it opens, PREROUTING for ones it accepts; the relay's own, marked, connections
        excepted) and forwards what the node sends after the delay. Connections opened before are
        cut (TCP reset on their next packet: filter rules reject TCP on eth0 that is neither
        redirected nor the relay's), so clients reconnect through the relay; at heal the relay
        stops, which closes what went through it, so connections made afterwards are direct again."""
        names = [n for n in names if n not in self._delayers]
        self._start_delayers(names, "compat.faults.delay_relay",
                             ["--delay-ms", str(milliseconds), "--outgoing-port", str(RELAY_OUTGOING_PORT),
                              "--incoming-port", str(RELAY_INCOMING_PORT), "--mark", str(RELAY_MARK)])
        mark = str(RELAY_MARK)
        for name in names:
            self._queued.add(name)
            for rule in (
                    ["-t", "nat", "-A", "OUTPUT", "-o", "eth0", "-p", "tcp", "-m", "mark", "!", "--mark", mark,
                     "-j", "REDIRECT", "--to-ports", str(RELAY_OUTGOING_PORT)],
                    ["-t", "nat", "-A", "PREROUTING", "-i", "eth0", "-p", "tcp",
                     "-j", "REDIRECT", "--to-ports", str(RELAY_INCOMING_PORT)],
                    ["-A", "OUTPUT", "-p", "tcp", "-m", "mark", "--mark", mark, "-j", "CONNMARK", "--set-mark", mark],
                    ["-A", "OUTPUT", "-o", "eth0", "-p", "tcp", "-m", "connmark", "!", "--mark", mark,
                     "-m", "conntrack", "!", "--ctstate", "DNAT", "-j", "REJECT", "--reject-with", "tcp-reset"],
                    ["-A", "INPUT", "-i", "eth0", "-p", "tcp", "-m", "connmark", "!", "--mark", mark,
                     "-m", "conntrack", "!", "--ctstate", "DNAT", "-j", "REJECT", "--reject-with", "tcp-reset"]):
                self._in(name, ["iptables", *rule])

    def _stop_delayers(self) -> None:
        for delayer in self._delayers.values():
            if delayer.poll() is None:
                delayer.send_signal(signal.SIGTERM)
        for delayer in self._delayers.values():
            try:
                delayer.wait(timeout=10)
            except subprocess.TimeoutExpired:
                delayer.kill()
                delayer.wait()
            delayer.stdout.close()
        self._delayers.clear()

    def heal(self) -> None:
        """Removes every partition, loss and delay."""
        for name in self.names:
            self._in(name, ["iptables", "-F", "INPUT"], check=False)
        for name in list(self._netem):
            self._in(name, ["tc", "qdisc", "del", "dev", "eth0", "root"], check=False)
        self._netem.clear()
        for name in self._queued:  # the rules first (nothing new is queued or relayed), then the delayers
            self._in(name, ["iptables", "-F", "OUTPUT"], check=False)
            self._in(name, ["iptables", "-t", "nat", "-F"], check=False)
        self._queued.clear()
        self._stop_delayers()


@contextlib.contextmanager
def private_network(names: Iterable[str]) -> Iterator[PrivateNetwork]:
    reason = why_unavailable()
    if reason is not None:
        raise NamespacesUnavailable(reason)
    network = PrivateNetwork(names)
    try:
        network.create()
        yield network
    finally:
        network.remove()

