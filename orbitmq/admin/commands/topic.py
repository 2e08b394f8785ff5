"""Topic commands: updateTopic, deleteTopic, topicList, topicRoute, topicStatus."""

from __future__ import annotations

import asyncio
import json

import click

from orbitmq.admin.api import AdminClient
from orbitmq.admin.jprint import emit_json, front, jline, json_option, table_json
from orbitmq.admin.lookups import query_topic_consume_by_who
from orbitmq.admin.models import TopicConfig, TopicRouteData
from orbitmq.admin.output import format_millis
from orbitmq.admin.runner import F, namesrv_option, run_admin, timeout_option
from orbitmq.client.validation import check_topic
from orbitmq.common import jsonbody, names
from orbitmq.common.topic_config import merge_attributes
from orbitmq.errors import MessageValidationError, OrbitMQError, TopicNotExist

#: NameServer KV namespace holding `brokerName:queueNums;...` for ordered topics.
ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"



def topic_argument(func: F) -> F:
    return click.option("-t", "--topic", required=True, help="Topic name.")(func)


def validated_topic(topic: str) -> str:
    try:
        check_topic(topic)
    except MessageValidationError as exc:
        raise click.BadParameter(str(exc), param_hint="'-t' / '--topic'") from None
    return topic


@click.command("updateTopic")
@topic_argument
@click.option("-b", "--brokerAddr", "broker_addr", help="Create on this broker (host:port).")
@click.option("-c", "--clusterName", "cluster", help="Create on every master of this cluster.")
@click.option("-r", "--readQueueNums", "read_queues", type=click.IntRange(1, 1024), default=8, show_default=True)
@click.option("-w", "--writeQueueNums", "write_queues", type=click.IntRange(1, 1024), default=8, show_default=True)
@click.option("-p", "--perm", type=click.IntRange(0, 7), default=6, show_default=True,
              help="Permission bits: 4 read, 2 write, 1 inherit.")
@click.option("-o", "--order", type=click.BOOL, default=False, show_default=True, help="Ordered topic (true/false).")
@click.option("-u", "--unit", type=click.BOOL, default=False, help="is unit topic (true|false)")
@click.option("-s", "--hasUnitSub", "has_unit_sub", type=click.BOOL, default=False, help="has unit sub (true|false)")
@click.option("-a", "--attributes", help="Attribute changes, RocketMQ 5's form: +name=value,-name; others are "
              "kept (e.g. +duplicateDetectionWindowSeconds=120, +orbitmq.ttl.ms=60000).")
@namesrv_option
@timeout_option
def update_topic(
    topic: str, broker_addr: str | None, cluster: str | None, read_queues: int, write_queues: int,
    perm: int, order: bool, unit: bool, has_unit_sub: bool, attributes: str | None, namesrv: str | None,
    timeout: float,
) -> None:
    """Create a topic or change its queue counts and permission."""
    validated_topic(topic)
    if not broker_addr and not cluster:
        raise click.UsageError("give -b brokerAddr or -c clusterName (-b wins when both are given, as in RocketMQ)")
    if attributes:
        try:
            merge_attributes((), attributes)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="'-a' / '--attributes'") from None
    # TopicSysFlag.buildSysFlag(unit, hasUnitSub), as RocketMQ's updateTopic -u/-s.
    sys_flag = (names.TOPIC_FLAG_UNIT if unit else 0) | (names.TOPIC_FLAG_UNIT_SUB if has_unit_sub else 0)
    config = TopicConfig(topic, read_queues, write_queues, perm, topic_sys_flag=sys_flag, order=order)

    async def action(admin: AdminClient) -> None:
        if broker_addr:
            targets = {broker_addr: broker_addr}
        else:
            assert cluster is not None
            targets = await admin.cluster_masters(cluster)
        for addr in targets.values():
            await admin.create_topic(addr, config, attributes=attributes)
            click.echo(f"create topic to {addr} success.")
        if order and cluster and not broker_addr:
            # Ordered topics pin their queues through the NameServer's KV table.
            conf = ";".join(f"{name}:{write_queues}" for name in sorted(targets))
            await admin.put_kv_config(ORDER_TOPIC_CONFIG, topic, conf)
            click.echo(f"set cluster orderConf. isOrder={order}, orderConf=[{conf}]")
        click.echo(str(config))

    run_admin(namesrv, timeout, action)


@click.command("deleteTopic")
@topic_argument
@click.option("-c", "--clusterName", "cluster", required=True, help="Delete from every master of this cluster.")
@namesrv_option
@timeout_option
def delete_topic(topic: str, cluster: str, namesrv: str | None, timeout: float) -> None:
    """Delete a topic from a cluster's brokers and from the NameServers."""
    validated_topic(topic)

    async def action(admin: AdminClient) -> None:
        masters = await admin.cluster_masters(cluster)
        for addr in masters.values():
            await admin.delete_topic_in_broker(addr, topic)
        await admin.delete_topic_in_namesrv(topic, cluster)
        click.echo(f"delete topic [{topic}] from cluster [{cluster}] success.")

    run_admin(namesrv, timeout, action)


@click.command("topicList")
@click.option("-c", "--clusterModel", "cluster_mode", is_flag=True,
              help="clusterModel: each topic's cluster and the groups consuming it.")
@json_option
@namesrv_option
@timeout_option
def topic_list(cluster_mode: bool, as_json: bool, namesrv: str | None, timeout: float) -> None:
    """Fetch all topic list from name server (TopicListSubCommand's columns with -c)."""

    async def action(admin: AdminClient) -> None:
        topics = await admin.topic_list()
        if not cluster_mode:
            if as_json:
                emit_json(topics)
                return
            for topic in topics:
                jline("%s%n", topic)
            return
        info = await admin.cluster_info()
        # Retry and dead-letter topics belong to groups, not to users; mqadmin hides them here too.
        shown = [t for t in topics if not t.startswith((names.RETRY_GROUP_TOPIC_PREFIX, names.DLQ_GROUP_TOPIC_PREFIX))]
        rows: list[dict[str, str]] = []
        for topic in shown:
            cluster, groups = "", [""]
            try:
                route = await admin.topic_route(topic)
                if route.broker_datas:
                    first = route.broker_datas[0].broker_name
                    cluster = next((c for c, b in info.cluster_addr_table.items() if first in b), "")
                groups = await query_topic_consume_by_who(admin, topic) or [""]
            except TopicNotExist:
                continue  # deleted between the list and the route query
            except OrbitMQError:
                pass  # RocketMQ prints the topic with what it could learn
            rows.extend({"clusterName": cluster, "topic": topic, "consumerGroup": g} for g in groups)
        if as_json:
            emit_json(rows)
            return
        jline("%-20s  %-48s  %-48s%n", "#Cluster Name", "#Topic", "#Consumer Group")
        for row in rows:
            jline("%-20s  %-64s  %-64s%n", front(row["clusterName"], 20), front(row["topic"], 64),
                  front(row["consumerGroup"], 64))

    run_admin(namesrv, timeout, action)


ROUTE_LIST_FORMAT = "%-45s %-32s %-50s %-10s %-11s %-5s%n"


def print_route_list(route: TopicRouteData) -> None:
    """TopicRouteSubCommand.printData in list form: a line per broker, a rule, the totals."""
    queues = {q.broker_name: q for q in route.queue_datas}
    jline(ROUTE_LIST_FORMAT, "#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")
    total_read = total_write = 0
    for broker in sorted(route.broker_datas, key=lambda b: b.broker_name):
        q = queues.get(broker.broker_name)
        read, write, perm = (q.read_queue_nums, q.write_queue_nums, q.perm) if q else (0, 0, 0)
        total_read += read
        total_write += write
        addrs = "{" + ", ".join(f"{bid}={addr}" for bid, addr in sorted(broker.broker_addrs.items())) + "}"
        jline(ROUTE_LIST_FORMAT, broker.cluster, broker.broker_name, addrs, read, write, perm)
    jline("%s%n", "-" * 158)
    jline(ROUTE_LIST_FORMAT, "Total:", len(queues), "", total_read, total_write, "")


def route_fastjson(route: TopicRouteData) -> str:
    """`TopicRouteData.toJson(true)`: fastjson's pretty form, bean fields in alphabetical order,
    each `brokerAddrs` a HashMap<Long, String> with bare numeric keys in HashMap order."""
    value = route.to_json()
    value["brokerDatas"] = [
        {**b, "brokerAddrs": jsonbody.JavaHashMap.of(b["brokerAddrs"].items())} for b in value["brokerDatas"]
    ]
    return jsonbody.dumps_pretty(value).decode()


@click.command("topicRoute")
@topic_argument
@click.option("-l", "--list", "as_list", is_flag=True, help="Use list format to print data")
@json_option
@namesrv_option
@timeout_option
def topic_route(topic: str, as_list: bool, as_json: bool, namesrv: str | None, timeout: float) -> None:
    """Print a topic's route (queues per broker, broker addresses) as RocketMQ prints it (fastjson's
    pretty form), with -l as a list, with --json as standard JSON."""

    async def action(admin: AdminClient) -> None:
        route = await admin.topic_route(topic)
        if as_list:
            print_route_list(route)
        elif as_json:
            click.echo(json.dumps(route.to_json(), indent=2, sort_keys=True, ensure_ascii=False))
        else:
            jline("%s%n", route_fastjson(route))

    run_admin(namesrv, timeout, action)


@click.command("topicStatus")
@topic_argument
@json_option
@namesrv_option
@timeout_option
def topic_status(topic: str, as_json: bool, namesrv: str | None, timeout: float) -> None:
    """Per queue: min and max offset and the time of the last message."""

    async def action(admin: AdminClient) -> None:
        route = await admin.topic_route(topic)
        masters = route.master_addrs()
        per_broker = await asyncio.gather(*(admin.topic_stats(addr, topic) for addr in masters.values()))
        rows = [
            (s.queue.broker_name, s.queue.queue_id, s.min_offset, s.max_offset,
             format_millis(s.last_update_timestamp))
            for stats in per_broker
            for s in stats
        ]
        rows.sort(key=lambda r: (r[0], r[1]))
        headers = ["Broker Name", "QID", "Min Offset", "Max Offset", "Last Updated"]
        if as_json:
            emit_json(table_json(headers, rows))
            return
        jline("%-32s  %-4s  %-20s  %-20s    %s%n", "#Broker Name", "#QID", "#Min Offset", "#Max Offset",
              "#Last Updated")
        for name, qid, low, high, updated in rows:
            jline("%-32s  %-4d  %-20d  %-20d    %s%n", front(name, 32), qid, low, high,
                  "" if updated == "-" else updated)

    run_admin(namesrv, timeout, action)


COMMANDS = [update_topic, delete_topic, topic_list, topic_route, topic_status]
