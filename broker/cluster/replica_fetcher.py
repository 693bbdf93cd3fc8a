"""Followers copy their leaders' logs: one fetcher task per leader broker, as Kafka's ReplicaFetcherThread.

For each partition it follows, a fetcher first truncates the local log to where it agrees with
the leader's: OffsetForLeaderEpoch for the follower's latest epoch answers the leader's end
offset of that epoch (or of the largest epoch below it), and the follower truncates to the
smaller of that and its own end offset for the epoch (the log end offset). Then it fetches with
its replica id from its log end offset, appends the leader's batches as they are (offsets and
epochs kept), and takes the high watermark and log start offset the leader sends back. Its next
fetch offset tells the leader what it has; that is how the leader's high watermark moves. With
log.flush.on.ack (the default) the appended batches are synced (log/group_commit.py) before that
next fetch, so the leader counts only what is on this broker's disk.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from dataclasses import dataclass

from coordinator.timer import stop_task
from kafka_wire.errors import ErrorCode
from kafka_wire.framing import ClientConnection, CorrelationIdMismatch
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.records import LOG_OVERHEAD


logger = logging.getLogger("kafka_wire.cluster.fetcher")

FETCH_VERSION = 12
OFFSET_FOR_LEADER_EPOCH_VERSION = 4
LIST_OFFSETS_VERSION = 5
# Errors that mean "the leader moved or is not ready": wait for the metadata to say what's next.
_RETRY_LATER = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH,
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_ID,
                ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.KAFKA_STORAGE_ERROR}


class BrokerConnection:
    """An asyncio connection to another broker: one request at a time, our own codecs."""

    def __init__(self, host: str, port: int, client_id: str) -> None:
        self.host, self.port, self.client_id = host, port, client_id
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.framing = ClientConnection(client_id)

    async def connect(self, timeout: float) -> None:
        self.reader, self.writer = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), timeout)

    async def call(self, api_name: str, version: int, body, timeout: float):
        api = APIS_BY_NAME[api_name]
        self.writer.write(self.framing.request(api, version, body))
        await self.writer.drain()
        frames = self.framing.frames
        while (frame := frames.next_frame()) is None:
            frames.feed(await asyncio.wait_for(self.reader.readexactly(frames.bytes_needed), timeout))
        try:
            return self.framing.response(api, version, frame)
        except CorrelationIdMismatch as exc:  # the connection is out of step: reconnect
            raise ConnectionError(str(exc)) from None

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


@dataclass
class FollowedPartition:
    topic: str
    partition: int
    leader_epoch: int
    truncating: bool = True
    out_of_range: bool = False
    retry_at: float = 0.0


def whole_batches(records) -> memoryview | None:
    """The leading whole batches of a fetched records field (a leader may cut the last one short)."""
    if not records:
        return None
    view = memoryview(records)
    pos = 0
    while len(view) - pos >= LOG_OVERHEAD:
        size = struct.unpack_from(">i", view, pos + 8)[0] + LOG_OVERHEAD
        if pos + size > len(view):
            break
        pos += size
    return view[:pos] if pos else None


class ReplicaFetcher:
    """Fetches every partition this broker follows from one leader."""

    def __init__(self, broker, leader_id: int) -> None:
        self.broker = broker
        self.leader_id = leader_id
        self.partitions: dict[tuple[str, int], FollowedPartition] = {}
        config = broker.config
        self.max_wait_ms = int(config["replica.fetch.wait.max.ms"])
        self.min_bytes = int(config["replica.fetch.min.bytes"])
        self.max_bytes = int(config["replica.fetch.response.max.bytes"])
        self.partition_max_bytes = int(config["replica.fetch.max.bytes"])
        self.backoff = int(config["replica.fetch.backoff.ms"]) / 1000
        self.socket_timeout = int(config["replica.socket.timeout.ms"]) / 1000
        self._changed = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run())
        self._connection: BrokerConnection | None = None

    def add(self, topic: str, partition: int, leader_epoch: int) -> None:
        self.partitions[(topic, partition)] = FollowedPartition(topic, partition, leader_epoch)
        self._changed.set()

    def remove(self, topic: str, partition: int) -> None:
        self.partitions.pop((topic, partition), None)

    async def stop(self) -> None:
        await stop_task(self._task)
        if self._connection is not None:
            self._connection.close()

    # -- the loop ----------------------------------------------------------------------------------

    async def _run(self) -> None:
        failures = 0
        while True:
            if not self.partitions:
                self._changed.clear()
                await self._changed.wait()
                continue
            try:
                connection = await self._connect()
                if connection is None:
                    await asyncio.sleep(self.backoff)
                    continue
                if any(f.out_of_range for f in self.partitions.values()):
                    await self._reset_out_of_range(connection)
                if any(f.truncating for f in self.partitions.values()):
                    await self._truncate(connection)
                await self._fetch(connection)
                failures = 0
            except asyncio.CancelledError:
                raise
            except (OSError, ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError) as exc:
                # Once per outage: a dead leader refuses every attempt until the controller moves on.
                (logger.debug if failures else logger.info)("fetcher of leader %d: %s; reconnecting", self.leader_id,
                                                      exc or type(exc).__name__)
                failures += 1
                self._drop_connection()
                await asyncio.sleep(self.backoff)
                continue
            except Exception:
                logger.exception("fetcher of leader %d failed; retrying", self.leader_id)
                self._drop_connection()
                await asyncio.sleep(self.backoff)

    def _drop_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def _connect(self) -> BrokerConnection | None:
        if self._connection is not None:
            return self._connection
        info = self.broker.metadata.brokers.get(self.leader_id)
        if info is None:
            return None
        endpoint = info.endpoint(self.broker.inter_broker_listener()) or info.endpoint(None)
        if endpoint is None:
            return None
        connection = BrokerConnection(endpoint[0], endpoint[1], f"broker-{self.broker.node_id}-fetcher-{self.leader_id}")
        await connection.connect(self.socket_timeout)
        self._connection = connection
        return connection

    def _ready(self, truncating: bool) -> list[FollowedPartition]:
        now = asyncio.get_running_loop().time()
        return [f for f in self.partitions.values()
                if f.truncating == truncating and not f.out_of_range and f.retry_at <= now]

    def _later(self, followed: FollowedPartition) -> None:
        followed.retry_at = asyncio.get_running_loop().time() + self.backoff

    def _current(self, followed: FollowedPartition) -> bool:
        return self.partitions.get((followed.topic, followed.partition)) is followed

    # -- truncation --------------------------------------------------------------------------------

    async def _truncate(self, connection: BrokerConnection) -> None:
        """Kafka's truncation by leader epoch (KIP-101/KIP-279)."""
        asked: dict[tuple[str, int], tuple[FollowedPartition, int]] = {}
        topics: dict[str, list] = {}
        for followed in self._ready(truncating=True):
            plog = self.broker.logs.get(followed.topic, followed.partition)
            if plog is None:
                continue
            epoch = plog.latest_epoch()
            if epoch is None:
                # No epochs (an empty log, or one written before epochs): what is committed is safe.
                plog.truncate_to(plog.high_watermark) if plog.log_end_offset > plog.high_watermark else None
                followed.truncating = False
                continue
            asked[(followed.topic, followed.partition)] = (followed, epoch)
            topics.setdefault(followed.topic, []).append(
                {"partition": followed.partition, "current_leader_epoch": followed.leader_epoch, "leader_epoch": epoch})
        if not topics:
            return
        response = await connection.call(
            "OffsetForLeaderEpoch", OFFSET_FOR_LEADER_EPOCH_VERSION,
            {"replica_id": self.broker.node_id,
             "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]},
            self.socket_timeout)
        for topic in response.topics:
            for result in topic.partitions:
                entry = asked.get((topic.topic, result.partition))
                if entry is None or not self._current(entry[0]):
                    continue
                followed, epoch = entry
                error = ErrorCode.from_code(result.error_code)
                if error != ErrorCode.NONE:
                    logger.info("%s-%d: OffsetForLeaderEpoch from leader %d: %s", topic.topic, result.partition,
                             self.leader_id, error.name)
                    self._later(followed)
                    continue
                self._truncate_partition(followed, epoch, result.leader_epoch, result.end_offset)

    def _truncate_partition(self, followed: FollowedPartition, local_epoch: int, leader_epoch: int,
                            leader_end_offset: int) -> None:
        plog = self.broker.logs.get(followed.topic, followed.partition)
        if plog is None:
            return
        if leader_epoch < 0 or leader_end_offset < 0:
            target = plog.high_watermark  # the leader knows no epoch as old as ours
        elif leader_epoch == local_epoch:
            target = min(leader_end_offset, plog.log_end_offset)
        else:
            found_epoch, local_end = plog.end_offset_for_epoch(leader_epoch)
            target = min(leader_end_offset, local_end) if found_epoch >= 0 else plog.high_watermark
        if target < plog.log_end_offset:
            logger.info("%s-%d: truncating from %d to %d (leader %d says epoch %d ends at %d)", followed.topic,
                     followed.partition, plog.log_end_offset, target, self.leader_id, leader_epoch, leader_end_offset)
            plog.truncate_to(target)
        followed.truncating = False

    async def _reset_out_of_range(self, connection: BrokerConnection) -> None:
        """Kafka's handleOutOfRangeError: above the leader's end, truncate to it; below its
        start, start over empty at the leader's log start offset."""
        stuck = [f for f in self.partitions.values() if f.out_of_range]
        offsets: dict[tuple[str, int, int], int] = {}
        for timestamp in (-2, -1):  # earliest, latest (a replica's latest is the log end offset)
            topics: dict[str, list] = {}
            for followed in stuck:
                topics.setdefault(followed.topic, []).append({
                    "partition_index": followed.partition, "current_leader_epoch": followed.leader_epoch,
                    "timestamp": timestamp})
            response = await connection.call("ListOffsets", LIST_OFFSETS_VERSION, {
                "replica_id": self.broker.node_id, "isolation_level": 0,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}, self.socket_timeout)
            for topic in response.topics:
                for p in topic.partitions:
                    if p.error_code == 0:
                        offsets[(topic.name, p.partition_index, timestamp)] = p.offset
        for followed in stuck:
            start = offsets.get((followed.topic, followed.partition, -2))
            end = offsets.get((followed.topic, followed.partition, -1))
            plog = self.broker.logs.get(followed.topic, followed.partition)
            if start is None or end is None or plog is None or not self._current(followed):
                self._later(followed)
                continue
            followed.out_of_range = False
            if plog.log_end_offset > end:
                logger.info("%s-%d: truncating to the leader's log end offset %d", followed.topic, followed.partition, end)
                plog.truncate_to(end)
            elif plog.log_end_offset < start:
                logger.info("%s-%d: restarting the log at the leader's log start offset %d", followed.topic,
                         followed.partition, start)
                plog.truncate_fully_and_start_at(start)

    # -- fetching ----------------------------------------------------------------------------------

    async def _fetch(self, connection: BrokerConnection) -> None:
        ready = self._ready(truncating=False)
        if not ready:
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), self.backoff)
            except asyncio.TimeoutError:
                pass
            return
        sent: dict[tuple[str, int], FollowedPartition] = {}
        topics: dict[str, list] = {}
        for followed in ready:
            plog = self.broker.logs.get(followed.topic, followed.partition)
            if plog is None:
                continue
            sent[(followed.topic, followed.partition)] = followed
            latest = plog.latest_epoch()
            topics.setdefault(followed.topic, []).append({
                "partition": followed.partition, "current_leader_epoch": followed.leader_epoch,
                "fetch_offset": plog.log_end_offset, "last_fetched_epoch": -1 if latest is None else latest,
                "log_start_offset": plog.log_start_offset, "partition_max_bytes": self.partition_max_bytes})
        if not topics:
            return
        response = await connection.call("Fetch", FETCH_VERSION, {
            "replica_id": self.broker.node_id, "max_wait_ms": self.max_wait_ms, "min_bytes": self.min_bytes,
            "max_bytes": self.max_bytes, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            "forgotten_topics_data": [], "rack_id": ""},
            self.socket_timeout + self.max_wait_ms / 1000)
        if response.error_code:
            logger.info("fetch from leader %d: %s", self.leader_id, ErrorCode.from_code(response.error_code).name)
            await asyncio.sleep(self.backoff)
            return
        appended = []
        for topic in response.responses:
            for data in topic.partitions:
                followed = sent.get((topic.topic, data.partition_index))
                if followed is None or not self._current(followed):
                    continue
                if self._process(followed, data):
                    appended.append((topic.topic, data.partition_index))
        if appended and self.broker.flush_on_ack:
            # The next fetch tells the leader this replica's log end offset, which moves the high
            # watermark and so answers acks=all: with log.flush.on.ack what it counts is on this
            # broker's disk too, so an acknowledged record survives a power cut of every replica.
            await self.broker.await_synced(appended)

    def _process(self, followed: FollowedPartition, data) -> bool:
        """Apply one partition's part of the leader's answer; whether batches were appended."""
        plog = self.broker.logs.get(followed.topic, followed.partition)
        if plog is None:
            return False
        error = ErrorCode.from_code(data.error_code)
        if error == ErrorCode.OFFSET_OUT_OF_RANGE:
            # Our log end offset is outside the leader's log: below its start (retention or
            # DeleteRecords) or above its end (truncate by epoch again).
            logger.info("%s-%d: fetch offset %d out of range on leader %d", followed.topic, followed.partition,
                     plog.log_end_offset, self.leader_id)
            followed.out_of_range = True
            return False
        if error != ErrorCode.NONE:
            if error not in _RETRY_LATER:
                logger.warning("%s-%d: fetch from leader %d: %s", followed.topic, followed.partition, self.leader_id,
                            error.name)
            self._later(followed)
            return False
        batches = whole_batches(data.records)
        if batches is not None:
            try:
                plog.append(bytearray(batches), leader_epoch=-1, assign_offsets=False)
            except Exception as exc:
                logger.warning("%s-%d: appending the leader's batches failed (%s); truncating again",
                            followed.topic, followed.partition, exc)
                followed.truncating = True
                return False
        if data.log_start_offset > plog.log_start_offset:
            try:
                plog.delete_records_before(min(data.log_start_offset, max(plog.high_watermark, data.high_watermark,
                                                                          plog.log_start_offset)))
            except Exception as exc:  # the leader's start is beyond what we have yet
                logger.debug("%s-%d: log start offset %d not applied: %s", followed.topic, followed.partition,
                          data.log_start_offset, exc)
        if data.high_watermark >= 0:
            plog.high_watermark = min(data.high_watermark, plog.log_end_offset)
        return batches is not None


class ReplicaFetcherManager:
    """Which fetcher (leader) each followed partition belongs to."""

    def __init__(self, broker) -> None:
        self.broker = broker
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.leader_of: dict[tuple[str, int], int] = {}

    def add(self, topic: str, partition: int, leader_id: int, leader_epoch: int) -> None:
        self.remove(topic, partition)
        fetcher = self.fetchers.get(leader_id)
        if fetcher is None:
            fetcher = self.fetchers[leader_id] = ReplicaFetcher(self.broker, leader_id)
        fetcher.add(topic, partition, leader_epoch)
        self.leader_of[(topic, partition)] = leader_id

    def remove(self, topic: str, partition: int) -> None:
        leader_id = self.leader_of.pop((topic, partition), None)
        if leader_id is not None and leader_id in self.fetchers:
            self.fetchers[leader_id].remove(topic, partition)

    async def stop(self) -> None:
        fetchers, self.fetchers = list(self.fetchers.values()), {}
        self.leader_of.clear()
        for fetcher in fetchers:
            await fetcher.stop()
