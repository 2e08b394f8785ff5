"""Cancelling background tasks without trusting them to stop.

Python 3.11's `asyncio.wait_for` can swallow a cancellation that arrives just
as its inner future completes, leaving the task running; awaiting such a task
after `cancel()` would hang a shutdown forever. Every owner here cancels and
then waits a bounded time, and says so in the log if a task did not stop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger(__name__)


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any]], timeout: float = 5.0) -> None:
    pending = [t for t in tasks if not t.done()]
    for task in pending:
        task.cancel()
    if not pending:
        return
    _, still = await asyncio.wait(pending, timeout=timeout)
    for task in still:
        # One more cancel covers a cancellation lost inside wait_for; do not wait again.
        task.cancel()
        log.warning("background task %r did not stop within %.1f s", task, timeout)


async def sleep_or_wake(event: asyncio.Event, timeout: float) -> None:
    """Wait until `event` is set or `timeout` seconds pass, without asyncio.wait_for."""
    loop = asyncio.get_running_loop()
    timer = loop.call_later(timeout, event.set)
    try:
        await event.wait()
    finally:
        timer.cancel()
