"""Nemeses: the faults, each a `start()` that breaks something and a `heal()` that undoes it.

A nemesis picks its victims when it starts (the leader of the workload's watched partition, e.g.
`queue`-0 or `txn-out`-0, at that moment, the controller,
the group's coordinator, ...) and records what it did in the history (`nemesis` operations), so a
reader of an anomaly can see which fault was in force. heal() is safe to call twice and when
start() failed halfway; the runner always calls it.
"""

from __future__ import annotations

import random
import signal

from .cluster import FaultCluster
from .history import HistoryRecorder
from .netns import netem_available, queue_unavailable, relay_unavailable
from .workloads import WORKLOADS, Workload

# Whom "leader" nemeses pick: the leader of partition 0 of the workload's watched topic.
LEADER = "the leader of the workload's partition 0 (" + ", ".join(
    f"{workload.watched_topic}-0 under {name}" for name, workload in WORKLOADS.items()) + ")"


class NemesisUnavailable(RuntimeError):
    """This machine cannot inject the fault (e.g. the kernel has no sch_netem for delay)."""


class Nemesis:
    name = "none"
    description = "no fault: the workload alone"
    needs_lazyfs = False               # brokers' log.dirs on compat/faults/lazyfs.py mounts
    broker_config: dict = {}           # on top of the run's cluster settings
    expected_anomalies: frozenset = frozenset()  # Kafka's documented behaviour under this fault

    def __init__(self, cluster: FaultCluster, history: HistoryRecorder, workload: Workload,
                 rng: random.Random | None = None) -> None:
        # This run's documented anomalies: the class's, plus what a fault found in force adds.
        self.expected_anomalies = set(type(self).expected_anomalies)
        self.cluster = cluster
        self.history = history
        self.workload = workload
        self.rng = rng or random.Random()
        self.net = cluster.net

    @classmethod
    def check_available(cls) -> None:
        """Raises NemesisUnavailable when this machine cannot inject the fault."""

    def note(self, action: str, detail: str) -> None:
        self.history.record("nemesis", "nemesis", name=self.name, action=action, detail=detail)

    def start(self) -> None:
        self.note("start", "nothing")

    def heal(self) -> None:
        self.note("heal", "nothing")

    # -- victims ------------------------------------------------------------------------------------
    def leader(self) -> str:
        broker = self.workload.state.leader_of(self.workload.watched_topic, 0)
        return self.cluster.node_of(broker) if broker > 0 else self.rng.choice(self.cluster.broker_nodes)

    def controller(self) -> str:
        broker = self.workload.state.controller()
        return self.cluster.node_of(broker) if broker > 0 else self.rng.choice(self.cluster.broker_nodes)

    def coordinator(self) -> str:
        broker = self.workload.state.coordinator_of(self.workload.group)
        return self.cluster.node_of(broker) if broker > 0 else self.rng.choice(self.cluster.broker_nodes)


class NetworkNemesis(Nemesis):
    def heal(self) -> None:
        self.net.heal()
        self.note("heal", "all iptables rules and qdiscs removed")


class LeaderFromZooKeeper(NetworkNemesis):
    name = "partition-leader-zk"
    description = f"{LEADER} cut from every ZooKeeper node (its session expires; a new leader is elected)"

    def start(self) -> None:
        victim = self.leader()
        self.net.cut(victim, self.cluster.zookeeper_nodes)
        self.note("start", f"{victim} <-x-> {self.cluster.zookeeper_nodes}")


class CoordinatorFromZooKeeper(NetworkNemesis):
    name = "partition-coordinator-zk"
    description = "the group's coordinator (leader of its __consumer_offsets partition) cut from every ZooKeeper node"

    def start(self) -> None:
        victim = self.coordinator()
        self.net.cut(victim, self.cluster.zookeeper_nodes)
        self.note("start", f"{victim} <-x-> {self.cluster.zookeeper_nodes}")


class LeaderFromFollowers(NetworkNemesis):
    name = "partition-leader-followers"
    description = f"{LEADER} cut from the other brokers (it still reaches ZooKeeper and clients)"

    def start(self) -> None:
        victim = self.leader()
        others = [b for b in self.cluster.broker_nodes if b != victim]
        self.net.cut(victim, others)
        self.note("start", f"{victim} <-x-> {others}")


class LeaderFromClients(NetworkNemesis):
    name = "partition-leader-clients"
    description = f"{LEADER} cut from the clients (root namespace); brokers and ZooKeeper still reach it"

    def start(self) -> None:
        victim = self.leader()
        self.net.cut_from_host(victim)
        self.note("start", f"{victim} <-x-> clients")


class ZooKeeperMinority(NetworkNemesis):
    name = "partition-zk-minority"
    description = "one ZooKeeper node cut from the other ZooKeeper nodes and from every broker"

    def start(self) -> None:
        victim = self.rng.choice(self.cluster.zookeeper_nodes)
        others = [n for n in self.net.names if n != victim]
        self.net.cut(victim, others)
        self.note("start", f"{victim} <-x-> {others}")


class ZooKeeperMajority(NetworkNemesis):
    name = "partition-zk-majority"
    description = "two of three ZooKeeper nodes cut from everything: no quorum until healed"

    def start(self) -> None:
        victims = self.rng.sample(self.cluster.zookeeper_nodes, 2)
        for victim in victims:
            self.net.cut(victim, [n for n in self.net.names if n != victim])
        self.note("start", f"{victims} isolated")


class RandomHalves(NetworkNemesis):
    name = "partition-random-halves"
    description = "every node (ZooKeeper and brokers) split into two random halves"

    def start(self) -> None:
        nodes = list(self.net.names)
        self.rng.shuffle(nodes)
        halves = [nodes[:len(nodes) // 2], nodes[len(nodes) // 2:]]
        self.net.partition(halves)
        self.note("start", f"{halves[0]} | {halves[1]}")


class Bridge(NetworkNemesis):
    name = "partition-bridge"
    description = "two halves that only one node (the bridge) hears both of: overlapping majorities"

    def start(self) -> None:
        nodes = list(self.net.names)
        self.rng.shuffle(nodes)
        bridge, rest = nodes[0], nodes[1:]
        left, right = rest[:len(rest) // 2], rest[len(rest) // 2:]
        self.net.partition([left, right])  # the bridge is in neither group: it hears everyone
        self.note("start", f"{left} | {bridge} | {right}")


class PacketLoss(NetworkNemesis):
    name = "loss"
    description = "10% of the packets arriving at every node dropped"

    def start(self) -> None:
        for node in self.net.names:
            self.net.lose(node, 0.10)
        self.note("start", "10% loss at every node")


class Delay(NetworkNemesis):
    name = "delay"
    description = ("200 ms added to every packet every node sends: tc netem on its eth0 where the kernel has "
                   "sch_netem; otherwise compat/faults/delay_queue.py in each node's namespace, to which iptables "
                   "queues (NFQUEUE) every packet leaving eth0 and which accepts each 200 ms later, in order "
                   "(established connections are delayed too, as with netem); where neither works, "
                   "compat/faults/delay_relay.py, a TCP relay that connections are redirected to (those open at "
                   "the fault's start are reset, relayed ones closed at heal)")
    _mechanism: str | None = None

    @classmethod
    def mechanism(cls) -> str:
        """netem, queue or relay: the first that works here (probed once)."""
        if cls._mechanism is None:
            if netem_available():
                cls._mechanism = "netem"
            else:
                why_not_queue = queue_unavailable()
                why_not_relay = relay_unavailable() if why_not_queue else None
                if why_not_queue and why_not_relay:
                    raise NemesisUnavailable("the kernel has no sch_netem (tc qdisc netem: 'Specified qdisc kind "
                                             f"is unknown'), NFQUEUE does not work ({why_not_queue}) and the "
                                             f"delay relay cannot run ({why_not_relay})")
                cls._mechanism = "queue" if not why_not_queue else "relay"
        return cls._mechanism

    @classmethod
    def check_available(cls) -> None:
        cls.mechanism()

    def start(self) -> None:
        how = self.mechanism()
        if how == "netem":
            for node in self.net.names:
                self.net.delay(node, 200)
            self.note("start", "200 ms delay at every node (tc netem)")
        elif how == "queue":
            self.net.delay_through_queue(self.net.names, 200)
            self.note("start", "200 ms delay at every node (NFQUEUE, delay_queue.py)")
        else:
            self.net.delay_through_relay(self.net.names, 200)
            self.note("start", "200 ms delay at every node (delay relay; connections open before were reset)")


class ProcessNemesis(Nemesis):
    """Sends a signal to a victim broker; heal() restarts a killed one and resumes a paused one."""

    sig = signal.SIGKILL
    victim_kind = "leader"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.victims: list[str] = []

    def start(self) -> None:
        victim = getattr(self, self.victim_kind)()
        self.victims.append(victim)
        if self.sig == signal.SIGKILL:
            self.cluster.kill(victim)
        else:
            self.cluster.signal(victim, self.sig)
        self.note("start", f"{signal.Signals(self.sig).name} {victim} ({self.victim_kind})")

    def heal(self) -> None:
        for victim in self.victims:
            self.cluster.start_broker(victim)  # SIGCONT for a paused one, a start for a killed one
        self.note("heal", f"{self.victims} running again")
        self.victims.clear()


class PowerLoss(Nemesis):
    """SIGKILL and loss of every write not yet fsynced (lazyfs), of the leader or of every broker;
    heal() starts them again on what their disks kept."""

    needs_lazyfs = True
    victim_kind = "leader"
    # Whether the brokers answer acks=1/all before the records are fsynced (log.flush.on.ack=false,
    # Kafka's behaviour); by default they answer once fsynced.
    acknowledges_unsynced = False

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.victims: list[str] = []

    @classmethod
    def check_available(cls) -> None:
        from .lazyfs import WHY_UNAVAILABLE

        if WHY_UNAVAILABLE:
            raise NemesisUnavailable(WHY_UNAVAILABLE)

    def start(self) -> None:
        victims = [self.leader()] if self.victim_kind == "leader" else list(self.cluster.broker_nodes)
        if self.victim_kind == "leader" and self.acknowledges_unsynced:
            # The victim alone in a partition's ISR (the others fell out during earlier faults):
            # losing its unsynced writes is losing power on every in-sync replica at once, and a
            # clean election may pick only it when it is back (Kafka without fsync, the case
            # KIP-966's eligible leader replicas address); what that loses is documented behaviour.
            alone = self.workload.state.sole_in_sync_replica_of(int(victims[0].lstrip("b")))
            if alone:
                self.expected_anomalies |= DATA_LOSS_ANOMALIES
                self.note("isr", f"{victims[0]} is the only in-sync replica of {', '.join(alone)}")
        dropped = {}
        for victim in victims:
            self.victims.append(victim)
            dropped[victim] = self.cluster.power_loss(victim)
        self.note("start", f"power loss of {victims}; unsynced bytes dropped: {dropped}")

    def heal(self) -> None:
        for victim in self.victims:
            self.cluster.start_broker(victim)
        self.note("heal", f"{self.victims} started again")
        self.victims.clear()


# What losing acknowledged writes on every in-sync replica shows (Kafka acknowledges acks=all once
# the ISR has the records in memory; it does not fsync: flush.messages defaults to Long.MAX_VALUE).
# The lost offsets are written again with other records, so readers see two values at one offset,
# offsets going back, duplicates and reordering of what they had read before, and committed offsets
# beyond the new log end. Transactions rest on the same writes: an acknowledged AddPartitionsToTxn
# record of __transaction_state or a marker lost leaves a transaction's records without their marker
# in a partition, where the producer's next commit under the same epoch (transaction.version 1) ends
# them: an aborted transaction's records become visible, a committed one's partly; a PrepareCommit
# kept while its CompleteCommit and the next transaction's records in __transaction_state are lost
# has its COMMIT markers sent again, and they end the next transaction's records before its commit.
# Share groups too: an acknowledged write of __share_group_state lost takes acceptances back (the
# records are delivered again: share-redelivered), and a start offset kept past records that were
# lost and whose offsets were written again with other records skips those (share-lost).
DATA_LOSS_ANOMALIES = frozenset({"lost", "divergent", "duplicate", "reorder", "nonmonotonic-poll", "commit-regress",
                                 "aborted-read", "partial-txn", "uncommitted-read", "share-redelivered",
                                 "share-lost"})


# How each power-loss variant configures the brokers: the name's suffix, the settings, the words.
POWER_LOSS_FLUSH = {
    "": ({}, "broker defaults: acks=1/all answered once fsynced (log.flush.on.ack)"),
    "-fsync": ({"log.flush.interval.messages": 1}, "with flush.messages=1 (an fsync per append)"),
    "-page-cache": ({"log.flush.on.ack": False},
                    "with log.flush.on.ack=false: acknowledged from the page cache, as Kafka does by default"),
}


def _power_loss_nemesis(kind: str, flush: str) -> type[PowerLoss]:
    whom = LEADER if kind == "leader" else "every broker at once"
    config, words = POWER_LOSS_FLUSH[flush]
    unsynced = config.get("log.flush.on.ack") is False
    attributes = {
        "name": f"power-loss-{kind}{flush}", "victim_kind": kind, "broker_config": config,
        "acknowledges_unsynced": unsynced,
        "description": f"power loss of {whom}: SIGKILL and every write not fsynced lost (lazyfs), {words}"}
    if kind == "all" and unsynced:
        # Kafka acknowledges acks=all once the ISR has the records in memory; it does not fsync
        # (flush.messages defaults to Long.MAX_VALUE): losing power on every replica at once loses
        # them, and the offsets they had are written again with other records, which readers see
        # as two values at one offset, offsets going back, duplicates and reordering of what they
        # had read before, and committed offsets beyond the new log end.
        attributes["expected_anomalies"] = DATA_LOSS_ANOMALIES
    suffix = {"": "", "-fsync": "Fsync", "-page-cache": "PageCache"}[flush]
    return type(f"PowerLoss{kind.title()}{suffix}", (PowerLoss,), attributes)


def _process_nemesis(kind: str, sig: int) -> type[ProcessNemesis]:
    verb = "kill" if sig == signal.SIGKILL else "pause"
    what = {"leader": LEADER, "controller": "the controller",
            "coordinator": "the group's coordinator"}[kind]
    return type(f"{verb.title()}{kind.title()}", (ProcessNemesis,), {
        "name": f"{verb}-{kind}", "sig": sig, "victim_kind": kind,
        "description": f"{signal.Signals(sig).name} of {what}; "
                       + ("restarted at heal" if sig == signal.SIGKILL else "SIGCONT at heal")})


NEMESES: dict[str, type[Nemesis]] = {n.name: n for n in [
    Nemesis, LeaderFromZooKeeper, CoordinatorFromZooKeeper, LeaderFromFollowers, LeaderFromClients, ZooKeeperMinority, ZooKeeperMajority,
    RandomHalves, Bridge, PacketLoss, Delay,
    *(_process_nemesis(kind, sig) for sig in (signal.SIGKILL, signal.SIGSTOP)
      for kind in ("leader", "controller", "coordinator")),
    *(_power_loss_nemesis(kind, flush) for kind in ("leader", "all") for flush in POWER_LOSS_FLUSH),
]}

# The CI form, (nemesis, workload): the leader cut from ZooKeeper and a crash under the queue,
# packet loss under transactions.
QUICK = [("partition-leader-zk", "queue"), ("kill-leader", "queue"), ("loss", "txn"), ("kill-leader", "share")]
