"""Rebalance: which queues this client consumes, and the process queues for them.

Clustering: every member sorts the topic's readable queues and the group's
client ids the same way and runs the same allocation strategy, so each queue
has one owner. Broadcasting: every member takes every queue. Orderly
consumers lock a queue on its broker before taking it, and keep it only while
the lock holds.

The consumer supplies the hooks (where to start pulling a new queue, what to
do when one is taken away, how to start pulling). State is owned by the
event loop; one rebalance runs at a time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Protocol

from orbitmq.client.allocate import QueueAllocator
from orbitmq.client.config import MessageModel
from orbitmq.client.instance import ClientInstance
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.client.queue import MessageQueue
from orbitmq.errors import BrokerError, ClientError, NoRouteError, RemotingError

log = logging.getLogger(__name__)

#: How soon to retry taking a queue whose broker lock another member still holds.
LOCK_RETRY_DELAY_S = 1.0


class RebalanceHooks(Protocol):
    async def compute_pull_from_where(self, mq: MessageQueue) -> int: ...
    async def remove_unnecessary_queue(self, mq: MessageQueue, pq: ProcessQueue[Any]) -> bool: ...
    def dispatch_pull(self, mq: MessageQueue, pq: ProcessQueue[Any], offset: int) -> None: ...
    async def queues_changed(self, topic: str) -> None: ...


class Rebalance:
    def __init__(
        self,
        group: str,
        model: MessageModel,
        allocator: QueueAllocator,
        instance: ClientInstance,
        hooks: RebalanceHooks,
        *,
        orderly: bool = False,
    ) -> None:
        self.group = group
        self.model = model
        self.allocator = allocator
        self.instance = instance
        self.hooks = hooks
        self.orderly = orderly
        self.process_queues: dict[MessageQueue, ProcessQueue[Any]] = {}
        self._lock = asyncio.Lock()
        self._lock_pending = False
        self._stopped = False

    async def do_rebalance(self, topics: Iterable[str]) -> None:
        """Rebalance every subscribed topic; one topic's failure does not stop the others."""
        async with self._lock:
            if self._stopped:
                return
            self._lock_pending = False
            wanted = set(topics)
            for topic in sorted(wanted):
                try:
                    changed = await self._rebalance_topic(topic)
                except NoRouteError as exc:
                    # Usual for a retry topic the broker created a moment ago; the next round finds it.
                    log.info("rebalance of %s for group %s: %s", topic, self.group, exc)
                    continue
                except (RemotingError, BrokerError, ClientError) as exc:
                    log.warning("rebalance of %s for group %s failed: %s", topic, self.group, exc)
                    continue
                if changed:
                    await self.hooks.queues_changed(topic)
            # Queues of topics no longer subscribed.
            for mq in [mq for mq in self.process_queues if mq.topic not in wanted]:
                pq = self.process_queues.pop(mq)
                pq.dropped = True
            if self._lock_pending:
                # The previous owner releases the queue once its current batch is done; ask again soon
                # rather than at the next 20 s rebalance (Java waits; the result is the same, only later).
                asyncio.get_running_loop().call_later(LOCK_RETRY_DELAY_S, self.instance.trigger_rebalance)

    async def _rebalance_topic(self, topic: str) -> bool:
        mq_set = await self.instance.subscribe_queues(topic)
        if self.model is MessageModel.BROADCASTING:
            return await self._update(topic, mq_set)
        if not mq_set:
            return False
        addr = await self.instance.any_broker_addr(topic)
        cid_all = sorted(await self.instance.api.get_consumer_id_list(addr, self.group))
        if not cid_all:
            log.warning("group %s has no consumer ids on the broker for topic %s", self.group, topic)
            return False
        mine = self.allocator.allocate(self.group, self.instance.client_id, sorted(mq_set), cid_all)
        return await self._update(topic, set(mine))

    async def _update(self, topic: str, mq_set: set[MessageQueue]) -> bool:
        changed = False
        for mq, pq in list(self.process_queues.items()):
            if mq.topic != topic:
                continue
            if mq not in mq_set or pq.is_pull_expired():
                pq.dropped = True
                if await self.hooks.remove_unnecessary_queue(mq, pq):
                    del self.process_queues[mq]
                    changed = True
                    log.info("group %s gives up %s", self.group, mq)
        for mq in sorted(mq_set):
            held = self.process_queues.get(mq)
            if held is not None and held.dropped:
                # Given up earlier without finishing (a batch was still being consumed) and ours
                # again now: start it afresh from the stored offset.
                del self.process_queues[mq]
                held = None
            if held is not None:
                continue
            fresh: ProcessQueue[Any] = ProcessQueue()
            needs_lock = self.orderly and self.model is MessageModel.CLUSTERING
            if needs_lock and not await self.lock(mq, fresh):
                log.info("group %s: %s is still locked by another member", self.group, mq)
                self._lock_pending = True
                continue
            offset = await self.hooks.compute_pull_from_where(mq)
            if offset < 0:
                log.warning("group %s: cannot decide where to start %s; retrying next rebalance", self.group, mq)
                continue
            self.process_queues[mq] = fresh
            self.hooks.dispatch_pull(mq, fresh, offset)
            changed = True
            log.info("group %s takes %s from offset %d", self.group, mq, offset)
        return changed

    async def stop(self) -> None:
        """Wait for a running rebalance to finish and refuse later ones (consumer shutdown)."""
        async with self._lock:
            self._stopped = True

    # --- broker-side queue locks (orderly consumption) ----------------------------------

    async def lock(self, mq: MessageQueue, pq: ProcessQueue[Any] | None = None) -> bool:
        addr = self.instance.master_addr(mq.broker_name)
        if addr is None:
            self.instance.refresh_route_soon(mq.topic)  # the master died: look for the new one
            return False
        try:
            locked = await self.instance.api.lock_batch(addr, self.group, self.instance.client_id, [mq])
        except (RemotingError, BrokerError) as exc:
            log.warning("lock of %s failed: %s", mq, exc)
            self.instance.failed_over(mq.topic, exc)
            return False
        pq = pq or self.process_queues.get(mq)
        ok = mq in locked
        if pq is not None and ok:
            pq.locked = True
            pq.last_lock_ms = int(time.monotonic() * 1000)
        return ok

    async def lock_all(self) -> None:
        """Renew the locks of every held queue, broker by broker (every 20 s)."""
        by_broker: dict[str, list[MessageQueue]] = defaultdict(list)
        for mq in self.process_queues:
            by_broker[mq.broker_name].append(mq)
        for broker, mqs in by_broker.items():
            addr = self.instance.master_addr(broker)
            if addr is None:
                continue
            try:
                locked = await self.instance.api.lock_batch(addr, self.group, self.instance.client_id, mqs)
            except (RemotingError, BrokerError) as exc:
                log.warning("lock renewal on %s failed: %s", broker, exc)
                for topic in sorted({mq.topic for mq in mqs}):
                    self.instance.failed_over(topic, exc)
                continue
            now = int(time.monotonic() * 1000)
            for mq in mqs:
                pq = self.process_queues.get(mq)
                if pq is None:
                    continue
                if mq in locked:
                    pq.locked = True
                    pq.last_lock_ms = now
                else:
                    pq.locked = False

    async def unlock(self, mqs: Iterable[MessageQueue], oneway: bool = False) -> None:
        by_broker: dict[str, list[MessageQueue]] = defaultdict(list)
        for mq in mqs:
            by_broker[mq.broker_name].append(mq)
        for broker, group_mqs in by_broker.items():
            addr = self.instance.master_addr(broker)
            if addr is None:
                continue
            try:
                await self.instance.api.unlock_batch(addr, self.group, self.instance.client_id, group_mqs, oneway)
            except (RemotingError, BrokerError) as exc:
                log.warning("unlock on %s failed: %s", broker, exc)
            for mq in group_mqs:
                pq = self.process_queues.get(mq)
                if pq is not None:
                    pq.locked = False
