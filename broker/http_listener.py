"""The broker's small HTTP endpoints (metrics, console, Schema Registry): listen, read a request, stop."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def start_http(serve: Serve, host: str, port: int, head_limit: int,
                     max_connections: int | None = None, ssl_context=None) -> asyncio.base_events.Server:
    """Listen on host:port; each connection is handed to `serve`; a request head over head_limit bytes
    makes readuntil raise LimitOverrunError. With max_connections, a connection beyond that many
    served at once is closed at once (idle or slow clients cannot take the broker's file
    descriptors), and each is closed when `serve` returns. With ssl_context: HTTPS (a failed
    handshake ends that connection alone)."""
    if max_connections is not None:
        serve = _limited(serve, max_connections)
    return await asyncio.start_server(serve, host=host, port=port, reuse_address=True, limit=head_limit,
                                      ssl=ssl_context, ssl_handshake_timeout=None if ssl_context is None else 10.0)


def _limited(serve: Serve, max_connections: int) -> Serve:
    active = 0

    async def limited(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal active
        if active >= max_connections:
            writer.close()
            return
        active += 1
        try:
            await serve(reader, writer)
        finally:
            active -= 1
            writer.close()

    return limited


async def close_server(server: asyncio.base_events.Server | None, timeout: float = 2.0) -> None:
    """Stop accepting and wait (at most `timeout` seconds) for the listening sockets to close."""
    if server is None:
        return
    server.close()
    try:
        await asyncio.wait_for(server.wait_closed(), timeout)
    except (asyncio.TimeoutError, Exception):
        pass


class HttpRequestError(Exception):
    """A request that cannot be read: `status` is the HTTP answer (400, 411, 413, 431)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def read_http_request(reader: asyncio.StreamReader, max_body: int,
                            timeout: float) -> tuple[str, str, dict[str, str], bytes] | None:
    """One HTTP/1.1 request: (method, target, headers with lower-case names, body); None when the
    peer closed before a request began. A request head over the reader's limit, a bad request
    line or Content-Length, a body over max_body or a chunked body raise HttpRequestError."""
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
    except asyncio.LimitOverrunError:
        raise HttpRequestError(431, "request head too large") from None
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split()
    if len(parts) != 3:
        raise HttpRequestError(400, "bad request line")
    method, target, _ = parts
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    body = b""
    if "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError:
            raise HttpRequestError(400, "bad Content-Length") from None
        if length < 0 or length > max_body:
            raise HttpRequestError(413, f"request bodies are limited to {max_body} bytes")
        body = await asyncio.wait_for(reader.readexactly(length), timeout)
    elif headers.get("transfer-encoding"):
        raise HttpRequestError(411, "send a Content-Length")
    return method, target, headers, body
