"""One memory budget for what the connections of a server hold on behalf of their peers.

A frame may be up to 16 MiB, and a connection buffers an unfinished frame
until its last byte arrives; output a peer does not read piles up in the
transport. Per connection that is bounded, across connections it was not
(100 connections each sending 16 MiB slowly held 1.65 GB). `MemoryBudget`
bounds the sum:

* An unfinished frame holds its declared size (length prefix included) while
  it is being received. A frame of up to `SMALL_FRAME` bytes is always let in
  (counted, never waited for), so ordinary requests split across reads never
  stall behind big ones; a bigger frame must reserve its size first. A
  connection whose reservation does not fit stops reading (the kernel's
  socket buffer, then TCP flow control, hold the peer back) and queues; when
  memory is released, queued connections are granted in arrival order. A
  connection holding a reservation is never paused by the budget, so the
  frames admitted always finish and release their share (no deadlock), and a
  frame bigger than the whole budget is admitted when nothing else is held.
* Output held by a transport above its high-water mark (a peer that does not
  read) counts against the same budget while it stays there, and that
  connection reads no more requests until the peer catches up.

So a server's unfinished large frames and stalled output never exceed the
budget; what is left outside it is bounded per connection (`SMALL_FRAME`,
the transport's read size and its high-water mark, the answers to requests
already read).

Owned by the event loop of the servers that share it; not thread-safe.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

#: The default budget: a few times the largest frame, far below a server's memory.
DEFAULT_MEMORY_BUDGET = 256 << 20
#: Frames up to this size never wait for the budget (they are still counted).
SMALL_FRAME = 64 << 10


class BudgetHolder(Protocol):
    """A connection as the budget sees it."""

    @property
    def closed(self) -> bool: ...

    def budget_granted(self, size: int) -> None:
        """The reservation of `size` bytes this holder queued for is now held: it may read again."""


class MemoryBudget:
    """Bytes held in unfinished frames and stalled output, shared by every connection of its servers."""

    __slots__ = ("_queue", "frames", "limit", "output")

    def __init__(self, limit: int = DEFAULT_MEMORY_BUDGET) -> None:
        if limit <= 0:
            raise ValueError(f"memory budget must be positive, got {limit}")
        self.limit = limit
        #: Bytes reserved by unfinished frames.
        self.frames = 0
        #: Bytes of output held above the transports' high-water marks.
        self.output = 0
        self._queue: deque[tuple[BudgetHolder, int]] = deque()

    @property
    def used(self) -> int:
        return self.frames + self.output

    @property
    def waiting(self) -> int:
        """Connections queued for a reservation."""
        return len(self._queue)

    def _fits(self, size: int) -> bool:
        return self.used + size <= self.limit or self.used == 0

    def exchange(self, holder: BudgetHolder, held: int, wanted: int) -> bool:
        """Give back `held` frame bytes and take `wanted`; False when `holder` must wait (it is queued).

        A wanted size up to SMALL_FRAME is always granted. A bigger one is
        granted now only if it fits and nobody queued before it; otherwise the
        holder is queued and `budget_granted(wanted)` is called once it is held.
        """
        self.frames -= held
        if wanted <= SMALL_FRAME or (not self._queue and self._fits(wanted)):
            self.frames += wanted
            if held > wanted:
                self._grant_queued()
            return True
        self._queue.append((holder, wanted))
        if held:
            self._grant_queued()
        return False

    def set_output(self, held: int, now: int) -> None:
        """A connection's stalled output changed from `held` to `now` bytes."""
        self.output += now - held
        if now < held:
            self._grant_queued()

    def forget(self, holder: BudgetHolder, held: int) -> None:
        """`holder` is gone: release what it held and drop it from the queue."""
        self.frames -= held
        if any(queued is holder for queued, _ in self._queue):
            self._queue = deque(entry for entry in self._queue if entry[0] is not holder)
        self._grant_queued()

    def _grant_queued(self) -> None:
        queue = self._queue
        while queue:
            holder, size = queue[0]
            if holder.closed:
                queue.popleft()
                continue
            if not self._fits(size):
                return
            queue.popleft()
            self.frames += size
            holder.budget_granted(size)
