"""A streams group member speaking StreamsGroupHeartbeat as Kafka Streams does, for tests that need
a streams group on a broker (kafka-wire or the reference Kafka) without a Streams application."""

from __future__ import annotations

import time

from client import WireClient

RETRIABLE = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def stateless_topology(topic: str) -> dict:
    return {"epoch": 0, "subtopologies": [{
        "subtopology_id": "0", "source_topics": [topic], "source_topic_regex": [], "state_changelog_topics": [],
        "repartition_sink_topics": [], "repartition_source_topics": [], "copartition_groups": []}]}


def streams_member(bootstrap: str, group: str, member: str, topology: dict, timeout: float = 30.0) -> WireClient:
    """Joins `group` with `topology`, heartbeats until it has active tasks, reports them owned (the
    member is then reconciled) and returns its open connection (close it to stop heartbeating)."""
    client = WireClient(bootstrap, timeout=15.0, client_id="tools-streams")
    body = {"group_id": group, "member_id": member, "member_epoch": 0, "endpoint_information_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000, "topology": topology,
            "active_tasks": [], "standby_tasks": [], "warmup_tasks": [], "process_id": f"process-{member}",
            "user_endpoint": None, "client_tags": None, "task_offsets": None, "task_end_offsets": None,
            "shutdown_application": False}
    deadline = time.monotonic() + timeout
    # The coordinator first: __consumer_offsets is created by FindCoordinator, and loaded a moment later.
    while (answer := client.call("StreamsGroupHeartbeat", 0, body)).error_code in RETRIABLE:
        assert time.monotonic() < deadline, f"no coordinator for {group}: {answer}"
        client.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": [group]})
        time.sleep(0.5)
    assert answer.error_code == 0, answer
    active = None
    while True:
        if answer.active_tasks:
            active = [{"subtopology_id": t.subtopology_id, "partitions": list(t.partitions)}
                      for t in answer.active_tasks]
        if active:
            break
        assert time.monotonic() < deadline, f"no tasks for {member}: {answer}"
        time.sleep(0.5)
        answer = client.call("StreamsGroupHeartbeat", 0, dict(
            body, member_epoch=answer.member_epoch, topology=None, active_tasks=None, standby_tasks=None,
            warmup_tasks=None, process_id=None))
        assert answer.error_code == 0, answer
    client.call("StreamsGroupHeartbeat", 0, dict(body, member_epoch=answer.member_epoch, topology=None,
                                                 active_tasks=active, process_id=None))
    return client


def leave(client: WireClient, group: str, member: str) -> None:
    """The member leaves the group (epoch -1), as Kafka Streams does when it closes."""
    answer = client.call("StreamsGroupHeartbeat", 0, {
        "group_id": group, "member_id": member, "member_epoch": -1, "endpoint_information_epoch": 0})
    assert answer.error_code == 0, answer


def streams_group_members(bootstrap: str, group: str) -> list | None:
    """The members StreamsGroupDescribe shows at the group's coordinator (found through any live
    broker of `bootstrap`, a comma-separated list); None while none answers."""
    for address in bootstrap.split(","):
        try:
            with WireClient(address, timeout=15.0) as client:
                found = client.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": [group]})
                coordinator = found.coordinators[0]
                if coordinator.error_code != 0:
                    continue
            with WireClient(f"{coordinator.host}:{coordinator.port}", timeout=15.0) as client:
                described = client.call("StreamsGroupDescribe", 0, {"group_ids": [group],
                                                                    "include_authorized_operations": False})
        except OSError:
            continue
        entry = described.groups[0]
        if entry.error_code in RETRIABLE:
            continue
        assert entry.error_code == 0, entry
        return list(entry.members)
    return None
