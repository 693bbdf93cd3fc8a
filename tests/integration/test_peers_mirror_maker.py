"""MirrorMaker 2 (connect-mirror from Maven Central) between the reference Apache Kafka and kafka-wire,
both ways: the migration path users take.

One dedicated MirrorMaker process (clusters "kafka" and "wire") replicates a topic of Kafka's to
kafka-wire (as "kafka.<topic>") and a topic of kafka-wire's to Kafka (as "wire.<topic>"), each with a
consumer group's committed offsets: MirrorCheckpointConnector translates them through the offset
syncs and (sync.group.offsets.enabled) commits them on the other side. Then every record must have
arrived, and a consumer of the same group moved to the other side (auto.offset.reset=error: it
must find committed offsets) resumes at most a few records before where the group stopped, never
after it, and reads everything from there on.

CI runs it with MirrorMaker 4.3.0 against Kafka 4.3.0; KW_SLOW=1 adds MirrorMaker 3.9.1 against Kafka 3.9.1.
"""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from testing.broker_process import BrokerProcess
from compat import peers
from compat.reference_kafka import KAFKA_3, KAFKA_4
from tests.integration.peers_helpers import (TopicReader, create_topics, produce, producer_for, require_peers,
                                              topic_names)

SLOW = os.environ.get("KW_SLOW") == "1"
PARTITIONS = 3
RECORDS = 900
OFFSET_LAG_MAX = 10
# Where the group stopped, per partition (of RECORDS // PARTITIONS each).
COMMITTED = (287, 263, 299)
COORDINATOR_NOT_READY = {KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE,
                         KafkaError.NOT_COORDINATOR}


def replay_max(partition: int) -> int:
    """The most records a consumer moved across may read again. MirrorMaker translates a group's offset
    to the last offset sync at or before it (plus one); syncs come every offset.lag.max records, and
    its sync store keeps fewer of them the further they are behind the newest (KIP-937): one lies
    within the group's distance from the end of the partition."""
    return (RECORDS // PARTITIONS - COMMITTED[partition]) + OFFSET_LAG_MAX


def commit_offsets(bootstrap: str, group: str, topic: str) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        for attempt in range(60):
            try:
                consumer.commit(offsets=[TopicPartition(topic, p, COMMITTED[p]) for p in range(PARTITIONS)],
                                asynchronous=False)
                return
            except KafkaException as error:
                # A fresh broker creates __consumer_offsets on the first use: NOT_COORDINATOR or
                # COORDINATOR_LOAD_IN_PROGRESS for a moment, retriable (librdkafka leaves it to us).
                if error.args[0].code() not in COORDINATOR_NOT_READY or attempt == 59:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()


def committed(bootstrap: str, group: str, topic: str) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return [tp.offset for tp in consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)],
                                                       timeout=30)]
    finally:
        consumer.close()


def resume(bootstrap: str, group: str, topic: str) -> dict[int, list[tuple[int, str]]]:
    """A consumer of `group` subscribed to `topic`, from its committed offsets to the end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "error", "isolation.level": "read_committed"})
    read: dict[int, list[tuple[int, str]]] = {p: [] for p in range(PARTITIONS)}
    consumer.subscribe([topic])
    deadline = time.monotonic() + 120
    try:
        while sum(len(r) for r in read.values()) < RECORDS - sum(COMMITTED) and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=0.5):
                assert not message.error(), f"{group} on {topic}: {message.error()}"
                read[message.partition()].append((message.offset(), message.value().decode()))
        time.sleep(1)
        for message in consumer.consume(500, timeout=1):
            assert not message.error(), f"{group} on {topic}: {message.error()}"
            read[message.partition()].append((message.offset(), message.value().decode()))
    finally:
        consumer.close()
    return read


def source_values(topic: str) -> dict[int, list[str]]:
    values: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    for i in range(RECORDS):
        values[i % PARTITIONS].append(f"{topic}-{i}")
    return values


@pytest.mark.parametrize("version", [KAFKA_4, pytest.param(KAFKA_3, marks=pytest.mark.skipif(
    not SLOW, reason="MirrorMaker 3.9 with Kafka 3.9: KW_SLOW=1"))])
def test_mirror_maker_replicates_topics_and_translates_group_offsets_both_ways(version, reference_kafka, tmp_path):
    require_peers(version)
    kafka = reference_kafka(version)
    broker = BrokerProcess(tmp_path / "broker", config={"group.initial.rebalance.delay.ms": 0}, startup_timeout=60)
    broker.start()
    clusters = {"kafka": kafka.bootstrap, "wire": broker.bootstrap}
    topics = {"kafka": "mm-orders", "wire": "mm-payments"}
    groups = {"kafka": "mm-group-orders", "wire": "mm-group-payments"}
    other = {"kafka": "wire", "wire": "kafka"}
    mirror = None
    try:
        for alias, bootstrap in clusters.items():
            create_topics(bootstrap, {topics[alias]: PARTITIONS})

        settings = {
            "clusters": "kafka, wire",
            "kafka.bootstrap.servers": kafka.bootstrap,
            "wire.bootstrap.servers": broker.bootstrap,
            "kafka->wire.enabled": "true", "kafka->wire.topics": topics["kafka"],
            "wire->kafka.enabled": "true", "wire->kafka.topics": topics["wire"],
            "groups": "mm-group-.*",
            "replication.factor": 1, "checkpoints.topic.replication.factor": 1,
            "heartbeats.topic.replication.factor": 1, "offset-syncs.topic.replication.factor": 1,
            "offset.storage.replication.factor": 1, "status.storage.replication.factor": 1,
            "config.storage.replication.factor": 1,
            "sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": 1,
            "emit.checkpoints.interval.seconds": 1, "emit.heartbeats.interval.seconds": 1,
            "refresh.topics.interval.seconds": 2, "refresh.groups.interval.seconds": 2,
            "offset.lag.max": OFFSET_LAG_MAX,
            "offset.flush.interval.ms": 1000,  # delayed offset syncs are sent at each offset flush
            "plugin.discovery": "service_load",
        }
        properties = peers.write_properties(tmp_path / "mm2.properties", settings)
        mirror = peers.JavaProcess("MirrorMaker 2", peers.java_command(version, peers.MIRROR_MAKER, str(properties)),
                                   tmp_path / "mirror-maker.log").start()

        # MirrorMaker is up once it has created both remote topics; then the records arrive while it
        # runs (offset syncs are emitted as they are mirrored, every offset.lag.max records), and each
        # group commits where it stopped, a little behind the end.
        for source, target in other.items():
            remote = f"{source}.{topics[source]}"
            deadline = time.monotonic() + 180
            while remote not in topic_names(clusters[target]):
                if time.monotonic() > deadline or not mirror.is_running():
                    pytest.fail(f"{remote} never created on {target}\n{mirror.log_report()}", pytrace=False)
                time.sleep(1)
        # In small batches, as a live producer writes: MirrorMaker sends an offset sync every
        # offset.lag.max records only while its sync producer keeps up (in one burst, later syncs of a
        # partition replace the pending ones, and offsets before the first sync cannot be translated).
        producers = {alias: producer_for(bootstrap) for alias, bootstrap in clusters.items()}
        for start in range(0, RECORDS, 10 * PARTITIONS):
            for alias, bootstrap in clusters.items():
                topic = topics[alias]
                produce(bootstrap, [(topic, i % PARTITIONS, f"k{i}", f"{topic}-{i}", None)
                                    for i in range(start, min(RECORDS, start + 10 * PARTITIONS))], producers[alias])
            time.sleep(0.1)

        for source, target in other.items():
            remote = f"{source}.{topics[source]}"
            reader = TopicReader(clusters[target], {remote: PARTITIONS})
            try:
                reader.wait_for(lambda: reader.count(remote) >= RECORDS, f"{remote} complete on {target}", 180,
                                mirror.log_report)
                reader.read_to_end()
                got = {p: [v for _, v in reader.records[remote][p]] for p in range(PARTITIONS)}
            finally:
                reader.close()
            assert got == source_values(topics[source]), f"{remote} on {target} differs from {topics[source]}"
            commit_offsets(clusters[source], groups[source], topics[source])

            # The group's offsets, translated and committed on the other side.
            group = groups[source]
            deadline = time.monotonic() + 180
            while True:
                translated = committed(clusters[target], group, remote)
                if all(offset >= 0 for offset in translated):
                    break
                if time.monotonic() > deadline or not mirror.is_running():
                    pytest.fail(f"{group}'s offsets never reached {target} (committed there: {translated})\n"
                                f"{mirror.log_report()}", pytrace=False)
                time.sleep(1)
            resumed = resume(clusters[target], group, remote)
            expected = source_values(topics[source])
            for p in range(PARTITIONS):
                first = translated[p]
                assert first <= COMMITTED[p], f"{group} on {target}, partition {p}: resumed at {first}, after " \
                                              f"{COMMITTED[p]} where it stopped: records lost"
                assert COMMITTED[p] - first <= replay_max(p), \
                    f"{group} on {target}, partition {p}: resumed at {first}, {COMMITTED[p] - first} records " \
                    f"before where it stopped ({COMMITTED[p]})"
                assert [(o, v) for o, v in resumed[p]] == list(enumerate(expected[p]))[first:], \
                    f"{group} on {target}, partition {p}: not every record from {first} on was read"
        assert mirror.is_running(), mirror.log_report()
    except BaseException as error:
        error.add_note(mirror.log_report() if mirror else "(no MirrorMaker)")
        error.add_note(broker.log_report())
        raise
    finally:
        if mirror:
            mirror.stop()
        problems = broker.finish()
    assert not problems, problems
