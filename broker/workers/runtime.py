"""One worker process of a multi-worker broker: what it owns, its links to the other workers, and
how it keeps its copy of the metadata current.

Worker 0 (the primary) is the only writer of the broker's shared state: the metadata file (topics,
configs, quotas, features), ACLs, SCRAM credentials and delegation tokens. Every time it saves one
of them it bumps a generation counter in memory shared by all workers (an anonymous shared mapping
made by the supervisor before forking), after the file is in place and before the request that
changed it is answered. Every other worker compares the counter with the one it loaded at the
start of each request it serves (and once a second when idle) and re-reads the files when they
differ, then opens the logs of partitions it now owns, closes and deletes those of topics gone and
applies changed configs. A client that saw its CreateTopics answered therefore finds the topic on
whichever worker its next request reaches.

The calls a worker answers for the others (`serve`): `forward`, a client request (as its frame)
to run here with the client's context; `read`, the reads of a Fetch served by another worker, whose
record data comes back as log file descriptors (sent with sendfile by the caller, never copied);
`wait`, a long-polling Fetch's wait on partitions owned here.
"""

from __future__ import annotations

import asyncio
import logging
import mmap
import os
import time

from .link import RemoteFailure, SharedRegion, WorkerGone, WorkerLink
from .ownership import PRIMARY, Ownership

logger = logging.getLogger("kafka_wire.workers")

REFRESH_SECONDS = 1.0


class Generation:
    """A counter in memory shared by the workers (made before they are forked)."""

    def __init__(self) -> None:
        self._map = mmap.mmap(-1, mmap.PAGESIZE)
        self._view = memoryview(self._map).cast("Q")

    @property
    def value(self) -> int:
        return self._view[0]

    def bump(self) -> None:
        self._view[0] += 1


# What a forwarded request's answer is when the handler closed the client's connection.
CLOSE = "close"


class ConnectionToClose(Exception):
    """The worker that ran a forwarded request closed the client's connection (Kafka's answer to
    some malformed requests): the worker holding it closes it."""


class ForwardedFrame:
    """A response frame (size prefix included) answered by another worker, sent to the client as is."""

    __slots__ = ("parts",)

    def __init__(self, parts: list) -> None:
        self.parts = parts


class FdSlice:
    """Log bytes of another worker's partition: a descriptor it passed us, a position and a length.
    Sent like log/segment.py's FileSlice (sendfile), then closed."""

    __slots__ = ("fd", "position", "length")

    def __init__(self, fd: int, position: int, length: int) -> None:
        self.fd, self.position, self.length = fd, position, length

    def __len__(self) -> int:
        return self.length

    def read_bytes(self) -> bytes:
        return os.pread(self.fd, self.length, self.position)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.close()


class WorkerRuntime:
    """This worker: its ownership, links to every other worker and the shared generation."""

    def __init__(self, ownership: Ownership, sockets: dict, generation: Generation, connection_counts=None,
                 dir_counts=None, offline_dirs=None, rate_windows=None, shared=None) -> None:
        self.ownership = ownership
        self.index = ownership.index
        self.count = ownership.count
        self.is_primary = ownership.is_primary
        self.generation = generation
        # The broker's connection counts, shared by the workers (connection_counts.py).
        self.connection_counts = connection_counts
        # The broker's partitions per log dir, shared (log/log_manager.py places new ones by them).
        self.dir_counts = dir_counts
        # A flag per log dir, shared: a dir one worker took offline after an I/O failure is offline
        # for every worker (the broker's partitions there answer KAFKA_STORAGE_ERROR, as on one process).
        self.offline_dirs = offline_dirs
        # The client byte-rate quotas' windows, shared: a client is measured once across the workers.
        self.rate_windows = rate_windows
        self.loaded_generation = generation.value
        # `shared`: every worker's region (link.py), by index: this worker writes its own (large Produce
        # frames of its connections, large call bodies) and reads the others'.
        self.region = None if not shared else SharedRegion(shared[self.index])
        self.regions = None if not shared else [memoryview(region) for region in shared]
        self.links: dict[int, WorkerLink] = {
            peer: WorkerLink(sock, peer, self.serve, None if not shared else (self.region, self.regions[peer]))
            for peer, sock in sockets.items()}
        self.broker = None
        # read_cursors.py: this worker's published logs (owner side) and its cursors on the others'
        # (set by the worker's start on a single-node broker; None: every read goes to the owner).
        self.published = None
        self.cursors = None
        # (broker, op, meta, body, fds) -> (meta, body, fds): how this worker answers the others' calls.
        self.answer = None
        self._refresh_timer: asyncio.TimerHandle | None = None

    # -- set-up -------------------------------------------------------------------------------

    def attach(self, broker) -> None:
        """The broker made with these workers (Broker(config, workers)); on the primary, every save of
        shared state bumps the generation from now on."""
        self.broker = broker
        if self.is_primary:
            self.watch_saves()

    def watch_saves(self) -> None:
        broker = self.broker
        if hasattr(broker.metadata, "_save"):  # (a cluster broker's metadata is ZooKeeper's, watched by each worker)
            _bump_after(broker.metadata, "_save", self.generation)
        authorizer = getattr(broker, "authorizer", None)
        if authorizer is not None and hasattr(authorizer, "_commit"):
            _bump_after(authorizer, "_commit", self.generation)
        credentials = getattr(broker, "credentials", None)
        if credentials is not None and hasattr(credentials, "_save"):
            _bump_after(credentials, "_save", self.generation)
        tokens = getattr(broker, "tokens", None)
        store = getattr(tokens, "store", None) or getattr(tokens, "_store", None)
        if store is not None and hasattr(store, "_save"):
            _bump_after(store, "_save", self.generation)

    def start(self) -> None:
        for link in self.links.values():
            link.start()
        if not self.is_primary:
            self._refresh_timer = asyncio.get_running_loop().call_later(REFRESH_SECONDS, self._refresh_tick)

    def stop(self) -> None:
        if self._refresh_timer is not None:
            self._refresh_timer.cancel()
            self._refresh_timer = None
        for link in self.links.values():
            link.close()
        if self.cursors is not None:
            self.cursors.close()

    def _refresh_tick(self) -> None:
        try:
            self.refresh()
        except Exception:  # noqa: BLE001 - logged; the next request or tick tries again
            logger.exception("worker %d: reloading the metadata failed", self.index)
        self._refresh_timer = asyncio.get_running_loop().call_later(REFRESH_SECONDS, self._refresh_tick)

    # -- the shared state ---------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-read the shared state when the primary changed it since this worker last did, and
        share log dirs taken offline."""
        if self.offline_dirs is not None and self.broker is not None:
            self.share_offline_dirs()
        current = self.generation.value
        if current == self.loaded_generation or self.is_primary:
            return
        self.loaded_generation = current
        started = time.monotonic()
        self.broker.reload_shared_state()
        if self.offline_dirs is not None:
            self.share_offline_dirs()
        logger.debug("worker %d reloaded the metadata (generation %d) in %.1f ms", self.index, current,
                     (time.monotonic() - started) * 1000)

    def share_offline_dirs(self) -> None:
        logs = self.broker.logs
        for index, log_dir in enumerate(logs.log_dirs):
            here = log_dir in logs.offline_dirs
            if here and not self.offline_dirs.get(index):
                self.offline_dirs.add(index, 1)
            elif not here and self.offline_dirs.get(index):
                logs.mark_offline(log_dir, "taken offline by another worker of this broker after an I/O failure")

    # -- ownership ----------------------------------------------------------------------------

    def owner(self, topic: str, partition: int) -> int:
        return self.ownership.owner(topic, partition)

    def owns(self, topic: str, partition: int) -> bool:
        return self.ownership.owns(topic, partition)

    # -- calls to other workers -----------------------------------------------------------------

    async def forward(self, worker: int, ctx, frame, records_at=None, held=None) -> ForwardedFrame | None:
        """Run a client's request (its frame, size prefix excluded) at `worker`; its response frame,
        or None when the request has no answer (acks=0). `records_at`: a Produce frame without its
        batches, which lie in this worker's region at these places (routing.py); `held`: them."""
        meta = _context_meta(ctx) + (None if records_at is None else (self.index, records_at),)
        meta, body, _ = await self.links[worker].call("forward", meta, frame, hold=held)
        if meta is None:
            return None
        if meta == CLOSE:
            raise ConnectionToClose
        return ForwardedFrame([body])

    # -- calls from other workers (answered by broker/workers/calls.py) ----------------------------

    async def serve(self, op: str, meta, body: bytes, fds: list[int]):
        self.refresh()
        return await self.answer(self.broker, op, meta, body, fds)


def _context_meta(ctx) -> tuple:
    return (ctx.api_key, ctx.api_version, ctx.correlation_id, ctx.client_id, ctx.listener, tuple(ctx.peer),
            ctx.connection_id, ctx.principal, dict(ctx.extra))


def _bump_after(obj, method: str, generation: Generation) -> None:
    original = getattr(obj, method)

    def saved(*args, **kwargs):
        result = original(*args, **kwargs)
        generation.bump()
        return result

    setattr(obj, method, saved)


__all__ = ["CLOSE", "ConnectionToClose", "ForwardedFrame", "FdSlice", "Generation", "PRIMARY", "RemoteFailure",
           "WorkerGone", "WorkerRuntime"]
