"""Keyed one-shot timers on the event loop, as Kafka's CoordinatorTimer: scheduling a key again
replaces its pending timeout, so each (group, member) has at most one session deadline."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable

logger = logging.getLogger("kafka_wire.coordinator")


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
