"""The listening side of the broker's small HTTP endpoints (metrics, console): start and stop."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def start_http(serve: Serve, host: str, port: int, head_limit: int) -> asyncio.base_events.Server:
    """Listen on host:port; each connection is handed to `serve`; a request head over head_limit bytes
    makes readuntil raise LimitOverrunError."""
    return await asyncio.start_server(serve, host=host, port=port, reuse_address=True, limit=head_limit)


async def close_server(server: asyncio.base_events.Server | None, timeout: float = 2.0) -> None:
    """Stop accepting and wait (at most `timeout` seconds) for the listening sockets to close."""
    if server is None:
        return
    server.close()
    try:
        await asyncio.wait_for(server.wait_closed(), timeout)
    except (asyncio.TimeoutError, Exception):
        pass
