"""Which half messages are resolved: pure state shared by END_TRANSACTION and the check service.

Half messages live in one queue (RMQ_SYS_TRANS_HALF_TOPIC, queue 0) in the
order they were stored. `half_offset` is the progress: every half message
below it is resolved (committed, rolled back, superseded by a renewed copy
or discarded). Above it, `done` holds the queue offsets that have an op
record. `op_entries` remembers, in op-queue order, which half offset each op
record names, so the op queue's own progress can follow: an op record
naming a half offset below the progress is no longer needed.

Both progresses are stored as consumer offsets of the internal group
CID_RMQ_SYS_TRANS (on the half queue and on the op queue), as RocketMQ does,
so a restart rebuilds `done` by reading the op queue from its progress only.

`reserve` makes resolution single-shot: while one END_TRANSACTION (or a
check) works on an offset, another for the same offset is told it is taken,
and once resolved it stays resolved. That is what keeps a committed message
from being written twice when a producer's late answer races a check.

Owned by the broker's event loop; not thread-safe.
"""

from __future__ import annotations

from collections import deque


class HalfProgress:
    def __init__(self, half_offset: int = 0, op_offset: int = 0) -> None:
        self.half_offset = half_offset
        self.op_offset = op_offset
        self.done: set[int] = set()
        self._busy: set[int] = set()
        #: (op queue offset, half queue offset it names), oldest first.
        self._op_entries: deque[tuple[int, int]] = deque()

    def is_resolved(self, half_offset: int) -> bool:
        return half_offset < self.half_offset or half_offset in self.done

    def reserve(self, half_offset: int) -> bool:
        """Claim `half_offset` for resolution; False when it is resolved or being resolved."""
        if self.is_resolved(half_offset) or half_offset in self._busy:
            return False
        self._busy.add(half_offset)
        return True

    def is_busy(self, half_offset: int) -> bool:
        return half_offset in self._busy

    def release(self, half_offset: int) -> None:
        self._busy.discard(half_offset)

    def record_op(self, op_offset: int, half_offset: int) -> None:
        """An op record at `op_offset` names `half_offset` (written now or read back at start)."""
        if half_offset >= self.half_offset:
            self.done.add(half_offset)
            self._op_entries.append((op_offset, half_offset))
        if not self._op_entries:
            self.op_offset = max(self.op_offset, op_offset + 1)

    def advance(self, half_offset: int, op_max_offset: int) -> bool:
        """Move the half progress to `half_offset` (never back); returns True when it moved."""
        if half_offset <= self.half_offset:
            return False
        self.half_offset = half_offset
        self.done = {o for o in self.done if o >= half_offset}
        while self._op_entries and self._op_entries[0][1] < half_offset:
            self._op_entries.popleft()
        self.op_offset = self._op_entries[0][0] if self._op_entries else max(self.op_offset, op_max_offset)
        return True
