"""The client tools against a broker process, run as a user runs them (`kafka-wire topics|produce|
consume|groups ...` in a subprocess): topic lifecycle, a produce/consume round trip per codec,
starting offsets, consumer groups with committed offsets and lag, and errors."""

from __future__ import annotations

import base64
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest

from testing.broker_process import free_port, running_broker
from client import WireClient, partition_for_key

pytestmark = pytest.mark.timeout(120)


def kafka_wire(*args: str, input: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], input=input, capture_output=True,
                          text=True, timeout=timeout)


def ok(*args: str, **kwargs) -> str:
    done = kafka_wire(*args, **kwargs)
    assert done.returncode == 0, f"kafka-wire {' '.join(args)} exited {done.returncode}\n{done.stderr}"
    return done.stdout


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def _topic_line(describe_output: str) -> str:
    return describe_output.splitlines()[0]


def _partition_lines(describe_output: str) -> list[str]:
    return [line for line in describe_output.splitlines() if line.startswith("\tTopic:")]


def _configs(describe_output: str) -> str:
    return _topic_line(describe_output).split("\tConfigs: ", 1)[1]


def test_topics_create_list_describe_alter_delete(shared_broker):
    b = ["--bootstrap-server", shared_broker.bootstrap]
    topic = unique("tools-topic")

    assert ok("topics", "create", *b, "--topic", topic, "--partitions", "3",
              "--config", "retention.ms=123456", "--config", "cleanup.policy=compact,delete") == f"Created topic {topic}.\n"
    again = kafka_wire("topics", "create", *b, "--topic", topic)
    assert again.returncode == 1
    assert "TOPIC_ALREADY_EXISTS" in again.stderr and f"'{topic}' already exists" in again.stderr
    assert ok("topics", "create", *b, "--topic", topic, "--if-not-exists") == ""

    assert ok("topics", "list", *b, "--topic", re.escape(topic)).splitlines() == [topic]
    assert topic in ok("topics", "list", *b).splitlines()

    described = ok("topics", "describe", *b, "--topic", re.escape(topic))
    with WireClient(shared_broker.bootstrap) as client:
        metadata = client.call("Metadata", 12, {"topics": [{"name": topic}]})
    topic_id = base64.urlsafe_b64encode(metadata.topics[0].topic_id.bytes).decode().rstrip("=")
    assert _topic_line(described).startswith(
        f"Topic: {topic}\tTopicId: {topic_id}\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: ")
    assert "retention.ms=123456" in _configs(described)
    assert "cleanup.policy=compact,delete" in _configs(described)
    assert _partition_lines(described) == [
        f"\tTopic: {topic}\tPartition: {p}\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: N/A\tLastKnownElr: N/A"
        for p in range(3)]

    ok("topics", "alter", *b, "--topic", re.escape(topic), "--partitions", "5",
       "--add-config", "segment.bytes=1048576", "--delete-config", "retention.ms")
    described = ok("topics", "describe", *b, "--topic", re.escape(topic))
    assert "PartitionCount: 5" in _topic_line(described)
    assert len(_partition_lines(described)) == 5
    assert "segment.bytes=1048576" in _configs(described)
    assert "retention.ms" not in _configs(described)

    shrink = kafka_wire("topics", "alter", *b, "--topic", re.escape(topic), "--partitions", "2")
    assert shrink.returncode == 1 and "INVALID_PARTITIONS" in shrink.stderr

    assert ok("topics", "delete", *b, "--topic", re.escape(topic)) == ""
    assert topic not in ok("topics", "list", *b).splitlines()
    missing = kafka_wire("topics", "describe", *b, "--topic", re.escape(topic))
    assert missing.returncode == 1 and f"Topic '{re.escape(topic)}' does not exist as expected" in missing.stderr
    assert kafka_wire("topics", "delete", *b, "--topic", re.escape(topic)).returncode == 1
    assert ok("topics", "delete", *b, "--topic", re.escape(topic), "--if-exists") == ""


def test_topics_create_takes_the_broker_defaults(broker):
    b = ["--bootstrap-server", broker.bootstrap]
    ok("topics", "create", *b, "--topic", "defaults")
    assert "PartitionCount: 1\tReplicationFactor: 1\tConfigs: " in ok("topics", "describe", *b, "--topic", "defaults")
    invalid = kafka_wire("topics", "create", *b, "--topic", "bad", "--config", "retention.ms=soon")
    assert invalid.returncode == 1 and "INVALID_CONFIG" in invalid.stderr
    assert "bad" not in ok("topics", "list", *b).splitlines()


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_then_consume_round_trip(shared_broker, codec):
    b = ["--bootstrap-server", shared_broker.bootstrap]
    topic = unique(f"tools-{codec}")
    ok("topics", "create", *b, "--topic", topic, "--partitions", "3")
    lines = [f"key-{i}:value {i} with: colons" for i in range(60)]
    ok("produce", *b, "--topic", topic, "--key-separator", ":", "--compression", codec,
       input="\n".join(lines) + "\n")

    out = ok("consume", *b, "--topic", topic, "--from-beginning", "--max-messages", "60",
             "--print-key", "--print-partition", "--timeout-ms", "10000")
    consumed = [line.split("\t") for line in out.splitlines()]
    assert sorted((key, value) for _, key, value in consumed) == sorted(
        tuple(line.split(":", 1)) for line in lines)
    # Keyed records land where Kafka's default partitioner (murmur2) puts them.
    for partition, key, _ in consumed:
        assert partition == f"Partition:{partition_for_key(key.encode(), 3)}"
    # Within a partition, in the order produced.
    for p in range(3):
        values = [int(v.split()[1]) for part, _, v in consumed if part == f"Partition:{p}"]
        assert values == sorted(values)


def test_consume_from_a_partition_and_offset(shared_broker):
    b = ["--bootstrap-server", shared_broker.bootstrap]
    topic = unique("tools-offsets")
    ok("topics", "create", *b, "--topic", topic, "--partitions", "2")
    ok("produce", *b, "--topic", topic, "--partition", "1", input="".join(f"m{i}\n" for i in range(10)))
    out = ok("consume", *b, "--topic", topic, "--partition", "1", "--offset", "7", "--max-messages", "3",
             "--print-offset", "--timeout-ms", "10000")
    assert out.splitlines() == ["Offset:7\tm7", "Offset:8\tm8", "Offset:9\tm9"]
    # Nothing arrives on partition 0: --timeout-ms ends the consumer, which says how many it read.
    empty = kafka_wire("consume", *b, "--topic", topic, "--partition", "0", "--offset", "earliest",
                       "--timeout-ms", "500")
    assert empty.returncode == 0 and empty.stdout == ""
    assert "Processed a total of 0 messages" in empty.stderr
    # Without --from-beginning a consumer starts at the end: it sees only what comes after it.
    late = kafka_wire("consume", *b, "--topic", topic, "--partition", "1", "--timeout-ms", "500")
    assert late.returncode == 0 and late.stdout == ""


def test_unreachable_broker_is_one_error_line():
    done = kafka_wire("topics", "list", "--bootstrap-server", f"127.0.0.1:{free_port()}")
    assert done.returncode == 1
    assert done.stderr.startswith("Error: cannot reach") and len(done.stderr.splitlines()) == 1


# -- consumer groups ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory):
    """A broker that completes a group's first rebalance at once (Kafka waits 3 s by default)."""
    with running_broker(tmp_path_factory.mktemp("groups"), config={"group.initial.rebalance.delay.ms": 0}) as broker:
        yield broker


def _describe_rows(output: str) -> list[list[str]]:
    lines = [line for line in output.splitlines() if line.strip()]
    header = lines.index(next(line for line in lines if line.startswith("GROUP ")))
    return [line.split() for line in lines[header + 1:]]


def test_group_consumer_commits_and_groups_show_lag(group_broker):
    b = ["--bootstrap-server", group_broker.bootstrap]
    topic, group = unique("tools-group"), unique("audit")
    ok("topics", "create", *b, "--topic", topic, "--partitions", "3")
    ok("produce", *b, "--topic", topic, "--key-separator", "=", input="".join(f"k{i}=v{i}\n" for i in range(30)))

    first = ok("consume", *b, "--topic", topic, "--group", group, "--from-beginning", "--max-messages", "10",
               "--timeout-ms", "10000").splitlines()
    assert len(first) == 10

    assert group in ok("groups", "list", *b).splitlines()
    described = kafka_wire("groups", "describe", group, *b)
    assert described.returncode == 0, described.stderr
    assert f"Consumer group '{group}' has no active members." in described.stderr
    assert described.stdout.splitlines()[1].split() == [
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    rows = _describe_rows(described.stdout)
    assert sorted(int(r[2]) for r in rows) == [0, 1, 2]
    assert sum(int(r[4]) for r in rows) == 30  # log end offsets
    committed = sum(int(r[3]) for r in rows if r[3] != "-")
    lag = sum(int(r[5]) for r in rows if r[5] != "-")
    assert (committed, lag) == (10, 20)
    assert all(r[6:] == ["-", "-", "-"] for r in rows)

    # The next member of the group continues at the committed offsets: the other 20, no repeats.
    second = ok("consume", *b, "--topic", topic, "--group", group, "--timeout-ms", "1500").splitlines()
    assert sorted(first + second) == sorted(f"v{i}" for i in range(30))
    rows = _describe_rows(ok("groups", "describe", group, *b))
    assert sum(int(r[5]) for r in rows) == 0

    state = ok("groups", "list", *b, "--state")
    assert [group, "Empty"] in [line.split() for line in state.splitlines()]


def test_groups_describe_an_active_member(group_broker):
    b = ["--bootstrap-server", group_broker.bootstrap]
    topic, group = unique("tools-active"), unique("live")
    ok("topics", "create", *b, "--topic", topic, "--partitions", "3")
    consumer = subprocess.Popen([sys.executable, "-m", "cli", "consume", *b, "--topic", topic,
                                 "--group", group, "--client-id", "console-1", "--timeout-ms", "60000"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The member is listed from its JoinGroup on, with no partitions and the group in
        # CompletingRebalance until its SyncGroup: wait for it to hold its assignment.
        deadline = time.monotonic() + 30
        while True:
            members = kafka_wire("groups", "describe", group, *b, "--members")
            rows = _describe_rows(members.stdout) if members.returncode == 0 and "GROUP" in members.stdout else []
            if rows and rows[0][-1] != "0":
                break
            assert time.monotonic() < deadline, f"the consumer never got its partitions: {members.stdout}{members.stderr}"
            time.sleep(0.3)
        [row] = rows
        assert row[0] == group and row[1].startswith("console-1-") and row[2] == "/127.0.0.1"
        assert row[3:] == ["console-1", "3"]

        state = _describe_rows(ok("groups", "describe", group, *b, "--state"))
        assert state == [[group, f"127.0.0.1:{group_broker.port}", "(1)", "range", "Stable", "1"]]

        rows = _describe_rows(ok("groups", "describe", group, *b))
        assert [(r[1], r[2], r[6]) for r in rows] == [(topic, str(p), row[1]) for p in range(3)]
    finally:
        consumer.send_signal(signal.SIGINT)  # like Ctrl-C: commit, leave the group, exit
        _, stderr = consumer.communicate(timeout=30)
    assert consumer.returncode == 0, stderr
    assert "Processed a total of 0 messages" in stderr
    after = kafka_wire("groups", "describe", group, *b, "--state")
    assert after.returncode == 0 and "Empty" in after.stdout and "has no active members" in after.stderr


def test_groups_describe_unknown_group(group_broker):
    done = kafka_wire("groups", "describe", unique("nobody"), "--bootstrap-server", group_broker.bootstrap)
    assert done.returncode == 1 and "does not exist" in done.stderr


def test_consume_read_committed_skips_aborted_transactions(shared_broker):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    b = ["--bootstrap-server", shared_broker.bootstrap]
    topic = unique("tools-txn")
    ok("topics", "create", *b, "--topic", topic, "--partitions", "1")
    producer = confluent_kafka.Producer({"bootstrap.servers": shared_broker.bootstrap,
                                         "transactional.id": unique("tools-txn")})
    producer.init_transactions(30)
    for outcome in ("committed-1", "aborted-1", "committed-2", "aborted-2"):
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic, f"{outcome}.{i}".encode(), partition=0)
        producer.flush(30)
        if outcome.startswith("committed"):
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)

    def consume(isolation: str) -> list[str]:
        return ok("consume", *b, "--topic", topic, "--from-beginning", "--isolation-level", isolation,
                  "--timeout-ms", "1500").splitlines()

    assert consume("read_committed") == [f"committed-{t}.{i}" for t in (1, 2) for i in range(3)]
    # Transaction markers (control batches) are never printed; aborted records are, uncommitted.
    assert len(consume("read_uncommitted")) == 12


def test_tools_against_a_three_broker_cluster(zookeeper_installed):
    """Leaders and the group coordinator spread over three brokers: every request must go to the
    right one (the tools find them through Metadata and FindCoordinator)."""
    from testing.cluster import running_cluster

    with running_cluster(3) as cluster:
        cluster.wait_for_brokers(set(cluster.brokers), timeout=30)
        b = ["--bootstrap-server", cluster.bootstrap]
        ok("topics", "create", *b, "--topic", "spread", "--partitions", "3", "--replication-factor", "3")
        described = ok("topics", "describe", *b, "--topic", "spread")
        assert "PartitionCount: 3\tReplicationFactor: 3" in _topic_line(described)
        leaders = {re.search(r"Leader: (\d+)", line).group(1) for line in _partition_lines(described)}
        assert len(leaders) == 3  # one leader per broker: the produce below must use all three

        ok("produce", *b, "--topic", "spread", "--key-separator", ":", input="".join(f"k{i}:v{i}\n" for i in range(30)))
        out = ok("consume", *b, "--topic", "spread", "--group", "spread-group", "--from-beginning",
                 "--max-messages", "30", "--timeout-ms", "15000")
        assert sorted(out.splitlines()) == sorted(f"v{i}" for i in range(30))
        rows = _describe_rows(ok("groups", "describe", "spread-group", *b))
        assert sorted((r[2], r[5]) for r in rows) == [("0", "0"), ("1", "0"), ("2", "0")]
        assert sum(int(r[3]) for r in rows) == 30
