"""Lookups several mqadmin commands share, as DefaultMQAdminExtImpl makes them."""

from __future__ import annotations

from typing import Any

from orbitmq.admin.api import AdminClient
from orbitmq.client.queue import MessageQueue
from orbitmq.common import names
from orbitmq.common.consume_stats import ConsumeStats


async def examine_consume_stats(admin: AdminClient, group: str, topic: str | None = None) -> ConsumeStats:
    """DefaultMQAdminExt.examineConsumeStats: GET_CONSUME_STATS on every master of the %RETRY% route."""
    route = await admin.topic_route(names.retry_topic(group))
    table: dict[MessageQueue, Any] = {}
    tps = 0.0
    for addr in route.master_addrs().values():
        stats = await admin.consume_stats(addr, group, topic)
        table.update(stats.offset_table)
        tps += stats.consume_tps
    return ConsumeStats(dict(sorted(table.items())), tps)


async def query_topic_consume_by_who(admin: AdminClient, topic: str) -> list[str]:
    """DefaultMQAdminExt.queryTopicConsumeByWho: asked of the route's first broker."""
    route = await admin.topic_route(topic)
    for broker in route.broker_datas:
        addr = broker.select_addr()
        if addr:
            return await admin.topic_consumed_by(addr, topic)
    return []
