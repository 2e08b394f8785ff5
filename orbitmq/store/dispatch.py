"""Dispatch: turning appended records into ConsumeQueue entries, index entries and wake-ups.

Runs in the same event-loop turn as the append (no polling thread), so a
record is readable by queue as soon as its put returns. Extra dispatchers
(the index) receive `DispatchRequest`s; dispatch listeners (long polling) are
called once per queue per loop turn, after the turn's appends, with the
queue's new max offset.

Ownership: the ConsumeQueue table, the dirty set and the pending wake-ups are
owned by the event loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
from collections.abc import Iterable, Iterator

from orbitmq.common import properties as mc
from orbitmq.common.names import is_name_legal
from orbitmq.common.record import (
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from orbitmq.store.api import CommitLogDispatcher, DispatchListener, DispatchRequest
from orbitmq.store.commitlog import Appended
from orbitmq.store.consumequeue import ConsumeQueue

log = logging.getLogger(__name__)
_NOT_CONSUMABLE = (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)


class ConsumeQueueTable:
    """All ConsumeQueues of the store, created on first use."""

    def __init__(self, root: str, file_size: int, allocator: concurrent.futures.Executor | None = None) -> None:
        self.root = root
        self.file_size = file_size
        self.queues: dict[tuple[str, int], ConsumeQueue] = {}
        #: Queues written since their last flush.
        self.dirty: set[ConsumeQueue] = set()
        self._allocator = allocator

    def find(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self.queues.get((topic, queue_id))

    def find_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = self.queues.get((topic, queue_id))
        if cq is None:
            if not is_name_legal(topic) or queue_id < 0:
                # Topic names become folder names: never let one leave the store folder.
                raise ValueError(f"topic {topic!r} / queue {queue_id} cannot name a consume queue")
            cq = ConsumeQueue(topic, queue_id, self.root, self.file_size, self._allocator)
            self.queues[(topic, queue_id)] = cq
        return cq

    def load(self) -> None:
        """Map the files of every queue folder under the root (`<topic>/<queueId>/`)."""
        os.makedirs(self.root, exist_ok=True)
        for topic in sorted(os.listdir(self.root)):
            topic_dir = os.path.join(self.root, topic)
            if not os.path.isdir(topic_dir) or not is_name_legal(topic):
                continue
            for qid in sorted(os.listdir(topic_dir)):
                if not qid.isdigit():
                    continue
                cq = self.find_or_create(topic, int(qid))
                cq.load()

    def __iter__(self) -> Iterator[ConsumeQueue]:
        return iter(list(self.queues.values()))

    def remove_topic(self, topic: str) -> int:
        gone = [key for key in self.queues if key[0] == topic]
        for key in gone:
            cq = self.queues.pop(key)
            self.dirty.discard(cq)
            cq.destroy()
        try:
            os.rmdir(os.path.join(self.root, topic))
        except OSError:
            pass
        return len(gone)

    def close(self) -> None:
        for cq in self.queues.values():
            cq.close()


class Dispatcher:
    """Builds ConsumeQueue entries and feeds extra dispatchers and listeners."""

    def __init__(self, queues: ConsumeQueueTable) -> None:
        self.queues = queues
        self.dispatchers: list[CommitLogDispatcher] = []
        self.listeners: list[DispatchListener] = []
        self._wakeups: dict[tuple[str, int], int] = {}
        self._wakeup_scheduled = False

    def dispatch(self, records: Iterable[Appended], notify: bool = True) -> None:
        """Write the ConsumeQueue entries of `records` and hand them to the extra dispatchers."""
        queues = self.queues
        dirty = queues.dirty
        wakeups = self._wakeups
        batch = records if isinstance(records, list) else list(records)
        for rec in batch:
            if rec.sys_flag & TRANSACTION_TYPE_MASK in _NOT_CONSUMABLE:
                continue
            key = (rec.topic, rec.queue_id)
            cq = queues.queues.get(key) or queues.find_or_create(rec.topic, rec.queue_id)
            cq.put(rec.phys_offset, rec.size, rec.tags_code, rec.queue_offset)
            dirty.add(cq)
            if notify:
                wakeups[key] = rec.queue_offset + 1
        if self.dispatchers:
            requests = [_request(rec) for rec in batch]
            for dispatcher in self.dispatchers:
                dispatcher.dispatch(requests)
        if notify and wakeups and self.listeners and not self._wakeup_scheduled:
            self._wakeup_scheduled = True
            asyncio.get_running_loop().call_soon(self._notify)
        elif not self.listeners:
            wakeups.clear()

    def _notify(self) -> None:
        self._wakeup_scheduled = False
        wakeups, self._wakeups = self._wakeups, {}
        for listener in self.listeners:
            try:
                for (topic, queue_id), max_offset in wakeups.items():
                    listener(topic, queue_id, max_offset)
            except Exception:  # a broken listener must not stop the others or the store
                log.exception("dispatch listener %r failed", listener)


def _request(rec: Appended) -> DispatchRequest:
    props = rec.properties
    return DispatchRequest(
        topic=rec.topic,
        queue_id=rec.queue_id,
        commit_log_offset=rec.phys_offset,
        msg_size=rec.size,
        tags_code=rec.tags_code,
        store_timestamp=rec.store_timestamp,
        consume_queue_offset=rec.queue_offset,
        keys=props.get(mc.KEYS, ""),
        uniq_key=props.get(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, ""),
        sys_flag=rec.sys_flag,
        prepared_transaction_offset=rec.prepared_transaction_offset,
    )
