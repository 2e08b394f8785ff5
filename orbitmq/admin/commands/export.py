"""Export and monitoring commands of RocketMQ 4.9's mqadmin: exportMetadata, exportConfigs,
exportMetrics (JSON files as `JSON.toJSONString(x, true)` writes them; a progress bar on a
terminal) and startMonitoring (MonitorService's undone-message reports, round after round)."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import click

from orbitmq.admin.api import AdminClient
from orbitmq.admin.commands.stats import TOPIC_PUT_NUMS, compute_24hour_sum, minute_tps
from orbitmq.admin.jprint import Progress, jformat, jline
from orbitmq.admin.lookups import examine_consume_stats
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option
from orbitmq.admin.running_text import hashtable_order
from orbitmq.admin.versions import version_desc
from orbitmq.client.queue import MessageQueue
from orbitmq.common import jsonbody, names
from orbitmq.common.consume_stats import OffsetWrapper
from orbitmq.errors import OrbitMQError

#: Where the export commands write without -f (RocketMQ's default).
DEFAULT_EXPORT_PATH = "/tmp/rocketmq/export"

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
    return dict(wrapper, topicConfigTable=jsonbody.JavaHashMap.of(sorted(table.items()), concurrent=True))


async def user_subscription_groups(admin: AdminClient, addr: str) -> dict[str, Any]:
    """DefaultMQAdminExt.getUserSubscriptionGroup: without the CID_RMQ_SYS_ groups."""
    wrapper = await admin.all_subscription_group_config(addr)
    table = {
        name: config for name, config in (wrapper.get("subscriptionGroupTable") or {}).items()
        if not name.startswith(names.CID_RMQ_SYS_PREFIX)
    }
    return dict(wrapper, subscriptionGroupTable=jsonbody.JavaHashMap.of(sorted(table.items()), concurrent=True))


def java_maps(value: Any) -> Any:
    """Every map in `value` as the HashMap it is in RocketMQ's exports (fastjson prints a map in
    its iteration order), every set as a HashSet; for values that hold no beans."""
    if isinstance(value, dict):
        return jsonbody.JavaHashMap.of((k, java_maps(v)) for k, v in value.items())
    if isinstance(value, (set, frozenset)):
        items = sorted(value)
        return [items[i] for i in jsonbody.java_hash_order(items)]
    return value


def properties_map(props: dict[str, str]) -> jsonbody.JavaHashMap:
    """A `java.util.Properties` (Java 8: a Hashtable) filled in this order, in its iteration order."""
    keys = list(props)
    return jsonbody.JavaHashMap((keys[i], props[keys[i]]) for i in hashtable_order(keys))


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
        # ExportMetadataCommand's maps are HashMaps; the configs in them are beans (fields sorted).
        result: dict[str, Any] = {}
        if only_topics:
            result["topicConfigTable"] = jsonbody.JavaHashMap.of(topics.items())
            path = os.path.join(file_path, "topic.json")
        elif only_groups:
            result["subscriptionGroupTable"] = jsonbody.JavaHashMap.of(groups.items())
            path = os.path.join(file_path, "subscriptionGroup.json")
        else:
            result["topicConfigTable"] = jsonbody.JavaHashMap.of(topics.items())
            result["subscriptionGroupTable"] = jsonbody.JavaHashMap.of(groups.items())
            path = os.path.join(file_path, "metadata.json")
        result["exportTime"] = int(time.time() * 1000)
        write_export(path, jsonbody.JavaHashMap.of(result.items()))
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
                    configs[props.get("brokerName", data.broker_name)] = properties_map({
                        k: props[k] for k in EXPORTED_BROKER_KEYS if k in props
                    })
                bar.advance()
        result = jsonbody.JavaHashMap.of([
            ("brokerConfigs", jsonbody.JavaHashMap.of(configs.items())),
            ("clusterScale", jsonbody.JavaHashMap.of([
                ("namesrvSize", len(admin.namesrv_addrs)), ("masterBrokerSize", masters),
                ("slaveBrokerSize", slaves)])),
        ])
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
                    "runtimeVersion": {"rocketmqVersion": "V4_9_7", "clientInfo": clients},
                }
        result = {"evaluateReport": report, "totalData": {"totalTps": total_tps, "totalOneDayNum": total_day}}
        path = os.path.join(file_path.strip(), "metrics.json")
        write_export(path, java_maps(result))  # ExportMetricsCommand builds only HashMaps and a HashSet
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



COMMANDS = [export_metadata, export_configs, export_metrics, start_monitoring]
