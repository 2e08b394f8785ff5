"""Lookups and topic administration shared by producers and consumers (RocketMQ's MQAdminImpl).

createTopic, queue offsets and times, and finding messages by offset id,
by unique key or by key across all brokers of a topic.
"""

from __future__ import annotations

import asyncio
import time

from orbitmq.client.instance import ClientInstance
from orbitmq.client.queue import MessageQueue
from orbitmq.common.message import MessageExt
from orbitmq.common.msgid import OffsetMsgId, parse_offset_msg_id
from orbitmq.errors import BrokerError, ClientError, RemotingError

#: How many messages a QUERY_MESSAGE by unique key returns at most (the broker's defaultQueryMaxNum).
UNIQUE_KEY_QUERY_MAX = 32


class Lookups:
    def __init__(self, instance: ClientInstance) -> None:
        self.instance = instance

    async def create_topic(
        self, key: str, new_topic: str, queue_num: int, topic_sys_flag: int = 0, perm: int = 6,
        order: bool = False,
    ) -> None:
        """Create `new_topic` on every master broker that serves the template topic `key` (TBW102)."""
        route = await self.instance.fetch_route(key)
        errors: list[str] = []
        created = 0
        for broker in route.broker_datas:
            addr = broker.master_addr
            if addr is None:
                continue
            try:
                await self.instance.api.create_topic(addr, key, new_topic, queue_num, perm, order, topic_sys_flag)
                created += 1
            except (BrokerError, RemotingError) as exc:
                errors.append(f"{broker.broker_name}: {exc}")
        if not created:
            raise ClientError(f"create topic {new_topic} failed: {'; '.join(errors) or 'no master broker'}")

    async def _addr(self, mq: MessageQueue) -> str:
        """The queue's master; its slave while the master is down (a slave answers offset and
        time questions from its own copy, so a consumer starting then still finds where to begin)."""
        return await self.instance.find_broker_addr_in_admin(mq.broker_name, mq.topic)

    async def max_offset(self, mq: MessageQueue) -> int:
        """The next logical offset to be written in `mq`."""
        return await self.instance.api.get_max_offset(await self._addr(mq), mq)

    async def min_offset(self, mq: MessageQueue) -> int:
        return await self.instance.api.get_min_offset(await self._addr(mq), mq)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the message stored closest to `timestamp_ms` (§3.7)."""
        return await self.instance.api.search_offset(await self._addr(mq), mq, timestamp_ms)

    async def earliest_msg_store_time(self, mq: MessageQueue) -> int:
        return await self.instance.api.get_earliest_msg_store_time(await self._addr(mq), mq)

    async def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        """A message by its offset message id, read straight from the broker the id names.

        When `msg_id` is not an offset id (or that broker does not have it) and
        `topic` is given, it is looked up as a unique key (UNIQ_KEY) instead.
        """
        parsed = _offset_msg_id(msg_id)
        if parsed is not None:
            try:
                return await self.instance.api.view_message(parsed.store_host, parsed.commit_log_offset)
            except (BrokerError, RemotingError, ClientError, OSError):
                if topic is None:
                    raise
        if topic is None:
            raise ClientError(f"{msg_id!r} is not an offset message id; pass the topic to look up a unique key")
        found = await self.query_message(topic, msg_id, UNIQUE_KEY_QUERY_MAX, 0, _now_ms() + 1, unique_key=True)
        if not found:
            raise ClientError(f"message {msg_id} not found in topic {topic}")
        return found[0]

    async def query_message(
        self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int, *, unique_key: bool = False
    ) -> list[MessageExt]:
        """Messages of `topic` with `key` among their KEYS (or whose UNIQ_KEY is `key`) from every broker."""
        route = self.instance.routes.get(topic) or await self.instance.update_route(topic)
        if route is None:
            raise ClientError(f"The topic[{topic}] not matched route info")
        addrs = [addr for b in route.broker_datas if (addr := b.select_addr())]

        async def one(addr: str) -> list[MessageExt]:
            try:
                return await self.instance.api.query_message(addr, topic, key, max_num, begin_ms, end_ms, unique_key)
            except (BrokerError, RemotingError):
                return []

        results = await asyncio.gather(*(one(a) for a in addrs))
        found: list[MessageExt] = []
        seen: set[str] = set()
        for msgs in results:
            for msg in msgs:
                if unique_key:
                    match = msg.msg_id == key
                else:
                    match = key in msg.keys
                if match and msg.offset_msg_id not in seen:
                    seen.add(msg.offset_msg_id)
                    found.append(msg)
        return found


def _offset_msg_id(msg_id: str) -> OffsetMsgId | None:
    """The parsed id when `msg_id` can be an offset message id (a unique key usually cannot:
    its process-id bytes sit where an offset id keeps the high half of a port number)."""
    try:
        parsed = parse_offset_msg_id(msg_id)
        port = int(parsed.store_host.rpartition(":")[2])
    except ValueError:
        return None
    return parsed if 0 < port <= 65535 else None


def _now_ms() -> int:
    return int(time.time() * 1000)
