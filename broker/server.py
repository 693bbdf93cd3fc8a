"""The asyncio server: frames in, requests dispatched to handlers, responses out in request order.

Kafka answers one connection's requests strictly in order, so a connection handles one request
at a time; a client's pipelined requests wait in our receive buffer or the socket. One exception:
a Produce that appended its batches and now only waits for them to be synced (log.flush.on.ack)
or replicated (acks=all) lets the connection's next Produce requests start, up to
PIPELINED_PRODUCES of them, so that one sync covers them all (log/group_commit.py); their answers
still go out in request order, and any other request waits until they are answered. A frame larger
than `socket.request.max.bytes`, a negative size, an unknown API key, an unsupported version
(other than ApiVersions) or an undecodable body closes that connection only, as Kafka does.
A handler that fails unexpectedly (raises, or answers what cannot be encoded) is our error: it
is logged once with its traceback, and the request is answered as Kafka's KafkaApis.handle
answers it (getErrorResponse: every entry of the request, or the top-level error code, set to
UNKNOWN_SERVER_ERROR; kafka_wire/error_responses.py); the connection stays open, except after
a Produce with acks=0, which has no answer and whose connection Kafka closes.

The data path avoids copying bytes through Python objects:
- Requests are read with a BufferedProtocol. Small frames are parsed out of a per-connection
  receive buffer; a large frame (a produce request's batches) gets a bytearray of its own that the
  socket reads straight into, and the records field decodes to a writable memoryview of it that
  the log patches in place and writes with one write(2).
- Responses on a plaintext listener are written to the socket by us: byte parts with writev(2),
  log file slices (fetched record batches) with sendfile(2), so fetched data goes from the page
  cache to the socket without entering Python. When the socket is full we wait for it to become
  writable. On a listener whose transport is not a plain socket (TLS), parts go through
  `transport.write` and file slices are read into memory first.
- A handler that completes without waiting (most requests) runs inline in the read callback;
  only one that awaits (a fetch long-poll, a group join) becomes a task, which continues it from
  its first wait. So a handler's code before its first await runs outside any task:
  `asyncio.current_task()` is None there (`asyncio.timeout` needs a task: await first).

Per listener (broker/security/listeners.py): TLS for SSL and SASL_SSL, a SASL exchange that
must complete before any other request on SASL_* (frames capped at sasl.server.max.receive.size
until then; a failed login answered after connection.failed.authentication.delay.ms, then
closed), and the connection's principal for handlers. Kafka's connection quotas
(max.connections, max.connections.per.ip[.overrides]) refuse a connection as it is accepted;
connections.max.idle.ms closes connections without traffic. Every request is counted in
broker/metrics.py.

Backpressure: while a request is being handled, or its response has more than
`OUTPUT_HIGH_WATER` bytes not yet taken by the socket, the connection reads and handles nothing
more (reading is paused, so TCP flow control pushes back on the client). Memory per connection
is bounded by the receive buffer, the frame being read and the unsent response.
"""

from __future__ import annotations

import asyncio
import collections
import errno
import itertools
import logging
import os
import socket
import sys
import time
import types
from dataclasses import dataclass, field

from kafka_wire.error_responses import error_response
from kafka_wire.errors import ErrorCode
from kafka_wire.framing import SIZE_BYTES, FrameSizeError, encode_response_frame, read_frame_size
from kafka_wire.headers import API_VERSIONS_KEY, decode_request_header, peek_api
from kafka_wire.primitives import DecodeError, read_int16

from . import metrics
from .handlers import HANDLERS
from .handlers.closing import CloseConnection
from .security import attach as attach_security
from .security.listeners import ConnectionQuotas, listener_security
from .security.tls import PrincipalMappingError
from .workers import routing
from .workers.link import WorkerGone
from .workers.runtime import ConnectionToClose, ForwardedFrame

logger = logging.getLogger("kafka_wire.server")

_connection_ids = itertools.count(1)

# The per-connection receive buffer (it grows when pipelined frames fill it); frames up to
# DIRECT_FRAME_BYTES are parsed out of it (copied once, at most this much), larger ones are read
# into a buffer of their own. Every connection holds one, so it is small: 1,000 clients with
# two sockets each held 128 MB in 64 KiB buffers.
RECEIVE_BUFFER_BYTES = 16 * 1024
DIRECT_FRAME_BYTES = 16 * 1024
# A large frame of up to WHOLE_FRAME_MAX_BYTES gets a buffer of its full size at once (a spare
# one when there is one); a larger one starts at LARGE_FRAME_FIRST_BYTES and grows FRAME_GROWTH
# times as its bytes arrive, so that a size prefix alone (a client promising 100 MB and stalling)
# reserves little.
LARGE_FRAME_FIRST_BYTES = 256 * 1024
WHOLE_FRAME_MAX_BYTES = 2 * 1024 * 1024
# How much a growing frame buffer grows once full: a client holds at most this many times what it
# sent. Four copies 1.25 MB of a 2.5 MB produce request on the way (two copied 3.75 MB: a quarter
# of the broker's samples under franz-go's 2.5 MB requests, py-spy, 2026-11-28).
FRAME_GROWTH = 4
# Finished large-frame buffers of up to SPARE_KEPT_MAX_BYTES are kept for the next large frame
# of any connection, at most SPARE_FRAMES_BYTES in all: a spare per connection held 1.2 GB with
# 1,000 producing clients. franz-go sends 8 connections' 16 partitions in requests of 5-10 MB (80%
# of the bytes came in frames over 8 MiB, which grew from 256 KiB every time): with 16 MiB spares
# in a 64 MiB pool two workers spent 1.37 CPU s per GB produced against 1.57-1.59 (bench.handover,
# alternated, 2026-11-29). Spares no frame took for a trim period are let go (HeapTrimmer).
SPARE_KEPT_MAX_BYTES = 16 * 1024 * 1024
SPARE_FRAMES_BYTES = 64 * 1024 * 1024
# A large frame's buffer is its size rounded up to an eighth of the power of two below it (64 KiB
# at least): franz-go's 10,340,121-byte request could not take the 10,340,121-byte spare of its
# predecessor when it carried 500 bytes more, and 15-24% of two workers' frames found no spare
# (counted with an instrumented copy, 8 connections, 2026-11-29).
FRAME_CAPACITY_MIN_STEP = 64 * 1024


def frame_capacity(size: int) -> int:
    """The buffer size for a large frame of `size` bytes: at most 12.5% more."""
    step = max(FRAME_CAPACITY_MIN_STEP, (1 << (size.bit_length() - 1)) >> 3)
    return -(-size // step) * step


# Unsent response bytes above which the connection stops handling requests until they drain.
OUTPUT_HIGH_WATER = 256 * 1024
# Produce requests of one connection that may wait for their sync (or replicas) at once.
PIPELINED_PRODUCES = 16
PRODUCE_KEY = 0
# At most this many buffers per writev(2) (Linux IOV_MAX is 1024).
_IOV_MAX = 1024
_MSG_MORE = getattr(socket, "MSG_MORE", 0)
# Kafka's socket.listen.backlog.size default.
LISTEN_BACKLOG = 50
# Benchmarks compare with and without sendfile: KAFKA_WIRE_SENDFILE=0 reads slices into memory.
USE_SENDFILE = os.environ.get("KAFKA_WIRE_SENDFILE", "1") != "0" and hasattr(os, "sendfile")


@dataclass(slots=True)
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
    # Set by a Produce handler about to wait only for what it appended to be synced or replicated:
    # the connection may start its next Produce meanwhile (KafkaConnection, PIPELINED_PRODUCES).
    appended: bool = False


class BindError(Exception):
    """An address the broker must listen on cannot be bound (in use, not local, unresolvable)."""

    def __init__(self, what: str, host: str, port: int, exc: OSError) -> None:
        if isinstance(exc, socket.gaierror) or not exc.errno:
            reason = exc.strerror or str(exc)
        else:  # asyncio and uvloop wrap the errno's text in a longer message of their own
            reason = os.strerror(exc.errno)
        super().__init__(f"{what} failed to bind to {host}:{port}: {reason}.")


async def start_metrics(broker, config):
    """The Prometheus endpoint of metrics.host:metrics.port (imported only when set); an address that
    cannot be bound is a BindError naming the keys."""
    from .metrics_endpoint import start_metrics_endpoint

    host, port = config["metrics.host"], int(config["metrics.port"])
    try:
        return await start_metrics_endpoint(broker, host, port)
    except OSError as exc:
        raise BindError("Metrics endpoint (metrics.host, metrics.port)", host, port, exc) from exc


async def start_console_on(broker, config, start_console):
    """The web console on console.host:console.port, started by `start_console` (console/, above
    this room); an address that cannot be bound is a BindError naming the keys."""
    return await _start_room(broker, config, start_console, "Console", "console")


async def start_registry_on(broker, config, start_registry):
    """The Schema Registry on schema.registry.host:schema.registry.port, started by `start_registry`
    (registry/, above this room); an address that cannot be bound is a BindError naming the keys."""
    return await _start_room(broker, config, start_registry, "Schema Registry", "schema.registry")


async def _start_room(broker, config, start, what: str, prefix: str):
    host, port = config[f"{prefix}.host"], int(config[f"{prefix}.port"])
    try:
        return await start(broker, host, port)
    except OSError as exc:
        raise BindError(f"{what} ({prefix}.host, {prefix}.port)", host, port, exc) from exc


class SpareFrames:
    """Large-frame buffers that finished their request, kept for the next large frame of any
    connection (a fresh allocation costs a memset and a page fault per 4 KiB of each produce
    request), SPARE_FRAMES_BYTES at most. A buffer is handed out again only when nothing refers
    to it any more: a handler, the log or a pending response may still hold a view of it. Frame
    buffers are allocated at frame_capacity(size), so that a spare serves the next frames of about
    its size: a client's requests differ by a few bytes."""

    def __init__(self, limit: int = SPARE_FRAMES_BYTES) -> None:
        self.limit = limit
        self._free: list[bytearray] = []
        self._bytes = 0
        self._taken = False  # since the last release_unused()

    def take(self, size: int) -> bytearray | None:
        """The smallest free spare that holds `size` bytes (a larger frame may come next)."""
        free = self._free
        best = -1
        for i in range(len(free) - 1, -1, -1):
            spare = free[i]
            # Three references (the list, `spare`, getrefcount's argument): no view of it is alive.
            if size <= len(spare) and (best < 0 or len(spare) < len(free[best])) and sys.getrefcount(spare) == 3:
                best = i
        if best < 0:
            return None
        spare = free.pop(best)
        self._bytes -= len(spare)
        self._taken = True
        return spare

    def release_unused(self) -> None:
        """Let every spare go when none was taken since the last call (the load that needed them
        has stopped): an idle broker does not keep SPARE_FRAMES_BYTES."""
        if not self._taken:
            self._free.clear()
            self._bytes = 0
        self._taken = False

    def give(self, buffer) -> None:
        if type(buffer) is bytearray and len(buffer) <= SPARE_KEPT_MAX_BYTES and self._bytes + len(buffer) <= self.limit:
            self._free.append(buffer)
            self._bytes += len(buffer)

    @property
    def held_bytes(self) -> int:
        return self._bytes


class HeapTrimmer:
    """Give the heap's free pages back to the OS every TRIM_SECONDS (glibc's malloc_trim). Large
    request buffers are malloc'ed from the heap (glibc raises its mmap threshold to the largest
    block freed, up to 32 MiB), and freed out of order they stay in the process: 1,000 clients
    producing 1 MB requests left the broker at 611 MB RSS after they had all gone. Trimming
    instead of a fixed mmap threshold keeps a buffer's reuse free of page faults (a fixed 256 KiB
    threshold cost 3 more CPU seconds per GB at 100 connections). A no-op without glibc."""

    TRIM_SECONDS = 10.0

    def __init__(self, spare_frames: SpareFrames | None = None, region=None) -> None:
        self._trim = None  # malloc_trim, looked up at the first trim (ctypes costs start-up time)
        self._timer: asyncio.TimerHandle | None = None
        self._spare_frames = spare_frames  # released first when unused, so their pages are trimmed too
        self._region = region  # a worker's shared region (broker/workers/link.py), trimmed when unused

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = loop.call_later(self.TRIM_SECONDS, self._run, loop)

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._spare_frames is not None:
            self._spare_frames.release_unused()
        if self._region is not None:
            self._region.trim()
        if self._trim is None:
            import ctypes

            try:
                trim = ctypes.CDLL(None).malloc_trim
            except (OSError, AttributeError):  # not glibc: nothing to trim with
                self._timer = None
                return
            trim.argtypes = (ctypes.c_size_t,)
            trim.restype = ctypes.c_int
            self._trim = trim
        self._trim(0)
        self._timer = loop.call_later(self.TRIM_SECONDS, self._run, loop)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class KafkaServer:
    """Serves one broker's listeners."""

    def __init__(self, broker) -> None:
        self.broker = broker
        self.config = broker.config
        self.servers: list[asyncio.base_events.Server] = []
        self.connections: set[KafkaConnection] = set()
        self.max_request = int(self.config["socket.request.max.bytes"])
        self.send_buffer_bytes = int(self.config["socket.send.buffer.bytes"])
        self.receive_buffer_bytes = int(self.config["socket.receive.buffer.bytes"])
        self.bound: list[tuple[str, str, int]] = []
        workers = getattr(broker, "workers", None)
        self.quotas = ConnectionQuotas(self.config, None if workers is None else workers.connection_counts)
        self.idle_seconds = int(self.config["connections.max.idle.ms"]) / 1000
        self._idle_sweep: asyncio.TimerHandle | None = None
        # One of several worker processes (broker/workers/): requests for partitions this worker does
        # not own, and those worker 0 serves, are handed over. None with one process.
        self.workers = getattr(broker, "workers", None)
        self.spare_frames = SpareFrames()
        # Where a large Produce frame is received when other workers may own its partitions: this
        # worker's shared region, which they read in place (broker/workers/link.py). None with one process.
        self.frame_region = None if self.workers is None else self.workers.region
        self.heap_trimmer = HeapTrimmer(self.spare_frames, self.frame_region)
        # Listening sockets bound by the supervisor for this worker ({listener name: [socket per address]}).
        self.listen_sockets: dict[str, list[socket.socket]] | None = None
        # Each listener's TLS and SASL settings, changed in place by dynamic broker configs
        # (dynamic_broker_config.apply_dynamic_broker_configs).
        self.listener_securities: dict = {}

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        attach_security(self.broker)
        for name, host, port in self.config.listeners():
            security = self.listener_securities[name] = listener_security(self.config, name)
            backlog = int(self.config.get("socket.listen.backlog.size") or LISTEN_BACKLOG)
            try:
                if self.listen_sockets is not None:
                    for sock in self.listen_sockets[name][1:]:
                        self.servers.append(await loop.create_server(
                            lambda name=name, security=security: KafkaConnection(self, name, security),
                            sock=sock, backlog=backlog, ssl=security.ssl_context))
                    server = await loop.create_server(
                        lambda name=name, security=security: KafkaConnection(self, name, security),
                        sock=self.listen_sockets[name][0], backlog=backlog, ssl=security.ssl_context)
                else:
                    server = await loop.create_server(
                        lambda name=name, security=security: KafkaConnection(self, name, security),
                        host=host or None,
                        port=port,
                        reuse_address=True,
                        backlog=backlog,
                        ssl=security.ssl_context,
                    )
            except OSError as exc:  # Kafka's wording (SocketServer's acceptor)
                raise BindError("Socket server", host, port, exc) from exc
            self.servers.append(server)
            for sock in server.sockets:
                addr = sock.getsockname()
                self.bound.append((name, addr[0], addr[1]))
                logger.info("listening on %s://%s:%d", name, addr[0], addr[1])
        if self.idle_seconds > 0:
            self._idle_sweep = loop.call_later(self._idle_sweep_interval(), self._close_idle_connections)
        self.heap_trimmer.start(loop)

    def _idle_sweep_interval(self) -> float:
        return min(max(self.idle_seconds / 4, 0.05), 30.0)

    def _close_idle_connections(self) -> None:
        """connections.max.idle.ms: close connections with no traffic for that long (Kafka's
        Selector does the same); one waiting for a request's answer is not idle."""
        loop = asyncio.get_running_loop()
        cutoff = loop.time() - self.idle_seconds
        for connection in list(self.connections):
            if connection.idle_since(cutoff):
                logger.debug("closing connection %d from %s: idle for more than connections.max.idle.ms",
                          connection.connection_id, connection.peer)
                connection.abort()
        self._idle_sweep = loop.call_later(self._idle_sweep_interval(), self._close_idle_connections)

    async def stop(self) -> None:
        self.heap_trimmer.stop()
        if self._idle_sweep is not None:
            self._idle_sweep.cancel()
        for server in self.servers:
            server.close()
        for connection in list(self.connections):
            connection.abort()
        for server in self.servers:
            try:
                await asyncio.wait_for(server.wait_closed(), 2)
            except (asyncio.TimeoutError, Exception):
                pass


class KafkaConnection(asyncio.BufferedProtocol):
    """One client connection: frames requests, runs one at a time, writes responses in order."""

    def __init__(self, server: KafkaServer, listener: str, security=None) -> None:
        self.server = server
        self.listener = listener
        self.security = security
        self.max_request = server.max_request
        # The largest frame read_frame_size lets through: socket.request.max.bytes, and until a
        # SASL login completes sasl.server.max.receive.size if that is smaller.
        self._frame_limit = self.max_request
        self.connection_id = next(_connection_ids)
        self.peer: tuple = ("?", 0)
        self.transport: asyncio.Transport | None = None
        self.principal = "User:ANONYMOUS"
        # The delegation token this connection logged in with, if any, and when its session ends.
        self.token_id: str | None = None
        self.token_expiry_ms: int | None = None
        # The SASL exchange that must complete before other requests (SASL_* listeners), else None.
        self._authenticator = None
        self._counted = False  # counted in the connection quotas
        self._last_active = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        # Receive buffer: bytes [_start, _end) are received and not yet framed.
        self._buffer = bytearray(RECEIVE_BUFFER_BYTES)
        self._start = 0
        self._end = 0
        # A large frame being received straight into its own buffer.
        self._frame: memoryview | None = None
        self._frame_size = 0
        self._frame_filled = 0
        self._busy = False  # a request is being handled by a task
        self._task: asyncio.Task | None = None
        # Answers in request order while Produce requests wait for their sync: a slot per request
        # started since the first of them, answered or not ([parts, done, task]).
        self._pipeline: collections.deque = collections.deque()
        self._slot: list | None = None  # the slot the response being queued goes to
        self._held_frame = None  # a request that must wait until the pipelined ones are answered
        self._reading_paused = False
        self._closed = False  # connection lost or aborted: nothing more is read or written
        self._close_when_flushed = False
        # Output not yet taken by the socket: parts are bytes-like or log FileSlices.
        self._out: collections.deque = collections.deque()
        self._out_offset = 0  # bytes of _out[0] already sent
        self._out_bytes = 0
        self._fd = -1  # the socket's fd when we write to it ourselves, else -1
        self._dup: socket.socket | None = None  # see _socket()
        self._waiting_to_write = False
        self._transport_paused = False

    # -- asyncio callbacks --------------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        self._loop = asyncio.get_running_loop()
        self.peer = transport.get_extra_info("peername") or ("?", 0)
        self._last_active = self._loop.time()
        if self.server.workers is not None:
            self.server.workers.refresh()  # connection limits changed at worker 0 hold here at once
        refusal = self.server.quotas.open(self.peer[0])
        if refusal is not None:
            logger.info("closing connection from %s: %s", self.peer, refusal)
            self._closed = True
            transport.abort()
            return
        self._counted = True
        self.server.connections.add(self)
        metrics.connection_opened()
        if self.security is not None:
            try:
                self.principal = self.security.transport_principal(transport)
            except PrincipalMappingError as exc:
                logger.info("closing connection %d from %s: %s", self.connection_id, self.peer, exc)
                self.abort()
                return
            self._authenticator = self.security.authenticator(
                self.server.broker.credentials, HANDLERS[API_VERSIONS_KEY].supports, str(self.connection_id),
                tokens=getattr(self.server.broker, "tokens", None))
            if self._authenticator is not None:
                self._frame_limit = min(self.max_request, self._authenticator.max_receive_size)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            self._configure_socket(sock)
            if transport.get_extra_info("sslcontext") is None:
                self._fd = sock.fileno()
        if self._fd < 0:
            transport.set_write_buffer_limits(high=OUTPUT_HIGH_WATER)

    def _configure_socket(self, sock) -> None:
        options = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        # -1 keeps the OS default (and its autotuning), as in Kafka.
        if self.server.send_buffer_bytes > 0:
            options.append((socket.SOL_SOCKET, socket.SO_SNDBUF, self.server.send_buffer_bytes))
        if self.server.receive_buffer_bytes > 0:
            options.append((socket.SOL_SOCKET, socket.SO_RCVBUF, self.server.receive_buffer_bytes))
        for level, option, value in options:
            try:
                sock.setsockopt(level, option, value)
            except OSError:
                pass

    def get_buffer(self, sizehint: int) -> memoryview:
        frame = self._frame
        if frame is not None:
            filled = self._frame_filled
            if filled == len(frame):
                # The client has sent this much of a longer frame: make room for more.
                bigger = bytearray(min(frame_capacity(self._frame_size), FRAME_GROWTH * len(frame)))
                bigger[:filled] = frame
                self._frame = frame = memoryview(bigger)[: self._frame_size]
            return frame[filled:]
        if self._end == len(self._buffer):
            self._compact()
            if self._end == len(self._buffer):
                # Full of unhandled frames (reading should be paused then): a bigger buffer, not a
                # resize, since the transport may still hold a view of this one.
                self._buffer = self._buffer + bytearray(len(self._buffer))
        return memoryview(self._buffer)[self._end:]

    def idle_since(self, cutoff: float) -> bool:
        """No bytes in or out since `cutoff` (loop time), and nothing in progress or unsent."""
        return (self._last_active < cutoff and not self._busy and not self._pipeline and not self._out
                and not self._closed)

    def buffer_updated(self, nbytes: int) -> None:
        self._last_active = self._loop.time()
        if self._frame is not None:
            self._frame_filled += nbytes
            if self._frame_filled < self._frame_size:
                return
            frame, self._frame = self._frame, None
            self.server.spare_frames.give(frame.obj)
            self._handle_frame(frame)
            del frame  # so that its buffer can be reused for the next large frame
        else:
            self._end += nbytes
        self._process()

    def eof_received(self) -> bool:
        # The client sent everything it will: answer what it asked, then close.
        self._close()
        return True

    def pause_writing(self) -> None:
        self._transport_paused = True

    def resume_writing(self) -> None:
        self._transport_paused = False
        if not self._closed:
            self._after_output_drained()

    def connection_lost(self, exc) -> None:
        self._closed = True
        self.server.connections.discard(self)
        if self._counted:
            self._counted = False
            self.server.quotas.close(self.peer[0])
            metrics.connection_closed()
        self._discard_output()
        self._stop_waiting_to_write()
        workers = self.server.workers
        if workers is not None and workers.cursors is not None:
            workers.cursors.drop(self.connection_id)  # its read cursors' descriptors (workers/read_cursors.py)
        if self._dup is not None:
            self._dup.close()
            self._dup = None

    # -- framing ------------------------------------------------------------------------------

    def _compact(self) -> None:
        """Move the unframed bytes to the front of the receive buffer."""
        start, end = self._start, self._end
        if start:
            self._buffer[: end - start] = self._buffer[start:end]
            self._start, self._end = 0, end - start

    def _process(self) -> None:
        """Handle buffered requests while the connection may take another one; send the answers."""
        while True:
            stopped_by_output = self._handle_buffered_frames()
            self._flush()
            if not stopped_by_output or self._out_bytes > OUTPUT_HIGH_WATER:
                break
        self._update_reading()

    def _handle_buffered_frames(self) -> bool:
        """Frame and handle requests from the receive buffer; True when queued output stopped it."""
        buffer = self._buffer
        if self._held_frame is not None and not self._busy and self._may_follow(self._held_frame):
            frame, self._held_frame = self._held_frame, None
            self._handle_frame(frame)
        while (not self._busy and self._held_frame is None and len(self._pipeline) < PIPELINED_PRODUCES
               and not self._closed and not self._close_when_flushed):
            if self._out_bytes > OUTPUT_HIGH_WATER:
                return True
            start = self._start
            available = self._end - start
            if available < SIZE_BYTES:
                break
            try:
                size = read_frame_size(buffer, start, self._frame_limit)
            except FrameSizeError as refused:
                self._refuse_frame(refused.size)
                break
            begin = start + SIZE_BYTES
            if available - SIZE_BYTES >= size:
                self._start = begin + size
                self._handle_frame(buffer[begin : begin + size])
                continue
            if size > DIRECT_FRAME_BYTES:
                # Read the rest of this frame straight into its own buffer.
                self._start_large_frame(size, buffer[begin : self._end])
                self._start = self._end = 0
                break
            if begin + size > len(buffer):
                self._compact()
            break
        if self._start == self._end:
            self._start = self._end = 0
        return False

    def _refuse_frame(self, size: int) -> None:
        """Close the connection on a size prefix outside 0.._frame_limit, saying which limit."""
        if 0 <= size <= self.max_request:
            logger.info("closing connection %d from %s: frame of %d bytes before authentication "
                        "(sasl.server.max.receive.size %d)", self.connection_id, self.peer, size,
                        self._authenticator.max_receive_size)
        else:
            logger.warning("closing connection %d from %s: frame size %d outside 0..%d "
                           "(socket.request.max.bytes)", self.connection_id, self.peer, size, self.max_request)
        self._close()

    def _start_large_frame(self, size: int, received: bytearray) -> None:
        """Receive a large frame into a buffer of its own: a Produce request on a broker of several
        workers into this worker's shared region (its batches' owners read them there), else a
        spare buffer (SpareFrames), else a new one of the frame's size, or for a frame over
        WHOLE_FRAME_MAX_BYTES one that starts small and grows as the bytes actually arrive (kept as
        a spare after, up to SPARE_KEPT_MAX_BYTES)."""
        frame = None
        region = self.server.frame_region
        if (region is not None and size <= SPARE_KEPT_MAX_BYTES and len(received) >= 2
                and read_int16(received, 0)[0] == PRODUCE_KEY):
            placed = region.allocate(size)
            if placed is not None:
                frame = placed[1]
        if frame is None:
            spare = self.server.spare_frames.take(size) if size <= SPARE_KEPT_MAX_BYTES else None
            if spare is not None:
                frame = memoryview(spare)[:size]
            elif size <= WHOLE_FRAME_MAX_BYTES:
                frame = memoryview(bytearray(frame_capacity(size)))[:size]
            else:
                frame = memoryview(bytearray(LARGE_FRAME_FIRST_BYTES))
        have = len(received)
        frame[:have] = received
        self._frame, self._frame_size, self._frame_filled = frame, size, have

    def _update_reading(self) -> None:
        if self._closed:
            return
        blocked = (self._busy or self._out_bytes > OUTPUT_HIGH_WATER or self._close_when_flushed
                   or self._held_frame is not None or len(self._pipeline) >= PIPELINED_PRODUCES)
        if blocked and not self._reading_paused:
            self._reading_paused = True
            self.transport.pause_reading()
        elif not blocked and self._reading_paused:
            self._reading_paused = False
            self.transport.resume_reading()

    # -- requests -----------------------------------------------------------------------------

    def _handle_frame(self, frame) -> None:
        authenticator = self._authenticator
        if authenticator is not None and not authenticator.complete and not self._authenticate(frame):
            return
        if self._pipeline and not self._may_follow(frame):
            self._held_frame = frame  # handled once the Produce requests before it are answered
            return
        # After Produce requests still waiting for their sync, this one's answer waits its turn.
        slot = self._slot = [None, False, None] if self._pipeline else None
        if slot is not None:
            self._pipeline.append(slot)
        try:
            started = self._start_request(frame)
        except CloseConnection:
            self._slot = None
            self._close()
            return
        self._slot = None
        if started is None:
            if slot is not None:
                self._slot_done(slot)
            return
        coro, pending, what, ctx = started
        if ctx.appended and ctx.api_key == PRODUCE_KEY:
            if slot is None:
                slot = [None, False, None]
                self._pipeline.append(slot)
            slot[2] = asyncio.get_running_loop().create_task(self._finish_pipelined(coro, pending, what, slot))
            return
        self._busy = True
        self._task = asyncio.get_running_loop().create_task(self._finish_request(coro, pending, what, slot))

    def _may_follow(self, frame) -> bool:
        """Whether a request may start while Produce requests wait for their sync: another Produce."""
        if not self._pipeline:
            return True
        try:
            return peek_api(frame)[0] == PRODUCE_KEY
        except DecodeError:
            return False

    def _slot_done(self, slot: list) -> None:
        """A request in the pipeline is answered (or has no answer): send the answers now due, in order."""
        slot[1] = True
        pipeline = self._pipeline
        while pipeline and pipeline[0][1]:
            parts = pipeline.popleft()[0]
            if parts:
                self._queue(parts)

    async def _finish_pipelined(self, coro, pending, what, slot: list) -> None:
        """A Produce waiting for its sync while the connection goes on: its answer into its slot."""
        close = True
        try:
            close = await self._answer_when_done(coro, pending, what, slot)
        finally:
            self._slot = None
            self._slot_done(slot)
            if not self._closed:
                if close:
                    self._close()
                elif not self._busy:
                    self._process()

    def _authenticate(self, frame) -> bool:
        """Feed a frame received before SASL completed to the authenticator; True when the frame
        is a request to dispatch as usual (ApiVersions)."""
        step = self._authenticator.receive(frame)
        if self._authenticator.complete:
            self._frame_limit = self.max_request
            self.principal = self._authenticator.principal
            self.token_id = self._authenticator.token_id
            self.token_expiry_ms = self._authenticator.token_expiry_ms
        if step.dispatch:
            return True
        if step.delay:
            # Kafka delays the answer to a failed login (connection.failed.authentication.delay.ms).
            self._busy = True
            asyncio.get_running_loop().call_later(step.delay, self._after_authentication_delay, step)
            return False
        self._after_authentication_step(step)
        return False

    def _after_authentication_delay(self, step) -> None:
        self._busy = False
        if not self._closed:
            self._after_authentication_step(step)
            self._process()

    def _after_authentication_step(self, step) -> None:
        if step.reply is not None:
            self._queue([step.reply])
        if step.close:
            self._close()

    def _start_request(self, frame):
        """Decode and run a request up to its first wait. Queues the response of a request that
        finished; returns (coroutine, what it waits for, description) for one that did not."""
        conn_id, peer = self.connection_id, self.peer
        try:
            api_key, version, correlation_id = peek_api(frame)
        except DecodeError:
            logger.warning("closing connection %d from %s: frame too short for a request header", conn_id, peer)
            raise CloseConnection
        handler = HANDLERS.get(api_key)
        if handler is None or not handler.served_by(self.server.broker):
            logger.warning("closing connection %d from %s: %s API key %d", conn_id, peer,
                           "unknown" if handler is None else "not served here:", api_key)
            raise CloseConnection
        if self.token_expiry_ms is not None and time.time() * 1000 > self.token_expiry_ms:
            # Kafka ends a token's session at the token's expiry (KIP-368's session lifetime) and
            # its clients re-authenticate; without re-authentication here, they connect again.
            logger.info("closing connection %d from %s: its delegation token session expired", conn_id, peer)
            raise CloseConnection
        workers = self.server.workers
        if workers is not None:
            workers.refresh()  # the metadata as worker 0 last changed it
        if not handler.supports(version):
            if api_key == API_VERSIONS_KEY:
                self._queue(self._unsupported_api_versions(correlation_id))
                return None
            logger.warning("closing connection %d from %s: %s v%d is not supported", conn_id, peer,
                        handler.api.name, version)
            raise CloseConnection
        api = handler.api
        try:
            header, pos = decode_request_header(frame, api.is_flexible(version))
            request = api.request.decode(frame, version, pos, exact=False)
        except (DecodeError, UnicodeDecodeError, ValueError) as exc:
            logger.warning("closing connection %d from %s: malformed %s v%d request (correlation id %d): %s",
                        conn_id, peer, api.name, version, correlation_id, exc)
            raise CloseConnection
        ctx = RequestContext(api_key, version, correlation_id, header.client_id, self.listener, peer, conn_id,
                             self.principal)
        if self.token_id is not None:
            ctx.extra["token_authenticated"] = True
        what = (api, version, correlation_id, header.client_id, time.monotonic(), len(frame) + SIZE_BYTES, request)
        if workers is None:
            coro = handler.handle(self.server.broker, ctx, request)
        else:
            coro = routing.served(self.server.broker, handler, ctx, request, frame)
        try:
            pending = coro.send(None)
        except StopIteration as done:
            self._respond(what, done.value)
            return None
        except CloseConnection:
            raise
        except (WorkerGone, ConnectionToClose):  # the worker that answers died, or closed it
            raise CloseConnection from None
        except Exception:
            self._log_handler_error(what)
            self._respond_error(what)
            return None
        return coro, pending, what, ctx

    async def _finish_request(self, coro, pending, what, slot: list | None = None) -> None:
        try:
            close = await self._answer_when_done(coro, pending, what, slot)
        except asyncio.CancelledError:
            self._finish_busy(close=True, slot=slot)
            raise
        self._finish_busy(close=close, slot=slot)

    async def _answer_when_done(self, coro, pending, what, slot: list | None) -> bool:
        """Run a request on from its first wait and queue its answer (an error answer when the
        handler failed; in `slot` when Produce requests are pipelined). True when the connection is
        to be closed instead."""
        try:
            response = await _resume(coro, pending)
        except (CloseConnection, WorkerGone, ConnectionToClose):
            # WorkerGone: the worker that had to answer died, which is a broker crash to the client
            # (broker/workers/supervisor.py restarts the workers); it reconnects and retries.
            return True
        except Exception:
            self._log_handler_error(what)
            if self._closed:
                return False
            self._slot = slot
            try:
                self._respond_error(what)
            except CloseConnection:
                return True
            return False
        if not self._closed:
            self._slot = slot
            try:
                self._respond(what, response)
            except CloseConnection:
                return True
        return False

    def _finish_busy(self, close: bool, slot: list | None = None) -> None:
        self._slot = None
        if slot is not None:
            self._slot_done(slot)
        self._busy = False
        self._task = None
        if self._closed:
            return
        if close:
            self._close()
        else:
            self._process()

    @staticmethod
    def _log_handler_error(what) -> None:
        api, version, correlation_id, client_id = what[:4]
        logger.exception("error handling %s v%d (correlation id %d, client %s)", api.name, version,
                      correlation_id, client_id)

    def _respond(self, what, response) -> None:
        """Queue the encoded response; a response that cannot be encoded is our error: logged,
        and answered as a failed request (_respond_error)."""
        api, version, correlation_id, _, started, bytes_in, _ = what
        if response is None:  # acks=0 produce: no answer
            metrics.observe_request(api.name, version, time.monotonic() - started, bytes_in, 0)
            return
        if type(response) is ForwardedFrame:  # answered by another worker, correlation id and all
            metrics.observe_request(api.name, version, time.monotonic() - started, bytes_in,
                                    sum(len(part) for part in response.parts))
            self._queue(response.parts)
            return
        try:
            parts = encode_response_frame(api, version, correlation_id, response)
        except Exception:
            self._log_handler_error(what)
            self._respond_error(what)
            return
        metrics.observe_request(api.name, version, time.monotonic() - started, bytes_in,
                                sum(len(part) for part in parts))
        self._queue(parts)

    def _respond_error(self, what) -> None:
        """Answer a request whose handling failed as Kafka does (getErrorResponse with
        UNKNOWN_SERVER_ERROR); raises CloseConnection where Kafka closes instead (a Produce with
        acks=0) or the error answer itself cannot be built."""
        api, version, correlation_id, _, started, bytes_in, request = what
        try:
            response = error_response(api, version, request)
            if response is None:
                raise CloseConnection
            parts = encode_response_frame(api, version, correlation_id, response)
        except CloseConnection:
            raise
        except Exception:
            logger.exception("cannot build the error answer to %s v%d (correlation id %d); closing the connection",
                          api.name, version, correlation_id)
            raise CloseConnection
        metrics.observe_request(api.name, version, time.monotonic() - started, bytes_in,
                                sum(len(part) for part in parts))
        self._queue(parts)

    def _unsupported_api_versions(self, correlation_id: int) -> list:
        from .handlers.p18_api_versions import api_versions_response

        api = HANDLERS[API_VERSIONS_KEY].api
        return encode_response_frame(api, 0, correlation_id, api_versions_response(ErrorCode.UNSUPPORTED_VERSION))

    # -- output -------------------------------------------------------------------------------

    def _queue(self, parts: list) -> None:
        slot = self._slot
        if slot is not None:  # an answer that waits for the pipelined ones before it (_slot_done)
            self._slot = None
            slot[0] = parts
            return
        if self._closed:
            for part in parts:
                _close_part(part)
            return
        for part in parts:
            length = len(part)
            if length:
                self._out.append(part)
                self._out_bytes += length
            else:
                _close_part(part)

    def _flush(self) -> None:
        """Hand queued output to the socket until it is all sent or the socket is full."""
        if not self._out or self._closed:
            if not self._out:
                self._after_flush()
            return
        if self._fd < 0:
            self._flush_to_transport()
        elif not self._waiting_to_write:
            self._send_queued()

    def _send_queued(self) -> None:
        out = self._out
        try:
            while out:
                first = out[0]
                if type(first) is bytearray or type(first) is bytes or type(first) is memoryview:
                    self._send_buffers()
                elif USE_SENDFILE:
                    offset = self._out_offset
                    sent = os.sendfile(self._fd, first.fd, first.position + offset, first.length - offset)
                    if sent == 0:
                        # The file got shorter under us (a follower truncated it): the size prefix
                        # already promised these bytes, so the only way out is to drop the connection.
                        logger.warning("connection %d: log file slice %r ended early; closing", self.connection_id, first)
                        self.abort()
                        return
                    self._consume_output(sent)
                else:
                    out[0] = first.read_bytes()
                    _close_part(first)
        except (BlockingIOError, InterruptedError):
            self._wait_to_write()
            return
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN, errno.EBADF):
                logger.warning("connection %d from %s: write failed: %s", self.connection_id, self.peer, exc)
            self.abort()
            return
        self._after_flush()

    def _send_buffers(self) -> None:
        """Send the leading run of byte parts with one system call."""
        views = []
        more = 0
        for part in self._out:
            if not (type(part) is bytearray or type(part) is bytes or type(part) is memoryview):
                # A file slice follows: MSG_MORE lets the header share packets with the log data.
                more = _MSG_MORE
                break
            views.append(part)
            if len(views) == _IOV_MAX:
                break
        if self._out_offset:
            views[0] = memoryview(views[0])[self._out_offset:]
        if more:
            sent = self._socket().sendmsg(views, (), more)
        else:
            sent = os.writev(self._fd, views)
        self._consume_output(sent)

    def _socket(self) -> socket.socket:
        """A socket object on a duplicate of the connection's descriptor, for sendmsg flags and for
        waiting until it is writable (the loop refuses a descriptor a transport owns)."""
        if self._dup is None:
            self._dup = socket.socket(fileno=os.dup(self._fd))
            self._dup.setblocking(False)  # the shared file description is non-blocking already
        return self._dup

    def _consume_output(self, sent: int) -> None:
        self._last_active = self._loop.time()
        out = self._out
        self._out_bytes -= sent
        sent += self._out_offset
        while out:
            length = len(out[0])
            if sent < length:
                break
            sent -= length
            _close_part(out.popleft())
        self._out_offset = sent

    def _flush_to_transport(self) -> None:
        """Write through the transport (TLS): file slices are read into memory first."""
        out = self._out
        while out:
            part = out.popleft()
            if hasattr(part, "read_bytes"):
                data = part.read_bytes()
                _close_part(part)
                part = data
            self.transport.write(part)
        # The transport's own buffer counts as unsent; pause_writing/resume_writing track it.
        self._out_bytes = self.transport.get_write_buffer_size() if self._transport_paused else 0
        self._after_flush()

    def _wait_to_write(self) -> None:
        if not self._waiting_to_write:
            self._waiting_to_write = True
            asyncio.get_running_loop().add_writer(self._socket().fileno(), self._on_writable)

    def _stop_waiting_to_write(self) -> None:
        if self._waiting_to_write:
            self._waiting_to_write = False
            try:
                asyncio.get_running_loop().remove_writer(self._dup.fileno())
            except RuntimeError:
                pass  # the loop is closing

    def _on_writable(self) -> None:
        self._send_queued()
        if not self._out:
            self._stop_waiting_to_write()
            if not self._closed:
                self._after_output_drained()

    def _after_flush(self) -> None:
        if (self._close_when_flushed and not self._out and not self._busy and not self._pipeline
                and self._held_frame is None and not self._closed):
            self._closed = True
            self.transport.close()

    def _after_output_drained(self) -> None:
        if self._transport_paused:
            return
        if self._fd < 0:
            self._out_bytes = self.transport.get_write_buffer_size()
        if not self._busy:
            self._process()

    def _discard_output(self) -> None:
        while self._out:
            _close_part(self._out.popleft())
        self._out_bytes = 0
        self._out_offset = 0

    # -- closing ------------------------------------------------------------------------------

    def _close(self) -> None:
        """Close once what is already queued (earlier requests' answers) is sent and no request
        is in progress."""
        if self._closed:
            return
        self._close_when_flushed = True
        self._flush()
        if not self._closed:
            self._update_reading()

    def abort(self) -> None:
        """Drop the connection now (server stop, write error), cancelling a request in progress."""
        if self._task is not None:
            self._task.cancel()
        for slot in self._pipeline:
            if slot[2] is not None:
                slot[2].cancel()
        if not self._closed:
            self._closed = True
            self._discard_output()
            self._stop_waiting_to_write()
            if self.transport is not None:
                self.transport.abort()


def _close_part(part) -> None:
    close = getattr(part, "close", None)
    if close is not None and not isinstance(part, memoryview):
        close()


@types.coroutine
def _resume(coro, pending):
    """Continue a coroutine that already ran up to `pending` (what it yielded to wait on) inside
    the current task, as `await` would have; returns what the coroutine returns."""
    try:
        while True:
            try:
                value = yield pending
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                pending = coro.throw(exc)
            else:
                pending = coro.send(value)
    except StopIteration as done:
        return done.value
