"""Makes sure a changelog topic exists with cleanup.policy=compact before a job writes to it.

Spark's Kafka sink writes to whatever topic it is given; a missing topic would be auto-created
with the broker's default cleanup policy (delete), and the "view" would then lose old keys to
retention instead of keeping the latest value of each. So the streaming job creates the topic
compacted, or checks that the existing one is, before it starts. Works against any Kafka broker
(CreateTopics v5 and DescribeConfigs v1 are served by Kafka 2.4 and later).
"""

from __future__ import annotations

from client import WireClient
from kafka_wire.errors import ErrorCode

TOPIC_RESOURCE = 2  # DescribeConfigs resource type of a topic


class ChangelogTopicError(RuntimeError):
    """The changelog topic cannot be created, or exists without compaction."""


def _first_reachable(bootstrap_servers: str, timeout: float) -> WireClient:
    errors = []
    for address in (a.strip() for a in bootstrap_servers.split(",") if a.strip()):
        try:
            return WireClient(address, timeout=timeout, client_id="kafka-wire-pipelines")
        except OSError as error:
            errors.append(f"{address}: {error}")
    raise ChangelogTopicError("no bootstrap server reachable: " + "; ".join(errors or ["none given"]))


def cleanup_policy(client: WireClient, topic: str) -> str:
    response = client.call("DescribeConfigs", 1, {"resources": [
        {"resource_type": TOPIC_RESOURCE, "resource_name": topic, "configuration_keys": ["cleanup.policy"]}]})
    result = response.results[0]
    if result.error_code:
        raise ChangelogTopicError(f"DescribeConfigs {topic}: {ErrorCode.from_code(result.error_code).name}"
                                  f" {result.error_message or ''}".rstrip())
    for entry in result.configs:
        if entry.name == "cleanup.policy":
            return entry.value or ""
    return "delete"  # Kafka's default


def ensure_compacted_topic(bootstrap_servers: str, topic: str, partitions: int = 1,
                           replication_factor: int = -1, timeout: float = 30.0) -> bool:
    """Creates `topic` with cleanup.policy=compact (True), or checks that the existing one
    is compacted (False). -1 replication factor: the broker's default.replication.factor."""
    with _first_reachable(bootstrap_servers, timeout) as client:
        response = client.call("CreateTopics", 5, {
            "topics": [{"name": topic, "num_partitions": partitions, "replication_factor": replication_factor,
                        "assignments": [], "configs": [{"name": "cleanup.policy", "value": "compact"}]}],
            "timeout_ms": int(timeout * 1000)})
        result = response.topics[0]
        if result.error_code == ErrorCode.NONE:
            return True
        if result.error_code != ErrorCode.TOPIC_ALREADY_EXISTS:
            error = ErrorCode.from_code(result.error_code).name
            raise ChangelogTopicError(f"cannot create changelog topic {topic}: {error} {result.error_message or ''}".rstrip())
        policy = cleanup_policy(client, topic)
        if "compact" not in policy.split(","):
            raise ChangelogTopicError(
                f"changelog topic {topic} exists with cleanup.policy={policy}; a view needs compaction "
                f"(kafka-configs.sh --alter --entity-type topics --entity-name {topic} "
                f"--add-config cleanup.policy=compact)")
        return False
