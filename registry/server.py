"""The Schema Registry's HTTP server: asyncio in the broker's event loop (broker/http_listener.py, as the
console and the metrics endpoint listen), HTTP/1.1 with keep-alive, JSON answers in Confluent's
`application/vnd.schemaregistry.v1+json`. Anything a client sends wrong is answered with
Confluent's error body; a failure of ours is a 500 with error code 50001 and a line in the log.
"""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from broker.http_listener import HttpRequestError, close_server, read_http_request, start_http

from .api import NoContent, Query, RawText, RegistryApi, RegistryError
from .acls import RegistryAcls
from .auth import CHALLENGE, BasicAuth
from .contexts import base_context_path
from .decode import decode_records
from .exporters import Exporters
from .store import SchemasLog
from .tls import exporter_tls_context, registry_tls_context

logger = logging.getLogger("kafka_wire.registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
MAX_HEAD = 16 * 1024
# A schema travels in one `_schemas` record, which the log takes up to message.max.bytes (1 MiB by
# default); a body a few times that is refused before it is read.
MAX_BODY = 4 << 20
IDLE_TIMEOUT = 30.0
# After refusing a body as too large, this much more of it is read and dropped (for at most
# DISCARD_SECONDS), so a client that sends the whole body before reading the answer gets to read it
# rather than a broken pipe.
DISCARD_BYTES = 64 << 20
DISCARD_SECONDS = 5.0
MAX_CONNECTIONS = 256
REASONS = {200: "OK", 204: "No Content", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
           409: "Conflict", 411: "Length Required", 413: "Payload Too Large", 422: "Unprocessable Entity",
           431: "Request Header Fields Too Large", 500: "Internal Server Error"}


class RegistryServer:
    def __init__(self, broker) -> None:
        self.broker = broker
        self.log = SchemasLog(broker)
        self.api = RegistryApi(self.log)
        self.auth = BasicAuth(broker)
        self.acls = RegistryAcls(broker, lambda: self.log.state)
        self.exporters = Exporters(broker, self.log, exporter_tls_context)
        self.server: asyncio.base_events.Server | None = None
        self.address: tuple[str, int] | None = None
        # In a ZooKeeper cluster (the broker can advertise the registry): writes go to the leader
        # of _schemas-0 (cluster.py).
        self.cluster = self.exporters_cluster = None
        if hasattr(broker, "advertise_registry"):
            from .cluster import RegistryCluster

            self.cluster = RegistryCluster(broker, self.log)
            # /exporters: answered by the leader of `_schema_exporters`-0, which runs them
            self.exporters_cluster = RegistryCluster(broker, self.exporters.log, leader_only=True)

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self.log.ensure_created(at_start=True)
        self.log.catch_up()
        if self.broker.metadata.topic(self.exporters.log.topic) is not None:
            self.exporters.log.catch_up()
        self.exporters.start()
        tls = registry_tls_context(self.broker.config)
        self.server = await start_http(self._serve, host, port, MAX_HEAD, MAX_CONNECTIONS, tls)
        self.address = self.server.sockets[0].getsockname()[:2]
        if self.cluster is not None:
            await self.cluster.advertise(f"{'https' if tls else 'http'}://{self._advertised_host()}:{self.address[1]}")
        state = self.log.state
        logger.info("schema registry on %s://%s:%d/ (%d subjects, highest schema id %d)", "https" if tls else "http",
                    self.address[0], self.address[1], len(state.subjects), state.max_id)
        return self.address

    def _advertised_host(self) -> str:
        """The address other brokers reach this registry at: the bound one, or for a wildcard the
        host this broker advertises to the others (its inter-broker listener's)."""
        host = self.address[0]
        if host in ("0.0.0.0", "::", ""):
            host = self.broker.advertised_endpoint(self.broker.inter_broker_listener())[0]
        return f"[{host}]" if ":" in host else host

    async def stop(self) -> None:
        if getattr(self.broker, "schema_registry", None) is self:
            self.broker.schema_registry = None
        await self.exporters.stop()
        await close_server(self.server)
        self.server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = (writer.get_extra_info("peername") or ("",))[0]  # (host-scoped ACLs)
        try:
            while True:
                try:
                    request = await read_http_request(reader, MAX_BODY, IDLE_TIMEOUT)
                except HttpRequestError as exc:
                    await self._send(writer, exc.status, {"error_code": exc.status, "message": exc.message}, True)
                    if exc.status == 413:
                        await _discard(reader)
                    return
                if request is None:
                    return
                method, target, headers, body = request
                close = headers.get("connection", "").lower() == "close"
                try:
                    target = _under_base_context(target)
                except ValueError as exc:
                    await self._send(writer, 400, {"error_code": 400, "message": str(exc)}, close)
                    if close:
                        return
                    continue
                principal = await self.auth.principal(headers)
                if principal is None:
                    await self._send(writer, 401, {"error_code": 401, "message": "Unauthorized"}, close,
                                     head_only=method == "HEAD", extra=[f"WWW-Authenticate: {CHALLENGE}"])
                elif (refused := self._refusal(principal, peer, method, target)) is not None:
                    await self._send(writer, 403, {"error_code": 40301, "message": refused}, close,
                                     head_only=method == "HEAD")
                else:
                    status, answer, extra = await self._route(method, target, headers, body)
                    await self._send(writer, status, answer, close, head_only=method == "HEAD", extra=extra)
                if close:
                    return
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            pass
        except Exception:
            logger.exception("schema registry connection failed")

    def _refusal(self, principal: str, peer: str, method: str, target: str) -> str | None:
        self.log.catch_up()  # (a schema id's subjects as the log says them now)
        segments = [unquote(s) for s in urlsplit(target).path.split("/") if s != ""]
        query = dict(parse_qsl(urlsplit(target).query, keep_blank_values=True))
        return self.acls.refusal(principal, peer, method, segments, query)

    async def _route(self, method: str, target: str, headers: dict[str, str],
                     body: bytes) -> tuple[int, object, list[str]]:
        """The answer: this registry's, or in a cluster the leader's (forwarded) where this broker
        does not serve the request; a write answered here says the `_schemas` offset it reached."""
        if self.cluster is None:
            return (*await self._answer(method, target, body), [])
        from .cluster import OFFSET_HEADER, is_write

        segments = [unquote(s) for s in urlsplit(target).path.split("/") if s != ""]
        exporting = segments[:1] == ["exporters"]
        cluster = self.exporters_cluster if exporting else self.cluster
        try:
            routed = await cluster.route(method, target, segments, headers, body)
        except Exception:
            logger.exception("schema registry: routing %s %s failed", method, target)
            return 500, {"error_code": 50001, "message": "Error in the backend data store; the broker's log says why"}, []
        if routed is not None:
            return routed
        status, answer = await self._answer(method, target, body)
        if exporting:
            return status, answer, [f"{OFFSET_HEADER}: {self.exporters.log.next_offset}"]
        extra = [f"{OFFSET_HEADER}: {self.log.next_offset}"] if is_write(method, segments) else []
        return status, answer, extra

    async def read(self, principal: str, peer: str, segments: list[str],
                   query: dict[str, str] | None = None) -> tuple[int, object]:
        """(status, JSON value) of `GET /<segments>?<query>` as `principal` would be answered over
        HTTP: the same ACL check (403 with Confluent's body) and, in a cluster, the leader's answer
        where this broker forwards its reads. For the console (console/registry_views.py), whose
        users log in with the broker's SASL users; `GET /subjects` answers the subjects the
        principal may read instead of refusing a user who is not a super user."""
        self.log.catch_up()
        listing = segments == ["subjects"]
        if not listing and (refused := self.acls.refusal(principal, peer, "GET", segments, query)) is not None:
            return 403, {"error_code": 40301, "message": refused}
        target = "/" + "/".join(quote(s, safe="") for s in segments)
        if query:
            target += "?" + urlencode(query)
        status, answer, _ = await self._route("GET", target, {}, b"")
        if isinstance(answer, RawText):  # relayed from the leader as it sent it
            try:
                answer = json.loads(answer)
            except ValueError:
                pass
        if listing and status == 200 and isinstance(answer, list):
            answer = [subject for subject in answer
                      if self.acls.refusal(principal, peer, "GET", ["subjects", subject, "versions"]) is None]
        return status, answer

    async def decode_records(self, principal: str, peer: str, topic: str,
                             records: list[tuple[str, bytes]]) -> list[dict]:
        """Keys and values of `topic` in the wire format (magic byte, schema id), each read with its
        schema as `principal` may read it: for the console's message browser (registry/decode.py)."""
        return await decode_records(self, principal, peer, topic, records)

    async def _answer(self, method: str, target: str, body: bytes) -> tuple[int, object]:
        parts = urlsplit(target)
        segments = [unquote(s) for s in parts.path.split("/") if s != ""]
        query = Query(parts.query)
        try:
            value = None
            if body:
                try:
                    value = json.loads(body)
                except (ValueError, RecursionError) as exc:
                    raise RegistryError(400, 400, f"Unrecognized JSON in the request body: {exc}") from None
            if segments[:1] == ["exporters"]:
                return await self.exporters.answer("GET" if method == "HEAD" else method, segments, value)
            return await self.api.answer("GET" if method == "HEAD" else method, segments, query, value)
        except RegistryError as exc:
            return exc.status, {"error_code": exc.error_code, "message": exc.message}
        except Exception:
            logger.exception("schema registry: %s %s failed", method, target)
            return 500, {"error_code": 50001, "message": "Error in the backend data store; the broker's log says why"}

    async def _send(self, writer: asyncio.StreamWriter, status: int, answer: object, close: bool, *,
                    head_only: bool = False, extra: list[str] = ()) -> None:
        if isinstance(answer, NoContent) or status == 204:
            body, head = b"", [f"HTTP/1.1 {status} {REASONS.get(status, '')}", *extra]
        else:
            body = answer.encode() if isinstance(answer, RawText) else json.dumps(answer, separators=(",", ":")).encode()
            head = [f"HTTP/1.1 {status} {REASONS.get(status, '')}", f"Content-Type: {CONTENT_TYPE}",
                    f"Content-Length: {len(body)}", *extra]
        if close:
            head.append("Connection: close")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (b"" if head_only else body))
        await writer.drain()


def _under_base_context(target: str) -> str:
    """The request a `/contexts/<context>/...` one stands for (contexts.base_context_path)."""
    parts = urlsplit(target)
    segments = [unquote(s) for s in parts.path.split("/") if s != ""]
    if len(segments) < 3 or segments[0] != "contexts":
        return target
    segments, query = base_context_path(segments, dict(parse_qsl(parts.query, keep_blank_values=True)))
    return "/" + "/".join(quote(s, safe="") for s in segments) + ("?" + urlencode(query) if query else "")


async def _discard(reader: asyncio.StreamReader) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DISCARD_SECONDS
    left = DISCARD_BYTES
    while left > 0:
        remaining = deadline - loop.time()
        if remaining <= 0:
            return
        chunk = await asyncio.wait_for(reader.read(min(left, 1 << 16)), remaining)
        if not chunk:
            return
        left -= len(chunk)
