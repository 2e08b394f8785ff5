"""`orbitmq admin` / `mqadmin`: RocketMQ's admin commands under their RocketMQ names and flags.

Every command takes `-n host:port[;host:port]` (or $NAMESRV_ADDR) and `-h`.
Exit codes of `orbitmq admin`: 0 done; 1 the operation failed (unreachable
peer, refusal with its RocketMQ code and remark, nothing found); 2 usage error
(bad or missing flags). See `orbitmq.admin.runner`. The `mqadmin` entry point
runs the same commands with RocketMQ 4.9's exit codes (`orbitmq.admin.mqadmin`). TLS: `--tls`, `--tlsConfigFile FILE` and
`-D tls.client.trustCertPath=ca.pem` (any client-side tls.* key, as Java's
-D system properties) apply to every connection the command opens.
"""

from __future__ import annotations

import click

from orbitmq.admin.api import set_default_credentials, set_default_tls
from orbitmq.admin.commands import (
    acl,
    broker,
    browse,
    cluster,
    consumer,
    dlq,
    export,
    failover,
    message,
    offset,
    offsets_old,
    ops,
    stats,
    timer,
    topic,
    trace,
)
from orbitmq.client.acl import AclCredentials
from orbitmq.client.config import tls_settings
from orbitmq.errors import ConfigError
from orbitmq.remoting.tls import TlsSettings


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
@click.option("--tls", "use_tls", is_flag=True, help="Connect with TLS (tls.enable=true).")
@click.option("--tlsConfigFile", "tls_config_file", metavar="FILE",
              help="Properties file of tls.* settings (tls.config.file); implies --tls.")
@click.option("-D", "tls_props", multiple=True, metavar="KEY=VALUE",
              help="A client tls.* setting, e.g. -D tls.client.trustCertPath=ca.pem; implies --tls "
              "unless tls.enable=false.")
def admin_group(
    access_key: str | None, secret_key: str | None, signature_version: int, use_tls: bool,
    tls_config_file: str | None, tls_props: tuple[str, ...],
) -> None:
    """Administer topics, groups, brokers and messages (RocketMQ's mqadmin)."""
    try:
        credentials = AclCredentials.from_options(access_key, secret_key, signature_version=signature_version)
    except ConfigError as exc:
        raise click.UsageError(f"--accessKey and --secretKey: {exc}") from None
    set_default_credentials(credentials or acl.tools_yml_credentials())
    set_default_tls(tls_option_settings(use_tls, tls_config_file, tls_props))


def define_properties(defines: tuple[str, ...]) -> dict[str, str]:
    """`-D KEY=VALUE` options as properties; a usage error names one without `=`."""
    props: dict[str, str] = {}
    for item in defines:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.UsageError(f"-D {item}: expected KEY=VALUE")
        props[key.strip()] = value.strip()
    return props


def tls_option_settings(use_tls: bool, config_file: str | None, defines: tuple[str, ...]) -> TlsSettings | None:
    props = define_properties(defines)
    if config_file:
        props["tls.config.file"] = config_file
    if use_tls:
        props["tls.enable"] = "true"
    if not props:
        return None
    try:
        settings = tls_settings(props)
        if settings is not None:
            settings.client_context()  # unreadable files are a usage error now, not a failure later
    except ConfigError as exc:
        raise click.UsageError(f"TLS options: {exc}") from None
    return settings


for _module in (
    topic, cluster, broker, consumer, offset, message, trace, acl, dlq, timer, ops, stats, browse, offsets_old, export,
    failover,
):
    for _command in _module.COMMANDS:
        admin_group.add_command(_command)
