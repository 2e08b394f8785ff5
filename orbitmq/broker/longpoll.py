"""Suspended pulls waiting for new messages (RocketMQ's PullRequestHoldService).

A pull that finds its queue drained parks here with the offset it wants. The
store's dispatch listener calls `notify(topic, queue_id, max_offset)` after
appending; every waiter of that queue whose offset is now below the max
offset is woken at once. Nothing polls: the only timer is each waiter's own
deadline. `notify` is on the append path, so it costs one dict lookup when
nobody waits.

Owned by the broker's event loop; not thread-safe.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass


@dataclass(slots=True)
class _Waiter:
    offset: int
    future: asyncio.Future[bool]


class PullWaiters:
    """Waiters per (topic, queue id)."""

    def __init__(self) -> None:
        self._waiting: dict[tuple[str, int], list[_Waiter]] = {}
        #: Set at shutdown: waiting pulls are woken and new ones do not wait.
        self.closed = False

    def __len__(self) -> int:
        return sum(len(v) for v in self._waiting.values())

    async def wait(self, topic: str, queue_id: int, offset: int, timeout_s: float) -> bool:
        """Wait until a message at or after `offset` is dispatched, or the timeout.

        Returns True when woken by a dispatch, False when the time ran out.
        """
        if timeout_s <= 0 or self.closed:
            return False
        key = (topic, queue_id)
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        waiter = _Waiter(offset, future)
        self._waiting.setdefault(key, []).append(waiter)
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except TimeoutError:
            return False
        finally:
            waiters = self._waiting.get(key)
            if waiters is not None:
                try:
                    waiters.remove(waiter)
                except ValueError:
                    pass
                if not waiters:
                    del self._waiting[key]

    def notify(self, topic: str, queue_id: int, max_offset: int) -> None:
        """A dispatch made the queue's max offset `max_offset`: wake waiters below it."""
        waiters = self._waiting.get((topic, queue_id))
        if not waiters:
            return
        for waiter in waiters:
            if waiter.offset < max_offset and not waiter.future.done():
                waiter.future.set_result(True)

    def wake_all(self) -> None:
        """Wake every waiter and stop waiting from now on (shutdown): each pull re-reads and answers."""
        self.closed = True
        for waiters in self._waiting.values():
            for waiter in waiters:
                if not waiter.future.done():
                    waiter.future.set_result(True)
