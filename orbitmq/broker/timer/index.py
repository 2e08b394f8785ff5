"""The index of pending timers and the checkpoint rule that keeps crashes from losing any.

Timer messages sit in the timer topic's single queue in arrival order; their
delivery times are in any order. The index holds, for every loaded timer not
yet delivered, (delivery ms, queue offset, CommitLog offset) in a heap, and
answers "what is due now". It never touches the store or a file.

Checkpoint (what `TimerCheckpoint` persists):

* `scan_offset` — queue offsets below it have been loaded into the index;
* `low_offset` — queue offsets below it have all been delivered;
* `delivered_ms` — every loaded timer (offset < scan_offset) due at or before
  this time has been delivered.

After a crash the service reloads the queue from `low_offset` and skips an
entry exactly when its offset is below the saved `scan_offset` and its time
is at or before the saved `delivered_ms` (`already_delivered`). Every other
entry is loaded again. The saved values only ever describe deliveries that
happened, so no timer is lost; timers delivered after the last save come again
(at least once).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class TimerCheckpoint:
    low_offset: int = 0
    scan_offset: int = 0
    delivered_ms: int = 0

    def to_json(self) -> dict[str, int]:
        return {"lowOffset": self.low_offset, "scanOffset": self.scan_offset, "deliveredMs": self.delivered_ms}

    @classmethod
    def from_json(cls, obj: object) -> TimerCheckpoint:
        """Raises ValueError when `obj` is not a checkpoint object."""
        if not isinstance(obj, dict):
            raise ValueError("timer checkpoint is not a JSON object")  # noqa: TRY004 - callers treat bad files as ValueError
        try:
            return cls(int(obj["lowOffset"]), int(obj["scanOffset"]), int(obj["deliveredMs"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"timer checkpoint field missing or not a number: {exc}") from exc

    def already_delivered(self, queue_offset: int, deliver_ms: int) -> bool:
        return queue_offset < self.scan_offset and deliver_ms <= self.delivered_ms


@dataclass(frozen=True, slots=True, order=True)
class TimerEntry:
    deliver_ms: int
    queue_offset: int
    commit_log_offset: int
    size: int
    #: When the timer record was stored; long waits are rolled over before retention removes it.
    stored_ms: int = 0
    #: `<real topic>+<UNIQ_KEY>`: what a delete marker (TIMER_DEL_UNIQKEY) names; "" when unknown.
    key: str = field(default="", compare=False)


class TimerIndex:
    """Pending timers, ordered by delivery time (ties by arrival). Owned by one task."""

    def __init__(self, checkpoint: TimerCheckpoint) -> None:
        self._heap: list[TimerEntry] = []
        #: Pending entries by key (the latest loaded), for delete markers and listing.
        self._by_key: dict[str, TimerEntry] = {}
        #: Queue offsets cancelled by a delete marker; their heap entries are dropped when reached.
        self._cancelled: set[int] = set()
        #: Offsets loaded and not yet delivered; `_low_heap` finds the smallest lazily.
        self._pending: set[int] = set()
        self._low_heap: list[int] = []
        self.scan_offset = checkpoint.low_offset
        self.delivered_ms = checkpoint.delivered_ms
        self._restored = checkpoint

    def __len__(self) -> int:
        return len(self._heap) - len(self._cancelled)

    def skip(self, queue_offset: int) -> None:
        """Mark an entry loaded without indexing it (delivered before, or unusable)."""
        self.scan_offset = max(self.scan_offset, queue_offset + 1)

    def load(self, entry: TimerEntry) -> bool:
        """Index one entry read at `scan_offset`; False when the checkpoint says it was delivered."""
        self.skip(entry.queue_offset)
        if self._restored.already_delivered(entry.queue_offset, entry.deliver_ms):
            return False
        heapq.heappush(self._heap, entry)
        self._pending.add(entry.queue_offset)
        heapq.heappush(self._low_heap, entry.queue_offset)
        if entry.key:
            self._by_key[entry.key] = entry
        return True

    def cancel(self, key: str) -> TimerEntry | None:
        """A delete marker for `key` was loaded: the pending entry it names (stored before the
        marker) is never delivered. Returns that entry, None when nothing pending has the key."""
        entry = self._by_key.pop(key, None)
        if entry is None or entry.queue_offset not in self._pending:
            return None
        self._cancelled.add(entry.queue_offset)
        self._pending.discard(entry.queue_offset)
        return entry

    def pending(self) -> list[TimerEntry]:
        """Every pending (not cancelled) entry, by delivery time."""
        return sorted(e for e in self._heap if e.queue_offset not in self._cancelled)

    def find(self, key: str) -> TimerEntry | None:
        entry = self._by_key.get(key)
        return entry if entry is not None and entry.queue_offset in self._pending else None

    def _drop_cancelled_top(self) -> None:
        heap = self._heap
        while heap and heap[0].queue_offset in self._cancelled:
            self._cancelled.discard(heapq.heappop(heap).queue_offset)

    def next_due_ms(self) -> int | None:
        self._drop_cancelled_top()
        return self._heap[0].deliver_ms if self._heap else None

    def pop_stored_before(self, stored_ms: int) -> list[TimerEntry]:
        """Take out every pending entry stored before `stored_ms` (to be stored again)."""
        old = [e for e in self._heap if e.stored_ms < stored_ms and e.queue_offset not in self._cancelled]
        if old:
            self._heap = [e for e in self._heap if e.stored_ms >= stored_ms or e.queue_offset in self._cancelled]
            heapq.heapify(self._heap)
        return old

    def pop_due(self, now_ms: int, limit: int) -> list[TimerEntry]:
        """Up to `limit` entries due at or before `now_ms`, earliest first. Deliver, then `done`."""
        out: list[TimerEntry] = []
        heap = self._heap
        cancelled = self._cancelled
        while heap and heap[0].deliver_ms <= now_ms and len(out) < limit:
            entry = heapq.heappop(heap)
            if entry.queue_offset in cancelled:
                cancelled.discard(entry.queue_offset)
                continue
            out.append(entry)
        return out

    def done(self, entries: list[TimerEntry]) -> None:
        for entry in entries:
            self._pending.discard(entry.queue_offset)
            if entry.key and self._by_key.get(entry.key) is entry:
                del self._by_key[entry.key]

    def put_back(self, entries: list[TimerEntry]) -> None:
        """Entries popped but not delivered (the store refused them) wait again."""
        for entry in entries:
            heapq.heappush(self._heap, entry)

    def mark_delivered_until(self, now_ms: int) -> None:
        """A round delivered everything popped as due at `now_ms` (nothing is in flight now)."""
        self.delivered_ms = max(self.delivered_ms, now_ms)

    @property
    def low_offset(self) -> int:
        low = self._low_heap
        while low and low[0] not in self._pending:
            heapq.heappop(low)
        return low[0] if low else self.scan_offset

    def checkpoint(self) -> TimerCheckpoint:
        """What may be saved now; call it only while no popped entry is being delivered.

        `delivered_ms` is capped below the earliest pending timer: after a restart,
        or when a delivery was refused, loaded timers older than the saved time
        can still be waiting, and the checkpoint must not claim them.
        """
        delivered = self.delivered_ms
        self._drop_cancelled_top()
        if self._heap:
            delivered = min(delivered, self._heap[0].deliver_ms - 1)
        return TimerCheckpoint(self.low_offset, self.scan_offset, delivered)
