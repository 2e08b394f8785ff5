"""clusterList: every registered broker with its version and traffic figures, in RocketMQ 4.9's
columns (ClusterListSubCommand): the base view, `-m` (yesterday's and today's totals) and
`-i SECONDS` (print again every interval until interrupted; `--rounds` bounds it)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import click

from orbitmq.admin.api import AdminClient
from orbitmq.admin.jprint import emit_json, jformat, jline, json_option
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option
from orbitmq.errors import ClientError, OrbitMQError


def first_number(text: str | None) -> float | None:
    """RocketMQ's TPS figures are "now 1min 10min" triples; the first is the current rate."""
    if not text:
        return None
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        return None


def int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _long(stats: dict[str, str], key: str) -> int:
    return int_or_none(stats.get(key)) or 0


def base_row(cluster: str, broker_name: str, bid: int, addr: str, stats: dict[str, str]) -> dict[str, Any]:
    """printClusterBaseInfo's figures for one broker address."""
    earliest = stats.get("earliestMessageTimeStamp")
    hour = (time.time() * 1000 - int(earliest)) / 1000.0 / 3600.0 if earliest and earliest.lstrip("-").isdigit() else 0.0
    ratio = stats.get("commitLogDiskRatio")
    return {
        "clusterName": cluster, "brokerName": broker_name, "brokerId": bid, "addr": addr,
        "version": stats.get("brokerVersionDesc", ""),
        "inTps": first_number(stats.get("putTps")) or 0.0,
        "sendThreadPoolQueueSize": stats.get("sendThreadPoolQueueSize", ""),
        "sendThreadPoolQueueHeadWaitTimeMills": stats.get("sendThreadPoolQueueHeadWaitTimeMills", ""),
        "outTps": first_number(stats.get("getTransferedTps")) or 0.0,
        "pullThreadPoolQueueSize": stats.get("pullThreadPoolQueueSize", ""),
        "pullThreadPoolQueueHeadWaitTimeMills": stats.get("pullThreadPoolQueueHeadWaitTimeMills", ""),
        "pageCacheLockTimeMills": stats.get("pageCacheLockTimeMills", ""),
        "hour": hour,
        "space": float(ratio) if ratio else 0.0,
    }


def more_row(cluster: str, broker_name: str, stats: dict[str, str]) -> dict[str, Any]:
    """printClusterMoreStats's figures: yesterday's and today's put/get totals."""
    return {
        "clusterName": cluster, "brokerName": broker_name,
        "inTotalYest": _long(stats, "msgPutTotalTodayMorning") - _long(stats, "msgPutTotalYesterdayMorning"),
        "outTotalYest": _long(stats, "msgGetTotalTodayMorning") - _long(stats, "msgGetTotalYesterdayMorning"),
        "inTotalToday": _long(stats, "msgPutTotalTodayNow") - _long(stats, "msgPutTotalTodayMorning"),
        "outTotalToday": _long(stats, "msgGetTotalTodayNow") - _long(stats, "msgGetTotalTodayMorning"),
    }


def print_base(rows: list[dict[str, Any]]) -> None:
    fmt = "%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s%n"
    jline(fmt, "#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)",
          "#PCWait(ms)", "#Hour", "#SPACE")
    for r in rows:
        jline(fmt, r["clusterName"], r["brokerName"], r["brokerId"], r["addr"], r["version"],
              jformat("%9.2f(%s,%sms)", r["inTps"], r["sendThreadPoolQueueSize"],
                      r["sendThreadPoolQueueHeadWaitTimeMills"]),
              jformat("%9.2f(%s,%sms)", r["outTps"], r["pullThreadPoolQueueSize"],
                      r["pullThreadPoolQueueHeadWaitTimeMills"]),
              r["pageCacheLockTimeMills"], f"{r['hour']:2.2f}", f"{r['space']:.4f}")


def print_more(rows: list[dict[str, Any]]) -> None:
    jline("%-16s  %-32s %14s %14s %14s %14s%n", "#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest",
          "#InTotalToday", "#OutTotalToday")
    for r in rows:
        jline("%-16s  %-32s %14d %14d %14d %14d%n", r["clusterName"], r["brokerName"], r["inTotalYest"],
              r["outTotalYest"], r["inTotalToday"], r["outTotalToday"])


@click.command("clusterList")
@click.option("-m", "--moreStats", "more_stats", is_flag=True, help="Print more stats")
@click.option("-i", "--interval", type=click.IntRange(1), default=None,
              help="specify intervals numbers, it is in seconds")
@click.option("-c", "--clusterName", "cluster", help="OrbitMQ: only this cluster.")
@click.option("--rounds", type=click.IntRange(1), default=None,
              help="OrbitMQ: with -i, stop after this many prints (RocketMQ's runs until interrupted).")
@json_option
@namesrv_option
@timeout_option
def cluster_list(
    more_stats: bool, interval: int | None, cluster: str | None, rounds: int | None, as_json: bool,
    namesrv: str | None, timeout: float,
) -> None:
    """List all of clusters: brokers with version and runtime figures (GET_BROKER_RUNTIME_INFO)."""

    async def one_round(admin: AdminClient) -> None:
        info = await admin.cluster_info()
        if cluster is not None and cluster not in info.cluster_addr_table:
            raise ClientError(f"cluster {cluster!r} is not registered with the NameServer")
        members = [
            (name, broker_name, bid, addr)
            for name, broker_names in info.cluster_addr_table.items()
            if cluster is None or name == cluster
            for broker_name in sorted(broker_names)
            if broker_name in info.broker_addr_table
            for bid, addr in info.broker_addr_table[broker_name].broker_addrs.items()
        ]
        answers = await asyncio.gather(*(admin.broker_runtime_info(m[3]) for m in members), return_exceptions=True)
        rows = []
        for (name, broker_name, bid, addr), stats in zip(members, answers):
            if isinstance(stats, OrbitMQError):
                # A broker the NameServer still lists may be down; show it and say why.
                click.echo(f"warning: {addr}: {stats}", err=True)
                stats = {}
            elif isinstance(stats, BaseException):
                raise stats
            rows.append(more_row(name, broker_name, stats) if more_stats else base_row(name, broker_name, bid, addr, stats))
        if as_json:
            emit_json(rows)
        elif more_stats:
            print_more(rows)
        else:
            print_base(rows)

    async def action(admin: AdminClient) -> None:
        done = 0
        while True:
            if done:
                await asyncio.sleep(interval or 0)
            await one_round(admin)
            done += 1
            if interval is None or (rounds is not None and done >= rounds):
                return

    run_admin(namesrv, timeout, action)


COMMANDS = [cluster_list]
