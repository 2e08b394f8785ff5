"""SYNC_MASTER: waiting until the slave acknowledged a put's bytes.

Puts do not get a future each. All waiters share one future that is resolved
when the slave's acked offset advances (one future per ack, however many puts
it covers); a woken waiter whose end is still ahead waits on the next one.
Timeouts take one timer for the oldest waiter still unsatisfied, so a slave
that keeps up costs no timer callbacks at all.

Owned by the event loop that serves the sends.
"""

from __future__ import annotations

import asyncio
from collections import deque


class AckWaiters:
    """Tracks the slave's acked CommitLog offset and lets puts wait for it."""

    def __init__(self) -> None:
        #: Highest CommitLog offset a slave confirmed it holds.
        self.acked = 0
        self._advance: asyncio.Future[None] | None = None
        #: (end offset, deadline) per waiter in arrival order; entries already
        #: satisfied are dropped lazily from the left.
        self._pending: deque[tuple[int, float]] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False

    def ack(self, offset: int) -> None:
        """A slave reports holding every byte below `offset`."""
        if offset <= self.acked:
            return
        self.acked = offset
        self._wake()
        pending = self._pending
        while pending and pending[0][0] <= offset:
            pending.popleft()
        if not pending and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _wake(self) -> None:
        fut, self._advance = self._advance, None
        if fut is not None and not fut.done():
            fut.set_result(None)

    async def wait(self, end_offset: int, timeout_s: float) -> bool:
        """True once `acked >= end_offset`; False when `timeout_s` passes first."""
        if self.acked >= end_offset:
            return True
        if self._closed:
            return False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        self._pending.append((end_offset, deadline))
        if self._timer is None:
            self._arm(loop)
        if asyncio.current_task() is None:
            # Started eagerly (outside a task): the shared future must be awaited from inside
            # a task, since a task registers the future its coroutine yielded only at its own
            # first step, when another task may already have taken that future's blocking flag.
            await asyncio.sleep(0)
        while self.acked < end_offset:
            if self._closed or loop.time() >= deadline:
                return False
            fut = self._advance
            if fut is None:
                fut = self._advance = loop.create_future()
            await fut
        return True

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        pending = self._pending
        while pending and pending[0][0] <= self.acked:
            pending.popleft()
        if pending:
            self._timer = loop.call_at(pending[0][1], self._expire)

    def _expire(self) -> None:
        """The oldest unsatisfied waiter's deadline passed: wake everyone to recheck."""
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        pending = self._pending
        while pending and (pending[0][1] <= now or pending[0][0] <= self.acked):
            pending.popleft()
        self._wake()
        self._arm(loop)

    def close(self) -> None:
        """Answer every waiter not yet acknowledged with False and drop the timer."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending.clear()
        fut, self._advance = self._advance, None
        if fut is not None and not fut.done():
            fut.set_result(None)
