"""clusterList: every registered broker with its version and traffic figures."""

from __future__ import annotations

import asyncio

import click

from orbitmq.admin.api import AdminClient
from orbitmq.admin.output import render_table
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option
from orbitmq.errors import ClientError, OrbitMQError

HEADERS = [
    "Cluster Name", "Broker Name", "BID", "Addr", "Version",
    "InTPS", "OutTPS", "InTotalToday", "OutTotalToday",
]


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


@click.command("clusterList")
@click.option("-c", "--clusterName", "cluster", help="Only this cluster.")
@namesrv_option
@timeout_option
def cluster_list(cluster: str | None, namesrv: str | None, timeout: float) -> None:
    """List clusters and brokers with version and runtime figures (GET_BROKER_RUNTIME_INFO)."""

    async def action(admin: AdminClient) -> None:
        info = await admin.cluster_info()
        if cluster is not None and cluster not in info.cluster_addr_table:
            raise ClientError(f"cluster {cluster!r} is not registered with the NameServer")
        members = [
            (name, broker_name, bid, addr)
            for name, broker_names in info.cluster_addr_table.items()
            if cluster is None or name == cluster
            for broker_name in broker_names
            if broker_name in info.broker_addr_table
            for bid, addr in info.broker_addr_table[broker_name].broker_addrs.items()
        ]
        answers = await asyncio.gather(
            *(admin.broker_runtime_info(m[3]) for m in members), return_exceptions=True
        )
        rows = []
        for (name, broker_name, bid, addr), stats in zip(members, answers):
            if isinstance(stats, OrbitMQError):
                # A broker the NameServer still lists may be down; show it and say why.
                click.echo(f"warning: {addr}: {stats}", err=True)
                stats = {}
            elif isinstance(stats, BaseException):
                raise stats
            rows.append((
                name, broker_name, bid, addr, stats.get("brokerVersionDesc"),
                first_number(stats.get("putTps")), first_number(stats.get("getTransferedTps")),
                int_or_none(stats.get("msgPutTotalTodayNow")), int_or_none(stats.get("msgGetTotalTodayNow")),
            ))
        click.echo(render_table(HEADERS, rows))

    run_admin(namesrv, timeout, action)


COMMANDS = [cluster_list]
