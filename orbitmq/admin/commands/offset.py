"""resetOffsetByTime: move a group's committed offsets on a topic to a point in time."""

from __future__ import annotations

import click

from orbitmq.admin.api import AdminClient
from orbitmq.admin.commands.consumer import validated_group
from orbitmq.admin.commands.topic import validated_topic
from orbitmq.admin.jprint import emit_json, front, jline, json_option
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option
from orbitmq.admin.times import parse_timestamp
from orbitmq.client.queue import MessageQueue
from orbitmq.errors import ConsumerNotOnline


async def reset_without_consumers(
    admin: AdminClient, addr: str, topic: str, group: str, timestamp_ms: int, force: bool
) -> dict[MessageQueue, int]:
    """Reset by writing the committed offsets ourselves (mqadmin's fallback when no consumer is online).

    For each queue the group consumes on this broker: the offset of the
    message stored at `timestamp_ms` (the max offset for -1); without `force`
    an offset only moves backwards.
    """
    stats = await admin.consume_stats(addr, group, topic)
    result: dict[MessageQueue, int] = {}
    for mq, progress in stats.offset_table.items():
        if timestamp_ms < 0:
            target = await admin.max_offset(addr, mq)
        else:
            target = max(0, await admin.search_offset(addr, mq, timestamp_ms))
        if not force and target > progress.consumer_offset:
            target = progress.consumer_offset
        await admin.update_consumer_offset(addr, group, mq, target)
        result[mq] = target
    return result


async def reset_offsets(
    admin: AdminClient, topic: str, group: str, timestamp_ms: int, force: bool, cplus: bool = False,
) -> dict[MessageQueue, int]:
    """Reset the group's offsets on every master of the topic; the new offset of each queue."""
    route = await admin.topic_route(topic)
    offsets: dict[MessageQueue, int] = {}
    for addr in route.master_addrs().values():
        try:
            offsets.update(await admin.reset_offset_by_time(addr, topic, group, timestamp_ms, force, cplus))
        except ConsumerNotOnline:
            # The broker resets through online consumers only; write the offsets directly.
            offsets.update(await reset_without_consumers(admin, addr, topic, group, timestamp_ms, force))
    return offsets


@click.command("resetOffsetByTime")
@click.option("-g", "--group", required=True, help="set the consumer group")
@click.option("-t", "--topic", required=True, help="set the topic")
@click.option("-s", "--timestamp", "when", required=True,
              help="set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS] (local time; now: each queue's end)")
@click.option("-f", "--force", type=click.BOOL, default=True, show_default=True,
              help="set the force rollback by timestamp switch[true|false] (false: only rewind)")
@click.option("-c", "--cplus", is_flag=True, help="reset c++ client offset (the reset reaches them in their form)")
@json_option
@namesrv_option
@timeout_option
def reset_offset_by_time(
    group: str, topic: str, when: str, force: bool, cplus: bool, as_json: bool, namesrv: str | None, timeout: float,
) -> None:
    """Reset consumer offset by timestamp(without client restart)."""
    group, topic, when = group.strip(), topic.strip(), when.strip()
    validated_group(group)
    validated_topic(topic)
    try:
        timestamp_ms = -1 if when == "now" else parse_timestamp(when)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'-s' / '--timestamp'") from None

    async def action(admin: AdminClient) -> None:
        offsets = await reset_offsets(admin, topic, group, timestamp_ms, force, cplus)
        if as_json:
            emit_json([{"brokerName": q.broker_name, "queueId": q.queue_id, "offset": off}
                       for q, off in sorted(offsets.items())])
            return
        jline("rollback consumer offset by specified group[%s], topic[%s], force[%s], timestamp(string)[%s], "
              "timestamp(long)[%s]%n", group, topic, force, when, timestamp_ms)
        jline("%-40s  %-40s  %-40s%n", "#brokerName", "#queueId", "#offset")
        for q, off in sorted(offsets.items()):
            jline("%-40s  %-40d  %-40d%n", front(q.broker_name, 32), q.queue_id, off)

    run_admin(namesrv, timeout, action)


COMMANDS = [reset_offset_by_time]
