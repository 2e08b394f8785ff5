"""ProcessQueue: the messages of one queue that were pulled and not yet consumed.

The pull loop puts each pulled batch here; consumers take them out. The queue
answers the flow-control questions (how many messages, how many bytes, how far
apart are the oldest and newest) and the offset question: the offset to
commit is that of the lowest message still in flight, so a crash redelivers
rather than loses.

Offsets arrive in increasing order (one pull at a time per queue), so a deque
of offsets plus a dict gives ordered access without a sorted tree: removed
offsets are skipped lazily at the front. Owned by the event loop thread of
the consumer; no locking.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from typing import Any, Generic, Protocol, TypeVar

#: A client that has not pulled a queue for this long gives it up in rebalance.
PULL_MAX_IDLE_MS = 120_000
#: The lock an orderly consumer holds on the broker is trusted for this long after it was taken.
LOCK_MAX_LIVE_MS = 30_000


class _Pulled(Protocol):
    @property
    def queue_offset(self) -> int: ...

    @property
    def body(self) -> bytes: ...


M = TypeVar("M", bound=_Pulled)


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


class ProcessQueue(Generic[M]):
    def __init__(self) -> None:
        self._msgs: dict[int, M] = {}
        self._order: deque[int] = deque()  # offsets in increasing order; may hold removed ones
        self._consuming: dict[int, M] = {}  # orderly: taken, not yet committed
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = -1
        self.dropped = False
        self.consuming = False  # orderly: a consume task runs for this queue
        self.locked = False
        self.last_lock_ms = _now_ms()
        self.last_pull_ms = _now_ms()
        self.last_consume_ms = _now_ms()
        #: Messages behind in the broker queue after the last pull (MAX_OFFSET - last offset).
        self.msg_acc_cnt = 0

    # --- pull side -----------------------------------------------------------

    def put_messages(self, msgs: Sequence[M]) -> bool:
        """Add pulled messages; True when an orderly consumer should be started for them."""
        for msg in msgs:
            off = msg.queue_offset
            if off in self._msgs or off in self._consuming:
                continue
            self._msgs[off] = msg
            if self._order and off < self._order[-1]:
                # Out of order only after an offset reset; rebuild the order.
                self._order = deque(sorted(set(self._order) | {off}))
            else:
                self._order.append(off)
            self.msg_count += 1
            self.msg_size += len(msg.body)
            self.queue_offset_max = max(self.queue_offset_max, off)
        dispatch = False
        if self._msgs and not self.consuming:
            dispatch = True
            self.consuming = True
        return dispatch

    def _first(self) -> int | None:
        order = self._order
        while order and order[0] not in self._msgs:
            order.popleft()
        return order[0] if order else None

    def max_span(self) -> int:
        """Offset distance between the oldest and newest message waiting (0 if none)."""
        first = self._first()
        if first is None:
            return 0
        while self._order[-1] not in self._msgs:
            self._order.pop()
        return self._order[-1] - first

    # --- concurrent consumption ---------------------------------------------

    def remove_messages(self, msgs: Sequence[M]) -> int:
        """Drop consumed messages; return the offset to commit, or -1 if nothing was held.

        The offset is the lowest offset still in flight, or one past the highest
        offset ever pulled when nothing is left.
        """
        self.last_consume_ms = _now_ms()
        if not self._msgs:
            return -1
        for msg in msgs:
            removed = self._msgs.pop(msg.queue_offset, None)
            if removed is not None:
                self.msg_count -= 1
                self.msg_size -= len(removed.body)
        first = self._first()
        return first if first is not None else self.queue_offset_max + 1

    # --- orderly consumption --------------------------------------------------

    def take_messages(self, batch_size: int) -> list[M]:
        """Move up to `batch_size` of the oldest messages to the in-consumption set."""
        self.last_consume_ms = _now_ms()
        taken: list[M] = []
        while len(taken) < batch_size:
            first = self._first()
            if first is None:
                break
            self._order.popleft()
            msg = self._msgs.pop(first)
            self._consuming[first] = msg
            taken.append(msg)
        if not taken:
            self.consuming = False
        return taken

    def commit(self) -> int:
        """Forget the in-consumption set; return the offset after it, or -1 if it was empty."""
        if not self._consuming:
            return -1
        offset = max(self._consuming) + 1
        for msg in self._consuming.values():
            self.msg_count -= 1
            self.msg_size -= len(msg.body)
        self._consuming.clear()
        return offset

    def make_messages_to_consume_again(self, msgs: Sequence[M]) -> None:
        """Put messages taken for consumption back in front, to be taken again in order."""
        back = sorted((self._consuming.pop(m.queue_offset, m) for m in msgs), key=lambda m: m.queue_offset)
        for msg in reversed(back):
            self._msgs[msg.queue_offset] = msg
            self._order.appendleft(msg.queue_offset)

    def rollback(self) -> None:
        """Put the whole in-consumption set back."""
        self.make_messages_to_consume_again(list(self._consuming.values()))

    # --- housekeeping ---------------------------------------------------------

    def clear(self) -> None:
        self._msgs.clear()
        self._order.clear()
        self._consuming.clear()
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = -1

    def is_pull_expired(self, now_ms: int | None = None) -> bool:
        return ((now_ms if now_ms is not None else _now_ms()) - self.last_pull_ms) > PULL_MAX_IDLE_MS

    def is_lock_expired(self, now_ms: int | None = None) -> bool:
        return ((now_ms if now_ms is not None else _now_ms()) - self.last_lock_ms) > LOCK_MAX_LIVE_MS

    def has_temp_message(self) -> bool:
        return bool(self._msgs)

    def info(self) -> dict[str, Any]:
        """Java's ProcessQueueInfo fields (without commitOffset), times as wall-clock ms.

        `transactionMsg*` describe the orderly in-consumption set (Java's
        consumingMsgOrderlyTreeMap); offsets of an empty set are 0 as in Java.
        """
        first = self._first()
        last = self.max_span() + first if first is not None else 0
        # Times are kept on the monotonic clock (immune to clock steps); report them as wall time.
        shift = int(time.time() * 1000) - _now_ms()
        return {
            "cachedMsgCount": len(self._msgs),
            "cachedMsgMaxOffset": last,
            "cachedMsgMinOffset": first if first is not None else 0,
            "cachedMsgSizeInMiB": self.msg_size // (1024 * 1024),
            "droped": self.dropped,  # sic: RocketMQ's field name
            "lastConsumeTimestamp": self.last_consume_ms + shift,
            "lastLockTimestamp": self.last_lock_ms + shift,
            "lastPullTimestamp": self.last_pull_ms + shift,
            "locked": self.locked,
            "transactionMsgCount": len(self._consuming),
            "transactionMsgMaxOffset": max(self._consuming, default=0),
            "transactionMsgMinOffset": min(self._consuming, default=0),
            "tryUnlockTimes": 0,  # this client never defers an unlock, so it never retries one
        }


def pull_delay_ms(
    pq: ProcessQueue[M],
    *,
    orderly: bool,
    threshold_count: int,
    threshold_size_mib: int,
    max_span: int,
) -> int:
    """How long the pull loop should wait before pulling this queue again (0 = pull now).

    RocketMQ's push-consumer flow control: too many cached messages, too many
    cached bytes, or (concurrent consumers only) an oldest-to-newest spread
    above `max_span` each delay the next pull by 50 ms.
    """
    if pq.msg_count > threshold_count:
        return 50
    if pq.msg_size > threshold_size_mib * 1024 * 1024:
        return 50
    if not orderly and pq.max_span() > max_span:
        return 50
    return 0
