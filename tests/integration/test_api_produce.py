"""Produce as Apache Kafka answers it, request by request (WireClient sends the exact bytes).

Sources (apache/kafka): core/.../server/KafkaApis.scala handleProduceRequest, ReplicaManager.scala
appendRecords/appendToLocalLog, clients/.../requests/ProduceRequest.java validateRecords,
storage/.../log/LogValidator.java, storage/.../log/ProducerAppendInfo.java.
"""

from __future__ import annotations

import struct
import time
import uuid
import zlib

import pytest

from testing.broker_process import running_broker
from client import ConnectionClosed, WireClient
from kafka_wire.compression import CompressionType

from wire_cases import (
    batch, batches_of, consumed, create_topic, describe_topic_configs, error_name, fetch, init_producer_id,
    log_end_offset, metadata, now_ms, produce, read_all, topic_id, unique,
)


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap) as c:
        yield c


def _legacy_message(magic: int, value: bytes) -> bytes:
    """A message set entry of the pre-0.11 formats (magic 0, or 1 with a timestamp)."""
    body = struct.pack(">bb", magic, 0)
    if magic == 1:
        body += struct.pack(">q", now_ms())
    body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(message)) + message


# -- acks -------------------------------------------------------------------------------------------


def test_acks_0_gets_no_response_and_the_next_answer_carries_its_own_correlation_id(client):
    """Kafka sends nothing back for acks=0 (KafkaApis: sendNoOpResponseExemptThrottle); the next
    response on the connection is the next request's."""
    topic = unique("acks0")
    create_topic(client, topic)
    client.call("Produce", 9, {"acks": 0, "timeout_ms": 1000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch([b"fire-and-forget"])}]}]},
        expect_response=False)
    produce_correlation_id = client.correlation_id
    answer = metadata(client, [topic])  # WireClient checks the answer's correlation id is this request's
    assert client.correlation_id == produce_correlation_id + 1
    assert answer.topics[0].error_code == 0
    assert [r[3] for r in read_all(client, topic)] == [b"fire-and-forget"]


def test_acks_0_error_closes_the_connection(client):
    """acks=0 has no response to carry an error, so Kafka closes the connection instead
    (KafkaApis: "Closing connection due to error during produce request ... with ack=0")."""
    client.call("Produce", 9, {"acks": 0, "timeout_ms": 1000, "topic_data": [
        {"name": unique("missing"), "partition_data": [{"index": 0, "records": batch([b"x"])}]}]},
        expect_response=False)
    with pytest.raises((ConnectionClosed, ConnectionResetError)):
        metadata(client, None)


@pytest.mark.parametrize("acks", [1, -1])
def test_acks_1_and_all_answer_base_offsets(client, acks):
    topic = unique("acks")
    create_topic(client, topic)
    first = produce(client, topic, batch([b"a", b"b", b"c"]), acks=acks)
    second = produce(client, topic, batch([b"d"]), acks=acks)
    assert (first.error_code, first.base_offset, first.log_start_offset) == (0, 0, 0)
    assert (second.error_code, second.base_offset) == (0, 3)
    assert first.log_append_time_ms == -1  # CreateTime topic
    assert [r[3] for r in read_all(client, topic)] == [b"a", b"b", b"c", b"d"]


def test_invalid_required_acks_appends_nothing(client):
    """acks other than -1, 0, 1: INVALID_REQUIRED_ACKS for every partition that passed the request
    checks (ReplicaManager.appendRecords, isValidRequiredAcks); an unknown partition still says so."""
    topic = unique("acks2")
    create_topic(client, topic)
    response = client.call("Produce", 9, {"acks": 2, "timeout_ms": 1000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch([b"x"])}]},
        {"name": unique("missing"), "partition_data": [{"index": 0, "records": batch([b"y"])}]}]})
    errors = [error_name(t.partition_responses[0].error_code) for t in response.responses]
    assert errors == ["INVALID_REQUIRED_ACKS", "UNKNOWN_TOPIC_OR_PARTITION"]
    assert log_end_offset(client, topic) == 0


# -- where the batch goes ------------------------------------------------------------------------------


def test_unknown_topic_and_partition_out_of_range(client):
    """KafkaApis: a partition the metadata cache does not have is UNKNOWN_TOPIC_OR_PARTITION, with
    -1 offsets; Produce never creates topics."""
    topic = unique("known")
    create_topic(client, topic, partitions=2)
    missing = unique("never-created")
    unknown = produce(client, missing, batch([b"x"]))
    out_of_range = produce(client, topic, batch([b"x"]), partition=2)
    for answer in (unknown, out_of_range):
        assert error_name(answer.error_code) == "UNKNOWN_TOPIC_OR_PARTITION"
        assert (answer.base_offset, answer.log_start_offset) == (-1, -1)
    assert error_name(metadata(client, [missing]).topics[0].error_code) == "UNKNOWN_TOPIC_OR_PARTITION"


def test_v13_names_topics_by_id(client):
    """KIP-516: Produce v13 carries topic ids instead of names and answers with the same ids; an id
    the broker does not know is UNKNOWN_TOPIC_ID (Kafka 4.3 answers so, also for the zero id)."""
    topic = unique("by-id")
    create_topic(client, topic, partitions=2)
    known = topic_id(client, topic)
    unknown = uuid.uuid4()
    response = client.call("Produce", 13, {"transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
        {"topic_id": known, "partition_data": [{"index": 1, "records": batch([b"by id"])},
                                               {"index": 2, "records": batch([b"x"])}]},
        {"topic_id": unknown, "partition_data": [{"index": 0, "records": batch([b"x"])}]},
        {"topic_id": uuid.UUID(int=0), "partition_data": [{"index": 0, "records": batch([b"x"])}]}]})
    assert [t.topic_id for t in response.responses] == [known, unknown, uuid.UUID(int=0)]
    answers = [(p.index, error_name(p.error_code), p.base_offset)
               for t in response.responses for p in t.partition_responses]
    assert answers == [(1, "NONE", 0), (2, "UNKNOWN_TOPIC_OR_PARTITION", -1),
                       (0, "UNKNOWN_TOPIC_ID", -1), (0, "UNKNOWN_TOPIC_ID", -1)]
    assert [r[3] for r in read_all(client, topic, partition=1)] == [b"by id"]
    # The same topic by name at v12 goes to the same log.
    assert produce(client, topic, batch([b"by name"]), partition=1, version=12).base_offset == 1


def test_a_partition_named_twice_appends_the_batch_named_last_and_is_answered_once(client):
    """KafkaApis.handleProduceRequest collects the partitions into a map: the batch named last wins,
    the partition is answered once, the other partitions keep their places."""
    topic = unique("twice")
    create_topic(client, topic, partitions=2)
    response = client.call("Produce", 9, {"transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch([b"first"])},
                                           {"index": 1, "records": batch([b"other"])}]},
        {"name": topic, "partition_data": [{"index": 0, "records": batch([b"last", b"one"])}]}]})
    answers = [(t.name, p.index, error_name(p.error_code), p.base_offset)
               for t in response.responses for p in t.partition_responses]
    assert answers == [(topic, 0, "NONE", 0), (topic, 1, "NONE", 0)]
    assert [r[3] for r in read_all(client, topic)] == [b"last", b"one"]
    assert [r[3] for r in read_all(client, topic, partition=1)] == [b"other"]


@pytest.mark.parametrize("control", [False, True], ids=["data", "control"])
def test_transactional_batch_without_transactional_id_refuses_the_whole_request(client, control):
    """A transactional batch (control or not) in a request without a transactional id: Kafka
    (hasTransactionalRecords, WRITE on the null transactional id) answers every partition of the
    request TRANSACTIONAL_ID_AUTHORIZATION_FAILED with -1 offsets, before any other check, and
    appends nothing, not even the other partitions' plain batches."""
    from kafka_wire.record_codec import ControlRecordType, Record, build_batch, encode_control_key, \
        encode_end_transaction_marker

    topic = unique("txn-no-id")
    create_topic(client, topic, partitions=2)
    if control:
        records = build_batch([Record(0, 0, encode_control_key(ControlRecordType.COMMIT),
                                      encode_end_transaction_marker(0))], base_timestamp=now_ms(),
                              is_control=True, is_transactional=True, producer_id=1, producer_epoch=0)
    else:
        records = batch([b"t"], is_transactional=True, producer_id=1, producer_epoch=0, base_sequence=0)
    response = client.call("Produce", 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch([b"plain"])},
                                           {"index": 1, "records": records}]},
        {"name": unique("missing"), "partition_data": [{"index": 0, "records": batch([b"x"])}]}]})
    answers = [(p.index, error_name(p.error_code), p.base_offset, p.log_start_offset)
               for t in response.responses for p in t.partition_responses]
    assert answers == [(0, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", -1, -1),
                       (1, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", -1, -1),
                       (0, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", -1, -1)]
    assert log_end_offset(client, topic) == 0
    assert log_end_offset(client, topic, partition=1) == 0


def test_writes_to_internal_topics_are_refused(broker):
    """ReplicaManager.appendToLocalLog: "Cannot append to internal topic" is INVALID_TOPIC_EXCEPTION
    unless the client id is Kafka's own admin id (__admin_client)."""
    with WireClient(broker.bootstrap) as client:
        offsets = metadata(client, ["__consumer_offsets"]).topics[0]
        if offsets.error_code:
            create_topic(client, "__consumer_offsets", partitions=1)
        refused = produce(client, "__consumer_offsets", batch([b"x"]))
        assert error_name(refused.error_code) == "INVALID_TOPIC_EXCEPTION"
        assert refused.base_offset == -1
    with WireClient(broker.bootstrap, client_id="__admin_client") as admin:
        assert produce(admin, "__consumer_offsets", batch([b"x"])).error_code == 0


# -- what the batch must be ----------------------------------------------------------------------------


def test_batch_over_topic_max_message_bytes(client):
    """UnifiedLog.analyzeAndValidateRecords: a batch larger than max.message.bytes is
    MESSAGE_TOO_LARGE (RecordTooLargeException), answered without offsets."""
    topic = unique("max-message")
    create_topic(client, topic, configs={"max.message.bytes": 200})
    small, large = batch([b"x" * 50]), batch([b"x" * 300])
    assert len(small) <= 200 < len(large)
    refused = produce(client, topic, large)
    assert error_name(refused.error_code) == "MESSAGE_TOO_LARGE"
    assert (refused.base_offset, refused.log_start_offset) == (-1, -1)
    assert produce(client, topic, small).error_code == 0


def test_batch_over_broker_message_max_bytes(tmp_path):
    """message.max.bytes is the broker-wide default of max.message.bytes."""
    with running_broker(tmp_path, config={"message.max.bytes": 600}) as broker, \
            WireClient(broker.bootstrap) as client:
        topic = unique("broker-max")
        create_topic(client, topic)
        assert error_name(produce(client, topic, batch([b"x" * 700])).error_code) == "MESSAGE_TOO_LARGE"
        assert produce(client, topic, batch([b"x" * 400])).error_code == 0


def test_flipped_crc_byte_is_corrupt_message(client):
    """DefaultRecordBatch.ensureValid: a CRC-32C mismatch is CORRUPT_MESSAGE; nothing is written."""
    topic = unique("crc")
    create_topic(client, topic)
    data = bytearray(batch([b"payload"]))
    data[-2] ^= 0xFF
    assert error_name(produce(client, topic, bytes(data)).error_code) == "CORRUPT_MESSAGE"
    assert log_end_offset(client, topic) == 0


@pytest.mark.parametrize("records", [
    pytest.param(lambda: batch([b"a"]) + batch([b"b"]), id="two-batches"),
    pytest.param(lambda: _legacy_message(0, b"old"), id="magic-0"),
    pytest.param(lambda: _legacy_message(1, b"old"), id="magic-1"),
    pytest.param(lambda: b"", id="no-batch"),
    pytest.param(lambda: batch([b"cut short"])[:-5], id="only-a-partial-batch"),
])
def test_request_record_rules_are_invalid_record(client, records):
    """ProduceRequest.validateRecords (v3+): "must have at least one record batch", "only allowed to
    contain record batches with magic version 2", "exactly one record batch": INVALID_RECORD."""
    topic = unique("one-batch")
    create_topic(client, topic)
    answer = produce(client, topic, records())
    assert error_name(answer.error_code) == "INVALID_RECORD"
    assert answer.base_offset == -1
    assert log_end_offset(client, topic) == 0


def test_zstd_needs_produce_v7(client):
    """ProduceRequest.validateRecords: "Produce requests with version < 7 are not allowed to use
    ZStandard compression" (UNSUPPORTED_COMPRESSION_TYPE)."""
    topic = unique("zstd")
    create_topic(client, topic)
    zstd = batch([b"z"], compression=CompressionType.ZSTD)
    assert error_name(produce(client, topic, zstd, version=6).error_code) == "UNSUPPORTED_COMPRESSION_TYPE"
    assert produce(client, topic, zstd, version=7).error_code == 0


def test_not_enough_replicas_for_acks_all(client):
    """Partition.appendRecordsToLeader: with fewer in-sync replicas than min.insync.replicas, acks=-1
    is NOT_ENOUGH_REPLICAS (with the log start offset); acks=1 does not check it."""
    topic = unique("min-isr")
    create_topic(client, topic, configs={"min.insync.replicas": 2})
    refused = produce(client, topic, batch([b"x"]), acks=-1)
    assert error_name(refused.error_code) == "NOT_ENOUGH_REPLICAS"
    assert (refused.base_offset, refused.log_start_offset) == (-1, 0)
    assert produce(client, topic, batch([b"x"]), acks=1).error_code == 0


# -- topic configs applied to records ----------------------------------------------------------------------


def test_log_append_time_topic(client):
    """LogValidator with message.timestamp.type=LogAppendTime: the batch gets the broker's time as
    its max timestamp and the LogAppendTime attribute; the response says log_append_time_ms."""
    topic = unique("append-time")
    create_topic(client, topic, configs={"message.timestamp.type": "LogAppendTime"})
    before = now_ms()
    answer = produce(client, topic, batch([b"a", b"b"], timestamps=[1000, 2000]))
    after = now_ms()
    assert answer.error_code == 0
    assert before <= answer.log_append_time_ms <= after
    [(header, _)] = batches_of(fetch(client, topic).records)
    assert header.timestamp_type == 1
    assert header.max_timestamp == answer.log_append_time_ms
    assert [r[1] for r in consumed(fetch(client, topic).records)] == [answer.log_append_time_ms] * 2


def test_log_append_time_batch_from_a_producer_is_refused_on_a_log_append_time_topic(client):
    """LogValidator.validateTimestamp: "Producer should not set timestamp type to LogAppendTime"."""
    topic = unique("append-time-producer")
    create_topic(client, topic, configs={"message.timestamp.type": "LogAppendTime"})
    answer = produce(client, topic, batch([b"a", b"b"], timestamp_type=1))
    assert error_name(answer.error_code) == "INVALID_TIMESTAMP"
    assert [e.batch_index for e in answer.record_errors] == [0, 1]


def test_timestamp_before_max_ms(client):
    """LogValidator.validateTimestamp checks every record: older than message.timestamp.before.max.ms
    is INVALID_TIMESTAMP with a record error naming the record, and the whole batch is refused."""
    topic = unique("ts-before")
    create_topic(client, topic, configs={"message.timestamp.before.max.ms": 3_600_000})
    now = now_ms()
    old = produce(client, topic, batch([b"old"], timestamps=[now - 2 * 3_600_000]))
    assert error_name(old.error_code) == "INVALID_TIMESTAMP"
    assert old.error_message == "One or more records have been rejected due to invalid timestamp"
    assert [e.batch_index for e in old.record_errors] == [0]
    assert "is out of range" in old.record_errors[0].batch_index_error_message
    assert (old.base_offset, old.log_start_offset) == (-1, 0)
    # The first record (the batch header's base timestamp) is recent; the third is not.
    mixed = produce(client, topic, batch([b"a", b"b", b"c"], timestamps=[now, now + 1, now - 7_200_000]))
    assert error_name(mixed.error_code) == "INVALID_TIMESTAMP"
    assert [e.batch_index for e in mixed.record_errors] == [2]
    assert log_end_offset(client, topic) == 0
    assert produce(client, topic, batch([b"recent"], timestamps=[now - 60_000])).error_code == 0


def test_timestamp_after_max_ms(client):
    topic = unique("ts-after")
    create_topic(client, topic, configs={"message.timestamp.after.max.ms": 60_000})
    now = now_ms()
    future = produce(client, topic, batch([b"a", b"b"], timestamps=[now, now + 3_600_000]))
    assert error_name(future.error_code) == "INVALID_TIMESTAMP"
    assert [e.batch_index for e in future.record_errors] == [1]
    assert produce(client, topic, batch([b"soon"], timestamps=[now + 1000])).error_code == 0


def test_timestamp_after_max_ms_defaults_to_one_hour(client):
    """Kafka 4.3's default message.timestamp.after.max.ms (log.message.timestamp.after.max.ms) is one
    hour: a CreateTime two hours ahead is INVALID_TIMESTAMP on a topic without overrides."""
    topic = unique("ts-after-default")
    create_topic(client, topic)
    [config] = describe_topic_configs(client, topic, ["message.timestamp.after.max.ms"]).values()
    assert (config.value, config.config_source) == ("3600000", 5)
    now = now_ms()
    future = produce(client, topic, batch([b"later"], timestamps=[now + 2 * 3_600_000]))
    assert error_name(future.error_code) == "INVALID_TIMESTAMP"
    assert produce(client, topic, batch([b"soon"], timestamps=[now + 1_800_000])).error_code == 0


def test_compacted_topic_needs_keys(client):
    """LogValidator.validateKey: "Compacted topic cannot accept message without key" (INVALID_RECORD
    with a record error per keyless record)."""
    topic = unique("compacted")
    create_topic(client, topic, configs={"cleanup.policy": "compact"})
    answer = produce(client, topic, batch([b"a", b"b"], key=None))
    assert error_name(answer.error_code) == "INVALID_RECORD"
    assert [e.batch_index for e in answer.record_errors] == [0, 1]
    assert "without key" in answer.record_errors[0].batch_index_error_message
    assert produce(client, topic, batch([b"a"], key=b"key")).error_code == 0


@pytest.mark.parametrize("topic_codec,sent,stored", [
    ("gzip", CompressionType.NONE, CompressionType.GZIP),
    ("zstd", CompressionType.LZ4, CompressionType.ZSTD),
    ("uncompressed", CompressionType.SNAPPY, CompressionType.NONE),
    ("producer", CompressionType.LZ4, CompressionType.LZ4),
])
def test_topic_compression_type_recompresses(client, topic_codec, sent, stored):
    """LogValidator.validateMessagesAndAssignOffsetsCompressed: a topic compression.type other than
    producer rebuilds the batch with that codec (buildRecordsAndAssignOffsets), keeping the producer
    id, epoch, base sequence and record timestamps."""
    topic = unique(f"codec-{topic_codec}")
    create_topic(client, topic, configs={"compression.type": topic_codec})
    pid, epoch = init_producer_id(client)
    now = now_ms()
    sent_batch = batch([b"v%d" % i * 20 for i in range(5)], timestamps=[now + i for i in range(5)],
                       compression=sent, producer_id=pid, producer_epoch=epoch, base_sequence=0)
    answer = produce(client, topic, sent_batch)
    assert (answer.error_code, answer.base_offset) == (0, 0)
    [(header, _)] = batches_of(fetch(client, topic).records)
    assert header.compression == stored
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (pid, epoch, 0)
    assert [(r[0], r[1], r[3]) for r in consumed(fetch(client, topic).records)] == \
        [(i, now + i, b"v%d" % i * 20) for i in range(5)]
    # The rebuilt batch is still recognised as the same batch when the producer retries it.
    retry = produce(client, topic, sent_batch)
    assert (retry.error_code, retry.base_offset) == (0, 0)
    assert log_end_offset(client, topic) == 5


def test_consumer_sees_the_topic_codec(shared_broker):
    """A real consumer (kafka-python) reads what the broker recompressed."""
    kafka = pytest.importorskip("kafka")
    with WireClient(shared_broker.bootstrap) as client:
        topic = unique("codec-consumer")
        create_topic(client, topic, configs={"compression.type": "gzip"})
        produce(client, topic, batch([b"one", b"two"]))
        [(header, _)] = batches_of(fetch(client, topic).records)
        assert header.compression == CompressionType.GZIP
    consumer = kafka.KafkaConsumer(bootstrap_servers=shared_broker.bootstrap, enable_auto_commit=False,
                                   consumer_timeout_ms=5000)
    try:
        tp = kafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        values = []
        deadline = time.monotonic() + 10
        while len(values) < 2 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values += [r.value for r in records]
        assert values == [b"one", b"two"]
    finally:
        consumer.close()


# -- idempotent producers -----------------------------------------------------------------------------------


def test_duplicates_of_the_last_five_batches_get_their_original_offsets(client):
    """ProducerStateEntry keeps the last 5 batches (NUM_BATCHES_TO_RETAIN); a retry of any of them
    is answered with its original offsets and no error, and nothing is appended. A retry of an
    older one is just out of order."""
    topic = unique("idempotent")
    create_topic(client, topic)
    pid, epoch = init_producer_id(client)
    sent = []
    for i in range(6):
        data = batch([b"%d-a" % i, b"%d-b" % i], producer_id=pid, producer_epoch=epoch, base_sequence=2 * i)
        answer = produce(client, topic, data)
        assert (answer.error_code, answer.base_offset) == (0, 2 * i)
        sent.append(data)
    for i in range(1, 6):
        retry = produce(client, topic, sent[i])
        assert (retry.error_code, retry.base_offset) == (0, 2 * i), i
    assert error_name(produce(client, topic, sent[0]).error_code) == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert log_end_offset(client, topic) == 12


def test_sequence_gap_is_out_of_order(client, shared_broker):
    """Refused, and logged by the broker as Kafka's ReplicaManager logs it ("Error processing append
    operation on partition"), the one trace of what a producer was told."""
    topic = unique("gap")
    create_topic(client, topic)
    pid, epoch = init_producer_id(client)
    assert produce(client, topic, batch([b"0"], producer_id=pid, producer_epoch=epoch, base_sequence=0)).error_code == 0
    gap = produce(client, topic, batch([b"2"], producer_id=pid, producer_epoch=epoch, base_sequence=2))
    assert error_name(gap.error_code) == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert gap.log_start_offset == 0
    assert log_end_offset(client, topic) == 1
    logged = f"Error processing append operation on partition {topic}-0: OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert logged in shared_broker.log_path.read_text(errors="replace")


def test_unknown_producer_may_start_at_any_sequence(client):
    """ProducerAppendInfo.checkSequence: with no state for the producer ("possibly because all
    producer records have been deleted due to retention"), any sequence is accepted; Kafka stopped
    answering UNKNOWN_PRODUCER_ID for this in 2.5 (KIP-360)."""
    topic = unique("late-start")
    create_topic(client, topic)
    pid, epoch = init_producer_id(client)
    first = produce(client, topic, batch([b"x"], producer_id=pid, producer_epoch=epoch, base_sequence=7))
    assert (first.error_code, first.base_offset) == (0, 0)
    assert produce(client, topic, batch([b"y"], producer_id=pid, producer_epoch=epoch, base_sequence=8)).error_code == 0


def test_older_epoch_is_fenced_and_a_new_epoch_starts_at_zero(client):
    """ProducerAppendInfo.checkProducerEpoch: an epoch older than the last seen one is
    INVALID_PRODUCER_EPOCH (Kafka 2.7+ answers this instead of PRODUCER_FENCED on produce);
    checkSequence: a new epoch must start at sequence 0 (OUT_OF_ORDER_SEQUENCE_NUMBER)."""
    topic = unique("epochs")
    create_topic(client, topic)
    pid, _ = init_producer_id(client)
    assert produce(client, topic, batch([b"e1"], producer_id=pid, producer_epoch=1, base_sequence=0)).error_code == 0
    zombie = produce(client, topic, batch([b"e0"], producer_id=pid, producer_epoch=0, base_sequence=1))
    assert error_name(zombie.error_code) == "INVALID_PRODUCER_EPOCH"
    bumped = produce(client, topic, batch([b"e2"], producer_id=pid, producer_epoch=2, base_sequence=5))
    assert error_name(bumped.error_code) == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert produce(client, topic, batch([b"e2"], producer_id=pid, producer_epoch=2, base_sequence=0)).error_code == 0
    assert log_end_offset(client, topic) == 2

