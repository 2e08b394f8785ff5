"""PullConsumer: the application pulls queues itself and keeps (or stores) the offsets.

    consumer = PullConsumer("CG", namesrv_addr=...)
    await consumer.start()
    for mq in await consumer.fetch_subscribe_message_queues("T"):
        result = await consumer.pull(mq, "*", offset, 32)
        ...
        await consumer.update_consume_offset(mq, result.next_begin_offset)

Offsets given to `update_consume_offset` are kept in memory and stored on the
broker every 5 s and at shutdown (clustering) or in a local file
(broadcasting); `fetch_consume_offset` reads them back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Unpack

from orbitmq.client import otel
from orbitmq.client.config import ConsumerOptions
from orbitmq.client.consumer import ConsumerService
from orbitmq.client.message_selector import MessageSelector, subscription_data
from orbitmq.client.offset_store import ReadOffsetType
from orbitmq.client.queue import MessageQueue
from orbitmq.client.results import PullResult
from orbitmq.common.filter import SubscriptionData
from orbitmq.common.message import MessageExt
from orbitmq.errors import ClientError
from orbitmq.remoting.sysflag import PullSysFlag

#: A non-blocking pull still asks the broker to hold it this long at most (DefaultMQPullConsumer's 20 s).
BLOCK_SUSPEND_MS = 20_000


class PullConsumer(ConsumerService):
    def __init__(self, group: str, **options: Unpack[ConsumerOptions]) -> None:
        """`options` are `ConsumerConfig`'s fields (see config.py)."""
        super().__init__(group, dict(options))
        self._topics: set[str] = set()
        self._subs: dict[tuple[str, str | MessageSelector], SubscriptionData] = {}

    async def start(self) -> None:
        if self._instance is None:
            await self.join()

    async def shutdown(self) -> None:
        instance, self._instance = self._instance, None
        if instance is None:
            return
        await self._persist(list(self.offset_store.offsets()), oneway=False)
        await self.leave(instance)

    # --- ConsumerMember ----------------------------------------------------------------

    def subscription_datas(self) -> Iterable[SubscriptionData]:
        return {sd.topic: sd for sd in self._subs.values()}.values()

    def subscribed_topics(self) -> set[str]:
        return set(self._topics)

    async def rebalance(self) -> None:
        """Queues are chosen by the application; nothing to rebalance."""

    async def persist_offsets(self) -> None:
        if self._instance is not None:
            await self._persist(list(self.offset_store.offsets()), oneway=True)

    async def on_offset_reset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        for mq, offset in offsets.items():
            if mq.topic == topic:
                self.offset_store.update_offset(mq, offset, False)

    # --- API ------------------------------------------------------------------------------------

    async def fetch_subscribe_message_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of `topic`, sorted."""
        self._topics.add(topic)
        await self.instance.update_route(topic)
        return sorted(await self.instance.subscribe_queues(topic))

    async def pull(
        self, mq: MessageQueue, expression: str | MessageSelector, offset: int, max_nums: int, *,
        timeout: float = 10.0,
    ) -> PullResult:
        """Pull at most `max_nums` messages from `offset` without waiting for new ones."""
        return await self._pull(mq, expression, offset, max_nums, 0, timeout)

    async def pull_block_if_not_found(
        self, mq: MessageQueue, expression: str | MessageSelector, offset: int, max_nums: int, *,
        suspend_ms: int = BLOCK_SUSPEND_MS,
    ) -> PullResult:
        """Pull; when nothing is there yet the broker holds the request until a message arrives or
        `suspend_ms` passes (long polling)."""
        return await self._pull(mq, expression, offset, max_nums, suspend_ms, suspend_ms / 1000 + 10.0)

    async def _pull(
        self, mq: MessageQueue, expression: str | MessageSelector, offset: int, max_nums: int, suspend_ms: int,
        timeout: float,
    ) -> PullResult:
        if offset < 0:
            raise ClientError(f"offset < 0: {offset}")
        if max_nums <= 0:
            raise ClientError(f"maxNums <= 0: {max_nums}")
        self._topics.add(mq.topic)
        key = (mq.topic, expression)
        sd = self._subs.get(key)
        if sd is None:
            sd = self._subs[key] = subscription_data(mq.topic, expression)
        sys_flag = PullSysFlag.SUBSCRIPTION | (PullSysFlag.SUSPEND if suspend_ms else 0)
        pull = self.pulling.pull(mq, sd, offset, max_nums, sys_flag, 0, suspend_ms, timeout, send_expression=True)
        if otel.INSTALLED and (tracer := otel.tracer()) is not None:
            return await otel.receiving(tracer, self.group, mq.topic, pull, lambda r: r.messages)
        return await pull

    async def update_consume_offset(self, mq: MessageQueue, offset: int) -> None:
        """Record that everything before `offset` is consumed (stored in the background)."""
        self.offset_store.update_offset(mq, offset, False)

    async def fetch_consume_offset(self, mq: MessageQueue, from_store: bool = True) -> int:
        """The stored offset, or -1 when none is stored."""
        how = ReadOffsetType.STORE if from_store else ReadOffsetType.MEMORY_FIRST_THEN_STORE
        return await self.offset_store.read_offset(mq, how)

    async def max_offset(self, mq: MessageQueue) -> int:
        return await self.lookups.max_offset(mq)

    async def min_offset(self, mq: MessageQueue) -> int:
        return await self.lookups.min_offset(mq)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return await self.lookups.search_offset(mq, timestamp_ms)

    async def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        return await self.lookups.view_message(msg_id, topic)

    async def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str) -> bool:
        """Return a message for redelivery via `%RETRY%<group>`; True when the broker took it."""
        mq = MessageQueue(msg.topic, broker_name, msg.queue_id)
        return await self.pulling.send_back(msg, mq, delay_level=delay_level, max_reconsume=16)
