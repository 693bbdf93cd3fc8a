"""__consumer_offsets and __transaction_state are created on first use, as Kafka creates them.

A fresh Kafka broker's Metadata lists no internal topic. The first FindCoordinator for a group
creates __consumer_offsets (offsets.topic.num.partitions, compacted, offsets.topic.segment.bytes)
and is answered COORDINATOR_NOT_AVAILABLE (KafkaApis.getCoordinator); the client looks up again
and finds the coordinator. The same goes for a transactional id and __transaction_state. A
restarted broker loads the topics it has before it listens.
"""

from __future__ import annotations

import time

from testing.broker_process import running_broker
from client import ClusterClient, WireClient
from kafka_wire.errors import ErrorCode

from wire_cases import describe_topic_configs, metadata

INTERNAL = {"__consumer_offsets", "__transaction_state"}


def find_coordinator(client: WireClient, key: str, key_type: int = 0) -> int:
    return client.call("FindCoordinator", 3, {"key": key, "key_type": key_type}).error_code


def topic_names(client: WireClient) -> set[str]:
    return {t.name for t in metadata(client, None).topics}


def until_found(client: WireClient, key: str, key_type: int = 0) -> None:
    deadline = time.monotonic() + 10
    while (error := find_coordinator(client, key, key_type)) != ErrorCode.NONE:
        assert error == ErrorCode.COORDINATOR_NOT_AVAILABLE and time.monotonic() < deadline, error
        time.sleep(0.05)


def test_a_fresh_broker_has_no_internal_topics_until_a_coordinator_is_looked_up(tmp_path):
    config = {"offsets.topic.num.partitions": "7", "offsets.topic.segment.bytes": "1048576",
              "transaction.state.log.num.partitions": "3"}
    with running_broker(tmp_path, config=config) as broker, WireClient(broker.bootstrap) as client:
        assert not topic_names(client) & INTERNAL
        assert client.call("ListGroups", 4, {"states_filter": []}).error_code == 0  # no groups, no topic
        assert not topic_names(client) & INTERNAL

        assert find_coordinator(client, "g") == ErrorCode.COORDINATOR_NOT_AVAILABLE  # creates the topic
        [offsets] = metadata(client, ["__consumer_offsets"]).topics
        assert (offsets.error_code, offsets.is_internal, len(offsets.partitions)) == (0, True, 7)
        configs = {name: c.value for name, c in describe_topic_configs(client, "__consumer_offsets").items()}
        assert (configs["cleanup.policy"], configs["segment.bytes"]) == ("compact", "1048576")
        until_found(client, "g")
        assert "__transaction_state" not in topic_names(client)

        assert find_coordinator(client, "txn", key_type=1) == ErrorCode.COORDINATOR_NOT_AVAILABLE
        [state] = metadata(client, ["__transaction_state"]).topics
        assert (state.error_code, state.is_internal, len(state.partitions)) == (0, True, 3)
        until_found(client, "txn", key_type=1)


def test_a_group_works_from_a_fresh_broker_and_after_a_restart(tmp_path):
    with running_broker(tmp_path) as broker:
        with ClusterClient(broker.bootstrap) as cluster:  # looks the coordinator up again while unavailable
            coordinator = cluster.coordinator("g")
            committed = coordinator.call("OffsetCommit", 8, {
                "group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
                "group_instance_id": None, "retention_time_ms": -1,
                "topics": [{"name": "__consumer_offsets", "partitions": [
                    {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1,
                     "committed_metadata": None}]}]})
            assert committed.topics[0].partitions[0].error_code == 0
        broker.restart()
        with WireClient(broker.bootstrap) as client:
            # Loaded before the listeners opened: found at the first lookup.
            assert find_coordinator(client, "g") == ErrorCode.NONE
            fetched = client.call("OffsetFetch", 7, {"group_id": "g", "require_stable": False, "topics": [
                {"name": "__consumer_offsets", "partition_indexes": [0]}]})
            assert fetched.topics[0].partitions[0].committed_offset == 5
