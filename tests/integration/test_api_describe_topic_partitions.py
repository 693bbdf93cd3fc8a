"""DescribeTopicPartitions (75) as Apache Kafka answers it, and Java's Admin.describeTopics over it.

Sources (apache/kafka): core/.../server/handlers/DescribeTopicPartitionsRequestHandler.java,
core/.../server/metadata/KRaftMetadataCache.scala getTopicMetadataForDescribeTopicResponse.
"""

from __future__ import annotations

import subprocess
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from testing.broker_process import free_port, running_broker
from client import WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.primitives import ZERO_UUID

from wire_cases import create_topic, unique

pytestmark = pytest.mark.timeout(180)

JAVA_SOURCE = Path(__file__).parent.parent / "clients" / "java" / "DescribeTopicsCheck.java"
TOPIC_DESCRIBE = 1 << 8  # AclOperation.DESCRIBE's bit in topic_authorized_operations


@pytest.fixture(scope="module")
def metered_broker(tmp_path_factory):
    port = free_port()
    with running_broker(tmp_path_factory.mktemp("describe-topic-partitions"),
                        config={"metrics.port": port, "max.request.partition.size.limit": 7}) as broker:
        broker.metrics_port = port
        yield broker


@pytest.fixture
def client(metered_broker):
    with WireClient(metered_broker.bootstrap) as c:
        yield c


def describe(client, names: list[str] | None, *, limit: int = 2000, cursor: tuple[str, int] | None = None):
    return client.call("DescribeTopicPartitions", 0, {
        "topics": [{"name": n} for n in names or []], "response_partition_limit": limit,
        "cursor": None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]}})


def summary(response) -> list[tuple[str, int, list[int]]]:
    return [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in response.topics]


def test_named_topics_come_sorted_with_partitions_and_ids(client):
    b, a = unique("dtp-b"), unique("dtp-a")
    create_topic(client, b, partitions=2)
    create_topic(client, a, partitions=3)
    response = describe(client, [b, a])
    assert summary(response) == [(a, 0, [0, 1, 2]), (b, 0, [0, 1])]
    assert response.next_cursor is None
    metadata = client.call("Metadata", 12, {"topics": [{"name": a}], "allow_auto_topic_creation": False})
    [first, _] = response.topics
    assert first.topic_id == metadata.topics[0].topic_id != ZERO_UUID and first.is_internal is False
    partition = first.partitions[0]
    assert (partition.leader_id, partition.leader_epoch, partition.replica_nodes, partition.isr_nodes,
            partition.offline_replicas, partition.eligible_leader_replicas) == (
        metadata.brokers[0].node_id, metadata.topics[0].partitions[0].leader_epoch, [1], [1], [], [])
    assert first.topic_authorized_operations & TOPIC_DESCRIBE  # always filled in, unlike Metadata's


def test_unknown_and_illegal_names_are_answered_and_not_created(client):
    missing = unique("dtp-missing")
    response = describe(client, [missing, "bad/name"])
    assert summary(response) == [("bad/name", ErrorCode.INVALID_TOPIC_EXCEPTION, []),
                                 (missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
    assert all(t.topic_id == ZERO_UUID for t in response.topics)
    assert summary(describe(client, [missing])) == [(missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]


def test_the_partition_limit_pages_with_a_cursor(client):
    a, b = unique("dtp-page-a"), unique("dtp-page-b")
    create_topic(client, a, partitions=3)
    create_topic(client, b, partitions=4)
    first = describe(client, [a, b], limit=2)
    assert summary(first) == [(a, 0, [0, 1])]
    assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == (a, 2)
    second = describe(client, [a, b], limit=3, cursor=(a, 2))
    assert summary(second) == [(a, 0, [2]), (b, 0, [0, 1])]
    assert (second.next_cursor.topic_name, second.next_cursor.partition_index) == (b, 2)
    third = describe(client, [a, b], limit=2, cursor=(b, 2))
    assert summary(third) == [(b, 0, [2, 3])] and third.next_cursor is None
    # The limit falls exactly at the end of a topic: the next page starts at the next topic.
    exact = describe(client, [a, b], limit=3)
    assert summary(exact) == [(a, 0, [0, 1, 2])]
    assert (exact.next_cursor.topic_name, exact.next_cursor.partition_index) == (b, 0)


def test_the_broker_caps_the_limit_with_max_request_partition_size_limit(client):
    big = unique("dtp-big")
    create_topic(client, big, partitions=10)
    response = describe(client, [big], limit=2000)
    assert summary(response) == [(big, 0, list(range(7)))]
    assert (response.next_cursor.topic_name, response.next_cursor.partition_index) == (big, 7)


def test_a_cursor_outside_the_named_topics_or_negative_is_an_invalid_request(client):
    a = unique("dtp-cursor")
    create_topic(client, a)
    assert summary(describe(client, [a], cursor=("zzz-not-named", 0))) == [(a, ErrorCode.INVALID_REQUEST, [])]
    assert summary(describe(client, [a], cursor=(a, -1))) == [(a, ErrorCode.INVALID_REQUEST, [])]
    # A cursor past the end of its topic answers the topic with no partition at all.
    assert summary(describe(client, [a], cursor=(a, 5))) == [(a, 0, [])]


def test_no_names_means_every_topic_from_the_cursor_on(client):
    a = unique("dtp-all")
    create_topic(client, a, partitions=1)
    everything = describe(client, None, cursor=(a, 0), limit=1)
    assert summary(everything)[0] == (a, 0, [0])
    topics = client.call("Metadata", 12, {"topics": None, "allow_auto_topic_creation": False}).topics
    after = sorted(t.name for t in topics if t.name > a)
    if after:  # one partition per page: the next page starts at the next topic's partition 0
        assert (everything.next_cursor.topic_name, everything.next_cursor.partition_index) == (after[0], 0)


def _requests_served(port: int, api: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
               if sample.name == "kafka_wire_requests_total" and sample.labels.get("api") == api)


@pytest.mark.clients
@pytest.mark.parametrize("version", ["3.9.0", "4.3.0"])
def test_java_admin_describe_topics_pages_through_the_api(metered_broker, client, java_kafka_clients, version):
    """Java's Admin (3.9+) describes topics with DescribeTopicPartitions, following next_cursor."""
    a, b = unique("dtp-java-a"), unique("dtp-java-b")
    create_topic(client, a, partitions=5)
    create_topic(client, b, partitions=3)
    missing = unique("dtp-java-missing")
    before = _requests_served(metered_broker.metrics_port, "DescribeTopicPartitions")
    command = java_kafka_clients(version).program(JAVA_SOURCE)
    done = subprocess.run([*command, metered_broker.bootstrap, "2", a, b, missing],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f"{a} ok 0,1,2,3,4 leaders=1,1,1,1,1 internal=false",
        f"{b} ok 0,1,2 leaders=1,1,1 internal=false",
        f"{missing} error UnknownTopicOrPartitionException",
    ]
    # Pages of 2 partitions: the client followed the cursor (several requests), not Metadata.
    assert _requests_served(metered_broker.metrics_port, "DescribeTopicPartitions") - before >= 4
