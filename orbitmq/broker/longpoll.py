"""Suspended pulls waiting for new messages (RocketMQ's PullRequestHoldService).

A pull that finds its queue drained parks here with the offset it wants. The
store's dispatch listener calls `notify(topic, queue_id, max_offset)` after
appending; every waiter of that queue whose offset is now below the max
offset is woken at once. Nothing polls: the only timer is each waiter's own
deadline. `notify` is on the append path, so it costs one dict lookup when
nobody waits.

Parked pulls cost memory (a task, its frames, a timer: several KB each) and
RocketMQ puts no bound on them. Here `refusal(owner, max_total, max_per_owner)`
tells the pull handler when the broker-wide or the per-connection count is
reached; the handler then answers SYSTEM_BUSY ("[OVERLOAD]...", RocketMQ's
flow-control answer when its pull pool is full), which the Java and the
OrbitMQ push consumers answer by pulling again after a pause (3 s and 1 s)
instead of at once. A waiter leaves its queue in O(1), so thousands parked on
one queue do not slow each other down.

Owned by the broker's event loop; not thread-safe.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass


@dataclass(slots=True, eq=False)  # compared and hashed by identity: each is a key of its queue's dict
class _Waiter:
    offset: int
    future: asyncio.Future[bool]


class PullWaiters:
    """Waiters per (topic, queue id), counted in total and per owner (connection id)."""

    def __init__(self) -> None:
        self._waiting: dict[tuple[str, int], dict[_Waiter, None]] = {}
        self._count = 0
        self._by_owner: dict[int, int] = {}
        #: Set at shutdown: waiting pulls are woken and new ones do not wait.
        self.closed = False

    def __len__(self) -> int:
        return self._count

    def parked_by(self, owner: int) -> int:
        """Pulls of `owner` waiting now."""
        return self._by_owner.get(owner, 0)

    def refusal(self, owner: int, max_total: int, max_per_owner: int) -> str | None:
        """Why one more pull of `owner` may not park now (the remark of a SYSTEM_BUSY answer), or None."""
        if self._count >= max_total:
            return (
                f"[OVERLOAD]the broker already holds {self._count} suspended pulls "
                f"(maxSuspendedPulls={max_total}); pull again later"
            )
        mine = self._by_owner.get(owner, 0)
        if mine >= max_per_owner:
            return (
                f"[OVERLOAD]this connection already holds {mine} suspended pulls "
                f"(maxSuspendedPullsPerConnection={max_per_owner}); pull again later"
            )
        return None

    async def wait(self, topic: str, queue_id: int, offset: int, timeout_s: float, owner: int = 0) -> bool:
        """Wait until a message at or after `offset` is dispatched, or the timeout.

        Returns True when woken by a dispatch, False when the time ran out.
        """
        if timeout_s <= 0 or self.closed:
            return False
        key = (topic, queue_id)
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        waiter = _Waiter(offset, future)
        self._waiting.setdefault(key, {})[waiter] = None
        self._count += 1
        self._by_owner[owner] = self._by_owner.get(owner, 0) + 1
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except TimeoutError:
            return False
        finally:
            self._count -= 1
            left = self._by_owner[owner] - 1
            if left:
                self._by_owner[owner] = left
            else:
                del self._by_owner[owner]
            waiters = self._waiting.get(key)
            if waiters is not None:
                waiters.pop(waiter, None)
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
