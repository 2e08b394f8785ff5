"""Controller mode (docs/failover.md): getSyncStateSet, getBrokerEpoch and electMaster, read
from and written to etcd (where RocketMQ 5's mqadmin asks its controller).

`-a` takes the etcd endpoints (`host:port;...`, or $ORBITMQ_ETCD_ENDPOINTS).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import click

from orbitmq.admin.output import render_table
from orbitmq.admin.runner import OperationFailed
from orbitmq.errors import ConfigError
from orbitmq.failover.etcd import EtcdClient, EtcdUnavailable, GroupKeys, GroupSnapshot, list_groups
from orbitmq.failover.model import Handover

ETCD_ENV = "ORBITMQ_ETCD_ENDPOINTS"


def _etcd_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option("-a", "--controllerAddress", "etcd", envvar=ETCD_ENV, required=True,
                        metavar="HOST:PORT[;HOST:PORT]", help=f"etcd endpoints (env {ETCD_ENV}).")(func)
    func = click.option("--keyPrefix", "prefix", default="/orbitmq/v1", show_default=True,
                        help="controllerKeyPrefix of the brokers.")(func)
    return func


def _run(etcd: str, action: Callable[[EtcdClient], Awaitable[None]]) -> None:
    endpoints = [e.strip() for e in etcd.split(";") if e.strip()]
    for endpoint in endpoints:
        host, sep, port = endpoint.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise click.BadParameter(f"{endpoint!r} is not host:port", param_hint="'-a'")

    async def main() -> None:
        client = EtcdClient(endpoints)
        try:
            await action(client)
        finally:
            await client.close()

    try:
        asyncio.run(main())
    except (EtcdUnavailable, ConfigError) as exc:
        raise OperationFailed(str(exc)) from exc


async def _groups(client: EtcdClient, prefix: str, cluster: str | None,
                  broker_name: str | None) -> dict[tuple[str, str], GroupSnapshot]:
    groups = await list_groups(client, prefix)
    chosen = {k: v for k, v in groups.items()
              if (cluster is None or k[0] == cluster) and (broker_name is None or k[1] == broker_name)}
    if not chosen:
        raise OperationFailed("no broker group in controller mode matches" + (f" {broker_name}" if broker_name else ""))
    return chosen


@click.command("getSyncStateSet")
@_etcd_options
@click.option("-c", "--clusterName", "cluster", help="Only this cluster.")
@click.option("-b", "--brokerName", "broker_name", help="Only this broker group.")
def get_sync_state_set(etcd: str, prefix: str, cluster: str | None, broker_name: str | None) -> None:
    """Each group's master, epochs and in-sync replicas, and every replica's state."""

    async def action(client: EtcdClient) -> None:
        rows = []
        for (cluster_name, name), snap in (await _groups(client, prefix, cluster, broker_name)).items():
            state = snap.state
            ids = sorted(set(snap.ids) | set(snap.lives))
            for broker_id in ids:
                report = snap.lives.get(broker_id)
                role = "master" if snap.master is not None and snap.master.broker_id == broker_id else "slave"
                rows.append((
                    cluster_name, name, broker_id, report.addr if report else "-", "alive" if report else "down",
                    role if report else "-",
                    "yes" if state is not None and broker_id in state.sss else "no",
                    report.last_epoch if report else None, report.max_offset if report else None,
                    state.master_epoch if state else None, state.sss_epoch if state else None,
                ))
        click.echo(render_table(
            ["Cluster", "Broker Name", "Id", "Addr", "Alive", "Role", "InSync", "LastEpoch", "MaxOffset",
             "MasterEpoch", "SyncStateSetEpoch"], rows))

    _run(etcd, action)


@click.command("getBrokerEpoch")
@_etcd_options
@click.option("-c", "--clusterName", "cluster", help="Only this cluster.")
@click.option("-b", "--brokerName", "broker_name", help="Only this broker group.")
def get_broker_epoch(etcd: str, prefix: str, cluster: str | None, broker_name: str | None) -> None:
    """Each group's master epoch, master and in-sync set."""

    async def action(client: EtcdClient) -> None:
        rows = []
        for (cluster_name, name), snap in (await _groups(client, prefix, cluster, broker_name)).items():
            state = snap.state
            master = snap.master
            rows.append((
                cluster_name, name, state.master_epoch if state else None,
                f"{master.broker_id} {master.addr}" if master else "none",
                ",".join(str(i) for i in state.sss) if state else "", state.sss_epoch if state else None,
                len(snap.lives),
            ))
        click.echo(render_table(
            ["Cluster", "Broker Name", "MasterEpoch", "Master", "SyncStateSet", "SyncStateSetEpoch", "AliveReplicas"],
            rows))

    _run(etcd, action)


@click.command("electMaster")
@_etcd_options
@click.option("-c", "--clusterName", "cluster", required=True, help="Cluster of the group.")
@click.option("-bn", "--brokerName", "broker_name", required=True, help="The broker group.")
@click.option("-b", "--brokerId", "broker_id", required=True, type=int, help="Replica id to make master.")
@click.option("--waitSeconds", "wait_s", default=20.0, show_default=True, help="How long to wait for the switch.")
def elect_master(etcd: str, prefix: str, cluster: str, broker_name: str, broker_id: int, wait_s: float) -> None:
    """Planned switchover: the master stops writes, waits until the replica holds all it has,
    then hands the master role over (no acknowledged message is lost)."""

    async def action(client: EtcdClient) -> None:
        keys = GroupKeys(client, prefix, cluster, broker_name)
        snap = await keys.snapshot()
        if snap.state is None or snap.master is None:
            raise OperationFailed(f"broker group {broker_name} has no master now")
        if snap.master.broker_id == broker_id:
            click.echo(f"replica {broker_id} is already the master of {broker_name} (epoch {snap.state.master_epoch})")
            return
        if broker_id not in snap.lives:
            raise OperationFailed(f"replica {broker_id} of {broker_name} is not alive")
        if broker_id not in snap.state.sss:
            raise OperationFailed(f"replica {broker_id} is not in the in-sync set {list(snap.state.sss)}")
        await keys.request_handover(Handover(broker_id, snap.state.master_epoch))
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            now = await keys.snapshot()
            serving = now.lives.get(broker_id)
            if (now.master is not None and now.master.broker_id == broker_id and serving is not None
                    and serving.following == now.master.master_epoch):
                click.echo(f"replica {broker_id} ({now.master.addr}) is the master of {broker_name}, "
                           f"epoch {now.master.master_epoch}")
                return
            if now.handover is None and (now.master is None or now.master.broker_id != broker_id):
                break  # the master gave up (the replica did not catch up in time)
        raise OperationFailed(f"the master did not hand over to replica {broker_id} (not caught up in time?)")

    _run(etcd, action)


COMMANDS = [get_sync_state_set, get_broker_epoch, elect_master]
