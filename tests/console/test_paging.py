"""Server-side paging of messages: a page costs a page, however many messages the topic holds."""

from __future__ import annotations

from typing import Any, cast

from orbitmq.admin.api import AdminClient
from orbitmq.admin.models import QueueStat
from orbitmq.client.queue import MessageQueue
from orbitmq.common.message import MessageExt
from orbitmq.common.pull import PullResult, PullStatus
from orbitmq.console import service

MILLION = 1_000_000
BASE_MS = 1_700_000_000_000


class _Route:
    def master_addrs(self) -> dict[str, str]:
        return {"broker-a": "10.0.0.1:10911"}


class BigTopicAdmin:
    """Two queues of a million messages each, message n of a queue stored at BASE_MS + n."""

    def __init__(self) -> None:
        self.pulled = 0

    async def topic_route(self, topic: str) -> _Route:
        return _Route()

    async def topic_stats(self, addr: str, topic: str) -> list[QueueStat]:
        return [QueueStat(MessageQueue(topic, "broker-a", q), 0, MILLION, BASE_MS + MILLION - 1) for q in (0, 1)]

    async def search_offset(self, addr: str, queue: MessageQueue, timestamp_ms: int) -> int:
        return min(max(timestamp_ms - BASE_MS, 0), MILLION - 1)

    async def pull(self, addr: str, queue: MessageQueue, offset: int, max_nums: int = 32) -> PullResult:
        msgs = []
        for n in range(offset, min(offset + max_nums, MILLION)):
            m = MessageExt(queue.topic, f"{queue.queue_id}:{n}".encode())
            m.queue_id, m.queue_offset, m.store_timestamp = queue.queue_id, n, BASE_MS + n
            msgs.append(m)
        self.pulled += len(msgs)
        return PullResult(PullStatus.FOUND, offset + len(msgs), 0, MILLION, msgs)


async def test_a_page_of_a_topic_with_two_million_messages_pulls_only_that_page() -> None:
    fake = BigTopicAdmin()
    admin = cast(AdminClient, fake)
    first = await service.messages_by_time(admin, "Big", 0, 2**62, 0, 50)
    assert first["total"] == 2 * MILLION
    assert [m["bodyText"] for m in first["items"]] == [f"0:{n}" for n in range(50)]
    assert fake.pulled == 50
    # Page 33333 of 30 starts at overall index 999,990: the last 10 of queue 0, the first 20 of queue 1.
    fake.pulled = 0
    across: dict[str, Any] = await service.messages_by_time(admin, "Big", 0, 2**62, 33333, 30)
    assert [m["bodyText"] for m in across["items"]] == (
        [f"0:{n}" for n in range(MILLION - 10, MILLION)] + [f"1:{n}" for n in range(20)])
    assert fake.pulled == 30


async def test_a_time_range_selects_the_offsets_stored_in_it() -> None:
    admin = cast(AdminClient, BigTopicAdmin())
    page = await service.messages_by_time(admin, "Big", BASE_MS + 500, BASE_MS + 509, 0, 100)
    assert page["total"] == 20
    assert [m["bodyText"] for m in page["items"]] == [f"{q}:{n}" for q in (0, 1) for n in range(500, 510)]
