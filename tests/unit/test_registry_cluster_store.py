"""The registry's `_schemas` replay and writes as a cluster needs them (registry/store.py,
registry/cluster.py): a replicated replica is read up to its high watermark only, a broker that does
not lead `_schemas` never appends to it, and which requests count as writes (forwarded to the leader)."""

from __future__ import annotations

import asyncio

import pytest

from coordinator.offsets_store import AppendFailed
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch
from log.partition_log import PartitionLog
from registry.cluster import is_write
from registry.store import SchemaVersion, SchemasLog, schema_key, schema_value


class FakeLeadership:
    def __init__(self, waits_for_replicas: bool) -> None:
        self.waits_for_replicas = waits_for_replicas


class FakeBroker:
    def __init__(self, plog, replicated: bool, leads: bool) -> None:
        self.plog = plog
        self.leadership = FakeLeadership(replicated)
        self.leads = leads
        self.durable_waits = 0

    def partition_log(self, topic, partition):
        return self.plog if (topic, partition) == ("_schemas", 0) else None

    def leadership_error(self, topic, partition):
        return ErrorCode.NONE if self.leads else ErrorCode.NOT_LEADER_OR_FOLLOWER


def schema_record(subject: str, schema_id: int) -> tuple[bytes, bytes]:
    entry = SchemaVersion(subject, 1, schema_id, '"string"', "AVRO")
    return schema_key(subject, 1), schema_value(entry)


def append(plog, *records) -> None:
    plog.append(bytearray(build_batch([Record(i, 0, k, v) for i, (k, v) in enumerate(records)])), leader_epoch=0)


@pytest.fixture
def plog(tmp_path):
    log = PartitionLog(str(tmp_path / "_schemas-0"))
    append(log, schema_record("a-value", 1))
    append(log, schema_record("b-value", 2), schema_record("c-value", 3))
    yield log
    log.close()


def test_a_replicated_replica_is_read_up_to_its_high_watermark(plog):
    log = SchemasLog(FakeBroker(plog, replicated=True, leads=False))
    plog.high_watermark = 1
    log.catch_up()
    assert log.state.subject_names() == ["a-value"] and log.next_offset == 1
    plog.high_watermark = 3
    log.catch_up()
    assert log.state.subject_names() == ["a-value", "b-value", "c-value"] and log.state.max_id == 3


def test_a_single_node_reads_to_the_log_end(plog):
    log = SchemasLog(FakeBroker(plog, replicated=False, leads=True))
    plog.high_watermark = 0
    log.catch_up()
    assert log.state.subject_names() == ["a-value", "b-value", "c-value"]


def test_no_replica_no_state(plog):
    broker = FakeBroker(None, replicated=True, leads=False)
    log = SchemasLog(broker)
    log.catch_up()
    assert log.state.subject_names() == [] and log.next_offset == 0


def test_a_broker_that_does_not_lead_never_appends(plog):
    log = SchemasLog(FakeBroker(plog, replicated=True, leads=False))
    with pytest.raises(AppendFailed) as failed:
        asyncio.run(log.append([schema_record("d-value", 4)]))
    assert failed.value.error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert plog.log_end_offset == 3


@pytest.mark.parametrize(("method", "path", "write"), [
    ("POST", "subjects/s/versions", True),
    ("PUT", "config", True),
    ("PUT", "mode/s", True),
    ("DELETE", "subjects/s", True),
    ("DELETE", "subjects/s/versions/1", True),
    ("POST", "subjects/s", False),  # lookup
    ("POST", "compatibility/subjects/s/versions/latest", False),
    ("GET", "subjects/s/versions", False),
    ("HEAD", "subjects", False),
])
def test_which_requests_are_writes(method, path, write):
    assert is_write(method, path.split("/")) is write


# -- forwarding to the leader's registry (registry/cluster.py) against a stand-in leader -----------


class FakeState:
    def __init__(self, leader: int, isr: list[int]) -> None:
        self.leader = leader
        self.isr = isr


class FakeMetadata:
    def __init__(self, state) -> None:
        self.state = state

    def leader_and_isr(self, topic, partition):
        return self.state

    def topic(self, name):
        return object()  # _schemas exists


class FakeClusterBroker(FakeBroker):
    node_id = 1

    def __init__(self, plog, leader_url: str, state) -> None:
        super().__init__(plog, replicated=True, leads=False)
        self.metadata = FakeMetadata(state)
        self.leader_url = leader_url

    def registry_url_of(self, node_id):
        return self.leader_url if node_id == 2 else None


async def stand_in_leader(answers: list[tuple[int, bytes, dict]]):
    """A registry on loopback answering with `answers` in turn; returns (server, url, requests seen)."""
    seen = []

    async def serve(reader, writer):
        from broker.http_listener import read_http_request

        seen.append(await read_http_request(reader, 1 << 20, 5.0))
        status, body, headers = answers[min(len(seen), len(answers)) - 1]
        head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in headers.items())]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", seen


def test_a_follower_forwards_a_write_and_relays_the_answer(plog):
    from registry.cluster import FORWARDED_HEADER, RegistryCluster

    async def run():
        server, url, seen = await stand_in_leader([(200, b'{"id":7}', {"X-Kafka-Wire-Schemas-Offset": "3"})])
        plog.high_watermark = 3
        broker = FakeClusterBroker(plog, url, FakeState(2, [1, 2]))
        cluster = RegistryCluster(broker, SchemasLog(broker))
        try:
            answer = await cluster.route("POST", "/subjects/s%2Fx/versions?normalize=true",
                                         ["subjects", "s/x", "versions"],
                                         {"authorization": "Basic YTpi", "content-type": "application/json",
                                          "cookie": "dropped"}, b'{"schema":"\\"string\\""}')
        finally:
            server.close()
        return answer, seen, cluster

    (status, body, extra), seen, cluster = asyncio.run(run())
    assert (status, str(body), extra) == (200, '{"id":7}', ["X-Kafka-Wire-Schemas-Offset: 3"])
    method, target, headers, sent_body = seen[0]
    assert (method, target, sent_body) == ("POST", "/subjects/s%2Fx/versions?normalize=true",
                                           b'{"schema":"\\"string\\""}')
    assert headers["authorization"] == "Basic YTpi" and headers[FORWARDED_HEADER.lower()] == "1"
    assert "cookie" not in headers
    # Relayed once this broker's replica had applied the write (offset 3).
    assert cluster.log.next_offset == 3 and "c-value" in cluster.log.state.subject_names()


def test_a_write_sent_to_a_former_leader_is_sent_again(plog):
    from registry.cluster import RegistryCluster

    async def run():
        not_leader = (500, b'{"error_code":50004,"message":"elsewhere"}', {})
        server, url, seen = await stand_in_leader([not_leader, (200, b'{"id":8}', {})])
        broker = FakeClusterBroker(plog, url, FakeState(2, [1, 2]))
        cluster = RegistryCluster(broker, SchemasLog(broker))
        try:
            return await cluster.route("DELETE", "/subjects/s", ["subjects", "s"], {}, b""), seen
        finally:
            server.close()

    (status, body, _), seen = asyncio.run(run())
    assert (status, str(body), len(seen)) == (200, '{"id":8}', 2)


def test_an_in_sync_follower_reads_here_and_one_out_of_sync_forwards(plog):
    from registry.cluster import RegistryCluster

    async def run(isr):
        server, url, seen = await stand_in_leader([(200, b'["from-leader"]', {})])
        plog.high_watermark = 3
        broker = FakeClusterBroker(plog, url, FakeState(2, isr))
        cluster = RegistryCluster(broker, SchemasLog(broker))
        try:
            return await cluster.route("GET", "/subjects", ["subjects"], {}, b""), seen
        finally:
            server.close()

    assert asyncio.run(run([1, 2])) == (None, [])
    (status, body, _), seen = asyncio.run(run([2]))
    assert (status, str(body), len(seen)) == (200, '["from-leader"]', 1)


# -- forwarding over HTTPS, and a leader that cannot be reached ----------------------------------


async def stand_in_tls_leader(answer: tuple[int, bytes], keystore: str):
    """A registry on loopback serving HTTPS with `keystore`; returns (server, url, requests seen)."""
    import ssl

    seen = []
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(keystore)

    async def serve(reader, writer):
        from broker.http_listener import read_http_request

        seen.append(await read_http_request(reader, 1 << 20, 5.0))
        status, body = answer
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=tls)
    return server, f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}", seen


def _forward_write(plog, url: str, config: dict):
    from broker.config import BrokerConfig
    from registry.cluster import RegistryCluster

    broker = FakeClusterBroker(plog, url, FakeState(2, [1, 2]))
    broker.config = BrokerConfig(config)
    cluster = RegistryCluster(broker, SchemasLog(broker))
    return cluster.route("POST", "/subjects/s/versions", ["subjects", "s", "versions"], {}, b'{"schema":"\\"int\\""}')


def test_a_write_is_forwarded_over_https_to_a_leader_whose_certificate_is_trusted(plog, tmp_path):
    from tests.integration.test_security import make_certificates

    certificates = make_certificates(tmp_path / "certs")
    other_ca = make_certificates(tmp_path / "other")

    async def run(config: dict):
        server, url, seen = await stand_in_tls_leader((200, b'{"id":9}'), str(certificates.server))
        try:
            return await _forward_write(plog, url, config), seen
        finally:
            server.close()

    trusting = {"ssl.keystore.location": str(certificates.server), "ssl.truststore.location": str(certificates.ca)}
    (status, body, _), seen = asyncio.run(run(trusting))
    assert (status, str(body), len(seen)) == (200, '{"id":9}', 1)
    assert seen[0][:2] == ("POST", "/subjects/s/versions")
    # A leader whose certificate this broker's trust store does not vouch for: 50003 at once
    (status, body, _), seen = asyncio.run(run({**trusting, "ssl.truststore.location": str(other_ca.ca)}))
    assert (status, body["error_code"], seen) == (500, 50003, [])
    assert "certificate verify failed" in body["message"]


def test_a_leader_that_cannot_be_reached_is_50003(plog, monkeypatch):
    import socket

    import registry.cluster

    monkeypatch.setattr(registry.cluster, "LEADER_WAIT", 0.5)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # (nothing listens there now)
    status, body, _ = asyncio.run(_forward_write(plog, f"http://127.0.0.1:{port}", {}))
    assert (status, body["error_code"]) == (500, 50003) and "cannot connect" in body["message"]
