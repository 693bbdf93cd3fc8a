"""Fault workloads: real clients (confluent-kafka, i.e. librdkafka) against a FaultCluster, every
operation recorded in a history (history.py) for checker.py.

queue: idempotent acks=all producers to a topic of RF=3 and min.insync.replicas=2; consumers in a
group committing offsets synchronously after each batch; an assign-mode reader of every partition;
a monitor reading the group's committed offsets back and one reading each partition's leader,
epoch and ISR from ZooKeeper. After the faults heal, a fresh reader drains every partition to its
high watermark (the `final` operation), so the checker can tell a lost write from an unread one.

txn: read-process-write. Transactional producers consume from `txn-in` (fed by a plain
idempotent producer) in a group, write each input record's value to two partitions of `txn-out`
and commit the input offsets in the same transaction (send_offsets_to_transaction); about one
transaction in five is aborted on purpose. read_committed readers follow `txn-out`.

share: a share group (KIP-932): three confluent-kafka ShareConsumers in explicit mode share the
partitions of `shared` (fed by an idempotent acks=all producer), accept every record they are given
and commit each poll's acknowledgements synchronously (`share-deliver`, `share-accept`). After the
faults heal and the final read, they go on until the group's share-partitions have every record
accepted (DescribeShareGroupOffsets at the group's coordinator: start offset at the high watermark,
no lag) or a minute passed, and that state is recorded (`share-final`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from coordinator.offsets_store import partition_for

from .cluster import FaultCluster
from .history import HistoryRecorder

# librdkafka settings that let clients notice a dead or cut broker within seconds, not minutes.
CLIENT_DEFAULTS = {
    "socket.timeout.ms": 6000,
    "socket.connection.setup.timeout.ms": 5000,
    "metadata.max.age.ms": 5000,
    "topic.metadata.refresh.interval.ms": 1000,
    "reconnect.backoff.ms": 100,
    "reconnect.backoff.max.ms": 1000,
    "retry.backoff.ms": 100,
    "log_level": 0,
}
# librdkafka debug contexts for the producers (e.g. "eos,msg"), their log in the run's cluster
# directory as <process>.rdkafka.log: how a duplicate came about (an epoch bump and what caused it)
# is only in the client's own log.
CLIENT_DEBUG_ENV = "KW_FAULTS_CLIENT_DEBUG"
PARTITIONS = 3
OFFSETS_PARTITIONS = 3  # testing/cluster.py's CLUSTER_DEFAULTS["offsets.topic.num.partitions"]


class ClusterState:
    """What ZooKeeper says: partition leaders, epochs and ISRs, and the controller (kazoo, from the root
    namespace, which no nemesis cuts from ZooKeeper)."""

    def __init__(self, cluster: FaultCluster) -> None:
        from kazoo.client import KazooClient

        self.zk = KazooClient(hosts=",".join(z.connect for z in cluster.zookeepers.values()), timeout=10,
                              connection_retry={"max_tries": -1, "max_delay": 1})
        self.zk.start(timeout=30)

    def partition_state(self, topic: str, partition: int) -> dict | None:
        """The state znode's JSON (leader, leader_epoch, isr, ...) plus its `version`."""
        try:
            data, stat = self.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        except Exception:  # noqa: BLE001 - no node yet, or ZooKeeper unreachable: nothing known
            return None
        return {**json.loads(data), "version": stat.version}

    def sole_in_sync_replica_of(self, broker_id: int) -> list[str]:
        """Every `topic-partition` (internal topics too) whose ISR in ZooKeeper is this broker alone."""
        found = []
        try:
            topics = self.zk.get_children("/brokers/topics")
        except Exception:  # noqa: BLE001 - ZooKeeper unreachable: nothing known
            return found
        for topic in sorted(topics):
            try:
                partitions = self.zk.get_children(f"/brokers/topics/{topic}/partitions")
            except Exception:  # noqa: BLE001
                continue
            for partition in sorted(partitions, key=int):
                state = self.partition_state(topic, int(partition))
                if state is not None and [int(b) for b in state.get("isr", [])] == [broker_id]:
                    found.append(f"{topic}-{partition}")
        return found

    def leader_of(self, topic: str, partition: int) -> int:
        state = self.partition_state(topic, partition)
        return -1 if state is None else int(state["leader"])

    def controller(self) -> int:
        try:
            data, _ = self.zk.get("/controller")
        except Exception:  # noqa: BLE001
            return -1
        return int(json.loads(data)["brokerid"])

    def coordinator_of(self, group: str) -> int:
        return self.leader_of("__consumer_offsets", partition_for(group, OFFSETS_PARTITIONS))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.zk.stop()
            self.zk.close()


class Workload:
    """Threads of clients recording into `history` until stop(); drain() reads everything back."""

    name = "workload"
    topics: dict[str, dict] = {}
    group = "fault-group"
    watched_topic = "queue"
    # Broker settings the workload needs, beside the nemesis's (run.py).
    broker_config: dict = {}

    def __init__(self, cluster: FaultCluster, history: HistoryRecorder, rate: float = 50.0) -> None:
        self.cluster = cluster
        self.history = history
        self.rate = rate
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.state = ClusterState(cluster)
        self.errors: list[str] = []

    def client_config(self, **extra) -> dict:
        return {"bootstrap.servers": self.cluster.bootstrap, **CLIENT_DEFAULTS,
                "error_cb": self._client_error, **extra}

    def _client_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.errors.append(str(error))

    def producer_config(self, process: str, **extra) -> dict:
        """client_config for a producer, with librdkafka's debug log of it in a file when
        KW_FAULTS_CLIENT_DEBUG names debug contexts."""
        contexts = os.environ.get(CLIENT_DEBUG_ENV, "").strip()
        if not contexts:
            return self.client_config(**extra)
        logger = logging.getLogger(f"kafka-wire-faults.rdkafka.{process}")
        if not logger.handlers:
            handler = logging.FileHandler(self.cluster.base_dir / f"{process}.rdkafka.log")
            handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
            logger.addHandler(handler)
            logger.setLevel(logging.DEBUG)
            logger.propagate = False
        return self.client_config(**extra, debug=contexts, log_level=7, logger=logger)

    def setup(self, timeout: float = 60.0) -> None:
        admin = AdminClient(self.client_config())
        futures = admin.create_topics([NewTopic(name, PARTITIONS, 3, config=config)
                                       for name, config in self.topics.items()], request_timeout=30)
        for future in futures.values():
            future.result(timeout)
        deadline = time.monotonic() + timeout
        for topic in self.topics:
            for partition in range(PARTITIONS):
                while self.state.leader_of(topic, partition) < 0:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"no leader for {topic}-{partition}")
                    time.sleep(0.2)

    def spawn(self, target, *args) -> None:
        thread = threading.Thread(target=self._guarded, args=(target, *args), daemon=True,
                                  name=f"{self.name}-{target.__name__}-{len(self.threads)}")
        self.threads.append(thread)
        thread.start()

    def _guarded(self, target, *args) -> None:
        try:
            target(*args)
        except Exception as error:  # noqa: BLE001 - a client thread's crash is a result, not a hang
            self.errors.append(f"{target.__name__}{args}: {error!r}")

    def start(self) -> None:
        self.spawn(self.watch_leaders)

    def stop(self, timeout: float = 60.0) -> None:
        """Stops the clients; one stuck in a call (a transaction waiting for a coordinator) is left
        behind after `timeout` (the threads are daemons) and its operation stays unfinished."""
        self.stopping.set()
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        self.state.close()

    # -- shared pieces --------------------------------------------------------------------------------
    def watch_leaders(self) -> None:
        last: dict[tuple, tuple] = {}
        topics = list(self.topics) + ["__consumer_offsets"]
        while not self.stopping.wait(0.25):
            for topic in topics:
                for partition in range(PARTITIONS):
                    invoked = self.history.now()
                    state = self.state.partition_state(topic, partition)
                    if state is None:
                        continue
                    if last.get((topic, partition)) != state["version"]:
                        last[(topic, partition)] = state["version"]
                        self.history.record("leader", "zk-monitor", invoked, topic=topic, partition=partition,
                                            leader=state["leader"], epoch=state["leader_epoch"], isr=state["isr"],
                                            version=state["version"])

    def produce_loop(self, name: str, topic: str) -> None:
        """An idempotent acks=all producer sending `<name>:<seq>` round-robin over the partitions.
        A producer that hits a fatal error is replaced by a new one (new name, so its sequence
        numbers start a new order)."""
        generation = 0
        while not self.stopping.is_set():
            process = f"{name}.{generation}" if generation else name
            self._produce_with(process, topic)
            generation += 1

    def _produce_with(self, process: str, topic: str) -> None:
        fatal = threading.Event()

        def on_error(error: KafkaError) -> None:
            if error.fatal():
                self.errors.append(f"{process}: {error}")
                fatal.set()

        # librdkafka's default message.timeout.ms (300 s): a message that times out makes librdkafka
        # bump the producer's epoch and send its queued retries again from sequence 0, so records the
        # broker already has are written twice, by Kafka as by us (compat/idempotent_epoch_bump.py,
        # compat/faults-results/NOTES.md); with a timeout longer than the faults, retries keep their
        # epoch and sequence and the broker's deduplication is what the checker sees.
        producer = Producer(self.producer_config(process, **{
            "enable.idempotence": True, "acks": "all", "linger.ms": 5, "message.timeout.ms": 300000,
            "request.timeout.ms": 5000, "error_cb": on_error}))
        sequence = 0
        interval = 1.0 / self.rate
        next_send = time.monotonic()
        while not self.stopping.is_set() and not fatal.is_set():
            partition = sequence % PARTITIONS
            value = f"{process}:{sequence}"
            invoked = self.history.now()

            def delivered(error, message, value=value, partition=partition, invoked=invoked):
                if error is None:
                    self.history.record("send", process, invoked, topic=topic, partition=message.partition(),
                                        value=value, status="ok", offset=message.offset())
                else:
                    self.history.record("send", process, invoked, topic=topic, partition=partition, value=value,
                                        status="info", error=error.name())
            try:
                producer.produce(topic, value=value.encode(), partition=partition, on_delivery=delivered)
            except BufferError:
                producer.poll(0.1)
                continue
            sequence += 1
            next_send = max(next_send + interval, time.monotonic() - 1.0)  # no burst after a stall
            while (wait := next_send - time.monotonic()) > 0:
                producer.poll(wait)
        # Let what is in flight finish (the faults are healed by now), then give up on the rest:
        # purged messages are reported through `delivered` as errors, i.e. unknown.
        producer.flush(30)
        producer.purge()
        producer.flush(5)

    def read_loop(self, name: str, topics: list[str], isolation: str) -> None:
        """An assign-mode reader of every partition from the beginning."""
        consumer = Consumer(self.client_config(**{
            "group.id": f"{name}-unused", "enable.auto.commit": False, "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest", "isolation.level": isolation}))
        partitions = [TopicPartition(t, p, OFFSET_BEGINNING) for t in topics for p in range(PARTITIONS)]
        consumer.assign(partitions)
        self.history.record("assign", name, partitions=[[t.topic, t.partition] for t in partitions])
        try:
            while not self.stopping.is_set():
                self._poll(consumer, name, isolation)
        finally:
            consumer.close()

    def _poll(self, consumer: Consumer, process: str, isolation: str, batch: int = 200) -> list:
        invoked = self.history.now()
        messages = consumer.consume(batch, 0.5)
        records = [[m.topic(), m.partition(), m.offset(), m.value().decode()]
                   for m in messages if m.error() is None and m.value() is not None]
        if records:
            self.history.record("poll", process, invoked, isolation=isolation, records=records)
        return records

    def watch_committed(self, topic: str) -> None:
        consumer = Consumer(self.client_config(**{"group.id": self.group, "enable.auto.commit": False}))
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        try:
            while not self.stopping.wait(0.5):
                invoked = self.history.now()
                try:
                    answer = consumer.committed(partitions, timeout=5)
                except KafkaException:
                    continue
                offsets = [[tp.topic, tp.partition, tp.offset] for tp in answer if tp.error is None and tp.offset >= 0]
                if offsets:
                    self.history.record("committed", "offset-monitor", invoked, group=self.group, offsets=offsets)
        finally:
            consumer.close()

    def drain(self, topics: list[str], isolation: str, timeout: float = 60.0) -> bool:
        """After the faults: a fresh reader reads every partition to its high watermark. Under
        read_committed it gets there once no transaction is open in the partition (the last stable
        offset has reached the high watermark): a transaction a client left open is aborted by its
        coordinator after transaction.timeout.ms, so `timeout` must allow for that. The high
        watermark is asked for with read_uncommitted: librdkafka's watermark query under
        read_committed answers the last stable offset, and reading only to there would miss
        committed records behind a transaction still open. True when it got there."""
        name = "final"
        consumer = Consumer(self.client_config(**{
            "group.id": "final-unused", "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "isolation.level": isolation}))
        watermarks = consumer if isolation == "read_uncommitted" else Consumer(self.client_config(**{
            "group.id": "final-unused", "enable.auto.commit": False, "isolation.level": "read_uncommitted"}))
        deadline = time.monotonic() + timeout
        try:
            ends: dict[tuple, int] = {}
            for topic in topics:
                for partition in range(PARTITIONS):
                    while True:
                        try:
                            _, high = watermarks.get_watermark_offsets(TopicPartition(topic, partition), timeout=5)
                            ends[(topic, partition)] = high
                            break
                        except KafkaException:
                            if time.monotonic() > deadline:
                                return False
                            time.sleep(0.5)
            consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in ends])
            self.history.record("assign", name, partitions=[list(tp) for tp in ends])
            position = {tp: 0 for tp in ends}
            while any(position[tp] < ends[tp] for tp in ends):
                if time.monotonic() > deadline:
                    return False
                for topic, partition, offset, _ in self._poll(consumer, name, isolation, 1000):
                    position[(topic, partition)] = max(position[(topic, partition)], offset + 1)
                # Control records and aborted batches leave gaps: ask where the consumer stands.
                for tp in consumer.position([TopicPartition(t, p) for t, p in ends]):
                    if tp.offset >= 0:
                        position[(tp.topic, tp.partition)] = max(position[(tp.topic, tp.partition)], tp.offset)
            self.history.record("final", name, isolation=isolation,
                                reached=[[t, p, ends[(t, p)]] for t, p in ends])
            return True
        finally:
            consumer.close()
            if watermarks is not consumer:
                watermarks.close()

    def wait_until_healthy(self, timeout: float = 90.0) -> bool:
        """Every partition of our topics has a leader and a full ISR again (after heal and restarts)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = [self.state.partition_state(t, p) for t in self.topics for p in range(PARTITIONS)]
            if all(s is not None and s["leader"] >= 0 and len(s["isr"]) == 3 for s in states):
                return True
            time.sleep(0.5)
        return False


class QueueWorkload(Workload):
    name = "queue"
    topics = {"queue": {"min.insync.replicas": "2"}}
    producers = 2
    group_consumers = 2

    def start(self) -> None:
        super().start()
        for i in range(self.producers):
            self.spawn(self.produce_loop, f"p{i}", "queue")
        self.spawn(self.read_loop, "reader", ["queue"], "read_uncommitted")
        for i in range(self.group_consumers):
            self.spawn(self.group_loop, f"c{i}")
        self.spawn(self.watch_committed, "queue")

    def group_loop(self, name: str) -> None:
        """A consumer in the group, committing what it read (synchronously) after every batch."""
        def on_assign(consumer, partitions):
            self.history.record("assign", name, partitions=[[tp.topic, tp.partition] for tp in partitions])

        consumer = Consumer(self.client_config(**{
            "group.id": self.group, "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000, "isolation.level": "read_uncommitted"}))
        consumer.subscribe(["queue"], on_assign=on_assign, on_revoke=on_assign, on_lost=on_assign)
        try:
            while not self.stopping.is_set():
                records = self._poll(consumer, name, "read_uncommitted")
                if not records:
                    continue
                upto: dict[tuple, int] = {}
                for topic, partition, offset, _ in records:
                    upto[(topic, partition)] = max(upto.get((topic, partition), -1), offset + 1)
                offsets = [[t, p, o] for (t, p), o in upto.items()]
                invoked = self.history.now()
                try:
                    consumer.commit(offsets=[TopicPartition(t, p, o) for t, p, o in offsets], asynchronous=False)
                    status = "ok"
                except KafkaException:
                    status = "info"
                self.history.record("commit", name, invoked, group=self.group, offsets=offsets, status=status)
        finally:
            with contextlib.suppress(KafkaException, RuntimeError):
                consumer.close()

    def finish(self) -> bool:
        healthy = self.wait_until_healthy()
        return self.drain(["queue"], "read_uncommitted") and healthy


class TransactionsWorkload(Workload):
    name = "txn"
    topics = {"txn-in": {"min.insync.replicas": "2"}, "txn-out": {"min.insync.replicas": "2"}}
    group = "txn-group"
    watched_topic = "txn-out"
    processors = 2
    abort_ratio = 0.2

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rng = random.Random()

    def start(self) -> None:
        super().start()
        self.spawn(self.produce_loop, "feed", "txn-in")
        for i in range(self.processors):
            self.spawn(self.process_loop, i)
        self.spawn(self.read_loop, "rc-reader", ["txn-out"], "read_committed")
        self.spawn(self.read_loop, "ru-reader", ["txn-out"], "read_uncommitted")

    def process_loop(self, index: int) -> None:
        """Read-process-write: each input value becomes two writes to txn-out (partitions chosen by the
        input's sequence), committed with the input offsets in one transaction; some aborted."""
        consumer = Consumer(self.client_config(**{
            "group.id": self.group, "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "isolation.level": "read_committed", "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000}))
        consumer.subscribe(["txn-in"])
        generation = 0
        try:
            while not self.stopping.is_set():
                process = f"tx{index}.{generation}" if generation else f"tx{index}"
                self._transact_with(process, f"kafka-wire-faults-tx{index}", consumer)
                generation += 1
        finally:
            with contextlib.suppress(KafkaException, RuntimeError):
                consumer.close()

    def _transact_with(self, process: str, transactional_id: str, consumer: Consumer) -> None:
        producer = Producer(self.producer_config(process, **{
            "transactional.id": transactional_id, "acks": "all", "linger.ms": 5,
            "transaction.timeout.ms": 30000, "message.timeout.ms": 20000, "request.timeout.ms": 5000}))
        try:
            producer.init_transactions(60)
        except KafkaException as error:
            self.errors.append(f"{process} init_transactions: {error}")
            time.sleep(1)
            return
        sequence = 0
        while not self.stopping.is_set():
            messages = [m for m in consumer.consume(20, 0.5) if m.error() is None]
            if not messages:
                continue
            invoked = self.history.now()
            writes: list[list] = []
            status, commit_time = "info", None
            abort = self.rng.random() < self.abort_ratio
            try:
                producer.begin_transaction()
                for message in messages:
                    for partition in {sequence % PARTITIONS, (sequence + 1) % PARTITIONS}:
                        value = f"{process}:{sequence}"
                        sequence += 1
                        writes.append(["txn-out", partition, value])
                        producer.produce("txn-out", value=value.encode(), partition=partition)
                if abort:
                    # Written first, so the aborted records are in the log for readers to (not) see;
                    # abort_transaction alone would purge them from the client's queue unsent.
                    producer.flush(10)
                    commit_time = self.history.now()
                    producer.abort_transaction(10)
                    status = "abort"
                else:
                    producer.send_offsets_to_transaction(
                        consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 10)
                    commit_time = self.history.now()
                    producer.commit_transaction(10)
                    status = "commit"
            except KafkaException as error:
                failure = error.args[0]
                if failure.txn_requires_abort():
                    try:
                        commit_time = self.history.now()
                        producer.abort_transaction(10)
                        status = "abort"
                    except KafkaException:
                        status = "info"
                if failure.fatal() or status == "info":
                    self.history.record("txn", process, invoked, txn=f"{process}/{len(writes)}@{invoked}",
                                        status=status, commit_time=commit_time, writes=writes,
                                        error=str(failure))
                    self._rewind(consumer)
                    return  # a new producer (same transactional.id fences this one)
            self.history.record("txn", process, invoked, txn=f"{process}@{invoked}", status=status,
                                commit_time=commit_time, writes=writes)
            if status != "commit":
                self._rewind(consumer)

    def _rewind(self, consumer: Consumer) -> None:
        """After an abort the input is read again from the group's committed offsets."""
        assigned = consumer.assignment()
        if not assigned:
            return
        try:
            for tp in consumer.committed(assigned, timeout=10):
                consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))
        except KafkaException:
            pass

    def finish(self) -> bool:
        healthy = self.wait_until_healthy()
        # A transaction a processor left open (stopped mid-transaction) keeps the last stable offset
        # back until its coordinator aborts it: transaction.timeout.ms (30 s) plus Kafka's check
        # interval (transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s).
        return self.drain(["txn-in", "txn-out"], "read_committed", timeout=120.0) and healthy


class ShareWorkload(Workload):
    name = "share"
    topics = {"shared": {"min.insync.replicas": "2"}}
    group = "fault-share"
    watched_topic = "shared"
    # Short acquisition locks: the records a consumer held when its commit failed come back within
    # seconds; a few state partitions, as the fault cluster has a few offsets partitions.
    broker_config = {"group.share.min.record.lock.duration.ms": 1000, "group.share.record.lock.duration.ms": 3000,
                     "share.coordinator.state.topic.num.partitions": 3}
    share_consumers = 3

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # The share consumers outlive stop(): they accept what the final read found.
        self.share_stopping = threading.Event()
        self.share_threads: list[threading.Thread] = []
        # Errors the share consumers' polls raised (they went on), by error name; in client_errors.
        self.share_poll_errors: dict[str, int] = {}
        self.share_poll_errors_lock = threading.Lock()

    def setup(self, timeout: float = 60.0) -> None:
        super().setup(timeout)
        admin = AdminClient(self.client_config())
        resource = ConfigResource("GROUP", self.group, incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout)

    def start(self) -> None:
        super().start()
        self.spawn(self.produce_loop, "p0", "shared")
        for i in range(self.share_consumers):
            thread = threading.Thread(target=self._guarded, args=(self.share_loop, f"s{i}"), daemon=True,
                                      name=f"{self.name}-share_loop-{i}")
            self.share_threads.append(thread)
            thread.start()

    def share_loop(self, name: str) -> None:
        from confluent_kafka import AcknowledgeType, ShareConsumer

        consumer = ShareConsumer(self.client_config(**{"group.id": self.group,
                                                       "share.acknowledgement.mode": "explicit"}))
        consumer.subscribe(["shared"])
        try:
            while not self.share_stopping.is_set():
                invoked = self.history.now()
                try:
                    messages = [m for m in consumer.poll(0.5) if m.error() is None]
                except KafkaException as error:
                    if error.args and error.args[0].fatal():
                        raise
                    # A consumer error (librdkafka raises a ShareFetch partition error it has no
                    # handling for, e.g. COORDINATOR_NOT_AVAILABLE while the share coordinator
                    # moves) is not fatal: the consumer goes on, as an application would.
                    self.history.record("share-poll-error", name, invoked, group=self.group,
                                        error=str(error.args[0] if error.args else error))
                    with self.share_poll_errors_lock:
                        code = error.args[0].name() if error.args else repr(error)
                        self.share_poll_errors[code] = self.share_poll_errors.get(code, 0) + 1
                    continue
                if not messages:
                    continue
                records = [[m.topic(), m.partition(), m.offset(), m.value().decode()] for m in messages]
                self.history.record("share-deliver", name, invoked, group=self.group, records=records)
                for m in messages:
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                invoked = self.history.now()
                try:
                    results = consumer.commit_sync(10) or {}
                except KafkaException:
                    results = {}
                done = {(tp.topic, tp.partition) for tp, error in results.items() if error is None}
                for status, part in (("ok", [r for r in records if (r[0], r[1]) in done]),
                                     ("info", [r for r in records if (r[0], r[1]) not in done])):
                    if part:
                        self.history.record("share-accept", name, invoked, group=self.group, status=status,
                                            records=part)
        finally:
            with contextlib.suppress(KafkaException, RuntimeError):
                consumer.close()

    def share_offsets(self) -> dict[tuple, tuple[int, int]] | None:
        """{(topic, partition): (start offset, lag)} of the group's share-partitions of `shared`,
        from the broker coordinating the group (the others answer NOT_COORDINATOR); None when none
        answered."""
        from client import WireClient

        request = {"groups": [{"group_id": self.group, "topics": [
            {"topic_name": "shared", "partitions": list(range(PARTITIONS))}]}]}
        for broker in self.cluster.brokers.values():
            try:
                with WireClient(broker.bootstrap, timeout=5) as client:
                    [group] = client.call("DescribeShareGroupOffsets", 1, request).groups
            except (OSError, ConnectionError, TimeoutError):
                continue
            if group.error_code or not group.topics:
                continue
            parts = group.topics[0].partitions
            if any(p.error_code for p in parts):
                continue
            return {("shared", p.partition_index): (p.start_offset, p.lag) for p in parts}
        return None

    def finish(self) -> bool:
        healthy = self.wait_until_healthy()
        drained = self.drain(["shared"], "read_uncommitted")
        ends = {}
        for op in self.history.operations:
            if op["f"] == "final":
                ends.update({(t, p): high for t, p, high in op["reached"]})
        deadline = time.monotonic() + 60.0
        offsets = None
        while time.monotonic() < deadline:
            offsets = self.share_offsets()
            if offsets is not None and all(max(start, 0) >= ends.get(tp, 0) and lag <= 0
                                           for tp, (start, lag) in offsets.items()):
                break
            time.sleep(1.0)
        self.share_stopping.set()
        for thread in self.share_threads:
            thread.join(20.0)
        with self.share_poll_errors_lock:
            if self.share_poll_errors:
                self.errors.append("share consumers' polls raised (and they went on): " + ", ".join(
                    f"{code} x{n}" for code, n in sorted(self.share_poll_errors.items())))
        offsets = self.share_offsets() or offsets
        if offsets is not None:
            self.history.record("share-final", "share-monitor", group=self.group,
                                offsets=[[t, p, start, lag] for (t, p), (start, lag) in sorted(offsets.items())])
        return drained and healthy and offsets is not None

    def close(self) -> None:
        self.share_stopping.set()
        super().close()


WORKLOADS = {"queue": QueueWorkload, "txn": TransactionsWorkload, "share": ShareWorkload}

