"""The Schema Registry in a ZooKeeper cluster: every broker with schema.registry.port serves the API,
one writes. The writer is the leader of `_schemas` partition 0, as Confluent's registries elect one
leader among themselves and the others forward it their writes; here the partition's leader is that
election, so the registry that writes is always the one whose broker may append.

- A write (POST .../versions, PUT, DELETE) on the leader's broker is served there (store.py waits
  until the in-sync replicas have it). Any other broker forwards the request (method, path, query,
  body, Authorization) to the leader's registry, found through the URL each broker advertises in
  ZooKeeper (ClusterBroker.advertise_registry), relays the answer, and before relaying waits
  (bounded) until its own replica has applied the write, so that the client reads it there next.
- A read is served from this broker's replica when it is in the ISR, after waiting (bounded) until
  the high watermark covers what the replica holds: an acknowledged write is in every in-sync
  replica's log, and the high watermark reaches a follower with its next fetch, so a read after
  an answered write sees it on any broker. A broker without an in-sync replica forwards its reads.
- Registries that serve HTTPS (the broker has a key store, registry/server.py) forward over HTTPS,
  as Confluent's registries do with `inter.instance.protocol=https`: the leader's certificate is
  checked against this broker's trust store for the registry (`ssl.truststore.location`, or
  `listener.name.schema_registry.ssl.truststore.location`; the system's CAs without one) and, with
  `ssl.endpoint.identification.algorithm=https` (Kafka's default), must name the host the leader
  advertises; where the registries require client certificates (`ssl.client.auth=required`) this
  broker presents its own key store. A leader that cannot be reached (refused, or a certificate
  not trusted) is Confluent's 500 with error code 50003; no leader at all is 50004.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from urllib.parse import urlsplit

from broker.config import ConfigError
from broker.http_client import HttpForwardError, TlsForwardError, http_request

from .api import RawText
from .store import SchemasLog
from .tls import forwarding_tls_context

logger = logging.getLogger("kafka_wire.registry")

# Set on a forwarded request: its receiver answers it itself (a request is forwarded once at most).
FORWARDED_HEADER = "X-Kafka-Wire-Forwarded-By"
# On a write's answer: the `_schemas` offset the registry had applied after it.
OFFSET_HEADER = "X-Kafka-Wire-Schemas-Offset"
FORWARD_TIMEOUT = 30.0
LEADER_WAIT = 15.0  # how long a request waits for `_schemas` to have a leader whose registry answers
CATCH_UP_WAIT = 5.0  # how long a broker waits for its replica to have what it relays or reads
POLL = 0.02


def is_write(method: str, segments: list[str]) -> bool:
    """Whether the request changes the registry (a lookup and a compatibility test are reads)."""
    if method in ("PUT", "DELETE"):
        return True
    return method == "POST" and len(segments) == 3 and segments[0] == "subjects" and segments[2] == "versions"


class RegistryCluster:
    def __init__(self, broker, log: SchemasLog, leader_only: bool = False) -> None:
        self.broker = broker
        self.log = log
        # Every request to the leader of the log's partition (the exporters: only it runs them)
        self.leader_only = leader_only
        self._tls: ssl.SSLContext | None = None

    def tls(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = forwarding_tls_context(self.broker.config)
        return self._tls

    async def advertise(self, url: str) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.broker.advertise_registry, url)

    def _leader(self) -> int:
        state = self.broker.metadata.leader_and_isr(self.log.topic, 0)
        return -1 if state is None else state.leader

    def _in_sync_here(self) -> bool:
        state = self.broker.metadata.leader_and_isr(self.log.topic, 0)
        return (state is not None and self.broker.node_id in state.isr
                and self.broker.partition_log(self.log.topic, 0) is not None)

    async def route(self, method: str, target: str, segments: list[str], headers: dict[str, str],
                    body: bytes) -> tuple[int, object, list[str]] | None:
        """The answer of the leader's registry to a request this broker does not serve; None: serve
        it here (its replica is ready to be read, or it leads)."""
        topic = self.log.topic
        if self.broker.metadata.topic(topic) is None:
            # Created by the first request (store.py); a moment while this broker sees every live broker.
            await _wait_until(lambda: self.log.ensure_created() or self.broker.metadata.topic(topic),
                              CATCH_UP_WAIT, interval=0.1)
            if self.broker.metadata.topic(topic) is None:
                return None  # nothing to read anywhere; a write fails here (no broker leads _schemas)
        forwarded = FORWARDED_HEADER.lower() in headers
        if self.leader_only or is_write(method, segments):
            if self.log.leads():
                return None
            if forwarded:  # the sender saw this broker lead: leadership may be on its way here
                if await _wait_until(self.log.leads, LEADER_WAIT / 3):
                    return None
                return 500, {"error_code": 50004, "message": "Request failed since the leader of _schemas is "
                                                              "elsewhere; retry"}, []
            return await self._forward(method, target, headers, body, write=True)
        if forwarded or self.log.leads() or self._in_sync_here():
            await self.await_committed_tail()
            return None
        return await self._forward(method, target, headers, body, write=False)

    async def await_committed_tail(self) -> None:
        """Wait (bounded) until the high watermark covers this replica's log end offset as it is now:
        an acknowledged write is in it, and is read once the high watermark says it is committed."""
        plog = self.broker.partition_log(self.log.topic, 0)
        if plog is None:
            return
        target = plog.log_end_offset
        await _wait_until(lambda: plog.high_watermark >= target or plog.log_end_offset < target, CATCH_UP_WAIT)

    async def await_offset(self, offset: int) -> None:
        """Wait (bounded) until this broker's registry has applied `_schemas` up to `offset`."""
        if self.broker.partition_log(self.log.topic, 0) is None:
            return

        def applied() -> bool:
            self.log.catch_up()
            return self.log.next_offset >= offset

        if not await _wait_until(applied, CATCH_UP_WAIT):
            logger.warning("schema registry: the replica of _schemas is at %d, not yet at %d; relaying anyway",
                           self.log.next_offset, offset)

    async def _forward(self, method: str, target: str, headers: dict[str, str], body: bytes,
                       write: bool) -> tuple[int, object, list[str]] | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LEADER_WAIT
        sent = {FORWARDED_HEADER: str(self.broker.node_id)}
        for name in ("authorization", "content-type", "accept"):
            if name in headers:
                sent[name.title()] = headers[name]
        problem = "the leader of _schemas is not known"
        unreachable = None  # the leader whose registry the last try could not connect to
        while True:
            leader = self._leader()
            if leader == self.broker.node_id and (not write or self.log.leads()):
                if not write:
                    await self.await_committed_tail()
                return None
            url = None
            if leader >= 0 and leader != self.broker.node_id:
                url = await loop.run_in_executor(None, self.broker.registry_url_of, leader)
                if url is None:
                    problem, unreachable = f"broker {leader} leads _schemas and serves no Schema Registry", None
            if url is not None:
                parts = urlsplit(url)
                if parts.scheme not in ("http", "https"):
                    return 500, {"error_code": 50003, "message": f"Error while forwarding the request to the "
                                                                 f"leader: {url} is neither HTTP nor HTTPS"}, []
                try:
                    status, answer_headers, data = await http_request(
                        parts.hostname, parts.port, "GET" if method == "HEAD" else method, target, sent, body,
                        FORWARD_TIMEOUT, tls=self.tls() if parts.scheme == "https" else None)
                except (TlsForwardError, ConfigError) as exc:  # (a certificate not trusted stays so: no retrying)
                    logger.warning("schema registry: forwarding %s %s to broker %d failed: %s", method, target,
                                   leader, exc)
                    return 500, {"error_code": 50003, "message": f"Error while forwarding the request to the "
                                                                 f"leader: {exc}"}, []
                except HttpForwardError as exc:
                    if exc.sent:
                        logger.warning("schema registry: forwarding %s %s to broker %d failed: %s", method, target,
                                       leader, exc)
                        return 500, {"error_code": 50003, "message": "Error while forwarding the request to the "
                                                                     "leader"}, []
                    problem, unreachable = str(exc), leader
                else:
                    if not (status == 500 and _error_code(data) == 50004):
                        offset = answer_headers.get(OFFSET_HEADER.lower())
                        if write and offset is not None and offset.isdigit():
                            await self.await_offset(int(offset))
                        extra = [f"{OFFSET_HEADER}: {offset}"] if offset is not None else []
                        if "www-authenticate" in answer_headers:  # the leader refused the credentials
                            extra.append(f"WWW-Authenticate: {answer_headers['www-authenticate']}")
                        return status, RawText(data.decode("utf-8", "replace")), extra
                    problem, unreachable = f"broker {leader} no longer leads _schemas", None
            if loop.time() >= deadline:
                if not write and self.broker.partition_log(self.log.topic, 0) is not None:
                    return None  # no leader to ask: what this replica has
                logger.warning("schema registry: %s %s not forwarded: %s", method, target, problem)
                if unreachable is not None:  # a leader known, its registry never reached
                    return 500, {"error_code": 50003, "message": f"Error while forwarding the request to the "
                                                                 f"leader: {problem}"}, []
                return 500, {"error_code": 50004, "message": f"Request failed since the leader is unknown: {problem}"}, []
            await asyncio.sleep(0.2)


def _error_code(data: bytes):
    try:
        answer = json.loads(data)
    except ValueError:
        return None
    return answer.get("error_code") if isinstance(answer, dict) else None


async def _wait_until(condition, timeout: float, interval: float = POLL) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(interval)
    return True
