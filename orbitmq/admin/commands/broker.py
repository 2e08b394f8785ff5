"""brokerStatus: a broker's runtime key/values."""

from __future__ import annotations

import click

from orbitmq.admin.api import AdminClient
from orbitmq.admin.output import render_kv
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option


@click.command("brokerStatus")
@click.option("-b", "--brokerAddr", "broker_addr", help="Broker address host:port.")
@click.option("-c", "--clusterName", "cluster", help="Every master of this cluster.")
@namesrv_option
@timeout_option
def broker_status(broker_addr: str | None, cluster: str | None, namesrv: str | None, timeout: float) -> None:
    """Print a broker's runtime information (GET_BROKER_RUNTIME_INFO) as sorted key : value lines."""
    if bool(broker_addr) == bool(cluster):
        raise click.UsageError("give exactly one of -b brokerAddr or -c clusterName")

    async def action(admin: AdminClient) -> None:
        if broker_addr:
            click.echo(render_kv(await admin.broker_runtime_info(broker_addr), sort=True))
            return
        assert cluster is not None
        for name, addr in sorted((await admin.cluster_masters(cluster)).items()):
            table = await admin.broker_runtime_info(addr)
            click.echo(render_kv([(f"{addr} {k}", v) for k, v in sorted(table.items())]))

    run_admin(namesrv, timeout, action)


COMMANDS = [broker_status]
