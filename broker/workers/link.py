"""The channel between two worker processes of one broker: a Unix stream socket pair made by the
supervisor before it forks, carrying numbered calls, their answers and open file descriptors.

A message is a header (`!IBIHI`: length of what follows the header, kind, call id, number of file
descriptors, length of the pickled `meta`), the pickled `meta` (a small tuple or dict: only our
own processes are at either end of the pair) and a `body` of raw bytes (a request frame as the
client sent it, record batches) that is never pickled. Descriptors travel with SCM_RIGHTS on the
header's bytes; the kernel delivers them with the first byte they were sent with, so the reader
keeps them in arrival order and a message takes its own from the front once it is whole. A log
file slice fetched by another worker's client crosses this way: its descriptor, not its bytes,
and the client's worker sends it with sendfile.

Calls are answered in any order (each carries its id); a call whose peer died raises
`WorkerGone`. Writes that the socket cannot take at once wait for it to become writable, in order.

A large call body (a produce request handed to its partitions' owner) does not cross the socket:
each worker has a region of memory every worker of the broker maps (made by the supervisor before
the fork, SHARED_REGION_BYTES), which only its own worker writes to. A client's large Produce frame
is received straight into the region of the worker holding its connection (broker/server.py), so
the owner of its partitions reads their batches where they arrived; any other large body is copied
there once. Only the body's place is sent (CALL_SHARED), or for a split Produce the places of its
batches beside the rest of the request (broker/workers/routing.py). The callee reads (and the log
patches) the bytes in place and must be done with them when it answers: the caller's link holds
what it sent until the answer (or a failure) arrives, or the link is lost, never less, so a call
given up by its caller keeps its bytes until the callee is done. A place is free again once
nothing in the writing worker refers to it (SharedRegion). A body that does not fit goes through
the socket as before.
"""

from __future__ import annotations

import array
import asyncio
import collections
import ctypes
import errno
import logging
import mmap
import os
import pickle
import socket
import struct
import sys

logger = logging.getLogger("kafka_wire.workers")

_HEADER = struct.Struct("!IBIHI")
CALL, ANSWER, FAILURE = 1, 2, 3
_RECEIVE_BYTES = 256 * 1024
# A body at least this large is received into a buffer of its own (no copy out of the stream buffer).
_LARGE_BODY_BYTES = 64 * 1024
_MAX_FDS_PER_MESSAGE = 512
CALL_SHARED = 4
# A call body at least this large goes through the shared region when it fits.
SHARED_BODY_BYTES = 64 * 1024
# A worker's shared region; pages are only backed once used, and the allocator reuses the lowest
# free space first, so what a worker touches follows the frames and bodies in flight (8 franz-go
# connections keep 5-10 MB requests arriving and waiting at once); the pages a load touched are
# given back when the region has gone a trim period unused (SharedRegion.trim).
SHARED_REGION_BYTES = 256 * 1024 * 1024
_SHARED_ALIGN = 4096
_ANCILLARY_BYTES = socket.CMSG_SPACE(_MAX_FDS_PER_MESSAGE * array.array("i").itemsize)


class WorkerGone(ConnectionError):
    """The worker at the other end of a link is gone (exited, killed): its calls fail."""


class RemoteFailure(RuntimeError):
    """The other worker raised while answering a call (logged there with its traceback)."""


class SharedRegion:
    """This worker's shared region and its allocator: first fit, lowest place first. A place is
    handed out as a writable view of a block (a ctypes array over the region, which every view
    made from it keeps alive) and is free again once nothing in this process refers to the block:
    no view of it is left (sys.getrefcount). What another worker reads is held by the link that
    sent it until the answer (WorkerLink.call)."""

    def __init__(self, region) -> None:
        self.region = region
        self._base = ctypes.addressof(ctypes.c_char.from_buffer(region))
        self._free: list[list[int]] = [[0, len(region)]]  # [offset, size], by offset
        self._blocks: list[list] = []  # [offset, size, block] of every place handed out
        self._used = False  # since the last trim()

    def allocate(self, size: int) -> tuple[int, memoryview] | None:
        """(offset, a writable view of `size` bytes there), or None when no free space fits."""
        self.reclaim()
        size_in_region = -(-max(size, 1) // _SHARED_ALIGN) * _SHARED_ALIGN
        for i, block in enumerate(self._free):
            if block[1] >= size_in_region:
                offset = block[0]
                if block[1] == size_in_region:
                    del self._free[i]
                else:
                    block[0] += size_in_region
                    block[1] -= size_in_region
                held = (ctypes.c_char * size_in_region).from_buffer(self.region, offset)
                self._blocks.append([offset, size_in_region, held])
                self._used = True
                return offset, memoryview(held).cast("B")[:size]
        return None

    def reclaim(self) -> None:
        """Free the places no view refers to any more."""
        kept = []
        for entry in self._blocks:
            # Two references (the entry, getrefcount's argument): every view of it is gone.
            if sys.getrefcount(entry[2]) == 2:
                self._release(entry[0], entry[1])
            else:
                kept.append(entry)
        self._blocks = kept

    def place(self, view) -> tuple[int, int] | None:
        """Where `view` lies in this region (offset, length); None when it lies elsewhere."""
        if not len(view):
            return None
        try:
            address = ctypes.addressof(ctypes.c_char.from_buffer(view))
        except (TypeError, ValueError, BufferError):  # read-only (bytes), or not contiguous
            return None
        offset = address - self._base
        if 0 <= offset and offset + len(view) <= len(self.region):
            return offset, len(view)
        return None

    def _release(self, offset: int, size: int) -> None:
        free = self._free
        i = 0
        while i < len(free) and free[i][0] < offset:
            i += 1
        free.insert(i, [offset, size])
        if i + 1 < len(free) and offset + size == free[i + 1][0]:  # join the block after
            free[i][1] += free.pop(i + 1)[1]
        if i > 0 and free[i - 1][0] + free[i - 1][1] == offset:  # and the one before
            free[i - 1][1] += free.pop(i)[1]

    def trim(self) -> None:
        """Give the free space's pages back when nothing was placed since the last call (the load
        that touched them has stopped): shared memory stays resident until removed."""
        if not self._used:
            self.reclaim()
            for offset, size in self._free:
                try:
                    self.region.madvise(mmap.MADV_REMOVE, offset, size)
                except (OSError, AttributeError, ValueError):  # no MADV_REMOVE here: kept
                    return
        self._used = False

    @property
    def taken_bytes(self) -> int:
        self.reclaim()
        return sum(entry[1] for entry in self._blocks)


class WorkerLink:
    """One end of the pair between this worker and worker `peer`.

    `serve(op, meta, body, fds)` answers the peer's calls: a coroutine function returning
    (meta, body, fds); descriptors given in an answer or a call are closed here once sent.
    `shared`: (this worker's SharedRegion, shared by all its links, or its mmap; the peer's region),
    or None."""

    def __init__(self, sock: socket.socket, peer: int, serve, shared=None) -> None:
        self.peer = peer
        tx = None if shared is None else shared[0]
        self._tx = tx if tx is None or isinstance(tx, SharedRegion) else SharedRegion(tx)
        self._rx = memoryview(shared[1]) if shared is not None else None
        # call id -> what the peer reads in our region for it, held until the call is answered.
        self._holds: dict[int, object] = {}
        self._sock = sock
        self._serve = serve
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ids = 0
        self._pending: dict[int, asyncio.Future] = {}
        self._inbuf = bytearray()
        # A large message's body being received straight into its own buffer:
        # [header fields, meta bytes, body buffer, bytes of it filled].
        self._large: list | None = None
        self._fds: collections.deque[int] = collections.deque()
        self._out: collections.deque = collections.deque()  # [memoryview, fds to send with it or ()]
        self._writing = False
        self.closed = False
        self._tasks: set[asyncio.Task] = set()

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._sock.setblocking(False)
        self._loop.add_reader(self._sock.fileno(), self._on_readable)

    # -- calls --------------------------------------------------------------------------------

    async def call(self, op: str, meta=None, body=b"", fds=(), hold=None) -> tuple:
        """Ask the peer; (meta, body, fds) of its answer. `hold`: views of this worker's region the
        call's meta names, kept until the peer has answered."""
        if self.closed:
            for fd in fds:
                os.close(fd)
            raise WorkerGone(f"worker {self.peer} is gone")
        self._ids += 1
        call_id = self._ids
        fut = self._loop.create_future()
        self._pending[call_id] = fut
        if hold is not None:
            self._holds[call_id] = hold
        if not self._send_shared(call_id, op, meta, body, fds):
            self._send(CALL, call_id, (op, meta), body, fds)
        try:
            return await fut
        finally:
            self._pending.pop(call_id, None)

    def _send_shared(self, call_id: int, op: str, meta, body, fds) -> bool:
        """Send the place of a large call body in this worker's region: where it already lies (a
        client's frame received there), else copied there; False when it is not large, carries
        descriptors, or does not fit."""
        region = self._tx
        if region is None or fds:
            return False
        parts = body if isinstance(body, list) else [body]
        size = sum(len(part) for part in parts)
        if size < SHARED_BODY_BYTES:
            return False
        placed = region.place(parts[0]) if len(parts) == 1 else None
        if placed is not None:
            offset, view = placed[0], parts[0]
        else:
            allocated = region.allocate(size)
            if allocated is None:
                return False
            offset, view = allocated
            position = 0
            for part in parts:
                part = memoryview(part).cast("B")
                view[position : position + len(part)] = part
                position += len(part)
        held = self._holds.get(call_id)
        self._holds[call_id] = view if held is None else (held, view)
        self._send(CALL_SHARED, call_id, ((op, meta), offset, size), b"", ())
        return True

    def _send(self, kind: int, call_id: int, meta, body, fds) -> None:
        """`body`: bytes-like, or a list of bytes-like parts sent one after another (not joined)."""
        packed = pickle.dumps(meta, protocol=pickle.HIGHEST_PROTOCOL)
        parts = [memoryview(part).cast("B") for part in (body if isinstance(body, list) else [body])]
        header = _HEADER.pack(len(packed) + sum(len(part) for part in parts), kind, call_id, len(fds), len(packed))
        self._out.append([memoryview(header + packed), list(fds)])
        for part in parts:
            if len(part):
                self._out.append([part, []])
        if not self._writing:
            self._write()

    def _write(self) -> None:
        out = self._out
        try:
            while out:
                # The head part and the byte parts after it (up to one carrying descriptors) in one call.
                views = [out[0][0]]
                fds = out[0][1]
                for i in range(1, min(len(out), 64)):
                    if out[i][1]:
                        break
                    views.append(out[i][0])
                if fds:
                    sent = self._sock.sendmsg(views, [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
                    for fd in fds:  # in flight now: the kernel holds them for the peer
                        os.close(fd)
                    out[0][1] = []
                else:
                    sent = self._sock.sendmsg(views)
                while sent:
                    view = out[0][0]
                    if sent >= len(view):
                        sent -= len(view)
                        out.popleft()
                    else:
                        out[0][0] = view[sent:]
                        break
        except (BlockingIOError, InterruptedError):
            if not self._writing:
                self._writing = True
                self._loop.add_writer(self._sock.fileno(), self._write)
            return
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.ECONNRESET):
                logger.warning("link to worker %d: write failed: %s", self.peer, exc)
            self._lost()
            return
        if self._writing:
            self._writing = False
            self._loop.remove_writer(self._sock.fileno())

    # -- receiving ----------------------------------------------------------------------------

    def _on_readable(self) -> None:
        large = self._large
        try:
            if large is not None:  # straight into the body's own buffer
                body, filled = large[2], large[3]
                nbytes, ancillary, _flags, _ = self._sock.recvmsg_into([memoryview(body)[filled:]], _ANCILLARY_BYTES)
                data = None
            else:
                data, ancillary, _flags, _ = self._sock.recvmsg(_RECEIVE_BYTES, _ANCILLARY_BYTES)
                nbytes = len(data)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._lost()
            return
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds = array.array("i")
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
                self._fds.extend(fds)
        if not nbytes:
            self._lost()
            return
        if large is not None:
            large[3] += nbytes
            if large[3] == len(large[2]):
                self._large = None
                (kind, call_id, nfds), meta, body = large[0], large[1], large[2]
                self._deliver(kind, call_id, nfds, meta, body)
            return
        self._inbuf += data
        self._parse()

    def _parse(self) -> None:
        buf = self._inbuf
        pos = 0
        while len(buf) - pos >= _HEADER.size:
            length, kind, call_id, nfds, meta_len = _HEADER.unpack_from(buf, pos)
            end = pos + _HEADER.size + length
            start = pos + _HEADER.size
            if len(buf) < end:
                if length - meta_len >= _LARGE_BODY_BYTES and len(buf) >= start + meta_len:
                    # The rest of a large body goes straight into a buffer of its own.
                    body = bytearray(length - meta_len)
                    have = len(buf) - (start + meta_len)
                    body[:have] = memoryview(buf)[start + meta_len:]
                    self._large = [(kind, call_id, nfds), bytes(buf[start : start + meta_len]), body, have]
                    pos = len(buf)
                break
            body = bytearray(memoryview(buf)[start + meta_len : end])  # writable: the log patches batches
            meta = bytes(buf[start : start + meta_len])
            pos = end
            self._deliver(kind, call_id, nfds, meta, body)
            if self._large is not None or self.closed:
                break
        if pos:
            del buf[:pos]

    def _deliver(self, kind: int, call_id: int, nfds: int, meta: bytes, body: bytearray) -> None:
        fds = [self._fds.popleft() for _ in range(nfds)]
        self._dispatch(kind, call_id, pickle.loads(meta), body, fds)

    def _dispatch(self, kind: int, call_id: int, meta, body: bytes, fds: list[int]) -> None:
        if kind == CALL_SHARED:  # the body is in the region the peer writes: read (and patched) in place
            (op, args), offset, size = meta
            body = self._rx[offset : offset + size]
            kind, meta = CALL, (op, args)
        if kind == CALL:
            op, args = meta
            task = self._loop.create_task(self._answer(call_id, op, args, body, fds))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        self._holds.pop(call_id, None)  # the peer is done with what it read in our region
        fut = self._pending.get(call_id)
        if fut is None or fut.done():  # the caller gave up (cancelled): nothing waits for it
            for fd in fds:
                os.close(fd)
            return
        if kind == ANSWER:
            fut.set_result((meta, body, fds))
        else:
            for fd in fds:
                os.close(fd)
            fut.set_exception(RemoteFailure(f"worker {self.peer}: {meta}"))

    async def _answer(self, call_id: int, op: str, args, body: bytes, fds: list[int]) -> None:
        try:
            meta, answer_body, answer_fds = await self._serve(op, args, body, fds)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the caller gets the failure, we keep serving
            logger.exception("worker %d's %s call failed", self.peer, op)
            if not self.closed:
                self._send(FAILURE, call_id, f"{type(exc).__name__}: {exc}", b"", ())
            return
        if self.closed:
            for fd in answer_fds:
                os.close(fd)
            return
        self._send(ANSWER, call_id, meta, answer_body, answer_fds)

    # -- end ----------------------------------------------------------------------------------

    def _lost(self) -> None:
        if self.closed:
            return
        self.closed = True
        loop = self._loop
        try:
            loop.remove_reader(self._sock.fileno())
            if self._writing:
                loop.remove_writer(self._sock.fileno())
        except (ValueError, RuntimeError):
            pass
        for _, fds in self._out:
            for fd in fds:
                os.close(fd)
        self._out.clear()
        while self._fds:
            os.close(self._fds.popleft())
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(WorkerGone(f"worker {self.peer} is gone"))
        self._holds.clear()  # nobody reads what this link sent any more
        self._sock.close()

    def close(self) -> None:
        self._lost()
        for task in list(self._tasks):
            task.cancel()
