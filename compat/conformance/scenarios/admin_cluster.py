"""DescribeCluster (60), DescribeLogDirs (35), ElectLeaders (43), reassignments (45, 46), client quotas
(48, 49), SCRAM credentials (50, 51), ACL APIs without an authorizer (29-31)."""

from __future__ import annotations

from ..scenario import ALL, Session, scenario


@scenario("DescribeCluster", versions=ALL)
def describe_cluster(s: Session, v: int):
    s.call("DescribeCluster", v, {"include_cluster_authorized_operations": True, "endpoint_type": 1,
                                  "include_fenced_brokers": False})
    if v >= 1:
        s.call("DescribeCluster", v, {"include_cluster_authorized_operations": False, "endpoint_type": 2,
                                      "include_fenced_brokers": False}, label="controllers from a broker")


@scenario("DescribeLogDirs", versions=ALL)
def describe_log_dirs(s: Session, v: int):
    """One topic's partitions (sizes after a produce); an unknown topic."""
    s.create_topic(s.topic(), partitions=2)
    s.produce(s.topic(), 0, [(b"k", b"v" * 100)])
    s.call("DescribeLogDirs", v, {"topics": [{"topic": s.topic(), "partitions": [0, 1, 5]},
                                             {"topic": s.topic("missing"), "partitions": [0]}]})


@scenario("ElectLeaders", versions=ALL, covers=["UNKNOWN_TOPIC_OR_PARTITION"])
def elect_leaders(s: Session, v: int):
    """Preferred election where the preferred replica already leads; unknown partitions."""
    s.create_topic(s.topic())
    s.call("ElectLeaders", v, {"election_type": 0, "timeout_ms": 30000, "topic_partitions": [
        {"topic": s.topic(), "partitions": [0, 3]}, {"topic": s.topic("missing"), "partitions": [0]}]})
    if v >= 1:
        s.call("ElectLeaders", v, {"election_type": 1, "timeout_ms": 30000, "topic_partitions": [
            {"topic": s.topic(), "partitions": [0]}]}, label="unclean where the leader is alive")


@scenario("ListPartitionReassignments", versions=ALL)
def list_partition_reassignments(s: Session, v: int):
    s.create_topic(s.topic())
    s.call("ListPartitionReassignments", v, {"timeout_ms": 30000, "topics": [
        {"name": s.topic(), "partition_indexes": [0]}, {"name": s.topic("missing"), "partition_indexes": [0]}]})


@scenario("AlterPartitionReassignments", versions=ALL)
def alter_partition_reassignments(s: Session, v: int):
    """Moves onto the replica it has (a no-op), onto an unknown broker, cancel with none in progress."""
    s.create_topic(s.topic())

    def alter(label, replicas, topic=None):
        s.call("AlterPartitionReassignments", v, {"timeout_ms": 30000, "allow_replication_factor_change": True,
                                                  "topics": [{"name": topic or s.topic(), "partitions": [
                                                      {"partition_index": 0, "replicas": replicas}]}]}, label=label)

    alter("same replicas", [1])
    alter("unknown broker", [5])
    alter("cancel with none in progress", None)
    alter("unknown topic", [1], topic=s.topic("missing"))


@scenario("DescribeClientQuotas", versions=ALL)
def client_quotas(s: Session, v: int):
    """Set a user and a client-id quota, describe them (exact and by filter), remove one, bad keys."""
    user = s.topic("user")
    client = s.topic("client")
    alter_v = min(v, 1)
    s.call("AlterClientQuotas", alter_v, {"validate_only": False, "entries": [
        {"entity": [{"entity_type": "user", "entity_name": user}],
         "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]},
        {"entity": [{"entity_type": "client-id", "entity_name": client}],
         "ops": [{"key": "consumer_byte_rate", "value": 2048.0, "remove": False},
                 {"key": "request_percentage", "value": 50.0, "remove": False}]}]}, label="set")
    # Kafka applies quota changes through its metadata log: wait until both are visible.
    s.wait_until(lambda: _quota_entries(s, v, "client-id", client) == 1, what="the client-id quota to be visible")
    s.call("DescribeClientQuotas", v, {"strict": True, "components": [
        {"entity_type": "user", "match_type": 0, "match": user}]}, label="exact user")
    s.call("DescribeClientQuotas", v, {"strict": False, "components": [
        {"entity_type": "client-id", "match_type": 0, "match": client}]}, label="client id, not strict")
    s.call("AlterClientQuotas", alter_v, {"validate_only": False, "entries": [
        {"entity": [{"entity_type": "user", "entity_name": user}],
         "ops": [{"key": "producer_byte_rate", "value": 0.0, "remove": True}]},
        {"entity": [{"entity_type": "user", "entity_name": user}],
         "ops": [{"key": "no_such_quota", "value": 1.0, "remove": False}]},
        {"entity": [{"entity_type": "nobody", "entity_name": "x"}],
         "ops": [{"key": "producer_byte_rate", "value": 1.0, "remove": False}]}]}, label="remove and bad keys")
    s.wait_until(lambda: _quota_entries(s, v, "user", user) == 0, what="the user quota to be removed")
    s.call("DescribeClientQuotas", v, {"strict": True, "components": [
        {"entity_type": "user", "match_type": 0, "match": user}]}, label="user after removal")


def _quota_entries(s: Session, v: int, entity_type: str, name: str) -> int:
    answer = s.call("DescribeClientQuotas", v, {"strict": True, "components": [
        {"entity_type": entity_type, "match_type": 0, "match": name}]}, record=False)
    return -1 if answer is None else len(answer.entries or [])


@scenario("DescribeUserScramCredentials", versions=ALL, covers=["RESOURCE_NOT_FOUND"])
def scram_credentials(s: Session, v: int):
    """Upsert a SCRAM-SHA-256 credential, describe it and an unknown user, delete it, bad iterations."""
    user = s.topic("user")
    s.call("AlterUserScramCredentials", 0, {"deletions": [], "upsertions": [
        {"name": user, "mechanism": 1, "iterations": 8192, "salt": b"0123456789abcdef",
         "salted_password": b"\x01" * 32}]}, label="upsert")
    s.call("DescribeUserScramCredentials", v, {"users": [{"name": user}, {"name": s.topic("nobody")}]},
           label="describe")
    s.call("AlterUserScramCredentials", 0, {"deletions": [{"name": user, "mechanism": 1},
                                                          {"name": s.topic("nobody"), "mechanism": 1}],
                                            "upsertions": [{"name": s.topic("low"), "mechanism": 2,
                                                            "iterations": 10, "salt": b"salt",
                                                            "salted_password": b"\x02" * 64}]},
           label="delete, unknown, too few iterations")


@scenario("DescribeAcls", versions=ALL, covers=["SECURITY_DISABLED"])
def acls_without_authorizer(s: Session, v: int):
    """No authorizer configured: each ACL API answers SECURITY_DISABLED."""
    s.call("DescribeAcls", v, {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                               "principal_filter": None, "host_filter": None, "operation": 1,
                               "permission_type": 1})
    s.call("CreateAcls", v, {"creations": [{"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3,
                                            "principal": "User:alice", "host": "*", "operation": 3,
                                            "permission_type": 3}]})
    s.call("DeleteAcls", v, {"filters": [{"resource_type_filter": 2, "resource_name_filter": "t",
                                          "pattern_type_filter": 3, "principal_filter": None, "host_filter": None,
                                          "operation": 1, "permission_type": 1}]})
