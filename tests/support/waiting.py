"""Waiting on conditions in async tests: poll a check until it holds, bounded in time, never a fixed sleep."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any


async def until(check: Callable[[], Awaitable[Any]], timeout: float = 15.0, interval: float = 0.05) -> Any:
    """Await `check()` until it returns something truthy and return that; fail after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = await check()
        if result:
            return result
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last result {result!r})")
        await asyncio.sleep(interval)
