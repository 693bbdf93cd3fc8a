"""log.flush.on.ack against a broker process: a produce with acks=1 or acks=all is answered only
once its records are on stable storage, which the broker shows as each partition's recovery point
(`kafka_wire_log_recovery_point`: the offset below which the log was fsynced, moved only by a
finished fdatasync or syncfs) in its Prometheus metrics. With the key off, as in Kafka, the answer
comes from the page cache and the recovery point stays where it was.

Runs with one worker process or several (KAFKA_WIRE_TEST_WORKERS=2): the metrics add up every
worker's partitions and syncs.
"""

from __future__ import annotations

import pytest

from client import WireClient
from kafka_wire.record_codec import Record, build_batch
from testing.broker_process import free_port, running_broker
from test_metrics import scrape, value

pytestmark = pytest.mark.timeout(120)

PARTITIONS = 8


def _produce(client: WireClient, topic: str, partitions: range, acks: int, records: int = 1) -> list[tuple[int, int]]:
    """One Produce request, one batch per partition; the (error, base offset) of each."""
    batch = build_batch([Record(i, 0, None, b"r" * 200) for i in range(records)])
    response = client.call("Produce", 9, {"acks": acks, "timeout_ms": 10000, "topic_data": [
        {"name": topic, "partition_data": [{"index": p, "records": batch} for p in partitions]}]},
        expect_response=acks != 0)
    if acks == 0:
        return []
    return [(entry.error_code, entry.base_offset) for entry in response.responses[0].partition_responses]


def _create(client: WireClient, topic: str) -> None:
    response = client.call("CreateTopics", 7, {"topics": [{"name": topic, "num_partitions": PARTITIONS,
                                                           "replication_factor": 1}], "timeout_ms": 10000})
    assert response.topics[0].error_code == 0


def _recovery_point(samples, topic: str, partition: int) -> float:
    return value(samples, "kafka_wire_log_recovery_point", topic=topic, partition=str(partition))


def _broker(tmp_path, **config):
    port = free_port()
    broker = running_broker(tmp_path, config={"metrics.port": port, **config})
    return broker, port


def test_an_acknowledged_record_was_synced_before_the_answer(tmp_path):
    broker_context, port = _broker(tmp_path)
    with broker_context as broker, WireClient(broker.bootstrap) as client:
        _create(client, "durable")
        # One partition at a time (fdatasync of its segment), both acks that wait.
        for acks, records in ((1, 3), (-1, 2), (1, 1)):
            [(error, base)] = _produce(client, "durable", range(1), acks, records)
            assert error == 0
            samples = scrape(port)
            # Scraped after the answer: had it come before the sync, the recovery point would lag.
            assert _recovery_point(samples, "durable", 0) >= base + records, (acks, base)
        assert value(scrape(port), "kafka_wire_log_syncs_total") >= 1


def test_a_request_over_many_partitions_is_synced_with_one_filesystem_sync(tmp_path):
    broker_context, port = _broker(tmp_path)
    with broker_context as broker, WireClient(broker.bootstrap) as client:
        _create(client, "wide")
        before = scrape(port)
        answers = _produce(client, "wide", range(PARTITIONS), 1, records=4)
        assert [error for error, _ in answers] == [0] * PARTITIONS
        after = scrape(port)
        for partition, (_, base) in enumerate(answers):
            assert _recovery_point(after, "wide", partition) >= base + 4
        # A worker holding SYNCFS_FROM_DIRTY_LOGS (4) or more of them made those durable with one
        # syncfs: with one worker or two (KAFKA_WIRE_TEST_WORKERS=2), one holds 4 of the 8 at least.
        moved = value(after, "kafka_wire_log_filesystem_syncs_total") - value(before, "kafka_wire_log_filesystem_syncs_total")
        assert moved >= 1
        assert value(after, "kafka_wire_log_synced_partitions_total") - value(
            before, "kafka_wire_log_synced_partitions_total") == PARTITIONS


def test_with_the_key_off_the_answer_comes_from_the_page_cache(tmp_path):
    """Kafka's behaviour: nothing is fsynced for the answer (no flush.messages, no flush.ms set)."""
    broker_context, port = _broker(tmp_path, **{"log.flush.on.ack": "false"})
    with broker_context as broker, WireClient(broker.bootstrap) as client:
        _create(client, "cached")
        for acks in (1, -1):
            answers = _produce(client, "cached", range(PARTITIONS), acks, records=2)
            assert [error for error, _ in answers] == [0] * PARTITIONS
        samples = scrape(port)
        assert [_recovery_point(samples, "cached", p) for p in range(PARTITIONS)] == [0] * PARTITIONS
        assert value(samples, "kafka_wire_log_syncs_total") == 0


def test_acks_zero_waits_for_no_sync_and_the_next_acknowledged_produce_covers_it(tmp_path):
    broker_context, port = _broker(tmp_path)
    with broker_context as broker, WireClient(broker.bootstrap) as client:
        _create(client, "quiet")
        _produce(client, "quiet", range(1), 1)
        syncs = value(scrape(port), "kafka_wire_log_syncs_total")
        _produce(client, "quiet", range(1), 0, records=5)  # no answer
        [(error, base)] = _produce(client, "quiet", range(1), 1)
        assert error == 0 and base == 6  # the acks=0 records are in the log before it
        samples = scrape(port)
        assert value(samples, "kafka_wire_log_syncs_total") == syncs + 1  # none for the acks=0 produce
        assert _recovery_point(samples, "quiet", 0) == 7  # everything below the acknowledged record


def test_pipelined_produce_requests_share_syncs_and_are_answered_in_order(tmp_path):
    """A client's Produce requests sent without waiting (librdkafka's and Java's in-flight requests):
    while one waits for its sync the connection appends the next (broker/server.py), so one sync
    covers many, and the answers still come in request order, a Metadata request among them after
    the Produce requests before it."""
    import struct

    broker_context, port = _broker(tmp_path)
    with broker_context as broker, WireClient(broker.bootstrap) as client:
        _create(client, "pipelined")
        batch = build_batch([Record(0, 0, None, b"p" * 500)])
        before = value(scrape(port), "kafka_wire_log_syncs_total")
        frames, ids = [], []
        for i in range(20):
            if i == 12:
                frames.append(client.frame("Metadata", 9, {"topics": [{"name": "pipelined"}],
                                                           "allow_auto_topic_creation": False}))
            else:
                frames.append(client.frame("Produce", 9, {"acks": 1, "timeout_ms": 10000, "topic_data": [
                    {"name": "pipelined", "partition_data": [{"index": 0, "records": batch}]}]}))
            ids.append(client.correlation_id)
        client.send_raw(b"".join(frames))  # all at once: they are in the broker's buffer together
        answers = [client.read_frame() for _ in frames]
        assert [struct.unpack_from(">i", frame, 0)[0] for frame in answers] == ids  # (each starts with it)
        offsets = []
        for i, frame in enumerate(answers):
            if i == 12:
                continue
            client.correlation_id = ids[i]
            entry = client.decode_response("Produce", 9, frame).responses[0].partition_responses[0]
            assert entry.error_code == 0
            offsets.append(entry.base_offset)
        assert offsets == list(range(19))
        after = scrape(port)
        assert _recovery_point(after, "pipelined", 0) >= 19
        # 19 acknowledgements, far fewer syncs (one per request when each waited for the last).
        assert value(after, "kafka_wire_log_syncs_total") - before <= 10


def test_committed_offsets_and_the_transaction_log_are_synced_before_the_answer(tmp_path):
    """The coordinators' writes are acknowledgements too: an OffsetCommit, and each transaction
    request that wrote __transaction_state (InitProducerId, AddPartitionsToTxn, EndTxn), is
    answered once its internal partition's records are synced (their recovery point covers them),
    and a transaction's markers are synced before it completes."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    broker_context, port = _broker(tmp_path)
    with broker_context as broker:
        with WireClient(broker.bootstrap) as client:
            _create(client, "committed")
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "durable-txn"})
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce("committed", value=b"in a transaction", partition=0)
        producer.commit_transaction(30)
        samples = scrape(port)
        # The COMMIT marker (after the record) was synced before the transaction completed, and
        # EndTxn was answered after that.
        assert value(samples, "kafka_wire_log_end_offset", topic="committed", partition="0") == 2
        assert value(samples, "kafka_wire_log_recovery_point", topic="committed", partition="0") == 2
        ends = {s: v for s, v in samples.items() if s[0] == "kafka_wire_log_end_offset"
                and dict(s[1]).get("topic") == "__transaction_state" and v > 0}
        assert ends, "the transaction log was written"
        for (_, labels), end in ends.items():
            partition = dict(labels)["partition"]
            # All but the transaction's last record (CompleteCommit, written after the markers
            # without an answer to wait for it; PrepareCommit before it was synced).
            assert value(samples, "kafka_wire_log_recovery_point", topic="__transaction_state",
                         partition=partition) >= end - 1
        producer.flush(10)
        consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "durable-group",
                                             "enable.auto.commit": False})
        consumer.assign([confluent_kafka.TopicPartition("committed", 0, 1)])
        consumer.commit(offsets=[confluent_kafka.TopicPartition("committed", 0, 1)], asynchronous=False)
        samples = scrape(port)
        written = [(dict(s[1])["partition"], v) for s, v in samples.items() if s[0] == "kafka_wire_log_end_offset"
                   and dict(s[1]).get("topic") == "__consumer_offsets" and v > 0]
        assert written, "the commit was written"
        for partition, end in written:
            assert value(samples, "kafka_wire_log_recovery_point", topic="__consumer_offsets",
                         partition=partition) >= end
        consumer.close()
