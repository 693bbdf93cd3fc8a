"""The share coordinator (KIP-932): keeper of share-partitions' durable state in the
`__share_group_state` partitions this broker leads, answering InitializeShareGroupState (83),
ReadShareGroupState (84), WriteShareGroupState (85), DeleteShareGroupState (86) and
ReadShareGroupStateSummary (87) as Kafka 4.3's ShareCoordinatorShard does.

A share-partition leader (broker/share_groups.py) persists through it: here directly when this
broker leads the state partition (a single node leads them all), else, in Kafka's design, by
sending those requests to the broker that does. What it writes: a ShareSnapshot record (the whole
state) every share.coordinator.snapshot.update.records.per.snapshot updates, ShareUpdate records
(what changed) in between, as coordinator/share_state.py encodes and folds them.

Fencing, as Kafka's coordinator fences: a write or read carrying a leader epoch below the one stored
answers FENCED_LEADER_EPOCH, a write with a state epoch below the stored one FENCED_STATE_EPOCH, so
a deposed share-partition leader cannot overwrite what its successor wrote. A read with a newer
leader epoch records it (Kafka's readStateAndMaybeUpdateLeaderEpoch), fencing the old leader out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

from coordinator.offsets_store import (
    AppendFailed,
    append_internal_batch,
    java_abs,
    java_string_hashcode,
    read_internal_batches,
)
from coordinator.share_partition import StateBatch, StateUpdate
from coordinator.share_state import (
    SHARE_STATE_TOPIC,
    PersistedShareState,
    snapshot_record,
    state_partition_for,
    update_record,
)
from kafka_wire import internal_records as ir
from kafka_wire.errors import ErrorCode
from kafka_wire.primitives import DecodeError
from kafka_wire.record_codec import Record, build_batch

logger = logging.getLogger("kafka_wire.share_coordinator")


def decoded_records(broker, topic: str, partition: int, decode) -> Iterator:
    """The records of an internal topic partition that `decode(key, value)` understands, in log
    order: control batches, records it cannot decode and those it answers None for are skipped."""
    for header, records in read_internal_batches(broker, topic, partition):
        if header.is_control:
            continue
        for record in records:
            try:
                decoded = decode(record.key, record.value)
            except (DecodeError, UnicodeDecodeError, ValueError):
                continue
            if decoded is not None:
                yield decoded


def share_state_records(broker, partition: int) -> Iterator[tuple]:
    """(record type, key, value) of each ShareSnapshot / ShareUpdate record (tombstones included)
    of a __share_group_state partition, in log order."""
    return decoded_records(broker, SHARE_STATE_TOPIC, partition, ir.decode_share_state_record)

class ShareStateError(AppendFailed):
    """A state request refused for one share-partition: its error code and message."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(error, message or "")
        self.message = message


def share_coordinator_of(broker) -> "ShareCoordinator":
    """The broker's share coordinator, made on first use."""
    coordinator = getattr(broker, "_share_coordinator", None)
    if coordinator is None:
        coordinator = broker._share_coordinator = ShareCoordinator(broker)
    return coordinator


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class ShareCoordinator:
    """This broker's share coordinator: the state of the share-partitions whose
    `__share_group_state` partition it leads."""

    def __init__(self, broker) -> None:
        self.broker = broker
        self._states: dict[tuple, PersistedShareState] = {}  # folded state by (group, topic id, partition)
        # The log end offset of each state partition as of the states folded from it: another
        # leader's writes since (leadership went and came back) make them stale.
        self._folded_end: dict[int, int] = {}

    # -- where state lives -------------------------------------------------------------------------

    def state_partitions(self) -> int:
        """Create __share_group_state when missing (Kafka's settings); its partition count."""
        broker = self.broker
        meta = broker.metadata.topic(SHARE_STATE_TOPIC)
        if meta is None:
            cfg = broker.config
            live = max(1, len(broker.metadata.live_brokers()))
            try:
                meta = broker.create_topic(
                    SHARE_STATE_TOPIC, int(cfg["share.coordinator.state.topic.num.partitions"]),
                    min(int(cfg["share.coordinator.state.topic.replication.factor"]), live),
                    {"cleanup.policy": ["delete"], "compression.type": "producer",
                     "segment.bytes": int(cfg["share.coordinator.state.topic.segment.bytes"]), "retention.ms": -1})
            except Exception as exc:  # noqa: BLE001 - e.g. a cluster's controller not reachable yet
                logger.warning("creating %s failed: %s", SHARE_STATE_TOPIC, exc)
                meta = broker.metadata.topic(SHARE_STATE_TOPIC)
            if meta is None:
                raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return meta.partitions

    def find(self, key: str, listener: str) -> tuple[ErrorCode, int, str, int]:
        """FindCoordinator for a share key ("group:topicId:partition", SharePartitionKey's
        coordinator key): the leader of the key's __share_group_state partition; INVALID_REQUEST
        for a key not of that form, as Kafka answers."""
        parts = key.rsplit(":", 2)
        if len(parts) != 3 or not parts[0] or not parts[2].lstrip("-").isdigit():
            return ErrorCode.INVALID_REQUEST, -1, "", -1
        try:
            count = self.state_partitions()
        except ShareStateError as e:
            return e.error, -1, "", -1
        where = java_abs(java_string_hashcode(key)) % count
        broker = self.broker
        if not self._in_cluster():
            host, port = broker.advertised_endpoint(listener)
            return ErrorCode.NONE, broker.node_id, host, port
        state = broker.metadata.leader_and_isr(SHARE_STATE_TOPIC, where)
        info = broker.metadata.brokers.get(state.leader) if state is not None and state.leader >= 0 else None
        endpoint = info.endpoint(listener) if info is not None else None
        if endpoint is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
        return ErrorCode.NONE, state.leader, endpoint[0], endpoint[1]

    def partition_for(self, group_id: str, topic_id, partition: int) -> int:
        return state_partition_for(group_id, topic_id, partition, self.state_partitions())

    def _in_cluster(self) -> bool:
        """A ZooKeeper-mode cluster, whose state partitions have leaders on several brokers."""
        return self.broker.metadata.metadata_quorum() is None

    def _check_leader(self, where: int) -> None:
        if self._in_cluster():
            replicas = getattr(self.broker, "replicas", None)
            if replicas is None or not replicas.is_leader(SHARE_STATE_TOPIC, where):
                raise ShareStateError(ErrorCode.NOT_COORDINATOR)
        if self.broker.partition_log(SHARE_STATE_TOPIC, where) is None:
            raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE)

    def _state(self, key: tuple, where: int) -> PersistedShareState:
        plog = self.broker.partition_log(SHARE_STATE_TOPIC, where)
        if self._folded_end.get(where) != plog.log_end_offset:
            self.forget(where)
            self._folded_end[where] = plog.log_end_offset
        state = self._states.get(key)
        if state is None:
            state = PersistedShareState()
            for record_type, k, value in share_state_records(self.broker, where):
                if (k.group_id, k.topic_id, k.partition) == key:
                    state.apply(record_type, value)
            self._states[key] = state
        return state

    def forget(self, where: int) -> None:
        """This broker stopped leading a state partition: what it folded from it is dropped (the
        next leader folds the records again)."""
        for key in [k for k in self._states if self.partition_for(*k) == where]:
            del self._states[key]
        self._folded_end.pop(where, None)

    # -- the requests ------------------------------------------------------------------------------

    def read(self, group_id: str, topic_id, partition: int, leader_epoch: int = -1) -> PersistedShareState:
        """ReadShareGroupState: the folded state (found False and start offset -1 when there is
        none). A newer leader epoch is recorded; an older one is fenced."""
        key = (group_id, topic_id, partition)
        where = self.partition_for(*key)
        self._check_leader(where)
        state = self._state(key, where)
        if state.found and leader_epoch != -1:
            if leader_epoch < state.leader_epoch:
                raise ShareStateError(ErrorCode.FENCED_LEADER_EPOCH, "Leader epoch is older than the stored one.")
            if leader_epoch > state.leader_epoch:
                self._append(key, where, StateUpdate(state.state_epoch, leader_epoch, -1, -1, ()), snapshot=False)
        return state

    def write(self, group_id: str, topic_id, partition: int, update: StateUpdate, *, snapshot: bool = False) -> None:
        """WriteShareGroupState: lay `update` over the stored state (a snapshot replaces it)."""
        key = (group_id, topic_id, partition)
        where = self.partition_for(*key)
        self._check_leader(where)
        state = self._state(key, where)
        if not state.found:  # Kafka: InitializeShareGroupState comes first
            raise ShareStateError(ErrorCode.INVALID_REQUEST, "Write operation on uninitialized share partition not allowed.")
        if update.leader_epoch != -1 and update.leader_epoch < state.leader_epoch:
            raise ShareStateError(ErrorCode.FENCED_LEADER_EPOCH, "Leader epoch is older than the stored one.")
        if update.state_epoch < state.state_epoch:
            raise ShareStateError(ErrorCode.FENCED_STATE_EPOCH, "State epoch is older than the stored one.")
        if update.state_epoch > state.state_epoch:
            snapshot = True  # a new state epoch starts over (AlterShareGroupOffsets)
        self._append(key, where, update, snapshot=snapshot)

    def initialize(self, group_id: str, topic_id, partition: int, state_epoch: int, start_offset: int) -> None:
        """InitializeShareGroupState: a fresh state at `start_offset` (a snapshot without batches)."""
        key = (group_id, topic_id, partition)
        where = self.partition_for(*key)
        self._check_leader(where)
        meta = self.broker.metadata.topic_by_id(topic_id)
        if meta is None or not 0 <= partition < meta.partitions:
            raise ShareStateError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.message)
        state = self._state(key, where)
        if state.found and state_epoch < state.state_epoch:
            raise ShareStateError(ErrorCode.FENCED_STATE_EPOCH, "State epoch is older than the stored one.")
        self._append(key, where, StateUpdate(state_epoch, -1, start_offset, 0, ()), snapshot=True)

    def delete(self, group_id: str, topic_id, partition: int) -> None:
        """DeleteShareGroupState: tombstones for the share-partition's records."""
        key = (group_id, topic_id, partition)
        where = self.partition_for(*key)
        self._check_leader(where)
        records = [(ir.encode_share_state_key(t, group_id, topic_id, partition), None)
                   for t in (ir.SHARE_SNAPSHOT, ir.SHARE_UPDATE)]
        batch = bytearray(build_batch([Record(i, 0, k, v) for i, (k, v) in enumerate(records)],
                                      base_timestamp=_now_ms()))
        append_internal_batch(self.broker, SHARE_STATE_TOPIC, where, batch)
        self._folded_end[where] = self.broker.partition_log(SHARE_STATE_TOPIC, where).log_end_offset
        self._states[key] = PersistedShareState()

    def group_states(self, group_id: str) -> Iterator[tuple[tuple, PersistedShareState]]:
        """Every share-partition of the group with state in the partitions here, folded."""
        meta = self.broker.metadata.topic(SHARE_STATE_TOPIC)
        folded: dict[tuple, PersistedShareState] = {}
        for where in range(meta.partitions if meta is not None else 0):
            for record_type, k, value in share_state_records(self.broker, where):
                if k.group_id == group_id:
                    folded.setdefault((group_id, k.topic_id, k.partition), PersistedShareState()).apply(
                        record_type, value)
        for key, state in folded.items():
            if state.found:
                yield key, self._states.get(key) or state

    # -- writing -----------------------------------------------------------------------------------

    def _append(self, key: tuple, where: int, update: StateUpdate, *, snapshot: bool) -> None:
        """One ShareSnapshot or ShareUpdate record; a snapshot every
        share.coordinator.snapshot.update.records.per.snapshot updates, as Kafka's shard writes."""
        state = self._states[key]
        per_snapshot = int(self.broker.config["share.coordinator.snapshot.update.records.per.snapshot"])
        now = _now_ms()
        group_id, topic_id, partition = key
        if snapshot or not state.found or state.updates_since_snapshot >= per_snapshot:
            if not snapshot and state.found:
                # An update that makes the next snapshot: the stored state with the update over it.
                merged = PersistedShareState(**{**state.__dict__, "batches": list(state.batches)})
                merged.apply(ir.SHARE_UPDATE, _as_value(update, state.snapshot_epoch))
                update = StateUpdate(merged.state_epoch, merged.leader_epoch, merged.start_offset,
                                     update.delivery_complete_count, tuple(merged.batches))
            epoch = state.snapshot_epoch + 1 if state.found else 0
            record_type = ir.SHARE_SNAPSHOT
            record = snapshot_record(group_id, topic_id, partition, update, epoch, now,
                                     create_ms=state.create_timestamp or now)
        else:
            record_type = ir.SHARE_UPDATE
            record = update_record(group_id, topic_id, partition, update, state.snapshot_epoch)
        batch = bytearray(build_batch([Record(0, 0, record[0], record[1])], base_timestamp=now))
        append_internal_batch(self.broker, SHARE_STATE_TOPIC, where, batch)
        self._folded_end[where] = self.broker.partition_log(SHARE_STATE_TOPIC, where).log_end_offset
        state.apply(record_type, ir.decode_share_state_record(record[0], record[1])[2])


def _as_value(update: StateUpdate, snapshot_epoch: int):
    """A StateUpdate in the shape of a decoded ShareUpdate value (for PersistedShareState.apply)."""
    from types import SimpleNamespace

    return SimpleNamespace(snapshot_epoch=snapshot_epoch, leader_epoch=update.leader_epoch,
                           start_offset=update.start_offset, delivery_complete_count=update.delivery_complete_count,
                           state_batches=[StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                                          for b in update.state_batches])


# -- the handlers' common part (broker/handlers/p83..p87) ---------------------------------------------

# How long a state write may wait for the in-sync replicas (Kafka: share.coordinator.write.timeout.ms).
WRITE_TIMEOUT_MS = 5000


async def answer_state_request(broker, ctx, request, per_partition, defaults: dict, *, writes: bool) -> dict:
    """The results of a share state request: `per_partition(coordinator, group_id, topic_id,
    partition data)` answers one partition's fields (beyond partition and error) or raises
    ShareStateError; `defaults` are the fields of an error result. A principal without
    CLUSTER_ACTION on the cluster gets CLUSTER_AUTHORIZATION_FAILED everywhere, as from Kafka (these
    are sent between brokers). Like Kafka's share coordinator, which runs whatever share.version is
    finalized, they do not depend on it. Writes are answered once the state partitions have them as
    an acknowledged produce would (the in-sync replicas)."""
    from .security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

    refused = None
    if not broker.authorizer.authorize(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    coordinator = share_coordinator_of(broker)
    results, written = [], {}
    for topic in request.topics:
        partitions = []
        for data in topic.partitions:
            entry = {"partition": data.partition, "error_code": 0, "error_message": None}
            try:
                if refused is not None:
                    raise ShareStateError(refused)
                entry.update(per_partition(coordinator, request.group_id, topic.topic_id, data))
                if writes:
                    where = coordinator.partition_for(request.group_id, topic.topic_id, data.partition)
                    written.setdefault((SHARE_STATE_TOPIC, where), []).append(entry)
            except AppendFailed as e:
                entry.update(defaults)
                entry["error_code"] = int(e.error)
                entry["error_message"] = getattr(e, "message", None) or str(e)
            partitions.append(entry)
        results.append({"topic_id": topic.topic_id, "partitions": partitions})
    if written:
        durable = await broker.await_durable(list(written), WRITE_TIMEOUT_MS)
        for tp, entries in written.items():
            if durable.get(tp, ErrorCode.NONE) != ErrorCode.NONE:
                for entry in entries:
                    entry["error_code"] = int(durable[tp])
    return {"results": results}


# -- the share-partition leader's side: Kafka's persister ----------------------------------------------

# How long a state request to another broker's share coordinator may take.
STATE_REQUEST_TIMEOUT_S = 30.0
# How long a share-partition leader retries a state request while its share coordinator is moving.
STATE_RETRY_S = 5.0
RETRIABLE_STATE_ERRORS = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                    ErrorCode.NOT_COORDINATOR})


class SharePersister:
    """How a share-partition leader reads and writes its state (Kafka's DefaultStatePersister): at
    this broker's share coordinator when it leads the share-partition's __share_group_state
    partition (always, on a single node), else at the broker that does, with ReadShareGroupState,
    WriteShareGroupState and DeleteShareGroupState. Raises AppendFailed (a ShareStateError with the
    coordinator's error) when the state could not be read or written."""

    def __init__(self, broker) -> None:
        import asyncio

        self.broker = broker
        self.coordinator = share_coordinator_of(broker)
        self._connections: dict[int, object] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    def _leader(self, group_id: str, topic_id, partition: int) -> int | None:
        """The broker leading the state partition; None when it is this one."""
        if not self.coordinator._in_cluster():
            return None
        where = self.coordinator.partition_for(group_id, topic_id, partition)
        state = self.broker.metadata.leader_and_isr(SHARE_STATE_TOPIC, where)
        if state is None or state.leader < 0:
            raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return None if state.leader == self.broker.node_id else state.leader

    async def _durable(self, group_id: str, topic_id, partition: int) -> None:
        where = self.coordinator.partition_for(group_id, topic_id, partition)
        error = (await self.broker.await_durable([(SHARE_STATE_TOPIC, where)], WRITE_TIMEOUT_MS)).get(
            (SHARE_STATE_TOPIC, where), ErrorCode.NONE)
        if error != ErrorCode.NONE:
            raise ShareStateError(error)

    async def _call(self, leader: int, api: str, version: int, body: dict):
        """One state request to another broker; its single partition result."""
        response = await self._request(leader, api, version, body)
        result = response.results[0].partitions[0]
        if result.error_code != 0:
            raise ShareStateError(ErrorCode.from_code(result.error_code), result.error_message)
        return result

    async def _request(self, leader: int, api: str, version: int, body: dict):
        """One request to another broker (a state request; ListOffsets for a share group's lag);
        its response. ShareStateError COORDINATOR_NOT_AVAILABLE when the broker cannot be asked."""
        import asyncio

        from .cluster.replica_fetcher import BrokerConnection

        lock = self._locks.setdefault(leader, asyncio.Lock())
        async with lock:
            connection = self._connections.get(leader)
            try:
                if connection is None:
                    info = self.broker.metadata.brokers.get(leader)
                    endpoint = info.endpoint(self.broker.inter_broker_listener()) if info is not None else None
                    if endpoint is None:
                        raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
                    connection = BrokerConnection(endpoint[0], endpoint[1], f"broker-{self.broker.node_id}-share")
                    await connection.connect(10)
                    self._connections[leader] = connection
                response = await connection.call(api, version, body, STATE_REQUEST_TIMEOUT_S)
            except (OSError, ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError) as exc:
                self._connections.pop(leader, None)
                if connection is not None:
                    connection.close()
                raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(exc)) from None
        return response

    @staticmethod
    def _body(group_id: str, topic_id, fields: dict) -> dict:
        return {"group_id": group_id, "topics": [{"topic_id": topic_id, "partitions": [fields]}]}

    async def _read_once(self, group_id: str, topic_id, partition: int, leader_epoch: int = -1) -> PersistedShareState:
        leader = self._leader(group_id, topic_id, partition)
        if leader is None:
            return self.coordinator.read(group_id, topic_id, partition, leader_epoch)
        result = await self._call(leader, "ReadShareGroupState", 0, self._body(
            group_id, topic_id, {"partition": partition, "leader_epoch": leader_epoch}))
        state = PersistedShareState()
        if result.start_offset >= 0:
            state.found = True
            state.start_offset, state.state_epoch = result.start_offset, result.state_epoch
            state.leader_epoch = max(leader_epoch, 0)
            state.batches = [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                             for b in result.state_batches]
        return state

    async def summaries(self, group_id: str, keys) -> dict:
        """ReadShareGroupStateSummary of the group's share-partitions `keys` [(topic id,
        partition)], one request per share coordinator (Kafka's group coordinator describes share
        group offsets so): {(topic id, partition): (start offset, leader epoch, delivery complete
        count)} for those with state, or the ErrorCode their coordinator answered."""
        found: dict = {}
        by_leader: dict = {}
        for key in keys:
            try:
                by_leader.setdefault(self._leader(group_id, *key), []).append(key)
            except ShareStateError as e:
                found[key] = e.error
        for leader, leader_keys in by_leader.items():
            if leader is None:
                for key in leader_keys:
                    try:
                        state = self.coordinator.read(group_id, *key)
                    except ShareStateError as e:
                        found[key] = e.error
                        continue
                    if state.found and state.start_offset >= 0:
                        found[key] = (state.start_offset, state.leader_epoch, state.delivery_complete_count())
                continue
            by_topic: dict = {}
            for topic_id, partition in leader_keys:
                by_topic.setdefault(topic_id, []).append({"partition": partition, "leader_epoch": -1})
            try:
                response = await self._request(leader, "ReadShareGroupStateSummary", 1, {
                    "group_id": group_id,
                    "topics": [{"topic_id": t, "partitions": parts} for t, parts in by_topic.items()]})
            except ShareStateError as e:
                found.update(dict.fromkeys(leader_keys, e.error))
                continue
            for result in response.results:
                for part in result.partitions:
                    key = (result.topic_id, part.partition)
                    if part.error_code:
                        found[key] = ErrorCode.from_code(part.error_code)
                    elif part.start_offset >= 0:
                        found[key] = (part.start_offset, part.leader_epoch, max(0, part.delivery_complete_count))
        return found

    async def _write_once(self, group_id: str, topic_id, partition: int, update: StateUpdate, *,
                    snapshot: bool = False) -> None:
        leader = self._leader(group_id, topic_id, partition)
        if leader is None:
            self.coordinator.write(group_id, topic_id, partition, update, snapshot=snapshot)
            await self._durable(group_id, topic_id, partition)
            return
        await self._call(leader, "WriteShareGroupState", 1, self._body(group_id, topic_id, {
            "partition": partition, "state_epoch": update.state_epoch, "leader_epoch": update.leader_epoch,
            "start_offset": update.start_offset, "delivery_complete_count": update.delivery_complete_count,
            "state_batches": [{"first_offset": b.first_offset, "last_offset": b.last_offset,
                               "delivery_state": b.delivery_state, "delivery_count": b.delivery_count}
                              for b in update.state_batches]}))

    async def _initialize_once(self, group_id: str, topic_id, partition: int, state_epoch: int, start_offset: int) -> None:
        leader = self._leader(group_id, topic_id, partition)
        if leader is None:
            self.coordinator.initialize(group_id, topic_id, partition, state_epoch, start_offset)
            await self._durable(group_id, topic_id, partition)
            return
        await self._call(leader, "InitializeShareGroupState", 0, self._body(group_id, topic_id, {
            "partition": partition, "state_epoch": state_epoch, "start_offset": start_offset}))

    async def _delete_once(self, group_id: str, topic_id, partition: int) -> None:
        leader = self._leader(group_id, topic_id, partition)
        if leader is None:
            self.coordinator.delete(group_id, topic_id, partition)
            await self._durable(group_id, topic_id, partition)
            return
        await self._call(leader, "DeleteShareGroupState", 0, self._body(group_id, topic_id, {"partition": partition}))

    # -- retries, as Kafka's PersisterStateManager retries a share coordinator that is moving ----------

    async def _retrying(self, attempt):
        """`attempt()` again, with a growing backoff for up to STATE_RETRY_S, while the share
        coordinator is not there (not elected yet, loading, moved or unreachable); other errors,
        and the last transient one, are raised."""
        import asyncio

        deadline = time.monotonic() + STATE_RETRY_S
        backoff = 0.1
        while True:
            try:
                return await attempt()
            except ShareStateError as e:
                if e.error not in RETRIABLE_STATE_ERRORS or time.monotonic() + backoff > deadline:
                    raise
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 1.0)

    async def read(self, group_id: str, topic_id, partition: int, leader_epoch: int = -1) -> PersistedShareState:
        return await self._retrying(lambda: self._read_once(group_id, topic_id, partition, leader_epoch))

    async def write(self, group_id: str, topic_id, partition: int, update: StateUpdate, *,
                    snapshot: bool = False) -> None:
        # Writing an update again is harmless: it lays the same states over the stored ones.
        await self._retrying(lambda: self._write_once(group_id, topic_id, partition, update, snapshot=snapshot))

    async def initialize(self, group_id: str, topic_id, partition: int, state_epoch: int, start_offset: int) -> None:
        await self._retrying(lambda: self._initialize_once(group_id, topic_id, partition, state_epoch, start_offset))

    async def delete(self, group_id: str, topic_id, partition: int) -> None:
        await self._retrying(lambda: self._delete_once(group_id, topic_id, partition))
