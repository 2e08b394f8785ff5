"""Consumer group commands: consumerProgress, updateSubGroup, consumerStatus, consumeMessageDirectly, ..."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import click
import orjson

from orbitmq.admin import running_text, wire
from orbitmq.admin.api import AdminClient
from orbitmq.admin.jprint import emit_json, front, java_date, jformat, jline, json_option, table_json
from orbitmq.admin.lookups import examine_consume_stats
from orbitmq.admin.models import OffsetWrapper, SubscriptionGroupConfig
from orbitmq.admin.output import render_kv
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option
from orbitmq.admin.versions import version_desc
from orbitmq.client.queue import MessageQueue
from orbitmq.client.validation import check_group
from orbitmq.common import names
from orbitmq.common.retry_policy import GroupRetryPolicy
from orbitmq.errors import BrokerError, ClientError, MessageValidationError, OrbitMQError, TopicNotExist


def validated_group(group: str) -> str:
    try:
        check_group(group)
    except MessageValidationError as exc:
        raise click.BadParameter(str(exc), param_hint="'-g' / '--groupName'") from None
    return group


async def group_brokers(admin: AdminClient, group: str) -> dict[str, str]:
    """Brokers that may hold the group's offsets: its retry topic's route, else every master."""
    try:
        route = await admin.topic_route(names.retry_topic(group))
        masters = route.master_addrs()
        if masters:
            return masters
    except TopicNotExist:
        pass
    info = await admin.cluster_info()
    return {name: data.master_addr for name, data in info.broker_addr_table.items() if data.master_addr}


async def allocation_by_client_ip(admin: AdminClient, group: str) -> dict[MessageQueue, str]:
    """ConsumerProgressSubCommand.getMessageQueueAllocationResult: queue -> the IP of the client holding it."""
    result: dict[MessageQueue, str] = {}
    try:
        brokers = await group_brokers(admin, group)
        conn = await admin.consumer_connection(next(iter(brokers.values())), group)
        for c in conn.connections:
            info = await _running_info(admin, group, c.client_id, False)
            for mq, _ in wire.queue_keyed(info.get("mqTable")):
                result[mq] = c.client_id.split("@")[0]
    except (OrbitMQError, StopIteration):
        pass  # RocketMQ ignores any failure here and prints N/A
    return result


def _last_time(ms: int) -> str:
    return "N/A" if ms == 0 else java_date(ms)


async def _group_summaries(admin: AdminClient) -> list[dict[str, Any]]:
    """consumerProgress without -g: one line per group that has a %RETRY% topic."""
    rows = []
    for topic in await admin.topic_list():
        if not topic.startswith(names.RETRY_GROUP_TOPIC_PREFIX):
            continue
        group = topic[len(names.RETRY_GROUP_TOPIC_PREFIX):]
        row: dict[str, Any] = {"group": group, "count": 0, "version": "OFFLINE", "type": "", "model": "", "tps": 0,
                               "diffTotal": 0}
        try:
            stats = await examine_consume_stats(admin, group)
            row["tps"] = int(stats.consume_tps)
            row["diffTotal"] = sum(w.broker_offset - w.consumer_offset for w in stats.offset_table.values())
        except OrbitMQError:
            pass
        try:
            brokers = await group_brokers(admin, group)
            conn = await admin.consumer_connection(next(iter(brokers.values())), group)
        except (OrbitMQError, StopIteration):
            conn = None
        if conn is not None and conn.connections:
            row["count"] = len(conn.connections)
            row["version"] = version_desc(min(c.version for c in conn.connections))
            row["type"] = "PULL" if conn.consume_type == "CONSUME_ACTIVELY" else "PUSH"
            row["model"] = conn.message_model if conn.consume_type == "CONSUME_PASSIVELY" else ""
        rows.append(row)
    return rows


@click.command("consumerProgress")
@click.option("-g", "--groupName", "group", help="consumer group name (without it: a line per group)")
@click.option("-s", "--showClientIP", "show_client_ip", type=click.BOOL, default=False,
              help="Show Client IP per Queue")
@click.option("-t", "--topicName", "topic", help="OrbitMQ: only this topic.")
@json_option
@namesrv_option
@timeout_option
def consumer_progress(
    group: str | None, show_client_ip: bool, topic: str | None, as_json: bool, namesrv: str | None, timeout: float,
) -> None:
    """Query consumers's progress, speed: per queue the broker's and the group's offsets and the diff."""
    if group is not None:
        validated_group(group.strip())

    async def summaries(admin: AdminClient) -> None:
        rows = await _group_summaries(admin)
        if as_json:
            emit_json(rows)
            return
        jline("%-64s  %-6s  %-24s %-5s  %-14s  %-7s  %s%n", "#Group", "#Count", "#Version", "#Type", "#Model",
              "#TPS", "#Diff Total")
        for r in rows:
            jline("%-64s  %-6d  %-24s %-5s  %-14s  %-7d  %d%n", front(r["group"], 64), r["count"], r["version"],
                  r["type"], r["model"], r["tps"], r["diffTotal"])

    async def action(admin: AdminClient) -> None:
        if group is None:
            await summaries(admin)
            return
        name = group.strip()
        brokers = await group_brokers(admin, name)
        answers = await asyncio.gather(
            *(admin.consume_stats(addr, name, topic) for addr in brokers.values()), return_exceptions=True
        )
        queues: list[tuple[MessageQueue, OffsetWrapper]] = []
        tps = 0.0
        refusals: list[BrokerError] = []
        for stats in answers:
            if isinstance(stats, BrokerError):
                refusals.append(stats)  # this broker knows nothing of the group
                continue
            if isinstance(stats, BaseException):
                raise stats
            queues.extend(stats.offset_table.items())
            tps += stats.consume_tps
        if not queues:
            if refusals:
                raise refusals[0]
            raise ClientError(f"no consume progress for group {name!r}")
        queues.sort(key=lambda q: q[0])
        ips = await allocation_by_client_ip(admin, name) if show_client_ip else {}
        diff_total = sum(w.broker_offset - w.consumer_offset for _, w in queues)
        if as_json:
            emit_json({"queues": [
                {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id,
                 "brokerOffset": w.broker_offset, "consumerOffset": w.consumer_offset,
                 "clientIP": ips.get(mq, "N/A") if show_client_ip else None,
                 "diff": w.broker_offset - w.consumer_offset, "lastTimestamp": w.last_timestamp}
                for mq, w in queues], "consumeTps": tps, "diffTotal": diff_total})
            return
        if show_client_ip:
            jline("%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s  %s%n", "#Topic", "#Broker Name", "#QID",
                  "#Broker Offset", "#Consumer Offset", "#Client IP", "#Diff", "#LastTime")
        else:
            jline("%-64s  %-32s  %-4s  %-20s  %-20s  %-20s  %s%n", "#Topic", "#Broker Name", "#QID",
                  "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime")
        for mq, w in queues:
            diff = w.broker_offset - w.consumer_offset
            if show_client_ip:
                jline("%-64s  %-32s  %-4d  %-20d  %-20d  %-20s %-20d  %s%n", front(mq.topic, 64),
                      front(mq.broker_name, 32), mq.queue_id, w.broker_offset, w.consumer_offset,
                      ips.get(mq, "N/A"), diff, _last_time(w.last_timestamp))
            else:
                jline("%-64s  %-32s  %-4d  %-20d  %-20d  %-20d  %s%n", front(mq.topic, 64),
                      front(mq.broker_name, 32), mq.queue_id, w.broker_offset, w.consumer_offset, diff,
                      _last_time(w.last_timestamp))
        jline("%n")
        jline("Consume TPS: %.2f%n", tps)
        jline("Diff Total: %d%n", diff_total)

    run_admin(namesrv, timeout, action)


@click.command("updateSubGroup")
@click.option("-g", "--groupName", "group", required=True, help="Consumer group.")
@click.option("-b", "--brokerAddr", "broker_addr", help="Create on this broker (host:port).")
@click.option("-c", "--clusterName", "cluster", help="Create on every master of this cluster.")
@click.option("-s", "--consumeEnable", "consume_enable", type=click.BOOL, default=True, show_default=True)
@click.option("-m", "--consumeFromMinEnable", "from_min", type=click.BOOL, default=True, show_default=True)
@click.option("-d", "--consumeBroadcastEnable", "broadcast", type=click.BOOL, default=True, show_default=True)
@click.option("-o", "--consumeMessageOrderly", "orderly", type=click.BOOL, default=False, show_default=True,
              help="RocketMQ 5 clients consume the group in order (FIFO).")
@click.option("-q", "--retryQueueNums", "retry_queues", type=click.IntRange(0, 1024), default=1, show_default=True)
@click.option("-r", "--retryMaxTimes", "retry_max", type=click.IntRange(-1, 1000), default=16, show_default=True)
@click.option("-p", "--groupRetryPolicy", "retry_policy",
              help="RocketMQ 5's retry policy of RocketMQ 5 clients, as JSON, delays in ms: "
                   '{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":5000,"max":7200000,"multiplier":2}} or '
                   '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000,10000]}} '
                   "(default: CUSTOMIZED, 1s 5s 10s 30s 1m … 2h).")
@click.option("-i", "--brokerId", "broker_id", type=click.IntRange(0), default=0, show_default=True,
              help="Broker id to consume from.")
@click.option("-w", "--whichBrokerWhenConsumeSlowly", "slow_broker", type=click.IntRange(0), default=1,
              show_default=True)
@click.option("-a", "--notifyConsumerIdsChanged", "notify", type=click.BOOL, default=True, show_default=True)
@click.option("--attributes", "attributes", help="Attribute changes, RocketMQ 5's form: +name=value,-name "
              "(applied to the group's current attributes).")
@namesrv_option
@timeout_option
def update_sub_group(
    group: str, broker_addr: str | None, cluster: str | None, consume_enable: bool, from_min: bool,
    broadcast: bool, orderly: bool, retry_queues: int, retry_max: int, retry_policy: str | None, broker_id: int,
    slow_broker: int, notify: bool, attributes: str | None, namesrv: str | None, timeout: float,
) -> None:
    """Create a subscription group or update its settings."""
    validated_group(group)
    if not broker_addr and not cluster:
        raise click.UsageError("give -b brokerAddr or -c clusterName (-b wins when both are given, as in RocketMQ)")
    policy = GroupRetryPolicy()
    if retry_policy is not None:
        try:
            policy = GroupRetryPolicy.from_json(orjson.loads(retry_policy.strip()))
        except orjson.JSONDecodeError:
            raise click.BadParameter("not JSON", param_hint="'-p' / '--groupRetryPolicy'") from None
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="'-p' / '--groupRetryPolicy'") from None
    changes: tuple[tuple[str, str], ...] = ()
    if attributes is not None:
        try:
            changes = attribute_changes(attributes)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="'--attributes'") from None
    config = SubscriptionGroupConfig(
        group, consume_enable=consume_enable, consume_from_min_enable=from_min, consume_broadcast_enable=broadcast,
        consume_message_orderly=orderly, retry_queue_nums=retry_queues, retry_max_times=retry_max,
        group_retry_policy=policy, broker_id=broker_id, which_broker_when_consume_slowly=slow_broker,
        notify_consumer_ids_changed_enable=notify, attributes=changes,
    )

    async def action(admin: AdminClient) -> None:
        if broker_addr:
            addrs = [broker_addr]
        else:
            assert cluster is not None
            addrs = list((await admin.cluster_masters(cluster)).values())
        for addr in addrs:
            await admin.create_subscription_group(addr, config)
            click.echo(f"create subscription group to {addr} success.")
        shown = {**config.to_json(), "groupRetryPolicy": config.group_retry_policy.describe()}
        fields = ", ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in shown.items())
        click.echo(f"SubscriptionGroupConfig [{fields}]")

    run_admin(namesrv, timeout, action)


def attribute_changes(spec: str) -> tuple[tuple[str, str], ...]:
    """RocketMQ 5's AttributeParser: "+a=1,-b" as the request's map {"+a": "1", "-b": ""}; ValueError when malformed."""
    out: dict[str, str] = {}
    for item in spec.strip().split(","):
        if "=" in item:
            key, value = item.split("=", 1)
            if not key.startswith("+") or len(key) < 2:
                raise ValueError(f"add/alter attribute format is wrong: {key!r}")
        else:
            key, value = item, ""
            if not key.startswith("-") or len(key) < 2:
                raise ValueError(f"delete attribute format is wrong: {key!r}")
        if key in out:
            raise ValueError(f"key duplication: {key}")
        out[key] = value
    return tuple(sorted(out.items()))


@click.command("deleteSubGroup")
@click.option("-g", "--groupName", "group", required=True, help="Consumer group.")
@click.option("-b", "--brokerAddr", "broker_addr", help="Delete on this broker (host:port).")
@click.option("-c", "--clusterName", "cluster", help="Delete on every master of this cluster.")
@click.option("-r", "--removeOffset", "remove_offset", type=click.BOOL, default=False, show_default=True,
              help="Also drop the group's committed offsets.")
@namesrv_option
@timeout_option
def delete_sub_group(
    group: str, broker_addr: str | None, cluster: str | None, remove_offset: bool, namesrv: str | None,
    timeout: float,
) -> None:
    """Delete a subscription group from brokers."""
    validated_group(group)
    if not broker_addr and not cluster:
        raise click.UsageError("give -b brokerAddr or -c clusterName (-b wins when both are given, as in RocketMQ)")

    async def action(admin: AdminClient) -> None:
        if broker_addr:
            addrs = [broker_addr]
        else:
            assert cluster is not None
            addrs = list((await admin.cluster_masters(cluster)).values())
        for addr in addrs:
            await admin.delete_subscription_group(addr, group, remove_offset)
            click.echo(f"delete subscription group [{group}] from broker [{addr}] success.")

    run_admin(namesrv, timeout, action)


#: SubscriptionGroupConfig's fields OrbitMQ keeps, in RocketMQ 5's declaration order (what getConsumerConfig
#: prints; 4.9 has all but consumeMessageOrderly and groupRetryPolicy).
SUBSCRIPTION_GROUP_FIELDS = (
    "groupName", "consumeEnable", "consumeFromMinEnable", "consumeBroadcastEnable", "consumeMessageOrderly",
    "retryQueueNums", "retryMaxTimes", "groupRetryPolicy", "brokerId", "whichBrokerWhenConsumeSlowly", "notifyConsumerIdsChangedEnable",
)


@click.command("getConsumerConfig")
@click.option("-g", "--groupName", "group", required=True, help="Consumer group.")
@json_option
@namesrv_option
@timeout_option
def get_consumer_config(group: str, as_json: bool, namesrv: str | None, timeout: float) -> None:
    """Print a subscription group's settings on every master broker that has it."""
    validated_group(group)

    async def action(admin: AdminClient) -> None:
        info = await admin.cluster_info()
        found: dict[str, Any] = {}
        lines: list[str] = []
        for name, data in info.broker_addr_table.items():
            addr = data.select_addr()
            if not addr:
                continue
            config = (await admin.subscription_groups(addr)).get(group)
            if config is None:
                continue
            cluster = next((c for c, names in info.cluster_addr_table.items() if name in names), None)
            fields = config.to_json()
            found[f"{name} {addr}"] = fields
            # GetConsumerConfigSubCommand: a heading per broker, the bean's fields in declaration order.
            lines.append(jformat("=============================%s:%s=============================\n", cluster, name))
            shown = {**fields, "groupRetryPolicy": config.group_retry_policy.describe()}
            for key in SUBSCRIPTION_GROUP_FIELDS:
                value = shown.get(key)
                text = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
                lines.append(jformat("%s%-40s=  %s\n", "", key, text))
        if not found:
            raise ClientError(f"no broker has subscription group {group!r}")
        if as_json:
            emit_json(found)
            return
        click.echo("".join(lines), nl=False)

    run_admin(namesrv, timeout, action)


@click.command("consumerConnection")
@click.option("-g", "--consumerGroup", "group", required=True, help="Consumer group.")
@click.option("-b", "--brokerAddr", "broker_addr", help="broker address (default: one of the group's brokers)")
@json_option
@namesrv_option
@timeout_option
def consumer_connection(group: str, broker_addr: str | None, as_json: bool, namesrv: str | None, timeout: float) -> None:
    """List the online clients of a consumer group and what they subscribe to."""
    validated_group(group)

    async def action(admin: AdminClient) -> None:
        brokers = {broker_addr: broker_addr.strip()} if broker_addr else await group_brokers(admin, group)
        if not brokers:
            raise ClientError("no master broker is registered with the NameServer")
        conn = await admin.consumer_connection(next(iter(brokers.values())), group)
        rows = [(c.client_id, c.client_addr, c.language, c.version) for c in conn.connections]
        if as_json:
            emit_json({"connections": table_json(["ClientId", "ClientAddr", "Language", "Version"], rows),
                       "subscriptions": dict(conn.subscriptions), "consumeType": conn.consume_type,
                       "messageModel": conn.message_model, "consumeFromWhere": conn.consume_from_where})
            return
        # ConsumerConnectionSubCommand's lines.
        jline("%-36s %-22s %-10s %s%n", "#ClientId", "#ClientAddr", "#Language", "#Version")
        for c in conn.connections:
            jline("%-36s %-22s %-10s %s%n", c.client_id, c.client_addr, c.language, version_desc(c.version))
        jline("%nBelow is subscription:\n")
        jline("%-20s %s%n", "#Topic", "#SubExpression")
        for topic, expression in conn.subscriptions.items():
            jline("%-20s %s%n", topic, expression)
        jline("\n")
        jline("ConsumeType: %s%n", conn.consume_type)
        jline("MessageModel: %s%n", conn.message_model)
        jline("ConsumeFromWhere: %s%n", conn.consume_from_where)

    run_admin(namesrv, timeout, action)


async def _running_info(admin: AdminClient, group: str, client_id: str, jstack: bool) -> dict[str, Any]:
    """Ask the group's brokers in turn (each forwards to the client if it is connected there)."""
    brokers = await group_brokers(admin, group)
    if not brokers:
        raise ClientError("no master broker is registered with the NameServer")
    refusal: BrokerError | None = None
    for addr in brokers.values():
        try:
            return await admin.consumer_running_info(addr, group, client_id, jstack)
        except BrokerError as exc:
            refusal = exc
    assert refusal is not None
    raise refusal


def _write_text(path: str, text: str) -> None:
    """`MixAll.string2FileNotSafe`: make the parent folders, write the file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


async def _status_files(admin: AdminClient, group: str, connections: Any, jstack: bool) -> None:
    """ConsumerStatusSubCommand without -i: each client's running info to `<now>/<clientId>`."""
    now = int(time.time() * 1000)
    infos: dict[str, dict[str, Any]] = {}
    jline("%-10s %-40s %-20s %s%n", "#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile")
    for c in connections:
        try:
            info = await _running_info(admin, group, c.client_id, jstack)
            path = f"{now}/{c.client_id}"
            await asyncio.to_thread(_write_text, path, running_text.format_string(info))
        except (OrbitMQError, OSError) as exc:  # RocketMQ prints the stack trace and goes on
            click.echo(f"error: {c.client_id}: {exc}", err=True)
            continue
        infos[c.client_id] = info
        jline("%-10d %-40s %-20s %s%n", len(infos), c.client_id, version_desc(c.version), path)
    if not infos:
        return
    now = int(time.time() * 1000)
    if running_text.analyze_subscription(infos, now):
        jline("%n%nSame subscription in the same group of consumer")
        jline("%n%nRebalance %s%n", "OK")
        for client_id in sorted(infos):
            jline("%s", running_text.analyze_process_queue(client_id, infos[client_id], now))
    else:
        jline("%n%nWARN: Different subscription in the same group of consumer!!!")


@click.command("consumerStatus")
@click.option("-g", "--consumerGroup", "group", required=True, help="Consumer group.")
@click.option("-i", "--clientId", "client_id",
              help="Print this client's running info; without it, each online client's goes to the file "
              "<now-ms>/<clientId> under the current directory.")
@click.option("-s", "--jstackEnable", "jstack", is_flag=True, help="Include the client's thread stacks.")
@click.option("-b", "--brokerAddr", "broker_addr", help="broker address (default: one of the group's brokers)")
@json_option
@namesrv_option
@timeout_option
def consumer_status(
    group: str, client_id: str | None, jstack: bool, broker_addr: str | None, as_json: bool, namesrv: str | None,
    timeout: float,
) -> None:
    """What the consumers of a group report about themselves (GET_CONSUMER_RUNNING_INFO).

    As ConsumerStatusSubCommand: with -i, that client's `ConsumerRunningInfo.formatString()`;
    without it, each client's goes to the file `<now-ms>/<clientId>`, a line per client names
    the file, then the subscription and process-queue checks. `--json`: the info (with -i) or
    a row per client, nothing written.
    """
    validated_group(group)

    async def action(admin: AdminClient) -> None:
        if client_id and as_json:
            info = await _running_info(admin, group, client_id, jstack)
            info["mqTable"] = [dict(mq.to_json(), **q) for mq, q in wire.queue_keyed(info.get("mqTable"))]
            emit_json(info)
            return
        if client_id:
            jline("%s", running_text.format_string(await _running_info(admin, group, client_id.strip(), jstack)))
            return
        brokers = {broker_addr: broker_addr.strip()} if broker_addr else await group_brokers(admin, group)
        if not brokers:
            raise ClientError("no master broker is registered with the NameServer")
        conn = await admin.consumer_connection(next(iter(brokers.values())), group)
        if not as_json:
            await _status_files(admin, group, conn.connections, jstack)
            return
        rows = []
        for c in conn.connections:
            info = await _running_info(admin, group, c.client_id, False)
            props = info.get("properties") or {}
            rows.append((c.client_id, c.version, props.get("PROP_CONSUME_TYPE"), props.get("PROP_CONSUMEORDERLY"),
                         len(wire.queue_keyed(info.get("mqTable"))), props.get("PROP_CLIENT_VERSION")))
        headers = ["ClientId", "Version", "Consume Type", "Orderly", "Queues", "Client Version"]
        emit_json(table_json(headers, rows))

    run_admin(namesrv, timeout, action)


@click.command("consumeMessageDirectly")
@click.option("-g", "--consumerGroup", "group", required=True, help="Consumer group.")
@click.option("-d", "--clientId", "client_id", required=True, help="The client that consumes the message.")
@click.option("-i", "--msgId", "msg_id", required=True, help="Offset message id (names the broker).")
@namesrv_option
@timeout_option
def consume_message_directly(group: str, client_id: str, msg_id: str, namesrv: str | None, timeout: float) -> None:
    """Have one client of a group run its listener on one stored message; print its verdict."""
    validated_group(group)

    async def action(admin: AdminClient) -> None:
        result = await admin.consume_message_directly(group, client_id, msg_id)
        click.echo(render_kv([
            ("Consume Result", result.get("consumeResult")),
            ("Order", str(result.get("order", False)).lower()),
            ("Auto Commit", str(result.get("autoCommit", True)).lower()),
            ("Spent Time (ms)", result.get("spentTimeMills")),
            ("Remark", result.get("remark")),
        ]))

    run_admin(namesrv, timeout, action)


COMMANDS = [
    consumer_progress, update_sub_group, delete_sub_group, get_consumer_config, consumer_connection, consumer_status,
    consume_message_directly,
]
