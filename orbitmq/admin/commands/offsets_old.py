"""Offset commands of RocketMQ 4.9's mqadmin that write offsets themselves, with its output lines:
cloneGroupOffset, resetOffsetByTimeOld, skipAccumulatedMessage (cloneGroupOffset draws a progress
bar on a terminal)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from orbitmq.admin.api import AdminClient
from orbitmq.admin.jprint import Progress, emit_json, front, jline, json_option
from orbitmq.admin.lookups import examine_consume_stats
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option
from orbitmq.admin.times import parse_timestamp
from orbitmq.client.queue import MessageQueue
from orbitmq.common.consume_stats import OffsetWrapper
from orbitmq.errors import ConsumerNotOnline


@click.command("cloneGroupOffset")
@click.option("-s", "--srcGroup", "src_group", required=True, help="set source consumer group")
@click.option("-d", "--destGroup", "dest_group", required=True, help="set destination consumer group")
@click.option("-t", "--topic", required=True, help="set the topic")
@click.option("-o", "--offline", help="the group or the topic is offline")
@namesrv_option
@timeout_option
def clone_group_offset(
    src_group: str, dest_group: str, topic: str, offline: str | None, namesrv: str | None, timeout: float,
) -> None:
    """clone offset from other group: the source group's committed offsets, written for the destination."""
    src_group, dest_group, topic = src_group.strip(), dest_group.strip(), topic.strip()

    async def action(admin: AdminClient) -> None:
        stats = await examine_consume_stats(admin, src_group)
        if stats.offset_table:
            route = await admin.topic_route(topic)
            with Progress(len(stats.offset_table), "cloneGroupOffset") as bar:
                for mq, wrapper in stats.offset_table.items():
                    data = route.broker(mq.broker_name)
                    addr = data.select_addr() if data is not None else None
                    if wrapper.consumer_offset >= 0 and addr:
                        await admin.update_consumer_offset(addr, dest_group, mq, wrapper.consumer_offset)
                    bar.advance()
        jline("clone group offset success. srcGroup[%s], destGroup=[%s], topic[%s]", src_group, dest_group, topic)

    run_admin(namesrv, timeout, action)


@dataclass
class RollbackStats:
    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    timestamp_offset: int
    rollback_offset: int

    def to_json(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "brokerOffset": self.broker_offset,
                "consumerOffset": self.consumer_offset, "timestampOffset": self.timestamp_offset,
                "rollbackOffset": self.rollback_offset}


async def _rollback_one(
    admin: AdminClient, addr: str, group: str, mq: MessageQueue, wrapper: OffsetWrapper, timestamp: int, force: bool,
) -> RollbackStats:
    """DefaultMQAdminExtImpl.resetOffsetConsumeOffset."""
    if timestamp == -1:
        target = await admin.max_offset(addr, mq)
    else:
        target = await admin.search_offset(addr, mq, timestamp)
    stats = RollbackStats(mq.broker_name, mq.queue_id, wrapper.broker_offset, wrapper.consumer_offset, target,
                          wrapper.consumer_offset)
    if force or target <= wrapper.consumer_offset:
        stats.rollback_offset = target
        await admin.update_consumer_offset(addr, group, mq, target)
    return stats


async def reset_offset_old(
    admin: AdminClient, group: str, topic: str, timestamp: int, force: bool,
) -> list[RollbackStats]:
    """DefaultMQAdminExtImpl.resetOffsetByTimestampOld: writes the offsets itself, broker by broker."""
    route = await admin.topic_route(topic)
    read_nums = {b.select_addr(): q.read_queue_nums for b in route.broker_datas for q in route.queue_datas}
    out: list[RollbackStats] = []
    for broker in route.broker_datas:
        addr = broker.select_addr()
        if not addr:
            continue
        stats = await admin.consume_stats(addr, group)
        mine = [(mq, w) for mq, w in stats.offset_table.items() if mq.topic == topic]
        if not mine:
            table = {s.queue: s for s in await admin.topic_stats(addr, topic)}
            for i in range(read_nums.get(addr, 0)):
                mq = MessageQueue(topic, broker.broker_name, i)
                stat = table.get(mq)
                if stat is not None:
                    mine.append((mq, OffsetWrapper(stat.max_offset, stat.min_offset)))
        for mq, wrapper in mine:
            out.append(await _rollback_one(admin, addr, group, mq, wrapper, timestamp, force))
    return out


def print_rollback(rows: list[RollbackStats]) -> None:
    jline("%-20s  %-20s  %-20s  %-20s  %-20s  %-20s%n", "#brokerName", "#queueId", "#brokerOffset",
          "#consumerOffset", "#timestampOffset", "#rollbackOffset")
    for r in rows:
        jline("%-20s  %-20d  %-20d  %-20d  %-20d  %-20d%n", front(r.broker_name, 32), r.queue_id, r.broker_offset,
              r.consumer_offset, r.timestamp_offset, r.rollback_offset)


@click.command("resetOffsetByTimeOld")
@click.option("-g", "--group", required=True, help="set the consumer group")
@click.option("-t", "--topic", required=True, help="set the topic")
@click.option("-s", "--timestamp", "when", required=True, help="set the timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
@click.option("-f", "--force", type=click.BOOL, default=True, help="set the force rollback by timestamp switch[true|false]")
@json_option
@namesrv_option
@timeout_option
def reset_offset_by_time_old(
    group: str, topic: str, when: str, force: bool, as_json: bool, namesrv: str | None, timeout: float,
) -> None:
    """Reset consumer offset by timestamp(execute this command required client restart)."""
    group, topic, when = group.strip(), topic.strip(), when.strip()
    try:
        timestamp = int(when) if when.lstrip("-").isdigit() else parse_timestamp(when)
    except ValueError:
        click.echo("specified timestamp invalid.")
        return

    async def action(admin: AdminClient) -> None:
        rows = await reset_offset_old(admin, group, topic, timestamp, force)
        if as_json:
            emit_json([r.to_json() for r in rows])
            return
        jline("rollback consumer offset by specified consumerGroup[%s], topic[%s], force[%s], "
              "timestamp(string)[%s], timestamp(long)[%s]%n", group, topic, force, when, timestamp)
        print_rollback(rows)

    run_admin(namesrv, timeout, action)


@click.command("skipAccumulatedMessage")
@click.option("-g", "--group", required=True, help="set the consumer group")
@click.option("-t", "--topic", required=True, help="set the topic")
@click.option("-f", "--force", type=click.BOOL, default=True, help="set the force rollback by timestamp switch[true|false]")
@json_option
@namesrv_option
@timeout_option
def skip_accumulated_message(
    group: str, topic: str, force: bool, as_json: bool, namesrv: str | None, timeout: float,
) -> None:
    """Skip all messages that are accumulated (not consumed) currently: offsets move to each queue's end."""
    group, topic = group.strip(), topic.strip()

    async def action(admin: AdminClient) -> None:
        route = await admin.topic_route(topic)
        offsets: dict[MessageQueue, int] = {}
        try:
            for addr in route.master_addrs().values():
                offsets.update(await admin.reset_offset_by_time(addr, topic, group, -1, force))
        except ConsumerNotOnline:
            rows = await reset_offset_old(admin, group, topic, -1, force)
            if as_json:
                emit_json([r.to_json() for r in rows])
            else:
                print_rollback(rows)
            return
        if as_json:
            emit_json([{"brokerName": q.broker_name, "queueId": q.queue_id, "offset": o}
                       for q, o in sorted(offsets.items())])
            return
        jline("%-40s  %-40s  %-40s%n", "#brokerName", "#queueId", "#offset")
        for q, o in sorted(offsets.items()):
            jline("%-40s  %-40d  %-40d%n", front(q.broker_name, 32), q.queue_id, o)

    run_admin(namesrv, timeout, action)



COMMANDS = [clone_group_offset, reset_offset_by_time_old, skip_accumulated_message]
