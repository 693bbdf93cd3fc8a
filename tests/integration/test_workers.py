"""One broker, several worker processes (num.worker.processes, broker/workers/): what clients see is
what one process shows them, with real clients over real sockets.

- The same requests, sent to a one-process broker and to a three-worker broker holding the same
  records, get the same answers: Produce, Fetch (byte limits that cut across partitions owned by
  different workers, long polls, sessions), ListOffsets, OffsetForLeaderEpoch, DeleteRecords.
- librdkafka's idempotent producer, consumer group and transactions work across workers.
- Topic changes made at worker 0 are seen at once by every worker.
- kill -9 of one worker under idempotent acks=all load: nothing acknowledged is lost, nothing is
  duplicated (the supervisor restarts the workers).
- SIGTERM stops every worker cleanly: checkpoints folded, clean-shutdown markers written.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from client import WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch
from testing.broker_process import REPO_ROOT, free_port, running_broker

TOPIC = "workers"
PARTITIONS = 6
# One CreateTime for the module's records (a minute ago: within the brokers' timestamp bounds), so
# both brokers of a comparison hold the same bytes.
T0 = int(time.time()) * 1000 - 60_000


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def _create(client: WireClient, name: str = TOPIC, partitions: int = PARTITIONS, configs=None) -> None:
    response = client.call("CreateTopics", 7, {"topics": [{
        "name": name, "num_partitions": partitions, "replication_factor": 1,
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}], "timeout_ms": 5000})
    assert response.topics[0].error_code == 0, ErrorCode(response.topics[0].error_code)


def _batch(partition: int, round_no: int, count: int, size: int) -> bytes:
    return build_batch([Record(i, 0, b"k%d" % i, bytes([65 + partition]) * size + b"%d" % round_no)
                        for i in range(count)], base_timestamp=T0 + round_no)


def _produce_all(client: WireClient, rounds: int = 6, name: str = TOPIC, partitions: int = PARTITIONS) -> list:
    answers = []
    for round_no in range(rounds):
        response = client.call("Produce", 9, {"acks": -1, "timeout_ms": 10000, "topic_data": [{
            "name": name, "partition_data": [
                {"index": p, "records": _batch(p, round_no, 1 + (p + round_no) % 4, 300 + 50 * p)}
                for p in range(partitions)]}]})
        answers.append(_plain(response))
    return answers


def _plain(obj):
    """A decoded message as plain data (memoryviews as bytes), for comparing two brokers' answers."""
    if isinstance(obj, (list, tuple)):
        return [_plain(x) for x in obj]
    if isinstance(obj, memoryview):
        return bytes(obj)
    if hasattr(obj, "__slots__") and not isinstance(obj, (bytes, str, int)):
        return {name: _plain(getattr(obj, name)) for name in obj.__slots__}
    return obj


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A one-process broker and a three-worker broker, each with TOPIC and the same records."""
    with running_broker(tmp_path_factory.mktemp("one"), config={"num.worker.processes": 1}) as one, \
            running_broker(tmp_path_factory.mktemp("three"), config={"num.worker.processes": 3}) as three:
        assert len(_children(three.process.pid)) == 3
        answers = []
        for broker in (one, three):
            with WireClient(broker.bootstrap) as client:
                _create(client)
                answers.append(_produce_all(client))
        assert answers[0] == answers[1]  # the same offsets, log start offsets, errors
        yield one, three


def _fetch(client: WireClient, version: int, max_bytes: int, partition_max: int, order, offsets=None, **more):
    request = {"replica_id": -1, "max_wait_ms": more.pop("max_wait_ms", 0), "min_bytes": more.pop("min_bytes", 0),
               "max_bytes": max_bytes, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
               "topics": [{"topic": TOPIC, "partitions": [
                   {"partition": p, "fetch_offset": (offsets or {}).get(p, 0), "partition_max_bytes": partition_max}
                   for p in order]}],
               "forgotten_topics_data": [], "rack_id": "", **more}
    return _plain(client.call("Fetch", version, request))


@pytest.mark.parametrize("max_bytes,partition_max", [
    (1 << 20, 1 << 20), (1, 1 << 20), (2000, 1 << 20), (5000, 1500), (9000, 700), (1 << 20, 1), (0, 0)])
@pytest.mark.parametrize("version", [4, 11, 12])
def test_fetch_answers_as_one_process(pair, version, max_bytes, partition_max):
    one, three = pair
    orders = [list(range(PARTITIONS)), list(reversed(range(PARTITIONS))), [3, 0, 5, 1]]
    for order in orders:
        for offsets in (None, {p: 3 for p in range(PARTITIONS)}):
            answers = []
            for broker in (one, three):
                with WireClient(broker.bootstrap) as client:
                    answers.append(_fetch(client, version, max_bytes, partition_max, order, offsets))
            assert answers[0] == answers[1], (order, offsets)


@pytest.mark.parametrize("request_name,version,body", [
    ("ListOffsets", 7, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": [
        {"partition_index": p, "current_leader_epoch": -1, "timestamp": ts}
        for p in (5, 0, 3, 1) for ts in (-1,)]}, {"name": "missing", "partitions": [
            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -2}]}]}),
    ("ListOffsets", 7, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": [
        {"partition_index": p, "current_leader_epoch": -1, "timestamp": T0 + 3} for p in range(PARTITIONS)]}]}),
    ("OffsetForLeaderEpoch", 4, {"replica_id": -1, "topics": [{"topic": TOPIC, "partitions": [
        {"partition": p, "current_leader_epoch": -1, "leader_epoch": 0} for p in (4, 2, 0, 9)]}]}),
    ("DescribeProducers", 0, {"topics": [{"name": TOPIC, "partition_indexes": [1, 0, 5]}]}),
])
def test_partition_requests_answer_as_one_process(pair, request_name, version, body):
    answers = []
    for broker in pair:
        with WireClient(broker.bootstrap) as client:
            answers.append(_plain(client.call(request_name, version, body)))
    assert answers[0] == answers[1]


def test_large_produce_requests_read_in_place_answer_as_one_process(pair):
    """Produce frames over the large-frame size are received into the shared region of the worker
    holding the connection, and the owners of their partitions append the batches from there
    (broker/workers/link.py): split across the three workers, handed whole to another one, many in
    a row on one connection (the region's places reused), and acks=0. The same answers and the
    same bytes fetched back as from one process."""
    name = "workers-large"
    answers = []
    for broker in pair:
        with WireClient(broker.bootstrap) as client:
            _create(client, name)
            seen = []
            for round_no in range(8):  # ~200-600 KB per request, every partition: split three ways
                seen.append(_plain(client.call("Produce", 9, {"acks": 1, "timeout_ms": 10000, "topic_data": [{
                    "name": name, "partition_data": [
                        {"index": p, "records": _batch(p, round_no, 20 + 10 * p, 1000 + 7 * round_no)}
                        for p in range(PARTITIONS)]}]})))
            for p in range(PARTITIONS):  # one partition each: at two workers of three, handed whole
                seen.append(_plain(client.call("Produce", 9, {"acks": -1, "timeout_ms": 10000, "topic_data": [{
                    "name": name, "partition_data": [{"index": p, "records": _batch(p, 100, 150, 900)}]}]})))
            client.call("Produce", 9, {"acks": 0, "timeout_ms": 10000, "topic_data": [{
                "name": name, "partition_data": [
                    {"index": p, "records": _batch(p, 200, 60, 800)} for p in range(PARTITIONS)]}]},
                expect_response=False)
            fetched = []
            for p in range(PARTITIONS):
                expected_end = 8 * (20 + 10 * p) + 150 + 60  # the acks=0 batch too, once appended
                deadline = time.monotonic() + 10
                while True:
                    response = client.call("Fetch", 12, {
                        "replica_id": -1, "max_wait_ms": 100, "min_bytes": 1, "max_bytes": 50 << 20,
                        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [{
                            "topic": name, "partitions": [{"partition": p, "fetch_offset": 0,
                                                           "partition_max_bytes": 50 << 20}]}],
                        "forgotten_topics_data": [], "rack_id": ""})
                    data = response.responses[0].partitions[0]
                    assert data.error_code == 0, ErrorCode(data.error_code)
                    if data.high_watermark == expected_end or time.monotonic() > deadline:
                        break
                assert data.high_watermark == expected_end
                fetched.append(bytes(data.records))
            answers.append((seen, fetched))
    assert answers[0] == answers[1]


def _next_offsets(answer, offsets: dict) -> dict:
    """The fetch offsets a consumer reading on asks next: after the last whole batch it was sent."""
    following = dict(offsets)
    for topic in answer["responses"]:
        for part in topic["partitions"]:
            data, position = part["records"], 0
            while position + 27 <= len(data):
                base = int.from_bytes(data[position:position + 8], "big", signed=True)
                size = int.from_bytes(data[position + 8:position + 12], "big", signed=True)
                if position + 12 + size > len(data):
                    break
                last_delta = int.from_bytes(data[position + 23:position + 27], "big", signed=True)
                following[part["partition_index"]] = base + last_delta + 1
                position += 12 + size
    return following


def test_consumers_reading_on_answer_as_one_process(pair):
    """A consumer reads on from where its last fetch ended: the worker holding its connection reads
    another worker's partitions itself from there (broker/workers/read_cursors.py). Fetch by fetch,
    on one connection, through records appended while it reads, a DeleteRecords past the offsets it
    holds, a topic deleted and made again under its name, and the limits cutting batches: the same
    answers as one process."""
    name = "workers-reading-on"
    order = list(range(PARTITIONS))
    answers = []
    for broker in pair:
        seen = []
        with WireClient(broker.bootstrap) as client:
            _create(client, name)
            _produce_all(client, rounds=4, name=name)
            for limits in ((1 << 20, 1 << 20), (3000, 800), (1 << 20, 1)):
                offsets = {p: 0 for p in order}
                for step in range(30):
                    if step == 5:  # appended after the reads began: read on past the old end
                        _produce_all(client, rounds=2, name=name)
                    answer = _fetch(client, 12, *limits, order, offsets, isolation_level=step % 2, topics=[{
                        "topic": name, "partitions": [
                            {"partition": p, "fetch_offset": offsets[p], "partition_max_bytes": limits[1]}
                            for p in order]}])
                    seen.append(answer)
                    following = _next_offsets(answer, offsets)
                    if following == offsets:
                        break
                    offsets = following
            # DeleteRecords past where a consumer reads: it is out of range, at every worker.
            offsets = {p: 1 for p in order}
            seen.append(_fetch(client, 12, 1 << 20, 600, order, offsets, topics=[{"topic": name, "partitions": [
                {"partition": p, "fetch_offset": 1, "partition_max_bytes": 600} for p in order]}]))
            seen.append(_plain(client.call("DeleteRecords", 2, {"timeout_ms": 5000, "topics": [{
                "name": name, "partitions": [{"partition_index": p, "offset": 4} for p in order]}]})))
            for offset in (3, 4):
                seen.append(_fetch(client, 12, 1 << 20, 600, order, topics=[{"topic": name, "partitions": [
                    {"partition": p, "fetch_offset": offset, "partition_max_bytes": 600} for p in order]}]))
            # The topic deleted and made again: what was read of the old one is not read again.
            seen.append(_plain(client.call("DeleteTopics", 4, {"topic_names": [name], "timeout_ms": 5000})))
            deadline = time.monotonic() + 10
            while True:
                created = client.call("CreateTopics", 7, {"topics": [{
                    "name": name, "num_partitions": PARTITIONS, "replication_factor": 1, "configs": []}],
                    "timeout_ms": 5000}).topics[0].error_code
                if created != ErrorCode.TOPIC_ALREADY_EXISTS or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert created == 0, ErrorCode(created)
            _produce_all(client, rounds=1, name=name)
            for offset in (0, 4):
                answer = _fetch(client, 12, 1 << 20, 1 << 20, order, topics=[{"topic": name, "partitions": [
                    {"partition": p, "fetch_offset": offset, "partition_max_bytes": 1 << 20} for p in order]}])
                seen.append([[{k: v for k, v in part.items() if k != "log_start_offset"}
                              for part in topic["partitions"]] for topic in answer["responses"]])
        answers.append(seen)
    assert answers[0] == answers[1]


def test_delete_records_and_long_polls_across_workers(pair):
    one, three = pair
    answers = []
    for broker in (one, three):
        with WireClient(broker.bootstrap) as client:
            answers.append(_plain(client.call("DeleteRecords", 2, {"timeout_ms": 5000, "topics": [{
                "name": TOPIC, "partitions": [{"partition_index": p, "offset": 2} for p in (2, 5, 0)]}]})))
    assert answers[0] == answers[1]
    assert {p["error_code"] for t in answers[1]["topics"] for p in t["partitions"]} == {0}
    # A long poll at the end of every partition wakes when a record lands in one owned by another worker.
    with WireClient(three.bootstrap) as client:
        ends = {p.partition_index: p.offset for t in client.call("ListOffsets", 7, {
            "replica_id": -1, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": p, "current_leader_epoch": -1, "timestamp": -1}
                for p in range(PARTITIONS)]}]}).topics for p in t.partitions}
        result = {}

        def poll():
            with WireClient(three.bootstrap) as poller:
                started = time.monotonic()
                result["answer"] = _fetch(poller, 12, 1 << 20, 1 << 20, list(range(PARTITIONS)), ends,
                                          max_wait_ms=20000, min_bytes=1)
                result["seconds"] = time.monotonic() - started

        thread = threading.Thread(target=poll)
        thread.start()
        time.sleep(0.5)
        for p in range(PARTITIONS):  # one record in the last partition only
            if p == PARTITIONS - 1:
                client.call("Produce", 9, {"acks": -1, "timeout_ms": 5000, "topic_data": [{
                    "name": TOPIC, "partition_data": [{"index": p, "records": _batch(p, 99, 1, 10)}]}]})
        thread.join(30)
        assert result["seconds"] < 15  # woken by the append, not by max_wait_ms
        got = [part for t in result["answer"]["responses"] for part in t["partitions"] if part["records"]]
        assert [part["partition_index"] for part in got] == [PARTITIONS - 1]


def test_topic_changes_reach_every_worker(tmp_path):
    with running_broker(tmp_path, config={"num.worker.processes": 3}) as broker, \
            WireClient(broker.bootstrap) as client:
        _create(client, "changes", 9)
        # At once, every partition (owned by the three workers) takes records.
        first = _produce_all(client, rounds=1, name="changes", partitions=9)[0]
        assert {p["error_code"] for t in first["responses"] for p in t["partition_responses"]} == {0}
        assert client.call("DeleteTopics", 4, {"topic_names": ["changes"], "timeout_ms": 5000}).responses[0].error_code == 0
        gone = _produce_all(client, rounds=1, name="changes", partitions=9)[0]
        assert {p["error_code"] for t in gone["responses"] for p in t["partition_responses"]} == {
            int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}
        # Re-created with more partitions: every one starts empty at offset 0.
        _create(client, "changes", 12)
        again = _produce_all(client, rounds=1, name="changes", partitions=12)[0]
        parts = [p for t in again["responses"] for p in t["partition_responses"]]
        assert [p["base_offset"] for p in parts] == [0] * 12
        # A topic config changed at worker 0 holds at every owner: a 2,000-byte limit is too small here.
        altered = client.call("IncrementalAlterConfigs", 1, {"resources": [{
            "resource_type": 2, "resource_name": "changes",
            "configs": [{"name": "max.message.bytes", "config_operation": 0, "value": "2000"}]}],
            "validate_only": False})
        assert altered.responses[0].error_code == 0
        big = client.call("Produce", 9, {"acks": -1, "timeout_ms": 5000, "topic_data": [{
            "name": "changes", "partition_data": [{"index": p, "records": _batch(p, 1, 4, 1000)}
                                                  for p in range(12)]}]})
        assert {p.error_code for t in big.responses for p in t.partition_responses} == {
            int(ErrorCode.MESSAGE_TOO_LARGE)}
        response = client.call("CreatePartitions", 3, {"topics": [{"name": "changes", "count": 15, "assignments": None}],
                                                       "timeout_ms": 5000, "validate_only": False})
        assert response.results[0].error_code == 0
        grown = client.call("Produce", 9, {"acks": -1, "timeout_ms": 5000, "topic_data": [{
            "name": "changes", "partition_data": [{"index": p, "records": _batch(p, 2, 1, 10)}
                                                  for p in range(15)]}]})
        answers = [(p.error_code, p.base_offset) for t in grown.responses for p in t.partition_responses]
        assert [error for error, _ in answers] == [0] * 15
        assert [offset for _, offset in answers][12:] == [0, 0, 0]


def test_librdkafka_clients_across_workers(tmp_path):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    with running_broker(tmp_path, config={"num.worker.processes": 3}) as broker:
        bootstrap = broker.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic("rd", 8, 1)]).values():
            future.result(10)
        producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                             "linger.ms": 5})
        for i in range(2000):
            producer.produce("rd", key=b"%d" % i, value=b"v%d" % i)
        assert producer.flush(30) == 0
        transactional = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": "rd-tx"})
        transactional.init_transactions(20)
        for committed in (True, False, True):
            transactional.begin_transaction()
            for i in range(40):
                transactional.produce("rd", value=b"%s-%d" % (b"commit" if committed else b"abort", i),
                                      partition=i % 8)
            if committed:
                transactional.commit_transaction(20)
            else:
                transactional.abort_transaction(20)
        consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "rd-group",
                                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                             "isolation.level": "read_committed"})
        consumer.subscribe(["rd"])
        values = []
        deadline = time.monotonic() + 60
        while len(values) < 2080 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        consumer.commit(asynchronous=False)
        committed = consumer.committed([confluent_kafka.TopicPartition("rd", p) for p in range(8)], timeout=10)
        consumer.close()
        assert sorted(values) == sorted([b"v%d" % i for i in range(2000)] +
                                        [b"commit-%d" % i for i in range(40)] * 2)
        assert all(tp.error is None and tp.offset > 0 for tp in committed), committed  # kept by worker 0


def test_killed_worker_loses_nothing_acknowledged(tmp_path):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with running_broker(tmp_path, config={"num.worker.processes": 3, "num.partitions": 6}) as broker:
        bootstrap = broker.bootstrap
        with WireClient(bootstrap) as client:
            _create(client, "kill", 6)
        producer = confluent_kafka.Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 2,
            "message.timeout.ms": 120000, "retry.backoff.ms": 50})
        acked: list[bytes] = []
        failed: list = []

        def delivered(error, message):
            if error is None:
                acked.append(message.value())
            else:
                failed.append(error)

        workers = _children(broker.process.pid)
        assert len(workers) == 3
        killed = False
        for i in range(30000):
            producer.produce("kill", value=b"%08d" % i, on_delivery=delivered)
            producer.poll(0)
            if i == 10000:
                producer.flush(30)
                os.kill(workers[1], signal.SIGKILL)  # a worker, not the whole broker
                killed = True
        assert killed
        assert producer.flush(120) == 0
        assert failed == []
        assert len(acked) == 30000
        # The supervisor started the workers again.
        assert len(_children(broker.process.pid)) == 3
        consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "kill-check",
                                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe(["kill"])
        seen: list[bytes] = []
        deadline = time.monotonic() + 90
        while len(seen) < len(acked) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen.append(message.value())
        time.sleep(1)
        while (message := consumer.poll(0.5)) is not None:
            if message.error() is None:
                seen.append(message.value())
        consumer.close()
        assert len(seen) == len(set(seen)), "duplicates"
        assert set(acked) <= set(seen), "acknowledged records lost"
    assert "was killed by signal 9" in broker.log_path.read_text()


def test_sigterm_stops_every_worker_cleanly(tmp_path):
    with running_broker(tmp_path, config={"num.worker.processes": 2}) as broker:
        with WireClient(broker.bootstrap) as client:
            _create(client, "stop", 4)
            before = _produce_all(client, rounds=3, name="stop", partitions=4)
        broker.stop()
        log_dir = broker.log_dir
        assert (log_dir / ".kafka_cleanshutdown").exists()
        assert not [name for name in os.listdir(log_dir) if ".worker-" in name]
        checkpoint = (log_dir / "recovery-point-offset-checkpoint").read_text()
        assert all(f"stop {p} " in checkpoint for p in range(4))
        broker.start()
        with WireClient(broker.bootstrap) as client:
            after = _produce_all(client, rounds=1, name="stop", partitions=4)[0]
        ends = [p["base_offset"] for t in before[-1]["responses"] for p in t["partition_responses"]]
        counts = [1 + (p + 2) % 4 for p in range(4)]
        assert [p["base_offset"] for t in after["responses"] for p in t["partition_responses"]] == [
            e + c for e, c in zip(ends, counts)]


def test_listener_in_use_is_one_line(tmp_path):
    with running_broker(tmp_path / "first", config={"num.worker.processes": 2}) as broker:
        done = subprocess.run([sys.executable, "-m", "cli", "serve", "--set", f"listeners=PLAINTEXT://{broker.bootstrap}",
                               "--set", f"log.dirs={tmp_path / 'second'}", "--set", "num.worker.processes=2"],
                              cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"kafka-wire: Socket server failed to bind to {broker.bootstrap}: Address already in use."]


def test_unusable_log_dir_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    done = subprocess.run([sys.executable, "-m", "cli", "serve", "--set", f"listeners=PLAINTEXT://127.0.0.1:{free_port()}",
                           "--set", f"log.dirs={blocker}", "--set", "num.worker.processes=2"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafka-wire: Failed to create or validate data directory"), lines


def test_describe_log_dirs_lists_every_workers_partitions(pair):
    answers = []
    for broker in pair:
        with WireClient(broker.bootstrap) as client:
            for topics in (None, [{"topic": TOPIC, "partitions": [5, 1, 2]}]):
                answer = _plain(client.call("DescribeLogDirs", 4, {"topics": topics}))
                # (Sizes left out: the long-poll test appended to one broker only.)
                answers.append([(r["error_code"], [(t["name"], [(p["partition_index"], p["offset_lag"],
                                                                 p["is_future_key"], p["partition_size"] > 0)
                                                                for p in t["partitions"]])
                                                   for t in r["topics"]]) for r in answer["results"]])
    assert answers[:2] == answers[2:]
    partitions = [p[0] for name, parts in answers[2][0][1] if name == TOPIC for p in parts]
    assert partitions == list(range(PARTITIONS))


def _rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def test_process_metrics_cover_every_worker(tmp_path):
    from prometheus_client.parser import text_string_to_metric_families
    import urllib.request

    port = free_port()
    with running_broker(tmp_path, config={"num.worker.processes": 2, "metrics.port": port}) as broker:
        pids = [broker.process.pid] + _children(broker.process.pid)
        assert len(pids) == 3
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
        rss = [_rss_bytes(pid) for pid in pids]
    samples = {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples}
    # The broker's memory is its three processes', not worker 0's alone.
    assert 0.8 * sum(rss) <= samples["process_resident_memory_bytes"] <= 1.25 * sum(rss)
    assert samples["process_resident_memory_bytes"] > 1.5 * max(rss)
    assert samples["process_open_fds"] > 0 and samples["process_cpu_seconds_total"] > 0
