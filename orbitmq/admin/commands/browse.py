"""Message browsing commands of RocketMQ 4.9's mqadmin, with its flags and output lines:
printMsg, printMsgByQueue, queryCq. printMsg and printMsgByQueue draw a progress bar on stderr
while stdout is a terminal (`orbitmq.admin.jprint.Progress`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from orbitmq.admin.api import TOOLS_CONSUMER_GROUP, AdminClient
from orbitmq.admin.jprint import Progress, emit_json, jline, json_option, mq_text
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option
from orbitmq.admin.times import parse_timestamp
from orbitmq.client.queue import MessageQueue
from orbitmq.common import jsonbody
from orbitmq.common.message import MessageExt
from orbitmq.common.pull import PullStatus
from orbitmq.errors import ClientError

PULL_BATCH = 32


def java_timestamp(text: str, flag: str) -> int:
    """`timestampFormat`: milliseconds, or yyyy-MM-dd#HH:mm:ss:SSS."""
    try:
        return parse_timestamp(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=f"'-{flag}'") from None


def _host(addr: str) -> str:
    return f"/{addr}" if addr else "null"


def _java_bytes(body: bytes) -> str:
    return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in body) + "]"


def message_ext_text(msg: MessageExt, broker_name: str) -> str:
    """`MessageExt.toString()` (properties in stored order; Java's HashMap order may differ)."""
    props = ", ".join(f"{k}={v}" for k, v in msg.properties.items())
    inner = (f"Message{{topic='{msg.topic}', flag={msg.flag}, properties={{{props}}}, "
             f"body={_java_bytes(bytes(msg.body))}, transactionId='{msg.transaction_id or 'null'}'}}")
    return (f"MessageExt [brokerName={broker_name}, queueId={msg.queue_id}, storeSize={msg.store_size}, "
            f"queueOffset={msg.queue_offset}, sysFlag={msg.sys_flag}, bornTimestamp={msg.born_timestamp}, "
            f"bornHost={_host(msg.born_host)}, storeTimestamp={msg.store_timestamp}, "
            f"storeHost={_host(msg.store_host)}, msgId={msg.unique_key or msg.offset_msg_id or msg.msg_id}, "
            f"commitLogOffset={msg.commit_log_offset}, bodyCRC={msg.body_crc}, reconsumeTimes={msg.reconsume_times}, "
            f"preparedTransactionOffset={msg.prepared_transaction_offset}, toString()={inner}]")


def decode_body(body: bytes, charset: str) -> str:
    try:
        return bytes(body).decode(charset, errors="replace")
    except LookupError:
        raise click.BadParameter(f"unknown charset {charset!r}", param_hint="'-c'") from None


def tag_filter(expression: str) -> set[str] | None:
    """The tags of a `TagA || TagB` expression; None for `*` (Java's pull consumer filters exactly)."""
    value = expression.strip()
    if value in ("", "*"):
        return None
    return {t.strip() for t in value.split("||") if t.strip()}


def matches(msg: MessageExt, tags: set[str] | None) -> bool:
    return tags is None or (msg.tags or "") in tags


@dataclass
class Span:
    queue: MessageQueue
    addr: str
    low: int
    high: int


async def queue_span(
    admin: AdminClient, addr: str, queue: MessageQueue, begin: str | None, end: str | None,
) -> Span:
    low = await admin.min_offset(addr, queue)
    high = await admin.max_offset(addr, queue)
    if begin is not None:
        low = await admin.search_offset(addr, queue, java_timestamp(begin, "b"))
    if end is not None:
        high = await admin.search_offset(addr, queue, java_timestamp(end, "e"))
    return Span(queue, addr, low, high)


@click.command("printMsg")
@click.option("-t", "--topic", required=True, help="topic name")
@click.option("-c", "--charsetName", "charset", default="UTF-8", help="CharsetName(eg: UTF-8,GBK)")
@click.option("-s", "--subExpression", "expression", default="*", help="Subscribe Expression(eg: TagA || TagB)")
@click.option("-b", "--beginTimestamp", "begin", help="Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
@click.option("-e", "--endTimestamp", "end", help="End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
@click.option("-d", "--printBody", "print_body", type=click.BOOL, default=True, help="print body")
@json_option
@namesrv_option
@timeout_option
def print_msg(
    topic: str, charset: str, expression: str, begin: str | None, end: str | None, print_body: bool,
    as_json: bool, namesrv: str | None, timeout: float,
) -> None:
    """Print Message Detail: every message of every queue of the topic (within -b/-e)."""
    topic = topic.strip()
    tags = tag_filter(expression)
    decode_body(b"", charset)

    async def action(admin: AdminClient) -> None:
        route = await admin.topic_route(topic)
        masters = route.master_addrs()
        spans = [
            await queue_span(admin, masters[q.broker_name], q, begin, end)
            for q in route.read_queues(topic) if q.broker_name in masters
        ]
        found: list[dict[str, Any]] = []
        with Progress(sum(max(s.high - s.low, 0) for s in spans), "printMsg") as bar:
            for span in spans:
                q = span.queue
                if not as_json:
                    jline("minOffset=%s, maxOffset=%s, %s%n", span.low, span.high,
                          mq_text(q.topic, q.broker_name, q.queue_id))
                offset = span.low
                while offset < span.high:
                    result = await admin.pull(span.addr, q, offset, PULL_BATCH, TOOLS_CONSUMER_GROUP, expression)
                    next_offset = result.next_begin_offset
                    bar.advance(max(min(next_offset, span.high) - offset, 0))
                    status = result.status
                    if status is PullStatus.FOUND:
                        for msg in (m for m in result.messages if matches(m, tags)):
                            body = decode_body(msg.body, charset) if print_body else "NOT PRINT BODY"
                            if as_json:
                                found.append({"brokerName": q.broker_name, "queueId": q.queue_id,
                                              "queueOffset": msg.queue_offset, "msgId": msg.unique_key or msg.msg_id,
                                              "tags": msg.tags, "keys": msg.keys, "body": body})
                            else:
                                jline("MSGID: %s %s BODY: %s%n", msg.unique_key or msg.msg_id,
                                      message_ext_text(msg, q.broker_name), body)
                    elif status is PullStatus.NO_MATCHED_MSG:
                        if not as_json:
                            jline("%s no matched msg. status=%s, offset=%s%n",
                                  mq_text(q.topic, q.broker_name, q.queue_id), status.name, next_offset)
                    else:
                        if not as_json:
                            jline("%s print msg finished. status=%s, offset=%s%n",
                                  mq_text(q.topic, q.broker_name, q.queue_id), status.name, next_offset)
                        break
                    if next_offset <= offset:
                        break
                    offset = next_offset
                if not as_json:
                    jline("--------------------------------------------------------\n")
        if as_json:
            emit_json(found)

    run_admin(namesrv, timeout, action)


@click.command("printMsgByQueue")
@click.option("-t", "--topic", required=True, help="topic name")
@click.option("-a", "--brokerName", "broker_name", required=True, help="broker name")
@click.option("-i", "--queueId", "queue_id", type=click.IntRange(0), required=True, help="queue id")
@click.option("-c", "--charsetName", "charset", default="UTF-8", help="CharsetName(eg: UTF-8,GBK)")
@click.option("-s", "--subExpression", "expression", default="*", help="Subscribe Expression(eg: TagA || TagB)")
@click.option("-b", "--beginTimestamp", "begin", help="Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
@click.option("-e", "--endTimestamp", "end", help="End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
@click.option("-p", "--print msg", "print_message", type=click.BOOL, default=False,
              help="print msg. eg: true | false(default)")
@click.option("-d", "--printBody", "print_body", type=click.BOOL, default=False,
              help="print body. eg: true | false(default)")
@click.option("-f", "--calculate", type=click.BOOL, default=False, help="calculate by tag. eg: true | false(default)")
@json_option
@namesrv_option
@timeout_option
def print_msg_by_queue(
    topic: str, broker_name: str, queue_id: int, charset: str, expression: str, begin: str | None,
    end: str | None, print_message: bool, print_body: bool, calculate: bool, as_json: bool,
    namesrv: str | None, timeout: float,
) -> None:
    """Print Message Detail of one queue; -f counts the messages by tag."""
    topic, broker_name = topic.strip(), broker_name.strip()
    tags = tag_filter(expression)
    decode_body(b"", charset)

    async def action(admin: AdminClient) -> None:
        addr = await admin.broker_addr_of(topic, broker_name)
        q = MessageQueue(topic, broker_name, queue_id)
        span = await queue_span(admin, addr, q, begin, end)
        counts: dict[str, int] = {}
        found: list[dict[str, Any]] = []
        offset = span.low
        with Progress(max(span.high - span.low, 0), "printMsgByQueue") as bar:
            while offset < span.high:
                result = await admin.pull(addr, q, offset, PULL_BATCH, TOOLS_CONSUMER_GROUP, expression)
                bar.advance(max(min(result.next_begin_offset, span.high) - offset, 0))
                if result.status is not PullStatus.FOUND:
                    break
                for msg in (m for m in result.messages if matches(m, tags)):
                    if calculate and msg.tags and msg.tags.strip():
                        counts[msg.tags] = counts.get(msg.tags, 0) + 1
                    if not print_message:
                        continue
                    body = decode_body(msg.body, charset) if print_body else "NOT PRINT BODY"
                    if as_json:
                        found.append({"queueOffset": msg.queue_offset, "msgId": msg.unique_key or msg.msg_id,
                                      "tags": msg.tags, "keys": msg.keys, "body": body})
                    else:
                        jline("MSGID: %s %s BODY: %s%n", msg.unique_key or msg.msg_id,
                              message_ext_text(msg, broker_name), body)
                if result.next_begin_offset <= offset:
                    break
                offset = result.next_begin_offset
        ranked = sorted(counts.items(), key=lambda kv: -kv[1])
        if as_json:
            emit_json({"messages": found, "tagCounts": dict(ranked) if calculate else None})
            return
        for tag, count in ranked:
            jline("Tag: %-30s Count: %s%n", tag, count)

    run_admin(namesrv, timeout, action)


def consume_queue_data_text(unit: dict[str, Any]) -> str:
    """`ConsumeQueueData.toString()`."""
    def quoted(key: str) -> str:
        value = unit.get(key)
        return f"'{'null' if value is None else value}'"
    return (f"ConsumeQueueData{{physicOffset={unit.get('physicOffset')}, physicSize={unit.get('physicSize')}, "
            f"tagsCode={unit.get('tagsCode')}, extendDataJson={quoted('extendDataJson')}, "
            f"bitMap={quoted('bitMap')}, eval={'true' if unit.get('eval') else 'false'}, msg={quoted('msg')}}}")


def subscription_java_sets(sub: Any) -> Any:
    """SubscriptionData as fastjson prints it: `tagsSet` (HashSet<String>) and `codeSet`
    (HashSet<Integer>) in their HashSet iteration order."""
    if not isinstance(sub, dict):
        return sub
    out = dict(sub)
    tags = out.get("tagsSet")
    if isinstance(tags, list) and all(isinstance(t, str) for t in tags):
        tags = list(dict.fromkeys(tags))
        out["tagsSet"] = [tags[i] for i in jsonbody.java_hash_order(tags)]
    codes = out.get("codeSet")
    if isinstance(codes, list) and all(isinstance(c, int) for c in codes):
        codes = list(dict.fromkeys(codes))
        out["codeSet"] = [codes[i] for i in jsonbody.java_hash_order(codes, lambda c: c & 0xFFFFFFFF)]
    return out


@click.command("queryCq")
@click.option("-t", "--topic", required=True, help="topic name")
@click.option("-q", "--queue", "queue_id", type=click.IntRange(0), required=True, help="queue num, ie. 1")
@click.option("-i", "--index", type=click.IntRange(0), required=True, help="start queue index.")
@click.option("-c", "--count", type=click.IntRange(1), default=10, help="how many.")
@click.option("-b", "--broker", "broker_addr", help="broker addr.")
@click.option("-g", "--consumer", "group", help="consumer group.")
@json_option
@namesrv_option
@timeout_option
def query_cq(
    topic: str, queue_id: int, index: int, count: int, broker_addr: str | None, group: str | None,
    as_json: bool, namesrv: str | None, timeout: float,
) -> None:
    """Query cq command: raw ConsumeQueue entries (QUERY_CONSUME_QUEUE)."""
    topic = topic.strip()

    async def action(admin: AdminClient) -> None:
        addr = broker_addr.strip() if broker_addr else ""
        if not addr:
            route = await admin.topic_route(topic)
            if not route.broker_datas:
                raise ClientError("No topic route data!")
            addr = route.broker_datas[0].broker_addrs.get(0) or ""
            if not addr:
                raise ClientError("No topic route data!")
        body = await admin.query_consume_queue(addr, topic, queue_id, index, count, group)
        if as_json:
            emit_json(body)
            return
        if body.get("subscriptionData") is not None:
            jline("Subscription data: \n%s\n", jsonbody.dumps_pretty(subscription_java_sets(body["subscriptionData"])).decode())
            jline("======================================\n")
        if body.get("filterData") is not None:
            jline("Filter data: \n%s\n", body["filterData"])
            jline("======================================\n")
        jline("Queue data: \nmax: %d, min: %d\n", int(body.get("maxQueueIndex") or 0),
              int(body.get("minQueueIndex") or 0))
        jline("======================================\n")
        for i, unit in enumerate(body.get("queueData") or [], index):
            jline("%s", f"idx: {i}\n{consume_queue_data_text(unit)}\n======================================\n")

    run_admin(namesrv, timeout, action)


COMMANDS = [print_msg, print_msg_by_queue, query_cq]
