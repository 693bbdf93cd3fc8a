"""`kill -USR1 <broker pid>`: every asyncio task's stack, written to the broker's log.

What `jstack` is to a Kafka broker: when a broker stops answering, or hangs in its shutdown, the
tasks show what each request, fetcher and coordinator is waiting for. With several workers the
supervisor passes the signal on to each worker, and each logs its own tasks (the log lines carry
the worker's index). Nothing else changes: the broker goes on serving.
"""

from __future__ import annotations

import asyncio
import io
import logging
import signal

logger = logging.getLogger("kafka_wire.tasks")

STACK_LIMIT = 12  # frames per task


def dump_tasks() -> str:
    """The stack of every task of the running loop, as text."""
    out = io.StringIO()
    tasks = sorted(asyncio.all_tasks(), key=lambda t: t.get_name())
    out.write(f"{len(tasks)} asyncio tasks\n")
    for task in tasks:
        task.print_stack(limit=STACK_LIMIT, file=out)
    return out.getvalue()


def install(loop: asyncio.AbstractEventLoop) -> None:
    """SIGUSR1 logs the loop's tasks (at WARNING: logged whatever the level)."""
    loop.add_signal_handler(signal.SIGUSR1, lambda: logger.warning("SIGUSR1: %s", dump_tasks()))
