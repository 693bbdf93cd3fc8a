"""SASL authentication and ACL authorization on the "secure" profile: clients on SASL_PLAINTEXT
(SCRAM-SHA-256 and PLAIN), Kafka's StandardAuthorizer, admin a super user, alice and bob not.

SCRAM's server-first-message carries a random nonce and salt, and its server-final-message a
signature over them: those answers are recorded as what a client checks (the nonce extends the
client's, the iterations, the signature verifies), not as bytes.
"""

from __future__ import annotations

from kafka_wire.acls import AclOperation as Op, AclPermissionType as Perm, PatternType, ResourceType as Res
from client import ClientSecurity
from kafka_wire.framing import size_prefixed
from kafka_wire.sasl import SCRAM_MECHANISMS, ScramClient, plain_token

from ..profiles import SECURE_USERS
from ..scenario import ALL, T0, CaseFailed, Session, scenario

SECURE = "secure"
SCRAM = "SCRAM-SHA-256"


def _anonymous(s: Session, name: str) -> str:
    """A connection to the SASL listener that has not logged in."""
    s.conn(name, security=False)
    return name


def _handshake(s: Session, conn: str, mechanism: str, version: int = 1, record: bool = True):
    return s.call("SaslHandshake", version, {"mechanism": mechanism}, conn=conn, record=record,
                  label=f"SaslHandshake v{version} {mechanism}")


def _scram_first(s: Session, conn: str, v: int, client: ScramClient, label: str):
    """SaslAuthenticate with the client-first-message; records the answer with the server-first-message
    reduced to what a client checks."""
    answer = s.call("SaslAuthenticate", v, {"auth_bytes": client.first()}, conn=conn, record=False)
    if answer is None:
        s.record(label, {"connection": "closed"})
        return None
    s.record(label, {**_authenticate_fields(answer), "auth_bytes": _server_first_shape(client, bytes(answer.auth_bytes))})
    return answer


def _authenticate_fields(answer) -> dict:
    data = answer.to_dict()
    data.pop("auth_bytes", None)
    data.pop("throttle_time_ms", None)
    return data


def _server_first_shape(client: ScramClient, token: bytes):
    if not token:
        return ""
    attrs = dict(a.split("=", 1) for a in token.decode().split(","))
    return {"nonce extends the client's": attrs.get("r", "").startswith(client.nonce) and len(attrs["r"]) > len(
        client.nonce), "salt": bool(attrs.get("s")), "iterations": attrs.get("i"), "attributes": sorted(attrs)}


def _scram_login(s: Session, conn: str, v: int, user: str, password: str, label: str = "") -> None:
    """A whole SCRAM exchange in SaslAuthenticate v`v` requests, each answer recorded as a client sees it."""
    client = ScramClient(SCRAM_MECHANISMS[SCRAM], user, password)
    first = _scram_first(s, conn, v, client, f"{label}client-first")
    if first is None or first.error_code:
        return
    final = s.call("SaslAuthenticate", v, {"auth_bytes": client.final(bytes(first.auth_bytes))}, conn=conn,
                   record=False)
    if final is None:
        s.record(f"{label}client-final", {"connection": "closed"})
        return
    s.record(f"{label}client-final", {**_authenticate_fields(final), "server signature verifies":
                                      bool(final.auth_bytes) and client.verify(bytes(final.auth_bytes))})


def _metadata_probe(s: Session, conn: str, label: str):
    """Whether the connection still serves requests (and as whom: the brokers it may see)."""
    return s.call("Metadata", 12, {"topics": [], "allow_auto_topic_creation": False,
                                   "include_topic_authorized_operations": False}, conn=conn, label=label)


# -- SaslHandshake ----------------------------------------------------------------------------------------


@scenario("SaslHandshake", versions=ALL, covers=["UNSUPPORTED_SASL_MECHANISM"], profile=SECURE)
def sasl_handshake_unknown_mechanism(s: Session, v: int):
    """A mechanism the listener does not enable (SCRAM-SHA-512, GSSAPI): the answer lists the enabled ones;
    then whether the connection is still open."""
    for mechanism in ("SCRAM-SHA-512", "GSSAPI"):
        conn = _anonymous(s, mechanism)
        _handshake(s, conn, mechanism, v)
        _handshake(s, conn, "PLAIN", v)


@scenario("SaslHandshake", versions=ALL, profile=SECURE)
def sasl_handshake_enabled_mechanisms(s: Session, v: int):
    """SaslHandshake with each enabled mechanism, after ApiVersions as clients do, and without it."""
    for mechanism in ("PLAIN", SCRAM):
        conn = _anonymous(s, f"{mechanism} after ApiVersions")
        s.call("ApiVersions", 3, {"client_software_name": "conformance", "client_software_version": "1.0"},
               conn=conn, record=False)
        _handshake(s, conn, mechanism, v)
        _handshake(s, _anonymous(s, mechanism), mechanism, v)


@scenario("SaslHandshake", covers=["ILLEGAL_SASL_STATE"], profile=SECURE)
def sasl_handshake_after_login(s: Session):
    """SaslHandshake and SaslAuthenticate on a connection that has logged in, and on the PLAINTEXT listener
    (no SASL there)."""
    s.call("SaslHandshake", 1, {"mechanism": "PLAIN"}, label="SaslHandshake after login")
    s.call("SaslAuthenticate", 2, {"auth_bytes": plain_token("alice", SECURE_USERS["alice"])},
           label="SaslAuthenticate after login")
    _metadata_probe(s, "main", "still open")
    plaintext = s.target.extra["plaintext"]
    s.conn("plaintext", security=False, bootstrap=plaintext)
    s.call("SaslHandshake", 1, {"mechanism": "PLAIN"}, conn="plaintext", label="SaslHandshake on PLAINTEXT")
    s.call("SaslAuthenticate", 2, {"auth_bytes": plain_token("alice", SECURE_USERS["alice"])}, conn="plaintext",
           label="SaslAuthenticate on PLAINTEXT")


@scenario("SaslHandshake", versions=(0,), profile=SECURE)
def sasl_handshake_v0_raw_tokens(s: Session, v: int):
    """SaslHandshake v0, then the tokens as raw frames (size and token, no header: clients before KIP-152):
    PLAIN and SCRAM logins, then Metadata on the logged-in connection; a wrong PLAIN password."""
    conn = _anonymous(s, "plain")
    _handshake(s, conn, "PLAIN", v)
    s.raw(size_prefixed(plain_token("alice", SECURE_USERS["alice"])), conn=conn, label="raw PLAIN token")
    _metadata_probe(s, conn, "Metadata after a raw PLAIN login")

    conn = _anonymous(s, "scram")
    _handshake(s, conn, SCRAM, v)
    client = ScramClient(SCRAM_MECHANISMS[SCRAM], "alice", SECURE_USERS["alice"])
    wire = s.conn(conn)
    wire.send_raw(size_prefixed(client.first()))
    server_first = bytes(wire.read_frame())
    s.record("raw client-first", _server_first_shape(client, server_first))
    wire.send_raw(size_prefixed(client.final(server_first)))
    s.record("raw client-final: server signature verifies", client.verify(bytes(wire.read_frame())))
    _metadata_probe(s, conn, "Metadata after a raw SCRAM login")

    conn = _anonymous(s, "wrong")
    _handshake(s, conn, "PLAIN", v)
    s.raw(size_prefixed(plain_token("alice", "wrong")), conn=conn, label="raw PLAIN token, wrong password")


# -- SaslAuthenticate -------------------------------------------------------------------------------------


@scenario("SaslAuthenticate", versions=ALL, profile=SECURE)
def sasl_authenticate_plain(s: Session, v: int):
    """A PLAIN login (session_lifetime_ms from v1), then a request on the logged-in connection."""
    conn = _anonymous(s, "alice")
    _handshake(s, conn, "PLAIN", record=False)
    s.call("SaslAuthenticate", v, {"auth_bytes": plain_token("alice", SECURE_USERS["alice"])}, conn=conn)
    _metadata_probe(s, conn, "Metadata as alice")


@scenario("SaslAuthenticate", versions=ALL, profile=SECURE)
def sasl_authenticate_scram(s: Session, v: int):
    """A SCRAM-SHA-256 login (two SaslAuthenticate round trips), then a request on the logged-in connection."""
    conn = _anonymous(s, "alice")
    _handshake(s, conn, SCRAM, record=False)
    _scram_login(s, conn, v, "alice", SECURE_USERS["alice"])
    _metadata_probe(s, conn, "Metadata as alice")


@scenario("SaslAuthenticate", versions=ALL, covers=["SASL_AUTHENTICATION_FAILED"], profile=SECURE)
def sasl_authenticate_wrong_password(s: Session, v: int):
    """A wrong password with PLAIN and with SCRAM: the answer, then whether the connection is still open."""
    _failed_logins(s, v, "alice", "wrong")


@scenario("SaslAuthenticate", versions=ALL, covers=["SASL_AUTHENTICATION_FAILED"], profile=SECURE)
def sasl_authenticate_unknown_user(s: Session, v: int):
    """A user neither broker knows, with PLAIN and with SCRAM (SCRAM fails at the client-first-message)."""
    _failed_logins(s, v, "mallory", "mallory-secret")


def _failed_logins(s: Session, v: int, user: str, password: str) -> None:
    """A PLAIN and a SCRAM login that must fail, each on its own connection, each followed by a
    request that shows whether the connection is still open."""
    conn = _anonymous(s, "plain")
    _handshake(s, conn, "PLAIN", record=False)
    s.call("SaslAuthenticate", v, {"auth_bytes": plain_token(user, password)}, conn=conn)
    _metadata_probe(s, conn, "Metadata after the failure")
    conn = _anonymous(s, "scram")
    _handshake(s, conn, SCRAM, record=False)
    _scram_login(s, conn, v, user, password)
    _metadata_probe(s, conn, "Metadata after the failure")


@scenario("SaslAuthenticate", versions=(2,), covers=["SASL_AUTHENTICATION_FAILED"], profile=SECURE)
def sasl_authenticate_malformed_tokens(s: Session, v: int):
    """PLAIN tokens Kafka's PlainSaslServer refuses: no password, no user name, an authorization id other than
    the user, two fields only; a SCRAM client-first-message that is not one."""
    tokens = {"no password": b"\x00alice\x00", "no user name": b"\x00\x00alice-secret",
              "authorization id of another user": plain_token("alice", SECURE_USERS["alice"], "bob"),
              "two fields": b"alice\x00alice-secret"}
    for label, token in tokens.items():
        conn = _anonymous(s, label)
        _handshake(s, conn, "PLAIN", record=False)
        s.call("SaslAuthenticate", v, {"auth_bytes": token}, conn=conn, label=label)
    conn = _anonymous(s, "scram")
    _handshake(s, conn, SCRAM, record=False)
    s.call("SaslAuthenticate", v, {"auth_bytes": b"not a client-first-message"}, conn=conn,
           label="SCRAM garbage")


@scenario("Metadata", profile=SECURE)
def sasl_request_before_login(s: Session):
    """Requests other than ApiVersions and SaslHandshake before logging in: first thing on the connection,
    after ApiVersions, after SaslHandshake (before the tokens); a second ApiVersions."""
    _metadata_probe(s, _anonymous(s, "first"), "Metadata first")
    conn = _anonymous(s, "after ApiVersions")
    s.call("ApiVersions", 3, {"client_software_name": "conformance", "client_software_version": "1.0"},
           conn=conn, record=False)
    _metadata_probe(s, conn, "Metadata after ApiVersions")
    conn = _anonymous(s, "after SaslHandshake")
    _handshake(s, conn, "PLAIN", record=False)
    s.call("Metadata", 12, {"topics": [{"name": s.topic()}], "allow_auto_topic_creation": False,
                            "include_topic_authorized_operations": False}, conn=conn,
           label="Metadata (of a topic) after SaslHandshake")
    _metadata_probe(s, conn, "Metadata again")
    conn = _anonymous(s, "second ApiVersions")
    for label in ("ApiVersions", "second ApiVersions"):
        answer = s.call("ApiVersions", 3, {"client_software_name": "conformance", "client_software_version": "1.0"},
                        conn=conn, record=False)
        s.record(label, "closed" if answer is None else {"error_code": answer.error_code})
    conn = _anonymous(s, "SaslAuthenticate first")
    s.call("SaslAuthenticate", 2, {"auth_bytes": plain_token("alice", SECURE_USERS["alice"])}, conn=conn,
           label="SaslAuthenticate without SaslHandshake")


def login(user: str, mechanism: str = SCRAM) -> ClientSecurity:
    return ClientSecurity("SASL_PLAINTEXT", None, mechanism, user, SECURE_USERS[user])



# -- authorization --------------------------------------------------------------------------------------------
# ACLs are cluster-wide: each case names only its own resources, and a case that grants on the cluster or
# on every topic takes the ACL back (unrecorded) before it ends. Kafka applies ACL changes through its
# metadata log: after CreateAcls/DeleteAcls a case waits (unrecorded) until DescribeAcls shows the change.


def _as(s: Session, user: str) -> str:
    s.conn(user, security=login(user))
    return user


def _acl(resource_type: Res, name: str, operation: Op, *, principal: str = "User:alice", permission=Perm.ALLOW,
         pattern=PatternType.LITERAL, host: str = "*") -> dict:
    return {"resource_type": int(resource_type), "resource_name": name, "resource_pattern_type": int(pattern),
            "principal": principal, "host": host, "operation": int(operation), "permission_type": int(permission)}


def _filter(acl: dict, *, pattern=None) -> dict:
    """The DescribeAcls/DeleteAcls filter matching exactly `acl`."""
    return {"resource_type_filter": acl["resource_type"], "resource_name_filter": acl["resource_name"],
            "pattern_type_filter": acl["resource_pattern_type"] if pattern is None else int(pattern),
            "principal_filter": acl["principal"], "host_filter": acl["host"], "operation": acl["operation"],
            "permission_type": acl["permission_type"]}


def _described(s: Session, acl: dict) -> bool:
    answer = s.call("DescribeAcls", 3, _filter(acl), record=False)
    return answer is not None and answer.error_code == 0 and any(r.acls for r in answer.resources)


def grant(s: Session, *acls: dict) -> None:
    """Creates the ACLs as admin (unrecorded) and waits until the broker applies them."""
    s.setup("CreateAcls", 3, {"creations": list(acls)})
    for acl in acls:
        s.wait_until(lambda: _described(s, acl), timeout=15, what=f"ACL {acl} applied")


def revoke(s: Session, *acls: dict) -> None:
    s.setup("DeleteAcls", 3, {"filters": [_filter(acl) for acl in acls]})
    for acl in acls:
        s.wait_until(lambda: not _described(s, acl), timeout=15, what=f"ACL {acl} removed")


def _topic_with_data(s: Session, topic: str) -> None:
    s.create_topic(topic)
    s.produce(topic, 0, [(b"k", b"v")])


@scenario("Metadata", versions=(1, 4, 8, 10, 12, 13), covers=["TOPIC_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_metadata(s: Session, v: int):
    """Metadata as alice without ACLs (an existing topic, a missing one, auto-creation allowed), after DESCRIBE
    on the topic (authorized operations from v8), and the same as admin (a super user)."""
    topic = s.topic()
    s.create_topic(topic, partitions=2)
    alice = _as(s, "alice")
    ops = v >= 8
    body = {"topics": [{"name": topic}, {"name": s.topic("missing")}], "allow_auto_topic_creation": True,
            "include_cluster_authorized_operations": ops, "include_topic_authorized_operations": ops}
    s.call("Metadata", v, body, conn=alice, label="alice, no ACLs")
    grant(s, _acl(Res.TOPIC, topic, Op.DESCRIBE))
    s.call("Metadata", v, body, conn=alice, label="alice with DESCRIBE on the topic")
    s.call("Metadata", v, {**body, "topics": [{"name": topic}]}, label="admin")


@scenario("Produce", versions=(3, 8, 9, 11, 12), covers=["TOPIC_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_produce(s: Session, v: int):
    """Produce as alice without WRITE on the topic, then with it (named by id at v13)."""
    from kafka_wire.record_codec import Record, build_batch

    topic = s.topic()
    s.create_topic(topic)
    alice = _as(s, "alice")
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 10000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": build_batch(
            [Record(0, 0, b"k", b"v")], base_timestamp=T0)}]}]}
    s.call("Produce", v, body, conn=alice, label="alice, no ACLs")
    grant(s, _acl(Res.TOPIC, topic, Op.WRITE))
    s.call("Produce", v, body, conn=alice, label="alice with WRITE")


@scenario("Fetch", versions=(4, 11, 12, 13, 17), covers=["TOPIC_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_fetch(s: Session, v: int):
    """Fetch as alice without READ on the topic (named by id from v13), then with it."""
    from .data_path import fetch_body

    topic = s.topic()
    _topic_with_data(s, topic)
    alice = _as(s, "alice")
    body = fetch_body(s, v, topic)
    s.call("Fetch", v, body, conn=alice, label="alice, no ACLs", wait=1.0)
    grant(s, _acl(Res.TOPIC, topic, Op.READ))
    s.call("Fetch", v, body, conn=alice, label="alice with READ", wait=1.0)


@scenario("ListOffsets", versions=(1, 5, 7, 9), covers=["TOPIC_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_list_offsets(s: Session, v: int):
    """ListOffsets as alice without DESCRIBE on the topic, then with it."""
    topic = s.topic()
    _topic_with_data(s, topic)
    alice = _as(s, "alice")
    body = {"replica_id": -1, "isolation_level": 0, "timeout_ms": 1000, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]}
    s.call("ListOffsets", v, body, conn=alice, label="alice, no ACLs")
    grant(s, _acl(Res.TOPIC, topic, Op.DESCRIBE))
    s.call("ListOffsets", v, body, conn=alice, label="alice with DESCRIBE")


@scenario("CreateTopics", versions=(2, 4, 5, 7), covers=["TOPIC_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_create_topics(s: Session, v: int):
    """CreateTopics as alice without CREATE (on the cluster or the topic), then with CREATE on a prefix of the
    topic's name (from v5 the answer's configs need DESCRIBE_CONFIGS), validate_only first."""
    topic = s.topic()
    alice = _as(s, "alice")
    body = {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 10000, "validate_only": False}
    s.call("CreateTopics", v, body, conn=alice, label="alice, no ACLs")
    grant(s, _acl(Res.TOPIC, topic, Op.CREATE, pattern=PatternType.PREFIXED))
    s.call("CreateTopics", v, {**body, "validate_only": True}, conn=alice, label="alice with CREATE, validate only")
    s.call("CreateTopics", v, body, conn=alice, label="alice with CREATE")


@scenario("DeleteTopics", versions=(1, 4, 5, 6), covers=["TOPIC_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_delete_topics(s: Session, v: int):
    """DeleteTopics as alice without DELETE on the topic (by id at v6), then with it."""
    from .data_path import topic_id

    topic = s.topic()
    s.create_topic(topic)
    alice = _as(s, "alice")
    if v >= 6:
        body = {"topics": [{"name": None, "topic_id": topic_id(s, topic)}], "timeout_ms": 10000}
    else:
        body = {"topic_names": [topic], "timeout_ms": 10000}
    s.call("DeleteTopics", v, body, conn=alice, label="alice, no ACLs")
    grant(s, _acl(Res.TOPIC, topic, Op.DELETE))
    s.call("DeleteTopics", v, body, conn=alice, label="alice with DELETE")


@scenario("FindCoordinator", versions=(1, 3, 4, 6), covers=["GROUP_AUTHORIZATION_FAILED",
                                                          "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_find_coordinator(s: Session, v: int):
    """FindCoordinator as alice for a group and a transactional id without DESCRIBE on them, then with it."""
    group, txn = s.group(), s.transactional_id()
    s.find_coordinator(group)
    s.find_coordinator(txn, 1)
    alice = _as(s, "alice")

    def ask(label: str):
        for key, key_type in ((group, 0), (txn, 1)):
            body = {"key": key, "key_type": key_type, "coordinator_keys": [key]}
            s.call("FindCoordinator", v, body, conn=alice, label=f"{label}: key type {key_type}")

    ask("alice, no ACLs")
    grant(s, _acl(Res.GROUP, group, Op.DESCRIBE), _acl(Res.TRANSACTIONAL_ID, txn, Op.DESCRIBE))
    ask("alice with DESCRIBE")


@scenario("JoinGroup", versions=(2, 5, 9), covers=["GROUP_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_join_group(s: Session, v: int):
    """JoinGroup as alice without READ on the group, then with READ on a prefix of its name."""
    from .groups_classic import coordinator_ready, join_body

    group = s.group()
    coordinator_ready(s, group)
    alice = _as(s, "alice")
    s.call("JoinGroup", v, join_body(group), conn=alice, label="alice, no ACLs", wait=5)
    grant(s, _acl(Res.GROUP, group, Op.READ, pattern=PatternType.PREFIXED))
    answer = s.call("JoinGroup", v, join_body(group), conn=alice, label="alice with READ", wait=5)
    if answer is not None and answer.error_code == 79:
        s.call("JoinGroup", v, join_body(group, answer.member_id), conn=alice, label="with its member id", wait=5)


@scenario("OffsetCommit", versions=(2, 8, 9), covers=["GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED"],
          profile=SECURE)
def authz_offset_commit(s: Session, v: int):
    """OffsetCommit as alice: without READ on the group, with it but without READ on the topic, with both; then
    OffsetFetch of all the group's topics (only the readable ones are answered)."""
    from .groups_classic import coordinator_ready
    from .offsets import commit_body, fetch_body

    group, topic, other = s.group(), s.topic(), s.topic("other")
    s.create_topic(topic)
    s.create_topic(other)
    coordinator_ready(s, group)
    alice = _as(s, "alice")
    body = commit_body(group, {topic: [(0, 1, "m")]})
    s.call("OffsetCommit", v, body, conn=alice, label="alice, no ACLs")
    grant(s, _acl(Res.GROUP, group, Op.READ))
    s.call("OffsetCommit", v, body, conn=alice, label="alice with READ on the group")
    s.setup("OffsetCommit", v, commit_body(group, {other: [(0, 2, None)]}))  # admin, on the other topic
    grant(s, _acl(Res.TOPIC, topic, Op.READ))
    s.call("OffsetCommit", v, body, conn=alice, label="alice with READ on both")
    s.call("OffsetFetch", 7, fetch_body(7, {group: None}), conn=alice, label="alice: OffsetFetch v7 all topics")
    s.call("OffsetFetch", 8, fetch_body(8, {group: None}), conn=alice, label="alice: OffsetFetch v8 all topics")


@scenario("OffsetFetch", versions=(1, 5, 7, 8, 9), covers=["GROUP_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_offset_fetch(s: Session, v: int):
    """OffsetFetch as alice without DESCRIBE on the group (named topics, then all), and with several groups
    of which one is allowed (v8+)."""
    from .groups_classic import coordinator_ready
    from .offsets import fetch_body

    group, allowed, topic = s.group(), s.group("allowed"), s.topic()
    s.create_topic(topic)
    coordinator_ready(s, group)
    alice = _as(s, "alice")
    s.call("OffsetFetch", v, fetch_body(v, {group: {topic: [0]}}), conn=alice, label="alice, named topics")
    s.call("OffsetFetch", v, fetch_body(v, {group: None}), conn=alice, label="alice, all topics")
    if v >= 8:
        grant(s, _acl(Res.GROUP, allowed, Op.DESCRIBE), _acl(Res.TOPIC, topic, Op.DESCRIBE))
        s.call("OffsetFetch", v, fetch_body(v, {group: {topic: [0]}, allowed: {topic: [0]}}), conn=alice,
               label="alice, one of two groups allowed")


@scenario("InitProducerId", versions=(0, 2, 4, 5), covers=["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_init_producer_id_transactional(s: Session, v: int):
    """InitProducerId with a transactional id as alice without WRITE on it, then with it."""
    txn = s.transactional_id()
    s.find_coordinator(txn, 1)
    alice = _as(s, "alice")
    body = {"transactional_id": txn, "transaction_timeout_ms": 10000, "producer_id": -1, "producer_epoch": -1,
            "enable_2pc": False, "keep_prepared_txn": False}
    s.call("InitProducerId", v, body, conn=alice, label="alice, no ACLs")
    # Kafka loads the transaction coordinator's partition after FindCoordinator answers
    # (COORDINATOR_LOAD_IN_PROGRESS meanwhile): admin initialises the id first, so alice's epoch is 1 on both.
    s.wait_until(lambda: getattr(s.call("InitProducerId", v, body, record=False), "error_code", -1) == 0,
                 timeout=20, what="the transaction coordinator")
    grant(s, _acl(Res.TRANSACTIONAL_ID, txn, Op.WRITE))
    s.call("InitProducerId", v, body, conn=alice, label="alice with WRITE")


@scenario("InitProducerId", versions=(0, 4, 5), covers=["CLUSTER_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_init_producer_id_idempotent(s: Session, v: int):
    """An idempotent InitProducerId (no transactional id) as bob: needs IDEMPOTENT_WRITE on the cluster or
    WRITE on any topic (Kafka 3.2+); without, with WRITE on a prefix, with IDEMPOTENT_WRITE."""
    body = {"transactional_id": None, "transaction_timeout_ms": 10000, "producer_id": -1, "producer_epoch": -1,
            "enable_2pc": False, "keep_prepared_txn": False}
    bob = _as(s, "bob")
    s.call("InitProducerId", v, body, conn=bob, label="bob, no ACLs")
    write = _acl(Res.TOPIC, s.topic(), Op.WRITE, principal="User:bob", pattern=PatternType.PREFIXED)
    grant(s, write)
    s.call("InitProducerId", v, body, conn=bob, label="bob with WRITE on a topic prefix")
    revoke(s, write)
    idempotent = _acl(Res.CLUSTER, "kafka-cluster", Op.IDEMPOTENT_WRITE, principal="User:bob")
    grant(s, idempotent)
    s.call("InitProducerId", v, body, conn=bob, label="bob with IDEMPOTENT_WRITE")
    revoke(s, idempotent)


@scenario("DescribeConfigs", versions=(1, 4), covers=["CLUSTER_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED"],
          profile=SECURE)
def authz_configs(s: Session, v: int):
    """DescribeConfigs, AlterConfigs and IncrementalAlterConfigs as alice on the broker and on a topic (no
    ACLs); DescribeConfigs of the topic with DESCRIBE_CONFIGS."""
    topic = s.topic()
    s.create_topic(topic)
    alice = _as(s, "alice")
    resources = [(4, "1"), (2, topic)]  # BROKER, TOPIC
    describe = {"resources": [{"resource_type": t, "resource_name": n, "configuration_keys": ["retention.ms"]}
                              for t, n in resources], "include_synonyms": False, "include_documentation": False}
    s.call("DescribeConfigs", v, describe, conn=alice, label="alice, no ACLs")
    s.call("AlterConfigs", 2, {"resources": [{"resource_type": t, "resource_name": n, "configs": [
        {"name": "log.cleaner.threads" if t == 4 else "retention.ms", "value": "2" if t == 4 else "1000"}]}
        for t, n in resources], "validate_only": True}, conn=alice, label="alice: AlterConfigs v2")
    s.call("IncrementalAlterConfigs", 1, {"resources": [{"resource_type": t, "resource_name": n, "configs": [
        {"name": "log.cleaner.threads" if t == 4 else "retention.ms", "config_operation": 0,
         "value": "2" if t == 4 else "1000"}]} for t, n in resources], "validate_only": True}, conn=alice,
           label="alice: IncrementalAlterConfigs v1")
    grant(s, _acl(Res.TOPIC, topic, Op.DESCRIBE_CONFIGS))
    s.call("DescribeConfigs", v, describe, conn=alice, label="alice with DESCRIBE_CONFIGS on the topic")


@scenario("DescribeConfigs", versions=(4,), covers=["GROUP_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_group_configs(s: Session, v: int):
    """A group's configs (resource type 32) as alice: without ACLs, then with ALTER_CONFIGS on the group
    (which implies DESCRIBE_CONFIGS)."""
    group = s.group()
    alice = _as(s, "alice")
    describe = {"resources": [{"resource_type": 32, "resource_name": group,
                               "configuration_keys": ["consumer.session.timeout.ms"]}],
                "include_synonyms": False, "include_documentation": False}
    alter = {"resources": [{"resource_type": 32, "resource_name": group, "configs": [
        {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "50000"}]}], "validate_only": True}
    s.call("DescribeConfigs", v, describe, conn=alice, label="alice, no ACLs")
    s.call("IncrementalAlterConfigs", 1, alter, conn=alice, label="alice: IncrementalAlterConfigs, no ACLs")
    grant(s, _acl(Res.GROUP, group, Op.ALTER_CONFIGS))
    s.call("IncrementalAlterConfigs", 1, alter, conn=alice, label="alice with ALTER_CONFIGS on the group")
    s.call("DescribeConfigs", v, describe, conn=alice, label="alice with ALTER_CONFIGS: describe")


@scenario("CreateAcls", versions=ALL, covers=["CLUSTER_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_acls_as_alice(s: Session, v: int):
    """CreateAcls, DescribeAcls and DeleteAcls as alice (no ALTER/DESCRIBE on the cluster)."""
    alice = _as(s, "alice")
    acl = _acl(Res.TOPIC, s.topic(), Op.READ, principal="User:alice")
    s.call("CreateAcls", v, {"creations": [acl]}, conn=alice, label=f"CreateAcls v{v}")
    s.call("DescribeAcls", v, _filter(acl), conn=alice, label=f"DescribeAcls v{v}")
    s.call("DeleteAcls", v, {"filters": [_filter(acl)]}, conn=alice, label=f"DeleteAcls v{v}")


@scenario("CreateAcls", versions=ALL, profile=SECURE)
def acls_lifecycle(s: Session, v: int):
    """As admin: CreateAcls (literal and, from v1, prefixed; allow and deny; a host), DescribeAcls with exact,
    ANY and MATCH filters, DeleteAcls with a filter matching several, DescribeAcls after."""
    topic, group = s.topic(), s.group()
    prefixed = PatternType.PREFIXED if v >= 1 else PatternType.LITERAL
    acls = [_acl(Res.TOPIC, topic, Op.READ),
            _acl(Res.TOPIC, topic, Op.WRITE, permission=Perm.DENY, host="10.0.0.1"),
            _acl(Res.TOPIC, topic[:-2], Op.DESCRIBE, principal="User:bob", pattern=prefixed),
            _acl(Res.GROUP, group, Op.READ, pattern=prefixed)]
    s.call("CreateAcls", v, {"creations": acls}, label="create")
    for acl in acls:
        s.wait_until(lambda: _described(s, acl), timeout=15, what="the ACLs applied")
    any_topic = {"resource_type_filter": int(Res.TOPIC), "resource_name_filter": topic,
                 "pattern_type_filter": int(PatternType.LITERAL), "principal_filter": None, "host_filter": None,
                 "operation": int(Op.ANY), "permission_type": int(Perm.ANY)}
    s.call("DescribeAcls", v, any_topic, label="literal name, any principal/operation")
    if v >= 1:
        s.call("DescribeAcls", v, {**any_topic, "pattern_type_filter": int(PatternType.MATCH)},
               label="MATCH: the literal and the prefix")
        s.call("DescribeAcls", v, {**any_topic, "resource_name_filter": topic[:-2],
                                   "pattern_type_filter": int(PatternType.ANY)}, label="ANY pattern of the prefix")
    s.call("DescribeAcls", v, {**any_topic, "principal_filter": "User:alice", "permission_type": int(Perm.DENY)},
           label="alice's denials")
    s.call("DescribeAcls", v, {**any_topic, "resource_type_filter": int(Res.GROUP), "resource_name_filter": group,
                               "pattern_type_filter": int(prefixed)}, label="the group")
    deleted = s.call("DeleteAcls", v, {"filters": [
        {**any_topic, "pattern_type_filter": int(PatternType.ANY) if v >= 1 else int(PatternType.LITERAL)},
        {**any_topic, "resource_type_filter": int(Res.GROUP), "resource_name_filter": group,
         "pattern_type_filter": int(prefixed)}]}, label="delete the topic's and the group's")
    if deleted is not None:
        for acl in acls:
            if acl["resource_name"] in (topic, group):
                s.wait_until(lambda: not _described(s, acl), timeout=15, what="the ACLs removed")
    s.call("DescribeAcls", v, any_topic, label="after delete")


@scenario("CreateAcls", versions=(3,), covers=["INVALID_REQUEST"], profile=SECURE)
def acls_invalid(s: Session, v: int):
    """ACLs Kafka refuses: pattern type ANY or MATCH, resource type ANY, operation ANY, permission ANY, an empty
    principal, a principal without a type, a cluster ACL with another name than kafka-cluster; DescribeAcls
    and DeleteAcls with an UNKNOWN pattern filter."""
    topic = s.topic()
    bad = [_acl(Res.TOPIC, topic, Op.READ, pattern=PatternType.ANY),
           _acl(Res.TOPIC, topic, Op.READ, pattern=PatternType.MATCH),
           _acl(Res.ANY, topic, Op.READ), _acl(Res.TOPIC, topic, Op.ANY), _acl(Res.TOPIC, topic, Op.READ,
                                                                              permission=Perm.ANY),
           _acl(Res.TOPIC, topic, Op.READ, principal=""), _acl(Res.TOPIC, topic, Op.READ, principal="alice"),
           _acl(Res.CLUSTER, "other-cluster", Op.ALTER)]
    for acl in bad:
        s.call("CreateAcls", v, {"creations": [acl]}, label=f"CreateAcls {acl}")
    valid = _acl(Res.TOPIC, topic, Op.WRITE)
    s.call("CreateAcls", v, {"creations": [valid, bad[0], _acl(Res.TOPIC, "", Op.READ)]},
           label="a valid ACL, one with pattern ANY and one without a resource name in one request")
    try:  # a created ACL shows within moments; one refused never does
        s.wait_until(lambda: _described(s, valid), timeout=2, what="the valid ACL")
    except CaseFailed:
        pass
    s.call("DescribeAcls", 3, _filter(valid), label="was the valid one created?")
    for field, label in (("resource_type", "resource type"), ("resource_pattern_type", "pattern type"),
                         ("operation", "operation"), ("permission_type", "permission")):
        s.call("CreateAcls", v, {"creations": [{**valid, field: 0}]}, conn=f"unknown {label}",
               label=f"CreateAcls UNKNOWN {label}")
    unknown = {**_filter(_acl(Res.TOPIC, topic, Op.READ)), "pattern_type_filter": int(PatternType.UNKNOWN)}
    s.call("DescribeAcls", v, unknown, conn="describe unknown", label="DescribeAcls UNKNOWN pattern")
    s.call("DeleteAcls", v, {"filters": [unknown]}, conn="delete unknown", label="DeleteAcls UNKNOWN pattern")


@scenario("Fetch", versions=(12,), covers=["TOPIC_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_deny_overrides_allow(s: Session, v: int):
    """alice may READ topics with the case's prefix, but is denied READ on one of them: that one is refused,
    the other served; the denial for another host does not apply."""
    from .data_path import fetch_body

    denied, allowed = s.topic("denied"), s.topic("allowed")
    _topic_with_data(s, denied)
    _topic_with_data(s, allowed)
    grant(s, _acl(Res.TOPIC, s.topic(), Op.READ, pattern=PatternType.PREFIXED),
          _acl(Res.TOPIC, denied, Op.READ, permission=Perm.DENY),
          _acl(Res.TOPIC, allowed, Op.READ, permission=Perm.DENY, host="10.0.0.1"))
    alice = _as(s, "alice")
    for topic in (denied, allowed):
        s.call("Fetch", v, fetch_body(s, v, topic), conn=alice, label=f"alice fetches {topic}", wait=1.0)


@scenario("DescribeCluster", versions=ALL, profile=SECURE)
def authz_authorized_operations(s: Session, v: int):
    """Authorized operations as alice (DESCRIBE on the topic and group, ALTER_CONFIGS on the cluster) and as
    admin: DescribeCluster v`v`, Metadata v10 (cluster and topic), DescribeGroups v5."""
    topic, group = s.topic(), s.group()
    s.create_topic(topic)
    s.find_coordinator(group)
    cluster = _acl(Res.CLUSTER, "kafka-cluster", Op.ALTER_CONFIGS)
    grant(s, _acl(Res.TOPIC, topic, Op.DESCRIBE), _acl(Res.GROUP, group, Op.DESCRIBE), cluster)
    for user in ("alice", "admin"):
        conn = _as(s, "alice") if user == "alice" else "main"
        s.call("DescribeCluster", v, {"include_cluster_authorized_operations": True, "endpoint_type": 1,
                                      "include_fenced_brokers": False}, conn=conn, label=f"{user}: DescribeCluster")
        s.call("Metadata", 10, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                                "include_cluster_authorized_operations": True,
                                "include_topic_authorized_operations": True}, conn=conn, label=f"{user}: Metadata v10")
        s.call("DescribeGroups", 5, {"groups": [group], "include_authorized_operations": True}, conn=conn,
               label=f"{user}: DescribeGroups v5")
    revoke(s, cluster)


# -- more APIs as alice, each denied (and some then allowed) ---------------------------------------------------


@scenario("DeleteRecords", versions=(2,), covers=["TOPIC_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_delete_records(s: Session, v: int):
    """DeleteRecords as alice without DELETE on the topic, then with it."""
    topic = s.topic()
    _topic_with_data(s, topic)
    alice = _as(s, "alice")
    body = {"topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": 1}]}], "timeout_ms": 10000}
    s.call("DeleteRecords", v, body, conn=alice, label="alice, no ACLs")
    grant(s, _acl(Res.TOPIC, topic, Op.DELETE))
    s.call("DeleteRecords", v, body, conn=alice, label="alice with DELETE")


@scenario("CreatePartitions", versions=(3,), covers=["TOPIC_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_create_partitions(s: Session, v: int):
    """CreatePartitions as alice without ALTER on the topic, then with it."""
    topic = s.topic()
    s.create_topic(topic)
    alice = _as(s, "alice")
    body = {"topics": [{"name": topic, "count": 2, "assignments": None}], "timeout_ms": 10000, "validate_only": False}
    s.call("CreatePartitions", v, body, conn=alice, label="alice, no ACLs")
    grant(s, _acl(Res.TOPIC, topic, Op.ALTER))
    s.call("CreatePartitions", v, body, conn=alice, label="alice with ALTER")


@scenario("OffsetForLeaderEpoch", versions=(4,), covers=["TOPIC_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_offset_for_leader_epoch(s: Session, v: int):
    """OffsetForLeaderEpoch (a consumer's, replica id -1) as alice without DESCRIBE on the topic, then with it."""
    topic = s.topic()
    _topic_with_data(s, topic)
    alice = _as(s, "alice")
    body = {"replica_id": -1, "topics": [{"topic": topic, "partitions": [
        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]}
    s.call("OffsetForLeaderEpoch", v, body, conn=alice, label="alice, no ACLs")
    grant(s, _acl(Res.TOPIC, topic, Op.DESCRIBE))
    s.call("OffsetForLeaderEpoch", v, body, conn=alice, label="alice with DESCRIBE")


@scenario("DescribeProducers", versions=(0,), covers=["TOPIC_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_describe_producers(s: Session, v: int):
    """DescribeProducers as alice without READ on the topic, then with it."""
    topic = s.topic()
    _topic_with_data(s, topic)
    alice = _as(s, "alice")
    body = {"topics": [{"name": topic, "partition_indexes": [0]}]}
    s.call("DescribeProducers", v, body, conn=alice, label="alice, no ACLs")
    grant(s, _acl(Res.TOPIC, topic, Op.READ))
    s.call("DescribeProducers", v, body, conn=alice, label="alice with READ")


@scenario("DescribeLogDirs", versions=(1, 4), covers=["CLUSTER_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_describe_log_dirs(s: Session, v: int):
    """DescribeLogDirs as alice (no DESCRIBE on the cluster)."""
    topic = s.topic()
    s.create_topic(topic)
    s.call("DescribeLogDirs", v, {"topics": [{"topic": topic, "partitions": [0]}]}, conn=_as(s, "alice"),
           label="alice, no ACLs")


@scenario("ElectLeaders", versions=(2,), covers=["CLUSTER_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_cluster_admin_apis(s: Session, v: int):
    """Cluster operations as alice (no ACLs): ElectLeaders, List/AlterPartitionReassignments,
    Describe/AlterUserScramCredentials; and DescribeUserScramCredentials of every user as admin."""
    topic = s.topic()
    s.create_topic(topic)
    alice = _as(s, "alice")
    s.call("ElectLeaders", v, {"election_type": 0, "timeout_ms": 10000, "topic_partitions": [
        {"topic": topic, "partitions": [0]}]}, conn=alice, label="alice: ElectLeaders")
    s.call("ListPartitionReassignments", 0, {"timeout_ms": 10000, "topics": None}, conn=alice,
           label="alice: ListPartitionReassignments v0")
    s.call("AlterPartitionReassignments", 0, {"timeout_ms": 10000, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "replicas": [1]}]}]}, conn=alice,
           label="alice: AlterPartitionReassignments v0")
    # Not users=None: Kafka 4.3's refusal of it throws (getErrorResponse walks the null list) and never answers.
    s.call("DescribeUserScramCredentials", 0, {"users": [{"name": "bob"}]}, conn=alice,
           label="alice: DescribeUserScramCredentials v0")
    s.call("AlterUserScramCredentials", 0, {"deletions": [{"name": "carol", "mechanism": 1}], "upsertions": []},
           conn=_as(s, "bob"), label="bob: AlterUserScramCredentials v0 (a user nobody has)")
    s.call("DescribeUserScramCredentials", 0, {"users": None}, label="admin: every user")


@scenario("DescribeGroups", versions=(5,), covers=["GROUP_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_group_apis(s: Session, v: int):
    """A group with one member (admin's): as alice without ACLs DescribeGroups, Heartbeat, SyncGroup, LeaveGroup,
    OffsetDelete, DeleteGroups, ListGroups (the group is not listed); then with DESCRIBE on the group."""
    from .groups_classic import coordinator_ready, describe, heartbeat_body, stable_single_member, sync_body

    group = s.group()
    coordinator_ready(s, group)
    member, generation = stable_single_member(s, 5, group, conn="main", record=False)
    alice = _as(s, "alice")

    def listed(label: str):
        answer = s.call("ListGroups", 4, {"states_filter": []}, conn=alice, record=False)
        s.record(label, {"error_code": answer.error_code,
                         "groups": [g.to_dict() for g in answer.groups if g.group_id == group]})

    describe(s, v, [group], "alice: DescribeGroups", conn=alice)
    s.call("Heartbeat", 4, heartbeat_body(group, generation, member), conn=alice, label="alice: Heartbeat v4")
    s.call("SyncGroup", 5, sync_body(group, generation, member), conn=alice, label="alice: SyncGroup v5")
    s.call("LeaveGroup", 5, {"group_id": group, "members": [{"member_id": member, "group_instance_id": None,
                                                             "reason": None}]}, conn=alice,
           label="alice: LeaveGroup v5")
    s.call("OffsetDelete", 0, {"group_id": group, "topics": [{"name": s.topic(), "partitions": [
        {"partition_index": 0}]}]}, conn=alice, label="alice: OffsetDelete v0")
    s.call("DeleteGroups", 2, {"groups_names": [group]}, conn=alice, label="alice: DeleteGroups v2")
    listed("alice: ListGroups v4, this case's group")
    grant(s, _acl(Res.GROUP, group, Op.DESCRIBE))
    describe(s, v, [group], "alice with DESCRIBE: DescribeGroups", conn=alice)
    listed("alice with DESCRIBE: ListGroups v4, this case's group")
    s.call("DeleteGroups", 2, {"groups_names": [group]}, conn=alice, label="alice with DESCRIBE: DeleteGroups v2")


@scenario("AddPartitionsToTxn", versions=(3,), covers=["TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED"],
          profile=SECURE)
def authz_transaction(s: Session, v: int):
    """A transaction by alice, who may WRITE its transactional id: AddPartitionsToTxn of a topic she may not
    write, then may; AddOffsetsToTxn of a group she may not read, then may; TxnOffsetCommit without READ on the
    topic; EndTxn (abort); DescribeTransactions and ListTransactions as alice and as bob."""
    topic, group, txn = s.topic(), s.group(), s.transactional_id()
    s.create_topic(topic)
    s.find_coordinator(txn, 1)
    s.find_coordinator(group)
    grant(s, _acl(Res.TRANSACTIONAL_ID, txn, Op.WRITE))
    alice = _as(s, "alice")
    init = {"transactional_id": txn, "transaction_timeout_ms": 10000, "producer_id": -1, "producer_epoch": -1}
    s.wait_until(lambda: getattr(s.call("InitProducerId", 4, init, conn=alice, record=False), "error_code", -1) == 0,
                 timeout=20, what="the transaction coordinator")
    answer = s.call("InitProducerId", 4, init, conn=alice, label="alice: InitProducerId v4")
    pid, epoch = answer.producer_id, answer.producer_epoch
    add = {"v3_and_below_transactional_id": txn, "v3_and_below_producer_id": pid,
           "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [{"name": topic, "partitions": [0]}]}
    s.call("AddPartitionsToTxn", v, add, conn=alice, label="alice: AddPartitionsToTxn, no WRITE on the topic")
    grant(s, _acl(Res.TOPIC, topic, Op.WRITE))
    s.call("AddPartitionsToTxn", v, add, conn=alice, label="alice: AddPartitionsToTxn with WRITE")
    offsets = {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "group_id": group}
    s.call("AddOffsetsToTxn", 3, offsets, conn=alice, label="alice: AddOffsetsToTxn v3, no READ on the group")
    grant(s, _acl(Res.GROUP, group, Op.READ))
    s.call("AddOffsetsToTxn", 3, offsets, conn=alice, label="alice: AddOffsetsToTxn v3 with READ")
    s.call("TxnOffsetCommit", 3, {"transactional_id": txn, "group_id": group, "producer_id": pid,
                                  "producer_epoch": epoch, "generation_id": -1, "member_id": "",
                                  "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                                      {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                                       "committed_metadata": ""}]}]}, conn=alice,
           label="alice: TxnOffsetCommit v3, no READ on the topic")
    s.call("DescribeTransactions", 0, {"transactional_ids": [txn]}, conn=_as(s, "bob"),
           label="bob: DescribeTransactions")
    answer = s.call("ListTransactions", 1, {"state_filters": [], "producer_id_filters": [pid],
                                            "duration_filter": -1}, conn="bob", record=False)
    s.record("bob: ListTransactions of the producer", {"error_code": answer.error_code,
                                                       "transactional ids": [t.transactional_id
                                                                             for t in answer.transaction_states]})
    s.call("EndTxn", 3, {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "committed": False},
           conn=alice, label="alice: EndTxn v3 (abort)")


@scenario("Metadata", versions=(1, 12), profile=SECURE)
def authz_metadata_all_topics(s: Session, v: int):
    """All topics as alice, who may DESCRIBE one of the case's two topics: only that one is listed (the other
    hidden, not refused); recorded are the case's own topics."""
    seen, hidden = s.topic("seen"), s.topic("hidden")
    s.create_topic(seen)
    s.create_topic(hidden)
    grant(s, _acl(Res.TOPIC, seen, Op.DESCRIBE))
    answer = s.call("Metadata", v, {"topics": None, "allow_auto_topic_creation": False,
                                    "include_topic_authorized_operations": False}, conn=_as(s, "alice"), record=False)
    data = answer.to_dict()
    mine = sorted((t for t in data["topics"] if t["name"] and t["name"].startswith(s.topic())), key=lambda t: t["name"])
    s.record("alice: all topics, this case's", {**{k: val for k, val in data.items() if k != "topics"}, "topics": mine})


@scenario("CreateTopics", versions=(7,), covers=["TOPIC_AUTHORIZATION_FAILED"], profile=SECURE)
def authz_create_topics_cluster(s: Session, v: int):
    """CreateTopics as bob (PLAIN login) with CREATE on the cluster (any topic name), without and with
    DESCRIBE_CONFIGS on the cluster (it does not stand for the topic's); the ACLs taken back after."""
    s.conn("bob", security=login("bob", "PLAIN"))
    create = _acl(Res.CLUSTER, "kafka-cluster", Op.CREATE, principal="User:bob")
    configs = _acl(Res.CLUSTER, "kafka-cluster", Op.DESCRIBE_CONFIGS, principal="User:bob")
    body = {"topics": [{"name": s.topic(), "num_partitions": 1, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 10000, "validate_only": True}
    s.call("CreateTopics", v, body, conn="bob", label="bob, no ACLs")
    grant(s, create)
    s.call("CreateTopics", v, body, conn="bob", label="bob with CREATE on the cluster")
    grant(s, configs)
    s.call("CreateTopics", v, body, conn="bob", label="bob with CREATE and DESCRIBE_CONFIGS on the cluster")
    revoke(s, create, configs)


def _raw_request(api_name: str, version: int, body_version: int, body: dict, correlation_id: int = 99) -> bytes:
    """A request frame whose header says `version` and whose body is encoded at `body_version`."""
    from kafka_wire.headers import encode_request_header
    from kafka_wire.messages import APIS_BY_NAME
    from kafka_wire.schema import Writer

    api = APIS_BY_NAME[api_name]
    w = Writer()
    encode_request_header(w, api.key, version, correlation_id, "conformance", api.is_flexible(body_version))
    api.request.encode(body, body_version, w)
    return size_prefixed(w.to_bytes())


@scenario("SaslAuthenticate", profile=SECURE)
def sasl_unexpected_requests(s: Session):
    """SaslHandshake and SaslAuthenticate at versions neither broker serves (v2, v3) before logging in; a second
    SaslHandshake after the first; ApiVersions after SaslHandshake."""
    s.raw(_raw_request("SaslHandshake", 2, 1, {"mechanism": "PLAIN"}), conn=_anonymous(s, "handshake v2"),
          label="SaslHandshake v2")
    conn = _anonymous(s, "authenticate v3")
    _handshake(s, conn, "PLAIN", record=False)
    s.raw(_raw_request("SaslAuthenticate", 3, 2, {"auth_bytes": plain_token("alice", SECURE_USERS["alice"])}),
          conn=conn, label="SaslAuthenticate v3")
    conn = _anonymous(s, "two handshakes")
    _handshake(s, conn, "PLAIN", record=False)
    s.call("SaslHandshake", 1, {"mechanism": "PLAIN"}, conn=conn, label="SaslHandshake again")
    conn = _anonymous(s, "ApiVersions after handshake")
    _handshake(s, conn, "PLAIN", record=False)
    s.call("ApiVersions", 3, {"client_software_name": "conformance", "client_software_version": "1.0"}, conn=conn,
           label="ApiVersions after SaslHandshake")
