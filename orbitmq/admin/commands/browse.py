"""Message browsing, offset and export commands of RocketMQ 4.9's mqadmin, with its flags and
output lines: printMsg, printMsgByQueue, queryCq, cloneGroupOffset, resetOffsetByTimeOld,
skipAccumulatedMessage, exportMetadata, exportConfigs, exportMetrics, startMonitoring.

Long commands (printMsg over a big topic, cloneGroupOffset, the exports) draw a progress bar
on stderr while stdout is a terminal (`orbitmq.admin.jprint.Progress`).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any

import click

from orbitmq.admin.api import TOOLS_CONSUMER_GROUP, AdminClient
from orbitmq.admin.commands.stats import (
    TOPIC_PUT_NUMS,
    compute_24hour_sum,
    minute_tps,
)
from orbitmq.admin.jprint import Progress, emit_json, front, jformat, jline, json_option, mq_text
from orbitmq.admin.lookups import examine_consume_stats
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option
from orbitmq.admin.times import parse_timestamp
from orbitmq.admin.versions import version_desc
from orbitmq.client.queue import MessageQueue
from orbitmq.common import jsonbody, names
from orbitmq.common.consume_stats import OffsetWrapper
from orbitmq.common.message import MessageExt
from orbitmq.common.pull import PullStatus
from orbitmq.errors import ClientError, ConsumerNotOnline, OrbitMQError

#: Where the export commands write without -f (RocketMQ's default).
DEFAULT_EXPORT_PATH = "/tmp/rocketmq/export"
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
            jline("Subscription data: \n%s\n", jsonbody.dumps_pretty(body["subscriptionData"]).decode())
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


# --- exports -----------------------------------------------------------------------------


async def user_topic_config(admin: AdminClient, addr: str, special_topic: bool) -> dict[str, Any]:
    """DefaultMQAdminExt.getUserTopicConfig: the topic table without system topics (and, unless
    `special_topic`, without retry and dead-letter topics)."""
    wrapper = await admin.all_topic_config(addr)
    system = set(await admin.system_topics_from_broker(addr))
    table = {
        name: config for name, config in (wrapper.get("topicConfigTable") or {}).items()
        if name not in system
        and (special_topic or not name.startswith((names.RETRY_GROUP_TOPIC_PREFIX, names.DLQ_GROUP_TOPIC_PREFIX)))
    }
    return dict(wrapper, topicConfigTable=dict(sorted(table.items())))


async def user_subscription_groups(admin: AdminClient, addr: str) -> dict[str, Any]:
    """DefaultMQAdminExt.getUserSubscriptionGroup: without the CID_RMQ_SYS_ groups."""
    wrapper = await admin.all_subscription_group_config(addr)
    table = {
        name: config for name, config in (wrapper.get("subscriptionGroupTable") or {}).items()
        if not name.startswith(names.CID_RMQ_SYS_PREFIX)
    }
    return dict(wrapper, subscriptionGroupTable=dict(sorted(table.items())))


def write_export(path: str, value: Any) -> None:
    """`MixAll.string2FileNotSafe(JSON.toJSONString(value, true), path)`."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(jsonbody.dumps_pretty(value))


@click.command("exportMetadata")
@click.option("-c", "--clusterName", "cluster", help="choose a cluster to export")
@click.option("-b", "--brokerAddr", "broker_addr", help="choose a broker to export")
@click.option("-f", "--filePath", "file_path", default=DEFAULT_EXPORT_PATH,
              help="export metadata.json path | default /tmp/rocketmq/export")
@click.option("-t", "--topic", "only_topics", is_flag=True, help="only export topic metadata")
@click.option("-g", "--subscriptionGroup", "only_groups", is_flag=True, help="only export subscriptionGroup metadata")
@click.option("-s", "--specialTopic", "special_topic", is_flag=True, help="need retryTopic and dlqTopic")
@namesrv_option
@timeout_option
def export_metadata(
    cluster: str | None, broker_addr: str | None, file_path: str, only_topics: bool, only_groups: bool,
    special_topic: bool, namesrv: str | None, timeout: float,
) -> None:
    """export metadata: topics and subscription groups as JSON (-b wins over -c, as in RocketMQ)."""
    file_path = file_path.strip()
    if not broker_addr and not cluster:
        raise click.UsageError("give -b brokerAddr or -c clusterName")
    if broker_addr and not (only_topics or only_groups):
        raise click.UsageError("with -b, give -t (topics) or -g (subscription groups)")

    async def action(admin: AdminClient) -> None:
        if broker_addr:
            addr = broker_addr.strip()
            if only_topics:
                path = os.path.join(file_path, "topic.json")
                write_export(path, await user_topic_config(admin, addr, special_topic))
            else:
                path = os.path.join(file_path, "subscriptionGroup.json")
                write_export(path, await user_subscription_groups(admin, addr))
            jline("export %s success", path)
            return
        assert cluster is not None
        masters = sorted((await admin.cluster_masters(cluster.strip())).values())
        topics: dict[str, dict[str, Any]] = {}
        groups: dict[str, dict[str, Any]] = {}
        with Progress(len(masters), "exportMetadata") as bar:
            for addr in masters:
                for name, config in ((await user_topic_config(admin, addr, special_topic))
                                     .get("topicConfigTable") or {}).items():
                    known = topics.get(name)
                    merged = dict(config)
                    if known is not None:  # queue counts add up across brokers
                        merged["writeQueueNums"] = int(known["writeQueueNums"]) + int(config["writeQueueNums"])
                        merged["readQueueNums"] = int(known["readQueueNums"]) + int(config["readQueueNums"])
                    topics[name] = merged
                for name, config in ((await user_subscription_groups(admin, addr))
                                     .get("subscriptionGroupTable") or {}).items():
                    known = groups.get(name)
                    merged = dict(config)
                    if known is not None:
                        merged["retryQueueNums"] = int(known.get("retryQueueNums", 0)) + int(config.get("retryQueueNums", 0))
                    groups[name] = merged
                bar.advance()
        result: dict[str, Any] = {}
        if only_topics:
            result["topicConfigTable"] = dict(sorted(topics.items()))
            path = os.path.join(file_path, "topic.json")
        elif only_groups:
            result["subscriptionGroupTable"] = dict(sorted(groups.items()))
            path = os.path.join(file_path, "subscriptionGroup.json")
        else:
            result["topicConfigTable"] = dict(sorted(topics.items()))
            result["subscriptionGroupTable"] = dict(sorted(groups.items()))
            path = os.path.join(file_path, "metadata.json")
        result["exportTime"] = int(time.time() * 1000)
        write_export(path, result)
        jline("export %s success%n", path)

    run_admin(namesrv, timeout, action)


#: The broker settings exportConfigs keeps (ExportConfigsCommand.needBrokerProprties).
EXPORTED_BROKER_KEYS = (
    "brokerClusterName", "brokerId", "brokerName", "brokerRole", "fileReservedTime", "filterServerNums",
    "flushDiskType", "maxMessageSize", "messageDelayLevel", "msgTraceTopicName", "slaveReadEnable", "traceOn",
    "traceTopicEnable", "useTLS", "autoCreateTopicEnable", "autoCreateSubscriptionGroup",
)


@click.command("exportConfigs")
@click.option("-c", "--clusterName", "cluster", required=True, help="choose a cluster to export")
@click.option("-f", "--filePath", "file_path", default=DEFAULT_EXPORT_PATH,
              help="export configs.json path | default /tmp/rocketmq/export")
@namesrv_option
@timeout_option
def export_configs(cluster: str, file_path: str, namesrv: str | None, timeout: float) -> None:
    """export configs: each master's main settings and the cluster's size, as configs.json."""

    async def action(admin: AdminClient) -> None:
        info = await admin.cluster_info()
        brokers = [info.broker_addr_table[n] for n in info.cluster_addr_table.get(cluster.strip(), ())
                   if n in info.broker_addr_table]
        configs: dict[str, dict[str, str]] = {}
        masters = slaves = 0
        with Progress(len(brokers), "exportConfigs") as bar:
            for data in brokers:
                master = data.master_addr
                if master:
                    props = await admin.broker_config(master)
                    masters += 1
                    slaves += sum(1 for bid in data.broker_addrs if bid != 0)
                    configs[props.get("brokerName", data.broker_name)] = {
                        k: props[k] for k in EXPORTED_BROKER_KEYS if k in props
                    }
                bar.advance()
        result = {
            "brokerConfigs": configs,
            "clusterScale": {"namesrvSize": len(admin.namesrv_addrs), "masterBrokerSize": masters,
                             "slaveBrokerSize": slaves},
        }
        path = os.path.join(file_path.strip(), "configs.json")
        write_export(path, result)
        jline("export %s success", path)

    run_admin(namesrv, timeout, action)


@click.command("exportMetrics")
@click.option("-c", "--clusterName", "cluster", required=True, help="choose a cluster to export")
@click.option("-f", "--filePath", "file_path", default=DEFAULT_EXPORT_PATH,
              help="export metrics.json path | default /tmp/rocketmq/export")
@namesrv_option
@timeout_option
def export_metrics(cluster: str, file_path: str, namesrv: str | None, timeout: float) -> None:
    """export metrics: each master's runtime figures, TPS and one-day counts, as metrics.json."""

    async def action(admin: AdminClient) -> None:
        async def stats_or_none(addr: str, topic: str) -> dict[str, Any] | None:
            try:
                return await admin.broker_stats_data(addr, TOPIC_PUT_NUMS, topic)
            except OrbitMQError:
                return None

        info = await admin.cluster_info()
        total_tps = dict.fromkeys(("totalNormalInTps", "totalNormalOutTps", "totalTransInTps", "totalScheduleInTps"), 0.0)
        total_day = dict.fromkeys(("normalOneDayInNum", "normalOneDayOutNum", "transOneDayInNum",
                                   "scheduleOneDayInNum"), 0)
        report: dict[str, Any] = {}
        names_in_cluster = list(info.cluster_addr_table.get(cluster.strip(), ()))
        with Progress(len(names_in_cluster), "exportMetrics") as bar:
            for broker_name in names_in_cluster:
                data = info.broker_addr_table.get(broker_name)
                addr = data.broker_addrs.get(0) if data is not None else None
                bar.advance()
                if not addr:
                    continue
                kv = await admin.broker_runtime_info(addr)
                props = await admin.broker_config(addr)
                groups = (await user_subscription_groups(admin, addr)).get("subscriptionGroupTable") or {}
                topics = (await user_topic_config(admin, addr, False)).get("topicConfigTable") or {}
                trans = await stats_or_none(addr, names.TRANS_HALF_TOPIC)
                schedule = await stats_or_none(addr, names.SCHEDULE_TOPIC)
                tps = {
                    "normalInTps": float((kv.get("putTps") or "0").split(" ")[0]),
                    "normalOutTps": float((kv.get("getTransferedTps") or "0").split(" ")[0]),
                    "transInTps": minute_tps(trans) if trans else 0.0,
                    "scheduleInTps": minute_tps(schedule) if schedule else 0.0,
                }
                day = {
                    "normalOneDayInNum": int(kv.get("msgPutTotalTodayMorning") or 0)
                    - int(kv.get("msgPutTotalYesterdayMorning") or 0),
                    "normalOneDayOutNum": int(kv.get("msgGetTotalTodayMorning") or 0)
                    - int(kv.get("msgGetTotalYesterdayMorning") or 0),
                    "transOneDayInNum": compute_24hour_sum(trans) if trans else 0,
                    "scheduleOneDayInNum": compute_24hour_sum(schedule) if schedule else 0,
                }
                for key, total_key in zip(tps, total_tps):
                    total_tps[total_key] += tps[key]
                for key, count in day.items():
                    total_day[key] += count
                clients: set[str] = set()
                for group in groups:
                    try:
                        conn = await admin.consumer_connection(addr, group)
                    except OrbitMQError:
                        continue
                    clients.update(f"{c.language}%{version_desc(c.version)}" for c in conn.connections)
                report[broker_name] = {
                    "runtimeEnv": {"cpuNum": props.get("clientCallbackExecutorThreads"),
                                   "totalMemKBytes": kv.get("totalMemKBytes")},
                    "runtimeQuota": {
                        "diskRatio": {"commitLogDiskRatio": kv.get("commitLogDiskRatio"),
                                      "consumeQueueDiskRatio": kv.get("consumeQueueDiskRatio")},
                        "tps": tps, "oneDayNum": day, "messageAverageSize": kv.get("putMessageAverageSize"),
                        "topicSize": len(topics), "groupSize": len(groups),
                    },
                    "runtimeVersion": {"rocketmqVersion": "V4_9_7", "clientInfo": sorted(clients)},
                }
        result = {"evaluateReport": report, "totalData": {"totalTps": total_tps, "totalOneDayNum": total_day}}
        path = os.path.join(file_path.strip(), "metrics.json")
        write_export(path, result)
        jline("export %s success", path)

    run_admin(namesrv, timeout, action)


# --- monitoring ----------------------------------------------------------------------------


async def undone_messages(admin: AdminClient, group: str) -> list[str]:
    """MonitorService.reportUndoneMsgs: per topic, the group's total and worst-queue lag and delay."""
    stats = await examine_consume_stats(admin, group)
    by_topic: dict[str, list[tuple[MessageQueue, OffsetWrapper]]] = {}
    for mq, wrapper in stats.offset_table.items():
        by_topic.setdefault(mq.topic, []).append((mq, wrapper))
    lines = []
    now = int(time.time() * 1000)
    for topic, queues in sorted(by_topic.items()):
        total = single = delay = 0
        for _, w in queues:
            diff = w.broker_offset - w.consumer_offset
            total += diff
            single = max(single, diff)
            if diff > 0 and w.last_timestamp > 0:
                delay = max(delay, now - w.last_timestamp)
        lines.append(jformat(
            "[UNDONE_MSGS] UndoneMsgs [consumerGroup=%s, topic=%s, undoneMsgsTotal=%d, undoneMsgsSingleMQ=%d, "
            "undoneMsgsDelayTimeMills=%d]", group, topic, total, single, delay))
    return lines


@click.command("startMonitoring")
@click.option("--interval", type=click.FloatRange(0.0), default=20.0, show_default=True,
              help="OrbitMQ: seconds between rounds (RocketMQ's MonitorConfig.roundInterval).")
@click.option("--rounds", type=click.IntRange(1), default=None,
              help="OrbitMQ: stop after this many rounds (RocketMQ's runs until interrupted).")
@namesrv_option
@timeout_option
def start_monitoring(interval: float, rounds: int | None, namesrv: str | None, timeout: float) -> None:
    """Start Monitoring: each round, every consumer group's undone messages (MonitorService)."""

    async def action(admin: AdminClient) -> None:
        done = 0
        while True:
            jline("%s%n", f"[MONITOR] round {done + 1} at {time.strftime('%Y-%m-%d %H:%M:%S')}")
            for topic in await admin.topic_list():
                if not topic.startswith(names.RETRY_GROUP_TOPIC_PREFIX):
                    continue
                group = topic[len(names.RETRY_GROUP_TOPIC_PREFIX):]
                try:
                    for line in await undone_messages(admin, group):
                        jline("%s%n", line)
                except OrbitMQError as exc:
                    click.echo(f"warning: {group}: {exc}", err=True)
            done += 1
            if rounds is not None and done >= rounds:
                return
            await asyncio.sleep(interval)

    run_admin(namesrv, timeout, action)


COMMANDS = [
    print_msg, print_msg_by_queue, query_cq, clone_group_offset, reset_offset_by_time_old, skip_accumulated_message,
    export_metadata, export_configs, export_metrics, start_monitoring,
]
