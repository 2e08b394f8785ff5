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
from collections.abc import Iterator
from typing import Protocol

from orbitmq.common.sysflag import TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE, TRANSACTION_TYPE_MASK
from orbitmq.store.api import CommitLogDispatcher, DispatchListener, DispatchRequest
from orbitmq.store.consumequeue import ConsumeQueue
from orbitmq.store.paths import UnsafePath, check_topic_dir, store_path

log = logging.getLogger(__name__)


def is_topic_dir(topic: str) -> bool:
    """True when `topic` may name a ConsumeQueue folder (see `orbitmq.store.paths`)."""
    try:
        check_topic_dir(topic)
    except UnsafePath:
        return False
    return True


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
            # Topic names become folder names: `queue_dir` (in ConsumeQueue) refuses any
            # that would leave the store folder, with UnsafePath.
            cq = ConsumeQueue(topic, queue_id, self.root, self.file_size, self._allocator)
            self.queues[(topic, queue_id)] = cq
        return cq

    def load(self) -> None:
        """Map the files of every queue folder under the root (`<topic>/<queueId>/`)."""
        os.makedirs(self.root, exist_ok=True)
        for topic in sorted(os.listdir(self.root)):
            if not is_topic_dir(topic):
                continue  # not a folder the store made (a stray file, a name it would refuse)
            topic_dir = store_path(self.root, topic)
            if not os.path.isdir(topic_dir):
                continue
            for qid in sorted(os.listdir(topic_dir)):
                if not qid.isdigit():
                    continue
                cq = self.find_or_create(topic, int(qid))
                cq.load()

    def __iter__(self) -> Iterator[ConsumeQueue]:
        return iter(list(self.queues.values()))

    def remove_topic(self, topic: str) -> int:
        """Destroy the queues of `topic` and its folder; a name that cannot be a store
        folder (a path, `..`, a separator, RocketMQ's topic rule broken) removes nothing."""
        if not is_topic_dir(topic):
            log.warning("not deleting topic %r: it cannot name a folder of the store", topic)
            return 0
        gone = [key for key in self.queues if key[0] == topic]
        for key in gone:
            cq = self.queues.pop(key)
            self.dirty.discard(cq)
            cq.destroy()
        try:
            os.rmdir(store_path(self.root, topic))
        except OSError:
            pass  # not there, or files the store does not own are in it
        return len(gone)

    def close(self) -> None:
        for cq in self.queues.values():
            cq.close()


class KeyIndex(Protocol):
    """The index as dispatch feeds it (IndexService): one call per record, no request object."""

    def put(
        self, topic: str, keys: str, uniq_key: str, phy_offset: int, store_timestamp: int, sys_flag: int
    ) -> None: ...


class Dispatcher:
    """Builds ConsumeQueue entries and feeds the index, extra dispatchers and listeners."""

    def __init__(self, queues: ConsumeQueueTable, index: KeyIndex | None = None) -> None:
        self.queues = queues
        self.index = index
        self.dispatchers: list[CommitLogDispatcher] = []
        self.listeners: list[DispatchListener] = []
        self._wakeups: dict[tuple[str, int], int] = {}
        self._wakeup_scheduled = False

    def dispatch_batch(self, records: list[DispatchRequest]) -> None:
        """Dispatch the records of one batch put: one queue, consecutive offsets, never transactional."""
        first = records[0]
        key = (first.topic, first.queue_id)
        cq = self.queues.queues.get(key) or self.queues.find_or_create(first.topic, first.queue_id)
        self.queues.dirty.add(cq)
        cq.put_run(first.consume_queue_offset, [(r.commit_log_offset, r.msg_size, r.tags_code) for r in records])
        index_put = self.index.put if self.index is not None else None
        if index_put is not None:
            for rec in records:
                if rec.keys or rec.uniq_key:
                    index_put(rec.topic, rec.keys, rec.uniq_key, rec.commit_log_offset, rec.store_timestamp, rec.sys_flag)
        if self.dispatchers:
            for dispatcher in self.dispatchers:
                dispatcher.dispatch(records)
        if self.listeners:
            self._wakeups[key] = records[-1].consume_queue_offset + 1
            if not self._wakeup_scheduled:
                self._wakeup_scheduled = True
                asyncio.get_running_loop().call_soon(self._notify)

    def dispatch_one(self, rec: DispatchRequest) -> None:
        """`dispatch([rec])` for a single put: the same writes without the loop over records."""
        tran = rec.sys_flag & TRANSACTION_TYPE_MASK
        if tran == TRANSACTION_PREPARED_TYPE or tran == TRANSACTION_ROLLBACK_TYPE or self.dispatchers:
            self.dispatch([rec])
            return
        key = (rec.topic, rec.queue_id)
        queues = self.queues
        cq = queues.queues.get(key) or queues.find_or_create(rec.topic, rec.queue_id)
        queues.dirty.add(cq)
        cq.put(rec.commit_log_offset, rec.msg_size, rec.tags_code, rec.consume_queue_offset)
        index = self.index
        if index is not None and (rec.keys or rec.uniq_key):
            index.put(rec.topic, rec.keys, rec.uniq_key, rec.commit_log_offset, rec.store_timestamp, rec.sys_flag)
        if self.listeners:
            self._wakeups[key] = rec.consume_queue_offset + 1
            if not self._wakeup_scheduled:
                self._wakeup_scheduled = True
                asyncio.get_running_loop().call_soon(self._notify)

    def dispatch(self, records: list[DispatchRequest], notify: bool = True) -> None:
        """Write the ConsumeQueue entries and index keys of `records`, in order."""
        table = self.queues.queues
        dirty = self.queues.dirty
        wakeups = self._wakeups
        index_put = self.index.put if self.index is not None else None
        cq: ConsumeQueue | None = None
        cq_key: tuple[str, int] | None = None
        for rec in records:
            tran = rec.sys_flag & TRANSACTION_TYPE_MASK
            if tran != TRANSACTION_PREPARED_TYPE and tran != TRANSACTION_ROLLBACK_TYPE:
                key = (rec.topic, rec.queue_id)
                if key != cq_key:
                    cq_key = key
                    cq = table.get(key) or self.queues.find_or_create(rec.topic, rec.queue_id)
                    dirty.add(cq)
                assert cq is not None
                cq.put(rec.commit_log_offset, rec.msg_size, rec.tags_code, rec.consume_queue_offset)
                if notify:
                    wakeups[key] = rec.consume_queue_offset + 1
            if index_put is not None and (rec.keys or rec.uniq_key):
                index_put(rec.topic, rec.keys, rec.uniq_key, rec.commit_log_offset, rec.store_timestamp, rec.sys_flag)
        if self.dispatchers:
            for dispatcher in self.dispatchers:
                dispatcher.dispatch(records)
        if wakeups:
            if not self.listeners:
                wakeups.clear()
            elif not self._wakeup_scheduled:
                self._wakeup_scheduled = True
                asyncio.get_running_loop().call_soon(self._notify)

    def _notify(self) -> None:
        self._wakeup_scheduled = False
        wakeups, self._wakeups = self._wakeups, {}
        notify_listeners(self.listeners, wakeups)


def notify_listeners(listeners: list[DispatchListener], wakeups: dict[tuple[str, int], int]) -> None:
    """Tell every listener the new max offset of each queue in `wakeups`."""
    for listener in listeners:
        try:
            for (topic, queue_id), max_offset in wakeups.items():
                listener(topic, queue_id, max_offset)
        except Exception:  # a broken listener must not stop the others or the store
            log.exception("dispatch listener %r failed", listener)
