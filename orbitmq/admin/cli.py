"""`orbitmq admin` / `mqadmin`: RocketMQ's admin commands under their RocketMQ names and flags.

Every command takes `-n host:port[;host:port]` (or $NAMESRV_ADDR) and `-h`.
Exit codes: 0 done; 1 the operation failed (unreachable peer, refusal with
its RocketMQ code and remark, nothing found); 2 usage error (bad or missing
flags). See `orbitmq.admin.runner`.
"""

from __future__ import annotations

import click

from orbitmq.admin.api import set_default_credentials
from orbitmq.admin.commands import acl, broker, cluster, consumer, message, offset, topic, trace
from orbitmq.client.acl import AclCredentials
from orbitmq.errors import ConfigError


@click.group(
    "admin",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
    epilog="Exit codes: 0 success, 1 operation failed, 2 usage error. "
    "NAMESRV_ADDR is used when -n is not given.",
)
@click.option("--accessKey", "access_key", envvar="ORBITMQ_ACCESS_KEY", metavar="AK",
              help="Plain-ACL access key: every request is signed (env ORBITMQ_ACCESS_KEY; "
              "without it, accessKey/secretKey of $ROCKETMQ_HOME/conf/tools.yml).")
@click.option("--secretKey", "secret_key", envvar="ORBITMQ_SECRET_KEY", metavar="SK",
              help="Secret key of --accessKey (env ORBITMQ_SECRET_KEY).")
@click.option("--signatureVersion", "signature_version", envvar="ORBITMQ_SIGNATURE_VERSION",
              type=click.IntRange(1, 2), default=1, show_default=True,
              help="1: RocketMQ 4.x signature; 2: OrbitMQ's version 2 (an account with signatureVersion: 2 needs it).")
def admin_group(access_key: str | None, secret_key: str | None, signature_version: int) -> None:
    """Administer topics, groups, brokers and messages (RocketMQ's mqadmin)."""
    try:
        credentials = AclCredentials.from_options(access_key, secret_key, signature_version=signature_version)
    except ConfigError as exc:
        raise click.UsageError(f"--accessKey and --secretKey: {exc}") from None
    set_default_credentials(credentials or acl.tools_yml_credentials())


for _module in (topic, cluster, broker, consumer, offset, message, trace, acl):
    for _command in _module.COMMANDS:
        admin_group.add_command(_command)
