"""Schema exporters (registry/exporters.py, Confluent's Schema Linking): two kafka-wire brokers, each
with its registry; an exporter on A copies A's schemas to B over HTTP under their ids and versions,
follows new registrations, stops while paused, continues when resumed, starts over after a reset,
and survives A's restart. Confluent's error codes for each documented error, and the exporter
endpoints under ACLs (a super user's)."""

from __future__ import annotations

import base64
import json
import time

import pytest

from broker.security.credentials import CredentialStore
from kafka_wire.sasl import SCRAM_MECHANISMS
from testing.broker_process import BrokerProcess, free_port
from test_schema_registry import Registry, record, registry_broker

ORDER_V1 = record("Order", {"name": "id", "type": "long"})
ORDER_V2 = record("Order", {"name": "id", "type": "long"}, {"name": "note", "type": "string", "default": ""})
ITEM = record("Item", {"name": "sku", "type": "string"})
USES_ITEM = record("Basket", {"name": "item", "type": "Item"})


def wait_for(condition, timeout: float = 20.0, what: str = "the condition"):
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def versions_on(registry: Registry, subject: str) -> list[dict]:
    status, answer = registry.call("GET", f"/subjects/{subject}/versions")
    if status != 200:
        return []
    return [registry.ok("GET", f"/subjects/{subject}/versions/{v}") for v in answer]


@pytest.fixture()
def destination():
    with registry_broker() as registry:
        yield registry


def test_an_exporter_copies_follows_pauses_resumes_resets_and_survives_a_restart(tmp_path, destination):
    with registry_broker(tmp_path / "a") as source:
        # Ids that differ from anything B would give: B's own schema takes id 1 of its default context.
        destination.register("local-value", record("Local", {"name": "x", "type": "int"}))
        source.register("filler-value", record("Filler", {"name": "f", "type": "int"}))
        order_id = source.register("orders-value", ORDER_V1)
        item_id = source.register("item-value", ITEM)
        basket = source.ok("POST", "/subjects/basket-value/versions", {
            "schema": USES_ITEM, "references": [{"name": "Item", "subject": "item-value", "version": 1}]})
        source.register("other-key", record("Other", {"name": "o", "type": "int"}))

        body = {"name": "to-b", "subjects": ["orders-value", "basket-value"], "contextType": "CUSTOM",
                "context": "linked", "subjectRenameFormat": "dc1.${subject}",
                "config": {"schema.registry.url": destination.url}}
        assert source.ok("POST", "/exporters", body) == {"name": "to-b"}
        assert source.ok("GET", "/exporters") == ["to-b"]
        assert source.ok("GET", "/exporters/to-b") == {**body, "contextType": "CUSTOM"}
        assert source.ok("GET", "/exporters/to-b/config") == {"schema.registry.url": destination.url}

        # Into the destination context `.linked`, renamed, in IMPORT mode, under the source's ids.
        orders = ":.linked:dc1.orders-value"
        copied = wait_for(lambda: versions_on(destination, orders), what="orders-value on B")
        assert [(v["id"], v["version"]) for v in copied] == [(order_id, 1)]
        assert json.loads(copied[0]["schema"]) == json.loads(ORDER_V1)
        assert destination.ok("GET", f"/mode/{orders}") == {"mode": "IMPORT"}
        # A reference goes with the schema that uses it (renamed as every exported subject is).
        baskets = wait_for(lambda: versions_on(destination, ":.linked:dc1.basket-value"), what="basket on B")
        assert baskets[0]["id"] == basket["id"]
        assert baskets[0]["references"] == [{"name": "Item", "subject": "dc1.item-value", "version": 1}]
        assert versions_on(destination, ":.linked:dc1.item-value")[0]["id"] == item_id
        assert versions_on(destination, ":.linked:dc1.other-key") == []  # not one of its subjects
        assert destination.ok("GET", "/subjects/local-value/versions/1")["id"] == 1  # B's own, untouched

        status = wait_for(lambda: (s := source.ok("GET", "/exporters/to-b/status"))["state"] == "RUNNING" and s,
                          what="RUNNING")
        assert set(status) == {"name", "state", "offset", "ts"} and status["name"] == "to-b"
        running_offset = status["offset"]
        assert running_offset >= 4  # past the five registrations in `_schemas`

        # A new registration follows, and the offset advances.
        order_v2 = source.register("orders-value", ORDER_V2)
        wait_for(lambda: len(versions_on(destination, orders)) == 2, what="orders-value v2 on B")
        assert versions_on(destination, orders)[1]["id"] == order_v2
        wait_for(lambda: source.ok("GET", "/exporters/to-b/status")["offset"] > running_offset, what="offset")

        # Paused: nothing follows.
        assert source.ok("PUT", "/exporters/to-b/pause") == {"name": "to-b"}
        assert source.ok("GET", "/exporters/to-b/status")["state"] == "PAUSED"
        source.register("orders-value", record("Order", {"name": "id", "type": "long"},
                                               {"name": "note", "type": "string", "default": ""},
                                               {"name": "n", "type": "int", "default": 0}))
        time.sleep(1.5)
        assert len(versions_on(destination, orders)) == 2
        assert source.ok("PUT", "/exporters/to-b/reset") == {"name": "to-b"}  # paused: a reset is allowed
        status = source.ok("GET", "/exporters/to-b/status")
        assert (status["state"], status["offset"]) == ("PAUSED", -1)  # back to the start, still paused

    # A's restart keeps the exporter, paused, where it was.
    with registry_broker(tmp_path / "a") as source:
        assert source.ok("GET", "/exporters") == ["to-b"]
        assert source.ok("GET", "/exporters/to-b")["subjectRenameFormat"] == "dc1.${subject}"
        assert source.ok("GET", "/exporters/to-b/status")["state"] == "PAUSED"
        time.sleep(1)
        assert len(versions_on(destination, orders)) == 2

        # Resumed after the reset: from the start of `_schemas` again, the paused registration too.
        assert source.ok("PUT", "/exporters/to-b/resume") == {"name": "to-b"}
        wait_for(lambda: len(versions_on(destination, orders)) == 3, what="orders-value v3 on B")
        wait_for(lambda: source.ok("GET", "/exporters/to-b/status")["state"] == "RUNNING", what="RUNNING again")
        assert source.error("PUT", "/exporters/to-b/resume") == (409, 40961)

        # A restart of a running exporter: it runs on, and follows what comes next.
        source.process.stop()
        source.process.start()
        source.wait_until_serving()
        wait_for(lambda: source.ok("GET", "/exporters/to-b/status")["state"] == "RUNNING", what="RUNNING after restart")
        new_order = source.register("orders-value", record("Order", {"name": "id", "type": "long"},
                                                           {"name": "note", "type": "string", "default": ""},
                                                           {"name": "n", "type": "int", "default": 0},
                                                           {"name": "m", "type": "int", "default": 0}))
        wait_for(lambda: len(versions_on(destination, orders)) == 4, what="orders-value v4 on B")
        assert versions_on(destination, orders)[3]["id"] == new_order

        status, data, _ = source.raw("DELETE", "/exporters/to-b")
        assert (status, data) == (204, b"")
        assert source.ok("GET", "/exporters") == []
        assert source.error("GET", "/exporters/to-b/status") == (404, 40450)


def test_context_types_and_an_unreachable_destination(destination):
    with registry_broker() as source:
        schema_id = source.register(":.team:pay-value", ORDER_V1)
        url = {"schema.registry.url": destination.url}
        source.ok("POST", "/exporters", {"name": "none", "subjects": [":*:"], "contextType": "NONE", "config": url})
        copied = wait_for(lambda: versions_on(destination, ":.team:pay-value"), what="NONE keeps the context")
        assert copied[0]["id"] == schema_id
        source.ok("POST", "/exporters", {"name": "auto", "subjects": [":.team:*"], "config": url})
        auto = source.ok("GET", "/exporters/auto")
        assert auto["contextType"] == "AUTO"
        contexts = wait_for(lambda: [c for c in destination.ok("GET", "/contexts") if c.endswith(".team")
                                     and c != ".team"], what="AUTO's context")
        assert versions_on(destination, f":{contexts[0]}:pay-value")[0]["id"] == schema_id

        # Nothing listens there: ERROR with a trace (at its first schema); it goes on trying.
        source.register("plain-value", ITEM)
        source.ok("POST", "/exporters", {"name": "nowhere", "config": {"schema.registry.url": f"http://127.0.0.1:{free_port()}"}})
        status = wait_for(lambda: (s := source.ok("GET", "/exporters/nowhere/status"))["state"] == "ERROR" and s,
                          what="ERROR")
        assert "127.0.0.1" in status["trace"]
        assert source.ok("PUT", "/exporters/nowhere/pause") == {"name": "nowhere"}
        assert "trace" not in source.ok("GET", "/exporters/nowhere/status")


def test_documented_errors():
    with registry_broker() as registry:
        url = {"schema.registry.url": "http://127.0.0.1:1"}
        assert registry.error("GET", "/exporters/missing") == (404, 40450)
        assert registry.error("GET", "/exporters/missing/status") == (404, 40450)
        assert registry.error("GET", "/exporters/missing/config") == (404, 40450)
        assert registry.error("PUT", "/exporters/missing/pause") == (404, 40450)
        assert registry.error("DELETE", "/exporters/missing") == (404, 40450)
        assert registry.error("POST", "/exporters", {"config": url}) == (409, 40950)  # no name
        assert registry.error("POST", "/exporters", {"name": "a b", "config": url}) == (409, 40950)
        assert registry.error("POST", "/exporters", {"name": "e"}) == (409, 40951)  # no config
        assert registry.error("POST", "/exporters", {"name": "e", "config": {"x": "y"}}) == (409, 40951)
        assert registry.error("POST", "/exporters", {"name": "e", "config": {"schema.registry.url": "ftp://h"}}) \
            == (409, 40951)
        assert registry.error("POST", "/exporters", {"name": "e", "subjects": "orders", "config": url}) == (409, 40952)
        assert registry.error("POST", "/exporters", {"name": "e", "subjects": [], "config": url}) == (409, 40952)
        assert registry.error("POST", "/exporters", {"name": "e", "contextType": "SOMETIMES", "config": url})[0] == 422
        registry.ok("POST", "/exporters", {"name": "e", "config": url})
        assert registry.error("POST", "/exporters", {"name": "e", "config": url}) == (409, 40960)
        # Under a base context path the same exporters (Confluent's ContextFilter leaves the path be)
        assert registry.ok("GET", "/contexts/.team/exporters") == ["e"]
        assert registry.ok("GET", "/contexts/.team/exporters/e")["name"] == "e"
        # Changing, resetting a running exporter: 40963; resuming one: 40961
        assert registry.error("PUT", "/exporters/e", {"subjects": ["x"]}) == (409, 40963)
        assert registry.error("PUT", "/exporters/e/config", {"schema.registry.url": "http://h:1"}) == (409, 40963)
        assert registry.error("PUT", "/exporters/e/reset") == (409, 40963)
        assert registry.error("PUT", "/exporters/e/resume") == (409, 40961)
        registry.ok("PUT", "/exporters/e/pause")
        assert registry.ok("PUT", "/exporters/e", {"subjects": ["x"], "subjectRenameFormat": "b.${subject}"}) \
            == {"name": "e"}
        assert registry.ok("GET", "/exporters/e")["subjects"] == ["x"]
        assert registry.ok("PUT", "/exporters/e/config", {"schema.registry.url": "http://h:1"}) == {"name": "e"}
        assert registry.ok("GET", "/exporters/e/config") == {"schema.registry.url": "http://h:1"}
        assert registry.error("PUT", "/exporters/e", {"subjects": [1]}) == (409, 40952)
        assert registry.error("PUT", "/exporters/e/config", {"other": "x"}) == (409, 40951)
        assert registry.error("POST", "/exporters/e") == (405, 405)


def basic(user: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def test_exporters_under_acls_are_a_super_users_and_reach_a_destination_with_basic_auth(tmp_path, destination):
    from broker.security.authorizer import StandardAuthorizer

    password = "exporter-secret"
    port = free_port()
    process = BrokerProcess(tmp_path / "guarded", config={
        "schema.registry.port": port,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin"})
    store = CredentialStore(process.log_dir)
    for user in ("admin", "alice"):
        store.set_password(user, password, SCRAM_MECHANISMS["SCRAM-SHA-256"])
    StandardAuthorizer(process.log_dir).create([])
    process.start()
    try:
        guarded = Registry(process, port)
        guarded.wait_until_serving()
        body = {"name": "e", "config": {"schema.registry.url": destination.url}}
        for method, path, data in (("GET", "/exporters", None), ("POST", "/exporters", body),
                                   ("GET", "/exporters/e/status", None), ("PUT", "/exporters/e/pause", None)):
            status, answer, _ = guarded.raw(method, path, None if data is None else json.dumps(data).encode(),
                                            headers=basic("alice", password))
            assert status == 403 and json.loads(answer)["error_code"] == 40301, (method, path, answer)
        status, answer, _ = guarded.raw("POST", "/exporters", json.dumps(body).encode(),
                                        headers=basic("admin", password))
        assert (status, json.loads(answer)) == (200, {"name": "e"})

        # An exporter whose destination wants basic auth: Confluent's basic.auth.* keys.
        schema_id = destination.register("plain-value", ORDER_V1)
        config = {"schema.registry.url": guarded.url, "basic.auth.credentials.source": "USER_INFO"}
        destination.ok("POST", "/exporters", {"name": "wrong", "contextType": "NONE",
                                              "config": {**config, "basic.auth.user.info": "admin:nope"}})
        status = wait_for(lambda: (s := destination.ok("GET", "/exporters/wrong/status"))["state"] == "ERROR" and s,
                          what="ERROR on 401")
        assert "401" in status["trace"]
        destination.ok("POST", "/exporters", {"name": "right", "contextType": "NONE",
                                              "config": {**config, "basic.auth.user.info": f"admin:{password}"}})
        status, answer, _ = guarded.raw("GET", "/subjects/plain-value/versions/1", headers=basic("admin", password))
        wait_for(lambda: guarded.raw("GET", "/subjects/plain-value/versions/1",
                                     headers=basic("admin", password))[0] == 200, what="the copy on the guarded one")
        _, answer, _ = guarded.raw("GET", "/subjects/plain-value/versions/1", headers=basic("admin", password))
        assert json.loads(answer)["id"] == schema_id
    finally:
        process.stop()


def test_with_two_worker_processes(destination):
    # Worker 0 serves the registry and owns `_schemas` and `_schema_exporters` (broker/workers/ownership.py).
    with registry_broker(**{"num.worker.processes": 2}) as source:
        schema_id = source.register("two-value", ORDER_V1)
        source.ok("POST", "/exporters", {"name": "w", "contextType": "DEFAULT",
                                         "config": {"schema.registry.url": destination.url}})
        copied = wait_for(lambda: versions_on(destination, "two-value"), what="two-value on B")
        assert copied[0]["id"] == schema_id
        wait_for(lambda: source.ok("GET", "/exporters/w/status")["state"] == "RUNNING", what="RUNNING")


def test_an_https_destination_checked_against_the_exporters_trust_store(tmp_path):
    from test_registry_cluster import HttpsRegistry
    from test_security import make_certificates

    certificates = make_certificates(tmp_path / "certs")
    port = free_port()
    process = BrokerProcess(tmp_path / "https", config={
        "schema.registry.port": port, "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certificates.server)})
    process.start()
    try:
        secure = HttpsRegistry(process, port, str(certificates.ca))
        secure.wait_until_serving()
        url = f"https://localhost:{port}"
        with registry_broker() as source:
            schema_id = source.register("tls-value", ORDER_V1)
            # Without the CA the destination's certificate is not trusted: ERROR, saying so.
            source.ok("POST", "/exporters", {"name": "untrusted", "contextType": "NONE",
                                             "config": {"schema.registry.url": url}})
            status = wait_for(lambda: (s := source.ok("GET", "/exporters/untrusted/status"))["state"] == "ERROR"
                              and s, what="ERROR without the CA")
            assert "certificate" in status["trace"].lower(), status
            source.ok("POST", "/exporters", {"name": "trusted", "contextType": "NONE",
                                             "config": {"schema.registry.url": url,
                                                        "schema.registry.ssl.truststore.location": str(certificates.ca)}})
            wait_for(lambda: secure.call("GET", "/subjects/tls-value/versions/1")[0] == 200, what="the copy over HTTPS")
            assert secure.ok("GET", "/subjects/tls-value/versions/1")["id"] == schema_id
    finally:
        process.stop()
