"""Many partitions with few file descriptors (issue 17): a broker whose RLIMIT_NOFILE is far below
three descriptors per partition still creates, writes, reads and reloads every partition, because
the log keeps its open files in a bounded cache (log/open_files.py) and reopens idle ones on demand.
Before that, the broker ran out of descriptors part-way through CreateTopics and the failing
handler dropped the client's connection.

The numbers are kept small so the test is quick: 600 partitions under a limit of 256 descriptors
(the same shape as 10,000 partitions under the default limit of 20,000, where 3 per partition ran
out at about 6,600).
"""

from __future__ import annotations

import os

from testing.broker_process import running_broker
from client import WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch, decode_batches

OPEN_FILES_LIMIT = 256
TOPICS = 3
PARTITIONS = 200


def create_topic(client: WireClient, name: str, partitions: int) -> None:
    response = client.call("CreateTopics", 7, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "configs": []}],
        "timeout_ms": 60000, "validate_only": False})
    assert response.topics[0].error_code == 0, (ErrorCode(response.topics[0].error_code),
                                                response.topics[0].error_message)


def produce_to_every_partition(client: WireClient, topic: str, partitions: int) -> None:
    response = client.call("Produce", 9, {"acks": -1, "timeout_ms": 30000, "topic_data": [
        {"name": topic, "partition_data": [
            {"index": p, "records": build_batch([Record(0, 0, b"k", b"%s/%d" % (topic.encode(), p))])}
            for p in range(partitions)]}]})
    answers = {p.index: p.error_code for p in response.responses[0].partition_responses}
    assert answers == dict.fromkeys(range(partitions), 0), {p: ErrorCode(e) for p, e in answers.items() if e}


def read_every_partition(client: WireClient, topic: str, partitions: int) -> dict[int, list[bytes]]:
    response = client.call("Fetch", 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 64 << 20, "isolation_level": 0,
        "topics": [{"topic": topic, "partitions": [
            {"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 20} for p in range(partitions)]}]})
    read = {}
    for part in response.responses[0].partitions:
        assert part.error_code == 0, (part.partition_index, ErrorCode(part.error_code))
        read[part.partition_index] = [r.value for _, records in decode_batches(bytes(part.records or b""))
                                      for r in records]
    return read


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_partitions_far_beyond_the_descriptor_limit_are_created_written_read_and_reloaded():
    topics = [f"scale-{i}" for i in range(TOPICS)]
    expected = {topic: {p: [b"%s/%d" % (topic.encode(), p)] for p in range(PARTITIONS)} for topic in topics}
    with running_broker(open_files_limit=OPEN_FILES_LIMIT, startup_timeout=60) as broker:
        with WireClient(broker.bootstrap, timeout=120) as client:
            for topic in topics:
                create_topic(client, topic, PARTITIONS)
            for topic in topics:
                produce_to_every_partition(client, topic, PARTITIONS)
            for topic in topics:
                assert read_every_partition(client, topic, PARTITIONS) == expected[topic]
            assert open_descriptors(broker.process.pid) < OPEN_FILES_LIMIT
        broker.restart()  # every partition is opened again at start, under the same limit
        with WireClient(broker.bootstrap, timeout=120) as client:
            for topic in topics:
                assert read_every_partition(client, topic, PARTITIONS) == expected[topic]
                produce_to_every_partition(client, topic, PARTITIONS)
        broker.kill()  # and recovered after a crash (every segment re-scanned)
        broker.start()
        with WireClient(broker.bootstrap, timeout=120) as client:
            for topic in topics:
                assert read_every_partition(client, topic, PARTITIONS) == {
                    p: values * 2 for p, values in expected[topic].items()}


# -- a log dir whose disk fails -------------------------------------------------------------------


def create_topic_answer(client: WireClient, name: str, partitions: int):
    return client.call("CreateTopics", 7, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "configs": []}],
        "timeout_ms": 60000, "validate_only": False}).topics[0]


def produce_one(client: WireClient, topic: str, value: bytes) -> int:
    response = client.call("Produce", 9, {"acks": -1, "timeout_ms": 30000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": build_batch([Record(0, 0, b"k", value)])}]}]})
    return response.responses[0].partition_responses[0].error_code


def fetch_one(client: WireClient, topic: str) -> tuple[int, list[bytes]]:
    response = client.call("Fetch", 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
        "topics": [{"topic": topic, "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
    part = response.responses[0].partitions[0]
    return part.error_code, [r.value for _, records in decode_batches(bytes(part.records or b"")) for r in records]


def list_latest_offset(client: WireClient, topic: str) -> tuple[int, int]:
    response = client.call("ListOffsets", 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
    part = response.topics[0].partitions[0]
    return part.error_code, part.offset


def log_dir_errors(client: WireClient) -> dict[str, int]:
    return {r.log_dir: r.error_code for r in client.call("DescribeLogDirs", 4, {"topics": None}).results}


def test_a_failed_log_dir_goes_offline_and_its_partitions_answer_storage_errors(tmp_path):
    """As Kafka's LogDirFailureChannel: an I/O failure in a log dir (here: the directory replaced
    by a file, as when a disk is unmounted) takes it offline; its partitions answer
    KAFKA_STORAGE_ERROR to Produce, Fetch and ListOffsets, DescribeLogDirs shows the dir with the
    error, a topic that could not be created there is answered KAFKA_STORAGE_ERROR and not kept,
    and the other dir serves on, all on one connection. A restart with the disk back serves
    everything again."""
    healthy, failing = tmp_path / "disk-a", tmp_path / "disk-b"
    config = {"log.dirs": f"{healthy},{failing}"}
    with running_broker(tmp_path, config=config) as broker:
        with WireClient(broker.bootstrap, timeout=60) as client:
            # New partitions go to the dir holding fewest (the first on a tie): a -> disk-a, b -> disk-b.
            assert create_topic_answer(client, "on-a", 1).error_code == 0
            assert create_topic_answer(client, "on-b", 1).error_code == 0
            assert (failing / "on-b-0").is_dir()
            assert produce_one(client, "on-a", b"a1") == 0 and produce_one(client, "on-b", b"b1") == 0

            failing.rename(tmp_path / "disk-b.unplugged")
            failing.write_bytes(b"")  # what was the dir is now a file: every use of the path fails
            answer = create_topic_answer(client, "spread", 2)  # its partition 1 goes to disk-b
            assert answer.error_code == ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode(answer.error_code)
            assert str(failing) in answer.error_message

            assert log_dir_errors(client) == {str(healthy): 0, str(failing): ErrorCode.KAFKA_STORAGE_ERROR}
            assert produce_one(client, "on-b", b"b2") == ErrorCode.KAFKA_STORAGE_ERROR
            assert fetch_one(client, "on-b")[0] == ErrorCode.KAFKA_STORAGE_ERROR
            assert list_latest_offset(client, "on-b")[0] == ErrorCode.KAFKA_STORAGE_ERROR
            # The healthy dir serves on; the topic that failed was not kept, so it can be created again.
            assert produce_one(client, "on-a", b"a2") == 0
            assert fetch_one(client, "on-a") == (0, [b"a1", b"a2"])
            assert not (healthy / "spread-0").exists()
            assert create_topic_answer(client, "spread", 2).error_code == 0
            assert {p.name for p in healthy.iterdir()} >= {"spread-0", "spread-1"}
        broker.stop()
        failing.unlink()
        (tmp_path / "disk-b.unplugged").rename(failing)
        broker.start()
        with WireClient(broker.bootstrap, timeout=60) as client:
            assert log_dir_errors(client) == {str(healthy): 0, str(failing): 0}
            assert fetch_one(client, "on-b") == (0, [b"b1"])
            assert produce_one(client, "on-b", b"b2") == 0
            assert fetch_one(client, "on-a") == (0, [b"a1", b"a2"])
