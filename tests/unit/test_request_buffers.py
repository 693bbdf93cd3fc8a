"""Request buffers (broker/server.py): the large-frame pool all connections share, heap trimming."""

from broker.server import SPARE_KEPT_MAX_BYTES, SpareFrames


def test_a_finished_buffer_serves_the_next_frame_of_any_size_it_holds():
    spares = SpareFrames(limit=4 << 20)
    buffer = bytearray(1 << 20)
    spares.give(buffer)
    del buffer
    assert spares.take(2 << 20) is None  # too small for this frame
    taken = spares.take(900_000)
    assert taken is not None and len(taken) == 1 << 20
    assert spares.take(900_000) is None  # handed out once
    assert spares.held_bytes == 0


def test_a_buffer_still_viewed_by_a_request_is_not_handed_out():
    spares = SpareFrames(limit=4 << 20)
    buffer = bytearray(1 << 20)
    spares.give(buffer)
    records = memoryview(buffer)[100:200]  # e.g. the log still writing the request's records
    del buffer
    assert spares.take(1000) is None
    records.release()
    assert spares.take(1000) is not None


def test_the_spares_hold_at_most_their_limit_however_many_connections_finish_frames():
    spares = SpareFrames(limit=3 << 20)
    for _ in range(1000):  # a thousand producing connections, one 1 MiB request each
        spares.give(bytearray(1 << 20))
    assert spares.held_bytes == 3 << 20


def test_a_frame_buffer_larger_than_a_spare_may_be_is_not_kept():
    spares = SpareFrames(limit=64 << 20)
    spares.give(bytearray(SPARE_KEPT_MAX_BYTES + 1))
    assert spares.held_bytes == 0


def test_the_heap_trimmer_trims_on_its_timer_and_stops():
    import asyncio

    from broker.server import HeapTrimmer

    async def run():
        trimmer = HeapTrimmer()
        trimmer.TRIM_SECONDS = 0.01
        trimmer.start(asyncio.get_running_loop())
        await asyncio.sleep(0.05)
        trimmed = trimmer._trim is not None
        trimmer.stop()
        return trimmed, trimmer._timer

    trimmed, timer = asyncio.run(run())
    assert trimmed  # glibc's malloc_trim was found and called (this project runs on Linux/glibc)
    assert timer is None


def test_spares_no_frame_took_for_a_trim_period_are_let_go():
    spares = SpareFrames(limit=64 << 20)
    spares.give(bytearray(1 << 20))
    spares.give(bytearray(1 << 20))
    assert spares.take(1000) is not None  # under load: kept through the next trim
    spares.release_unused()
    assert spares.held_bytes == 1 << 20
    spares.release_unused()  # a period with no large frame: the load has stopped
    assert spares.held_bytes == 0 and spares.take(1000) is None


def test_the_heap_trimmer_lets_unused_spares_go_before_it_trims():
    import asyncio

    from broker.server import HeapTrimmer

    spares = SpareFrames(limit=64 << 20)
    spares.give(bytearray(4 << 20))

    async def run():
        trimmer = HeapTrimmer(spares)
        trimmer.TRIM_SECONDS = 0.01
        trimmer.start(asyncio.get_running_loop())
        await asyncio.sleep(0.05)
        trimmer.stop()

    asyncio.run(run())
    assert spares.held_bytes == 0


def test_a_frame_buffer_is_rounded_up_so_the_next_slightly_larger_frame_fits_its_spare():
    from broker.server import FRAME_CAPACITY_MIN_STEP, frame_capacity

    assert frame_capacity(10_340_121) == 10 << 20  # an eighth of 8 MiB: 1 MiB steps
    assert frame_capacity(8 << 20) == 8 << 20
    assert frame_capacity(20_000) == FRAME_CAPACITY_MIN_STEP
    for size in (16_385, 300_000, 2_000_001, 10_340_121, 16 << 20):
        assert size <= frame_capacity(size) <= size * 1.125 or frame_capacity(size) == FRAME_CAPACITY_MIN_STEP
    spares = SpareFrames(limit=64 << 20)
    spares.give(bytearray(frame_capacity(10_340_121)))
    assert spares.take(10_340_909) is not None  # the next request, 788 bytes longer


def test_a_frame_takes_the_smallest_spare_that_holds_it():
    spares = SpareFrames(limit=64 << 20)
    spares.give(bytearray(8 << 20))
    spares.give(bytearray(1 << 20))
    spares.give(bytearray(4 << 20))
    taken = spares.take(900_000)
    assert len(taken) == 1 << 20
    assert len(spares.take(5 << 20)) == 8 << 20  # the 8 MiB one was still there for it
