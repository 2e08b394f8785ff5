"""Message commands: sendMessage, consumeMessage, queryMsgById, queryMsgByKey, queryMsgByOffset."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import click

from orbitmq.admin.api import TOOLS_CONSUMER_GROUP, TOOLS_PRODUCER_GROUP, AdminClient, default_client_options
from orbitmq.admin.commands.topic import validated_topic
from orbitmq.admin.jprint import emit_json, jline, json_option, send_result_text, table_json
from orbitmq.admin.output import format_millis, render_kv, render_table
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option
from orbitmq.admin.times import parse_timestamp
from orbitmq.client.message import Message
from orbitmq.client.producer import Producer
from orbitmq.client.queue import MessageQueue
from orbitmq.client.results import SendResult
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt
from orbitmq.common.msgid import parse_offset_msg_id
from orbitmq.common.pull import PullStatus
from orbitmq.errors import BrokerError, ClientError, RemotingError

_BODY_PREVIEW = 200


def body_text(body: bytes, limit: int | None = None) -> str:
    """The body as UTF-8 text (undecodable bytes escaped), control characters made visible."""
    text = bytes(body).decode("utf-8", errors="backslashreplace")
    text = text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
    if limit is not None and len(text) > limit:
        text = text[:limit] + "..."
    return text


def message_detail(msg: MessageExt) -> str:
    """The block mqadmin prints for one message."""
    props = {k: v for k, v in msg.properties.items()}
    return render_kv([
        ("OffsetID", msg.offset_msg_id),
        ("MsgId", msg.msg_id),
        ("Topic", msg.topic),
        ("Tags", f"[{msg.tags or ''}]"),
        ("Keys", f"[{' '.join(msg.keys)}]"),
        ("Queue ID", msg.queue_id),
        ("Queue Offset", msg.queue_offset),
        ("CommitLog Offset", msg.commit_log_offset),
        ("Reconsume Times", msg.reconsume_times),
        ("Born Timestamp", format_millis(msg.born_timestamp)),
        ("Store Timestamp", format_millis(msg.store_timestamp)),
        ("Born Host", msg.born_host),
        ("Store Host", msg.store_host),
        ("System Flag", msg.sys_flag),
        ("Properties", "{" + ", ".join(f"{k}={v}" for k, v in sorted(props.items())) + "}"),
        ("Message Body", body_text(msg.body)),
    ])


def looks_like_offset_id(msg_id: str) -> bool:
    """True when the id decodes to a plausible broker address (a UNIQ_KEY puts a PID where the port is)."""
    try:
        host = parse_offset_msg_id(msg_id).store_host
    except ValueError:
        return False
    port = host.rpartition(":")[2]
    return port.isdigit() and 0 < int(port) < 65536


#: Properties a resent copy does not keep: the store's own and the old message id.
RESEND_DROPPED_PROPERTIES = frozenset({
    mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, mc.MIN_OFFSET, mc.MAX_OFFSET, mc.CLUSTER, mc.WAIT_STORE_MSG_OK,
})


@click.command("sendMessage")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-p", "--body", required=True, help="Message body (UTF-8 text).")
@click.option("-k", "--keys", help="Keys, separated by spaces.")
@click.option("-c", "--tags", help="Tag.")
@click.option("-b", "--broker", "broker_name", help="Send to this broker (by name).")
@click.option("-i", "--qid", "queue_id", type=click.IntRange(0), help="Send to this queue id.")
@click.option("-m", "--msgTraceEnable", "trace", type=click.BOOL, default=False,
              help="Message Trace Enable, Default: false (the send's trace goes to RMQ_SYS_TRACE_TOPIC)")
@namesrv_option
@timeout_option
def send_message(
    topic: str, body: str, keys: str | None, tags: str | None, broker_name: str | None,
    queue_id: int | None, trace: bool, namesrv: str | None, timeout: float,
) -> None:
    """Send one message and print where it was stored."""
    validated_topic(topic)
    key_list = keys.split() if keys else []

    async def action(admin: AdminClient) -> None:
        addr, queue = await admin.pick_write_queue(topic, broker_name, queue_id)
        if trace:
            result = await traced_send(admin, queue, Message(topic, body.encode("utf-8"), tags=tags, keys=key_list))
        else:
            result = await admin.send_message(addr, queue, body.encode("utf-8"), tags=tags, keys=key_list)
        mq = result.message_queue
        # SendMessageCommand's four columns, then OrbitMQ's queue offset and offset message id.
        fmt = "%-32s  %-4s  %-20s    %-32s  %-14s  %s%n"
        jline(fmt, "#Broker Name", "#QID", "#Send Result", "#MsgId", "#Queue Offset", "#Offset MsgId")
        jline(fmt, mq.broker_name, mq.queue_id, result.status.value, result.msg_id, result.queue_offset,
              result.offset_msg_id)

    run_admin(namesrv, timeout, action)


@click.command("consumeMessage")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-b", "--brokerName", "broker_name", help="Only this broker.")
@click.option("-i", "--queueId", "queue_id", type=click.IntRange(0), help="Only this queue (needs -b).")
@click.option("-o", "--offset", type=click.IntRange(0), help="Start offset (default: each queue's min offset).")
@click.option("-c", "--messageNumber", "count", type=click.IntRange(1), default=128, show_default=True,
              help="Stop after this many messages.")
@click.option("-g", "--consumerGroup", "group", default=TOOLS_CONSUMER_GROUP, show_default=True)
@click.option("-s", "--beginTimestamp", "begin",
              help="Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]: start at the message stored then.")
@click.option("-e", "--endTimestamp", "end",
              help="End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]: stop before the message stored then.")
@json_option
@namesrv_option
@timeout_option
def consume_message(
    topic: str, broker_name: str | None, queue_id: int | None, offset: int | None, count: int, group: str,
    begin: str | None, end: str | None, as_json: bool, namesrv: str | None, timeout: float,
) -> None:
    """Pull messages and print them; commits no offset."""
    validated_topic(topic)
    if queue_id is not None and broker_name is None:
        raise click.UsageError("-i queueId needs -b brokerName")
    now = int(time.time() * 1000)
    begin_ms = end_ms = 0
    try:
        begin_ms = parse_timestamp(begin) if begin else 0
        end_ms = parse_timestamp(end) if end else 0
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'-s' / '-e'") from None
    if begin_ms > now:
        raise click.UsageError("Please set the beginTimestamp before now!")
    if end_ms > now:
        raise click.UsageError("Please set the endTimestamp before now!")
    if end_ms and begin_ms > end_ms:
        raise click.UsageError("Please make sure that the beginTimestamp is less than or equal to the endTimestamp")

    async def action(admin: AdminClient) -> None:
        route = await admin.topic_route(topic)
        masters = route.master_addrs()
        queues = [
            q for q in route.read_queues(topic)
            if (broker_name is None or q.broker_name == broker_name) and (queue_id is None or q.queue_id == queue_id)
            and q.broker_name in masters
        ]
        if not queues:
            raise ClientError(f"topic {topic!r} has no readable queue matching the options")
        rows: list[tuple[str, int, int, str, str | None, str, str]] = []
        for queue in queues:
            addr = masters[queue.broker_name]
            next_offset = offset if offset is not None else 0
            if begin_ms:
                next_offset = max(next_offset, await admin.search_offset(addr, queue, begin_ms))
            stop = await admin.search_offset(addr, queue, end_ms) if end_ms else None
            while len(rows) < count and (stop is None or next_offset < stop):
                result = await admin.pull(addr, queue, next_offset, min(32, count - len(rows)), group)
                if result.status is PullStatus.OFFSET_ILLEGAL and result.next_begin_offset != next_offset and offset is None:
                    next_offset = result.next_begin_offset  # start was below the queue's min offset
                    continue
                if result.status is not PullStatus.FOUND:
                    break
                for msg in result.messages:
                    if stop is not None and msg.queue_offset >= stop:
                        break
                    rows.append((queue.broker_name, queue.queue_id, msg.queue_offset, msg.msg_id,
                                 msg.tags, " ".join(msg.keys), body_text(msg.body, _BODY_PREVIEW)))
                next_offset = result.next_begin_offset
            if len(rows) >= count:
                break
        headers = ["Broker Name", "QID", "Queue Offset", "MsgId", "Tags", "Keys", "Body"]
        if as_json:
            emit_json(table_json(headers, rows[:count]))
            return
        click.echo(render_table(headers, rows[:count]))
        click.echo(f"\nConsumed {min(len(rows), count)} message(s).")

    run_admin(namesrv, timeout, action)


async def find_by_unique_key(admin: AdminClient, topic: str, key: str) -> list[MessageExt]:
    route = await admin.topic_route(topic)
    found = await asyncio.gather(
        *(admin.query_message(addr, topic, key, unique_key=True) for addr in route.master_addrs().values())
    )
    return [m for batch in found for m in batch]


async def find_by_key(admin: AdminClient, topic: str, key: str, max_num: int = 64) -> list[MessageExt]:
    """The topic's messages indexed under `key` on every master, oldest first."""
    route = await admin.topic_route(topic)
    found = await asyncio.gather(
        *(admin.query_message(addr, topic, key, max_num=max_num) for addr in route.master_addrs().values())
    )
    return sorted((m for batch in found for m in batch), key=lambda m: (m.store_timestamp, m.queue_id))


@click.command("queryMsgById")
@click.option("-i", "--msgId", "msg_id", required=True,
              help="Offset message id(s), comma-separated, or a UNIQ_KEY (with -t).")
@click.option("-t", "--topic", help="Topic; needed to look a UNIQ_KEY up in the index.")
@click.option("-g", "--consumerGroup", "group", help="consumer group name (with -d: consume the message directly)")
@click.option("-d", "--clientId", "client_id", help="The consumer's client id (with -g)")
@click.option("-s", "--sendMessage", "resend", type=click.BOOL, default=None,
              help="resend message: true sends a copy of each message to its topic again")
@click.option("-u", "--unitName", "unit_name",
              help="unit name of the resending producer (RocketMQ's unit deployments; no effect on the send)")
@namesrv_option
@timeout_option
def query_msg_by_id(
    msg_id: str, topic: str | None, group: str | None, client_id: str | None, resend: bool | None,
    unit_name: str | None, namesrv: str | None, timeout: float,
) -> None:
    """Show a message by its offset message id (asked of the broker it names) or by its UNIQ_KEY.

    As RocketMQ's: -g with -d has that client consume each message directly; -s true resends
    each message to its topic (printing `prepare resend msg. originalMsgId=...` and the SendResult).
    """
    ids = [i.strip().upper() for i in msg_id.split(",") if i.strip()]
    if not ids:
        raise click.UsageError("-i needs a message id")
    if topic is not None:
        validated_topic(topic)
    for one in ids:
        if not looks_like_offset_id(one) and topic is None:
            raise click.UsageError(f"{one!r} is not an offset message id; give -t topic to look it up as a UNIQ_KEY")

    async def find(admin: AdminClient, one: str) -> list[MessageExt]:
        messages: list[MessageExt] = []
        if looks_like_offset_id(one):
            store_host, phys = parse_offset_msg_id(one)
            try:
                messages = [await admin.view_message(store_host, phys)]
            except (BrokerError, RemotingError):
                if topic is None:
                    raise
        if not messages and topic is not None:
            messages = await find_by_unique_key(admin, topic, one)
        return messages

    async def action(admin: AdminClient) -> None:
        for one in ids:
            messages = await find(admin, one)
            if group and client_id:
                if not messages:
                    raise ClientError(f"message {one} not found")
                result = await admin.consume_message_directly(group.strip(), client_id.strip(),
                                                              messages[0].offset_msg_id)
                click.echo(direct_result_text(result), nl=False)
            elif resend is not None:
                if not resend:
                    continue
                if not messages:
                    click.echo(f"no message. msgId={one}", nl=False)
                    continue
                click.echo(f"prepare resend msg. originalMsgId={one}", nl=False)
                sent = await resend_copy(admin, messages[0])
                click.echo(send_result_text(sent), nl=False)
            else:
                if not messages:
                    raise ClientError(f"message {one} not found")
                click.echo("\n\n".join(message_detail(m) for m in messages))

    run_admin(namesrv, timeout, action)


async def traced_send(admin: AdminClient, queue: MessageQueue, msg: Message) -> SendResult:
    """A send by a Producer with message trace on (SendMessageCommand -m true); its trace is flushed on close."""
    async with Producer(
        TOOLS_PRODUCER_GROUP, namesrv_addr=";".join(admin.namesrv_addrs), instance_name=f"mqadmin-{os.getpid()}",
        enable_msg_trace=True, **default_client_options(),
    ) as producer:
        return await producer.send(msg, queue=queue, timeout=admin.timeout)


def direct_result_text(result: dict[str, Any]) -> str:
    """`ConsumeMessageDirectlyResult.toString()`."""
    return (f"ConsumeMessageDirectlyResult [order={str(bool(result.get('order'))).lower()}, "
            f"autoCommit={str(bool(result.get('autoCommit', True))).lower()}, "
            f"consumeResult={result.get('consumeResult')}, remark={result.get('remark')}, "
            f"spentTimeMills={int(result.get('spentTimeMills') or 0)}]")


async def resend_copy(admin: AdminClient, msg: MessageExt) -> SendResult:
    """`producer.send(msg)` of a viewed message: same topic, body, flag and user properties, a new UNIQ_KEY."""
    props = {k: v for k, v in msg.properties.items() if k not in RESEND_DROPPED_PROPERTIES}
    addr, queue = await admin.pick_write_queue(msg.topic)
    return await admin.send_with_properties(addr, queue, bytes(msg.body), props, flag=msg.flag)


@click.command("queryMsgByUniqueKey")
@click.option("-i", "--msgId", "msg_id", required=True, help="The message's UNIQ_KEY (its client id).")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-g", "--consumerGroup", "group", help="consumer group name (with -d: consume the message directly)")
@click.option("-d", "--clientId", "client_id", help="The consumer's client id (with -g)")
@click.option("-a", "--showAll", "show_all", is_flag=True, help="Print all message, the limit is 32")
@namesrv_option
@timeout_option
def query_msg_by_unique_key(
    msg_id: str, topic: str, group: str | None, client_id: str | None, show_all: bool, namesrv: str | None,
    timeout: float,
) -> None:
    """Show a message by its UNIQ_KEY, looked up in the brokers' index (QUERY_MESSAGE, unique-key mode).

    With -g and -d, the client of the group consumes it directly (CONSUME_MESSAGE_DIRECTLY) and
    the result prints as RocketMQ's ConsumeMessageDirectlyResult."""
    validated_topic(topic)
    key = msg_id.strip().upper()

    async def action(admin: AdminClient) -> None:
        messages = await find_by_unique_key(admin, topic, key)
        if not messages:
            raise ClientError(f"message {key} not found in topic {topic!r}")
        if group and client_id:
            target = messages[0]
            result = await admin.consume_message_directly(group.strip(), client_id.strip(), target.offset_msg_id)
            click.echo(direct_result_text(result), nl=False)
            return
        shown = messages[:32] if show_all else messages
        click.echo("\n\n".join(message_detail(m) for m in shown))

    run_admin(namesrv, timeout, action)


@click.command("queryMsgByKey")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-k", "--msgKey", "key", required=True, help="One message key.")
@click.option("-f", "--maxNum", "max_num", type=click.IntRange(1, 2048), default=64, show_default=True)
@json_option
@namesrv_option
@timeout_option
def query_msg_by_key(topic: str, key: str, max_num: int, as_json: bool, namesrv: str | None, timeout: float) -> None:
    """List the messages of a topic indexed under a key."""
    validated_topic(topic)

    async def action(admin: AdminClient) -> None:
        messages = await find_by_key(admin, topic, key, max_num)
        if not messages:
            raise ClientError(f"no message of topic {topic!r} has key {key!r}")
        rows = [(m.msg_id, m.offset_msg_id, m.queue_id, m.queue_offset, format_millis(m.store_timestamp))
                for m in messages]
        if as_json:
            emit_json(table_json(["Message ID", "Offset ID", "QID", "Offset", "Store Time"], rows))
            return
        jline("%-50s %4s %40s%n", "#Message ID", "#QID", "#Offset")
        for m in messages:
            jline("%-50s %4d %40d%n", m.msg_id, m.queue_id, m.queue_offset)

    run_admin(namesrv, timeout, action)


@click.command("queryMsgByOffset")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-b", "--brokerName", "broker_name", required=True, help="Broker name.")
@click.option("-i", "--queueId", "queue_id", type=click.IntRange(0), required=True, help="Queue id.")
@click.option("-o", "--offset", type=click.IntRange(0), required=True, help="Queue offset.")
@namesrv_option
@timeout_option
def query_msg_by_offset(
    topic: str, broker_name: str, queue_id: int, offset: int, namesrv: str | None, timeout: float
) -> None:
    """Show the message at one queue offset."""
    validated_topic(topic)

    async def action(admin: AdminClient) -> None:
        addr = await admin.broker_addr_of(topic, broker_name)
        result = await admin.pull(addr, MessageQueue(topic, broker_name, queue_id), offset, 1)
        match = [m for m in result.messages if m.queue_offset == offset]
        if not match:
            raise ClientError(
                f"no message at offset {offset} of {topic}/{broker_name}/{queue_id} "
                f"({result.status.value}; queue holds {result.min_offset}..{result.max_offset - 1})"
            )
        click.echo(message_detail(match[0]))

    run_admin(namesrv, timeout, action)


COMMANDS = [
    send_message, consume_message, query_msg_by_id, query_msg_by_unique_key, query_msg_by_key, query_msg_by_offset,
]
