"""AlterReplicaLogDirs (34), delegation tokens (38-41) without a token secret, UpdateFeatures (57),
ListConfigResources (74)."""

from __future__ import annotations

from ..scenario import ALL, Session, scenario


@scenario("AlterReplicaLogDirs", versions=ALL, covers=["LOG_DIR_NOT_FOUND", "UNKNOWN_TOPIC_OR_PARTITION"])
def alter_replica_log_dirs(s: Session, v: int):
    """The broker has one log dir: a move into it (no-op), into a path that is no log dir, of an
    unknown partition."""
    s.create_topic(s.topic())
    described = s.call("DescribeLogDirs", 4, {"topics": [{"topic": s.topic(), "partitions": [0]}]}, record=False)
    log_dir = described.results[0].log_dir
    s.call("AlterReplicaLogDirs", v, {"dirs": [{"path": log_dir, "topics": [
        {"name": s.topic(), "partitions": [0]}, {"name": s.topic("missing"), "partitions": [0]}]}]},
        label="into its own log dir; an unknown topic")
    s.call("AlterReplicaLogDirs", v, {"dirs": [{"path": "/no/such/log/dir", "topics": [
        {"name": s.topic(), "partitions": [0]}]}]}, label="into a path that is no log dir")


@scenario("CreateDelegationToken", versions=ALL, covers=["DELEGATION_TOKEN_AUTH_DISABLED"])
def delegation_tokens_disabled(s: Session, v: int):
    """No delegation.token.secret.key: every token API answers that tokens are disabled."""
    body = {"renewers": [], "max_lifetime_ms": -1}
    if v >= 3:
        body.update(owner_principal_type=None, owner_principal_name=None)
    s.call("CreateDelegationToken", v, body)
    other = min(v, 2)
    s.call("RenewDelegationToken", other, {"hmac": b"\x01" * 64, "renew_period_ms": -1})
    s.call("ExpireDelegationToken", other, {"hmac": b"\x01" * 64, "expiry_time_period_ms": -1})
    s.call("DescribeDelegationToken", v, {"owners": None})


@scenario("UpdateFeatures", versions=ALL, covers=["INVALID_UPDATE_VERSION"])
def update_features_validate_only(s: Session, v: int):
    """Validate-only updates: group.version to its current level, a level no broker supports, a
    feature that does not exist; v0 has no validate-only, so it only asks for the impossible."""
    def update(label, updates, validate_only=True):
        keys = []
        for feature, level in updates:
            key = {"feature": feature, "max_version_level": level}
            if v == 0:
                key["allow_downgrade"] = False
            else:
                key["upgrade_type"] = 1
            keys.append(key)
        s.call("UpdateFeatures", v, {"timeout_ms": 30000, "feature_updates": keys, "validate_only": validate_only},
               label=label)

    if v >= 1:
        update("group.version to its current level", [("group.version", 1)])
    update("a level no broker supports", [("group.version", 99)], validate_only=v >= 1)
    update("a feature that does not exist", [("no.such.feature", 1)], validate_only=v >= 1)


@scenario("ListConfigResources", versions=ALL)
def list_config_resources(s: Session, v: int):
    """The case's own topic is listed among the topics (v1: topic resources only), and the broker
    as a broker resource; other cases' topics are left out of the record."""
    s.create_topic(s.topic())
    body = {} if v == 0 else {"resource_types": [2, 4]}
    answer = s.call("ListConfigResources", v, body, record=False)
    if answer is None:
        s.record("answer", None)
        return
    s.record("error", answer.error_code)
    s.record("listed", sorted((r.resource_name, r.resource_type) for r in answer.config_resources
                              if r.resource_name in (s.topic(), "1") or r.resource_type not in (2, 4)))
