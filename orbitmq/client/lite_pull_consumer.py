"""LitePullConsumer: `poll()` for messages; the client pulls in the background.

    consumer = LitePullConsumer("CG", namesrv_addr=...)
    consumer.subscribe("T", "*")             # group rebalancing, or consumer.assign([...])
    await consumer.start()
    msgs = await consumer.poll(timeout=1.0)
    await consumer.commit_sync()             # or auto_commit=True (the default): every 5 s

A polled batch counts as consumed: the offset to commit for its queue moves
past it (the lowest message not yet polled). With auto commit those offsets
are stored every `auto_commit_interval_ms` from inside `poll()` and at
shutdown; with `auto_commit=False`, `commit_sync()` stores them. `seek()`
moves a queue's next poll to any offset.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable
from typing import Any, NamedTuple, Unpack

from orbitmq.client import otel
from orbitmq.client.config import ConsumerOptions
from orbitmq.client.consumer import ConsumerService
from orbitmq.client.message_selector import MessageSelector, subscription_data
from orbitmq.client.offset_store import ReadOffsetType
from orbitmq.client.process_queue import ProcessQueue, pull_delay_ms
from orbitmq.client.pulling import compute_pull_from_where
from orbitmq.client.queue import MessageQueue
from orbitmq.client.rebalance import Rebalance
from orbitmq.client.results import PullStatus
from orbitmq.client.running_info import describe_consumer
from orbitmq.client.tasks import cancel_and_wait
from orbitmq.client.validation import check_topic
from orbitmq.common.filter import SUB_ALL, SubscriptionData, build_subscription
from orbitmq.common.message import MessageExt
from orbitmq.errors import BrokerError, ClientError, RemotingError
from orbitmq.remoting.sysflag import PullSysFlag

log = logging.getLogger(__name__)



class _Batch(NamedTuple):
    mq: MessageQueue
    pq: ProcessQueue[Any]
    msgs: list[MessageExt]


class LitePullConsumer(ConsumerService):
    def __init__(self, group: str, **options: Unpack[ConsumerOptions]) -> None:
        """`options` are `ConsumerConfig`'s fields (see config.py); `pull_batch_size` defaults to 10 here."""
        super().__init__(group, {"pull_batch_size": 10, **options})
        self.subscriptions: dict[str, SubscriptionData] = {}
        self._assigned: list[MessageQueue] | None = None
        self._ready: asyncio.Queue[_Batch] = asyncio.Queue()
        self._queues: dict[MessageQueue, ProcessQueue[Any]] = {}
        self._tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._paused: set[MessageQueue] = set()
        self._next_auto_commit = 0.0

    # --- configuration -------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """Consume `topic` as a member of the group (queues shared by rebalance); `expression` is a
        tag expression or a `MessageSelector`."""
        if self._assigned is not None:
            raise ClientError("subscribe and assign cannot be mixed")
        check_topic(topic)
        self.subscriptions[topic] = subscription_data(topic, expression)

    def assign(self, mqs: Iterable[MessageQueue]) -> None:
        """Consume exactly these queues (no rebalance); may be called again to change them."""
        if self.subscriptions and self._assigned is None:
            raise ClientError("subscribe and assign cannot be mixed")
        self._assigned = sorted(set(mqs))
        for mq in self._assigned:
            self.subscriptions.setdefault(mq.topic, build_subscription(mq.topic, SUB_ALL))
        if self._instance is not None:
            self._apply_assignment()

    # --- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        if self._instance is not None:
            return
        instance = await self.join()
        self.rebalancer = Rebalance(self.group, self.config.message_model, self.config.allocate_strategy,
                                    instance, self)
        self._next_auto_commit = time.monotonic() + self.config.auto_commit_interval_ms / 1000
        for topic in self.subscriptions:
            with contextlib.suppress(RemotingError, BrokerError, ClientError):
                await instance.update_route(topic)
        try:
            await instance.check_client_in_broker(self.group, self.subscription_datas())
        except BaseException:
            await self.shutdown()
            raise
        if self._assigned is not None:
            self._apply_assignment()
        else:
            await instance.send_heartbeat_to_all()
            await self.rebalance()

    async def shutdown(self) -> None:
        instance, self._instance = self._instance, None
        if instance is None:
            return
        await self.rebalancer.stop()
        await cancel_and_wait(self._tasks.values())
        self._tasks.clear()
        if self.config.auto_commit:
            await self._commit(oneway=False)
        await self.leave(instance)

    # --- polling -----------------------------------------------------------------------------------

    async def poll(self, timeout: float | None = None) -> list[MessageExt]:
        """The next pulled batch, or [] when none arrives within `timeout` seconds."""
        if otel.INSTALLED and (tracer := otel.tracer()) is not None:
            return await otel.receiving(tracer, self.group, "", self._poll(timeout), lambda msgs: msgs)
        return await self._poll(timeout)

    async def _poll(self, timeout: float | None) -> list[MessageExt]:
        self.instance  # noqa: B018 - raises when not started
        if self.config.auto_commit and time.monotonic() >= self._next_auto_commit:
            self._next_auto_commit = time.monotonic() + self.config.auto_commit_interval_ms / 1000
            await self._commit(oneway=True)
        wait = self.config.poll_timeout_ms / 1000 if timeout is None else timeout
        deadline = time.monotonic() + wait
        while True:
            remaining = deadline - time.monotonic()
            try:
                batch = await asyncio.wait_for(self._ready.get(), max(remaining, 0.0)) if remaining > 0 \
                    else self._ready.get_nowait()
            except (TimeoutError, asyncio.QueueEmpty):
                return []
            if batch.pq.dropped or batch.mq in self._paused:
                if batch.mq in self._paused and not batch.pq.dropped:
                    # Paused queues keep their batches for later.
                    self._ready.put_nowait(batch)
                    if remaining <= 0:
                        return []
                    await asyncio.sleep(min(0.05, max(remaining, 0.0)))
                continue
            offset = batch.pq.remove_messages(batch.msgs)
            if offset >= 0:
                self.offset_store.update_offset(batch.mq, offset, True)
            return batch.msgs

    async def commit_sync(self) -> None:
        """Store the offsets reached by `poll()` on the broker (or in the local file) now."""
        await self._commit(oneway=False)

    async def _commit(self, oneway: bool) -> None:
        await self._persist(list(self._queues), oneway)

    async def committed(self, mq: MessageQueue) -> int:
        """The stored offset of `mq` (-1 when none)."""
        return await self.offset_store.read_offset(mq, ReadOffsetType.STORE)

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Make the next polls of `mq` start at `offset` (which must lie within [min, max])."""
        if mq not in self._queues:
            raise ClientError(f"The message queue is not in assigned list, may be rebalancing, message queue: {mq}")
        low, high = await self.lookups.min_offset(mq), await self.lookups.max_offset(mq)
        if not low <= offset <= high:
            raise ClientError(f"Seek offset illegal, seek offset = {offset}, min offset = {low}, max offset = {high}")
        self._restart(mq, offset)
        self.offset_store.update_offset(mq, offset, False)

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.lookups.min_offset(mq))

    async def seek_to_end(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.lookups.max_offset(mq))

    def pause(self, mqs: Iterable[MessageQueue]) -> None:
        self._paused.update(mqs)

    def resume(self, mqs: Iterable[MessageQueue]) -> None:
        self._paused.difference_update(mqs)

    def assignment(self) -> set[MessageQueue]:
        return set(self._queues)

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        return sorted(await self.instance.subscribe_queues(topic))

    # --- queue management -----------------------------------------------------------------------

    def _apply_assignment(self) -> None:
        wanted = set(self._assigned or [])
        for mq in list(self._queues):
            if mq not in wanted:
                self._drop(mq)
        for mq in wanted - set(self._queues):
            pq: ProcessQueue[Any] = ProcessQueue()
            self._queues[mq] = pq
            self._tasks[mq] = asyncio.ensure_future(self._start_queue(mq, pq))

    async def _start_queue(self, mq: MessageQueue, pq: ProcessQueue[Any]) -> None:
        while not pq.dropped:
            offset = await self.compute_pull_from_where(mq)
            if offset >= 0:
                await self._pull_loop(mq, pq, offset)
                return
            await asyncio.sleep(self.config.pull_time_delay_ms_when_exception / 1000)

    def _drop(self, mq: MessageQueue) -> None:
        pq = self._queues.pop(mq, None)
        if pq is not None:
            pq.dropped = True
        task = self._tasks.pop(mq, None)
        if task is not None:
            task.cancel()

    def _restart(self, mq: MessageQueue, offset: int) -> None:
        self._drop(mq)
        pq: ProcessQueue[Any] = ProcessQueue()
        self._queues[mq] = pq
        if self._assigned is None:
            self.rebalancer.process_queues[mq] = pq
        self._tasks[mq] = asyncio.ensure_future(self._pull_loop(mq, pq, offset))

    async def _pull_loop(self, mq: MessageQueue, pq: ProcessQueue[Any], offset: int) -> None:
        cfg = self.config
        sd = self.subscriptions.get(mq.topic) or build_subscription(mq.topic, SUB_ALL)
        while not pq.dropped:
            if mq in self._paused:
                await asyncio.sleep(1.0)
                continue
            if self._ready.qsize() * cfg.pull_batch_size > cfg.pull_threshold_for_all:
                await asyncio.sleep(0.05)
                continue
            delay = pull_delay_ms(pq, orderly=False, threshold_count=cfg.pull_threshold_for_queue,
                                  threshold_size_mib=cfg.pull_threshold_size_for_queue,
                                  max_span=cfg.consume_concurrently_max_span)
            if delay:
                await asyncio.sleep(delay / 1000)
                continue
            pq.last_pull_ms = int(time.monotonic() * 1000)
            try:
                result = await self.pulling.pull(
                    mq, sd, offset, cfg.pull_batch_size,
                    PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION | PullSysFlag.LITE_PULL_MESSAGE, 0,
                    cfg.broker_suspend_max_time_ms, cfg.consumer_timeout_when_suspend_ms / 1000,
                    send_expression=True,
                )
            except asyncio.CancelledError:
                raise
            except (BrokerError, RemotingError, ClientError) as exc:
                log.info("pull of %s failed: %s", mq, exc)
                await asyncio.sleep(cfg.pull_time_delay_ms_when_exception / 1000)
                continue
            if pq.dropped:
                break
            if result.status is PullStatus.FOUND:
                offset = result.next_begin_offset
                if result.messages:
                    pq.put_messages(result.messages)
                    self._ready.put_nowait(_Batch(mq, pq, result.messages))
                elif pq.msg_count == 0:
                    self.offset_store.update_offset(mq, offset, True)
            elif result.status is PullStatus.OFFSET_ILLEGAL:
                log.warning("offset %d of %s is illegal; moving to %d", offset, mq, result.next_begin_offset)
                offset = result.next_begin_offset
                self.offset_store.update_offset(mq, offset, False)
            else:
                offset = result.next_begin_offset
                if pq.msg_count == 0:
                    self.offset_store.update_offset(mq, offset, True)

    # --- ConsumerMember and RebalanceHooks --------------------------------------------------------

    async def running_info(self) -> dict[str, Any]:
        """ConsumerRunningInfo as Java's DefaultLitePullConsumerImpl fills it (GET_CONSUMER_RUNNING_INFO)."""
        self.instance  # noqa: B018 - raises when not started
        return await describe_consumer(self.config, self.subscriptions.values(), self._queues, self.offset_store, {
            "PROP_CONSUMER_START_TIMESTAMP": str(self._started_ms),
            "PROP_CONSUME_TYPE": "CONSUME_ACTIVELY",
        })

    def subscription_datas(self) -> Iterable[SubscriptionData]:
        return self.subscriptions.values()

    def subscribed_topics(self) -> set[str]:
        return set(self.subscriptions)

    async def rebalance(self) -> None:
        if self._instance is not None and self._assigned is None:
            await self.rebalancer.do_rebalance(self.subscriptions)

    async def persist_offsets(self) -> None:
        """Auto commit happens in poll(); the periodic job only covers a consumer that stopped polling."""
        if self._instance is not None and self.config.auto_commit:
            await self._commit(oneway=True)

    async def on_offset_reset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        for mq, offset in offsets.items():
            if mq.topic == topic and mq in self._queues:
                self._restart(mq, offset)
                self.offset_store.update_offset(mq, offset, False)

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        return await compute_pull_from_where(self.config, self.offset_store, self.lookups, mq)

    async def remove_unnecessary_queue(self, mq: MessageQueue, pq: ProcessQueue[Any]) -> bool:
        self._drop(mq)
        await self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        return True

    def dispatch_pull(self, mq: MessageQueue, pq: ProcessQueue[Any], offset: int) -> None:
        self._queues[mq] = pq
        self._tasks[mq] = asyncio.ensure_future(self._pull_loop(mq, pq, offset))

    async def queues_changed(self, topic: str) -> None:
        instance = self._instance
        if instance is not None:  # None while shutting down
            await instance.send_heartbeat_to_all()
