"""queryMsgTraceById: a message's trace (its send and its consumptions) from the trace topic."""

from __future__ import annotations

import asyncio

import click

from orbitmq.admin.api import AdminClient
from orbitmq.admin.commands.topic import validated_topic
from orbitmq.admin.jprint import emit_json, json_option
from orbitmq.admin.output import format_millis, render_table
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option
from orbitmq.client.trace import DEFAULT_TRACE_TOPIC, TraceContext, TraceType, decode
from orbitmq.common.message import MessageExt
from orbitmq.errors import ClientError

#: Trace messages read per broker; one message id rarely has more than a few.
_MAX_TRACE_MESSAGES = 512
_TYPE_ORDER = {TraceType.PUB: 0, TraceType.END_TRANSACTION: 1, TraceType.SUB_BEFORE: 2, TraceType.SUB_AFTER: 3}


def trace_rows(msg_id: str, trace_messages: list[MessageExt]) -> list[TraceContext]:
    """The records about `msg_id` in these trace messages, oldest first, each with its client host."""
    rows: list[TraceContext] = []
    for trace_msg in trace_messages:
        body = bytes(trace_msg.body).decode("utf-8", errors="replace")
        for ctx in decode(body):
            if any(bean.msg_id == msg_id for bean in ctx.beans):
                ctx.beans = [b for b in ctx.beans if b.msg_id == msg_id]
                ctx.client_host = trace_msg.born_host
                rows.append(ctx)
    # SubAfter of older brokers' clients carries no time: keep it after its SubBefore.
    starts = {c.request_id: c.timestamp for c in rows if c.trace_type is TraceType.SUB_BEFORE}
    for ctx in rows:
        if ctx.trace_type is TraceType.SUB_AFTER and not ctx.timestamp:
            ctx.timestamp = starts.get(ctx.request_id, 0)
    rows.sort(key=lambda c: (c.timestamp, _TYPE_ORDER[c.trace_type]))
    return rows


async def find_trace(admin: AdminClient, msg_id: str, trace_topic: str = DEFAULT_TRACE_TOPIC) -> list[TraceContext]:
    """The trace records of `msg_id` in `trace_topic` on every master, oldest first."""
    route = await admin.topic_route(trace_topic)
    found = await asyncio.gather(*(
        admin.query_message(addr, trace_topic, msg_id, max_num=_MAX_TRACE_MESSAGES)
        for addr in route.master_addrs().values()
    ))
    return trace_rows(msg_id, [m for batch in found for m in batch])


def render_trace(rows: list[TraceContext]) -> str:
    table = []
    for ctx in rows:
        bean = ctx.beans[0]
        status = "success" if ctx.success else "failed"
        detail = ""
        if ctx.trace_type is TraceType.PUB:
            detail = f"topic={bean.topic} broker={bean.store_host} offsetMsgId={bean.offset_msg_id}"
        elif ctx.trace_type is TraceType.SUB_BEFORE:
            status, detail = "-", f"retryTimes={bean.retry_times} requestId={ctx.request_id}"
        elif ctx.trace_type is TraceType.SUB_AFTER:
            detail = f"requestId={ctx.request_id}"
        else:
            status = bean.transaction_state
            detail = f"fromCheck={str(bean.from_transaction_check).lower()}"
        cost = None if ctx.trace_type in (TraceType.SUB_BEFORE, TraceType.END_TRANSACTION) else f"{ctx.cost_ms}ms"
        table.append((ctx.trace_type.value, ctx.group, ctx.client_host, format_millis(ctx.timestamp), cost, status,
                      detail))
    return render_table(["Type", "Group", "ClientHost", "Time", "CostTimes", "Status", "Detail"], table)


@click.command("queryMsgTraceById")
@click.option("-i", "--msgId", "msg_id", required=True, help="Message id (the producer's UNIQ_KEY).")
@click.option("-t", "--traceTopic", "trace_topic", default=DEFAULT_TRACE_TOPIC, show_default=True,
              help="Topic the traces were written to.")
@json_option
@namesrv_option
@timeout_option
def query_msg_trace_by_id(msg_id: str, trace_topic: str, as_json: bool, namesrv: str | None, timeout: float) -> None:
    """Print the trace of one message: who sent it and who consumed it, when, how long it took."""
    validated_topic(trace_topic)

    async def action(admin: AdminClient) -> None:
        rows = await find_trace(admin, msg_id, trace_topic)
        if not rows:
            raise ClientError(f"no trace of message {msg_id!r} in topic {trace_topic!r}")
        if as_json:
            emit_json([{"type": c.trace_type.value, "group": c.group, "clientHost": c.client_host,
                        "timestamp": c.timestamp, "costMs": c.cost_ms, "success": c.success,
                        "requestId": c.request_id} for c in rows])
            return
        click.echo(render_trace(rows))

    run_admin(namesrv, timeout, action)


COMMANDS = [query_msg_trace_by_id]
