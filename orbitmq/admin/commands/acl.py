"""The plain-ACL commands of mqadmin (RocketMQ 4.9 names and flags).

updateAclConfig, deleteAclConfig (also deleteAccessConfig), updateGlobalWhiteAddr,
clusterAclConfigVersion and getAclConfig. Each targets one broker (-b) or
every master of a cluster (-c). A broker with ACL on accepts them only from
an admin account: pass it with `--accessKey/--secretKey` before the command
name, or ORBITMQ_ACCESS_KEY / ORBITMQ_SECRET_KEY, or, as RocketMQ's mqadmin
reads it, `accessKey:` / `secretKey:` in $ROCKETMQ_HOME/conf/tools.yml.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping

import click
import yaml

from orbitmq.admin.api import AdminClient
from orbitmq.admin.commands.broker import target_addrs
from orbitmq.admin.jprint import emit_json, json_option
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option
from orbitmq.client.acl import AclCredentials
from orbitmq.common import jsonbody

_PERMS = ("DENY", "PUB", "SUB", "PUB|SUB", "SUB|PUB")


def tools_yml_credentials(env: Mapping[str, str] = os.environ) -> AclCredentials | None:
    """Keys from $ROCKETMQ_HOME/conf/tools.yml, or None when there is no such file or it names no keys.

    A file that exists but cannot be read as YAML is a usage error rather than
    a silent fallback to unsigned requests.
    """
    home = env.get("ROCKETMQ_HOME")
    if not home:
        return None
    path = os.path.join(home, "conf", "tools.yml")
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except FileNotFoundError:
        return None
    except (OSError, yaml.YAMLError) as exc:
        raise click.UsageError(f"cannot read {path}: {exc}") from None
    if not isinstance(doc, dict) or not doc.get("accessKey") or not doc.get("secretKey"):
        return None
    return AclCredentials(str(doc["accessKey"]), str(doc["secretKey"]))


def _one_target(broker_addr: str | None, cluster: str | None) -> None:
    if not broker_addr and not cluster:
        raise click.UsageError("give -b brokerAddr or -c clusterName (-b wins when both are given, as in RocketMQ)")


def _perm_list(value: str | None, flag: str) -> str | None:
    """Check `a=PUB,b=SUB` before sending it, so a typo is a usage error, not a broker refusal."""
    if value is None:
        return None
    items = [item.strip() for item in value.split(",") if item.strip()]
    for item in items:
        name, sep, perm = item.partition("=")
        if not sep or not name.strip() or perm.strip() not in _PERMS:
            raise click.BadParameter(f"{item!r} is not name=PERM with PERM one of {', '.join(_PERMS)}",
                                     param_hint=flag)
    return ",".join(items)


def _target_options(func):  # type: ignore[no-untyped-def]
    func = click.option("-c", "--clusterName", "cluster", help="Every master of this cluster.")(func)
    return click.option("-b", "--brokerAddr", "broker_addr", help="Broker address host:port.")(func)


@click.command("updateAclConfig")
@_target_options
@click.option("-a", "--accessKey", "access_key", required=True, help="Account's access key (longer than 6).")
@click.option("-s", "--secretKey", "secret_key", help="Account's secret key (longer than 6; needed for a new one).")
@click.option("-w", "--whiteRemoteAddress", "white", help="Addresses that need no signature, e.g. 192.168.0.*.")
@click.option("-i", "--defaultTopicPerm", "default_topic_perm", type=click.Choice(_PERMS), help="Default topic perm.")
@click.option("-u", "--defaultGroupPerm", "default_group_perm", type=click.Choice(_PERMS), help="Default group perm.")
@click.option("-t", "--topicPerms", "topic_perms", help="e.g. topicA=DENY,topicD=SUB")
@click.option("-g", "--groupPerms", "group_perms", help="e.g. groupD=DENY,groupE=SUB")
@click.option("-m", "--admin", "admin", type=click.Choice(["true", "false"]), default="false", show_default=True,
              help="Admin account (may use the admin-only request codes).")
@namesrv_option
@timeout_option
def update_acl_config(
    broker_addr: str | None, cluster: str | None, access_key: str, secret_key: str | None, white: str | None,
    default_topic_perm: str | None, default_group_perm: str | None, topic_perms: str | None,
    group_perms: str | None, admin: str, namesrv: str | None, timeout: float,
) -> None:
    """Create or update an account in the brokers' plain_acl.yml."""
    _one_target(broker_addr, cluster)
    fields = {"accessKey": access_key, "admin": admin}
    optional = {
        "secretKey": secret_key, "whiteRemoteAddress": white, "defaultTopicPerm": default_topic_perm,
        "defaultGroupPerm": default_group_perm, "topicPerms": _perm_list(topic_perms, "'-t' / '--topicPerms'"),
        "groupPerms": _perm_list(group_perms, "'-g' / '--groupPerms'"),
    }
    fields.update({k: v for k, v in optional.items() if v is not None})

    async def action(client: AdminClient) -> None:
        for addr in await target_addrs(client, broker_addr, cluster):
            await client.update_acl_config(addr, fields)
            click.echo(f"create or update plain access config to {addr} success.")
        shown = {k: v for k, v in fields.items() if k != "secretKey"}
        click.echo(f"account: {shown}")

    run_admin(namesrv, timeout, action)


@click.command("deleteAclConfig")
@_target_options
@click.option("-a", "--accessKey", "access_key", required=True, help="Access key of the account to delete.")
@namesrv_option
@timeout_option
def delete_acl_config(
    broker_addr: str | None, cluster: str | None, access_key: str, namesrv: str | None, timeout: float
) -> None:
    """Delete an account from the brokers' plain_acl.yml."""
    _one_target(broker_addr, cluster)

    async def action(client: AdminClient) -> None:
        for addr in await target_addrs(client, broker_addr, cluster):
            await client.delete_acl_config(addr, access_key)
            click.echo(f"delete plain access config account from {addr} success.")
        click.echo(f"account's accesskey is:{access_key}")

    run_admin(namesrv, timeout, action)


@click.command("updateGlobalWhiteAddr")
@_target_options
@click.option("-g", "--globalWhiteRemoteAddresses", "addrs", required=True,
              help="Comma-separated patterns, e.g. 10.10.103.*,192.168.0.* (empty string: none).")
@click.option("-p", "--aclFileFullPath", "acl_file", help="The broker's ACL file (it manages exactly one).")
@namesrv_option
@timeout_option
def update_global_white_addr(
    broker_addr: str | None, cluster: str | None, addrs: str, acl_file: str | None, namesrv: str | None,
    timeout: float,
) -> None:
    """Replace globalWhiteRemoteAddresses: peers there need no signature at all."""
    _one_target(broker_addr, cluster)
    items = [a.strip() for a in addrs.split(",") if a.strip()]

    async def action(client: AdminClient) -> None:
        for addr in await target_addrs(client, broker_addr, cluster):
            await client.update_global_white_addrs(addr, items, acl_file)
            click.echo(f"update global white remote addresses to {addr} success.")

    run_admin(namesrv, timeout, action)


@click.command("clusterAclConfigVersion")
@_target_options
@json_option
@namesrv_option
@timeout_option
def cluster_acl_config_version(
    broker_addr: str | None, cluster: str | None, as_json: bool, namesrv: str | None, timeout: float
) -> None:
    """Print each broker's plain_acl.yml version (counter and last update time)."""
    _one_target(broker_addr, cluster)

    async def action(client: AdminClient) -> None:
        row = "{:<16}  {:<22}  {:<22}  {:<20}  {:<22}"
        if as_json:
            emit_json([dict(await client.acl_version(addr), queriedAddr=addr)
                       for addr in await target_addrs(client, broker_addr, cluster)])
            return
        click.echo(row.format("#Cluster Name", "#Broker Name", "#Broker Addr", "#AclConfigVersionNum",
                              "#AclLastUpdateTime"))
        for addr in await target_addrs(client, broker_addr, cluster):
            info = await client.acl_version(addr)
            version = jsonbody.loads(info.get("version") or "{}")
            counter = version.get("counter", 0) if isinstance(version, dict) else 0
            stamp = int(version.get("timestamp", 0)) if isinstance(version, dict) else 0
            when = datetime.datetime.fromtimestamp(stamp / 1000).strftime("%Y-%m-%d %H:%M:%S")
            click.echo(row.format(info.get("clusterName", ""), info.get("brokerName", ""),
                                  info.get("brokerAddr", addr), str(counter), when))

    run_admin(namesrv, timeout, action)


@click.command("getAclConfig")
@_target_options
@json_option
@namesrv_option
@timeout_option
def get_acl_config(
    broker_addr: str | None, cluster: str | None, as_json: bool, namesrv: str | None, timeout: float,
) -> None:
    """Print each broker's accounts and global white list as JSON (secret keys included: admin only)."""
    _one_target(broker_addr, cluster)

    async def action(client: AdminClient) -> None:
        if as_json:
            emit_json({addr: await client.acl_config(addr) for addr in await target_addrs(client, broker_addr, cluster)})
            return
        for addr in await target_addrs(client, broker_addr, cluster):
            click.echo(f"============{addr}============")
            click.echo(jsonbody.dumps_pretty(await client.acl_config(addr)).decode())

    run_admin(namesrv, timeout, action)


delete_access_config = click.Command(
    "deleteAccessConfig", params=delete_acl_config.params, callback=delete_acl_config.callback,
    help="Same as deleteAclConfig (RocketMQ's other name for it).",
)

COMMANDS = [update_acl_config, delete_acl_config, delete_access_config, update_global_white_addr,
            cluster_acl_config_version, get_acl_config]
