"""Statistics and probing commands of RocketMQ 4.9's mqadmin, with its flags and output lines:
statsAll, brokerConsumeStats, clusterRT, sendMsgStatus, checkMsgSendRT, producerConnection,
producer. Each listing command also takes `--json`.
"""

from __future__ import annotations

import asyncio
import math
import time
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import click

from orbitmq.admin.api import AdminClient
from orbitmq.admin.jprint import emit_json, front, java_date, jformat, jline, json_option, send_result_text
from orbitmq.admin.lookups import examine_consume_stats, query_topic_consume_by_who
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option
from orbitmq.admin.versions import version_desc
from orbitmq.client.queue import MessageQueue
from orbitmq.client.results import SendResult
from orbitmq.common import names
from orbitmq.common.consume_stats import ConsumeStats
from orbitmq.errors import BrokerError, ClientError, OrbitMQError

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
GROUP_GET_NUMS = "GROUP_GET_NUMS"


def compute_24hour_sum(data: dict[str, Any]) -> int:
    """StatsAllSubCommand.compute24HourSum: the day's sum, else the hour's, else the minute's."""
    for window in ("statsDay", "statsHour", "statsMinute"):
        total = int((data.get(window) or {}).get("sum") or 0)
        if total != 0:
            return total
    return 0


def minute_tps(data: dict[str, Any]) -> float:
    return float((data.get("statsMinute") or {}).get("tps") or 0.0)


async def topic_detail_rows(admin: AdminClient, topic: str, active_only: bool) -> list[dict[str, Any]]:
    """StatsAllSubCommand.printTopicDetail's figures: one row per consuming group (or NO_CONSUMER)."""
    route = await admin.topic_route(topic)
    try:
        groups = await query_topic_consume_by_who(admin, topic)
    except OrbitMQError:
        groups = []
    masters = list(route.master_addrs().values())
    in_tps = 0.0
    in_today = 0
    for addr in masters:
        try:
            data = await admin.broker_stats_data(addr, TOPIC_PUT_NUMS, topic)
        except OrbitMQError:
            continue
        in_tps += minute_tps(data)
        in_today += compute_24hour_sum(data)
    rows: list[dict[str, Any]] = []
    if not groups:
        if not active_only or in_today > 0:
            rows.append({"topic": topic, "group": "", "accumulation": 0, "inTps": in_tps, "outTps": None,
                         "inMsg24Hour": in_today, "outMsg24Hour": "NO_CONSUMER"})
        return rows
    for group in groups:
        out_tps = 0.0
        out_today = 0
        for addr in masters:
            try:
                data = await admin.broker_stats_data(addr, GROUP_GET_NUMS, f"{topic}@{group}")
            except OrbitMQError:
                continue
            out_tps += minute_tps(data)
            out_today += compute_24hour_sum(data)
        accumulate = 0
        try:
            stats = await examine_consume_stats(admin, group, topic)
            accumulate = max(0, sum(w.broker_offset - w.consumer_offset for w in stats.offset_table.values()))
        except OrbitMQError:
            pass
        if not active_only or in_today > 0 or out_today > 0:
            rows.append({"topic": topic, "group": group, "accumulation": accumulate, "inTps": in_tps,
                         "outTps": out_tps, "inMsg24Hour": in_today, "outMsg24Hour": out_today})
    return rows


@click.command("statsAll")
@click.option("-a", "--activeTopic", "active_topic", is_flag=True, help="print active topic only")
@click.option("-t", "--topic", help="print select topic only")
@json_option
@namesrv_option
@timeout_option
def stats_all(active_topic: bool, topic: str | None, as_json: bool, namesrv: str | None, timeout: float) -> None:
    """Topic and Consumer tps stats."""

    async def action(admin: AdminClient) -> None:
        rows: list[dict[str, Any]] = []
        if not as_json:
            jline("%-64s  %-64s %12s %11s %11s %14s %14s%n", "#Topic", "#Consumer Group", "#Accumulation",
                  "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour")
        for name in await admin.topic_list():
            if name.startswith((names.RETRY_GROUP_TOPIC_PREFIX, names.DLQ_GROUP_TOPIC_PREFIX)):
                continue
            if topic and name != topic:
                continue
            try:
                found = await topic_detail_rows(admin, name, active_topic)
            except OrbitMQError:
                continue  # RocketMQ skips a topic whose figures cannot be read
            rows.extend(found)
            if as_json:
                continue
            for row in found:
                if row["outTps"] is None:
                    jline("%-64s  %-64s %12d %11.2f %11s %14d %14s%n", front(row["topic"], 64), "", 0,
                          row["inTps"], "", row["inMsg24Hour"], "NO_CONSUMER")
                else:
                    jline("%-64s  %-64s %12d %11.2f %11.2f %14d %14d%n", front(row["topic"], 64),
                          front(row["group"], 64), row["accumulation"], row["inTps"], row["outTps"],
                          row["inMsg24Hour"], row["outMsg24Hour"])
        if as_json:
            emit_json(rows)

    run_admin(namesrv, timeout, action)


@click.command("brokerConsumeStats")
@click.option("-b", "--brokerAddr", "broker_addr", required=True, help="Broker address")
@click.option("-t", "--timeoutMillis", "timeout_millis", type=click.IntRange(1), default=50000,
              help="request timeout Millis")
@click.option("-l", "--level", type=int, default=0, help="threshold of print diff")
@click.option("-o", "--order", type=click.BOOL, default=False, help="order topic")
@json_option
@namesrv_option
def broker_consume_stats(
    broker_addr: str, timeout_millis: int, level: int, order: bool, as_json: bool, namesrv: str | None,
) -> None:
    """Fetch broker consume stats data (GET_BROKER_CONSUME_STATS)."""

    async def action(admin: AdminClient) -> None:
        doc = await admin.broker_consume_stats(broker_addr.strip(), order)
        rows: list[dict[str, Any]] = []
        for entry in doc.get("consumeStatsList") or []:
            for group, stats_list in (entry or {}).items():
                for raw in stats_list or []:
                    stats = ConsumeStats.from_json(raw)
                    for mq, w in sorted(stats.offset_table.items()):
                        diff = w.broker_offset - w.consumer_offset
                        if diff < level or w.last_timestamp <= 0:
                            continue
                        rows.append({"topic": mq.topic, "group": group, "brokerName": mq.broker_name,
                                     "queueId": mq.queue_id, "brokerOffset": w.broker_offset,
                                     "consumerOffset": w.consumer_offset, "diff": diff,
                                     "lastTime": java_date(w.last_timestamp)})
        total = int(doc.get("totalDiff") or 0)
        if as_json:
            emit_json({"brokerAddr": doc.get("brokerAddr"), "totalDiff": total, "rows": rows})
            return
        jline("%-64s  %-64s  %-32s  %-4s  %-20s  %-20s  %-20s  %s%n", "#Topic", "#Group", "#Broker Name", "#QID",
              "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime")
        for r in rows:
            jline("%-64s  %-64s  %-32s  %-4d  %-20d  %-20d  %-20d  %s%n", front(r["topic"], 64), r["group"],
                  front(r["brokerName"], 32), r["queueId"], r["brokerOffset"], r["consumerOffset"], r["diff"],
                  r["lastTime"])
        jline("%nDiff Total: %d%n", total)

    run_admin(namesrv, timeout_millis / 1000.0, action)


async def timed_send(admin: AdminClient, topic: str, body: bytes, queue: MessageQueue | None = None,
                     addr: str | None = None) -> tuple[bool, int, SendResult | None]:
    """One send as the Java tools time it: (succeeded, elapsed ms, result)."""
    start = time.monotonic()
    try:
        if queue is None or addr is None:
            addr, queue = await admin.pick_write_queue(topic)
        result: SendResult | None = await admin.send_message(addr, queue, body)
        ok = True
    except OrbitMQError:
        result, ok = None, False
    return ok, int((time.monotonic() - start) * 1000), result


@click.command("clusterRT")
@click.option("-a", "--amount", type=click.IntRange(1), default=100, help="message amount | default 100")
@click.option("-s", "--size", type=click.IntRange(0), default=128, help="message size | default 128 Byte")
@click.option("-c", "--cluster", help="cluster name | default display all cluster")
@click.option("-p", "--print log", "print_log", type=click.BOOL, default=False, help="print as tlog | default false")
@click.option("-m", "--machine room", "machine_room", default="noname", help="machine room name | default noname")
@click.option("-i", "--interval", type=click.IntRange(0), default=10, help="print interval | default 10 seconds")
@click.option("--rounds", type=click.IntRange(1), default=None,
              help="OrbitMQ: stop after this many rounds (RocketMQ's runs until interrupted).")
@namesrv_option
@timeout_option
def cluster_rt(
    amount: int, size: int, cluster: str | None, print_log: bool, machine_room: str, interval: int,
    rounds: int | None, namesrv: str | None, timeout: float,
) -> None:
    """List All clusters Message Send RT: sends to each broker's own topic (named after the broker)."""

    async def action(admin: AdminClient) -> None:
        info = await admin.cluster_info()
        clusters = [cluster.strip()] if cluster else list(info.cluster_addr_table)
        body = b"a" * size
        if not print_log:
            jline("%-24s  %-24s  %-4s  %-8s  %-8s%n", "#Cluster Name", "#Broker Name", "#RT", "#successCount",
                  "#failCount")
        done = 0
        while True:
            for name in clusters:
                brokers = info.cluster_addr_table.get(name)
                if brokers is None:
                    jline("cluster [%s] not exist", name)
                    break
                for broker_name in brokers:
                    elapsed = success = fail = 0
                    for i in range(amount):
                        ok, ms, _ = await timed_send(admin, broker_name, body)
                        success += ok
                        fail += not ok
                        if i != 0:
                            elapsed += ms
                    rt = elapsed / (amount - 1) if amount > 1 else float("nan")
                    if not print_log:
                        jline("%-24s  %-24s  %-8s  %-16s  %-16s%n", name, broker_name, f"{rt:.2f}", success, fail)
                    else:
                        now = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() + 8 * 3600))
                        rounded = "NaN" if math.isnan(rt) else Decimal(rt).quantize(Decimal(1), ROUND_HALF_UP)
                        jline("%s", f"{now}|{machine_room}|{name}|{broker_name}|{rounded}\n")
            done += 1
            if rounds is not None and done >= rounds:
                return
            await asyncio.sleep(interval)

    run_admin(namesrv, timeout, action)


@click.command("sendMsgStatus")
@click.option("-b", "--brokerName", "broker_name", required=True, help="Broker Name")
@click.option("-s", "--messageSize", "message_size", type=click.IntRange(0), default=128,
              help="Message Size, Default: 128")
@click.option("-c", "--count", type=click.IntRange(0), default=50, help="send message count, Default: 50")
@namesrv_option
@timeout_option
def send_msg_status(broker_name: str, message_size: int, count: int, namesrv: str | None, timeout: float) -> None:
    """send msg to broker: to the topic named after the broker, printing each send's RT and result."""
    broker_name = broker_name.strip()

    def body(size: int) -> bytes:
        return b"hello jodie" * ((size + 10) // 11)

    async def action(admin: AdminClient) -> None:
        addr, queue = await admin.pick_write_queue(broker_name)
        await admin.send_message(addr, queue, body(16))  # warm-up, as RocketMQ's
        for _ in range(count):
            begin = time.monotonic()
            addr, queue = await admin.pick_write_queue(broker_name)
            result = await admin.send_message(addr, queue, body(message_size))
            jline("rt=%sms, SendResult=%s%n", int((time.monotonic() - begin) * 1000), send_result_text(result))

    run_admin(namesrv, timeout, action)


@click.command("checkMsgSendRT")
@click.option("-t", "--topic", required=True, help="topic name")
@click.option("-a", "--amount", type=click.IntRange(1), default=100, help="message amount | default 100")
@click.option("-s", "--size", type=click.IntRange(0), default=128, help="message size | default 128 Byte")
@namesrv_option
@timeout_option
def check_msg_send_rt(topic: str, amount: int, size: int, namesrv: str | None, timeout: float) -> None:
    """check message send response time: message i goes to queue i % queues, as RocketMQ's selector."""
    topic = topic.strip()

    async def action(admin: AdminClient) -> None:
        route = await admin.topic_route(topic)
        queues = route.write_queues(topic)
        if not queues:
            raise ClientError(f"topic {topic!r} has no writable queue")
        masters = route.master_addrs()
        jline("%-32s  %-4s  %-20s    %s%n", "#Broker Name", "#QID", "#Send Result", "#RT")
        elapsed = 0
        body = b"a" * size
        for i in range(amount):
            queue = queues[i % len(queues)]
            ok, ms, _ = await timed_send(admin, topic, body, queue, masters.get(queue.broker_name))
            if i != 0:
                elapsed += ms
            jline("%-32s  %-4s  %-20s    %s%n", queue.broker_name, queue.queue_id, ok, ms)
        rt = elapsed / (amount - 1) if amount > 1 else float("nan")
        jline("Avg RT: %s%n", "NaN" if math.isnan(rt) else f"{rt:.2f}")

    run_admin(namesrv, timeout, action)


@click.command("producerConnection")
@click.option("-g", "--producerGroup", "group", required=True, help="producer group name")
@click.option("-t", "--topic", required=True, help="topic name")
@json_option
@namesrv_option
@timeout_option
def producer_connection(group: str, topic: str, as_json: bool, namesrv: str | None, timeout: float) -> None:
    """Query producer's socket connection and client version (asked of the topic's first broker)."""
    group, topic = group.strip(), topic.strip()

    async def action(admin: AdminClient) -> None:
        route = await admin.topic_route(topic)
        addr = next((b.select_addr() for b in route.broker_datas if b.select_addr()), None)
        if addr is None:
            raise ClientError(f"topic {topic!r} has no broker")
        response_conns = await admin.producer_connection(addr, group)
        if not response_conns:
            raise BrokerError.for_code(1, f"the producer group[{group}] not online")
        if as_json:
            emit_json([{"clientId": c.client_id, "clientAddr": c.client_addr, "language": c.language,
                        "version": version_desc(c.version)} for c in response_conns])
            return
        for i, c in enumerate(response_conns, 1):
            jline("%04d  %-32s %-22s %-8s %s%n", i, c.client_id, c.client_addr, c.language, version_desc(c.version))

    run_admin(namesrv, timeout, action)


@click.command("producer")
@click.option("-b", "--broker", "broker_addr", required=True, help="broker address")
@json_option
@namesrv_option
@timeout_option
def producer(broker_addr: str, as_json: bool, namesrv: str | None, timeout: float) -> None:
    """Query producer's instances, connection, status, etc."""

    async def action(admin: AdminClient) -> None:
        data = await admin.all_producer_info(broker_addr.strip())
        if as_json:
            emit_json(data)
            return
        for group, instances in data.items():
            if not instances:
                jline("producer group (%s) instances are empty\n", group)
                continue
            for p in instances:
                text = jformat("clientId=%s,remoteIP=%s, language=%s, version=%d, lastUpdateTimestamp=%d",
                    p.get("clientId"), p.get("remoteIP"), p.get("language"), int(p.get("version") or 0),
                    int(p.get("lastUpdateTimestamp") or 0))
                jline("producer group (%s) instance : %s\n", group, text)

    run_admin(namesrv, timeout, action)


COMMANDS = [
    stats_all, broker_consume_stats, cluster_rt, send_msg_status, check_msg_send_rt, producer_connection, producer,
]
