"""FIFO (orderly) POP: order info per topic, group and queue (sans-IO; RocketMQ's ConsumerOrderInfoManager).

A FIFO pop takes a batch from a queue and blocks the queue for the group until every
message of the batch is acked or becomes visible again. The entry of a queue keeps the
batch's offsets, popTime and invisibleTime, ack bits, per-offset visibility overrides
(change-invisible) and delivery counts (each re-pop of an offset counts one more), and the
attemptId of the pop (a retried receive with the same attemptId gets the same batch).

Persisted as JSON (`to_json`/`load_json`): {"table": {"topic@group": {"qid": {...}}}} with
RocketMQ's short keys (popTime, i, o: first offset then distances, cm, ot, oc, a, l).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Entries idle this long are dropped (RocketMQ: 24 h).
IDLE_MS = 24 * 3600 * 1000


@dataclass(slots=True)
class OrderInfo:
    pop_time: int
    invisible_time: int
    offsets: list[int]
    commit_bits: int = 0
    overrides: dict[int, int] = field(default_factory=dict)
    counts: dict[int, int] = field(default_factory=dict)
    attempt_id: str | None = None
    last_update: int = 0

    def acked(self, offset: int) -> bool:
        try:
            return bool(self.commit_bits >> self.offsets.index(offset) & 1)
        except ValueError:
            return False

    def next_visible(self, offset: int) -> int:
        return self.overrides.get(offset, self.pop_time + self.invisible_time)

    def open_offsets(self) -> list[int]:
        return [o for i, o in enumerate(self.offsets) if not self.commit_bits >> i & 1]

    def blocked_until(self, now: int, attempt_id: str | None) -> int | None:
        """The time the queue is free again, or None when it is free now."""
        if attempt_id and attempt_id == self.attempt_id:
            return None
        times = [self.next_visible(o) for o in self.open_offsets()]
        times = [t for t in times if t > now]
        return max(times) if times else None

    def commit_offset(self) -> int:
        """The first offset not acked (all acked: one past the last)."""
        open_offsets = self.open_offsets()
        return open_offsets[0] if open_offsets else self.offsets[-1] + 1

    def to_json(self) -> dict[str, Any]:
        first = self.offsets[0]
        out: dict[str, Any] = {
            "popTime": self.pop_time, "i": self.invisible_time, "cm": self.commit_bits, "l": self.last_update,
            "o": [first] + [o - first for o in self.offsets[1:]],
        }
        if self.overrides:
            out["ot"] = {str(k): v for k, v in self.overrides.items()}
        if self.counts:
            out["oc"] = {str(k): v for k, v in self.counts.items() if v > 0}
        if self.attempt_id:
            out["a"] = self.attempt_id
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> OrderInfo:
        raw = [int(v) for v in obj.get("o") or []]
        if not raw:
            raise ValueError("an order info entry without offsets")
        offsets = [raw[0]] + [raw[0] + d for d in raw[1:]]
        return cls(
            pop_time=int(obj["popTime"]), invisible_time=int(obj["i"]), offsets=offsets,
            commit_bits=int(obj.get("cm", 0)),
            overrides={int(k): int(v) for k, v in (obj.get("ot") or {}).items()},
            counts={int(k): int(v) for k, v in (obj.get("oc") or {}).items()},
            attempt_id=obj.get("a") or None, last_update=int(obj.get("l", 0)),
        )


class OrderTable:
    def __init__(self) -> None:
        self._table: dict[tuple[str, str], dict[int, OrderInfo]] = {}
        self.dirty = False

    def get(self, topic: str, group: str, queue_id: int) -> OrderInfo | None:
        return self._table.get((topic, group), {}).get(queue_id)

    def blocked_until(self, topic: str, group: str, queue_id: int, now: int, attempt_id: str | None) -> int | None:
        info = self.get(topic, group, queue_id)
        return None if info is None else info.blocked_until(now, attempt_id)

    def acked_offsets(self, topic: str, group: str, queue_id: int) -> set[int]:
        """Offsets of the last batch already acked (a re-pop of the batch skips them)."""
        info = self.get(topic, group, queue_id)
        if info is None:
            return set()
        return {o for i, o in enumerate(info.offsets) if info.commit_bits >> i & 1}

    def update(
        self, topic: str, group: str, queue_id: int, pop_time: int, invisible_time: int, offsets: list[int],
        attempt_id: str | None, now: int, acked: frozenset[int] = frozenset(),
    ) -> list[int]:
        """Record a FIFO pop that read `offsets` (ascending) and delivered those not in `acked`
        (acked in the batch before: they stay in the batch as acked, so that a later re-pop skips
        them too). Returns each delivered offset's count of earlier deliveries."""
        old = self.get(topic, group, queue_id)
        counts: dict[int, int] = {}
        same_attempt = old is not None and bool(attempt_id) and attempt_id == old.attempt_id
        bits = 0
        for index, offset in enumerate(offsets):
            if offset in acked:
                bits |= 1 << index
                continue
            before = old.counts.get(offset, 0) if old is not None else 0
            again = old is not None and offset in old.offsets and not same_attempt
            counts[offset] = before + 1 if again else before
        self._table.setdefault((topic, group), {})[queue_id] = OrderInfo(
            pop_time=pop_time, invisible_time=invisible_time, offsets=list(offsets), commit_bits=bits,
            counts=counts, attempt_id=attempt_id, last_update=now,
        )
        self.dirty = True
        return [counts[o] for o in offsets if o not in acked]

    def ack(self, topic: str, group: str, queue_id: int, offset: int, pop_time: int, now: int) -> int | None:
        """Set the ack bit of `offset` in the batch popped at `pop_time`; the new commit offset,
        or None for a stale ack (another batch, or an offset not in it)."""
        info = self.get(topic, group, queue_id)
        if info is None or info.pop_time != pop_time or offset not in info.offsets:
            return None
        info.commit_bits |= 1 << info.offsets.index(offset)
        info.last_update = now
        self.dirty = True
        return info.commit_offset()

    def change_invisible(
        self, topic: str, group: str, queue_id: int, offset: int, pop_time: int, next_visible: int, now: int
    ) -> bool:
        info = self.get(topic, group, queue_id)
        if info is None or info.pop_time != pop_time or offset not in info.offsets or info.acked(offset):
            return False
        info.overrides[offset] = next_visible
        info.last_update = now
        self.dirty = True
        return True

    def clean(self, now: int) -> None:
        for key in list(self._table):
            queues = self._table[key]
            for qid in [q for q, info in queues.items() if now - info.last_update > IDLE_MS]:
                del queues[qid]
                self.dirty = True
            if not queues:
                del self._table[key]

    def to_json(self) -> dict[str, Any]:
        return {"table": {
            f"{topic}@{group}": {str(qid): info.to_json() for qid, info in queues.items()}
            for (topic, group), queues in self._table.items()
        }}

    def load_json(self, obj: Any) -> None:
        table = obj.get("table") if isinstance(obj, dict) else None
        if not isinstance(table, dict):
            return
        for key, queues in table.items():
            topic, sep, group = str(key).rpartition("@")
            if not sep or not isinstance(queues, dict):
                continue
            for qid, raw in queues.items():
                try:
                    self._table.setdefault((topic, group), {})[int(qid)] = OrderInfo.from_json(raw)
                except (KeyError, TypeError, ValueError):
                    continue  # a damaged entry only loses that queue's FIFO state
