"""Timed-message commands (OrbitMQ's own): listTimerMessages, cancelTimerMessage,
rescheduleTimerMessage, recallMessage (RocketMQ 5.3's recall by handle)."""

from __future__ import annotations

import asyncio

import click

from orbitmq.admin.api import AdminClient
from orbitmq.admin.commands.topic import validated_topic
from orbitmq.admin.jprint import emit_json, json_option, table_json
from orbitmq.admin.output import format_millis, render_table
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option
from orbitmq.admin.times import parse_timestamp
from orbitmq.common.recall import parse_recall_handle
from orbitmq.errors import BrokerError, ClientError
from orbitmq.remoting.codes import ResponseCode


async def _masters(admin: AdminClient, topic: str) -> dict[str, str]:
    return (await admin.topic_route(topic)).master_addrs()


@click.command("listTimerMessages")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-c", "--maxCount", "max_count", type=click.IntRange(1), default=1000, show_default=True,
              help="At most this many per broker.")
@json_option
@namesrv_option
@timeout_option
def list_timer_messages(topic: str, max_count: int, as_json: bool, namesrv: str | None, timeout: float) -> None:
    """Timed messages of a topic waiting to be delivered, by due time."""
    validated_topic(topic)

    async def action(admin: AdminClient) -> None:
        masters = await _masters(admin, topic)
        found = await asyncio.gather(*(admin.list_timers(addr, topic, max_count) for addr in masters.values()))
        rows = sorted(
            ((int(t["deliverMs"]), name, str(t["msgId"])) for name, timers in zip(masters, found) for t in timers)
        )
        headers = ["Due", "DueMs", "Broker", "MsgId"]
        listed = [(format_millis(due), due, name, mid) for due, name, mid in rows]
        if as_json:
            emit_json(table_json(headers, listed))
            return
        click.echo(render_table(headers, listed))

    run_admin(namesrv, timeout, action)


async def _on_some_broker(admin: AdminClient, topic: str, msg_id: str, ask: str, deliver_ms: int | None) -> str:
    """Ask each master of the topic until one holds the timer; the broker's name."""
    for name, addr in (await _masters(admin, topic)).items():
        try:
            if deliver_ms is None:
                await admin.cancel_timer(addr, topic, msg_id)
            else:
                await admin.reschedule_timer(addr, topic, msg_id, deliver_ms)
        except BrokerError as exc:
            if exc.code == ResponseCode.QUERY_NOT_FOUND:
                continue
            raise
        return name
    raise ClientError(f"no pending timed message {msg_id} of topic {topic} to {ask}")


@click.command("cancelTimerMessage")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-i", "--msgId", "msg_id", required=True, help="The message's id (UNIQ_KEY).")
@namesrv_option
@timeout_option
def cancel_timer_message(topic: str, msg_id: str, namesrv: str | None, timeout: float) -> None:
    """Cancel a timed message before it is due (durable: it is never delivered, also after a restart)."""
    validated_topic(topic)

    async def action(admin: AdminClient) -> None:
        name = await _on_some_broker(admin, topic, msg_id.strip(), "cancel", None)
        click.echo(f"cancelled {msg_id} of {topic} on {name}")

    run_admin(namesrv, timeout, action)


@click.command("rescheduleTimerMessage")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-i", "--msgId", "msg_id", required=True, help="The message's id (UNIQ_KEY).")
@click.option("-d", "--deliverTime", "deliver_time", required=True,
              help="New due time: 'now', ms since the epoch, or yyyy-MM-dd#HH:mm:ss:SSS.")
@namesrv_option
@timeout_option
def reschedule_timer_message(topic: str, msg_id: str, deliver_time: str, namesrv: str | None, timeout: float) -> None:
    """Move a pending timed message to a new due time (it keeps its message id)."""
    validated_topic(topic)
    try:
        deliver_ms = parse_timestamp(deliver_time)
    except ValueError as exc:
        raise click.UsageError(f"-d: {exc}") from None

    async def action(admin: AdminClient) -> None:
        name = await _on_some_broker(admin, topic, msg_id.strip(), "reschedule", deliver_ms)
        click.echo(f"rescheduled {msg_id} of {topic} on {name} to {format_millis(deliver_ms)}")

    run_admin(namesrv, timeout, action)


@click.command("recallMessage")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-r", "--recallHandle", "handle", required=True, help="The recall handle the send returned.")
@namesrv_option
@timeout_option
def recall_message(topic: str, handle: str, namesrv: str | None, timeout: float) -> None:
    """Recall a timed message by its recall handle (RocketMQ 5.3's RECALL_MESSAGE)."""
    validated_topic(topic)
    try:
        broker_name = parse_recall_handle(handle.strip())[1]
    except BrokerError as exc:
        raise click.UsageError(f"-r: {exc.remark}") from None

    async def action(admin: AdminClient) -> None:
        masters = await _masters(admin, topic)
        if broker_name not in masters:
            raise ClientError(f"broker {broker_name} of the recall handle serves no master of {topic}")
        msg_id = await admin.recall_message(masters[broker_name], topic, handle.strip())
        click.echo(f"recalled {msg_id} of {topic} on {broker_name}")

    run_admin(namesrv, timeout, action)


COMMANDS = [list_timer_messages, cancel_timer_message, reschedule_timer_message, recall_message]
