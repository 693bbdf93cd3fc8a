"""A delaying TCP relay: the 200 ms delay nemesis where the kernel has no sch_netem (tc netem).

Run inside a node's network namespace (netns.py starts it with `ip netns exec` and adds the
iptables rules that send it traffic):

    python -m compat.faults.delay_relay --delay-ms 200 --outgoing-port 19801 --incoming-port 19802 --mark 42

- Connections the node opens (nat OUTPUT REDIRECT to --outgoing-port): the relay learns the
  original destination (SO_ORIGINAL_DST), connects there itself, and forwards what the node sends
  `delay` after it read it; what comes back is forwarded at once.
- Connections the node accepts (nat PREROUTING REDIRECT to --incoming-port): the relay connects to
  the original destination (the node's own service) and forwards what the service answers `delay`
  after it read it; what the peer sends is forwarded at once.

So every byte the node sends over TCP leaves it `delay` late, as netem's egress delay does (per
chunk read, not per packet; order kept). The relay's own connections carry SO_MARK `--mark`, which
the REDIRECT rules exclude. It prints `ready` once both ports listen, and exits on SIGTERM, which
closes every relayed connection.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import signal
import socket
import struct
import sys
import time

SO_ORIGINAL_DST = 80  # linux/netfilter_ipv4.h
CHUNK = 65536


def original_destination(sock: socket.socket) -> tuple[str, int]:
    """Where the connection was going before iptables REDIRECTed it here (a struct sockaddr_in)."""
    raw = sock.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, packed = struct.unpack_from("!2xH4s", raw)
    return socket.inet_ntoa(packed), port


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copies reader to writer, each chunk `delay` seconds after it was read (order kept); then EOF."""
    pending: collections.deque = collections.deque()
    arrived = asyncio.Event()
    done = False

    async def send() -> None:
        while True:
            while not pending:
                if done:
                    return
                arrived.clear()
                await arrived.wait()
            due, chunk = pending.popleft()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(chunk)
            await writer.drain()

    sender = asyncio.ensure_future(send())
    try:
        while chunk := await reader.read(CHUNK):
            pending.append((time.monotonic() + delay, chunk))
            arrived.set()
        done = True
        arrived.set()
        await sender
        if writer.can_write_eof():
            writer.write_eof()
    finally:
        if not sender.done():
            sender.cancel()


async def relay(downstream: tuple, mark: int, delay: float, outgoing: bool) -> None:
    reader, writer = downstream
    peer = writer.get_extra_info("socket")
    upstream_writer = None
    try:
        host, port = original_destination(peer)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, mark)  # not redirected again
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (host, port))
        upstream_reader, upstream_writer = await asyncio.open_connection(sock=sock)
        # Delay only what leaves this node: the node's own sends on connections it opened, its
        # service's answers on connections it accepted.
        await asyncio.gather(pump(reader, upstream_writer, delay if outgoing else 0.0),
                             pump(upstream_reader, writer, 0.0 if outgoing else delay))
    except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
        pass  # a reset, a refused connect, or the relay stopping: the connection closes
    finally:
        for w in (writer, upstream_writer):
            if w is not None:
                with contextlib.suppress(Exception):
                    w.close()


async def serve(delay: float, outgoing_port: int, incoming_port: int, mark: int) -> None:
    servers = []
    for port, outgoing in ((outgoing_port, True), (incoming_port, False)):
        servers.append(await asyncio.start_server(
            lambda r, w, outgoing=outgoing: relay((r, w), mark, delay, outgoing), "0.0.0.0", port,
            reuse_address=True, backlog=512))
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    print("ready", flush=True)
    await stop.wait()
    for server in servers:
        server.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="compat.faults.delay_relay")
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument("--outgoing-port", type=int, required=True)
    parser.add_argument("--incoming-port", type=int, required=True)
    parser.add_argument("--mark", type=int, required=True)
    args = parser.parse_args(argv)
    asyncio.run(serve(args.delay_ms / 1000.0, args.outgoing_port, args.incoming_port, args.mark))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
