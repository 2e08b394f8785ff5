"""brokerStatus: a broker's runtime key/values."""

from __future__ import annotations

import click

from orbitmq.admin.api import AdminClient
from orbitmq.admin.jprint import emit_json, jline, json_option
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option


@click.command("brokerStatus")
@click.option("-b", "--brokerAddr", "broker_addr", help="Broker address host:port.")
@click.option("-c", "--clusterName", "cluster", help="Every master of this cluster.")
@json_option
@namesrv_option
@timeout_option
def broker_status(
    broker_addr: str | None, cluster: str | None, as_json: bool, namesrv: str | None, timeout: float,
) -> None:
    """Print a broker's runtime information (GET_BROKER_RUNTIME_INFO) as sorted key : value lines."""
    if not broker_addr and not cluster:
        raise click.UsageError("give -b brokerAddr or -c clusterName (-b wins when both are given, as in RocketMQ)")

    async def action(admin: AdminClient) -> None:
        if as_json:
            emit_json({addr: dict(sorted((await admin.broker_runtime_info(addr)).items()))
                       for addr in await target_addrs(admin, broker_addr, cluster)})
            return
        if broker_addr:  # BrokerStatusSubCommand's lines, keys sorted
            for k, v in sorted((await admin.broker_runtime_info(broker_addr)).items()):
                jline("%-32s: %s%n", k, v)
            return
        for addr in await target_addrs(admin, None, cluster):
            for k, v in sorted((await admin.broker_runtime_info(addr)).items()):
                jline("%-24s %-32s: %s%n", addr, k, v)

    run_admin(namesrv, timeout, action)


async def target_addrs(admin: AdminClient, broker_addr: str | None, cluster: str | None) -> list[str]:
    if broker_addr:
        return [broker_addr]
    assert cluster is not None
    return [addr for _, addr in sorted((await admin.cluster_masters(cluster)).items())]


@click.command("getBrokerConfig")
@click.option("-b", "--brokerAddr", "broker_addr", help="Broker address host:port.")
@click.option("-c", "--clusterName", "cluster", help="Every master of this cluster.")
@json_option
@namesrv_option
@timeout_option
def get_broker_config(
    broker_addr: str | None, cluster: str | None, as_json: bool, namesrv: str | None, timeout: float,
) -> None:
    """Print a broker's effective configuration as `key = value` lines."""
    if not broker_addr and not cluster:
        raise click.UsageError("give -b brokerAddr or -c clusterName (-b wins when both are given, as in RocketMQ)")

    async def action(admin: AdminClient) -> None:
        if as_json:
            emit_json({addr: dict(sorted((await admin.broker_config(addr)).items()))
                       for addr in await target_addrs(admin, broker_addr, cluster)})
            return
        for addr in await target_addrs(admin, broker_addr, cluster):
            config = await admin.broker_config(addr)
            # GetBrokerConfigCommand.getAndPrint: a heading, `%-50s=  %s` lines, an empty line.
            click.echo(f"============{addr}============")
            for k, v in config.items():
                jline("%-50s=  %s\n", k, v)
            jline("%n")

    run_admin(namesrv, timeout, action)


@click.command("updateBrokerConfig")
@click.option("-b", "--brokerAddr", "broker_addr", help="Broker address host:port.")
@click.option("-c", "--clusterName", "cluster", help="Every master of this cluster.")
@click.option("-k", "--key", required=True, help="Setting name (RocketMQ's, e.g. brokerPermission).")
@click.option("-v", "--value", required=True, help="New value.")
@namesrv_option
@timeout_option
def update_broker_config(
    broker_addr: str | None, cluster: str | None, key: str, value: str, namesrv: str | None, timeout: float
) -> None:
    """Change one broker setting at runtime."""
    if not broker_addr and not cluster:
        raise click.UsageError("give -b brokerAddr or -c clusterName (-b wins when both are given, as in RocketMQ)")
    if not key.strip() or any(c in key for c in "=\r\n") or any(c in value for c in "\r\n"):
        raise click.BadParameter("key and value must be one line each, and the key must not contain '='",
                                 param_hint="'-k' / '-v'")

    async def action(admin: AdminClient) -> None:
        for addr in await target_addrs(admin, broker_addr, cluster):
            await admin.update_broker_config(addr, {key.strip(): value.strip()})
            click.echo(f"update broker config success, {addr}")

    run_admin(namesrv, timeout, action)


COMMANDS = [broker_status, get_broker_config, update_broker_config]
