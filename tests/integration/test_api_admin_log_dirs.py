"""DescribeLogDirs as Apache Kafka answers it (KafkaApis.handleDescribeLogDirsRequest,
ReplicaManager.describeLogDirs), through WireClient and through Java's Admin.describeLogDirs
(what kafka-log-dirs.sh and the Kafka UIs call)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testing.broker_process import running_broker
from client import WireClient

from wire_cases import batch, create_topic, error_name, produce, unique

CLIENTS = Path(__file__).resolve().parent.parent / "clients"


@pytest.fixture(scope="module")
def two_dir_broker(tmp_path_factory):
    root = tmp_path_factory.mktemp("log-dirs")
    dirs = [root / "data-a", root / "data-b"]
    with running_broker(root, config={"log.dirs": ",".join(str(d) for d in dirs)}) as broker:
        broker.dirs = dirs
        yield broker


@pytest.fixture
def client(two_dir_broker):
    with WireClient(two_dir_broker.bootstrap) as c:
        yield c


def _describe(client, topics, version=4):
    return client.call("DescribeLogDirs", version, {"topics": topics})


def _partitions(result) -> dict[tuple[str, int], tuple[int, int, bool]]:
    return {(t.name, p.partition_index): (p.partition_size, p.offset_lag, p.is_future_key)
            for t in result.topics for p in t.partitions}


def test_every_dir_with_its_partitions_sizes_and_space(two_dir_broker, client):
    topic = unique("dirs")
    create_topic(client, topic, partitions=2)
    produce(client, topic, batch([b"x" * 500]), partition=0)
    response = _describe(client, None)
    assert response.error_code == 0
    assert [r.log_dir for r in response.results] == [str(d) for d in two_dir_broker.dirs]
    found = {}
    for result in response.results:
        assert result.error_code == 0
        assert result.total_bytes > 0 and 0 <= result.usable_bytes <= result.total_bytes
        for tp, info in _partitions(result).items():
            found[tp] = (result.log_dir, info)
    # The two partitions went to different dirs (the least loaded one), each listed once.
    assert found[(topic, 0)][0] != found[(topic, 1)][0]
    size0, lag0, future0 = found[(topic, 0)][1]
    assert size0 > 500 and (lag0, future0) == (0, False)
    assert found[(topic, 1)][1] == (0, 0, False)
    # The size is the partition's segments on disk.
    partition_dir = Path(found[(topic, 0)][0]) / f"{topic}-0"
    assert size0 == sum(f.stat().st_size for f in partition_dir.glob("*.log"))


def test_topic_filter_and_versions(client):
    topic = unique("dirs-filter")
    create_topic(client, topic, partitions=2)
    response = _describe(client, [{"topic": topic, "partitions": [1, 9]}, {"topic": "no-such-topic", "partitions": [0]}])
    listed = {tp for r in response.results for tp in _partitions(r)}
    assert listed == {(topic, 1)}
    # Dirs without any wanted partition are still listed, with no topics.
    assert len(response.results) == 2 and sum(1 for r in response.results if not r.topics) == 1
    assert all(t.partitions for r in response.results for t in r.topics)
    # v1-v3 have no disk space fields (decoded as their defaults).
    for version in (1, 2, 3):
        old = _describe(client, [{"topic": topic, "partitions": [0]}], version=version)
        assert [(r.total_bytes, r.usable_bytes) for r in old.results] == [(-1, -1), (-1, -1)]
        assert {tp for r in old.results for tp in _partitions(r)} == {(topic, 0)}
    # v5 says whether each dir is cordoned (KIP-1066): none is here, as on Kafka 4.3 without cordoned.log.dirs.
    latest = _describe(client, [{"topic": topic, "partitions": [0]}], version=5)
    assert [r.is_cordoned for r in latest.results] == [False, False]
    assert all(r.total_bytes > 0 for r in latest.results)
    assert {tp for r in latest.results for tp in _partitions(r)} == {(topic, 0)}


def test_unreadable_dir_is_a_storage_error(two_dir_broker, client):
    gone = two_dir_broker.dirs[1]
    moved = gone.with_name(gone.name + ".moved")
    os.rename(gone, moved)
    try:
        results = {r.log_dir: r for r in _describe(client, None).results}
    finally:
        os.rename(moved, gone)
    assert error_name(results[str(gone)].error_code) == "KAFKA_STORAGE_ERROR"
    assert results[str(gone)].topics == []
    assert results[str(two_dir_broker.dirs[0])].error_code == 0


def test_java_admin_describe_log_dirs(two_dir_broker, client, java_kafka_clients):
    import subprocess

    topic = unique("dirs-java")
    create_topic(client, topic, partitions=1)
    produce(client, topic, batch([b"y" * 300]))
    command = java_kafka_clients("4.3.0").program(CLIENTS / "java" / "AdminConfigsCheck.java")
    done = subprocess.run([*command, two_dir_broker.bootstrap, "logdirs", "1"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    dirs = [line.split() for line in lines if line.startswith("LOGDIR ")]
    assert sorted(d[1] for d in dirs) == sorted(str(d) for d in two_dir_broker.dirs)
    assert all(d[2] == "NONE" and int(d[3]) > 0 and int(d[4]) >= 0 for d in dirs)
    replicas = [line.split() for line in lines if line.startswith(f"REPLICA {topic} ")]
    assert len(replicas) == 1
    _, _, partition, size, lag, future = replicas[0]
    assert (partition, lag, future) == ("0", "0", "false") and int(size) > 300
