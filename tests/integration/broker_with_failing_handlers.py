"""A kafka-wire broker whose Heartbeat, Fetch and Produce handlers fail on purpose for the group or
topic named "boom" (arguments as `kafka-wire`): how the broker answers a handler that raises.

Heartbeat fails before its first wait (inline), Fetch after one (in a task), Produce inline."""

from __future__ import annotations

import asyncio
import dataclasses
import sys

from cli.main import main
from broker.handlers import HANDLERS

TRIGGER = "boom"


def _failing(key: int, wait_first: bool, is_trigger) -> None:
    original = HANDLERS[key]

    async def handle(broker, ctx, request):
        if is_trigger(request):
            if wait_first:
                await asyncio.sleep(0.01)
            raise RuntimeError(f"deliberate failure of {original.api.name} for the test")
        return await original.handle(broker, ctx, request)

    HANDLERS[key] = dataclasses.replace(original, handle=handle)


_failing(12, False, lambda request: request.group_id == TRIGGER)
_failing(1, True, lambda request: any(topic.topic == TRIGGER for topic in request.topics))
_failing(0, False, lambda request: any(topic.name == TRIGGER for topic in request.topic_data))

if __name__ == "__main__":
    sys.exit(main())
