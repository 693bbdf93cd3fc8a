"""Keyed one-shot timers on the event loop, as Kafka's CoordinatorTimer: scheduling a key again
replaces its pending timeout, so each (group, member) has at most one session deadline."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable

logger = logging.getLogger("kafka_wire.coordinator")

STOP_POLL_SECONDS = 0.5


async def stop_task(*tasks: asyncio.Future, poll: float = STOP_POLL_SECONDS) -> None:
    """Cancel the tasks and wait until every one has ended, cancelling again while one runs on.
    Once is not always enough: on Python 3.11 a cancellation that arrives while asyncio.wait_for's
    inner future completes is lost (wait_for returns the result), and a task that loops would then
    run on forever and its stop never return (a broker's shutdown hung so). What a task ended with
    (its result, its exception) is retrieved and dropped."""
    pending = {task for task in tasks if task is not None}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=poll)
    for task in tasks:
        if task is not None and not task.cancelled():
            task.exception()


class CoordinatorTimer:
    def __init__(self) -> None:
        self._handles: dict[Hashable, asyncio.TimerHandle] = {}

    def schedule(self, key: Hashable, delay_ms: float, callback: Callable[[], object]) -> None:
        self.cancel(key)
        loop = asyncio.get_running_loop()
        handle = None

        def fire() -> None:
            if self._handles.get(key) is handle:
                del self._handles[key]
            try:
                callback()
            except Exception:
                logger.exception("coordinator timer %s failed", key)

        handle = loop.call_later(max(delay_ms, 0) / 1000.0, fire)
        self._handles[key] = handle

    def cancel(self, key: Hashable) -> None:
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def is_scheduled(self, key: Hashable) -> bool:
        return key in self._handles

    def cancel_all(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()
