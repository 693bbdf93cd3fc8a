"""The console's JSON API (/api) against a broker process, checked against what a real Kafka
client (librdkafka, confluent-kafka) created and sees: Kafka's error semantics, writes only with
console.read.only=false, SCRAM logins and ACLs, and the console's config keys and start."""

from __future__ import annotations

import datetime
import http.client
import json
import socket
import subprocess
import sys
import time
from urllib.parse import quote

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, AclBinding, AclOperation, AclPermissionType, ResourcePatternType, \
    ResourceType

from testing.broker_process import REPO_ROOT, serve_until_exit
from tests.console.conftest import (
    PASSWORDS,
    commit_as_group,
    create_topic,
    produce,
    sasl_config,
    share_group_holding_records,
)

pytestmark = pytest.mark.timeout(180)


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return [tp.offset for tp in consumer.committed([TopicPartition(topic, p) for p in range(partitions)],
                                                      timeout=30)]
    finally:
        consumer.close()


def until(condition, what: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


# -- configuration and start ---------------------------------------------------------------------

@pytest.mark.parametrize("setting, message", [
    ("console.port=web", "Invalid value web for configuration console.port: Not a number of type INT"),
    ("console.port=70000", "Invalid value 70000 for configuration console.port: Value must be no more than 65535"),
    ("console.read.only=maybe",
     "Invalid value maybe for configuration console.read.only: Expected value to be either true or false"),
    ("console.sample.interval.ms=5",
     "Invalid value 5 for configuration console.sample.interval.ms: Value must be at least 100"),
])
def test_a_bad_console_value_stops_the_broker_with_one_line(tmp_path, setting, message):
    done = serve_until_exit(setting, data_dir=tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"kafka-wire: {message}\n"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_console_port_in_use_stops_the_broker_with_one_line(tmp_path, workers):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = serve_until_exit(f"console.port={port}", f"num.worker.processes={workers}", data_dir=tmp_path)
    assert done.returncode == 1
    line = f"kafka-wire: Console (console.host, console.port) failed to bind to 127.0.0.1:{port}: Address already in use."
    assert done.stderr.splitlines()[-1] == line
    assert done.stderr.count(line) == 1  # (with workers: worker 0's failed start, not restarted)


def test_the_console_is_not_imported_unless_configured():
    # Start-to-ready of a broker without the console is unchanged: nothing of it is loaded.
    code = ("import sys, cli.main, cli.commands.serve, broker.node, broker.server; "
            "print(sorted(m for m in sys.modules if m == 'console' or m.startswith('console.')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


# -- reading ----------------------------------------------------------------------------------------

def test_overview_and_topic_show_what_a_client_created(writable_console):
    bootstrap = writable_console.bootstrap
    create_topic(AdminClient({"bootstrap.servers": bootstrap}), "api-orders", 3,
                 {"retention.ms": "3600000", "cleanup.policy": "delete"})
    produce(bootstrap, "api-orders", [(i % 3, f"k{i}", f"v{i}", None) for i in range(30)])

    overview = writable_console.get("overview")
    assert overview["brokers"] == [{"id": 1, "host": "127.0.0.1", "port": writable_console.process.port,
                                    "rack": None}]
    assert overview["controller"] == 1
    topic = next(t for t in overview["topics"] if t["name"] == "api-orders")
    assert topic["partitions"] == 3 and topic["size"] > 0 and topic["internal"] is False
    assert overview["under_replicated"] == []

    described = writable_console.get("topics/api-orders")
    assert [(p["partition"], p["leader"], p["replicas"], p["isr"], p["start_offset"], p["end_offset"])
            for p in described["partitions"]] == [(n, 1, [1], [1], 0, 10) for n in range(3)]
    assert all(p["size"] > 0 for p in described["partitions"])
    configs = {c["name"]: (c["value"], c["source"]) for c in described["configs"]}
    assert configs["retention.ms"] == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert configs["segment.bytes"] == ("1073741824", "DEFAULT_CONFIG")

    # messages/s: once the sampler has seen the topic, it sees the next writes.
    until(lambda: writable_console.get("topics/api-orders")["rates"], "samples of api-orders")
    produce(bootstrap, "api-orders", [(0, None, "more", None)] * 5)
    until(lambda: any(rate > 0 for _, rate in writable_console.get("topics/api-orders")["rates"]),
          "a rate above zero for api-orders")


def test_message_browser_by_offset_timestamp_and_key(writable_console):
    bootstrap = writable_console.bootstrap
    create_topic(AdminClient({"bootstrap.servers": bootstrap}), "api-browse", 1)
    produce(bootstrap, "api-browse", [(0, f"user-{i % 4}", json.dumps({"n": i}), [("trace", f"t{i}".encode())])
                                      for i in range(20)])
    produce(bootstrap, "api-browse", [(0, None, b"\xff\x00binary", None)])

    page = writable_console.get("topics/api-browse/messages?partition=0&offset=5&limit=3")
    assert [m["offset"] for m in page["messages"]] == [5, 6, 7]
    assert page["next_offset"] == 8 and page["end_offset"] == 21
    m = page["messages"][0]
    assert m["key"]["text"] == "user-1" and json.loads(m["value"]["text"]) == {"n": 5}
    assert [(h["key"], h["value"]["text"]) for h in m["headers"]] == [("trace", "t5")]

    # No position: the last `limit` records; a value that is not UTF-8 comes as bytes only.
    tail = writable_console.get("topics/api-browse/messages?partition=0&limit=2")
    assert [m["offset"] for m in tail["messages"]] == [19, 20]
    assert tail["messages"][1]["value"]["text"] is None
    assert tail["messages"][1]["value"]["base64"] == "/wBiaW5hcnk="

    # By timestamp (ms or ISO 8601): the first record at or after it, as ListOffsets finds it.
    ts = page["messages"][2]["timestamp"]
    iso = datetime.datetime.fromtimestamp(ts / 1000, datetime.timezone.utc).isoformat(timespec="milliseconds")
    for given in (str(ts), quote(iso), iso):  # the last with its '+' unencoded, as typed into a URL
        found = writable_console.get(f"topics/api-browse/messages?partition=0&limit=1&timestamp={given}")
        assert found["messages"][0]["timestamp"] >= ts and found["messages"][0]["offset"] <= 7
    later = writable_console.get("topics/api-browse/messages?partition=0&timestamp=4102444800000")  # 2100
    assert later["messages"] == [] and later["position"] == 21

    keyed = writable_console.get("topics/api-browse/messages?partition=0&offset=0&key=user-3&limit=100")
    assert [m["offset"] for m in keyed["messages"]] == [3, 7, 11, 15, 19]

    # Live tail: reading from the end returns nothing until the next write.
    empty = writable_console.get("topics/api-browse/messages?partition=0&offset=21")
    assert empty["messages"] == [] and empty["next_offset"] == 21
    produce(bootstrap, "api-browse", [(0, "late", "arrival", None)])
    tailed = writable_console.get("topics/api-browse/messages?partition=0&offset=21")
    assert [(m["offset"], m["key"]["text"]) for m in tailed["messages"]] == [(21, "late")]


@pytest.mark.parametrize("path, status, error, message", [
    ("topics/api-none", 404, "UNKNOWN_TOPIC_OR_PARTITION", "Topic 'api-none' does not exist"),
    ("topics/api-none/messages?offset=0", 404, "UNKNOWN_TOPIC_OR_PARTITION", "Topic 'api-none' does not exist"),
    ("topics/api-errors/messages?partition=7", 404, "UNKNOWN_TOPIC_OR_PARTITION",
     "Topic 'api-errors' has no partition 7 (it has 1)"),
    ("topics/api-errors/messages?offset=50", 416, "OFFSET_OUT_OF_RANGE",
     "Offset 50 is past the end of api-errors-0: its offsets run from 0 to 1 (log end offset 2)"),
    ("topics/api-errors/messages?offset=ten", 400, "INVALID_REQUEST", "offset must be a whole number, not 'ten'"),
    ("topics/api-errors/messages?timestamp=2026-13-45", 400, "INVALID_REQUEST",
     "Malformed timestamp '2026-13-45': give milliseconds since the epoch or an ISO 8601 time such as "
     "2026-11-25T00:00:00Z"),
    ("groups/api-nobody", 404, "GROUP_ID_NOT_FOUND", "Group 'api-nobody' does not exist"),
    ("nothing-here", 404, "NOT_FOUND", "no API GET /api/nothing-here"),
])
def test_bad_input_answers_with_kafka_errors(writable_console, path, status, error, message):
    if "api-errors" in path:
        admin = AdminClient({"bootstrap.servers": writable_console.bootstrap})
        if "api-errors" not in admin.list_topics(timeout=30).topics:
            create_topic(admin, "api-errors", 1)
            produce(writable_console.bootstrap, "api-errors", [(0, None, "x", None)] * 2)
    got_status, body, _ = writable_console.call("GET", path)
    assert (got_status, body) == (status, {"error": error, "message": message})
    # Asking does not create the topic (Metadata without auto-creation).
    assert "api-none" not in AdminClient({"bootstrap.servers": writable_console.bootstrap}).list_topics(
        timeout=30).topics


def test_group_shows_members_assignments_committed_offsets_and_lag(writable_console):
    bootstrap = writable_console.bootstrap
    create_topic(AdminClient({"bootstrap.servers": bootstrap}), "api-billing", 2)
    produce(bootstrap, "api-billing", [(i % 2, None, f"bill-{i}", None) for i in range(10)])
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "api-billers", "client.id": "biller-1",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["api-billing"])
        until(lambda: consumer.poll(0.5) is not None and consumer.assignment(), "an assignment")
        consumer.commit(offsets=[TopicPartition("api-billing", 0, 1), TopicPartition("api-billing", 1, 4)],
                        asynchronous=False)
        group = until(lambda: (g := writable_console.get("groups/api-billers"))["state"] == "Stable" and g,
                      "a stable group")
        assert group["protocol_type"] == "consumer" and group["protocol"] == "range"
        assert [(m["client_id"], m["assignment"]) for m in group["members"]] == [
            ("biller-1", [{"topic": "api-billing", "partitions": [0, 1]}])]
        assert [(o["topic"], o["partition"], o["committed"], o["end_offset"], o["lag"]) for o in group["offsets"]] == [
            ("api-billing", 0, 1, 5, 4), ("api-billing", 1, 4, 5, 1)]
        assert group["lag_total"] == 5
        history = until(lambda: [s for s in writable_console.get("groups/api-billers")["lag_history"] if s["lag"] == 5],
                        "a lag sample of 5")
        assert history[-1]["partitions"] == {"api-billing:0": 4, "api-billing:1": 1}
        listed = {g["group_id"]: g for g in writable_console.get("groups")["groups"]}
        assert listed["api-billers"]["state"] == "Stable" and listed["api-billers"]["type"] == "classic"
    finally:
        consumer.close()


# -- writing ------------------------------------------------------------------------------------------

def test_writes_are_seen_by_kafka_clients(writable_console):
    bootstrap = writable_console.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    status, body, _ = writable_console.call("POST", "topics", {"name": "api-made", "partitions": 2})
    assert (status, body) == (200, {"name": "api-made", "partitions": 2, "replication_factor": 1})
    assert len(admin.list_topics(timeout=30).topics["api-made"].partitions) == 2
    status, body, _ = writable_console.call("POST", "topics", {"name": "api-made", "partitions": 2})
    assert (status, body["error"], body["message"]) == (409, "TOPIC_ALREADY_EXISTS", "Topic 'api-made' already exists.")

    status, body, _ = writable_console.call("POST", "topics/api-made/messages",
                                            {"partition": 1, "key": "hello", "value": "{\"a\": 1}",
                                             "headers": {"via": "console"}})
    assert (status, body) == (200, {"topic": "api-made", "partition": 1, "offset": 0})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "api-made-reader",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition("api-made", 1, 0)])
        message = until(lambda: (m := consumer.poll(0.5)) is not None and not m.error() and m, "the message")
        assert (message.key(), message.value(), message.headers()) == (b"hello", b'{"a": 1}', [("via", b"console")])
    finally:
        consumer.close()

    # Reset a group's offsets as kafka-consumer-groups --reset-offsets does (no active members).
    produce(bootstrap, "api-made", [(0, None, "x", None)] * 4)
    commit_as_group(bootstrap, "api-resettable", [("api-made", 0, 4), ("api-made", 1, 1)])
    status, body, _ = writable_console.call("POST", "groups/api-resettable/offsets",
                                            {"topic": "api-made", "to": "earliest"})
    assert status == 200 and body["offsets"] == [{"partition": 0, "offset": 0}, {"partition": 1, "offset": 0}]
    assert committed(bootstrap, "api-resettable", "api-made", 2) == [0, 0]
    status, body, _ = writable_console.call("POST", "groups/api-resettable/offsets",
                                            {"topic": "api-made", "to": "offset", "offset": "3", "partition": 0})
    assert status == 200 and committed(bootstrap, "api-resettable", "api-made", 2) == [3, 0]
    # Past the end, as kafka-consumer-groups --to-offset: the log end offset.
    status, body, _ = writable_console.call("POST", "groups/api-resettable/offsets",
                                            {"topic": "api-made", "to": "offset", "offset": 50})
    assert status == 200 and body["offsets"] == [{"partition": 0, "offset": 4}, {"partition": 1, "offset": 1}]

    status, body, _ = writable_console.call("DELETE", "topics/api-made")
    assert (status, body) == (200, {"deleted": "api-made"})
    until(lambda: "api-made" not in admin.list_topics(timeout=30).topics, "the topic gone for clients")
    status, body, _ = writable_console.call("DELETE", "topics/api-made")
    assert (status, body["error"]) == (404, "UNKNOWN_TOPIC_OR_PARTITION")


def test_resetting_offsets_of_a_group_with_members_is_refused(writable_console):
    bootstrap = writable_console.bootstrap
    create_topic(AdminClient({"bootstrap.servers": bootstrap}), "api-busy", 1)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "api-busy-group", "enable.auto.commit": False})
    try:
        consumer.subscribe(["api-busy"])
        until(lambda: consumer.poll(0.2) is None and consumer.assignment(), "an assignment")
        status, body, _ = writable_console.call("POST", "groups/api-busy-group/offsets",
                                                {"topic": "api-busy", "to": "latest"})
        assert status == 409 and body["error"] == "UNKNOWN_MEMBER_ID", body
        assert "the group has active members" in body["message"]
    finally:
        consumer.close()


def test_writes_need_json_and_the_console_header(writable_console):
    status, body, _ = writable_console.call("POST", "topics", {"name": "api-forged"}, headers={"X-Console": "0"})
    assert status == 415 and body["error"] == "INVALID_REQUEST"
    assert "api-forged" not in AdminClient({"bootstrap.servers": writable_console.bootstrap}).list_topics(
        timeout=30).topics


# -- security and read-only mode ------------------------------------------------------------------

def login(console, user: str, password: str) -> tuple[int, dict, str | None]:
    status, body, headers = console.call("POST", "login", {"username": user, "password": password})
    cookie = headers.get("Set-Cookie", "").split(";", 1)[0] or None
    return status, body, cookie


def test_a_broker_with_sasl_users_asks_for_a_login(secure_console):
    assert secure_console.get("session") == {"login_required": True, "user": None, "read_only": True,
                                             "schema_registry": False}
    status, body, _ = secure_console.call("GET", "overview")
    assert (status, body["error"]) == (401, "LOGIN_REQUIRED")
    status, body, cookie = login(secure_console, "alice", "not-her-password")
    assert (status, body["error"], cookie) == (401, "SASL_AUTHENTICATION_FAILED", None)
    status, body, cookie = login(secure_console, "mallory", "anything")
    assert (status, body["error"], cookie) == (401, "SASL_AUTHENTICATION_FAILED", None)
    status, body, cookie = login(secure_console, "alice", PASSWORDS["alice"])
    assert status == 200 and cookie.startswith(f"kw_console_{secure_console.url.rsplit(':', 1)[1]}=")
    assert secure_console.get("session", cookie=cookie)["user"] == "alice"
    secure_console.call("POST", "logout", {}, cookie=cookie)
    status, _, _ = secure_console.call("GET", "overview", cookie=cookie)
    assert status == 401


def test_the_console_applies_the_users_acls(secure_console):
    admin = AdminClient(sasl_config(secure_console, "admin"))
    for name in ("api-alice-reads", "api-alice-blind"):
        create_topic(admin, name, 1)
    produce(sasl_config(secure_console, "admin"), "api-alice-reads", [(0, "k", "v", None)])
    bindings = [AclBinding(ResourceType.TOPIC, "api-alice-reads", ResourcePatternType.LITERAL, "User:alice", "*",
                           operation, AclPermissionType.ALLOW) for operation in (AclOperation.DESCRIBE,)]
    for future in admin.create_acls(bindings).values():
        future.result(30)
    _, _, alice = login(secure_console, "alice", PASSWORDS["alice"])
    _, _, root = login(secure_console, "admin", PASSWORDS["admin"])

    seen = {t["name"] for t in secure_console.get("overview", cookie=alice)["topics"]}
    assert "api-alice-reads" in seen and "api-alice-blind" not in seen
    assert {"api-alice-reads", "api-alice-blind"} <= {t["name"] for t in secure_console.get("overview",
                                                                                           cookie=root)["topics"]}
    status, body, _ = secure_console.call("GET", "topics/api-alice-blind", cookie=alice)
    assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    # Describing is not reading: the records need READ, as for a Kafka consumer.
    status, body, _ = secure_console.call("GET", "topics/api-alice-reads/messages?offset=0", cookie=alice)
    assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    read = AclBinding(ResourceType.TOPIC, "api-alice-reads", ResourcePatternType.LITERAL, "User:alice", "*",
                      AclOperation.READ, AclPermissionType.ALLOW)
    for future in admin.create_acls([read]).values():
        future.result(30)
    page = secure_console.get("topics/api-alice-reads/messages?offset=0", cookie=alice)
    assert [(m["key"]["text"], m["value"]["text"]) for m in page["messages"]] == [("k", "v")]


def test_a_read_only_console_refuses_writes(secure_console):
    _, _, root = login(secure_console, "admin", PASSWORDS["admin"])
    admin = AdminClient(sasl_config(secure_console, "admin"))
    create_topic(admin, "api-untouchable", 1)
    for method, path, body in [("POST", "topics", {"name": "api-read-only-made"}),
                               ("DELETE", "topics/api-untouchable", None),
                               ("POST", "topics/api-untouchable/messages", {"value": "x"}),
                               ("POST", "groups/any/offsets", {"topic": "api-untouchable", "to": "earliest"})]:
        status, answer, _ = secure_console.call(method, path, body, cookie=root)
        assert (status, answer["error"]) == (403, "READ_ONLY"), (method, path)
    topics = admin.list_topics(timeout=30).topics
    assert "api-untouchable" in topics and "api-read-only-made" not in topics
    assert secure_console.get("topics/api-untouchable", cookie=root)["partitions"][0]["end_offset"] == 0


def test_a_kip_848_consumer_group_shows_its_members_and_assignment(writable_console):
    bootstrap = writable_console.bootstrap
    create_topic(AdminClient({"bootstrap.servers": bootstrap}), "api-modern", 2)
    produce(bootstrap, "api-modern", [(i % 2, None, "m", None) for i in range(6)])
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "api-modern-group", "group.protocol": "consumer",
                         "client.id": "modern-1", "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["api-modern"])
        until(lambda: consumer.poll(0.5) is not None and len(consumer.assignment()) == 2, "both partitions assigned")
        consumer.commit(offsets=[TopicPartition("api-modern", 0, 3), TopicPartition("api-modern", 1, 1)],
                        asynchronous=False)
        group = until(lambda: (g := writable_console.get("groups/api-modern-group"))["members"]
                      and g["members"][0]["assignment"] and g, "a member with its assignment")
        assert group["protocol_type"] == "consumer" and group["protocol"] == "uniform"
        assert [(m["client_id"], m["assignment"]) for m in group["members"]] == [
            ("modern-1", [{"topic": "api-modern", "partitions": [0, 1]}])]
        assert [(o["partition"], o["committed"], o["lag"]) for o in group["offsets"]] == [(0, 3, 0), (1, 1, 2)]
        listed = {g["group_id"]: g for g in writable_console.get("groups")["groups"]}
        assert listed["api-modern-group"]["type"] == "consumer"
    finally:
        consumer.close()


def test_a_streams_group_shows_its_members_and_the_partitions_their_tasks_read(writable_console):
    from testing.streams_groups import stateless_topology, streams_member

    bootstrap = writable_console.bootstrap
    create_topic(AdminClient({"bootstrap.servers": bootstrap}), "api-streams-in", 2)
    member = streams_member(bootstrap, "api-streams-app", "api-streams-member", stateless_topology("api-streams-in"))
    try:
        group = writable_console.get("groups/api-streams-app")
        assert (group["state"], group["protocol_type"]) == ("Stable", "streams")
        assert [(m["member_id"], m["assignment"]) for m in group["members"]] == [
            ("api-streams-member", [{"topic": "api-streams-in", "partitions": [0, 1]}])]
        listed = {g["group_id"]: g for g in writable_console.get("groups")["groups"]}
        assert listed["api-streams-app"]["type"] == "streams"
    finally:
        member.close()


def test_large_values_come_cut_and_a_page_stays_bounded(writable_console):
    bootstrap = writable_console.bootstrap
    create_topic(AdminClient({"bootstrap.servers": bootstrap}), "api-large", 1)
    big = b"x" * 900_000
    produce({"bootstrap.servers": bootstrap, "message.max.bytes": 1_000_000}, "api-large",
            [(0, f"big-{i}", big, None) for i in range(12)])
    page = writable_console.get("topics/api-large/messages?partition=0&offset=0&limit=500")
    assert page["messages"], page
    first = page["messages"][0]["value"]
    assert first["size"] == 900_000 and first["truncated"] is True and first["text"] == "x" * 65536
    # Each read is one Fetch of at most 1 MiB (one batch here); the page ends after eight of them
    # and says where the next one starts.
    assert [m["offset"] for m in page["messages"]] == list(range(8))
    assert page["next_offset"] == 8 and page["scanned_to_end"] is False
    rest = writable_console.get("topics/api-large/messages?partition=0&offset=8&limit=500")
    assert [m["offset"] for m in rest["messages"]] == [8, 9, 10, 11] and rest["scanned_to_end"] is True


def test_a_cluster_brokers_console_shows_the_brokers_and_under_replicated_partitions(tmp_path, zookeeper_installed):
    from testing.cluster import Cluster
    from testing.broker_process import free_port

    from tests.console.conftest import Console, console_errors

    cluster = Cluster(tmp_path, 2, {"default.replication.factor": 2, "offsets.topic.replication.factor": 2,
                                    "console.sample.interval.ms": 200})
    port = free_port()
    cluster.brokers[1].config["console.port"] = port
    try:
        cluster.start()
        console = Console(cluster.brokers[1], port)
        console.wait_until_serving()
        cluster.create_topic("cl-orders", partitions=2, replication_factor=2)
        overview = console.get("overview")
        assert sorted(b["id"] for b in overview["brokers"]) == [1, 2]
        assert overview["controller"] in (1, 2)
        assert overview["under_replicated"] == []

        cluster.brokers[2].kill()
        overview = until(lambda: (o := console.get("overview"))["under_replicated"] and len(
            [u for u in o["under_replicated"] if u["topic"] == "cl-orders"]) == 2 and o,
            "both partitions of cl-orders under-replicated", timeout=60)
        assert [(u["partition"], u["leader"], sorted(u["replicas"]), u["isr"])
                for u in overview["under_replicated"] if u["topic"] == "cl-orders"] == [
            (0, 1, [1, 2], [1]), (1, 1, [1, 2], [1])]
        assert [b["id"] for b in overview["brokers"]] == [1]
        topic = console.get("topics/cl-orders")
        assert [(p["leader"], p["isr"]) for p in topic["partitions"]] == [(1, [1]), (1, [1])]
        assert console_errors(cluster.brokers[1]) == []
    except BaseException as error:
        error.add_note(cluster.log_report())
        raise
    finally:
        cluster.stop()


def test_idle_connections_cannot_take_the_broker_over(writable_console):
    from console.server import MAX_CONNECTIONS

    host, port = writable_console.url.rsplit("/", 1)[1].split(":")
    idle = [socket.create_connection((host, int(port)), timeout=30) for _ in range(MAX_CONNECTIONS)]
    try:
        # Each idle connection is being served (its request never comes); one more is closed at once.
        until(lambda: _closed_at_once(host, int(port)), "a connection beyond the limit closed")
    finally:
        for conn in idle:
            conn.close()

    def serving() -> bool:
        # The server learns of the closed connections as it reads their ends: until then the first of
        # the next requests may still find it full and be closed at once.
        try:
            return writable_console.call("GET", "session")[0] == 200
        except (ConnectionError, http.client.HTTPException):
            return False

    until(serving, "the console serving again")
    # Kafka clients were never affected: the broker still answers them.
    assert AdminClient({"bootstrap.servers": writable_console.bootstrap}).list_topics(timeout=30).brokers


def _closed_at_once(host: str, port: int) -> bool:
    with socket.create_connection((host, port), timeout=30) as conn:
        conn.sendall(b"GET /api/session HTTP/1.1\r\nHost: x\r\n\r\n")
        return conn.recv(100) == b""


def test_a_share_group_shows_its_members_and_share_partitions(writable_console):
    """A share group (KIP-932) with confluent-kafka's ShareConsumer: its member and assignment, and
    per share-partition the start offset, end offset, records in flight and lag, as
    kafka-share-groups --describe shows them."""
    consumer = share_group_holding_records(writable_console.bootstrap, "api-share", "api-share-group")
    try:
        group = until(lambda: (g := writable_console.get("groups/api-share-group"))["members"]
                      and g["offsets"] and g["offsets"][0]["start_offset"] == 2 and g, "the accepted records past")
        assert group["protocol_type"] == "share" and group["protocol"] == "simple" and group["state"] == "Stable"
        assert [(m["client_id"], m["assignment"]) for m in group["members"]] == [
            ("sharer-1", [{"topic": "api-share", "partitions": [0]}])]
        assert [(o["topic"], o["partition"], o["start_offset"], o["end_offset"], o["in_flight"], o["lag"])
                for o in group["offsets"]] == [("api-share", 0, 2, 6, 4, 4)]
        assert group["lag_total"] == 4
        listed = {g["group_id"]: g for g in writable_console.get("groups")["groups"]}
        assert listed["api-share-group"]["type"] == "share"
        # The console's sampler follows the share group's lag too (6 before the acknowledgements).
        until(lambda: (h := writable_console.get("groups/api-share-group")["lag_history"])
              and h[-1]["partitions"] == {"api-share:0": 4}, "a sample of the share group's lag after them")
    finally:
        consumer.close()
