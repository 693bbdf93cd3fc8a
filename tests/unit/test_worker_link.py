"""broker/workers/: the link between two workers (calls, large bodies, descriptors, a peer that
dies), who owns a partition, and cutting another worker's read to a byte limit."""

from __future__ import annotations

import asyncio
import os
import socket

import pytest

from broker.node import PartitionRead
from broker.workers.fetch import fit
from broker.workers.link import RemoteFailure, WorkerGone, WorkerLink
from broker.workers.ownership import Ownership, owner_of
from broker.workers.runtime import FdSlice
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch


def _pair(serve_a, serve_b):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return WorkerLink(a, 1, serve_a), WorkerLink(b, 0, serve_b)


def test_calls_answers_large_bodies_and_descriptors(tmp_path):
    path = tmp_path / "data"
    path.write_bytes(b"0123456789" * 10)

    async def serve(op, meta, body, fds):
        if op == "echo":
            assert isinstance(body, bytearray)  # writable, as a produce's batches must be
            return (meta, len(body)), bytes(reversed(body)), ()
        if op == "file":
            return "fd", b"", [os.open(path, os.O_RDONLY)]
        if op == "fail":
            raise ValueError("no")
        if op == "read-fd":
            (fd,) = fds
            try:
                return os.pread(fd, 5, 10), b"", ()
            finally:
                os.close(fd)
        raise AssertionError(op)

    async def main():
        left, right = _pair(serve, serve)
        left.start()
        right.start()
        small = await left.call("echo", {"x": 1}, b"abc")
        assert small == (({"x": 1}, 3), bytearray(b"cba"), [])
        big = os.urandom(3 * 1024 * 1024 + 17)
        calls = [left.call("echo", i, big) for i in range(5)] + [right.call("echo", "r", b"z" * 70000)]
        answers = await asyncio.gather(*calls)
        for i, (meta, body, fds) in enumerate(answers[:5]):
            assert meta == (i, len(big)) and body == big[::-1] and fds == []
        assert answers[5][0] == ("r", 70000)
        meta, _, fds = await left.call("file")
        assert meta == "fd" and len(fds) == 1
        assert os.pread(fds[0], 4, 20) == b"0123"
        os.close(fds[0])
        sent = os.open(path, os.O_RDONLY)
        assert (await left.call("read-fd", None, b"", [sent]))[0] == b"01234"
        with pytest.raises(OSError):
            os.fstat(sent)  # handed over: closed on this side once sent
        with pytest.raises(RemoteFailure):
            await left.call("fail")
        pending = asyncio.ensure_future(left.call("echo", 0, b""))
        right.close()
        await asyncio.sleep(0.05)
        # The answer may have come before the close; after it, every call fails.
        if not pending.done() or pending.exception() is not None:
            with pytest.raises(WorkerGone):
                await pending
        with pytest.raises(WorkerGone):
            await left.call("echo", 1, b"x")
        left.close()

    asyncio.run(main())


def test_ownership_spreads_a_topic_and_keeps_internal_topics_at_worker_0():
    assert owner_of("__consumer_offsets", 7, 4) == 0
    assert owner_of("__transaction_state", 3, 4) == 0
    owners = [owner_of("orders", p, 4) for p in range(16)]
    assert sorted(owners) == sorted([0, 1, 2, 3] * 4)
    assert all(owner_of("orders", p, 1) == 0 for p in range(16))
    assert owner_of("orders", 5, 4) == owner_of("orders", 5, 4)  # no per-process salt
    mine = Ownership(2, 4)
    assert [p for p in range(16) if mine.owns("orders", p)] == [p for p in range(16) if owners[p] == 2]
    with pytest.raises(ValueError):
        Ownership(4, 4)


def _slice(tmp_path, sizes):
    """A file of whole batches of the given record-value sizes, as another worker's read of it."""
    data = b"".join(build_batch([Record(0, 0, None, b"x" * size)], base_offset=i) for i, size in enumerate(sizes))
    path = tmp_path / "segment"
    path.write_bytes(data)
    lengths = [len(build_batch([Record(0, 0, None, b"x" * size)])) for size in sizes]
    return PartitionRead(ErrorCode.NONE, 9, 9, 0, FdSlice(os.open(path, os.O_RDONLY), 0, len(data))), lengths


def test_fit_keeps_the_whole_batches_a_smaller_limit_reads(tmp_path):
    read, lengths = _slice(tmp_path, [100, 200, 300])
    assert len(fit(read, 10_000, False).records) == sum(lengths)
    read, lengths = _slice(tmp_path, [100, 200, 300])
    assert len(fit(read, lengths[0] + lengths[1] + 5, False).records) == lengths[0] + lengths[1]
    read, lengths = _slice(tmp_path, [100, 200, 300])
    assert len(fit(read, lengths[0] - 1, True).records) == lengths[0]  # at least one batch (KIP-74)
    read, lengths = _slice(tmp_path, [100, 200, 300])
    cut = fit(read, lengths[0] - 1, False)
    assert cut.records is None and cut.high_watermark == 9  # no batch, the offsets stay
    read, lengths = _slice(tmp_path, [100])
    assert fit(read, 0, False).records is None


def test_large_call_bodies_go_through_the_shared_region():
    """With shared regions (made before the fork, broker/workers/supervisor.py), a large body is
    copied into the caller's and read in place by the callee, which may patch it (the log patches batches);
    its place is free again once answered, not when the caller gives up, and a body too large for
    the free space goes through the socket."""
    import mmap

    from broker.workers import link as link_module

    a_to_b, b_to_a = mmap.mmap(-1, 1024 * 1024), mmap.mmap(-1, 1024 * 1024)
    release = asyncio.Event()
    seen = []

    async def serve(op, meta, body, fds):
        seen.append(type(body).__name__)
        if op == "hold":
            await release.wait()
        body[0:2] = b"OK"  # writable where it lies
        return (op, len(body), bytes(body[:4])), b"", ()

    async def main():
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        left = WorkerLink(a, 1, serve, (a_to_b, b_to_a))
        right = WorkerLink(b, 0, serve, (b_to_a, a_to_b))
        left.start()
        right.start()
        body = bytearray(os.urandom(300 * 1024))
        meta, _, _ = await left.call("patch", None, body)
        assert meta == ("patch", len(body), b"OK" + bytes(body[2:4]))
        assert seen == ["memoryview"]  # read in the region, not received from the socket
        assert a_to_b[0:2] == b"OK" and a_to_b[2:len(body)] == bytes(body[2:])
        assert left._tx.taken_bytes == 0  # free again once answered
        # Given up by its caller, a call keeps its place until the callee answers.
        held = asyncio.ensure_future(left.call("hold", None, body))
        await asyncio.sleep(0.05)
        held.cancel()
        await asyncio.sleep(0.01)
        assert left._tx.taken_bytes >= len(body)
        # Meanwhile a body larger than the free space goes through the socket.
        meta, _, _ = await left.call("patch", None, os.urandom(900 * 1024))
        assert meta[:2] == ("patch", 900 * 1024) and seen[-1] == "bytearray"
        release.set()
        for _ in range(100):
            if left._tx.taken_bytes == 0:
                break
            await asyncio.sleep(0.01)
        assert left._tx.taken_bytes == 0
        # Small bodies keep using the socket.
        await left.call("patch", None, bytearray(b"x" * 100))
        assert seen[-1] == "bytearray" and link_module.SHARED_BODY_BYTES > 100
        left.close()
        right.close()

    asyncio.run(main())


def test_a_region_place_is_free_once_no_view_of_it_is_left():
    """SharedRegion hands out views; a place is reused only when nothing in the process refers to
    it (the log or a handler may still hold a batch's view), and it knows where a view lies."""
    import mmap

    from broker.workers.link import SharedRegion

    region = SharedRegion(mmap.mmap(-1, 64 * 1024))
    offset, frame = region.allocate(20_000)
    assert offset == 0 and len(frame) == 20_000 and not frame.readonly
    frame[:5] = b"hello"
    batch = frame[100:300]  # e.g. a batch a handler still appends
    assert region.place(batch) == (100, 200)
    assert region.place(bytearray(10)) is None and region.place(b"read-only") is None
    del frame
    second, other = region.allocate(20_000)
    assert second == 20_480  # the first place is still viewed: not reused
    assert region.allocate(40_000) is None  # does not fit in what is left
    batch.release()
    third, _ = region.allocate(20_000)
    assert third == 0  # free again, lowest place first
    assert region.taken_bytes == 2 * 20_480


def test_an_unused_region_gives_its_pages_back():
    import mmap

    from broker.workers.link import SharedRegion

    backing = mmap.mmap(-1, 1024 * 1024)
    region = SharedRegion(backing)
    _, view = region.allocate(8192)
    view[:4] = b"data"
    del view
    region.trim()  # used since the last trim: kept
    assert backing[:4] == b"data"
    region.trim()  # a whole period unused: the free space's pages are removed (read back as zeros)
    assert backing[:4] == b"\0\0\0\0"


def test_a_body_already_in_the_region_is_sent_as_its_place_without_a_copy():
    """A client's Produce frame received into the worker's region (broker/server.py) is handed to
    another worker as its place: nothing more is allocated, and the frame's place stays taken
    until the callee has answered, even when the caller has let go of it."""
    import mmap

    from broker.workers.link import SharedRegion

    own, theirs = SharedRegion(mmap.mmap(-1, 1024 * 1024)), mmap.mmap(-1, 1024 * 1024)
    release = asyncio.Event()

    async def serve(op, meta, body, fds):
        await release.wait()
        return bytes(body[:4]), b"", ()

    async def main():
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        left = WorkerLink(a, 1, serve, (own, theirs))
        right = WorkerLink(b, 0, serve, (SharedRegion(theirs), own.region))
        left.start()
        right.start()
        offset, frame = own.allocate(200_000)
        frame[:] = os.urandom(200_000)
        expected = bytes(frame[:4])
        call = asyncio.ensure_future(left.call("forward", None, frame))
        await asyncio.sleep(0.05)
        del frame
        assert own.taken_bytes == 200_704  # the frame's place only: not copied
        release.set()
        assert (await call)[0] == expected
        assert own.taken_bytes == 0
        left.close()
        right.close()

    asyncio.run(main())
