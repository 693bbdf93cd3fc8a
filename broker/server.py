"""The asyncio server: frames in, requests dispatched to handlers, responses out in request order.

Kafka answers one connection's requests strictly in order, so a connection handles one request
at a time; a client's pipelined requests wait in the socket buffer. A frame larger than
`socket.request.max.bytes`, a negative size, an unknown API key, an unsupported version (other
than ApiVersions) or an undecodable body closes that connection only, as Kafka does.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
from dataclasses import dataclass, field

from kafka_wire.errors import ErrorCode
from kafka_wire.headers import API_VERSIONS_KEY, decode_request_header, encode_response_header, peek_api
from kafka_wire.primitives import DecodeError
from kafka_wire.schema import Writer

from .handlers import HANDLERS

log = logging.getLogger("kafka_wire.server")

_SIZE = 4
_connection_ids = itertools.count(1)


@dataclass
class RequestContext:
    """What a handler knows about the request beyond its body."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    listener: str
    peer: tuple
    connection_id: int
    principal: str = "User:ANONYMOUS"
    extra: dict = field(default_factory=dict)


class CloseConnection(Exception):
    """Raised by a handler or the dispatcher to close this connection without answering."""


class KafkaServer:
    """Serves one broker's listeners."""

    def __init__(self, broker) -> None:
        self.broker = broker
        self.config = broker.config
        self.servers: list[asyncio.base_events.Server] = []
        self.connections: set[asyncio.Task] = set()
        self.max_request = int(self.config["socket.request.max.bytes"])
        self.bound: list[tuple[str, str, int]] = []

    async def start(self) -> None:
        for name, host, port in self.config.listeners():
            server = await asyncio.start_server(
                lambda r, w, name=name: self._on_connection(r, w, name),
                host=host or None,
                port=port,
                reuse_address=True,
                limit=1 << 20,
            )
            self.servers.append(server)
            for sock in server.sockets:
                addr = sock.getsockname()
                self.bound.append((name, addr[0], addr[1]))
                log.info("listening on %s://%s:%d", name, addr[0], addr[1])

    async def stop(self) -> None:
        for server in self.servers:
            server.close()
        for task in list(self.connections):
            task.cancel()
        for server in self.servers:
            try:
                await asyncio.wait_for(server.wait_closed(), 2)
            except (asyncio.TimeoutError, Exception):
                pass

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                             listener: str) -> None:
        task = asyncio.current_task()
        self.connections.add(task)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        peer = writer.get_extra_info("peername") or ("?", 0)
        conn_id = next(_connection_ids)
        try:
            await self._serve(reader, writer, listener, peer, conn_id)
        except (asyncio.IncompleteReadError, ConnectionError, CloseConnection):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("connection %d from %s failed", conn_id, peer)
        finally:
            self.connections.discard(task)
            writer.close()

    async def _serve(self, reader, writer, listener, peer, conn_id) -> None:
        while True:
            head = await reader.readexactly(_SIZE)
            size = int.from_bytes(head, "big", signed=True)
            if size < 0 or size > self.max_request:
                log.warning("closing connection %d from %s: frame size %d outside 0..%d "
                            "(socket.request.max.bytes)", conn_id, peer, size, self.max_request)
                return
            frame = bytearray(await reader.readexactly(size))
            parts = await self._dispatch(frame, listener, peer, conn_id)
            if parts is None:
                continue
            await self._send(writer, parts)

    async def _dispatch(self, frame: bytearray, listener, peer, conn_id):
        try:
            api_key, version, correlation_id = peek_api(frame)
        except DecodeError:
            log.warning("closing connection %d from %s: frame too short for a request header", conn_id, peer)
            raise CloseConnection
        handler = HANDLERS.get(api_key)
        if handler is None:
            log.warning("closing connection %d from %s: unknown API key %d", conn_id, peer, api_key)
            raise CloseConnection
        if not handler.supports(version):
            if api_key == API_VERSIONS_KEY:
                return self._unsupported_api_versions(correlation_id)
            log.warning("closing connection %d from %s: %s v%d is not supported", conn_id, peer,
                        handler.api.name, version)
            raise CloseConnection
        api = handler.api
        flexible = api.is_flexible(version)
        try:
            header, pos = decode_request_header(frame, flexible)
            request = api.request.decode(frame, version, pos, exact=False)
        except (DecodeError, UnicodeDecodeError, ValueError) as exc:
            log.warning("closing connection %d from %s: malformed %s v%d request (correlation id %d): %s",
                        conn_id, peer, api.name, version, correlation_id, exc)
            raise CloseConnection
        ctx = RequestContext(api_key, version, correlation_id, header.client_id, listener, peer, conn_id)
        try:
            response = await handler.handle(self.broker, ctx, request)
        except CloseConnection:
            raise
        except Exception:
            log.exception("error handling %s v%d (correlation id %d, client %s)", api.name, version,
                          correlation_id, header.client_id)
            raise CloseConnection
        if response is None:
            return None
        return encode_response(api, version, correlation_id, response)

    def _unsupported_api_versions(self, correlation_id: int):
        from .handlers.p18_api_versions import api_versions_response

        api = HANDLERS[API_VERSIONS_KEY].api
        return encode_response(api, 0, correlation_id,
                               api_versions_response(ErrorCode.UNSUPPORTED_VERSION))

    async def _send(self, writer: asyncio.StreamWriter, parts: list) -> None:
        for part in parts:
            if isinstance(part, (bytes, bytearray, memoryview)):
                writer.write(part)
            else:
                # A log file slice: the page cache hands us the bytes without Python objects per record.
                writer.write(part.read_bytes())
        await writer.drain()


def encode_response(api, version: int, correlation_id: int, response) -> list:
    """Size prefix + response header + body, as a list of parts ready to send."""
    w = Writer()
    w.out += b"\x00\x00\x00\x00"
    encode_response_header(w, correlation_id, api.key, api.is_flexible(version))
    api.response.encode(response, version, w)
    parts = w.parts()
    size = len(w) - _SIZE
    parts[0][0:4] = size.to_bytes(4, "big")
    return parts
