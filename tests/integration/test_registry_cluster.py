"""The Schema Registry in a ZooKeeper cluster (issue 28 item 2): three brokers, each serving the API
on its own schema.registry.port. `_schemas` is created once, compacted, one partition, three
replicas; the leader of `_schemas`-0 writes, the others forward writes to it and serve reads from
their replica; a read on any broker after an answered write sees it; confluent-kafka's
SchemaRegistryClient takes all three URLs; after the leader is killed (SIGKILL) registration goes
on at the new leader with ids above the old ones, and nothing acknowledged is lost.
KAFKA_WIRE_TEST_WORKERS=2 runs the brokers with two worker processes.
"""

from __future__ import annotations

import http.client
import json
import ssl
import time
import urllib.request

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from broker.security.credentials import CredentialStore
from client import WireClient
from kafka_wire.sasl import SCRAM_MECHANISMS
from testing.cluster import running_cluster
from testing.processes import free_port
from test_schema_registry import USER_V1, USER_V2, Registry, quote, record
from test_schema_registry_auth import PASSWORD, basic

pytestmark = pytest.mark.clients

SCHEMAS = "_schemas"


@pytest.fixture(scope="module")
def cluster(zookeeper_installed, tmp_path_factory):
    ports = {node_id: free_port() for node_id in (1, 2, 3)}
    with running_cluster(3, {"min.insync.replicas": 2}, tmp_path_factory.mktemp("registry-cluster"),
                         broker_configs={n: {"schema.registry.port": p} for n, p in ports.items()}) as cluster:
        registries = {n: Registry(cluster.brokers[n], p) for n, p in ports.items()}
        for registry in registries.values():
            registry.wait_until_serving()
        cluster.registries = registries
        yield cluster


def schemas_leader(cluster, not_in=frozenset()) -> int:
    return cluster.wait_for_leader(SCHEMAS, 0, not_in=set(not_in), timeout=30)


def followers(cluster, leader: int) -> list[int]:
    return [n for n in cluster.registries if n != leader and cluster.brokers[n].is_running()]


def test_a_broker_without_a_replica_forwards_reads_and_writes(zookeeper_installed, tmp_path):
    """Four brokers: `_schemas` has three replicas, so one broker has none and asks the leader;
    its console's registry pages (console/registry_views.py) show what the leader answers."""
    ports = {node_id: free_port() for node_id in (1, 2, 3, 4)}
    consoles = {node_id: free_port() for node_id in (1, 2, 3, 4)}
    with running_cluster(4, {"min.insync.replicas": 2}, tmp_path,
                         broker_configs={n: {"schema.registry.port": p, "console.port": consoles[n]}
                                         for n, p in ports.items()}) as four:
        registries = {n: Registry(four.brokers[n], p) for n, p in ports.items()}
        for registry in registries.values():
            registry.wait_until_serving()
        registries[1].ok("GET", "/subjects")
        four.wait_for_leader(SCHEMAS, 0, timeout=30)
        replicas = set(four.partition(SCHEMAS, 0).replica_nodes)
        assert len(replicas) == 3
        (outsider,) = set(registries) - replicas
        schema_id = registries[outsider].register("outside-value", USER_V1)
        assert registries[outsider].ok("GET", "/subjects/outside-value/versions") == [1]
        assert registries[outsider].ok("GET", f"/schemas/ids/{schema_id}/subjects") == ["outside-value"]
        for node_id in replicas:
            assert registries[node_id].ok("GET", "/subjects/outside-value/versions/1")["id"] == schema_id
        for node_id in (outsider, *replicas):
            shown = console_get(consoles[node_id], "registry/subjects/outside-value")
            assert [(v["version"], v["id"]) for v in shown["versions"]] == [(1, schema_id)], node_id
            assert shown["compatibility"]["effective"] == "BACKWARD" and shown["latest"]["id"] == schema_id
            assert [r["subject"] for r in console_get(consoles[node_id], "registry")["subjects"]] == ["outside-value"]


def console_get(port: int, path: str):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/{path}", timeout=30) as response:
        return json.loads(response.read())


def test_a_forwarded_write_carries_the_clients_credentials(zookeeper_installed, tmp_path):
    """alice is a SASL user of every broker, user-<n> of broker n alone: a follower forwards the
    Authorization header, so the leader checks it again (and refuses a user it does not know)."""
    ports = {node_id: free_port() for node_id in (1, 2, 3)}
    with running_cluster(3, {"min.insync.replicas": 2}, tmp_path,
                         broker_configs={n: {"schema.registry.port": p} for n, p in ports.items()}) as secured:
        for node_id, broker in secured.brokers.items():  # (read at start: restart with them)
            broker.stop()
            store = CredentialStore(broker.log_dir)
            for user in ("alice", f"user-{node_id}"):
                store.set_password(user, PASSWORD, SCRAM_MECHANISMS["SCRAM-SHA-256"])
        for broker in secured.brokers.values():
            broker.start()
        secured.wait_for_brokers({1, 2, 3})
        registries = {n: Registry(secured.brokers[n], p) for n, p in ports.items()}
        alice = basic("alice", PASSWORD)
        for registry in registries.values():
            registry.wait_until_serving()
        assert registries[1].raw("GET", "/subjects", headers=alice)[0] == 200  # (creates _schemas)
        leader = secured.wait_for_leader(SCHEMAS, 0, timeout=30)
        follower = next(n for n in registries if n != leader)
        body = json.dumps({"schema": USER_V1}).encode()
        status, answer, _ = registries[follower].raw("POST", "/subjects/auth-value/versions", body, alice)
        assert status == 200, answer
        own = basic(f"user-{follower}", PASSWORD)
        assert registries[follower].raw("GET", "/subjects/auth-value/versions", headers=own)[:2] == (200, b"[1]")
        status, answer, headers = registries[follower].raw("POST", "/subjects/auth-value/versions", body, own)
        assert (status, json.loads(answer)) == (401, {"error_code": 401, "message": "Unauthorized"})
        assert headers["WWW-Authenticate"] == 'Basic realm="kafka-wire Schema Registry"'
        assert registries[follower].raw("POST", "/subjects/auth-value/versions", body)[0] == 401  # none at all


def test_schemas_is_created_once_compacted_with_three_replicas(cluster):
    cluster.registries[1].register("created-value", USER_V1)  # (the first request creates it at the latest)
    partition = cluster.partition(SCHEMAS, 0)
    assert partition is not None and sorted(partition.replica_nodes) == [1, 2, 3]
    assert [t.name for t in cluster.metadata().topics].count(SCHEMAS) == 1
    assert len(cluster.metadata([SCHEMAS]).topics[0].partitions) == 1
    with WireClient(cluster.brokers[2].bootstrap) as client:
        response = client.call("DescribeConfigs", 4, {"resources": [
            {"resource_type": 2, "resource_name": SCHEMAS, "configuration_keys": ["cleanup.policy"]}],
            "include_synonyms": False, "include_documentation": False})
    assert {c.name: c.value for c in response.results[0].configs}["cleanup.policy"] == "compact"


def test_register_on_one_broker_read_on_every_broker(cluster):
    registries = cluster.registries
    first = registries[1].register("everywhere-value", USER_V1)
    second = registries[1].register("everywhere-value", USER_V2)
    assert second > first
    texts = set()
    for node_id in (1, 2, 3):  # at once: the answer means every in-sync replica can show it
        registry = registries[node_id]
        assert registry.ok("GET", "/subjects/everywhere-value/versions") == [1, 2], node_id
        texts.add(registry.ok("GET", f"/schemas/ids/{second}")["schema"])
        assert registry.ok("GET", "/subjects/everywhere-value/versions/latest")["id"] == second
    assert len(texts) == 1 and [f["name"] for f in json.loads(texts.pop())["fields"]] == ["name", "age"]


def test_a_follower_forwards_writes_to_the_leader(cluster):
    leader = schemas_leader(cluster)
    follower = followers(cluster, leader)[0]
    registry = cluster.registries[follower]
    schema_id = registry.register("forwarded-value", record("Forwarded", {"name": "a", "type": "string"}))
    # The follower's own replica shows it at once (it waited for it before relaying), and so do the others.
    for node_id in (1, 2, 3):
        assert cluster.registries[node_id].ok("GET", "/subjects/forwarded-value/versions/1")["id"] == schema_id
    # Errors come back as the leader answers them.
    status, code = registry.error("POST", "/subjects/forwarded-value/versions", {"schema": "{not json"})
    assert (status, code) == (422, 42201)
    incompatible = record("Forwarded", {"name": "a", "type": "string"}, {"name": "b", "type": "int"})
    assert registry.error("POST", "/subjects/forwarded-value/versions", {"schema": incompatible}) == (409, 409)
    # Config, mode and deletes go the same way.
    assert registry.ok("PUT", "/config/forwarded-value", {"compatibility": "NONE"}) == {"compatibility": "NONE"}
    other = followers(cluster, leader)[-1]
    assert cluster.registries[other].ok("GET", "/config/forwarded-value")["compatibilityLevel"] == "NONE"
    assert registry.register("forwarded-value", incompatible) > schema_id
    assert registry.ok("DELETE", "/subjects/forwarded-value/versions/2") == 2
    for node_id in (1, 2, 3):
        assert cluster.registries[node_id].ok("GET", "/subjects/forwarded-value/versions") == [1]
    # Reads that are POSTs (lookup) are answered by the follower itself.
    found = registry.ok("POST", "/subjects/forwarded-value",
                        {"schema": record("Forwarded", {"name": "a", "type": "string"})})
    assert found["id"] == schema_id and found["version"] == 1


def test_confluent_client_with_every_url(cluster):
    urls = ",".join(r.url for r in cluster.registries.values())
    client = SchemaRegistryClient({"url": urls})
    schema = Schema(record("Client", {"name": "x", "type": "long"}), "AVRO")
    schema_id = client.register_schema("client-value", schema)
    assert client.get_latest_version("client-value").schema_id == schema_id
    assert json.loads(client.get_schema(schema_id).schema_str)["name"] == "Client"
    assert client.lookup_schema("client-value", schema).version == 1


def test_an_exporter_runs_on_the_leader_of_its_topic_and_moves_with_it(cluster):
    """Exporters (registry/exporters.py) live in `_schema_exporters`; its leader runs them, the
    other registries forward /exporters to it, and when it stops the new leader goes on from the
    saved offset."""
    from test_schema_registry import registry_broker

    registries = cluster.registries
    exporters_topic = "_schema_exporters"
    with registry_broker() as destination:
        first = registries[1].register("linked-value", record("Linked", {"name": "a", "type": "int"}))
        answer = registries[2].ok("POST", "/exporters", {"name": "dr", "subjects": ["linked-*"],
                                                         "contextType": "NONE",
                                                         "config": {"schema.registry.url": destination.url}})
        assert answer == {"name": "dr"}
        leader = cluster.wait_for_leader(exporters_topic, 0, timeout=30)
        cluster.wait_for_isr(exporters_topic, 0, {1, 2, 3}, timeout=30)
        for registry in registries.values():  # any broker answers, the leader's view
            assert registry.ok("GET", "/exporters") == ["dr"]
        deadline = time.monotonic() + 30
        while destination.call("GET", "/subjects/linked-value/versions/1")[0] != 200:
            assert time.monotonic() < deadline, "linked-value not copied"
            time.sleep(0.2)
        assert destination.ok("GET", "/subjects/linked-value/versions/1")["id"] == first
        survivor = next(n for n in registries if n != leader)
        deadline = time.monotonic() + 30
        while registries[survivor].ok("GET", "/exporters/dr/status")["state"] != "RUNNING":
            assert time.monotonic() < deadline, "not RUNNING"
            time.sleep(0.2)

        cluster.brokers[leader].stop()  # controlled: leadership of both topics moves away
        try:
            new_leader = cluster.wait_for_leader(exporters_topic, 0, not_in={leader}, timeout=30)
            second = registries[survivor].register("linked-value", record("Linked", {"name": "a", "type": "int"},
                                                                          {"name": "b", "type": "int",
                                                                           "default": 0}))
            deadline = time.monotonic() + 30
            while destination.call("GET", "/subjects/linked-value/versions/2")[0] != 200:
                assert time.monotonic() < deadline, f"version 2 not copied by the new leader {new_leader}"
                time.sleep(0.2)
            assert destination.ok("GET", "/subjects/linked-value/versions/2")["id"] == second
            assert registries[new_leader].ok("GET", "/exporters/dr/status")["state"] == "RUNNING"
            assert registries[survivor].ok("PUT", "/exporters/dr/pause") == {"name": "dr"}
        finally:
            cluster.brokers[leader].start()
            registries[leader].wait_until_serving()
        cluster.wait_for_isr(SCHEMAS, 0, {1, 2, 3}, timeout=30)
        cluster.wait_for_isr(exporters_topic, 0, {1, 2, 3}, timeout=30)
        assert registries[leader].ok("GET", "/exporters/dr/status")["state"] == "PAUSED"
        status, _, _ = registries[leader].raw("DELETE", "/exporters/dr")
        assert status == 204


def test_writes_follow_the_leader_through_a_controlled_shutdown(cluster):
    registries = cluster.registries
    leader = schemas_leader(cluster)
    cluster.wait_for_isr(SCHEMAS, 0, {1, 2, 3})
    before = registries[leader].register("moving-value", record("Moving", {"name": "a", "type": "int"}))
    cluster.brokers[leader].stop()  # SIGTERM: leadership moves away before the broker stops
    survivors = followers(cluster, leader)
    assert schemas_leader(cluster, not_in={leader}) in survivors
    ids = [registries[node_id].register(f"moving-{node_id}-value",
                                        record(f"Moving{node_id}", {"name": "b", "type": "int"}))
           for node_id in survivors]
    assert min(ids) > before and len(set(ids)) == len(ids)
    # Back again: its registry reads what it missed once its replica is in sync (and forwards
    # reads until then).
    cluster.brokers[leader].start()
    registries[leader].wait_until_serving()
    for node_id, schema_id in zip(survivors, ids):
        assert registries[leader].ok("GET", f"/subjects/moving-{node_id}-value/versions/1")["id"] == schema_id
    cluster.wait_for_isr(SCHEMAS, 0, {1, 2, 3}, timeout=30)
    assert registries[leader].ok("GET", "/subjects/moving-value/versions/1")["id"] == before


def test_registration_goes_on_after_the_leader_is_killed(cluster):
    registries = cluster.registries
    leader = schemas_leader(cluster)
    cluster.wait_for_isr(SCHEMAS, 0, {1, 2, 3})
    acknowledged = {}
    for i in range(5):
        subject = f"before-{i}-value"
        acknowledged[subject] = registries[(i % 3) + 1].register(subject, record(f"Before{i}", {"name": "f",
                                                                                               "type": "int"}))
    highest = max(acknowledged.values())
    cluster.brokers[leader].kill()
    survivors = followers(cluster, leader)
    new_leader = schemas_leader(cluster, not_in={leader})
    assert new_leader in survivors
    # Registration goes on at once through either survivor (the follower forwards to the new leader).
    after = {}
    for i, node_id in enumerate(survivors * 2):
        subject = f"after-{i}-value"
        deadline = time.monotonic() + 30
        while True:
            status, answer = registries[node_id].call("POST", f"/subjects/{quote(subject)}/versions",
                                                      {"schema": record(f"After{i}", {"name": "g", "type": "int"})})
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert status == 200, (node_id, status, answer)
        after[subject] = answer["id"]
    assert min(after.values()) > highest
    assert len(set(after.values())) == len(after)
    # The client given every broker's URL, the dead one's first, gets past it.
    urls = [registries[leader].url] + [registries[n].url for n in survivors]
    client = SchemaRegistryClient({"url": ",".join(urls)})
    late = client.register_schema("after-client-value", Schema(record("AfterClient", {"name": "h", "type": "int"}),
                                                                "AVRO"))
    assert late > max(after.values())
    after["after-client-value"] = late
    for node_id in survivors:
        for subject, schema_id in {**acknowledged, **after}.items():
            assert registries[node_id].ok("GET", f"/subjects/{subject}/versions/1")["id"] == schema_id, (node_id, subject)


class HttpsRegistry(Registry):
    """A broker's registry served over HTTPS, its certificate checked against the test CA."""

    def __init__(self, process, port: int, ca: str) -> None:
        super().__init__(process, port)
        self.url = f"https://127.0.0.1:{port}"
        self.tls = ssl.create_default_context(cafile=ca)

    def raw(self, method: str, path: str, body: bytes | None = None,
            headers: dict | None = None) -> tuple[int, bytes, dict]:
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=30, context=self.tls)
        try:
            sent = {"Content-Type": "application/vnd.schemaregistry.v1+json", **(headers or {})}
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            return response.status, response.read(), dict(response.getheaders())
        finally:
            connection.close()


def test_registries_serving_https_forward_over_https(zookeeper_installed, tmp_path):
    """Every broker has a key store, so every registry serves HTTPS and advertises an https URL; a
    follower forwards writes (a registration, a context's deletion) to the leader over HTTPS,
    checking its certificate against the trust store; confluent-kafka's client takes the https
    URLs. A broker whose trust store does not vouch for the leader answers a write with 50003."""
    from test_security import make_certificates

    certificates = make_certificates(tmp_path / "certs")
    stranger = make_certificates(tmp_path / "stranger")
    ports = {node_id: free_port() for node_id in (1, 2, 3)}
    tls = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certificates.server),
           "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certificates.ca)}
    with running_cluster(3, {"min.insync.replicas": 2}, tmp_path / "cluster",
                         broker_configs={n: {"schema.registry.port": p, **tls} for n, p in ports.items()}) as secure:
        registries = {n: HttpsRegistry(secure.brokers[n], p, str(certificates.ca)) for n, p in ports.items()}
        for registry in registries.values():
            registry.wait_until_serving()
        registries[1].ok("GET", "/subjects")  # (creates _schemas)
        leader = secure.wait_for_leader(SCHEMAS, 0, timeout=30)
        follower, other = (n for n in registries if n != leader)
        secure.wait_for_isr(SCHEMAS, 0, {1, 2, 3}, timeout=30)
        answer = registries[follower].ok("POST", "/subjects/tls-value/versions", {"schema": USER_V1})
        assert answer["version"] == 1
        for node_id in registries:
            assert registries[node_id].ok("GET", "/subjects/tls-value/versions/1")["id"] == answer["id"]
        # A context deleted through a follower: the leader's 204 relayed as it is
        registries[follower].register(":.tmp:tls-value", USER_V1)
        registries[follower].ok("DELETE", f"/subjects/{quote(':.tmp:tls-value')}")
        registries[follower].ok("DELETE", f"/subjects/{quote(':.tmp:tls-value')}?permanent=true")
        assert registries[follower].raw("DELETE", "/contexts/.tmp")[:2] == (204, b"")
        assert registries[other].ok("GET", "/contexts") == ["."]
        client = SchemaRegistryClient({"url": ",".join(r.url for r in registries.values()),
                                       "ssl.ca.location": str(certificates.ca)})
        schema_id = client.register_schema("tls-client-value", Schema(record("TlsClient", {"name": "x", "type": "int"}),
                                                                       "AVRO"))
        assert client.get_latest_version("tls-client-value").schema_id == schema_id

        # The follower restarted trusting another CA only: the leader's certificate is refused
        secure.brokers[follower].stop()
        secure.brokers[follower].config["ssl.truststore.location"] = str(stranger.ca)
        secure.brokers[follower].start()
        registries[follower].wait_until_serving()
        if secure.wait_for_leader(SCHEMAS, 0, timeout=30) != follower:
            status, refused = registries[follower].call("POST", "/subjects/tls-value/versions", {"schema": USER_V2})
            assert (status, refused["error_code"]) == (500, 50003), refused
            assert "certificate verify failed" in refused["message"]
            secure.wait_for_isr(SCHEMAS, 0, {1, 2, 3}, timeout=30)
            assert registries[follower].ok("GET", "/subjects/tls-value/versions") == [1]  # its replica reads on
