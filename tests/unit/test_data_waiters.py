"""DataWaiters (broker/node.py): where a long-polling Fetch waits for an append to its partitions."""

from __future__ import annotations

import asyncio

from broker.node import DataWaiters


def test_an_append_resumes_the_parked_fetch_in_the_next_loop_iteration():
    async def scenario():
        waiters = DataWaiters()
        woke = []

        async def parked_fetch():
            woke.append(await waiters.wait([("orders", 0), ("orders", 1)], 3600))

        task = asyncio.get_running_loop().create_task(parked_fetch())
        await asyncio.sleep(0)  # the fetch parks
        assert woke == []
        waiters.notify("orders", 1)
        await asyncio.sleep(0)  # one loop iteration: no relay through further futures or callbacks
        assert woke == [True]
        await task
        return waiters

    waiters = asyncio.run(scenario())
    assert waiters._waiters == {}  # both partitions' entries are gone


def test_a_wait_without_an_append_ends_false_at_its_timeout():
    async def scenario():
        waiters = DataWaiters()
        result = await waiters.wait([("orders", 0)], 0.01)
        other = await waiters.wait([("orders", 0)], 0)
        return waiters, result, other

    waiters, result, other = asyncio.run(scenario())
    assert result is False and other is False
    assert waiters._waiters == {}


def test_an_append_to_another_partition_does_not_wake_it_and_a_cancelled_wait_leaves_nothing():
    async def scenario():
        waiters = DataWaiters()
        task = asyncio.get_running_loop().create_task(waiters.wait([("orders", 0)], 3600))
        await asyncio.sleep(0)
        waiters.notify("orders", 1)
        waiters.notify("payments", 0)
        await asyncio.sleep(0)
        assert not task.done()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        return waiters

    waiters = asyncio.run(scenario())
    assert waiters._waiters == {}
