"""ListOffsets, OffsetForLeaderEpoch and DeleteRecords as Apache Kafka answers them.

Sources (apache/kafka): core/.../server/KafkaApis.scala handleListOffsetRequest,
core/.../cluster/Partition.scala fetchOffsetForTimestamp/lastOffsetForLeaderEpoch/
deleteRecordsOnLeader, storage/.../log/UnifiedLog fetchOffsetByTimestamp,
storage/.../epoch/LeaderEpochFileCache.endOffsetFor, ReplicaManager.deleteRecordsOnLocalLog.
"""

from __future__ import annotations

import pytest

from client import WireClient

from wire_cases import (
    batch, consumed, create_topic, error_name, fetch, list_offset, now_ms, produce, unique,
)

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3


@pytest.fixture
def client(shared_broker):
    with WireClient(shared_broker.bootstrap) as c:
        yield c


def _ten_records(client) -> tuple[str, list[int]]:
    """A topic holding one batch of 10 records, 1 s apart, except that record 7 is the newest."""
    topic = unique("offsets")
    create_topic(client, topic)
    base = now_ms() - 60_000
    timestamps = [base + 1000 * i for i in range(10)]
    timestamps[7] = base + 20_000
    assert produce(client, topic, batch([b"r%d" % i for i in range(10)], timestamps=timestamps)).error_code == 0
    return topic, timestamps


def _delete_records(client, topic: str, offset: int, partition: int = 0):
    response = client.call("DeleteRecords", 2, {"topics": [{"name": topic, "partitions": [
        {"partition_index": partition, "offset": offset}]}], "timeout_ms": 5000})
    return response.topics[0].partitions[0]


def _end_offset_for_epoch(client, topic: str, epoch: int, *, current_leader_epoch: int = -1, partition: int = 0):
    response = client.call("OffsetForLeaderEpoch", 4, {"replica_id": -1, "topics": [{"topic": topic, "partitions": [
        {"partition": partition, "current_leader_epoch": current_leader_epoch, "leader_epoch": epoch}]}]})
    return response.topics[0].partitions[0]


# -- ListOffsets ----------------------------------------------------------------------------------------


def test_special_timestamps_on_an_empty_partition(client):
    """An empty partition: earliest = latest = 0 at leader epoch 0 (Kafka's new leader writes its
    epoch at the log end offset, Partition.makeLeader); max timestamp finds nothing (-1, -1)."""
    topic = unique("empty")
    create_topic(client, topic)
    for ts in (EARLIEST, LATEST):
        answer = list_offset(client, topic, ts)
        assert (answer.error_code, answer.offset, answer.timestamp, answer.leader_epoch) == (0, 0, -1, 0)
    answer = list_offset(client, topic, MAX_TIMESTAMP)
    assert (answer.error_code, answer.offset, answer.timestamp, answer.leader_epoch) == (0, -1, -1, -1)


def test_special_timestamps(client):
    topic, timestamps = _ten_records(client)
    assert (list_offset(client, topic, EARLIEST).offset, list_offset(client, topic, LATEST).offset) == (0, 10)
    newest = list_offset(client, topic, MAX_TIMESTAMP)
    assert (newest.offset, newest.timestamp, newest.leader_epoch) == (7, timestamps[7], 0)


def test_lookup_by_timestamp_finds_the_record_not_the_batch(client):
    """UnifiedLog.fetchOffsetByTimestamp: the first record whose timestamp is >= the target, with
    that record's timestamp, inside the batch."""
    topic, timestamps = _ten_records(client)
    exact = list_offset(client, topic, timestamps[4])
    assert (exact.offset, exact.timestamp, exact.leader_epoch) == (4, timestamps[4], 0)
    between = list_offset(client, topic, timestamps[4] + 1)
    assert (between.offset, between.timestamp) == (5, timestamps[5])
    past_everything = list_offset(client, topic, timestamps[7] + 1)
    assert (past_everything.error_code, past_everything.offset, past_everything.timestamp) == (0, -1, -1)


def test_duplicate_partition_is_invalid_request_answered_once(client):
    """KafkaApis: a partition named twice is INVALID_REQUEST (duplicatePartitions); Kafka 4.3 answers it
    once (seen by the conformance suite, scenarios/data_path.py list_offsets_unknown)."""
    topic, _ = _ten_records(client)
    response = client.call("ListOffsets", 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": LATEST},
                                       {"partition_index": 0, "timestamp": EARLIEST}]}]})
    assert [(p.partition_index, error_name(p.error_code), p.offset) for p in response.topics[0].partitions] == \
        [(0, "INVALID_REQUEST", -1)]


def test_unknown_topic_and_partition(client):
    topic, _ = _ten_records(client)
    for name, partition in ((unique("missing"), 0), (topic, 3)):
        answer = list_offset(client, name, LATEST, partition=partition)
        assert error_name(answer.error_code) == "UNKNOWN_TOPIC_OR_PARTITION"
        assert (answer.offset, answer.timestamp, answer.leader_epoch) == (-1, -1, -1)


def test_current_leader_epoch_ahead_of_the_leader(client):
    topic, _ = _ten_records(client)
    assert error_name(list_offset(client, topic, LATEST, current_leader_epoch=1).error_code) == "UNKNOWN_LEADER_EPOCH"
    assert list_offset(client, topic, LATEST, current_leader_epoch=0).offset == 10


@pytest.mark.parametrize("version", [1, 2, 4, 7, 8, 9, 10, 11])
def test_list_offsets_versions(client, version):
    topic, timestamps = _ten_records(client)
    assert list_offset(client, topic, LATEST, version=version).offset == 10
    assert list_offset(client, topic, timestamps[3], version=version).offset == 3


# -- OffsetForLeaderEpoch ----------------------------------------------------------------------------------


def test_end_offset_of_the_current_epoch_is_the_log_end_offset(client):
    """LeaderEpochFileCache.endOffsetFor: the latest epoch ends at the log end offset."""
    topic, _ = _ten_records(client)
    answer = _end_offset_for_epoch(client, topic, 0)
    assert (answer.error_code, answer.leader_epoch, answer.end_offset) == (0, 0, 10)
    empty = unique("empty-epoch")
    create_topic(client, empty)
    answer = _end_offset_for_epoch(client, empty, 0)
    assert (answer.error_code, answer.leader_epoch, answer.end_offset) == (0, 0, 0)


def test_unknown_epoch_and_epoch_checks(client):
    """An epoch above every known one: no error, UNDEFINED_EPOCH (-1) and UNDEFINED_EPOCH_OFFSET (-1).
    A current_leader_epoch ahead of the leader's: UNKNOWN_LEADER_EPOCH."""
    topic, _ = _ten_records(client)
    answer = _end_offset_for_epoch(client, topic, 5)
    assert (answer.error_code, answer.leader_epoch, answer.end_offset) == (0, -1, -1)
    fenced = _end_offset_for_epoch(client, topic, 0, current_leader_epoch=3)
    assert error_name(fenced.error_code) == "UNKNOWN_LEADER_EPOCH"
    assert (fenced.leader_epoch, fenced.end_offset) == (-1, -1)
    missing = _end_offset_for_epoch(client, unique("missing"), 0)
    assert error_name(missing.error_code) == "UNKNOWN_TOPIC_OR_PARTITION"


# -- DeleteRecords --------------------------------------------------------------------------------------------


def test_delete_records_to_the_high_watermark(client):
    """Offset -1 means the high watermark (DeleteRecordsRequest.HIGH_WATERMARK)."""
    topic, _ = _ten_records(client)
    answer = _delete_records(client, topic, -1)
    assert (answer.error_code, answer.low_watermark) == (0, 10)
    assert list_offset(client, topic, EARLIEST).offset == 10
    assert error_name(fetch(client, topic, 9).error_code) == "OFFSET_OUT_OF_RANGE"
    assert produce(client, topic, batch([b"after"])).base_offset == 10


def test_delete_records_moves_the_log_start_offset(client):
    topic, _ = _ten_records(client)
    answer = _delete_records(client, topic, 4)
    assert (answer.error_code, answer.low_watermark) == (0, 4)
    assert list_offset(client, topic, EARLIEST).offset == 4
    assert error_name(fetch(client, topic, 3).error_code) == "OFFSET_OUT_OF_RANGE"
    part = fetch(client, topic, 4)
    assert part.log_start_offset == 4
    assert [r[0] for r in consumed(part.records) if r[0] >= 4] == list(range(4, 10))
    # Asking for less than the current log start offset changes nothing.
    assert (_delete_records(client, topic, 2).low_watermark, list_offset(client, topic, EARLIEST).offset) == (4, 4)


def test_delete_records_beyond_the_high_watermark(client):
    """Partition.deleteRecordsOnLeader / UnifiedLog.maybeIncrementLogStartOffset: beyond the high
    watermark (or below -1) is OFFSET_OUT_OF_RANGE with low watermark -1."""
    topic, _ = _ten_records(client)
    for offset in (11, -7):
        answer = _delete_records(client, topic, offset)
        assert (error_name(answer.error_code), answer.low_watermark) == ("OFFSET_OUT_OF_RANGE", -1)
    assert list_offset(client, topic, EARLIEST).offset == 0


def test_delete_records_refusals(client):
    """Unknown partitions; a topic whose cleanup.policy lacks delete (POLICY_VIOLATION)."""
    assert error_name(_delete_records(client, unique("missing"), 0).error_code) == "UNKNOWN_TOPIC_OR_PARTITION"
    compacted = unique("compacted")
    create_topic(client, compacted, configs={"cleanup.policy": "compact"})
    assert error_name(_delete_records(client, compacted, -1).error_code) == "POLICY_VIOLATION"


def test_deleted_records_stay_deleted_after_restart(broker):
    with WireClient(broker.bootstrap) as client:
        topic, _ = _ten_records(client)
        assert _delete_records(client, topic, 6).low_watermark == 6
    broker.kill()
    broker.start()
    with WireClient(broker.bootstrap) as client:
        assert list_offset(client, topic, EARLIEST).offset == 6
        assert list_offset(client, topic, LATEST).offset == 10


# -- found by the conformance suite (compat/conformance/scenarios/data_path.py) -------------------------------


@pytest.mark.parametrize("timestamp, since", [(MAX_TIMESTAMP, 7), (-4, 8), (-5, 9), (-6, 11), (-7, None)])
def test_special_timestamps_before_their_version_are_unsupported(client, timestamp, since):
    """Kafka 4.3 answers UNSUPPORTED_VERSION for max timestamp (-3) below v7, earliest local (-4)
    below v8, latest tiered (-5) below v9, earliest pending upload (-6) below v11, any other
    negative timestamp always; it says so before looking the partition up (an unknown partition
    answers it too)."""
    topic, _ = _ten_records(client)
    for version in (1, 4, 6, 7, 8, 9, 10, 11):
        for partition in (0, 3):
            answer = list_offset(client, topic, timestamp, version=version, partition=partition)
            expected = ("NONE" if partition == 0 else "UNKNOWN_TOPIC_OR_PARTITION") \
                if since is not None and version >= since else "UNSUPPORTED_VERSION"
            assert error_name(answer.error_code) == expected, (version, partition)
            if expected == "UNSUPPORTED_VERSION":
                assert (answer.offset, answer.timestamp) == (-1, -1)


def test_tiered_storage_timestamps_without_tiered_storage(client):
    """Kafka 4.3 for a topic without remote storage: earliest local (-4, v8+) is the log start
    offset, as earliest (-2) is; latest tiered (-5, v9+) and earliest pending upload (-6, v11) find
    nothing: offset, timestamp and epoch -1, no error. v10's timeout_ms only bounds remote lookups."""
    topic, _ = _ten_records(client)
    assert _delete_records(client, topic, 4).error_code == 0
    for timestamp, version in ((EARLIEST, 11), (-4, 8), (-4, 11)):
        answer = list_offset(client, topic, timestamp, version=version)
        assert (answer.error_code, answer.offset, answer.timestamp, answer.leader_epoch) == (0, 4, -1, 0)
    for timestamp, version in ((-5, 9), (-5, 11), (-6, 11)):
        answer = list_offset(client, topic, timestamp, version=version)
        assert (answer.error_code, answer.offset, answer.timestamp, answer.leader_epoch) == (0, -1, -1, -1)
    response = client.call("ListOffsets", 10, {"replica_id": -1, "isolation_level": 0, "timeout_ms": 1, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": LATEST, "current_leader_epoch": -1}]}]})
    assert (response.topics[0].partitions[0].error_code, response.topics[0].partitions[0].offset) == (0, 10)


def test_a_negative_current_leader_epoch_other_than_minus_one_is_fenced(client):
    """ListOffsets and OffsetForLeaderEpoch take only -1 for "no epoch": -5 is older than the leader's
    epoch 0 (FENCED_LEADER_EPOCH); Fetch takes every negative epoch for "no epoch" (FetchRequest.optionalEpoch)."""
    topic, _ = _ten_records(client)
    answer = list_offset(client, topic, LATEST, current_leader_epoch=-5)
    assert (error_name(answer.error_code), answer.offset, answer.leader_epoch) == ("FENCED_LEADER_EPOCH", -1, -1)
    answer = _end_offset_for_epoch(client, topic, 0, current_leader_epoch=-5)
    assert (error_name(answer.error_code), answer.leader_epoch, answer.end_offset) == ("FENCED_LEADER_EPOCH", -1, -1)
    fetched = fetch(client, topic, 0, current_leader_epoch=-5)
    assert fetched.error_code == 0


def test_delete_records_answers_a_partition_named_twice_once_with_the_last_offset(client):
    """KafkaApis.handleDeleteRecordsRequest collects the request into a map keyed by partition: the
    offset named last wins and the answer has one entry per partition, one per topic."""
    topic, _ = _ten_records(client)
    response = client.call("DeleteRecords", 2, {"topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "offset": 3}, {"partition_index": 0, "offset": 2}]},
        {"name": topic, "partitions": [{"partition_index": 0, "offset": 4}]}], "timeout_ms": 5000})
    assert [(t.name, [(p.partition_index, p.low_watermark, p.error_code) for p in t.partitions])
            for t in response.topics] == [(topic, [(0, 4, 0)])]
    assert list_offset(client, topic, EARLIEST).offset == 4
