"""The in-flight table of non-FIFO pops: checkpoints by merge key and revive queue (sans-IO).

A CK enters when its record is stored (or replayed at start), loses bits as acks arrive,
leaves when every message is acked (or revived). `due(now)` hands out the CKs whose
invisible time ran out; the shell revives their open messages and then `settle`s them.
`revive_offset(qid, end)` is where a replay of revive queue `qid` must start: the record
of its oldest unsettled CK, else `end` (the queue's max offset).
"""

from __future__ import annotations

import heapq
import itertools

from orbitmq.broker.pop.records import CheckPoint


class InFlight:
    def __init__(self) -> None:
        self._cks: dict[str, CheckPoint] = {}
        self._by_qid: dict[int, dict[str, CheckPoint]] = {}
        self._heap: list[tuple[int, int, CheckPoint]] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._cks)

    def add(self, ck: CheckPoint, due_at: int | None = None) -> None:
        """Track `ck` (a CK with the same key is replaced)."""
        old = self._cks.get(ck.key)
        if old is not None:
            self._forget(old)
        if ck.settled:
            return
        self._cks[ck.key] = ck
        self._by_qid.setdefault(ck.revive_qid, {})[ck.key] = ck
        heapq.heappush(self._heap, (ck.revive_time if due_at is None else due_at, next(self._seq), ck))

    def get(self, key: str) -> CheckPoint | None:
        return self._cks.get(key)

    def is_open(self, key: str, offset: int) -> bool:
        """Whether the CK `key` holds `offset` neither acked nor revived."""
        ck = self._cks.get(key)
        if ck is None:
            return False
        index = ck.index_of(offset)
        return index >= 0 and not ck.bitmap >> index & 1

    def ack(self, key: str, offsets: list[int]) -> bool:
        """Set the bits of `offsets` in CK `key`; True if one changed. A settled CK leaves."""
        ck = self._cks.get(key)
        if ck is None:
            return False
        changed = False
        for offset in offsets:
            index = ck.index_of(offset)
            if index >= 0 and not ck.bitmap >> index & 1:
                ck.bitmap |= 1 << index
                changed = True
        if ck.settled:
            self._forget(ck)
        return changed

    def settle(self, ck: CheckPoint) -> None:
        ck.bitmap = (1 << ck.num) - 1
        self._forget(ck)

    def postpone(self, ck: CheckPoint, due_at: int) -> None:
        """Try `ck` again at `due_at` (its revive failed)."""
        if self._cks.get(ck.key) is ck:
            heapq.heappush(self._heap, (due_at, next(self._seq), ck))

    def _forget(self, ck: CheckPoint) -> None:
        if self._cks.get(ck.key) is ck:
            del self._cks[ck.key]
            queue = self._by_qid.get(ck.revive_qid)
            if queue is not None:
                queue.pop(ck.key, None)

    def due(self, now: int) -> list[CheckPoint]:
        """CKs whose time has come, oldest first; each is handed out once per due time."""
        out = []
        while self._heap and self._heap[0][0] <= now:
            _, _, ck = heapq.heappop(self._heap)
            if self._cks.get(ck.key) is ck and not ck.settled:
                out.append(ck)
        return out

    def next_due(self) -> int | None:
        while self._heap:
            due_at, _, ck = self._heap[0]
            if self._cks.get(ck.key) is ck:
                return due_at
            heapq.heappop(self._heap)
        return None

    def revive_offset(self, qid: int, end: int) -> int:
        queue = self._by_qid.get(qid)
        if not queue:
            return end
        return min(min(ck.revive_offset for ck in queue.values()), end)
