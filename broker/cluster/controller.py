"""The controller: one broker, elected through ZooKeeper, that decides partition leaders.

Election is Kafka's: the first broker to create the ephemeral /controller znode is the
controller; /controller_epoch counts controllers, and each controller write is a ZooKeeper
transaction that checks the epoch's version, so a deposed controller changes nothing. The
controller watches /brokers/ids (through ZkMetadata) and:
- when a broker dies (or re-registers: its znode's czxid is its epoch), elects new leaders for the
  partitions it led (the first replica, in assignment order, that is alive and in the ISR; with
  `unclean.leader.election.enable=false`, the default, none when no ISR member is alive: the
  partition goes offline, leader -1) and removes it from the ISRs it was in;
- when a broker starts, gives offline partitions whose ISR it is in their leader back;
- every `leader.imbalance.check.interval.seconds` moves leadership back to preferred replicas
  (the first of each assignment) when `auto.leader.rebalance.enable` and a broker's share of
  partitions not led by it exceeds `leader.imbalance.per.broker.percentage`.
It also moves partitions (AlterPartitionReassignments, KIP-455; decisions in
partition_reassignment.py): the ongoing reassignment lives in the topic znode (replicas = target
plus the replicas leaving, with adding_replicas and removing_replicas, as Kafka's ZooKeeper-mode
controller keeps it), so a new controller resumes it. The controller completes a reassignment
when a partition state change shows every target replica in the ISR: one transaction writes
replicas = target into the topic znode and the ISR without the leaving replicas (and a new
leader, if the leader leaves) into the state znode.
Every change bumps the leader epoch. Brokers learn of it by watching the state znodes; there is
no LeaderAndIsr request. Controlled shutdown (`controlled_shutdown_moves`) applies the same rules
on behalf of a broker that is about to stop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import replace

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from kafka_wire.errors import ErrorCode

from ..leader_election import Outcome, elect_leaders, election_outcome
from .partition_reassignment import (Reassignment, ReassignmentRefused, choose_leader, maybe_complete, revert,
                                     start, validate_replication_factor_unchanged, validate_target)
from .zk_metadata import CONTROLLER_EPOCH_PATH, CONTROLLER_PATH, NO_LEADER, LeaderAndIsr, ZkMetadata

logger = logging.getLogger("kafka_wire.cluster.controller")

# A decision: the new state (leader, ISR; the epoch is bumped by update_partition) or None for no change.
Decision = Callable[[LeaderAndIsr, list[int]], tuple[int, list[int]] | None]
MAX_UPDATE_ATTEMPTS = 10


def update_partition(metadata: ZkMetadata, topic: str, partition: int, decide: Decision, *,
                     controller_epoch: int | None = None, controller_epoch_version: int | None = None
                     ) -> LeaderAndIsr | None:
    """Apply `decide` to the partition's current state with a conditional write, re-reading and
    deciding again when someone else changed it first. The written state, or None."""
    state = metadata.leader_and_isr(topic, partition) or metadata.read_partition_state(topic, partition)
    for _ in range(MAX_UPDATE_ATTEMPTS):
        if state is None:
            return None
        decided = decide(state, metadata.replicas(topic, partition))
        if decided is None:
            return None
        leader, isr = decided
        new = replace(state, leader=leader, leader_epoch=state.leader_epoch + 1, isr=isr,
                      controller_epoch=state.controller_epoch if controller_epoch is None else controller_epoch)
        written = metadata.update_partition_state(topic, partition, new,
                                                  controller_epoch_version=controller_epoch_version)
        if written is not None:
            logger.info("%s-%d: leader %d, leader epoch %d, isr %s (was leader %d, epoch %d, isr %s)", topic,
                     partition, written.leader, written.leader_epoch, written.isr, state.leader,
                     state.leader_epoch, state.isr)
            return written
        state = metadata.read_partition_state(topic, partition)
    logger.warning("%s-%d: gave up updating the partition state after %d conflicting writes", topic, partition,
                MAX_UPDATE_ATTEMPTS)
    return None


def elect_without(dead: set[int], live: set[int], unclean: bool) -> Decision:
    """Kafka's OfflinePartitionLeaderElection plus removal of dead replicas from the ISR."""
    def decide(state: LeaderAndIsr, replicas: list[int]):
        remaining_isr = [r for r in state.isr if r not in dead]
        if state.leader == NO_LEADER or state.leader in dead:
            candidates = [r for r in replicas if r in state.isr and r in live and r not in dead]
            if candidates:
                leader = candidates[0]
                return leader, [r for r in state.isr if r in live and r not in dead]
            if unclean:
                alive = [r for r in replicas if r in live and r not in dead]
                if alive:
                    logger.warning("unclean leader election: %d becomes leader outside the ISR %s", alive[0], state.isr)
                    return alive[0], [alive[0]]
            if state.leader == NO_LEADER:
                return None
            # Offline: the ISR keeps its last member, who holds every committed record.
            return NO_LEADER, remaining_isr or [state.leader]
        if len(remaining_isr) != len(state.isr) and state.leader != NO_LEADER:
            return state.leader, remaining_isr or [state.leader]
        return None
    return decide


def elect_preferred(live: set[int]) -> Decision:
    def decide(state: LeaderAndIsr, replicas: list[int]):
        preferred = replicas[0] if replicas else NO_LEADER
        if state.leader == preferred or preferred not in live or preferred not in state.isr:
            return None
        return preferred, state.isr
    return decide


def restarted_leader(node_id: int, live: set[int]) -> Decision:
    """A broker that starts and finds itself leader (it died and came back before the controller
    noticed) must not lead with a log that recovery may have shortened: another live ISR member
    takes over, as the controller would elect; if none, it leads again in a new epoch."""
    others = live - {node_id}
    elect = elect_without({node_id}, others, unclean=False)

    def decide(state: LeaderAndIsr, replicas: list[int]):
        if state.leader != node_id:
            return None
        decided = elect(state, replicas)
        if decided is None or decided[0] == NO_LEADER:
            return node_id, state.isr
        return decided
    return decide


def controlled_shutdown_moves(metadata: ZkMetadata, node_id: int) -> list[tuple[str, int]]:
    """What Kafka's controller does for a ControlledShutdown request: move leadership of the
    partitions `node_id` leads to another live ISR member and take it out of the ISRs it follows
    in. Partitions where it is the only ISR member stay (they go offline when it stops).
    Returns the partitions still led by `node_id`."""
    live = set(metadata.live_brokers()) - {node_id}
    remaining = []

    def decide(state: LeaderAndIsr, replicas: list[int]):
        if state.leader == node_id:
            candidates = [r for r in replicas if r in state.isr and r in live]
            if not candidates:
                return None
            return candidates[0], [r for r in state.isr if r != node_id]
        if node_id in state.isr and state.leader != NO_LEADER and len(state.isr) > 1:
            return state.leader, [r for r in state.isr if r != node_id]
        return None

    for topic, partition, replicas in list(metadata.partitions()):
        if node_id not in replicas:
            continue
        update_partition(metadata, topic, partition, decide)
        state = metadata.leader_and_isr(topic, partition)
        if state is not None and state.leader == node_id:
            remaining.append((topic, partition))
    return remaining


class Controller:
    """Runs on every broker; acts while this broker holds /controller."""

    def __init__(self, zk, metadata: ZkMetadata, node_id: int, config) -> None:
        self.zk = zk
        self.metadata = metadata
        self.node_id = node_id
        self.config = config
        self.active = False
        self.epoch = 0
        self.epoch_zk_version = -1
        # Broker id -> registration czxid, as this controller last handled them.
        self.broker_epochs: dict[int, int] = {}
        self._rebalance_task: asyncio.Task | None = None
        self._stopped = False
        self._completion_checks: set[tuple[str, int]] = set()

    def start(self) -> None:
        self.metadata.observers.append(self)
        self._try_to_become_controller()

    def stop(self) -> None:
        self._stopped = True
        self._resign()
        if self in self.metadata.observers:
            self.metadata.observers.remove(self)

    # -- election ------------------------------------------------------------------------------

    def controller_changed(self, controller_id: int) -> None:
        if controller_id == NO_LEADER:
            self._try_to_become_controller()
        elif controller_id != self.node_id and self.active:
            logger.info("controller moved to broker %d; resigning", controller_id)
            self._resign()

    def session_lost(self) -> None:
        if self.active:
            logger.info("ZooKeeper session lost; resigning as controller")
            self._resign()

    def session_restored(self) -> None:
        self._try_to_become_controller()

    def _try_to_become_controller(self) -> None:
        if self._stopped or self.active:
            return
        payload = json.dumps({"version": 1, "brokerid": self.node_id,
                              "timestamp": str(int(time.time() * 1000))}).encode()
        try:
            self.zk.create(CONTROLLER_PATH, payload, ephemeral=True)
        except NodeExistsError:
            return
        except Exception:
            logger.exception("controller election failed")
            return
        self._increment_epoch()
        self.active = True
        logger.info("broker %d is the controller (controller epoch %d)", self.node_id, self.epoch)
        self.broker_epochs = {b: info.epoch for b, info in self.metadata.brokers.items()}
        self._elect_offline_leaders()
        # Reassignments the previous controller left ongoing: resume them.
        for topic, partition, _ in list(self.metadata.ongoing_reassignments()):
            self._maybe_complete_reassignment(topic, partition)
        if self.config["auto.leader.rebalance.enable"]:
            self._rebalance_task = asyncio.get_running_loop().create_task(self._rebalance_periodically())

    def _increment_epoch(self) -> None:
        while True:
            try:
                data, stat = self.zk.get(CONTROLLER_EPOCH_PATH)
            except NoNodeError:
                try:
                    stat = self.zk.create(CONTROLLER_EPOCH_PATH, b"1")
                except NodeExistsError:
                    continue
                self.epoch, self.epoch_zk_version = 1, 0
                return
            try:
                stat = self.zk.set(CONTROLLER_EPOCH_PATH, str(int(data) + 1).encode(), version=stat.version)
            except BadVersionError:
                continue
            self.epoch, self.epoch_zk_version = int(data) + 1, stat.version
            return

    def _resign(self) -> None:
        self.active = False
        if self._rebalance_task is not None:
            self._rebalance_task.cancel()
            self._rebalance_task = None

    # -- broker changes --------------------------------------------------------------------------

    def brokers_changed(self, previous: dict, current: dict) -> None:
        if not self.active:
            return
        dead = {b for b, epoch in self.broker_epochs.items() if b not in current or current[b].epoch != epoch}
        started = {b for b, info in current.items() if self.broker_epochs.get(b) != info.epoch}
        self.broker_epochs = {b: info.epoch for b, info in current.items()}
        if dead:
            logger.info("brokers %s failed (or re-registered)", sorted(dead))
            self._on_brokers_failure(dead, set(current) - dead)
        if started:
            logger.info("brokers %s started", sorted(started))
            self._on_brokers_startup(set(current))
        for topic, partition, _ in list(self.metadata.ongoing_reassignments()):
            self._maybe_complete_reassignment(topic, partition)

    def _update(self, topic: str, partition: int, decide: Decision) -> None:
        if not self.active:
            return
        written = update_partition(self.metadata, topic, partition, decide, controller_epoch=self.epoch,
                                   controller_epoch_version=self.epoch_zk_version)
        if written is None and self.active and not self._still_controller():
            self._resign()

    def _still_controller(self) -> bool:
        try:
            _, stat = self.zk.get(CONTROLLER_EPOCH_PATH)
        except NoNodeError:
            return False
        return stat.version == self.epoch_zk_version

    def _unclean(self, topic: str) -> bool:
        meta = self.metadata.topic(topic)
        if meta is not None and "unclean.leader.election.enable" in meta.configs:
            return bool(meta.configs["unclean.leader.election.enable"])
        return bool(self.config["unclean.leader.election.enable"])

    def _on_brokers_failure(self, dead: set[int], live: set[int]) -> None:
        for topic, partition, replicas in list(self.metadata.partitions()):
            if dead.intersection(replicas):
                self._update(topic, partition, elect_without(dead, live, self._unclean(topic)))

    def _on_brokers_startup(self, live: set[int]) -> None:
        for topic, partition, replicas in list(self.metadata.partitions()):
            state = self.metadata.leader_and_isr(topic, partition)
            if state is not None and state.leader == NO_LEADER:
                self._update(topic, partition, elect_without(set(), live, self._unclean(topic)))

    def _elect_offline_leaders(self) -> None:
        """On becoming controller: partitions whose leader is not alive get one."""
        live = set(self.metadata.brokers)
        for topic, partition, replicas in list(self.metadata.partitions()):
            state = self.metadata.leader_and_isr(topic, partition)
            if state is None:
                continue
            dead = {r for r in replicas if r not in live}
            if state.leader not in live or dead.intersection(state.isr):
                self._update(topic, partition, elect_without(dead, live, self._unclean(topic)))

    # -- preferred leaders -----------------------------------------------------------------------

    def elect_leaders(self, election_type: int, requested):
        """An admin's ElectLeaders (broker/leader_election.py decides); each election is written
        with the controller epoch check, deciding again on the state it finds at write time."""
        live = set(self.metadata.brokers)

        def elect(topic: str, partition: int, planned: Outcome) -> Outcome:
            decided: list[Outcome] = []

            def decide(state: LeaderAndIsr, replicas: list[int]):
                outcome = election_outcome(election_type, state.leader, state.isr, replicas, live)
                decided.append(outcome)
                return (outcome.leader, outcome.isr) if outcome.error == ErrorCode.NONE else None

            self._update(topic, partition, decide)
            if not self.active:
                return Outcome(ErrorCode.NOT_CONTROLLER)
            if not decided:
                return Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               message=f"No such partition as {topic}-{partition}")
            if decided[-1].error != ErrorCode.NONE:
                return decided[-1]  # the state changed since `planned` was decided
            state = self.metadata.leader_and_isr(topic, partition)
            if state is None or state.leader != decided[-1].leader:
                return Outcome(ErrorCode.UNKNOWN_SERVER_ERROR, message="the election was not written")
            return Outcome(ErrorCode.NONE)

        return elect_leaders(self.metadata, election_type, requested, live, elect)

    async def _rebalance_periodically(self) -> None:
        interval = float(self.config["leader.imbalance.check.interval.seconds"])
        while self.active:
            await asyncio.sleep(max(interval, 0.1))
            try:
                self.rebalance_preferred_leaders()
            except Exception:
                logger.exception("preferred leader election failed")

    def rebalance_preferred_leaders(self) -> None:
        """Kafka's checkAndTriggerAutoLeaderRebalance."""
        if not self.active:
            return
        live = set(self.metadata.brokers)
        threshold = float(self.config["leader.imbalance.per.broker.percentage"]) / 100
        by_preferred: dict[int, list[tuple[str, int]]] = {}
        for topic, partition, replicas in self.metadata.partitions():
            if replicas:
                by_preferred.setdefault(replicas[0], []).append((topic, partition))
        for broker, partitions in by_preferred.items():
            if broker not in live:
                continue
            imbalanced = [(t, p) for t, p in partitions
                          if (s := self.metadata.leader_and_isr(t, p)) is not None and s.leader != broker]
            if imbalanced and len(imbalanced) / len(partitions) > threshold:
                for topic, partition in imbalanced:
                    self._update(topic, partition, elect_preferred(live))

    # -- partition reassignment (KIP-455) --------------------------------------------------------

    def alter_partition_reassignments(self, requested: list[tuple[str, int, list[int] | None]],
                                      allow_replication_factor_change: bool
                                      ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        """AlterPartitionReassignments: start (or replace) each partition's move to its target
        replicas, or cancel it (target None). (error, message) per partition."""
        results = {}
        for topic, partition, target in requested:
            try:
                if not self.active:
                    raise ReassignmentRefused(ErrorCode.NOT_CONTROLLER, ErrorCode.NOT_CONTROLLER.message)
                self._alter_reassignment(topic, partition, target, allow_replication_factor_change)
                results[(topic, partition)] = (ErrorCode.NONE, None)
            except ReassignmentRefused as refused:
                logger.info("reassignment of %s-%d to %s refused: %s", topic, partition, target, refused.message)
                results[(topic, partition)] = (refused.error, refused.message)
        return results

    def _alter_reassignment(self, topic: str, partition: int, target: list[int] | None, allow_rf_change: bool) -> None:
        meta = self.metadata.topic(topic)
        if meta is None:
            raise ReassignmentRefused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}.")
        if not 0 <= partition < meta.partitions:
            raise ReassignmentRefused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                      f"Unable to find partition {topic}:{partition}.")
        live = set(self.metadata.live_brokers())
        if target is not None:
            validate_target(target, live)
        for _ in range(MAX_UPDATE_ATTEMPTS):
            current = self.metadata.reassignment(topic, partition)
            state = self.metadata.leader_and_isr(topic, partition)
            if state is None:
                raise ReassignmentRefused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                          f"Unable to find partition {topic}:{partition}.")
            if target is None:
                planned, new_state = self._cancelled(topic, partition, current, state, live)
            else:
                if not allow_rf_change:
                    validate_replication_factor_unchanged(current, target)
                planned = start(current, target)
                new_state = None
                completed = maybe_complete(planned, state.isr)
                if completed is not None:
                    planned, new_state = self._completed(completed, state, live)
                elif planned == current:
                    return  # already moving there
            if self.metadata.write_reassignment(topic, partition, planned, new_state,
                                                controller_epoch_version=self.epoch_zk_version):
                logger.info("%s-%d: %s reassignment to %s: replicas %s, adding %s, removing %s", topic, partition,
                         "cancelled" if target is None else "started", target, planned.replicas, planned.adding,
                         planned.removing)
                return
            if not self._still_controller():
                self._resign()
                raise ReassignmentRefused(ErrorCode.NOT_CONTROLLER, ErrorCode.NOT_CONTROLLER.message)
            self.metadata.refresh_topic(topic)
        raise ReassignmentRefused(ErrorCode.UNKNOWN_SERVER_ERROR, "conflicting partition updates; try again")

    def _cancelled(self, topic: str, partition: int, current: Reassignment, state: LeaderAndIsr, live: set[int]):
        if not current.in_progress:
            raise ReassignmentRefused(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                                      ErrorCode.NO_REASSIGNMENT_IN_PROGRESS.message)
        replicas, isr = revert(current, state.isr)
        if not isr:
            if not self._unclean(topic):
                raise ReassignmentRefused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                          f"Unable to revert partition assignment for {topic}:{partition} because "
                                          "it would require an unclean leader election.")
            alive = [r for r in replicas if r in live]
            isr = alive[:1]
        leader = choose_leader(state.leader, replicas, isr, live)
        if leader == state.leader and isr == state.isr:
            return Reassignment(replicas), None
        return Reassignment(replicas), replace(state, leader=leader, leader_epoch=state.leader_epoch + 1, isr=isr,
                                               controller_epoch=self.epoch)

    def _completed(self, completed: tuple[list[int], list[int]], state: LeaderAndIsr, live: set[int]):
        replicas, isr = completed
        leader = choose_leader(state.leader, replicas, isr, live)
        return Reassignment(replicas), replace(state, leader=leader, leader_epoch=state.leader_epoch + 1, isr=isr,
                                               controller_epoch=self.epoch)

    def partition_changed(self, topic: str, partition: int) -> None:
        """A state or assignment changed (an ISR grew, say): a reassignment may complete now. The
        check runs after the current callback, not inside the cache update that told us."""
        if not self.active or not self.metadata.reassignment(topic, partition).in_progress:
            return
        key = (topic, partition)
        if key in self._completion_checks:
            return
        self._completion_checks.add(key)
        try:
            asyncio.get_running_loop().call_soon(self._scheduled_completion_check, topic, partition)
        except RuntimeError:
            self._scheduled_completion_check(topic, partition)

    def _scheduled_completion_check(self, topic: str, partition: int) -> None:
        self._completion_checks.discard((topic, partition))
        try:
            self._maybe_complete_reassignment(topic, partition)
        except Exception:
            logger.exception("%s-%d: completing the reassignment failed", topic, partition)

    def _maybe_complete_reassignment(self, topic: str, partition: int) -> None:
        live = set(self.metadata.live_brokers())
        for _ in range(MAX_UPDATE_ATTEMPTS):
            if not self.active:
                return
            current = self.metadata.reassignment(topic, partition)
            state = self.metadata.leader_and_isr(topic, partition)
            if state is None or not current.in_progress:
                return
            completed = maybe_complete(current, state.isr)
            if completed is None:
                return
            planned, new_state = self._completed(completed, state, live)
            if new_state.leader == NO_LEADER:
                return  # no live target replica in the ISR to lead: wait
            if self.metadata.write_reassignment(topic, partition, planned, new_state,
                                                controller_epoch_version=self.epoch_zk_version):
                logger.info("%s-%d: reassignment completed: replicas %s, leader %d, leader epoch %d, isr %s", topic,
                         partition, planned.replicas, new_state.leader, new_state.leader_epoch, new_state.isr)
                return
            if not self._still_controller():
                self._resign()
                return
            self.metadata.refresh_topic(topic)
