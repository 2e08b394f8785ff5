"""Queue locks for orderly consumers (RocketMQ's RebalanceLockManager), as pure state.

An orderly consumer locks the queues it was allocated (LOCK_BATCH_MQ) and
renews the locks every 20 s. A queue locked by one client id is not granted
to another until the owner unlocks it or the lock goes `max_live_ms`
(60 s) without renewal. The clock is passed in, so tests drive expiry.

Owned by the broker's event loop; not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from orbitmq.common.queue import MessageQueue

#: The queues locks are keyed by: `orbitmq.common.queue.MessageQueue`.
QueueKey = MessageQueue


@dataclass(slots=True)
class _Lock:
    client_id: str
    last_update_ms: int


class QueueLocks:
    def __init__(self, max_live_ms: int = 60_000) -> None:
        self.max_live_ms = max_live_ms
        self._locks: dict[str, dict[QueueKey, _Lock]] = {}

    def _expired(self, lock: _Lock, now_ms: int) -> bool:
        return now_ms - lock.last_update_ms > self.max_live_ms

    def try_lock_batch(
        self,
        group: str,
        queues: Iterable[QueueKey],
        client_id: str,
        now_ms: int,
        is_alive: Callable[[str], bool] | None = None,
    ) -> set[QueueKey]:
        """Lock or renew each queue for `client_id`; the queues it now holds.

        A queue held by another client is left out while that lock has not
        expired and (when `is_alive` is given) its owner is still connected.
        """
        table = self._locks.setdefault(group, {})
        granted: set[QueueKey] = set()
        for mq in queues:
            lock = table.get(mq)
            if (
                lock is None
                or lock.client_id == client_id
                or self._expired(lock, now_ms)
                or (is_alive is not None and not is_alive(lock.client_id))
            ):
                table[mq] = _Lock(client_id, now_ms)
                granted.add(mq)
        return granted

    def unlock_batch(self, group: str, queues: Iterable[QueueKey], client_id: str) -> None:
        """Release the queues `client_id` holds; locks of other clients stay."""
        table = self._locks.get(group)
        if not table:
            return
        for mq in queues:
            lock = table.get(mq)
            if lock is not None and lock.client_id == client_id:
                del table[mq]
        if not table:
            del self._locks[group]

    def is_locked(self, group: str, mq: QueueKey, client_id: str, now_ms: int) -> bool:
        """True when `client_id` holds a live lock on the queue."""
        lock = self._locks.get(group, {}).get(mq)
        return lock is not None and lock.client_id == client_id and not self._expired(lock, now_ms)

    def owner(self, group: str, mq: QueueKey, now_ms: int) -> str | None:
        lock = self._locks.get(group, {}).get(mq)
        if lock is None or self._expired(lock, now_ms):
            return None
        return lock.client_id
