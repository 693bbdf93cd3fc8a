"""coordinator.timer.stop_task: a stop that returns even when a cancellation is lost.

On Python 3.11, asyncio.wait_for returns its inner future's result when the cancellation of the
waiting task arrives in the same loop iteration as that result: the cancellation is lost. A replica
fetcher's loop (wait_for on each read) then ran on after `cancel()`, and `await task` never returned:
a worker of a cluster broker hung in its controlled shutdown (CI, test_cluster_workers).
"""

from __future__ import annotations

import asyncio

from coordinator.timer import stop_task


def test_stops_a_loop_whose_cancellation_wait_for_lost():
    async def scenario():
        loop = asyncio.get_running_loop()
        reads: list[asyncio.Future] = []

        async def fetcher():
            while True:  # as ReplicaFetcher._run: each read bounded by wait_for
                read = loop.create_future()
                reads.append(read)
                await asyncio.wait_for(read, 10)

        task = asyncio.create_task(fetcher())
        await asyncio.sleep(0)
        # The answer arrives in the same iteration as the stop (stop_task cancels before it yields).
        reads[-1].set_result(b"response")
        await stop_task(task, poll=0.05)
        assert task.done()
        return len(reads)

    assert asyncio.run(asyncio.wait_for(scenario(), 5)) >= 1


def test_stops_a_task_that_swallows_one_cancellation():
    async def scenario():
        swallowed = []

        async def stubborn():
            while True:
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    if swallowed:
                        raise
                    swallowed.append(True)  # lost once, as wait_for loses it

        task = asyncio.create_task(stubborn())
        await asyncio.sleep(0)
        await asyncio.wait_for(stop_task(task, poll=0.05), 5)
        assert task.cancelled() and swallowed == [True]

    asyncio.run(scenario())


def test_several_tasks_none_and_failures():
    async def scenario():
        async def fails():
            raise RuntimeError("boom")

        async def sleeps():
            await asyncio.sleep(10)

        failed = asyncio.create_task(fails())
        sleeping = asyncio.create_task(sleeps())
        await asyncio.sleep(0)
        await stop_task(failed, None, sleeping)  # the failure is retrieved, not raised
        assert isinstance(failed.exception(), RuntimeError) and sleeping.cancelled()
        await stop_task()  # nothing to stop

    asyncio.run(scenario())

