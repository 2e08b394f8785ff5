"""Requests sent on one connection that still wait for their response.

Timeouts are swept in ticks instead of one loop timer per request: a timer
costs ~2 µs to arm and cancel, more than the rest of a request's bookkeeping,
and almost every request is answered long before it would fire. A request
times out at the first tick (every `TICK` seconds) at or after its deadline,
so never early and at most one tick late. An answered request leaves its
tick's bucket at once, so memory follows the requests in flight, not the
request rate times the timeout.
"""

from __future__ import annotations

import asyncio
import heapq
import math
from collections.abc import Callable

from orbitmq.errors import RequestTimeout
from orbitmq.remoting.command import RemotingCommand

#: Sweep period in seconds: the most a timeout can fire late.
TICK = 0.02

_Entry = tuple["asyncio.Future[RemotingCommand]", int, float]  # response future, deadline tick, timeout


class PendingRequests:
    """opaque -> future of the response, with timeouts.

    At most one request per opaque (callers give a re-sent command a fresh
    opaque). Owned by one connection on one event loop.
    """

    __slots__ = ("_buckets", "_describe", "_entries", "_heap", "_loop", "_sweep_tick", "_sweeper")

    def __init__(self, loop: asyncio.AbstractEventLoop, describe: Callable[[], str]) -> None:
        self._loop = loop
        self._describe = describe  # names the peer in timeout messages
        self._entries: dict[int, _Entry] = {}
        # Deadline tick -> opaques due then; `_heap` holds each tick that has a bucket, once.
        self._buckets: dict[int, set[int]] = {}
        self._heap: list[int] = []
        self._sweeper: asyncio.TimerHandle | None = None
        self._sweep_tick = 0  # the tick `_sweeper` is set for

    def __contains__(self, opaque: int) -> bool:
        return opaque in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, opaque: int, fut: asyncio.Future[RemotingCommand], timeout: float) -> None:
        """Track `fut` until `complete(opaque)` or until `timeout` seconds have passed."""
        tick = math.ceil((self._loop.time() + timeout) / TICK)
        self._entries[opaque] = (fut, tick, timeout)
        bucket = self._buckets.get(tick)
        if bucket is None:
            self._buckets[tick] = {opaque}
            heapq.heappush(self._heap, tick)
        else:
            bucket.add(opaque)
        if self._sweeper is None or tick < self._sweep_tick:
            self._schedule(tick)

    def _schedule(self, tick: int) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        self._sweep_tick = tick
        self._sweeper = self._loop.call_at(tick * TICK, self._sweep)

    def complete(self, response: RemotingCommand) -> bool:
        """Resolve the request `response` answers; False when none is waiting (late or unknown)."""
        fut = self._remove(response.opaque)
        if fut is None:
            return False
        if not fut.done():
            fut.set_result(response)
        return True

    def fail(self, opaque: int, exc: BaseException) -> bool:
        """Fail the request `opaque` with `exc`; False when none is waiting."""
        fut = self._remove(opaque)
        if fut is None:
            return False
        if not fut.done():
            fut.set_exception(exc)
        return True

    def forget(self, opaque: int) -> None:
        """Stop waiting for `opaque`; a late response is then dropped."""
        self._remove(opaque)

    def _remove(self, opaque: int) -> asyncio.Future[RemotingCommand] | None:
        entry = self._entries.pop(opaque, None)
        if entry is None:
            return None
        bucket = self._buckets.get(entry[1])
        if bucket is not None:
            bucket.discard(opaque)
        return entry[0]

    def fail_all(self, make_error: Callable[[], BaseException]) -> None:
        """Fail every waiting request (the connection is gone) and stop sweeping."""
        entries, self._entries = self._entries, {}
        self._buckets.clear()
        self._heap.clear()
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for fut, _, _ in entries.values():
            if not fut.done():
                fut.set_exception(make_error())

    def _sweep(self) -> None:
        self._sweeper = None
        now = self._loop.time()
        heap, buckets, entries = self._heap, self._buckets, self._entries
        while heap and heap[0] * TICK <= now:
            for opaque in buckets.pop(heapq.heappop(heap)):
                fut, _, timeout = entries.pop(opaque)
                if not fut.done():
                    fut.set_exception(
                        RequestTimeout(f"no response from {self._describe()} to request {opaque} within {timeout}s")
                    )
        if heap:
            if entries:
                self._schedule(heap[0])
            else:  # nothing left to time out: drop the empty buckets
                heap.clear()
                buckets.clear()
