"""One HTTP/1.1 request to another broker's small HTTP endpoint, its answer read whole: how a
Schema Registry that does not write `_schemas` hands a write to the registry of the broker that
does (registry/cluster.py). HTTP, or HTTPS with the caller's client SSLContext; a request per
connection (Connection: close)."""

from __future__ import annotations

import asyncio
import ssl


class HttpForwardError(Exception):
    """The request could not be made or its answer not read; `sent` says whether the request
    may have reached the other side (a write that may have happened must not be sent again)."""

    def __init__(self, message: str, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent


class TlsForwardError(HttpForwardError):
    """The TLS handshake failed (the other side's certificate is not trusted, or it refused ours):
    trying again will not help until a configuration changes."""


async def http_request(host: str, port: int, method: str, target: str, headers: dict[str, str], body: bytes,
                       timeout: float, max_body: int = 64 << 20,
                       tls: ssl.SSLContext | None = None) -> tuple[int, dict[str, str], bytes]:
    """(status, headers with lower-case names, body) of the answer to one request; over TLS with
    `tls` (the host name is what the certificate must name when the context checks host names)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=tls, server_hostname=host if tls is not None else None,
                                    ssl_handshake_timeout=timeout if tls is not None else None), timeout)
    except ssl.SSLError as exc:
        raise TlsForwardError(f"TLS with {host}:{port} failed: {exc}", False) from exc
    except (OSError, asyncio.TimeoutError) as exc:
        raise HttpForwardError(f"cannot connect to {host}:{port}: {exc!r}", False) from exc
    try:
        head = [f"{method} {target} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {len(body)}",
                "Connection: close", *(f"{name}: {value}" for name, value in headers.items())]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        try:
            await writer.drain()
            status_line = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), max(0.0, deadline - loop.time()))
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            raise HttpForwardError(f"no answer from {host}:{port}: {exc!r}", True) from exc
        lines = status_line.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            raise HttpForwardError(f"{host}:{port} answered {lines[0]!r}", True)
        answer_headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                answer_headers[name.strip().lower()] = value.strip()
        try:
            length = int(answer_headers.get("content-length", "-1"))
            remaining = max(0.0, deadline - loop.time())
            if 0 <= length <= max_body:
                data = await asyncio.wait_for(reader.readexactly(length), remaining)
            elif length < 0:  # no length: the body runs to the end of the connection
                data = await asyncio.wait_for(reader.read(max_body), remaining)
            else:
                raise HttpForwardError(f"{host}:{port} answered a body of {length} bytes", True)
        except (OSError, ValueError, asyncio.TimeoutError, asyncio.IncompleteReadError) as exc:
            raise HttpForwardError(f"the answer of {host}:{port} broke off: {exc!r}", True) from exc
        return int(parts[1]), answer_headers, data
    finally:
        writer.close()
