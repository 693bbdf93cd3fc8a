"""This broker's replicas: leader or follower of each partition, as ZooKeeper's partition states say.

The cluster's PartitionLeadership (broker/leadership.py): the broker's data path asks it whether
this broker leads a partition and tells it about appends and followers' fetches.

As Kafka's ReplicaManager and Partition, driven by ZkMetadata's watches instead of LeaderAndIsr
requests:
- a partition whose state names this broker leader (with a new leader epoch) becomes a leader:
  the epoch starts at the log end offset, followers' fetch states are reset, the high watermark
  stays where it was and advances to the smallest log end offset of the ISR as followers fetch;
- a partition led by another broker becomes a follower: the fetcher of that leader truncates it
  to the leader's epoch boundary (OffsetForLeaderEpoch) and then copies batches (replica_fetcher.py);
- the leader tracks each follower's fetch offset (its log end offset) and last caught-up time,
  shrinks the ISR when a follower has not caught up for `replica.lag.time.max.ms`, expands it
  when a follower reaches the high watermark (and the current epoch's start), writing the ISR to
  ZooKeeper conditionally on the state znode's version, as Kafka's ZooKeeper-mode leaders do;
- a broker reassigned away from a partition (AlterPartitionReassignments) stops fetching or
  leading it and deletes its log, as Kafka's StopReplica with delete=true;
- while the ZooKeeper connection is down (kazoo's SUSPENDED) the broker leads nothing
  (`fence`): the controller may already have given its partitions to another broker, and with
  no LeaderAndIsr requests this broker would learn it only after reconnecting, serving stale
  reads (and acting as a stale group coordinator) meanwhile. The session expires on the server
  after zookeeper.session.timeout.ms of silence; kazoo notices the silence after two thirds of
  it, so stepping down then comes first. Back on ZooKeeper, the states are read again and
  leaderships resumed from them (`unfence`), as Curator's leader latch does on SUSPENDED;
- produce requests with acks=all wait (`await_replication`) until the high watermark passes
  their records: then NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
  `min.insync.replicas` meanwhile; REQUEST_TIMED_OUT after the request's timeout;
  NOT_LEADER_OR_FOLLOWER when leadership moves away first.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field, replace

from kafka_wire.errors import ErrorCode

from .controller import restarted_leader, update_partition
from .replica_fetcher import ReplicaFetcherManager
from .zk_metadata import NO_LEADER

logger = logging.getLogger("kafka_wire.cluster.replicas")


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


async def _answer(error: ErrorCode) -> ErrorCode:
    return error


@dataclass
class FollowerState:
    """What the leader knows of one follower (Kafka's Replica state)."""

    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_log_end_offset: int = -1


@dataclass
class HostedPartition:
    """A partition with a replica on this broker."""

    topic: str
    partition: int
    is_leader: bool = False
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    leader_epoch_start_offset: int = 0
    followers: dict[int, FollowerState] = field(default_factory=dict)
    # acks=all produce requests: (offset the high watermark must reach, future of the error code).
    waiters: list[tuple[int, asyncio.Future]] = field(default_factory=list)


class ReplicaManager:
    """Leads and follows partitions; advances high watermarks; keeps ISRs in ZooKeeper."""

    waits_for_replicas = True

    def __init__(self, broker) -> None:
        self.broker = broker
        self.metadata = broker.metadata
        self.node_id = broker.node_id
        self.partitions: dict[tuple[str, int], HostedPartition] = {}
        self.fetchers = ReplicaFetcherManager(broker)
        self.lag_time_max_ms = int(broker.config["replica.lag.time.max.ms"])
        self._isr_task: asyncio.Task | None = None
        self.started = False
        self.fetching = True
        self.fenced = False  # cut from ZooKeeper: lead nothing (fence/unfence)

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        self.started = True
        live = set(self.metadata.live_brokers()) | {self.node_id}
        owns = self.broker.owns  # with several workers, each leads and follows the partitions it owns
        for topic, partition, _ in list(self.metadata.partitions()):
            if not owns(topic, partition):
                continue
            state = self.metadata.leader_and_isr(topic, partition)
            if state is not None and state.leader == self.node_id:
                update_partition(self.metadata, topic, partition, restarted_leader(self.node_id, live))
        self.metadata.observers.append(self)
        for topic, partition, _ in list(self.metadata.partitions()):
            self.partition_changed(topic, partition)
        interval = max(self.lag_time_max_ms // 2, 50)
        self._isr_task = asyncio.get_running_loop().create_task(self._shrink_isr_periodically(interval))

    async def stop_fetching(self) -> None:
        """Controlled shutdown: no more fetching, so no leader takes this broker back into an ISR."""
        self.fetching = False
        await self.fetchers.stop()

    async def stop(self) -> None:
        self.started = False
        if self in self.metadata.observers:
            self.metadata.observers.remove(self)
        if self._isr_task is not None:
            self._isr_task.cancel()
        await self.fetchers.stop()
        for hosted in self.partitions.values():
            self._fail_waiters(hosted, ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def fence(self) -> None:
        """The ZooKeeper connection is down: step down from every partition this broker leads,
        without touching ZooKeeper (it cannot), until unfence()."""
        if self.fenced:
            return
        self.fenced = True
        stepped_down = []
        for hosted in self.partitions.values():
            if hosted.is_leader:
                hosted.is_leader = False
                stepped_down.append(f"{hosted.topic}-{hosted.partition}")
                self._fail_waiters(hosted, ErrorCode.NOT_LEADER_OR_FOLLOWER)
                self.broker.leadership_changed(hosted.topic, hosted.partition, False)
                self.broker.waiters.notify(hosted.topic, hosted.partition)
        logger.warning("ZooKeeper connection lost: leading nothing until it is back (stepped down from %d "
                    "partitions: %s)", len(stepped_down), ", ".join(stepped_down[:20]))

    def unfence(self) -> None:
        """Back on ZooKeeper: read every hosted partition's state afresh (the cache may be stale
        after a lost session), then lead what the states say. Stays fenced when a read fails."""
        if not self.fenced:
            return
        try:
            for topic, partition in list(self.partitions):
                self.metadata.read_partition_state(topic, partition)
        except Exception as error:  # noqa: BLE001 - ZooKeeper gone again: the next reconnect retries
            logger.warning("ZooKeeper is back but the partition states could not be read (%s); still fenced", error)
            return
        self.fenced = False
        logger.info("ZooKeeper connection back: leading what the partition states say")
        for topic, partition in list(self.partitions):
            self.partition_changed(topic, partition)

    # -- questions the data path asks ------------------------------------------------------------

    def is_leader(self, topic: str, partition: int) -> bool:
        hosted = self.partitions.get((topic, partition))
        return hosted is not None and hosted.is_leader

    def high_watermark_behind_epoch_start(self, topic: str, partition: int) -> bool:
        """Whether this leader's high watermark is still below the offset its leader epoch began at
        (it took over and the ISR has not fetched from it yet)."""
        hosted = self.partitions.get((topic, partition))
        plog = self.broker.logs.get(topic, partition)
        return (hosted is not None and hosted.is_leader and plog is not None
                and plog.high_watermark < hosted.leader_epoch_start_offset)

    def leadership_error(self, topic: str, partition: int) -> ErrorCode:
        """NONE when this broker leads the partition; what to tell a client otherwise."""
        meta = self.metadata.topic(topic)
        if meta is None or not 0 <= partition < meta.partitions:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        hosted = self.partitions.get((topic, partition))
        if hosted is not None and hosted.is_leader:
            return ErrorCode.NONE
        state = self.metadata.leader_and_isr(topic, partition)
        if state is None or state.leader == NO_LEADER:
            return ErrorCode.LEADER_NOT_AVAILABLE if state is not None else ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.NOT_LEADER_OR_FOLLOWER

    # -- metadata changes ------------------------------------------------------------------------

    def partition_changed(self, topic: str, partition: int) -> None:
        if not self.started or not self.broker.owns(topic, partition):
            return
        replicas = self.metadata.replicas(topic, partition)
        key = (topic, partition)
        if self.node_id not in replicas:
            hosted = self.partitions.pop(key, None)
            if hosted is not None:
                self._stop_hosting(hosted)
            if replicas and self.broker.logs.get(topic, partition) is not None:
                # Reassigned away (Kafka's StopReplica with delete): the replica's log goes.
                logger.info("%s-%d: no longer a replica (replicas %s); deleting the local log", topic, partition,
                         replicas)
                self.broker.logs.delete_partition(topic, partition)
            return
        meta = self.metadata.topic(topic)
        plog = self.broker.logs.get_or_create(topic, partition, self.broker.topic_config(meta)) \
            if self.broker.logs.get(topic, partition) is None else self.broker.logs.get(topic, partition)
        state = self.metadata.leader_and_isr(topic, partition)
        hosted = self.partitions.setdefault(key, HostedPartition(topic, partition))
        if state is None:
            return
        if state.leader == self.node_id:
            if self.fenced:
                return  # unfence() takes the leadership up when ZooKeeper is reachable again
            if not hosted.is_leader or hosted.leader_epoch != state.leader_epoch:
                self._make_leader(hosted, plog, state)
            else:
                # Our own ISR write, or the controller's: the high watermark may move now.
                self._maybe_advance_high_watermark(hosted, plog)
                self._complete_waiters(hosted, plog)
        elif hosted.is_leader or hosted.leader_epoch != state.leader_epoch or hosted.leader_id != state.leader:
            self._make_follower(hosted, plog, state)

    def topic_removed(self, meta) -> None:
        for partition in range(meta.partitions):
            hosted = self.partitions.pop((meta.name, partition), None)
            if hosted is not None:
                self._stop_hosting(hosted)
            self.broker.logs.delete_partition(meta.name, partition)
        # Kafka's onPartitionsDeleted runs on every broker: each group coordinator drops the
        # committed offsets of the deleted partitions for the groups it hosts.
        self.broker.groups.on_partitions_deleted([(meta.name, partition) for partition in range(meta.partitions)])

    def topic_configs_changed(self, topic: str) -> None:
        meta = self.metadata.topic(topic)
        if meta is None:
            return
        effective = self.broker.topic_config(meta)
        for partition in range(meta.partitions):
            plog = self.broker.logs.get(topic, partition)
            if plog is not None:
                plog.update_config(effective)

    def _stop_hosting(self, hosted: HostedPartition) -> None:
        self.fetchers.remove(hosted.topic, hosted.partition)
        self._fail_waiters(hosted, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if hosted.is_leader:
            hosted.is_leader = False
            self.broker.leadership_changed(hosted.topic, hosted.partition, False)

    def _make_leader(self, hosted: HostedPartition, plog, state) -> None:
        """Kafka's Partition.makeLeader."""
        was_leader = hosted.is_leader
        self.fetchers.remove(hosted.topic, hosted.partition)
        hosted.is_leader = True
        hosted.leader_id = self.node_id
        hosted.leader_epoch = state.leader_epoch
        latest = plog.latest_epoch()
        if latest is None or latest < state.leader_epoch:
            plog.leader_epoch_cache.assign(state.leader_epoch, plog.log_end_offset)
        hosted.leader_epoch_start_offset = plog.log_end_offset
        now = _now_ms()
        replicas = self.metadata.replicas(hosted.topic, hosted.partition)
        # ISR members count as caught up now: they get replica.lag.time.max.ms to fetch from us.
        hosted.followers = {r: FollowerState(last_caught_up_ms=now if r in state.isr else 0)
                            for r in replicas if r != self.node_id}
        logger.info("%s-%d: leader in epoch %d from offset %d (isr %s, high watermark %d)", hosted.topic,
                 hosted.partition, state.leader_epoch, plog.log_end_offset, state.isr, plog.high_watermark)
        self._maybe_advance_high_watermark(hosted, plog)
        self._complete_waiters(hosted, plog)
        if not was_leader:
            self.broker.leadership_changed(hosted.topic, hosted.partition, True)

    def _make_follower(self, hosted: HostedPartition, plog, state) -> None:
        """Kafka's Partition.makeFollower: stop leading, fetch from the new leader."""
        was_leader = hosted.is_leader
        hosted.is_leader = False
        hosted.leader_id = state.leader
        hosted.leader_epoch = state.leader_epoch
        hosted.followers = {}
        self._fail_waiters(hosted, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if was_leader:
            self.broker.leadership_changed(hosted.topic, hosted.partition, False)
        # Consumers long-polling here hear NOT_LEADER_OR_FOLLOWER now rather than at their timeout.
        self.broker.waiters.notify(hosted.topic, hosted.partition)
        if state.leader == NO_LEADER:
            self.fetchers.remove(hosted.topic, hosted.partition)
            logger.info("%s-%d: no leader (epoch %d)", hosted.topic, hosted.partition, state.leader_epoch)
        else:
            logger.info("%s-%d: follower of %d in epoch %d from offset %d", hosted.topic, hosted.partition,
                     state.leader, state.leader_epoch, plog.log_end_offset)
            if self.fetching:
                self.fetchers.add(hosted.topic, hosted.partition, state.leader, state.leader_epoch)

    # -- the leader's side of replication ----------------------------------------------------------

    def leader_appended(self, topic: str, partition: int, plog) -> None:
        """The leader appended: the high watermark is where the ISR is (just us: the new end)."""
        hosted = self.partitions.get((topic, partition))
        if hosted is None:
            return
        self._maybe_advance_high_watermark(hosted, plog)

    def follower_fetched(self, topic: str, partition: int, replica_id: int, fetch_offset: int) -> None:
        """A follower fetched from `fetch_offset`: that is its log end offset (Kafka's
        Partition.updateFollowerFetchState)."""
        hosted = self.partitions.get((topic, partition))
        plog = self.broker.logs.get(topic, partition)
        if hosted is None or not hosted.is_leader or plog is None:
            return
        follower = hosted.followers.setdefault(replica_id, FollowerState())
        now = _now_ms()
        leader_end = plog.log_end_offset
        if fetch_offset >= leader_end:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, now)
        elif fetch_offset >= follower.last_fetch_leader_log_end_offset:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, follower.last_fetch_ms)
        follower.last_fetch_leader_log_end_offset = leader_end
        follower.last_fetch_ms = now
        follower.log_end_offset = fetch_offset
        self._maybe_expand_isr(hosted, plog, replica_id, follower)
        self._maybe_advance_high_watermark(hosted, plog)

    def _maybe_advance_high_watermark(self, hosted: HostedPartition, plog) -> None:
        state = self.metadata.leader_and_isr(hosted.topic, hosted.partition)
        if state is None or not hosted.is_leader:
            return
        new_hw = plog.log_end_offset
        for replica in state.isr:
            if replica == self.node_id:
                continue
            follower = hosted.followers.get(replica)
            new_hw = min(new_hw, follower.log_end_offset if follower is not None else -1)
        if new_hw > plog.high_watermark:
            plog.high_watermark = new_hw
            self._complete_waiters(hosted, plog)
            # Consumers waiting for committed data.
            self.broker.waiters.notify(hosted.topic, hosted.partition)

    def _maybe_expand_isr(self, hosted: HostedPartition, plog, replica_id: int, follower: FollowerState) -> None:
        state = self.metadata.leader_and_isr(hosted.topic, hosted.partition)
        if state is None or replica_id in state.isr or state.leader_epoch != hosted.leader_epoch:
            return
        if replica_id not in self.metadata.replicas(hosted.topic, hosted.partition):
            return
        if follower.log_end_offset >= plog.high_watermark and follower.log_end_offset >= hosted.leader_epoch_start_offset:
            self._write_isr(hosted, state, state.isr + [replica_id], "caught up")

    async def _shrink_isr_periodically(self, interval_ms: int) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                self.shrink_isrs()
            except Exception:
                logger.exception("ISR shrink check failed")

    def shrink_isrs(self) -> None:
        """Kafka's Partition.maybeShrinkIsr for every partition this broker leads."""
        now = _now_ms()
        for hosted in list(self.partitions.values()):
            if not hosted.is_leader:
                continue
            state = self.metadata.leader_and_isr(hosted.topic, hosted.partition)
            if state is None or state.leader_epoch != hosted.leader_epoch:
                continue
            lagging = [r for r in state.isr if r != self.node_id
                       and now - hosted.followers.setdefault(r, FollowerState(last_caught_up_ms=now)).last_caught_up_ms
                       > self.lag_time_max_ms]
            if lagging:
                self._write_isr(hosted, state, [r for r in state.isr if r not in lagging],
                                f"{lagging} not caught up for {self.lag_time_max_ms} ms")

    def _write_isr(self, hosted: HostedPartition, state, isr: list[int], why: str) -> None:
        """The leader's conditional ISR update (Kafka's ZooKeeper-mode Partition.updateIsr)."""
        written = self.metadata.update_partition_state(hosted.topic, hosted.partition, replace(state, isr=isr))
        if written is None:
            # Someone (the controller) changed the state first: its watch brings the new one.
            self.metadata.read_partition_state(hosted.topic, hosted.partition)
            return
        logger.info("%s-%d: ISR %s -> %s (%s)", hosted.topic, hosted.partition, state.isr, isr, why)
        plog = self.broker.logs.get(hosted.topic, hosted.partition)
        if plog is not None:
            self._maybe_advance_high_watermark(hosted, plog)
            self._complete_waiters(hosted, plog)

    # -- acks=all --------------------------------------------------------------------------------

    def _min_insync(self, plog) -> int:
        return int(plog.config["min.insync.replicas"])

    def _isr_size(self, hosted: HostedPartition) -> int:
        state = self.metadata.leader_and_isr(hosted.topic, hosted.partition)
        return len(state.isr) if state is not None else 0

    def _complete_waiters(self, hosted: HostedPartition, plog) -> None:
        if not hosted.waiters:
            return
        high_watermark = plog.high_watermark
        remaining = []
        for required, future in hosted.waiters:
            if future.done():
                continue
            if high_watermark >= required:
                enough = self._isr_size(hosted) >= self._min_insync(plog)
                future.set_result(ErrorCode.NONE if enough else ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
            else:
                remaining.append((required, future))
        hosted.waiters = remaining

    def _fail_waiters(self, hosted: HostedPartition, error: ErrorCode) -> None:
        for _, future in hosted.waiters:
            if not future.done():
                future.set_result(error)
        hosted.waiters = []

    async def await_replication(self, partitions: list[tuple[str, int]], timeout_ms: int
                                ) -> dict[tuple[str, int], ErrorCode]:
        """acks=all: wait until the ISR has everything this leader appended to each partition so
        far (the targets are taken now, before any wait)."""
        waits = []
        for topic, partition in partitions:
            plog = self.broker.logs.get(topic, partition)
            if plog is None:
                waits.append(_answer(ErrorCode.NOT_LEADER_OR_FOLLOWER))
            else:
                waits.append(self.wait_for_replication(topic, partition, plog.log_end_offset, timeout_ms))
        return dict(zip(partitions, await asyncio.gather(*waits)))

    async def wait_for_replication(self, topic: str, partition: int, required_offset: int,
                                   timeout_ms: int) -> ErrorCode:
        """Wait until the high watermark reaches `required_offset` (Kafka's DelayedProduce)."""
        hosted = self.partitions.get((topic, partition))
        plog = self.broker.logs.get(topic, partition)
        if hosted is None or not hosted.is_leader or plog is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if plog.high_watermark >= required_offset:
            enough = self._isr_size(hosted) >= self._min_insync(plog)
            return ErrorCode.NONE if enough else ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        future = asyncio.get_running_loop().create_future()
        hosted.waiters.append((required_offset, future))
        try:
            return await asyncio.wait_for(future, max(timeout_ms, 0) / 1000)
        except asyncio.TimeoutError:
            return ErrorCode.REQUEST_TIMED_OUT
