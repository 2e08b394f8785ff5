"""Flushing the CommitLog: SYNC_FLUSH group commit and ASYNC_FLUSH by interval.

Group commit: a put that must be durable registers (end offset, deadline)
and awaits. While no fsync runs, the next loop turn starts one covering
everything appended so far; puts that arrive while it runs wait for the next
one. So one fsync acknowledges every put of a burst, and the loop keeps
appending while the worker thread fsyncs. A put whose fsync has not finished
by its deadline is answered FLUSH_DISK_TIMEOUT (its record stays stored).

Ownership: the waiter queue is owned by the event loop; only the blocking
`flush` callable runs in the flush executor.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import enum
import logging
import time
from collections import deque
from collections.abc import Callable

log = logging.getLogger(__name__)


class FlushOutcome(enum.Enum):
    FLUSHED = "FLUSHED"
    TIMEOUT = "TIMEOUT"
    FAILED = "FAILED"


class GroupCommit:
    """Acknowledges puts once an fsync covers their records."""

    def __init__(
        self,
        flush: Callable[[], int],
        max_offset: Callable[[], int],
        executor: concurrent.futures.Executor,
        timeout_ms: int,
        on_flushed: Callable[[int], None] | None = None,
    ) -> None:
        #: Blocking: fsync what was written, return the durable offset.
        self._flush = flush
        self._max_offset = max_offset
        self._executor = executor
        self._timeout_s = timeout_ms / 1000.0
        self._on_flushed = on_flushed
        self._waiters: deque[tuple[int, float, asyncio.Future[FlushOutcome]]] = deque()
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self.flushed_offset = 0
        #: Bumped by `truncated`: an fsync that started before does not move `flushed_offset`.
        self._generation = 0
        #: The first fsync error; once set every later wait fails at once (sticky, as a
        #: failed fsync may have dropped dirty pages we can no longer vouch for).
        self.error: OSError | None = None

    def wait(self, end_offset: int) -> asyncio.Future[FlushOutcome]:
        """A future resolved when `end_offset` is durable (or the wait times out or fails)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[FlushOutcome] = loop.create_future()
        if self.error is not None:
            fut.set_result(FlushOutcome.FAILED)
            return fut
        if end_offset <= self.flushed_offset:
            fut.set_result(FlushOutcome.FLUSHED)
            return fut
        deadline = loop.time() + self._timeout_s
        self._waiters.append((end_offset, deadline, fut))
        if self._task is None:
            self._task = loop.create_task(self._run())
        if self._timer is None:
            self._timer = loop.call_at(deadline, self._expire)
        return fut

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            # Yield once so every put of this loop turn joins the first fsync.
            await asyncio.sleep(0)
            while self._waiters:
                target = self._max_offset()
                generation = self._generation
                try:
                    await loop.run_in_executor(self._executor, self._flush)
                except OSError as exc:
                    log.error("CommitLog fsync failed; refusing further durable puts: %s", exc)
                    self.error = exc
                    self._resolve_all(FlushOutcome.FAILED)
                    return
                if generation != self._generation:
                    continue  # truncated during the fsync: `target` may lie past the cut; fsync again
                self.flushed_offset = max(self.flushed_offset, target)
                waiters = self._waiters
                while waiters and waiters[0][0] <= target:
                    fut = waiters.popleft()[2]
                    if not fut.done():
                        fut.set_result(FlushOutcome.FLUSHED)
                if self._on_flushed is not None:
                    self._on_flushed(target)
        finally:
            self._task = None

    def truncated(self, offset: int) -> None:
        """The CommitLog was cut back to `offset` (on the loop): the durable offset is at most
        that, an fsync running now vouches for nothing, and puts waiting for bytes past the cut
        are answered FAILED (their records are gone)."""
        self._generation += 1
        self.flushed_offset = min(self.flushed_offset, offset)
        kept: deque[tuple[int, float, asyncio.Future[FlushOutcome]]] = deque()
        for end, deadline, fut in self._waiters:
            if end <= offset:
                kept.append((end, deadline, fut))
            elif not fut.done():
                fut.set_result(FlushOutcome.FAILED)
        self._waiters = kept

    def _expire(self) -> None:
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        waiters = self._waiters
        while waiters and waiters[0][1] <= now:
            fut = waiters.popleft()[2]
            if not fut.done():
                fut.set_result(FlushOutcome.TIMEOUT)
        if waiters:
            self._timer = loop.call_at(waiters[0][1], self._expire)

    def _resolve_all(self, outcome: FlushOutcome) -> None:
        while self._waiters:
            fut = self._waiters.popleft()[2]
            if not fut.done():
                fut.set_result(outcome)

    async def close(self) -> None:
        """Let the running fsync finish, fsync once more for waiters still queued, answer them."""
        task = self._task
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        outcome = FlushOutcome.FAILED if self.error else FlushOutcome.FLUSHED
        if self._waiters and self.error is None:
            try:
                await asyncio.get_running_loop().run_in_executor(self._executor, self._flush)
            except OSError as exc:
                self.error = exc
                outcome = FlushOutcome.FAILED
        self._resolve_all(outcome)


class IntervalFlush:
    """ASYNC_FLUSH and the ConsumeQueue/index flush: every `interval_ms`, flush when at
    least `least_pages` 4 KiB pages are dirty, or any dirty byte once `thorough_ms`
    passed since the last flush."""

    PAGE = 4096

    def __init__(
        self,
        name: str,
        flush: Callable[[], Callable[[], None]],
        dirty_bytes: Callable[[], int],
        executor: concurrent.futures.Executor,
        interval_ms: int,
        least_pages: int,
        thorough_ms: int,
    ) -> None:
        self.name = name
        #: Called on the loop: snapshots what to flush and returns the blocking work.
        self._flush = flush
        self._dirty_bytes = dirty_bytes
        self._executor = executor
        self._interval_s = interval_ms / 1000.0
        self._least_bytes = max(0, least_pages) * self.PAGE
        self._thorough_s = thorough_ms / 1000.0
        self._last = time.monotonic()
        self.error: OSError | None = None

    async def run(self) -> None:
        """Loop until cancelled."""
        while True:
            await asyncio.sleep(self._interval_s)
            await self.flush_if_needed()

    async def flush_if_needed(self, force: bool = False) -> None:
        dirty = self._dirty_bytes()
        now = time.monotonic()
        thorough = now - self._last >= self._thorough_s
        if dirty <= 0 or not (force or thorough or dirty >= self._least_bytes):
            return
        self._last = now
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._flush())
        except OSError as exc:
            log.error("%s flush failed: %s", self.name, exc)
            self.error = exc
